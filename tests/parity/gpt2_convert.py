"""bin/convert against GPT-2 as Hugging Face defines it, without transformers.

No real GPT-2 weights are reachable here, so this builds RANDOM GPT-2-shaped
models in the layout save_pretrained writes for GPT2LMHeadModel (config.json,
model.safetensors or shards with model.safetensors.index.json, the tokenizer
as vocab.json + merges.txt or tokenizer.json), in every variant found in the
wild: names with and without "transformer.", F32, F16 and BF16, lm_head.weight
absent or present, the old causal-mask buffers h.N.attn.bias and
h.N.attn.masked_bias. Every tensor is non-trivial (LayerNorm gains away from 1,
biases away from 0, nothing symmetric), so a tensor swapped, transposed or
dropped changes the loss far beyond the tolerance.

Checks:
- import: bin/eval's loss (and the loss at each position, --by-position) on
  random tokens against an independent float64 GPT-2 forward written here
  from GPT-2's definition (gpt2_forward: Conv1D x W + b, q/k/v split, causal
  softmax scaled by 1/sqrt(head size), tanh GELU, LayerNorm eps from
  config.json, tied or explicit head), reading the directory as Hugging Face
  does; relative error below 1e-4. bin/sample and bin/inspect run on it, and
  bin/train --resume on it is refused naming --init.
- export: bin/convert --to-hf of an imported model and of one bin/train
  trained, read back by the same reference (the loss equals bin/eval's), its
  config.json and safetensors layout as transformers expects, and re-imported
  to the same checkpoint, byte for byte, tokenizer included.
- refusals: models GPT-2 cannot express, and hostile directories (a missing,
  extra, misshaped or wrongly typed tensor, lm_head unequal, a config that
  disagrees with the tensors or that our model cannot be, corrupt JSON, a
  truncated file, broken shard indexes, NaN): exit status 2, one line on
  stderr, and nothing written (a checkpoint already at --out is unchanged).

Run from the project root after `make`: /usr/bin/python3 -m tests.parity.gpt2_convert
(`--write-fuzz-seeds DIR` only writes tiny random GPT-2 directories, the
fuzzers' seeds: tests/fuzz/make_seeds.sh. `--write-random DIR L,H,C,P,V DTYPE`
only writes config.json and model.safetensors of a random GPT-2 of those sizes,
without a tokenizer: docs/gpt2.md's measurements at 124M.)
"""
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

from harness.common import ROOT
from harness.safetensors_np import NUMPY_DTYPES, read_safetensors

BIN = os.path.join(ROOT, os.environ.get("BIN", "bin"))
TOL = 1e-4
N_LAYER, N_HEAD, N_EMBD, N_POSITIONS = 2, 4, 64, 32
SIZES = {"n_layer": N_LAYER, "n_head": N_HEAD, "n_embd": N_EMBD, "n_positions": N_POSITIONS}
# the fuzzers' model (tests/fuzz/fuzz_hf_gpt2.c writes the same config.json and a 256-byte tokenizer)
TINY = {"n_layer": 2, "n_head": 2, "n_embd": 4, "n_positions": 4}
EOT = "<|endoftext|>"

# ---- GPT-2's byte-level BPE, written from its definition --------------------------------


def bytes_to_unicode():
    """GPT-2's table: the printable Latin-1 bytes as themselves, the other 68
    as U+0100 onwards; the list's order is the order of ids 0..255 in GPT-2's
    vocabulary (id 0 is '!')."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [(b, chr(c)) for b, c in zip(bs, cs)]


TEXT = ("Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in my purse, "
        "and nothing particular to interest me on shore, I thought I would sail about a little and see the watery "
        "part of the world. ") * 4


def small_bpe(n_merges=40, eot=True):
    """A GPT-2-style vocabulary (bytes in bytes_to_unicode order, then merges
    learnt greedily from TEXT, then <|endoftext|>) and its merges, spelled."""
    table = bytes_to_unicode()
    spell = dict(table)
    vocab = {ch: i for i, (_, ch) in enumerate(table)}
    words = []
    for i, w in enumerate(TEXT.split(" ")):
        raw = (" " if i else "") + w
        words.append([spell[b] for b in raw.encode()])
    merges = []
    while len(merges) < n_merges:
        counts = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        best = [p for p in sorted(counts, key=lambda p: (-counts[p], p)) if p[0] + p[1] not in vocab]
        if not best:
            break
        a, b = best[0]
        merges.append((a, b))
        vocab[a + b] = len(vocab)
        for w in words:
            i = 0
            while i < len(w) - 1:
                if w[i] == a and w[i + 1] == b:
                    w[i:i + 2] = [a + b]
                i += 1
    if eot:
        vocab[EOT] = len(vocab)
    return vocab, merges


def write_vocab_merges(d, vocab, merges):
    with open(f"{d}/vocab.json", "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(f"{d}/merges.txt", "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))


def write_tokenizer_json(d, vocab, merges):
    """tokenizer.json as the hub's gpt2 has it: ByteLevel pre-tokenizer with its regex, BPE model."""
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    doc = {"version": "1.0", "truncation": None, "padding": None,
           "added_tokens": [{"id": vocab[EOT], "content": EOT, "single_word": False, "lstrip": False,
                             "rstrip": False, "normalized": True, "special": True}] if EOT in vocab else [],
           "normalizer": None, "pre_tokenizer": byte_level, "post_processor": byte_level, "decoder": byte_level,
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                     "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                     "vocab": {k: v for k, v in vocab.items() if k != EOT},
                     "merges": [f"{a} {b}" for a, b in merges]}}
    with open(f"{d}/tokenizer.json", "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)


# ---- safetensors as other programs write and read it --------------------------------------

def encode(a, dtype):
    """Raw little-endian bytes of a float32 array in dtype (BF16: rounded to nearest even by torch)."""
    if dtype == "BF16":
        return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to(torch.bfloat16).view(torch.int16).numpy().tobytes()
    return np.ascontiguousarray(a, dtype=NUMPY_DTYPES[dtype]).tobytes()


def write_st(path, tensors, metadata=None, order=None):
    """tensors: name -> (dtype, shape, raw bytes). Entries in `order` (default sorted, as the safetensors library)."""
    header, blobs, at = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name in (order or sorted(tensors)):
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def load_hf(d):
    """A save_pretrained directory as transformers loads GPT2LMHeadModel: config.json, then model.safetensors
    or the shards of its index; names without "transformer."; buffers (attn.bias, masked_bias) dropped."""
    with open(f"{d}/config.json") as f:
        cfg = json.load(f)
    if os.path.exists(f"{d}/model.safetensors"):
        files = ["model.safetensors"]
    else:
        with open(f"{d}/model.safetensors.index.json") as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    W = {}
    for name in files:
        tensors, _ = read_safetensors(f"{d}/{name}")
        for k, v in tensors.items():
            k = k[len("transformer."):] if k.startswith("transformer.") else k
            if not re.fullmatch(r"h\.\d+\.attn\.(bias|masked_bias)", k):
                W[k] = torch.tensor(v.astype(np.float64))
    return cfg, W


# ---- GPT-2's forward, from its definition ----------------------------------------------------


def gpt2_forward(cfg, W, idx):
    """Logits (B, T, V) of GPT2LMHeadModel in float64: W holds Hugging Face's tensors (Conv1D weights [in, out])."""
    C, H = cfg["n_embd"], cfg["n_head"]
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    B, T = idx.shape
    hs = C // H

    def ln(x, p):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + eps) * W[p + ".weight"] + W[p + ".bias"]

    def conv1d(x, p):
        return x @ W[p + ".weight"] + W[p + ".bias"]

    def gelu_new(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))

    x = W["wte.weight"][idx] + W["wpe.weight"][:T]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(cfg["n_layer"]):
        p = f"h.{l}."
        q, k, v = conv1d(ln(x, p + "ln_1"), p + "attn.c_attn").split(C, dim=-1)
        q, k, v = (t.view(B, T, H, hs).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = torch.softmax(att.masked_fill(~causal, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + conv1d(y, p + "attn.c_proj")
        x = x + conv1d(gelu_new(conv1d(ln(x, p + "ln_2"), p + "mlp.c_fc")), p + "mlp.c_proj")
    head = W.get("lm_head.weight", W["wte.weight"])
    return ln(x, "ln_f") @ head.T


def reference_losses(d, tokens):
    """Per-token losses (windows, T) of the model in directory d over disjoint windows of its n_positions."""
    cfg, W = load_hf(d)
    T = cfg["n_positions"]
    n = (len(tokens) - 1) // T
    x = torch.tensor(tokens[:n * T], dtype=torch.long).view(n, T)
    y = torch.tensor(tokens[1:n * T + 1], dtype=torch.long).view(n, T)
    logits = gpt2_forward(cfg, W, x)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1),
                                             reduction="none").view(n, T)


# ---- random GPT-2 models in Hugging Face's layout ------------------------------------------------


def random_gpt2(vocab_size, seed, sizes=SIZES):
    """HF names (no prefix) -> float32 arrays in HF layout, every tensor non-trivial."""
    g = np.random.default_rng(seed)
    C, P = sizes["n_embd"], sizes["n_positions"]

    def normal(*shape, scale):
        return g.normal(0.0, scale, size=shape).astype(np.float32)

    W = {"wte.weight": normal(vocab_size, C, scale=0.1), "wpe.weight": normal(P, C, scale=0.05)}
    for l in range(sizes["n_layer"]):
        p = f"h.{l}."
        for ln in ("ln_1", "ln_2"):
            W[p + ln + ".weight"] = 1.0 + normal(C, scale=0.2)
            W[p + ln + ".bias"] = normal(C, scale=0.1)
        for name, n_in, n_out in (("attn.c_attn", C, 3 * C), ("attn.c_proj", C, C), ("mlp.c_fc", C, 4 * C),
                                  ("mlp.c_proj", 4 * C, C)):
            W[p + name + ".weight"] = normal(n_in, n_out, scale=1.0 / math.sqrt(n_in))
            W[p + name + ".bias"] = normal(n_out, scale=0.1)
    W["ln_f.weight"] = 1.0 + normal(C, scale=0.2)
    W["ln_f.bias"] = normal(C, scale=0.1)
    return W


def gpt2_config(vocab, sizes=SIZES, **changes):
    """GPT-2's config.json (as transformers 4.36 saves it) at our small sizes, with changes (... removes a key)."""
    vocab_size = vocab
    cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
           "n_layer": sizes["n_layer"], "n_head": sizes["n_head"], "n_embd": sizes["n_embd"],
           "n_positions": sizes["n_positions"], "n_ctx": sizes["n_positions"],
           "n_inner": None, "vocab_size": vocab_size, "layer_norm_epsilon": 1e-05, "initializer_range": 0.02,
           "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1, "scale_attn_weights": True,
           "summary_type": "cls_index", "summary_activation": None, "summary_use_proj": True,
           "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
           "bos_token_id": vocab_size - 1, "eos_token_id": vocab_size - 1,
           "torch_dtype": "float32", "transformers_version": "4.36.2"}
    cfg.update(changes)
    return {k: v for k, v in cfg.items() if v is not ...}


def entry(a, dtype="F32"):
    """A tensor for write_st."""
    return dtype, a.shape, encode(a, dtype)


def hf_tensors(W, dtype="F32", prefix=True):
    """The weights W under their file names."""
    return {("transformer." if prefix else "") + k: entry(a, dtype) for k, a in W.items()}


def write_hf(d, *, dtype="F32", prefix=True, lm_head=False, buffers=False, shards=1, tokenizer="vocab_merges",
             seed=1, config=None, weights=None, sizes=SIZES, n_merges=40, eot=True, mask_dtype="BOOL"):
    """A random GPT-2 save_pretrained directory; returns (vocab size, HF weights as float32 arrays)."""
    os.makedirs(d, exist_ok=True)
    vocab, merges = small_bpe(n_merges, eot)
    V = len(vocab)
    if tokenizer == "vocab_merges":
        write_vocab_merges(d, vocab, merges)
    else:
        write_tokenizer_json(d, vocab, merges)
    W = weights if weights is not None else random_gpt2(V, seed, sizes)
    with open(f"{d}/config.json", "w") as f:
        json.dump(config if config is not None else gpt2_config(V, sizes, **({} if eot else {"bos_token_id": None, "eos_token_id": None})), f, indent=2)
    tensors = hf_tensors(W, dtype, prefix)
    if lm_head:
        tensors["lm_head.weight"] = entry(W["wte.weight"], dtype)
    if buffers:
        P = sizes["n_positions"]
        for l in range(sizes["n_layer"]):
            mask = np.tril(np.ones((P, P), dtype=np.float32)).reshape(1, 1, P, P)
            tensors[f"{'transformer.' if prefix else ''}h.{l}.attn.bias"] = entry(mask, mask_dtype)
            tensors[f"{'transformer.' if prefix else ''}h.{l}.attn.masked_bias"] = entry(np.array(-1e4, np.float32))
    meta = {"format": "pt"}
    if shards == 1:
        write_st(f"{d}/model.safetensors", tensors, meta)
    else:
        names = sorted(tensors)
        weight_map = {}
        for s in range(shards):
            file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
            part = {k: tensors[k] for k in names[s::shards]}
            write_st(f"{d}/{file}", part, meta)
            weight_map.update({k: file for k in part})
        with open(f"{d}/model.safetensors.index.json", "w") as f:
            json.dump({"metadata": {"total_size": sum(len(t[2]) for t in tensors.values())}, "weight_map": weight_map}, f)
    return V, W


# ---- running the programs --------------------------------------------------------------------------

failures = []


def check(ok, what):
    print(f"{what}  {'ok' if ok else 'FAILED'}")
    if not ok:
        failures.append(what)
    return ok


def run(*args):
    r = subprocess.run([os.path.join(BIN, args[0])] + [str(a) for a in args[1:]], capture_output=True,
                       env=dict(os.environ, OMP_NUM_THREADS="2"))
    # a random model samples any bytes
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(errors="replace"),
                                       r.stderr.decode(errors="replace"))


def write_tokens(path, tokens, vocab_size):
    """A token file (docs/design.md): LMTOKENS, version 1, width 2, vocabulary, count, the ids."""
    with open(path, "wb") as f:
        f.write(b"LMTOKENS" + struct.pack("<IIQQ", 1, 2, vocab_size, len(tokens)) + np.asarray(tokens, np.uint16).tobytes())


def eval_losses(ckpt, tokens_path):
    r = run("eval", "--model", ckpt, "--data", tokens_path, "--json", "--by-position")
    if r.returncode != 0:
        return None, None, r.stderr.strip()
    out = json.loads(r.stdout)
    return out["loss"], out["by_position"]["loss"], None


def compare(name, ckpt, hf_dir, tokens, tokens_path):
    """bin/eval on ckpt against the reference forward of hf_dir: the mean loss and the loss at each position."""
    loss, by_pos, why = eval_losses(ckpt, tokens_path)
    if loss is None:
        return check(False, f"{name}: bin/eval failed: {why}")
    ref = reference_losses(hf_dir, tokens)
    ref_loss, ref_pos = ref.mean().item(), ref.mean(0)
    rel = abs(loss - ref_loss) / abs(ref_loss)
    pos_rel = (torch.tensor(by_pos, dtype=torch.float64) - ref_pos).abs().max().item() / ref_pos.abs().min().item()
    return check(rel < TOL and pos_rel < TOL,
                 f"{name}: loss {loss:.6f}, GPT-2 reference {ref_loss:.6f}, relative error {rel:.1e}; "
                 f"{len(by_pos)} positions, worst {pos_rel:.1e}")


def expect_refusal(name, pattern, args, out_path):
    """Exit status 2, one stderr line matching pattern, out_path as before (absent or the same bytes)."""
    before = open(out_path, "rb").read() if os.path.exists(out_path) else None
    r = run(*args)
    lines = r.stderr.strip().split("\n") if r.stderr.strip() else []
    after = open(out_path, "rb").read() if os.path.exists(out_path) else None
    ok = r.returncode == 2 and len(lines) == 1 and pattern.lower() in lines[0].lower() and before == after
    if os.environ.get("GPT2_CONVERT_SHOW"):
        print("   ", r.stderr.strip())
    return check(ok, f"refused: {name}" + ("" if ok else f" (exit {r.returncode}, stderr {r.stderr.strip()!r}, "
                                                    f"output {'changed' if before != after else 'unchanged'})"))


# ---- the checks ---------------------------------------------------------------------------------------


def imports(tmp, tokens, tokens_path):
    variants = [
        ("F32, transformer. names, no lm_head, vocab.json + merges.txt", dict(dtype="F32")),
        ("F32, bare names, F32 mask buffers (the hub's gpt2)", dict(dtype="F32", prefix=False, buffers=True,
                                                                     mask_dtype="F32")),
        ("F16, lm_head present, tokenizer.json", dict(dtype="F16", lm_head=True, tokenizer="json")),
        ("BF16, mask buffers, lm_head, 3 shards + index", dict(dtype="BF16", buffers=True, lm_head=True, shards=3)),
        ("F16, bare names, lm_head, 2 shards", dict(dtype="F16", prefix=False, lm_head=True, shards=2, seed=2)),
    ]
    for i, (name, kw) in enumerate(variants):
        d, ckpt = f"{tmp}/hf{i}", f"{tmp}/hf{i}.ckpt"
        write_hf(d, **kw)
        r = run("convert", "--from-hf", d, "--out", ckpt)
        if not check(r.returncode == 0, f"convert {name}" + (f": {r.stderr.strip()}" if r.returncode else "")):
            continue
        compare(f"import {name}", ckpt, d, tokens, tokens_path)
    # an old config: n_ctx without n_positions, no activation_function or layer_norm_epsilon (the defaults)
    d = f"{tmp}/hf-old"
    V = len(small_bpe()[0])
    write_hf(d, config=gpt2_config(V, n_positions=..., activation_function=..., layer_norm_epsilon=..., n_inner=...))
    r = run("convert", "--from-hf", d, "--out", f"{tmp}/old.ckpt")  # the same seed: hf0's weights
    check(r.returncode == 0 and open(f"{tmp}/old.ckpt", "rb").read() == open(f"{tmp}/hf0.ckpt", "rb").read(),
          "an old config (n_ctx for n_positions, the defaults for the rest) gives hf0's checkpoint, byte for byte"
          + (f": {r.stderr.strip()}" if r.returncode else ""))


def programs_on_import(tmp):
    ckpt = f"{tmp}/hf0.ckpt"
    r = run("sample", "--model", ckpt, "--prompt", "Call me", "--tokens", "20", "--seed", "3")
    check(r.returncode == 0 and r.stdout.startswith("Call me"), "bin/sample on a converted model")
    r = run("inspect", "--model", ckpt, "--prompt", "Call me Ishmael. Call me", "--out", f"{tmp}/inspect",
            "--induction-seqs", "2")
    check(r.returncode == 0 and os.path.exists(f"{tmp}/inspect/inspect.json"), "bin/inspect on a converted model"
          + (f": {r.stderr.strip()}" if r.returncode else ""))
    with open(f"{tmp}/text.txt", "w") as f:
        f.write(TEXT * 3)
    r = run("prepare", "--input", f"{tmp}/text.txt", "--out", f"{tmp}/data", "--tokenizer", "byte")
    if check(r.returncode == 0, "a data directory to resume on"):
        expect_refusal("bin/train --resume on a converted model names --init", "--init",
                       ["train", "--data", f"{tmp}/data", "--out", f"{tmp}/resumed.ckpt", "--resume", ckpt],
                       f"{tmp}/resumed.ckpt")


def exports(tmp, tokens, tokens_path):
    # an imported model goes out and back unchanged
    out = f"{tmp}/export0"
    r = run("convert", "--to-hf", f"{tmp}/hf0.ckpt", "--out", out)
    if not check(r.returncode == 0, "export a converted model" + (f": {r.stderr.strip()}" if r.returncode else "")):
        return
    check(sorted(os.listdir(out)) == ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
          and not any(n.startswith("export0.tmp") for n in os.listdir(tmp)), "the export's files, no temporary left")
    with open(f"{out}/config.json") as f:
        cfg = json.load(f)
    V = cfg["vocab_size"]
    want = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "activation_function": "gelu_new",
            "n_layer": N_LAYER, "n_head": N_HEAD, "n_embd": N_EMBD, "n_positions": N_POSITIONS, "n_inner": None,
            "layer_norm_epsilon": 1e-5, "tie_word_embeddings": True, "scale_attn_weights": True,
            "scale_attn_by_inverse_layer_idx": False, "reorder_and_upcast_attn": False,
            "bos_token_id": V - 1, "eos_token_id": V - 1}
    check(all(cfg.get(k) == v for k, v in want.items()), "the export's config.json is GPT2Config's")
    tensors, meta = read_safetensors(f"{out}/model.safetensors")
    hf, _ = read_safetensors(f"{tmp}/hf0/model.safetensors")
    check(meta == {"format": "pt"} and sorted(tensors) == sorted(hf) and
          all(a.dtype == np.float32 and a.shape == hf[k].shape and a.tobytes() == hf[k].tobytes() for k, a in tensors.items()),
          "the export's model.safetensors: format pt, the imported file's tensors byte for byte (names, Conv1D shapes, F32)")
    compare("export read back by the reference", f"{tmp}/hf0.ckpt", out, tokens, tokens_path)
    r = run("convert", "--from-hf", out, "--out", f"{tmp}/back.ckpt")
    check(r.returncode == 0 and open(f"{tmp}/back.ckpt", "rb").read() == open(f"{tmp}/hf0.ckpt", "rb").read(),
          "the export re-imports to the same checkpoint, byte for byte (weights and tokenizer)")

    # a model bin/train made, with a tokenizer bin/prepare learnt
    with open(f"{tmp}/train.txt", "w") as f:
        f.write(TEXT * 20)
    r = run("prepare", "--input", f"{tmp}/train.txt", "--out", f"{tmp}/bpe", "--tokenizer", "bpe", "--vocab-size", "300",
            "--special", EOT)
    r2 = run("train", "--data", f"{tmp}/bpe", "--out", f"{tmp}/trained.ckpt", "--n-layer", "2", "--n-head", "2",
             "--n-embd", "32", "--block-size", "16", "--batch-size", "4", "--max-iters", "30", "--lr", "1e-2",
             "--dropout", "0.1", "--eval-iters", "1")
    if not check(r.returncode == 0 and r2.returncode == 0, "prepare and train a small BPE model"):
        return
    out = f"{tmp}/export1"
    r = run("convert", "--to-hf", f"{tmp}/trained.ckpt", "--out", out)
    if not check(r.returncode == 0, "export a trained model" + (f": {r.stderr.strip()}" if r.returncode else "")):
        return
    with open(f"{out}/config.json") as f:
        cfg = json.load(f)
    check(abs(cfg["resid_pdrop"] - 0.1) < 1e-6 and cfg["n_positions"] == 16, "its dropout and block size in config.json")
    g = np.random.default_rng(7)
    toks = g.integers(0, cfg["vocab_size"], size=3 * 16 + 1).tolist()
    write_tokens(f"{tmp}/trained-tokens.bin", toks, cfg["vocab_size"])
    compare("trained model's export read back by the reference", f"{tmp}/trained.ckpt", out, toks,
            f"{tmp}/trained-tokens.bin")
    r = run("convert", "--from-hf", out, "--out", f"{tmp}/trained-back.ckpt")
    if check(r.returncode == 0, "re-import the trained model's export" + (f": {r.stderr.strip()}" if r.returncode else "")):
        a, ma = read_safetensors(f"{tmp}/trained.ckpt")
        b, mb = read_safetensors(f"{tmp}/trained-back.ckpt")
        same = all(np.array_equal(a[k], b[k]) for k in b) and set(b) == {k for k in a if not k.startswith("optim.")}
        check(same and ma["tokenizer"] == mb["tokenizer"],
              "its weights back bit for bit, and the tokenizer bin/prepare learnt (same hash)")


def export_refusals(tmp):
    with open(f"{tmp}/train.txt", "w") as f:
        f.write(TEXT * 20)
    run("prepare", "--input", f"{tmp}/train.txt", "--out", f"{tmp}/bpe", "--tokenizer", "bpe", "--vocab-size", "300")
    run("prepare", "--input", f"{tmp}/train.txt", "--out", f"{tmp}/chars")
    small = ["--n-layer", "2", "--n-head", "2", "--n-embd", "16", "--block-size", "8", "--batch-size", "2",
             "--max-iters", "1", "--eval-iters", "1"]
    for name, data, extra, pattern in [
        ("Grassmann layers", "bpe", ["--mixer", "attention,grassmann", "--grassmann-rank", "4",
                                     "--grassmann-windows", "1,2"], "grassmann"),
        ("rope", "bpe", ["--pos", "rope"], "rope"),
        ("sinusoidal positions", "bpe", ["--pos", "sinusoidal"], "sinusoidal"),
        ("post-norm", "bpe", ["--norm", "post"], "post-norm"),
        ("RMSNorm", "bpe", ["--norm-type", "rmsnorm"], "rmsnorm"),
        ("ReLU^2", "bpe", ["--mlp-act", "relu2"], "relu2"),
        ("qk-norm", "bpe", ["--qk-norm", "1"], "qk-norm"),
        ("an untied head", "bpe", ["--untied-head", "1"], "untied"),
        ("a logit soft cap", "bpe", ["--logit-softcap", "30"], "soft-capped"),
        ("the modern recipe", "bpe", ["--recipe", "modern"], "rope"),
        ("a char tokenizer", "chars", [], "char"),
    ]:
        ckpt = f"{tmp}/{name.replace(' ', '-')}.ckpt"
        r = run("train", "--data", f"{tmp}/{data}", "--out", ckpt, *small, *extra)
        if check(r.returncode == 0, f"train a model with {name}"):
            expect_refusal(f"export of {name}", pattern, ["convert", "--to-hf", ckpt, "--out", f"{tmp}/x"], f"{tmp}/x")
            check(not os.path.exists(f"{tmp}/x") and not any(n.startswith("x.tmp") for n in os.listdir(tmp)),
                  f"no directory left after refusing {name}")
    os.makedirs(f"{tmp}/full")
    with open(f"{tmp}/full/keep.txt", "w") as f:
        f.write("mine")
    expect_refusal("export into a non-empty directory", "not empty",
                   ["convert", "--to-hf", f"{tmp}/hf0.ckpt", "--out", f"{tmp}/full"], f"{tmp}/full/keep.txt")
    check(os.listdir(f"{tmp}/full") == ["keep.txt"], "the non-empty directory untouched")
    os.makedirs(f"{tmp}/empty")
    r = run("convert", "--to-hf", f"{tmp}/hf0.ckpt", "--out", f"{tmp}/empty/")
    check(r.returncode == 0 and "config.json" in os.listdir(f"{tmp}/empty"), "export into an empty directory")
    expect_refusal("export of a file that is not a checkpoint", "not a safetensors",
                   ["convert", "--to-hf", f"{tmp}/train.txt", "--out", f"{tmp}/y"], f"{tmp}/y")


def hostile(tmp):
    """Each broken directory: exit 2, one line, a good checkpoint at --out unchanged (and none made where there was none)."""
    V, W = write_hf(f"{tmp}/good")
    good_ckpt = f"{tmp}/good.ckpt"
    if not check(run("convert", "--from-hf", f"{tmp}/good", "--out", good_ckpt).returncode == 0, "convert the good directory"):
        return
    C = N_EMBD

    count = [0]

    def variant(name, pattern, **kw):
        count[0] += 1
        d = f"{tmp}/bad-{count[0]}"
        shutil.copytree(f"{tmp}/good", d)
        edit = kw.pop("edit", None)
        if kw:
            for f in os.listdir(d):
                if f.endswith(".safetensors") or f.endswith(".index.json"):
                    os.remove(f"{d}/{f}")
            write_hf(d, **kw)
        if edit:
            edit(d)
        expect_refusal(name, pattern, ["convert", "--from-hf", d, "--out", good_ckpt], good_ckpt)
        expect_refusal(name + " (no output made)", pattern, ["convert", "--from-hf", d, "--out", f"{tmp}/none.ckpt"],
                       f"{tmp}/none.ckpt")

    def without(k):
        return {n: a for n, a in W.items() if n != k}

    def config(**changes):
        def edit(d):
            with open(f"{d}/config.json", "w") as f:
                json.dump(gpt2_config(V, **changes), f)
        return edit

    def write_file(name, data):
        def edit(d):
            with open(f"{d}/{name}", "wb") as f:
                f.write(data)
        return edit

    def truncate(d):
        with open(f"{d}/model.safetensors", "r+b") as f:
            f.truncate(os.path.getsize(f"{d}/model.safetensors") - 100)

    def rewrite(change):
        """An edit: model.safetensors as the good one's (F32, "transformer." names) after change(tensors)."""
        def edit(d):
            tensors = hf_tensors(W)
            change(tensors)
            write_st(f"{d}/model.safetensors", tensors, {"format": "pt"})
        return edit

    nan_bias = W["h.1.mlp.c_fc.bias"].copy()
    nan_bias[3] = np.nan
    head = W["wte.weight"].copy()
    head[5, 7] += 1e-3

    def index(edit_map):
        def edit(d):
            with open(f"{d}/model.safetensors.index.json") as f:
                doc = json.load(f)
            edit_map(doc["weight_map"])
            with open(f"{d}/model.safetensors.index.json", "w") as f:
                json.dump(doc, f)
        return edit

    def raw_header(change, tail=b""):
        """An edit: model.safetensors's header changed by change(header) (its length kept in step), tail appended."""
        def edit(d):
            with open(f"{d}/model.safetensors", "rb") as f:
                raw = f.read()
            (n,) = struct.unpack("<Q", raw[:8])
            header = json.loads(raw[8:8 + n])
            change(header)
            text = json.dumps(header).encode()
            text += b" " * (-(len(text) + 8) % 8)
            with open(f"{d}/model.safetensors", "wb") as f:
                f.write(struct.pack("<Q", len(text)) + text + raw[8 + n:] + tail)
        return edit

    def overlap(header):
        header["transformer.h.0.ln_1.bias"]["data_offsets"] = list(header["transformer.h.0.ln_1.weight"]["data_offsets"])

    def no_safetensors(d):
        os.remove(f"{d}/model.safetensors")
        open(f"{d}/pytorch_model.bin", "wb").close()

    transposed = dict(W)
    transposed["h.0.attn.c_attn.weight"] = np.ascontiguousarray(W["h.0.attn.c_attn.weight"].T)
    variant("a missing tensor", "no tensor 'h.1.mlp.c_fc.bias'", weights=without("h.1.mlp.c_fc.bias"))
    variant("an extra tensor", "does not have",
            edit=rewrite(lambda t: t.update({"transformer.h.0.attn.extra.weight": entry(np.ones(C, np.float32))})))
    variant("a tensor under both names", "twice", edit=rewrite(lambda t: t.update({"wte.weight": entry(W["wte.weight"])})))
    variant("a misshaped tensor (c_attn not in Conv1D layout)", "has shape [192, 64]", weights=transposed)
    variant("a wrongly typed tensor (F64)", "only F32, F16 and BF16",
            edit=rewrite(lambda t: t.update({"transformer.h.0.ln_1.weight": entry(W["h.0.ln_1.weight"], "F64")})))
    variant("a wrongly typed tensor (I64)", "only F32, F16 and BF16",
            edit=rewrite(lambda t: t.update({"transformer.wpe.weight": entry(W["wpe.weight"], "I64")})))
    variant("lm_head unequal to wte", "lm_head.weight differs", edit=rewrite(lambda t: t.update({"lm_head.weight": entry(head)})))
    variant("untied without lm_head", "tie_word_embeddings", edit=config(tie_word_embeddings=False))
    variant("config n_embd disagrees with the tensors", "has shape", edit=config(n_embd=32, n_head=4))
    variant("config n_layer above the tensors'", "no tensor 'h.2.", edit=config(n_layer=3))
    variant("config n_layer below the tensors'", "does not have", edit=config(n_layer=1))
    variant("config n_positions disagrees", "wpe.weight", edit=config(n_positions=64))
    variant("config vocab_size disagrees with the tokenizer", f"vocab_size {V + 1} differs from the tokenizer's {V} tokens",
            edit=config(vocab_size=V + 1))
    variant("another model_type", "model_type 'llama'", edit=config(model_type="llama"))
    variant("another activation", "activation_function relu", edit=config(activation_function="relu"))
    variant("another LayerNorm eps", "layer_norm_epsilon", edit=config(layer_norm_epsilon=1e-6))
    variant("scale_attn_by_inverse_layer_idx", "scale_attn_by_inverse_layer_idx", edit=config(scale_attn_by_inverse_layer_idx=True))
    variant("unscaled attention", "scale_attn_weights", edit=config(scale_attn_weights=False))
    variant("another n_inner", "n_inner", edit=config(n_inner=100))
    variant("cross-attention", "add_cross_attention", edit=config(add_cross_attention=True))
    variant("n_head not dividing n_embd", "n_head", edit=config(n_head=5))
    variant("n_layer a string", "n_layer", edit=config(n_layer="2"))
    variant("corrupt config.json", "not valid JSON", edit=write_file("config.json", b'{"model_type": "gpt2", "n_layer": 2,'))
    variant("config.json an array", "not a JSON object", edit=write_file("config.json", b"[1, 2]"))
    variant("a truncated model.safetensors", "truncated", edit=truncate)
    variant("model.safetensors not safetensors", "not a safetensors", edit=write_file("model.safetensors", b"hello"))
    variant("two tensors on the same bytes", "overlap", edit=raw_header(overlap))
    variant("bytes after the last tensor", "4096 bytes after its last tensor", edit=raw_header(lambda h: None, b"\0" * 4096))
    variant("__metadata__ an array", "__metadata__", edit=raw_header(lambda h: h.update({"__metadata__": ["pt"]})))
    variant("__metadata__ with a number", "not a string", edit=raw_header(lambda h: h.update({"__metadata__": {"format": 1}})))
    variant("a NaN weight", "NaN", edit=rewrite(lambda t: t.update({"transformer.h.1.mlp.c_fc.bias": entry(nan_bias)})))
    variant("only pytorch_model.bin", "pytorch_model.bin", edit=no_safetensors)
    variant("no tokenizer", "tokenizer", edit=lambda d: [os.remove(f"{d}/{f}") for f in ("vocab.json", "merges.txt")])
    variant("an index naming a missing shard", "cannot open", shards=2,
            edit=index(lambda m: m.update({"transformer.wte.weight": "model-00009-of-00009.safetensors"})))
    variant("an index placing a tensor in the wrong shard", "index.json", shards=2,
            edit=index(lambda m: m.update({"transformer.wte.weight": "model-00002-of-00002.safetensors"
                                          if m["transformer.wte.weight"].startswith("model-00001") else
                                          "model-00001-of-00002.safetensors"})))
    variant("an index with a path outside the directory", "not a file name", shards=2,
            edit=index(lambda m: m.update({"transformer.wte.weight": "../model.safetensors"})))
    variant("an index listing a tensor no shard holds", "lists", shards=2,
            edit=index(lambda m: m.update({"transformer.h.0.attn.bias": "model-00001-of-00002.safetensors"})))
    expect_refusal("a directory that does not exist", "not a directory",
                   ["convert", "--from-hf", f"{tmp}/nowhere", "--out", good_ckpt], good_ckpt)
    expect_refusal("both directions at once", "one of",
                   ["convert", "--from-hf", f"{tmp}/good", "--to-hf", good_ckpt, "--out", good_ckpt], good_ckpt)
    expect_refusal("no --out", "--out", ["convert", "--from-hf", f"{tmp}/good"], good_ckpt)
    check(not os.path.exists(f"{tmp}/none.ckpt") and not [n for n in os.listdir(tmp) if ".tmp" in n],
          "nothing written by any refused conversion (no checkpoint, no temporary file)")


USAGE = """usage: /usr/bin/python3 -m tests.parity.gpt2_convert
       /usr/bin/python3 -m tests.parity.gpt2_convert --write-random DIR L,H,C,P,V DTYPE
       /usr/bin/python3 -m tests.parity.gpt2_convert --write-fuzz-seeds DIR
Without arguments: checks bin/convert against GPT-2 as Hugging Face defines it
(random GPT-2-shaped models; run from the project root after make).
--write-random writes only config.json and model.safetensors of a random GPT-2
of L layers, H heads, width C, P positions and a vocabulary of V, in DTYPE
(F32, F16 or BF16), without a tokenizer (docs/gpt2.md's measurements at 124M).
--write-fuzz-seeds writes only tiny random GPT-2 directories, the fuzzers'
seeds (tests/fuzz/make_seeds.sh)."""


def main():
    args = sys.argv[1:]
    if args[:1] in (["--help"], ["-h"]):
        print(USAGE)
        return
    forms = {"--write-random": 4, "--write-fuzz-seeds": 2}
    if args and (args[0] not in forms or len(args) != forms[args[0]] or
                 (args[0] == "--write-random" and (not re.fullmatch(r"\d+(,\d+){4}", args[2]) or
                                                   args[3] not in ("F32", "F16", "BF16")))):
        print(f"gpt2_convert: error: unexpected arguments '{' '.join(args)}' (see --help)", file=sys.stderr)
        sys.exit(2)
    if len(sys.argv) == 5 and sys.argv[1] == "--write-random":  # docs/gpt2.md's measurements at GPT-2's sizes
        L, H, C, P, V = map(int, sys.argv[3].split(","))
        sizes, d = {"n_layer": L, "n_head": H, "n_embd": C, "n_positions": P}, sys.argv[2]
        os.makedirs(d, exist_ok=True)
        with open(f"{d}/config.json", "w") as f:
            json.dump(gpt2_config(V, sizes, bos_token_id=V - 1, eos_token_id=V - 1), f, indent=2)
        W = random_gpt2(V, 1, sizes)
        write_st(f"{d}/model.safetensors", {"transformer." + k: (sys.argv[4], a.shape, encode(a, sys.argv[4]))
                                            for k, a in W.items()}, {"format": "pt"})
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--write-fuzz-seeds":  # tests/fuzz/make_seeds.sh
        for name, kw in (("f32", dict(dtype="F32")), ("f16-head-masks", dict(dtype="F16", lm_head=True, buffers=True)),
                         ("bf16-bare", dict(dtype="BF16", prefix=False))):
            write_hf(f"{sys.argv[2]}/{name}", sizes=TINY, n_merges=0, eot=False, tokenizer="json", **kw)
        return
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        V = len(small_bpe()[0])
        g = np.random.default_rng(5)
        tokens = g.integers(0, V, size=3 * N_POSITIONS + 1).tolist()
        tokens_path = f"{tmp}/tokens.bin"
        write_tokens(tokens_path, tokens, V)
        imports(tmp, tokens, tokens_path)
        programs_on_import(tmp)
        exports(tmp, tokens, tokens_path)
        export_refusals(tmp)
        hostile(tmp)
    print(f"gpt2_convert: {len(failures)} failed" if failures else "gpt2_convert: all passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
