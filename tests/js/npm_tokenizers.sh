# Sourced by the tests that check our tokenizers against Hugging Face
# tokenizers and tiktoken (tests/js/bpe_agreement.sh, tests/js/gpt2_tokenizer.sh):
# installs the npm packages into a scratch folder outside the repository
# (NPM_DIR, tests/js/npm_lib.sh), makes sure Moby Dick is there (TXT) and makes a scratch
# directory (tmp, removed on exit). Where node or npm is missing, the
# packages cannot be installed or the text cannot be fetched, it says so and
# the test counts as not run (exit 0). NAME names the test.
NPM_DIR=${TMPDIR:-/tmp}/lm-bpe-agreement-npm
# tokenizers bundles its native binary; the separate native package (latest 0.13.4-rc2) is the fallback it looks for.
PACKAGES="tokenizers@0.23.2 tokenizers-linux-x64-gnu@0.13.4-rc2 tiktoken@1.0.22"
source tests/js/npm_lib.sh
npm_install "$NAME" "$NPM_DIR" $PACKAGES
TXT=data/cache/moby-dick.txt
if [ ! -s "$TXT" ] && ! bash data/fetch_moby_dick.sh >/dev/null 2>&1; then
    echo "$NAME: NOT RUN (Moby Dick could not be fetched)"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
