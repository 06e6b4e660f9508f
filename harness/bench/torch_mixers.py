#!/usr/bin/env python3
"""The PyTorch side of make bench's mixers section: the mixer layers of one
bin/train run's model (its --json "config") in the chunked forms their
references offer (harness/mixers/NAME.py's chunked(cfg, layer): the way one
would write the layer to be fast in PyTorch, equal to the reference's
forward; tests/harness/bench_test.py checks them, forward and gradients, in
float64), timed forward and backward, every layer on its own input of
BATCH x block tokens with torch.set_num_threads(THREADS), with the weights of
harness/torch_ref.init_weights. Prints one JSON object: "ms" (per step: the
n_layer mixers' forward and backward, gradients of the inputs and of the
weights), "blas" (the OpenBLAS library and kernel, as harness/bench_torch.py
reads it), "threads", "impl" (which form ran). Exits with status 3 (NO_FORM)
and one line where a layer's mixer has no chunked form at this config.
Usage: /usr/bin/python3 -m harness.bench.torch_mixers CONFIG_JSON BATCH STEPS THREADS"""
import json
import sys
import time

import torch

from harness.bench.shared import loaded_openblas
from harness.torch_ref import init_weights, layer_reference

NO_FORM = 3


def mixer_layer(cfg, l):
    """(layer l's mixer as a function of (W, h), what form it runs) for a bin/train config; ValueError
    where its reference has no chunked form at this config."""
    mixer = cfg["mixers"][l]
    ref = layer_reference(mixer)
    form = ref.chunked(cfg, l) if hasattr(ref, "chunked") else None
    if form is None:
        raise ValueError(f"mixer '{mixer}' has no chunked PyTorch form at this config (harness/mixers/{mixer}.py)")
    f, about = form
    p = f"h.{l}."
    return (lambda W, h: f(W, p, h, cfg, l)), f"{mixer}: {about}"


def main(cfg_json, batch, steps, threads):
    torch.set_num_threads(int(threads))
    cfg = json.loads(cfg_json)
    B, T, C = int(batch), cfg["block_size"], cfg["n_embd"]
    try:
        layers = [mixer_layer(cfg, l) for l in range(len(cfg["mixers"]))]
    except ValueError as e:
        print(e, file=sys.stderr)
        sys.exit(NO_FORM)
    W = init_weights(cfg)
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(B, T, C, generator=g).requires_grad_(True) for _ in layers]
    dys = [torch.randn(B, T, C, generator=g) for _ in layers]
    times = []
    for _ in range(int(steps)):
        for w in list(W.values()) + xs:
            w.grad = None
        t0 = time.perf_counter()
        for (f, _), x, dy in zip(layers, xs, dys):
            f(W, x).backward(dy)
        times.append(1e3 * (time.perf_counter() - t0))
    print(json.dumps({"ms": times, "blas": loaded_openblas(), "threads": torch.get_num_threads(),
                      "impl": "; ".join(sorted({impl for _, impl in layers}))}))


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__.rstrip().rsplit("\n", 1)[-1])
    main(*sys.argv[1:])
