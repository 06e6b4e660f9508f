#!/usr/bin/env python3
"""PyTorch versions of the mixers for make bench's mixers section, written the
way one would write them to be fast in PyTorch, and a timing run of them.

- window_attention_chunked: sliding-window attention in its chunked form:
  queries in blocks of `block` rows (default the window), each block against
  the keys of its band only (block + window - 1 keys, an unfold view of the
  padded keys), masked to the band: no T x T matrix, cost O(T W).
- gla_chunked: gated linear attention with a per-head scalar decay in its
  chunk-parallel form: within a chunk of `chunk` positions the masked,
  decay-weighted q k^T products (all chunks at once), across chunks the state
  S carried from one chunk's start to the next (one small product per chunk).

The *_layer functions wrap them as the whole mixer layer with the weights of
harness/torch_ref.init_weights (qkv, the decay projection, the output
projection), equal to torch_ref's naive attention (with its window) and gla
(tests/bench_test.py checks both, forward and gradients, in float64). Full
attention and the Grassmann layer have none here: the bench compares those
with PyTorch in its train section, as whole models.

Run as a program, it times the mixer layers of one bin/train run's model
(its --json "config") forward and backward, every layer on its own input of
BATCH x block tokens with torch.set_num_threads(THREADS), and prints one JSON
object: "ms" (per step: the n_layer mixers' forward and backward, gradients of
the inputs and of the weights), "blas" (the OpenBLAS library and kernel, as
harness/bench_torch.py reads it), "threads", "impl" (which version ran).
Usage: /usr/bin/python3 -m harness.bench.torch_mixers CONFIG_JSON BATCH STEPS THREADS"""
import json
import math
import sys
import time

import torch
import torch.nn.functional as F

from harness.bench_torch import loaded_openblas
from harness.torch_ref import gla_decay_offset, init_weights, rms_norm

GLA_CHUNK = 64  # positions per chunk of gla_chunked


def window_attention_chunked(q, k, v, window, block=None):
    """Causal attention of q, k, v (B, H, T, hs) where query t sees keys
    t - window + 1 .. t, by blocks of `block` queries (default window) against
    the block + window - 1 keys of their band."""
    B, H, T, hs = q.shape
    Q, P = block or window, window - 1
    n = -(-T // Q)
    pad = n * Q - T
    qb = F.pad(q, (0, 0, 0, pad)).view(B, H, n, Q, hs)
    # Padded keys: P zeros before position 0 (masked below), pad after T (past every real query).
    kb = F.pad(k, (0, 0, P, pad)).unfold(2, Q + P, Q)  # (B, H, n, hs, Q + P): block i's keys iQ - P .. iQ + Q - 1
    vb = F.pad(v, (0, 0, P, pad)).unfold(2, Q + P, Q).transpose(-1, -2)  # (B, H, n, Q + P, hs)
    a = torch.arange(Q)[:, None]  # the query's row in its block: position iQ + a
    b = torch.arange(Q + P)[None, :]  # the key's column: position iQ - P + b
    band = (b >= a) & (b <= a + P)  # t - window < key <= t
    real = (torch.arange(n)[:, None, None] * Q - P + b) >= 0  # not a padding key before position 0
    s = (qb @ kb) * (1.0 / math.sqrt(hs))
    s = s.masked_fill(~(band & real), float("-inf"))
    y = torch.softmax(s, dim=-1) @ vb
    return y.reshape(B, H, n * Q, hs)[:, :, :T]


def gla_chunked(q, k, v, log_gamma, chunk=GLA_CHUNK):
    """o_t = S_t^T q_t with S_t = gamma_t S_{t-1} + k_t v_t^T, S_{-1} = 0, for
    q, k, v (B, H, T, hs) and log_gamma (B, H, T), in chunks of `chunk`
    positions. With b_t the sum of log gamma from the chunk's start through t
    and S0 the state before the chunk:
        o_t = sum_{j <= t in the chunk} exp(b_t - b_j) (q_t . k_j) v_j + exp(b_t) S0^T q_t
        S0' = exp(b_L) S0 + sum_j exp(b_L - b_j) k_j v_j^T
    Every exponent is <= 0."""
    B, H, T, hs = q.shape
    L = chunk
    n = -(-T // L)
    pad = n * L - T
    # Padding at the end: zero q, k, v and gamma 1, after every real position.
    qc, kc, vc = (F.pad(x, (0, 0, 0, pad)).view(B, H, n, L, hs) for x in (q, k, v))
    b = F.pad(log_gamma, (0, pad)).view(B, H, n, L).cumsum(-1)
    causal = torch.tril(torch.ones(L, L, dtype=torch.bool))
    decay = (b[..., :, None] - b[..., None, :]).masked_fill(~causal, float("-inf")).exp()  # (B, H, n, L, L)
    o = ((qc @ kc.transpose(-1, -2)) * decay) @ vc
    last = b[..., -1:]  # (B, H, n, 1)
    U = (kc * (last - b).exp()[..., None]).transpose(-1, -2) @ vc  # each chunk's own sum, (B, H, n, hs, hs)
    carry = last.exp()[..., None]  # (B, H, n, 1, 1)
    S = q.new_zeros(B, H, hs, hs)
    starts = []
    # unbind, not U[:, :, c]: each index's backward would write a whole zero tensor of U's size.
    for carry_c, U_c in zip(carry.unbind(2), U.unbind(2)):
        starts.append(S)
        S = carry_c * S + U_c
    o = o + (qc * b.exp()[..., None]) @ torch.stack(starts, dim=2)
    return o.reshape(B, H, n * L, hs)[:, :, :T]


def heads(W, p, h, H, name):
    """q, k, v of h (B, T, C) as (B, H, T, hs) from the layer's `name`.qkv weights."""
    B, T, C = h.shape
    q, k, v = F.linear(h, W[p + name + ".qkv.weight"], W[p + name + ".qkv.bias"]).split(C, dim=2)
    return [x.view(B, T, H, C // H).transpose(1, 2) for x in (q, k, v)]


def attention_layer(W, p, h, H, window, block=None):
    """torch_ref.attention with a window (no rotary, no qk-norm) through window_attention_chunked."""
    B, T, C = h.shape
    q, k, v = heads(W, p, h, H, "attn")
    y = window_attention_chunked(q, k, v, window, block)
    return F.linear(y.transpose(1, 2).reshape(B, T, C), W[p + "attn.proj.weight"], W[p + "attn.proj.bias"])


def gla_layer(W, p, h, H, chunk=GLA_CHUNK):
    """torch_ref.gla through gla_chunked."""
    B, T, C = h.shape
    q, k, v = heads(W, p, h, H, "gla")
    offset = torch.tensor([gla_decay_offset(i, H) for i in range(H)], dtype=h.dtype)
    log_gamma = F.logsigmoid(F.linear(h, W[p + "gla.decay.weight"], W[p + "gla.decay.bias"]) + offset)  # (B, T, H)
    o = gla_chunked(q, k, v, log_gamma.transpose(1, 2), chunk)
    o = rms_norm(o.transpose(1, 2)).reshape(B, T, C)  # each head to unit RMS, no gain
    return F.linear(o, W[p + "gla.proj.weight"], W[p + "gla.proj.bias"])


def mixer_layer(cfg, l):
    """(layer l's mixer as a function of (W, h), the name of the version it runs) for a bin/train config."""
    mixer, H, p = cfg["mixers"][l], cfg["n_head"], f"h.{l}."
    window = cfg.get("attn_window", 0)
    if mixer == "attention" and window:
        return (lambda W, h: attention_layer(W, p, h, H, window)), \
            f"window: chunked, query blocks of {window} against their band's {2 * window - 1} keys"
    if mixer == "gla":
        return (lambda W, h: gla_layer(W, p, h, H)), f"gla: chunk-parallel, chunks of {GLA_CHUNK}"
    raise ValueError(f"no PyTorch version of mixer '{mixer}'" + (" without a window" if mixer == "attention" else ""))


def main(cfg_json, batch, steps, threads):
    torch.set_num_threads(int(threads))
    cfg = json.loads(cfg_json)
    B, T, C = int(batch), cfg["block_size"], cfg["n_embd"]
    W = init_weights(cfg)
    layers = [mixer_layer(cfg, l) for l in range(len(cfg["mixers"]))]
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
