#!/usr/bin/env bash
# The fuzzers' seed inputs (tests/fuzz/seeds/<harness>/), made by the
# programs from a tiny model: a checkpoint, a gradient dump, and the config
# JSON of each mixer, token files and tokenizer files of each kind, and
# Hugging Face tokenizers (tokenizer.json as we export it and as GPT-2's is
# laid out, vocab.json + merges.txt joined by a NUL byte); and tiny random
# GPT-2 directories in Hugging Face's layout (tests/parity/gpt2_convert.py) with
# bin/convert's export of one: their model.safetensors and config.json. Small
# enough to keep in the repository. Inputs named regression-* (crashes the
# fuzzers found, kept so they are tried again) are left as they are.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${BIN:-bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
S=tests/fuzz/seeds
for h in fuzz_checkpoint fuzz_safetensors fuzz_config fuzz_tokens fuzz_tokenizer fuzz_hf_tokenizer fuzz_hf_config \
         fuzz_hf_gpt2; do
    mkdir -p "$S/$h"
    find "$S/$h" -type f ! -name 'regression-*' -delete
done
printf 'abc abd, abe! ba.\n%.0s' $(seq 1 40) >"$tmp/t.txt"
$B/prepare --input "$tmp/t.txt" --out "$tmp/d" >/dev/null
TINY=(--data "$tmp/d" --n-layer 2 --n-head 1 --n-embd 4 --block-size 4 --batch-size 1 --max-iters 1 --eval-iters 1 --grassmann-rank 2 --grassmann-windows 1,2)
for mixer in attention grassmann; do
    $B/train "${TINY[@]}" --mixer "$mixer" --out "$S/fuzz_checkpoint/$mixer-checkpoint" >/dev/null
    $B/train "${TINY[@]}" --mixer "$mixer" --dump-grads "$S/fuzz_safetensors/$mixer-grads" >/dev/null
    cp "$S/fuzz_checkpoint/$mixer-checkpoint" "$S/fuzz_safetensors/"
    /usr/bin/python3 -c 'import sys; from harness.safetensors_np import read_safetensors
sys.stdout.write(read_safetensors(sys.argv[1])[1]["config"])' \
        "$S/fuzz_checkpoint/$mixer-checkpoint" >"$S/fuzz_config/$mixer.json"
done
for kind in char byte; do
    $B/prepare --input "$tmp/t.txt" --out "$tmp/$kind" --tokenizer "$kind" >/dev/null
    cp "$tmp/$kind/tokenizer.txt" "$S/fuzz_tokenizer/$kind-tokenizer"
    cp "$tmp/$kind/val.bin" "$S/fuzz_tokens/$kind-tokens"
done
# text outside the char vocabulary: a version 2 token file, with its unknown tokens' text
printf 'abc xyz \xc3\xa9 \xff ba.\n%.0s' $(seq 1 4) >"$tmp/u.txt"
$B/prepare --train "$tmp/t.txt" --val "$tmp/u.txt" --out "$tmp/u" --tokenizer-from "$tmp/char" >/dev/null
cp "$tmp/u/val.bin" "$S/fuzz_tokens/char-unknown-tokens"
for i in $(seq 1 30); do echo "The whale's wake, the whale: $i knots -- caf$(printf '\xc3\xa9')."; done >"$tmp/b.txt"
$B/prepare --input "$tmp/b.txt" --out "$tmp/bpe" --tokenizer bpe --vocab-size 300 --special '<|endoftext|>' >/dev/null
cp "$tmp/bpe/tokenizer.txt" "$S/fuzz_tokenizer/bpe-tokenizer"
cp "$tmp/bpe/val.bin" "$S/fuzz_tokens/bpe-tokens"
cp "$tmp/bpe/tokenizer.json" "$S/fuzz_hf_tokenizer/bpe-tokenizer.json"
$B/prepare --input "$tmp/b.txt" --out "$tmp/gpt2" --tokenizer bpe --vocab-size 300 --split-pattern gpt2 --special '<|endoftext|>' >/dev/null
$B/prepare --input "$tmp/b.txt" --out "$tmp/none" --tokenizer bpe --vocab-size 280 --split-pattern none >/dev/null
cp "$tmp/none/tokenizer.json" "$S/fuzz_hf_tokenizer/none-tokenizer.json"
# GPT-2's layout: bytes in bytes_to_unicode order, ByteLevel with its own regex, the special in the vocabulary too
/usr/bin/python3 - "$tmp/gpt2/tokenizer.json" "$S/fuzz_hf_tokenizer" <<'PY'
import json, sys
tj = json.load(open(sys.argv[1], encoding="utf-8"))
old = tj["model"]["vocab"]
order = sorted(range(256), key=lambda i: (ord(next(t for t, v in old.items() if v == i)) >= 256, i))
new_id = {old_id: new for new, old_id in enumerate(order)}
vocab = {t: new_id.get(i, i) for t, i in old.items()}
for t in tj["added_tokens"]:
    vocab[t["content"]] = t["id"]
byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
tj.update(pre_tokenizer=byte_level, post_processor=byte_level, decoder=byte_level)
tj["model"]["vocab"] = vocab
tj["model"]["merges"] = [f"{a} {b}" for a, b in tj["model"]["merges"]]
json.dump(tj, open(sys.argv[2] + "/gpt2-tokenizer.json", "w", encoding="utf-8"), ensure_ascii=False)
with open(sys.argv[2] + "/gpt2-vocab-merges", "w", encoding="utf-8") as f:
    f.write(json.dumps(vocab, ensure_ascii=False) + "\0#version: 0.2\n" + "".join(m + "\n" for m in tj["model"]["merges"]))
PY
# a saved tokenizer with a byte-order line: GPT-2's layout imported
$B/prepare --input "$tmp/b.txt" --out "$tmp/order" --tokenizer-from "$S/fuzz_hf_tokenizer/gpt2-tokenizer.json" >/dev/null
cp "$tmp/order/tokenizer.txt" "$S/fuzz_tokenizer/bpe-byte-order-tokenizer"
/usr/bin/python3 -m tests.parity.gpt2_convert --write-fuzz-seeds "$tmp/hf"
$B/convert --from-hf "$tmp/hf/f32" --out "$tmp/hf.ckpt" >/dev/null
$B/convert --to-hf "$tmp/hf.ckpt" --out "$tmp/hf/export" >/dev/null
for d in "$tmp"/hf/*/; do
    name=$(basename "$d")
    [ "$name" = export ] || cp "$d/model.safetensors" "$S/fuzz_hf_gpt2/$name-weights"
    cp "$d/model.safetensors" "$S/fuzz_safetensors/hf-$name-weights"
    cp "$d/config.json" "$S/fuzz_hf_config/$name-config.json"
done
# A checkpoint whose checksum is of the older kind, FNV-1a, which the reader still takes.
/usr/bin/python3 -m tests.tools.ckpt_forge fnv1a "$S/fuzz_checkpoint/attention-checkpoint" "$S/fuzz_checkpoint/attention-fnv1a"
# Files the format's rules refuse (two tensors on the same bytes; bytes after
# the last tensor): ours, with the checksum made to match, and others'.
for kind in overlap trailing; do
    /usr/bin/python3 -m tests.tools.ckpt_forge "$kind" "$S/fuzz_checkpoint/attention-checkpoint" "$S/fuzz_checkpoint/attention-$kind"
    cp "$S/fuzz_checkpoint/attention-$kind" "$S/fuzz_safetensors/"
    /usr/bin/python3 - "$kind" "$S/fuzz_hf_gpt2/f32-weights" "$S/fuzz_hf_gpt2/f32-$kind-weights" <<'PY'
import json, struct, sys
kind, src, dst = sys.argv[1:]
raw = open(src, "rb").read()
(n,) = struct.unpack("<Q", raw[:8])
header, data = json.loads(raw[8:8 + n]), raw[8 + n:]
if kind == "overlap":
    header["transformer.h.0.ln_1.bias"]["data_offsets"] = list(header["transformer.h.0.ln_1.weight"]["data_offsets"])
else:
    data += b"\0" * 4096
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-(len(text) + 8) % 8)
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + data)
PY
    cp "$S/fuzz_hf_gpt2/f32-$kind-weights" "$S/fuzz_safetensors/hf-f32-$kind-weights"
done
du -sh "$S"
