#!/usr/bin/env python3
"""PyTorch parity: the C model's loss and every gradient against autograd.

For each architecture, bin/train --dump-grads writes the weights, the first
batch, the loss and all gradients (safetensors). This script rebuilds the same
model in PyTorch (float64, from those float32 weights), runs autograd on the
same batch and requires a relative error below 1e-4 for the loss and for each
gradient tensor: |c - torch| / |torch| over the whole tensor.

Run from the project root after `make`: /usr/bin/python3 tests/parity.py
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

TOL = 1e-4
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen])
    meta = header.pop("__metadata__", {})
    data = raw[8 + hlen:]
    tensors = {}
    for name, info in header.items():
        a, b = info["data_offsets"]
        dtype = {"F32": np.float32, "I32": np.int32}[info["dtype"]]
        tensors[name] = np.frombuffer(data[a:b], dtype=dtype).reshape(info["shape"])
    return tensors, meta


def sinusoidal(T, C):
    pe = torch.zeros(T, C, dtype=torch.float64)
    t = torch.arange(T, dtype=torch.float64)[:, None]
    i = torch.arange(0, C, 2, dtype=torch.float64)
    angle = t / torch.pow(10000.0, i / C)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : C // 2])
    return pe


def attention(W, p, h, H):
    B, T, C = h.shape
    hs = C // H
    q, k, v = F.linear(h, W[p + "attn.qkv.weight"], W[p + "attn.qkv.bias"]).split(C, dim=2)
    q, k, v = (x.view(B, T, H, hs).transpose(1, 2) for x in (q, k, v))
    att = q @ k.transpose(-2, -1) / math.sqrt(hs)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    att = torch.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
    y = (att @ v).transpose(1, 2).reshape(B, T, C)
    return F.linear(y, W[p + "attn.proj.weight"], W[p + "attn.proj.bias"])


def grassmann(W, p, h, r, windows, eps=1e-8):
    """The causal Grassmann layer exactly as DESIGN.md states it."""
    B, T, C = h.shape
    z = F.linear(h, W[p + "grassmann.red.weight"], W[p + "grassmann.red.bias"])
    iu = torch.triu_indices(r, r, 1)  # (0,1), (0,2), ..., (1,2), ...: row-major i < j
    P = iu.shape[1]
    qsum = torch.zeros(B, T, P, dtype=h.dtype)
    count = torch.zeros(T, dtype=h.dtype)
    for d in windows:
        if d >= T:
            continue
        zc, zp = z[:, d:, :], z[:, :-d, :]
        outer = zc.unsqueeze(-1) * zp.unsqueeze(-2)  # [i, j] = zc_i zp_j
        pl = (outer - outer.transpose(-1, -2))[..., iu[0], iu[1]]
        q = pl / pl.norm(dim=-1, keepdim=True).clamp(min=eps)
        qsum = qsum + F.pad(q, (0, 0, d, 0))
        count[d:] += 1
    mean = qsum / count.clamp(min=1)[None, :, None]
    g = F.linear(mean, W[p + "grassmann.plu.weight"], W[p + "grassmann.plu.bias"])
    g = g * (count > 0).to(h.dtype)[None, :, None]
    a = torch.sigmoid(F.linear(torch.cat([h, g], dim=-1), W[p + "grassmann.gate.weight"], W[p + "grassmann.gate.bias"]))
    m = a * h + (1 - a) * g
    return F.layer_norm(m, (C,), W[p + "grassmann.ln.weight"], W[p + "grassmann.ln.bias"], 1e-5)


def model_loss(W, cfg, inputs, targets):
    C, V = cfg["n_embd"], cfg["vocab_size"]
    B, T = inputs.shape
    x = W["wte"][inputs]
    x = x + (W["wpe"][:T] if cfg["pos"] == "learned" else sinusoidal(T, C))
    for l, mixer in enumerate(cfg["mixers"]):
        p = f"h.{l}."
        h = F.layer_norm(x, (C,), W[p + "ln1.weight"], W[p + "ln1.bias"], 1e-5)
        if mixer == "attention":
            x = x + attention(W, p, h, cfg["n_head"])
        else:
            x = x + grassmann(W, p, h, cfg["grassmann_rank"], cfg["grassmann_windows"])
        h = F.layer_norm(x, (C,), W[p + "ln2.weight"], W[p + "ln2.bias"], 1e-5)
        h = F.gelu(F.linear(h, W[p + "mlp.fc.weight"], W[p + "mlp.fc.bias"]), approximate="tanh")
        x = x + F.linear(h, W[p + "mlp.proj.weight"], W[p + "mlp.proj.bias"])
    x = F.layer_norm(x, (C,), W["ln_f.weight"], W["ln_f.bias"], 1e-5)
    logits = x @ W["wte"].T
    return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))


def check(name, dump):
    tensors, meta = read_safetensors(dump)
    cfg = json.loads(meta["config"])
    W = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True)
         for k, v in tensors.items() if not k.startswith("grad.") and k not in ("inputs", "targets")}
    inputs = torch.tensor(tensors["inputs"], dtype=torch.long)
    targets = torch.tensor(tensors["targets"], dtype=torch.long)
    loss = model_loss(W, cfg, inputs, targets)
    loss.backward()
    c_loss = float(meta["loss"])
    worst = abs(c_loss - loss.item()) / abs(loss.item())
    failures = []
    if worst >= TOL:
        failures.append(f"loss {c_loss} vs {loss.item()}")
    for k, w in W.items():
        ours = torch.tensor(tensors["grad." + k], dtype=torch.float64)
        ref = w.grad
        rel = (ours - ref).norm().item() / max(ref.norm().item(), 1e-30)
        worst = max(worst, rel)
        if not rel < TOL:
            failures.append(f"{k}: relative error {rel:.2e}")
    status = "ok" if not failures else "FAILED"
    print(f"parity {name:<34} loss {c_loss:.6f} torch {loss.item():.6f}  "
          f"{len(W)} gradients, worst relative error {worst:.2e}  {status}")
    for f in failures:
        print("   ", f)
    return not failures


def main():
    torch.manual_seed(0)
    text = ("It is not down in any map; true places never are. " * 3 +
            "Call me Ishmael. Some years ago, never mind how long precisely, "
            "having little or no money in my purse, I thought I would sail about.\n") * 8
    configs = [
        ("attention, learned positions", ["--mixer", "attention"]),
        ("attention, sinusoidal positions", ["--mixer", "attention", "--pos", "sinusoidal"]),
        ("grassmann", ["--mixer", "grassmann", "--grassmann-rank", "6", "--grassmann-windows", "1,2,4,8"]),
        ("hybrid grassmann,attention,grassmann", ["--mixer", "grassmann,attention,grassmann", "--n-layer", "3",
                                                  "--grassmann-rank", "5", "--grassmann-windows", "1,3,5"]),
    ]
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "text.txt"), "w") as f:
            f.write(text)
        subprocess.run([os.path.join(ROOT, "bin/prepare"), "--input", os.path.join(tmp, "text.txt"),
                        "--out", os.path.join(tmp, "data"), "--val-fraction", "0.2", "--test-fraction", "0"],
                       check=True, stdout=subprocess.DEVNULL)
        for i, (name, extra) in enumerate(configs):
            dump = os.path.join(tmp, f"dump{i}.safetensors")
            base = ["--n-layer", "2", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "3"]
            args = [os.path.join(ROOT, "bin/train"), "--data", os.path.join(tmp, "data"), "--dump-grads", dump,
                    "--seed", str(7 + i)] + base + extra
            subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
            if check(name, dump):
                passed += 1
            else:
                failed += 1
    print(f"parity: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
