"""The PyTorch reference of the attention mixer (src/mixers/attention.c):
causal multi-head softmax attention over the block, or with attn_window W
over the last W positions, the query's own included; with rope positions q
and k rotated, with qk_norm each head's q and k RMS-normalised (no gain).
The interface: harness/mixers/__init__.py."""
import math

import torch
import torch.nn.functional as F

from harness.torch_ref import rms_norm, rope


def attention(W, p, h, H, rotary=False, qk_norm=False, window=0):
    """Causal multi-head attention; with a window, query t sees keys t - window + 1 .. t."""
    B, T, C = h.shape
    hs = C // H
    q, k, v = F.linear(h, W[p + "attn.qkv.weight"], W[p + "attn.qkv.bias"]).split(C, dim=2)
    q, k, v = (x.view(B, T, H, hs).transpose(1, 2) for x in (q, k, v))
    if rotary:
        q, k = rope(q), rope(k)
    if qk_norm:  # per head, no gain
        q, k = rms_norm(q), rms_norm(k)
    att = q @ k.transpose(-2, -1) / math.sqrt(hs)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    if window:
        mask &= torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1 - window)
    att = torch.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
    y = (att @ v).transpose(1, 2).reshape(B, T, C)
    return F.linear(y, W[p + "attn.proj.weight"], W[p + "attn.proj.bias"])


def forward(W, prefix, h, cfg, layer):
    return attention(W, prefix, h, cfg["n_head"], cfg["pos"] == "rope", cfg.get("qk_norm", False),
                     cfg.get("attn_window", 0))


# ---- make bench's: the sliding window chunked, and a decoding loop's cache ------------------

def window_attention_chunked(q, k, v, window, block=None):
    """Causal attention of q, k, v (B, H, T, hs) where query t sees keys
    t - window + 1 .. t, by blocks of `block` queries (default window) against
    the block + window - 1 keys of their band: no T x T matrix, cost O(T W)."""
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


def window_layer(W, p, h, H, window, block=None):
    """attention() with a window (no rotary, no qk-norm) through window_attention_chunked."""
    B, T, C = h.shape
    q, k, v = F.linear(h, W[p + "attn.qkv.weight"], W[p + "attn.qkv.bias"]).split(C, dim=2)
    q, k, v = (x.view(B, T, H, C // H).transpose(1, 2) for x in (q, k, v))
    y = window_attention_chunked(q, k, v, window, block)
    return F.linear(y.transpose(1, 2).reshape(B, T, C), W[p + "attn.proj.weight"], W[p + "attn.proj.bias"])


def chunked(cfg, layer):
    """The sliding window's chunked form (none without a window, or with rope or qk-norm)."""
    window = cfg.get("attn_window", 0)
    if not window or cfg["pos"] == "rope" or cfg.get("qk_norm"):
        return None
    return ((lambda W, prefix, h, cfg, layer: window_layer(W, prefix, h, cfg["n_head"], window)),
            f"chunked, query blocks of {window} against their band's {2 * window - 1} keys")


class Cache:
    """A decoding loop's keys and values (learned or sinusoidal positions, no qk-norm): every position's,
    or with a window the last W read."""

    def __init__(self, W, prefix, cfg, layer):
        if cfg["pos"] == "rope" or cfg.get("qk_norm"):
            raise ValueError("no PyTorch decoding loop for rope or qk-norm")
        self.W, self.p, self.H, self.C, T = W, prefix, cfg["n_head"], cfg["n_embd"], cfg["block_size"]
        self.hs, self.window = self.C // self.H, cfg.get("attn_window", 0)
        self.K, self.V = torch.zeros(self.H, T, self.hs), torch.zeros(self.H, T, self.hs)

    def step(self, h, t0):
        """h (n, C) at positions t0 .. t0 + n - 1: its rows of the causal attention over the cache."""
        n, W, p, H, hs = h.shape[0], self.W, self.p, self.H, self.hs
        q, k, v = F.linear(h, W[p + "attn.qkv.weight"], W[p + "attn.qkv.bias"]).split(self.C, dim=1)
        self.K[:, t0:t0 + n] = k.view(n, H, hs).transpose(0, 1)
        self.V[:, t0:t0 + n] = v.view(n, H, hs).transpose(0, 1)
        q = q.view(n, H, hs).transpose(0, 1)  # (H, n, hs)
        s = q @ self.K[:, :t0 + n].transpose(1, 2) / hs ** 0.5  # (H, n, t0 + n)
        rows, keys = torch.arange(t0, t0 + n)[:, None], torch.arange(t0 + n)[None, :]
        hidden = keys > rows
        if self.window:
            hidden |= keys <= rows - self.window
        if hidden.any():
            s = s.masked_fill(hidden, float("-inf"))
        y = (torch.softmax(s, dim=-1) @ self.V[:, :t0 + n]).transpose(0, 1).reshape(n, self.C)
        return F.linear(y, W[p + "attn.proj.weight"], W[p + "attn.proj.bias"])
