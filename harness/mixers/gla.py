"""The PyTorch reference of the gla mixer (src/mixers/gla.c): gated linear
attention with a per-head scalar decay, as the naive recurrence
S_t = gamma_t S_{t-1} + k_t v_t^T, o_t = S_t^T q_t, each head's o
RMS-normalised (no gain), then projected; and for make bench its
chunk-parallel form. The interface: harness/mixers/__init__.py."""
import math

import torch
import torch.nn.functional as F

from harness.torch_ref import rms_norm

CHUNK = 64  # positions per chunk of the chunked form


def decay_offset(h, H):
    """Head h's starting decay logit: logit(1 - 2^-(3 + 5 h / (H - 1)))."""
    keep = 1.0 - 2.0 ** -(3.0 + 5.0 * h / max(H - 1, 1))
    return math.log(keep / (1.0 - keep))


def heads(W, p, h, H):
    """q, k, v of h (B, T, C), each (B, T, H, hs), and the decays' logits (B, T, H)."""
    B, T, C = h.shape
    q, k, v = F.linear(h, W[p + "gla.qkv.weight"], W[p + "gla.qkv.bias"]).split(C, dim=2)
    offset = torch.tensor([decay_offset(i, H) for i in range(H)], dtype=h.dtype)
    z = F.linear(h, W[p + "gla.decay.weight"], W[p + "gla.decay.bias"]) + offset
    return [x.view(B, T, H, C // H) for x in (q, k, v)] + [z]


def gla(W, p, h, H):
    B, T, C = h.shape
    hs = C // H
    q, k, v, z = heads(W, p, h, H)
    gamma = torch.sigmoid(z)  # (B, T, H)
    S = torch.zeros(B, H, hs, hs, dtype=h.dtype)
    outs = []
    for t in range(T):
        S = gamma[:, t, :, None, None] * S + k[:, t, :, :, None] * v[:, t, :, None, :]
        outs.append(torch.einsum("bhi,bhij->bhj", q[:, t], S))
    o = rms_norm(torch.stack(outs, dim=1)).reshape(B, T, C)
    return F.linear(o, W[p + "gla.proj.weight"], W[p + "gla.proj.bias"])


def forward(W, prefix, h, cfg, layer):
    return gla(W, prefix, h, cfg["n_head"])


# ---- make bench's: the chunk-parallel form ------------------------------------------

def gla_chunked(q, k, v, log_gamma, chunk=CHUNK):
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


def gla_layer(W, p, h, H, chunk=CHUNK):
    """gla() through gla_chunked."""
    B, T, C = h.shape
    q, k, v, z = heads(W, p, h, H)
    o = gla_chunked(*(x.transpose(1, 2) for x in (q, k, v)), F.logsigmoid(z).transpose(1, 2), chunk)
    o = rms_norm(o.transpose(1, 2)).reshape(B, T, C)  # each head to unit RMS, no gain
    return F.linear(o, W[p + "gla.proj.weight"], W[p + "gla.proj.bias"])


def chunked(cfg, layer):
    return ((lambda W, prefix, h, cfg, layer: gla_layer(W, prefix, h, cfg["n_head"])),
            f"chunk-parallel, chunks of {CHUNK}")
