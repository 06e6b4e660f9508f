#!/usr/bin/env bash
# The real GPT-2 tokenizer through bin/prepare --tokenizer-from: tiktoken's
# `gpt2` encoding ships GPT-2's ranks; from them tests/js/gpt2_tokenizer.mjs
# writes Hugging Face's files (vocab.json + merges.txt, and tokenizer.json
# with merges in both forms). Each imports to the same tokenizer (one hash,
# the same token files); our ids on Moby Dick and on a text of edge cases
# are tiktoken's and HF tokenizers' token for token, and decode exactly; the
# tokenizer.json we export of it imports back to the identical tokenizer.
# Without node, npm or the packages: NOT RUN, exit 0 (tests/js/npm_tokenizers.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${BIN:-bin}
NAME="gpt2 tokenizer"
source tests/js/npm_tokenizers.sh
MODULES=$NPM_DIR/node_modules
status=0
fail() { echo "FAIL $*"; status=1; }

echo "== gpt2 tokenizer: Hugging Face files from tiktoken's gpt2 ranks"
node tests/js/gpt2_tokenizer.mjs derive "$tmp/hf" "$MODULES"
for form in files json pairs; do
    "$B"/prepare --input "$TXT" --out "$tmp/$form" --tokenizer-from "$tmp/hf/$form" >"$tmp/$form.log"
done
echo "$(sed 's/ (.*//' "$tmp/files.log")"
grep -q "vocabulary 50257," "$tmp/files.log" || fail "the vocabulary is not 50,257 tokens: $(cat "$tmp/files.log")"
for form in json pairs; do
    for f in tokenizer.txt train.bin val.bin test.bin; do
        cmp -s "$tmp/files/$f" "$tmp/$form/$f" || fail "$form: $f differs from vocab.json + merges.txt's"
    done
done
[ $status = 0 ] && echo "ok   vocab.json + merges.txt, tokenizer.json with \"a b\" merges and with [a, b] merges: one tokenizer, the same token files"

echo "== gpt2 tokenizer: Moby Dick, against tiktoken and HF tokenizers (loading GPT-2's tokenizer.json)"
node tests/js/gpt2_tokenizer.mjs compare "$tmp/files" "$TXT" "$tmp/hf/json/tokenizer.json" "$MODULES" || status=1

echo "== gpt2 tokenizer: edge cases (--train and --val the same file), HF loading the [a, b] form"
"$B"/prepare --train "$tmp/hf/edge.txt" --val "$tmp/hf/edge.txt" --out "$tmp/edge" --tokenizer-from "$tmp/hf/pairs/tokenizer.json" >/dev/null
cat "$tmp/hf/edge.txt" "$tmp/hf/edge.txt" >"$tmp/edge2.txt"
node tests/js/gpt2_tokenizer.mjs compare "$tmp/edge" "$tmp/edge2.txt" "$tmp/hf/pairs/tokenizer.json" "$MODULES" || status=1

echo "== gpt2 tokenizer: our tokenizer.json of it, imported back"
"$B"/prepare --input "$TXT" --out "$tmp/back" --tokenizer-from "$tmp/files/tokenizer.json" >/dev/null
cmp -s "$tmp/files/tokenizer.txt" "$tmp/back/tokenizer.txt" && cmp -s "$tmp/files/tokenizer.json" "$tmp/back/tokenizer.json" &&
    cmp -s "$tmp/files/val.bin" "$tmp/back/val.bin" || fail "our tokenizer.json of GPT-2's does not import back to the same tokenizer"
node tests/js/gpt2_tokenizer.mjs compare "$tmp/back" "$TXT" "$tmp/files/tokenizer.json" "$MODULES" >"$tmp/back.log" ||
    { cat "$tmp/back.log"; status=1; }
[ $status = 0 ] && echo "ok   the same tokenizer.txt, tokenizer.json and token files; HF tokenizers loading our tokenizer.json agrees too ($(grep -c '^ok' "$tmp/back.log") checks)"
exit $status
