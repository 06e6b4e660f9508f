#!/usr/bin/env bash
# bin/prepare --tokenizer bpe from outside: bad input gives one line and exit
# status 2; a directory of documents with a separator; 16-bit token files;
# the encoded splits decode back to the input; the same input gives the same
# files; train, eval (bits per byte, --word-ppl) and sample run on BPE data.
set -u
cd "$(dirname "$0")/../.."
B=${BIN:-bin}
. tests/cli/cli_lib.sh

whale_text
P=(--tokenizer bpe --vocab-size 400)

# bad input
expect_error "vocab too small" "257 to 65536" $B/prepare --input "$tmp/a.txt" --out "$tmp/x" --tokenizer bpe --vocab-size 256
expect_error "vocab too large" "257 to 65536" $B/prepare --input "$tmp/a.txt" --out "$tmp/x" --tokenizer bpe --vocab-size 65537
expect_error "vocab not a number" "integer" $B/prepare --input "$tmp/a.txt" --out "$tmp/x" --tokenizer bpe --vocab-size many
expect_error "no room for merges" "leaves no merge" $B/prepare --input "$tmp/a.txt" --out "$tmp/x" --tokenizer bpe \
    --vocab-size 258 --special "<a>" --special "<b>"
expect_error "too little text" "only [0-9]+ merges" $B/prepare --input "$tmp/a.txt" --out "$tmp/x" --tokenizer bpe --vocab-size 60000
# the default --vocab-size (4096) on a text with fewer merges: all of them, one line saying so, and the
# same files as asking for that size
if $B/prepare --input "$tmp/a.txt" --out "$tmp/fit" --tokenizer bpe >"$tmp/out" 2>"$tmp/err" &&
   [ "$(grep -c "instead of the default 4096" "$tmp/err")" = 1 ]; then ok
else bad "default vocab on a small text: $(tail -c 300 "$tmp/err")"; fi
fit=$(sed -n 's/.*vocabulary \([0-9]*\) instead.*/\1/p' "$tmp/err")
expect_ok "prepare at the fitted size" $B/prepare --input "$tmp/a.txt" --out "$tmp/fit2" --tokenizer bpe --vocab-size "${fit:-0}"
if [ -n "$fit" ] && [ "$fit" -lt 4096 ] && cmp -s "$tmp/fit/tokenizer.txt" "$tmp/fit2/tokenizer.txt" &&
   cmp -s "$tmp/fit/train.bin" "$tmp/fit2/train.bin"; then ok
else bad "the default's fitted vocabulary ($fit) differs from --vocab-size $fit"; fi
expect_error "a given size is not shrunk" "only [0-9]+ merges" $B/prepare --input "$tmp/a.txt" --out "$tmp/x" --tokenizer bpe --vocab-size 4096
rm -rf "$tmp/fit" "$tmp/fit2"
expect_error "unknown pattern" "unknown --split-pattern" $B/prepare --input "$tmp/a.txt" --out "$tmp/x" "${P[@]}" --split-pattern gpt5
expect_error "vocab for char" "need --tokenizer bpe" $B/prepare --input "$tmp/a.txt" --out "$tmp/x" --vocab-size 300
expect_error "empty special" "non-empty" $B/prepare --input "$tmp/a.txt" --out "$tmp/x" "${P[@]}" --special ""
expect_error "special twice" "twice" $B/prepare --input "$tmp/a.txt" --out "$tmp/x" "${P[@]}" --special "<s>" --special "<s>"
[ ! -e "$tmp/x" ] && ok || bad "a failed prepare left $tmp/x behind"

# a corpus, twice: the same files
expect_ok "prepare bpe" $B/prepare --input "$tmp/a.txt" --out "$tmp/bpe" "${P[@]}"
expect_ok "prepare bpe again" $B/prepare --input "$tmp/a.txt" --out "$tmp/bpe2" "${P[@]}"
if cmp -s "$tmp/bpe/tokenizer.txt" "$tmp/bpe2/tokenizer.txt" && cmp -s "$tmp/bpe/train.bin" "$tmp/bpe2/train.bin"; then ok
else bad "prepare bpe is not deterministic"; fi
# 16-bit tokens; the splits decode to the input, byte for byte; tokenizer.json parses
if /usr/bin/python3 - "$tmp/bpe" "$tmp/a.txt" <<'PY'; then ok; else bad "bpe files"; fi
import json, sys
from tests.tools.bpe_files import byte_table, token_ids
d, src = sys.argv[1], sys.argv[2]
table = byte_table(d)
out = b""
for s in ("train", "val", "test"):
    width, vocab, ids = token_ids(f"{d}/{s}.bin")
    assert vocab == 400, vocab
    out += b"".join(table[t] for t in ids)
assert out == open(src, "rb").read(), "decoded splits differ from the input"
hf = json.load(open(f"{d}/tokenizer.json"))
assert len(hf["model"]["vocab"]) == 400 and len(hf["model"]["merges"]) == 144
PY

# a corrupt tokenizer file is one line, exit 2, wherever it is read
cp -r "$tmp/bpe" "$tmp/corrupt"
sed -i '0,/^merges/{s/^merges .*/merges 9/}' "$tmp/corrupt/tokenizer.txt"
expect_error "corrupt tokenizer (count)" "corrupt" $B/train --data "$tmp/corrupt" --out "$tmp/c.ckpt" --max-iters 1
cp "$tmp/bpe/tokenizer.txt" "$tmp/corrupt/tokenizer.txt"
sed -i 's/^97 98$/97 9999/' "$tmp/corrupt/tokenizer.txt"
sed -i '$ s/.*/1 99999/' "$tmp/corrupt/tokenizer.txt"
expect_error "corrupt tokenizer (merge)" "corrupt" $B/train --data "$tmp/corrupt" --out "$tmp/c.ckpt" --max-iters 1
printf 'lm-tokenizer 1\nbpe 300\npattern gpt4\nregex (unclosed\nspecials 0\nmerges 0\n' >"$tmp/corrupt/tokenizer.txt"
expect_error "corrupt tokenizer (regex)" "corrupt.*regex" $B/train --data "$tmp/corrupt" --out "$tmp/c.ckpt" --max-iters 1

# documents from a directory, a separator between them
expect_ok "prepare dir" $B/prepare --input "$tmp/docs" --out "$tmp/docsbpe" "${P[@]}" --doc-separator "<|endoftext|>"
if /usr/bin/python3 - "$tmp/docsbpe" <<'PY'; then ok; else bad "separators between documents"; fi
import struct, sys
d = sys.argv[1]
seps = 0
for s in ("train", "val", "test"):
    b = open(f"{d}/{s}.bin", "rb").read()
    n = struct.unpack("<Q", b[24:32])[0]
    seps += list(struct.unpack(f"<{n}H", b[32:])).count(399)
assert seps == 2, seps
PY

# explicit splits: the tokenizer learns from --train only (swapping val and test changes no byte of it,
# and each split's file is the other's); separators between the documents of a split, never before its first
sed -n 1,20p "$tmp/a.txt" >"$tmp/v.txt"
sed -n 100,120p "$tmp/a.txt" >"$tmp/t.txt"
SEP=(--doc-separator "<|endoftext|>")
expect_ok "prepare bpe splits" $B/prepare --train "$tmp/docs" --val "$tmp/v.txt" --test "$tmp/t.txt" --out "$tmp/spl" "${P[@]}" "${SEP[@]}"
expect_ok "prepare bpe splits swapped" $B/prepare --train "$tmp/docs" --val "$tmp/t.txt" --test "$tmp/v.txt" --out "$tmp/spl2" "${P[@]}" "${SEP[@]}"
cmp -s "$tmp/spl/tokenizer.txt" "$tmp/spl2/tokenizer.txt" && cmp -s "$tmp/spl/train.bin" "$tmp/spl2/train.bin" \
    && cmp -s "$tmp/spl/val.bin" "$tmp/spl2/test.bin" && cmp -s "$tmp/spl/test.bin" "$tmp/spl2/val.bin" && ok \
    || bad "bpe splits: val or test changed the tokenizer or each other"
if /usr/bin/python3 - "$tmp/spl" "$tmp" <<'PY'; then ok; else bad "bpe splits decode to their files"; fi
import sys
from tests.tools.bpe_files import byte_table, token_ids
d, src = sys.argv[1], sys.argv[2]
table = byte_table(d, ["<|endoftext|>"])
docs = [open(f"{src}/docs/doc{i}.txt", "rb").read() for i in (1, 2, 3)]
want = {"train": b"<|endoftext|>".join(docs), "val": open(f"{src}/v.txt", "rb").read(), "test": open(f"{src}/t.txt", "rb").read()}
for s, text in want.items():
    ids = token_ids(f"{d}/{s}.bin")[2]
    assert ids.count(399) == (2 if s == "train" else 0), s
    assert b"".join(table[t] for t in ids) == text, s
PY

# train, eval and sample on BPE data
SMALL=(--n-layer 1 --n-head 2 --n-embd 16 --block-size 16 --batch-size 4 --eval-iters 2 --log-interval 5)
expect_ok "train bpe" $B/train --data "$tmp/bpe" --out "$tmp/bpe.ckpt" "${SMALL[@]}" --max-iters 5
expect_ok "eval bpe" $B/eval --model "$tmp/bpe.ckpt" --data "$tmp/bpe" --word-ppl
grep -q "bits per byte" "$tmp/out" && grep -q "word perplexity" "$tmp/out" && ok || bad "eval bpe output: $(cat "$tmp/out")"
expect_ok "eval bpe json" $B/eval --model "$tmp/bpe.ckpt" --data "$tmp/bpe" --split test --json --word-ppl
/usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['bits_per_byte'] > 0 and j['word_perplexity'] > 1" \
    "$tmp/out" && ok || bad "eval bpe json: $(cat "$tmp/out")"
expect_ok "sample bpe" $B/sample --model "$tmp/bpe.ckpt" --prompt "the whale" --tokens 40
[ "$(wc -c <"$tmp/out")" -gt 20 ] && ok || bad "sample bpe printed too little"
expect_error "eval bpe model on char data" "tokenizer" $B/eval --model "$tmp/bpe.ckpt" --data "$tmp/docsbpe"

echo "bpe cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
