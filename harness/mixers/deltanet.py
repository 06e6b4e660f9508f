"""Gated DeltaNet's PyTorch reference (src/mixers/deltanet.h): the delta rule
S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T, o_t = S_t^T q_t,
written as the plain recurrence, one position at a time, so that autograd gives
the reference gradients."""
import math

import torch
import torch.nn.functional as F

# gla's per-head decay offsets (the two mixers differ by the delta rule and beta
# alone) and the per-head RMS normalisation without gain.
from harness.mixers.gla import decay_offset
from harness.torch_ref import rms_norm as rms


def forward(W, prefix, h, cfg, layer):
    """The layer's output (B, T, C) for its normalised input h (B, T, C); W maps the
    full tensor names (prefix + "deltanet.qkv.weight", ...) to tensors."""
    del layer  # no per-layer settings
    B, T, C = h.shape
    H = cfg["n_head"]
    hs = C // H
    w = lambda name: W[prefix + "deltanet." + name]
    q, k, v = F.linear(h, w("qkv.weight"), w("qkv.bias")).split(C, dim=2)
    q, k, v = (x.view(B, T, H, hs) for x in (q, k, v))
    # Unit length per head: RMS over hs, then k over sqrt(hs) (its L2 norm); q's
    # scale is immaterial, each head's o being RMS-normalised below.
    q, k = rms(q), rms(k) / math.sqrt(hs)
    offset = torch.tensor([decay_offset(i, H) for i in range(H)], dtype=h.dtype)
    alpha = torch.sigmoid(F.linear(h, w("decay.weight"), w("decay.bias")) + offset)  # (B, T, H)
    beta = torch.sigmoid(F.linear(h, w("beta.weight"), w("beta.bias")))
    eye = torch.eye(hs, dtype=h.dtype)
    S = torch.zeros(B, H, hs, hs, dtype=h.dtype)
    outs = []
    for t in range(T):
        kt, b = k[:, t], beta[:, t, :, None, None]
        kk = kt[..., :, None] * kt[..., None, :]  # k k^T, (B, H, hs, hs)
        S = alpha[:, t, :, None, None] * (eye - b * kk) @ S + b * kt[..., :, None] * v[:, t, :, None, :]
        outs.append(torch.einsum("bhi,bhij->bhj", q[:, t], S))
    o = rms(torch.stack(outs, dim=1)).reshape(B, T, C)
    return F.linear(o, w("proj.weight"), w("proj.bias"))
