#!/usr/bin/env python3
"""One PyTorch training run for eval/bench.py: the reference model of
tests/torch_ref.py, AdamW, gradient clipping, random batches of the prepared
data; prints a JSON list of per-step milliseconds.
Usage: bench_torch.py CONFIG_JSON DATA_DIR BATCH STEPS THREADS"""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from torch_ref import init_weights, model_loss, read_tokens  # noqa: E402


def main(cfg_json, data, batch, steps, threads):
    torch.set_num_threads(int(threads))
    cfg = json.loads(cfg_json)
    tokens, _ = read_tokens(os.path.join(data, "train.bin"))
    B, T = int(batch), cfg["block_size"]
    W = init_weights(cfg)
    opt = torch.optim.AdamW(W.values(), lr=1e-3, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)
    g = torch.Generator().manual_seed(0)
    times = []
    for _ in range(int(steps)):
        idx = torch.randint(0, len(tokens) - T - 1, (B,), generator=g)
        x = torch.stack([tokens[i:i + T] for i in idx])
        y = torch.stack([tokens[i + 1:i + T + 1] for i in idx])
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model_loss(W, cfg, x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(W.values(), 1.0)
        opt.step()
        times.append(1e3 * (time.perf_counter() - t0))
    print(json.dumps(times))


if __name__ == "__main__":
    main(*sys.argv[1:])
