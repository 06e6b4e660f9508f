#!/usr/bin/env python3
"""Trains the PyTorch reference model (harness/torch_ref.py) exactly as bin/train
would -- AdamW (decay on matrices only), or with --optimizer muon Muon
(harness/torch_muon.py) on the hidden layers' matrices and AdamW on the rest,
its rate on the same schedule; linear warm-up + cosine to min-lr,
global-norm clipping, random windows of train.bin -- then scores every token
of val.bin once in block_size windows, as bin/eval does. For checking that the
C trainer reaches the loss a PyTorch implementation of the same model reaches.
--mixer: a registered mixer with a PyTorch reference (harness/mixers/; by
default the registry's first), at its options' defaults.

usage: /usr/bin/python3 -m harness.torch_train --data DIR [--mixer M] [--n-layer 4 --n-head 4
       --n-embd 128 --block-size 64 --batch-size 12 --max-iters 2000 --lr 1e-3 --min-lr 1e-4
       --warmup-iters 100 --seed 1337 --threads 2 --optimizer adamw|muon --muon-lr 0.02 --muon-momentum 0.95]"""
import argparse
import math
import os
import time

import torch

from harness import registry
from harness.torch_muon import Muon, muon_takes
from harness.torch_ref import init_weights, model_loss, read_tokens


def lr_at(step, a):
    if step < a.warmup_iters:
        return a.lr * (step + 1) / a.warmup_iters
    ratio = (step - a.warmup_iters) / max(1, a.max_iters - a.warmup_iters)
    return a.min_lr + 0.5 * (1 + math.cos(math.pi * ratio)) * (a.lr - a.min_lr)


@torch.no_grad()
def evaluate(W, cfg, toks, B=16):
    T, n = cfg["block_size"], len(toks)
    ends = list(range(T, n - 1, T)) + [n - 1]
    total, scored, prev = 0.0, 0, 0
    wins = []
    for e in ends:
        s = e - T
        wins.append((s, prev - s))
        prev = e
    for i in range(0, len(wins), B):
        chunk = wins[i:i + B]
        x = torch.stack([toks[s:s + T] for s, _ in chunk])
        y = torch.stack([toks[s + 1:s + T + 1] for s, _ in chunk])
        losses = model_loss(W, cfg, x, y, reduction="none")
        for b, (_, first) in enumerate(chunk):
            total += losses[b, first:].sum().item()
            scored += T - first
    return total / scored, scored


def main():
    ap = argparse.ArgumentParser(prog="/usr/bin/python3 -m harness.torch_train")
    ap.add_argument("--data", required=True)
    ap.add_argument("--mixer", default=None, help="a registered mixer (default: the registry's first)")
    for name, val in [("n-layer", 4), ("n-head", 4), ("n-embd", 128), ("block-size", 64), ("batch-size", 12),
                      ("max-iters", 2000), ("warmup-iters", 100), ("seed", 1337), ("threads", 2)]:
        ap.add_argument("--" + name, type=int, default=val)
    for name, val in [("lr", 1e-3), ("min-lr", 1e-4), ("weight-decay", 0.1), ("muon-lr", 0.02),
                      ("muon-momentum", 0.95), ("muon-weight-decay", 0.0)]:
        ap.add_argument("--" + name, type=float, default=val)
    ap.add_argument("--optimizer", choices=("adamw", "muon"), default="adamw")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    train, vocab = read_tokens(os.path.join(a.data, "train.bin"))
    val, _ = read_tokens(os.path.join(a.data, "val.bin"))
    # The model bin/train builds from the same options, every mixer's settings at their defaults.
    described = registry.describe(["--vocab-size", vocab, "--block-size", a.block_size, "--n-layer", a.n_layer,
                                   "--n-head", a.n_head, "--n-embd", a.n_embd, "--mixer", a.mixer or registry.names()[0]],
                                  what="--mixer")
    cfg = {k: v for k, v in described["model"].items() if k != "params"}
    W = init_weights(cfg, seed=a.seed)
    # The residual-writing projections start smaller, as in the C init: each mixer's that the registry
    # marks so, and the MLP's.
    residual = {f"h.{l}.{t['name']}" for l, layer in enumerate(described["layers"]) for t in layer["tensors"]
                if t["init"] == "residual"}
    with torch.no_grad():
        for k, w in W.items():
            if k in residual or k.endswith("mlp.proj.weight"):
                w.mul_(1 / math.sqrt(2 * a.n_layer))
    hidden = [w for k, w in W.items() if a.optimizer == "muon" and muon_takes(k, w.shape)]
    decay = [w for k, w in W.items() if w.dim() == 2 and not any(w is h for h in hidden)]
    no_decay = [w for w in W.values() if w.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.99), eps=1e-8)
    muon = Muon(hidden, lr=a.muon_lr, momentum=a.muon_momentum, weight_decay=a.muon_weight_decay) if hidden else None
    g = torch.Generator().manual_seed(a.seed)
    B, T = a.batch_size, a.block_size
    t0 = time.time()
    for step in range(a.max_iters):
        idx = torch.randint(0, len(train) - T - 1, (B,), generator=g)
        x = torch.stack([train[i:i + T] for i in idx])
        y = torch.stack([train[i + 1:i + T + 1] for i in idx])
        for group in opt.param_groups:
            group["lr"] = lr_at(step, a)
        if muon:
            muon.param_groups[0]["lr"] = a.muon_lr * lr_at(step, a) / a.lr
        opt.zero_grad(set_to_none=True)
        if muon:
            muon.zero_grad(set_to_none=True)
        loss = model_loss(W, cfg, x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(W.values(), 1.0)
        opt.step()
        if muon:
            muon.step()
        if (step + 1) % 200 == 0:
            print(f"torch step {step + 1}/{a.max_iters} loss {loss.item():.4f} ({time.time() - t0:.0f}s)", flush=True)
    vl, scored = evaluate(W, cfg, val)
    print(f"torch val loss {vl:.4f} nats over {scored} tokens, perplexity {math.exp(vl):.4f}, "
          f"train time {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
