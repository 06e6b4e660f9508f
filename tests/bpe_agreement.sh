#!/usr/bin/env bash
# Our byte-level BPE against Hugging Face tokenizers and tiktoken (npm
# packages, installed into a scratch folder outside the repository): the same
# ids token for token on held-out Moby Dick, and exact decoding. Where npm
# cannot install them, says so and counts as not run (exit 0).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BIN:-bin}
NPM_DIR=${TMPDIR:-/tmp}/lm-bpe-agreement-npm
# tokenizers bundles its native binary; the separate native package (latest 0.13.4-rc2) is the fallback it looks for.
PACKAGES="tokenizers@0.23.2 tokenizers-linux-x64-gnu@0.13.4-rc2 tiktoken@1.0.22"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "bpe agreement: NOT RUN (node or npm is not installed)"
    exit 0
fi
if [ ! -d "$NPM_DIR/node_modules/tiktoken" ] || [ ! -d "$NPM_DIR/node_modules/tokenizers-linux-x64-gnu" ]; then
    mkdir -p "$NPM_DIR"
    echo "bpe agreement: installing $PACKAGES into $NPM_DIR"
    if ! (cd "$NPM_DIR" && timeout 300 npm install --no-audit --no-fund --silent $PACKAGES >npm.log 2>&1); then
        echo "bpe agreement: NOT RUN (npm could not install the packages; see $NPM_DIR/npm.log)"
        exit 0
    fi
fi
TXT=data/cache/moby-dick.txt
if [ ! -s "$TXT" ] && ! bash data/fetch_moby_dick.sh >/dev/null 2>&1; then
    echo "bpe agreement: NOT RUN (Moby Dick could not be fetched)"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for spec in "gpt4 4096" "gpt2 1000"; do
    set -- $spec
    echo "== bpe agreement: --split-pattern $1 --vocab-size $2"
    "$B"/prepare --input "$TXT" --out "$tmp/$1" --tokenizer bpe --vocab-size "$2" --split-pattern "$1" >/dev/null 2>&1
    node tests/bpe_agreement.mjs "$tmp/$1" "$TXT" "$NPM_DIR/node_modules" || status=1
done
exit $status
