#!/usr/bin/env python3
"""A PyTorch decoding loop of the generate section's models, written the way
one would write it to be fast in PyTorch (torch.no_grad, caches allocated
once, every weight product an F.linear on one row), for make bench's
generate section to set bin/sample against.

The model is one bin/train run's (its --json "config": pre-norm LayerNorm
blocks, GELU MLP, learned or sinusoidal positions, tied head), with
harness/torch_ref.init_weights's random weights: speed does not depend on
their values. Each layer's mixer keeps its own cache: its reference's Cache
(harness/mixers/NAME.py: the keys and values, or the recurrent state, a
step reads). The prompt (PROMPT tokens) goes through one batched
forward that fills the caches; then STEPS tokens are decoded one at a time
(greedy: the largest logit), each step reading the caches and every weight
once. A layer whose reference has no Cache (or none at this config): exit
status 3 (NO_LOOP) and one line.

Prints one JSON object: "prefill_ms" (the prompt's forward), "step_ms" (each
decode step, in order), "blas" (the OpenBLAS library and kernel, as
harness/bench_torch.py reads it), "threads". Also, with --equal, the largest
difference between the loop's logits and torch_ref.model_logits's over the
same tokens (a check that the loop is the model; tests/harness/bench_test.py uses it).
Usage: /usr/bin/python3 -m harness.bench.torch_generate CONFIG_JSON PROMPT STEPS THREADS [--equal]"""
import json
import sys
import time

import torch
import torch.nn.functional as F

from harness.bench.shared import loaded_openblas
from harness.torch_ref import init_weights, layer_reference, sinusoidal

EPS = 1e-5
NO_LOOP = 3


class Decoder:
    """The caches of one sequence (each layer's mixer's) and the step that reads them."""

    def __init__(self, W, cfg):
        self.W, self.cfg = W, cfg
        self.C, self.T = cfg["n_embd"], cfg["block_size"]
        self.pos = W["wpe"] if cfg["pos"] == "learned" else sinusoidal(self.T, self.C).float()
        self.caches = []
        for l, mixer in enumerate(cfg["mixers"]):
            ref = layer_reference(mixer)
            if not hasattr(ref, "Cache"):
                raise ValueError(f"no PyTorch decoding loop for mixer '{mixer}' (harness/mixers/{mixer}.py has no Cache)")
            self.caches.append(ref.Cache(W, f"h.{l}.", cfg, l))

    def ln(self, name, x):
        return F.layer_norm(x, (self.C,), self.W[name + ".weight"], self.W[name + ".bias"], EPS)

    def run(self, tokens, t0):
        """The logits (n, V) of tokens at positions t0 .. t0 + n - 1, the caches filled as it goes."""
        W = self.W
        x = W["wte"][tokens] + self.pos[t0:t0 + len(tokens)]
        for l, cache in enumerate(self.caches):
            p = f"h.{l}."
            x = x + cache.step(self.ln(p + "ln1", x), t0)
            h = F.gelu(F.linear(self.ln(p + "ln2", x), W[p + "mlp.fc.weight"], W[p + "mlp.fc.bias"]), approximate="tanh")
            x = x + F.linear(h, W[p + "mlp.proj.weight"], W[p + "mlp.proj.bias"])
        return F.linear(self.ln("ln_f", x), W["wte"])


def decode(W, cfg, prompt, steps):
    """Prefill the prompt, then `steps` greedy steps: (prefill ms, step ms list, every position's logits)."""
    dec = Decoder(W, cfg)
    with torch.no_grad():
        t0 = time.perf_counter()
        logits = dec.run(prompt, 0)
        prefill_ms = 1e3 * (time.perf_counter() - t0)
        out, times, tok = [logits], [], int(logits[-1].argmax())
        for i in range(steps):
            t0 = time.perf_counter()
            row = dec.run(torch.tensor([tok]), len(prompt) + i)
            tok = int(row[0].argmax())
            times.append(1e3 * (time.perf_counter() - t0))
            out.append(row)
    return prefill_ms, times, torch.cat(out)


def main(cfg_json, prompt_len, steps, threads, equal=None):
    torch.set_num_threads(int(threads))
    cfg = json.loads(cfg_json)
    W = init_weights(cfg)
    try:
        Decoder(W, cfg)
    except ValueError as e:
        print(e, file=sys.stderr)
        sys.exit(NO_LOOP)
    g = torch.Generator().manual_seed(0)
    prompt = torch.randint(cfg["vocab_size"], (int(prompt_len),), generator=g)
    prefill_ms, times, logits = decode(W, cfg, prompt, int(steps))
    res = {"prefill_ms": prefill_ms, "step_ms": times, "blas": loaded_openblas(), "threads": torch.get_num_threads()}
    if equal == "--equal":
        from harness.torch_ref import model_logits
        tokens = torch.cat([prompt, logits[len(prompt) - 1:-1].argmax(1)])
        with torch.no_grad():
            ref = model_logits(W, cfg, tokens[None])[0]
        res["max_gap"] = float((logits - ref).abs().max())
    print(json.dumps(res))


if __name__ == "__main__":
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__.rstrip().rsplit("\n", 1)[-1])
    main(*sys.argv[1:])
