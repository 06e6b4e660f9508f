"""Forges a GPT-2-shaped checkpoint of ours (docs/design.md#file-formats) with
random weights, and optionally a data directory in its tokenizer, for the
measurements and tests at GPT-2 small's size (docs/programs.md#gpt-2-small-s-size),
where no real GPT-2 is at hand to import (docs/gpt2.md imports one).

The model is what bin/convert will write: weights only (no optim.m. / optim.v.
tensors), step 0. Weights N(0, 0.02), the residual projections
N(0, 0.02 / sqrt(2 n_layer)), biases 0, LayerNorm gains 1 (as bin/train's
initialisation). The tokenizer is byte-level BPE with the gpt2 split pattern,
--merges merges and one special token, <|endoftext|>: 256 + 50,000 + 1 = 50,257
ids by default, GPT-2's vocabulary size. With --text the merges spell the
text's words, most frequent first, prefix by prefix (" w", " wh", " wha", ...),
so that tokens look like GPT-2's; what the text does not fill is topped up
with arbitrary valid merges (each joins two earlier tokens into new bytes).
The merges are valid, not trained: the data encoded with them (greedy lowest
rank per piece, Python's approximation of the split pattern) is data in that
vocabulary, which is all the programs need of it.

With --tokenizer-of DIR the model takes the tokenizer of a prepared data
directory instead (DIR/tokenizer.txt), such as GPT-2's real one:
bin/prepare --tokenizer-from on the files tests/js/gpt2_tokenizer.mjs derives
from tiktoken's gpt2 ranks (docs/gpt2.md); DIR is then its data.

Usage (from the project root):
  /usr/bin/python3 -m tests.tools.gpt2_forge --out runs/gpt2/model.ckpt \\
      [--data runs/gpt2/data --text data/cache/moby-dick.txt | --tokenizer-of DIR] \\
      [--n-layer 12 --n-head 12 --n-embd 768 --block-size 1024 --merges 50000 --seed 1]
Without --text the data are random tokens. The checkpoint's checksum is of
the older kind, FNV-1a over the whole file (the programs read it as they read
XXH3's), byte by byte in Python: about 45 s for the 500 MB of the 124M model."""
import argparse
import json
import os
import re
import struct

import numpy as np

from tests.tools.ckpt_poison import FNV_KIND, KEY, fnv1a

GPT2_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
# Python's re has no \p{..}: letters are [^\W\d_], numbers \d.
PIECES = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+")
SPECIAL = b"<|endoftext|>"


def make_merges(n_merges, text, rng):
    """Merges (left id, right id) and every token's bytes."""
    tokens = [bytes([b]) for b in range(256)]
    ids = {t: i for i, t in enumerate(tokens)}
    merges = []

    def add(left, right):
        new = tokens[left] + tokens[right]
        if new in ids:
            return
        ids[new] = len(tokens)
        tokens.append(new)
        merges.append((left, right))

    if text:
        counts = {}
        for piece in PIECES.findall(text):
            counts[piece] = counts.get(piece, 0) + 1
        for piece in sorted(counts, key=lambda p: (-counts[p], p)):
            b = piece.encode()
            for k in range(2, len(b) + 1):
                if len(merges) == n_merges:
                    break
                add(ids[b[:k - 1]], b[k - 1])
            if len(merges) == n_merges:
                break
    while len(merges) < n_merges:
        left, right = (int(x) for x in rng.integers(0, len(tokens), 2))
        if len(tokens[left]) + len(tokens[right]) <= 16:
            add(left, right)
    return merges, tokens


def tokenizer_text(merges):
    lines = ["lm-tokenizer 1", f"bpe {256 + len(merges) + 1}", "pattern gpt2", f"regex {GPT2_REGEX}",
             "specials 1", SPECIAL.hex(), f"merges {len(merges)}"]
    lines += [f"{a} {b}" for a, b in merges]
    return "\n".join(lines) + "\n"


def encode(text, merges):
    """Greedy lowest-rank BPE over each piece, as the C encoder ranks merges."""
    rank = {pair: 256 + k for k, pair in enumerate(merges)}
    cache, out = {}, []
    for piece in PIECES.findall(text):
        if piece not in cache:
            seq = list(piece.encode())
            while len(seq) > 1:
                best = min(range(len(seq) - 1), key=lambda i: rank.get((seq[i], seq[i + 1]), 1 << 30))
                merged = rank.get((seq[best], seq[best + 1]))
                if merged is None:
                    break
                seq[best:best + 2] = [merged]
            cache[piece] = seq
        out += cache[piece]
    return out


def write_tokens(path, ids, vocab):
    width = 2 if vocab <= 65536 else 4
    arr = np.asarray(ids, dtype=np.uint16 if width == 2 else np.uint32)
    with open(path + ".tmp", "wb") as f:
        f.write(b"LMTOKENS" + struct.pack("<IIQQ", 1, width, vocab, len(arr)) + arr.tobytes())
    os.replace(path + ".tmp", path)


def layout(cfg):
    """(name, shape, init) in storage order (model.c's build_layout)."""
    C, V, L = cfg["n_embd"], cfg["vocab_size"], cfg["n_layer"]
    out = [("wte", [V, C], "normal"), ("wpe", [cfg["block_size"], C], "normal")]
    for l in range(L):
        p = f"h.{l}."
        out += [(p + "ln1.weight", [C], "one"), (p + "ln1.bias", [C], "zero"),
                (p + "attn.qkv.weight", [3 * C, C], "normal"), (p + "attn.qkv.bias", [3 * C], "zero"),
                (p + "attn.proj.weight", [C, C], "residual"), (p + "attn.proj.bias", [C], "zero"),
                (p + "ln2.weight", [C], "one"), (p + "ln2.bias", [C], "zero"),
                (p + "mlp.fc.weight", [4 * C, C], "normal"), (p + "mlp.fc.bias", [4 * C], "zero"),
                (p + "mlp.proj.weight", [C, 4 * C], "residual"), (p + "mlp.proj.bias", [C], "zero")]
    return out + [("ln_f.weight", [C], "one"), ("ln_f.bias", [C], "zero")]


def write_checkpoint(path, cfg, tok_text, rng):
    tensors, offset = {}, 0
    for name, shape, _ in layout(cfg):
        n = int(np.prod(shape)) * 4
        tensors[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    tok_hash = "%016x" % fnv1a(tok_text.encode())
    meta = {"checksum": FNV_KIND.decode() + "0" * 16, "format": "lm-ckpt 1", "config": json.dumps(cfg, separators=(",", ":")),
            "step": "0", "data_rng": "0", "tokenizer": tok_hash, "tokenizer_text": tok_text, "train": "{}"}
    header = json.dumps({"__metadata__": meta, **tensors}, separators=(",", ":")).encode()
    header += b" " * (-(len(header) + 8) % 8)
    head = struct.pack("<Q", len(header)) + header
    h = fnv1a(head)
    resid = 0.02 / np.sqrt(2.0 * cfg["n_layer"])
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(head)
        for name, shape, init in layout(cfg):
            if init == "one":
                w = np.ones(shape, np.float32)
            elif init == "zero":
                w = np.zeros(shape, np.float32)
            else:
                w = rng.normal(0.0, 0.02 if init == "normal" else resid, size=shape).astype(np.float32)
            raw = w.tobytes()
            h = fnv1a(raw, h)
            f.write(raw)
        at = head.index(KEY) + len(KEY) + len(FNV_KIND)
        f.seek(at)
        f.write(b"%016x" % h)
    os.replace(tmp, path)
    return tok_hash


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the checkpoint to write")
    ap.add_argument("--data", help="also a data directory in its tokenizer: tokenizer.txt, train.bin, val.bin")
    ap.add_argument("--text", help="text whose words the merges spell and the data encode")
    ap.add_argument("--tokenizer-of", help="a prepared data directory whose tokenizer.txt the model takes")
    ap.add_argument("--n-layer", type=int, default=12)
    ap.add_argument("--n-head", type=int, default=12)
    ap.add_argument("--n-embd", type=int, default=768)
    ap.add_argument("--block-size", type=int, default=1024)
    ap.add_argument("--merges", type=int, default=50000)
    ap.add_argument("--tokens", type=int, default=200000, help="random tokens in each data file without --text")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    if a.tokenizer_of:
        if a.data or a.text:
            ap.error("--tokenizer-of takes its data directory's tokenizer: no --data or --text")
        tok_text = open(os.path.join(a.tokenizer_of, "tokenizer.txt"), encoding="utf-8", newline="").read()
        vocab = int(tok_text.split("\n")[1].split()[1])  # "<kind> <vocabulary>"
    else:
        text = open(a.text, encoding="utf-8", errors="replace").read() if a.text else ""
        merges, _ = make_merges(a.merges, text, rng)
        tok_text = tokenizer_text(merges)
        vocab = 256 + len(merges) + 1
    cfg = {"vocab_size": vocab, "block_size": a.block_size, "n_layer": a.n_layer, "n_head": a.n_head,
           "n_embd": a.n_embd, "mixers": ["attention"] * a.n_layer, "pos": "learned", "norm": "pre",
           "grassmann_rank": 32, "grassmann_windows": [1, 2, 4, 8, 12, 16], "dropout": 0}
    if a.data:
        os.makedirs(a.data, exist_ok=True)
        ids = encode(text, merges) if text else rng.integers(0, vocab - 1, 2 * a.tokens).tolist()
        cut = len(ids) * 9 // 10 if text else a.tokens
        write_tokens(os.path.join(a.data, "train.bin"), ids[:cut], vocab)
        write_tokens(os.path.join(a.data, "val.bin"), ids[cut:], vocab)
        with open(os.path.join(a.data, "tokenizer.txt"), "w") as f:
            f.write(tok_text)
        print(f"wrote {a.data}: train {cut}, val {len(ids) - cut} tokens")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    tok_hash = write_checkpoint(a.out, cfg, tok_text, rng)
    n_params = sum(int(np.prod(s)) for _, s, _ in layout(cfg))
    print(f"wrote {a.out}: {n_params} parameters, vocabulary {vocab}, tokenizer {tok_hash}")


if __name__ == "__main__":
    main()
