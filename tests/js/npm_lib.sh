# Sourced by the tests that need npm packages (tests/js/npm_tokenizers.sh,
# tests/js/browser_test.sh): npm_install NAME DIR PACKAGE@VERSION... installs the
# packages into DIR, a scratch folder outside the repository, unless each is
# there already. Where node or npm is missing or npm cannot install them, it
# says so and the test counts as not run (exit 0). NAME names the test.
npm_install() {
    local name=$1 dir=$2 p missing=0
    shift 2
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        echo "$name: NOT RUN (node or npm is not installed)"
        exit 0
    fi
    for p in "$@"; do [ -d "$dir/node_modules/${p%@*}" ] || missing=1; done
    if [ $missing = 1 ]; then
        mkdir -p "$dir"
        echo "$name: installing $* into $dir"
        if ! (cd "$dir" && timeout 300 npm install --no-audit --no-fund --silent "$@" >npm.log 2>&1); then
            echo "$name: NOT RUN (npm could not install the packages; see $dir/npm.log)"
            exit 0
        fi
    fi
}
