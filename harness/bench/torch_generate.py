#!/usr/bin/env python3
"""A PyTorch KV-cache decoding loop of the generate section's models, written
the way one would write it to be fast in PyTorch (torch.no_grad, caches
allocated once, every weight product an F.linear on one row), for make bench's
generate section to set bin/sample against.

The model is one bin/train run's (its --json "config": pre-norm LayerNorm
blocks, GELU MLP, learned or sinusoidal positions, tied head; attention
without a window, or the Grassmann layer with the wedge map), with
harness/torch_ref.init_weights's random weights: speed does not depend on
their values. The prompt (PROMPT tokens) goes through one batched forward that
fills the caches: each attention layer's keys and values, each Grassmann
layer's reduced vectors; then STEPS tokens are decoded one at a time (greedy:
the largest logit), each step reading the caches and every weight once.

Prints one JSON object: "prefill_ms" (the prompt's forward), "step_ms" (each
decode step, in order), "blas" (the OpenBLAS library and kernel, as
harness/bench_torch.py reads it), "threads". Also, with --equal, the largest
difference between the loop's logits and torch_ref.model_logits's over the
same tokens (a check that the loop is the model; tests/bench_test.py uses it).
Usage: /usr/bin/python3 -m harness.bench.torch_generate CONFIG_JSON PROMPT STEPS THREADS [--equal]"""
import json
import sys
import time

import torch
import torch.nn.functional as F

from harness.bench_torch import loaded_openblas
from harness.torch_ref import init_weights, layer_windows, pair_map, sinusoidal

EPS = 1e-5


class Decoder:
    """The caches of one sequence and the step that reads them."""

    def __init__(self, W, cfg):
        self.W, self.cfg = W, cfg
        self.C, self.H, self.T = cfg["n_embd"], cfg["n_head"], cfg["block_size"]
        self.hs = self.C // self.H
        self.windows = layer_windows(cfg)
        self.pos = W["wpe"] if cfg["pos"] == "learned" else sinusoidal(self.T, self.C).float()
        self.kv = {}  # attention layer l: (K, V), each (H, T, hs)
        self.z = {}   # Grassmann layer l: (T, r), every position's reduced vector
        for l, mixer in enumerate(cfg["mixers"]):
            if mixer == "attention":
                self.kv[l] = (torch.zeros(self.H, self.T, self.hs), torch.zeros(self.H, self.T, self.hs))
            elif mixer == "grassmann":
                self.z[l] = torch.zeros(self.T, cfg["grassmann_rank"])
            else:
                raise ValueError(f"no PyTorch decoding loop for mixer '{mixer}'")

    def ln(self, name, x):
        return F.layer_norm(x, (self.C,), self.W[name + ".weight"], self.W[name + ".bias"], EPS)

    def attention(self, l, p, h, t0):
        """h (n, C) at positions t0 .. t0 + n - 1: its rows of the causal attention over the cache."""
        n, W = h.shape[0], self.W
        q, k, v = F.linear(h, W[p + "attn.qkv.weight"], W[p + "attn.qkv.bias"]).split(self.C, dim=1)
        K, V = self.kv[l]
        K[:, t0:t0 + n] = k.view(n, self.H, self.hs).transpose(0, 1)
        V[:, t0:t0 + n] = v.view(n, self.H, self.hs).transpose(0, 1)
        q = q.view(n, self.H, self.hs).transpose(0, 1)  # (H, n, hs)
        s = q @ K[:, :t0 + n].transpose(1, 2) / self.hs ** 0.5  # (H, n, t0 + n)
        if n > 1:
            s = s.masked_fill(torch.ones(n, t0 + n, dtype=torch.bool).triu(t0 + 1), float("-inf"))
        y = (torch.softmax(s, dim=-1) @ V[:, :t0 + n]).transpose(0, 1).reshape(n, self.C)
        return F.linear(y, W[p + "attn.proj.weight"], W[p + "attn.proj.bias"])

    def grassmann(self, l, p, h, t0):
        n, W, Z = h.shape[0], self.W, self.z[l]
        Z[t0:t0 + n] = F.linear(h, W[p + "grassmann.red.weight"], W[p + "grassmann.red.bias"])
        # Every (row, offset) pair at once: (n, D) past positions, those before 0 masked.
        t = torch.arange(t0, t0 + n)[:, None]
        past = t - torch.tensor(self.windows[l])[None, :]
        ok = (past >= 0).to(h.dtype)[..., None]
        q = pair_map("wedge", Z[t].expand(-1, past.shape[1], -1), Z[past.clamp(min=0)], 1e-8, 1e-5) * ok
        count = ok.sum(1)
        g = F.linear(q.sum(1) / count.clamp(min=1), W[p + "grassmann.plu.weight"], W[p + "grassmann.plu.bias"])
        g = g * (count > 0)
        a = torch.sigmoid(F.linear(torch.cat([h, g], dim=1), W[p + "grassmann.gate.weight"], W[p + "grassmann.gate.bias"]))
        return F.layer_norm(a * h + (1 - a) * g, (self.C,), W[p + "grassmann.ln.weight"], W[p + "grassmann.ln.bias"], EPS)

    def run(self, tokens, t0):
        """The logits (n, V) of tokens at positions t0 .. t0 + n - 1, the caches filled as it goes."""
        W = self.W
        x = W["wte"][tokens] + self.pos[t0:t0 + len(tokens)]
        for l, mixer in enumerate(self.cfg["mixers"]):
            p = f"h.{l}."
            h = self.ln(p + "ln1", x)
            x = x + (self.attention(l, p, h, t0) if mixer == "attention" else self.grassmann(l, p, h, t0))
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
