#!/usr/bin/env python3
"""One PyTorch training run for harness/bench.py: the reference model of
harness/torch_ref.py, AdamW, gradient clipping, random batches of the prepared
data. Prints one JSON object: "ms" (per-step milliseconds: zero_grad, forward,
backward, clip, AdamW step; the batch is cut before the clock starts), "blas"
(the OpenBLAS library and kernel PyTorch's matrix products ran on, read from
the loaded library), "threads" (torch.get_num_threads()) and "base_rss_mib"
(the process's peak RSS after importing torch and reading the data, before
the model exists: the interpreter's and libraries' share of the peak).
PRECISION bf16 runs the forward under torch.autocast("cpu", dtype=torch.bfloat16)
(PyTorch's bf16 mixed precision); fp32 (the default) without it.
Usage: /usr/bin/python3 -m harness.bench_torch CONFIG_JSON DATA_DIR BATCH STEPS THREADS [PRECISION]"""
import contextlib
import json
import os
import resource
import sys
import time

import torch

from harness.bench.shared import loaded_openblas
from harness.torch_ref import init_weights, model_loss, read_tokens


def main(cfg_json, data, batch, steps, threads, precision="fp32"):
    torch.set_num_threads(int(threads))
    cfg = json.loads(cfg_json)
    tokens, _ = read_tokens(os.path.join(data, "train.bin"))
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
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
        with torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext():
            loss = model_loss(W, cfg, x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(W.values(), 1.0)
        opt.step()
        times.append(1e3 * (time.perf_counter() - t0))
    print(json.dumps({"ms": times, "blas": loaded_openblas(), "threads": torch.get_num_threads(),
                      "base_rss_mib": base_rss}))


if __name__ == "__main__":
    if len(sys.argv) not in (6, 7) or sys.argv[6:] not in ([], ["fp32"], ["bf16"]):
        sys.exit(__doc__.rstrip().rsplit("\n", 1)[-1])
    main(*sys.argv[1:])
