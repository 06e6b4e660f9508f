# Shared by the CLI test scripts (sourced): a scratch directory, counters,
# and the two checks every script uses.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=2
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect_error NAME PATTERN COMMAND...: exit 2, exactly one stderr line, matching PATTERN.
expect_error() {
    local name=$1 pattern=$2
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    local lines
    lines=$(wc -l <"$tmp/err")
    if [ "$rc" -ne 2 ]; then bad "$name: exit $rc, wanted 2 ($(head -c 300 "$tmp/err"))"
    elif [ "$lines" -ne 1 ]; then bad "$name: $lines lines on stderr, wanted 1: $(head -c 300 "$tmp/err")"
    elif ! grep -qiE "$pattern" "$tmp/err"; then bad "$name: '$(cat "$tmp/err")' does not match /$pattern/"
    else ok; fi
}

expect_ok() {
    local name=$1
    shift
    if "$@" >"$tmp/out" 2>"$tmp/err"; then ok; else bad "$name: exit $? $(tail -c 300 "$tmp/err")"; fi
}

