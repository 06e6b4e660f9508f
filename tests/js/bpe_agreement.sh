#!/usr/bin/env bash
# Our byte-level BPE against Hugging Face tokenizers and tiktoken (npm
# packages, installed into a scratch folder outside the repository): the same
# ids token for token on held-out Moby Dick, and exact decoding. Where npm
# cannot install them, says so and counts as not run (exit 0: tests/js/npm_tokenizers.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${BIN:-bin}
NAME="bpe agreement"
source tests/js/npm_tokenizers.sh
status=0
for spec in "gpt4 4096" "gpt2 1000"; do
    set -- $spec
    echo "== bpe agreement: --split-pattern $1 --vocab-size $2"
    "$B"/prepare --input "$TXT" --out "$tmp/$1" --tokenizer bpe --vocab-size "$2" --split-pattern "$1" >/dev/null 2>&1
    node tests/js/bpe_agreement.mjs "$tmp/$1" "$TXT" "$NPM_DIR/node_modules" || status=1
done
exit $status
