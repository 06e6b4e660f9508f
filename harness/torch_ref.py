"""The PyTorch reference model: the same architecture as the C code, written
with torch operations, from a dict of weights named as in docs/design.md. Used
by tests/parity.py (autograd gradients), harness/bench/ (speed, through
harness/bench_torch.py) and harness/torch_train.py (the loss it reaches)."""
import math

import numpy as np
import torch
import torch.nn.functional as F

from harness.common import token_header


def sinusoidal(T, C):
    pe = torch.zeros(T, C, dtype=torch.float64)
    t = torch.arange(T, dtype=torch.float64)[:, None]
    i = torch.arange(0, C, 2, dtype=torch.float64)
    angle = t / torch.pow(10000.0, i / C)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : C // 2])
    return pe


def rope(x):
    """RoFormer's rotation of x (B, H, T, hs): each pair (2i, 2i+1) as the complex
    number x_2i + i x_2i+1, times exp(i t 10000^(-2i/hs)) at position t."""
    B, H, T, hs = x.shape
    t = torch.arange(T, dtype=torch.float64)[:, None]
    theta = torch.pow(10000.0, -torch.arange(0, hs, 2, dtype=torch.float64) / hs)
    turn = torch.polar(torch.ones(T, hs // 2, dtype=torch.float64), t * theta)
    if x.dtype != torch.float64:
        turn = turn.to(torch.complex64)
    pairs = torch.view_as_complex(x.reshape(B, H, T, hs // 2, 2).contiguous())
    return torch.view_as_real(pairs * turn).reshape(B, H, T, hs)


RMSNORM_EPS = 1e-6


def rms_norm(x, weight=None):
    """RMSNorm over the last dimension: x / sqrt(mean(x^2) + eps), times the gain if given."""
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + RMSNORM_EPS)
    return y * weight if weight is not None else y


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


def gla_decay_offset(h, H):
    """Head h's starting decay logit: logit(1 - 2^-(3 + 5 h / (H - 1)))."""
    keep = 1.0 - 2.0 ** -(3.0 + 5.0 * h / max(H - 1, 1))
    return math.log(keep / (1.0 - keep))


def gla(W, p, h, H):
    """Gated linear attention with a per-head scalar decay, as the naive
    recurrence: S_t = gamma_t S_{t-1} + k_t v_t^T, o_t = S_t^T q_t, each
    head's o RMS-normalised (no gain), then projected."""
    B, T, C = h.shape
    hs = C // H
    q, k, v = F.linear(h, W[p + "gla.qkv.weight"], W[p + "gla.qkv.bias"]).split(C, dim=2)
    q, k, v = (x.view(B, T, H, hs) for x in (q, k, v))
    offset = torch.tensor([gla_decay_offset(i, H) for i in range(H)], dtype=h.dtype)
    gamma = torch.sigmoid(F.linear(h, W[p + "gla.decay.weight"], W[p + "gla.decay.bias"]) + offset)  # (B, T, H)
    S = torch.zeros(B, H, hs, hs, dtype=h.dtype)
    outs = []
    for t in range(T):
        S = gamma[:, t, :, None, None] * S + k[:, t, :, :, None] * v[:, t, :, None, :]
        outs.append(torch.einsum("bhi,bhij->bhj", q[:, t], S))
    o = rms_norm(torch.stack(outs, dim=1)).reshape(B, T, C)
    return F.linear(o, W[p + "gla.proj.weight"], W[p + "gla.proj.bias"])


def grassmann_features(pair, r):
    """F, the features of each position for a pair map of rank r."""
    return {"wedge": r * (r - 1) // 2, "outer": r * r, "sum": r}[pair]


def pair_map(pair, zc, zp, eps, parallel):
    """One offset's map of the pairs (zc, zp), (..., r) each, as docs/design.md states it."""
    if pair == "sum":
        return zc + zp
    outer = zc.unsqueeze(-1) * zp.unsqueeze(-2)  # [i, j] = zc_i zp_j
    if pair == "outer":
        norm = zc.norm(dim=-1, keepdim=True) * zp.norm(dim=-1, keepdim=True)
        return outer.flatten(-2) / norm.clamp(min=eps)
    r = zc.shape[-1]
    iu = torch.triu_indices(r, r, 1)  # (0,1), (0,2), ..., (1,2), ...: row-major i < j
    pl = (outer - outer.transpose(-1, -2))[..., iu[0], iu[1]]
    # A parallel pair, |pl| <= parallel |zc| |zp| (a repeated token's equal
    # z when no positions reach the layer), has no direction: it adds
    # nothing and passes no gradient (docs/design.md), where pl / eps
    # would pass opposite 1/eps-sized ones.
    norm = pl.norm(dim=-1, keepdim=True)
    apart = norm > parallel * zc.norm(dim=-1, keepdim=True) * zp.norm(dim=-1, keepdim=True)
    return pl / norm.clamp(min=eps) * apart.to(zc.dtype)


def grassmann(W, p, h, r, windows, eps=1e-8, parallel=1e-5, pair="wedge"):
    """The causal Grassmann layer exactly as docs/design.md states it, its
    pairs mapped by `pair` (wedge: the Plücker coordinates; outer, sum: the controls)."""
    B, T, C = h.shape
    z = F.linear(h, W[p + "grassmann.red.weight"], W[p + "grassmann.red.bias"])
    qsum = torch.zeros(B, T, grassmann_features(pair, r), dtype=h.dtype)
    count = torch.zeros(T, dtype=h.dtype)
    for d in windows:
        if d >= T:
            continue
        q = pair_map(pair, z[:, d:, :], z[:, :-d, :], eps, parallel)
        qsum = qsum + F.pad(q, (0, 0, d, 0))
        count[d:] += 1
    mean = qsum / count.clamp(min=1)[None, :, None]
    g = F.linear(mean, W[p + "grassmann.plu.weight"], W[p + "grassmann.plu.bias"])
    g = g * (count > 0).to(h.dtype)[None, :, None]
    a = torch.sigmoid(F.linear(torch.cat([h, g], dim=-1), W[p + "grassmann.gate.weight"], W[p + "grassmann.gate.bias"]))
    m = a * h + (1 - a) * g
    return F.layer_norm(m, (C,), W[p + "grassmann.ln.weight"], W[p + "grassmann.ln.bias"], 1e-5)


def layer_windows(cfg):
    """Each layer's Grassmann offsets: 'grassmann_windows' is one list for
    every layer or one list per layer (a schedule)."""
    w = cfg["grassmann_windows"]
    if w and isinstance(w[0], list):
        return w
    return [w] * len(cfg["mixers"])


def model_logits(W, cfg, inputs):
    C = cfg["n_embd"]
    B, T = inputs.shape
    x = W["wte"][inputs]
    if cfg["pos"] == "learned":
        x = x + W["wpe"][:T]
    elif cfg["pos"] == "sinusoidal":
        x = x + sinusoidal(T, C)
    # rope: no table added; attention rotates q and k.
    windows = layer_windows(cfg)
    post = cfg.get("norm", "pre") == "post"
    rms = cfg.get("norm_type", "layernorm") == "rmsnorm"
    relu2 = cfg.get("mlp_act", "gelu") == "relu2"

    def ln(p, name, v):
        if rms:
            return rms_norm(v, W[p + name + ".weight"])
        return F.layer_norm(v, (C,), W[p + name + ".weight"], W[p + name + ".bias"], 1e-5)

    for l, mixer in enumerate(cfg["mixers"]):
        p = f"h.{l}."

        def mix(h):
            if mixer == "attention":
                return attention(W, p, h, cfg["n_head"], cfg["pos"] == "rope", cfg.get("qk_norm", False),
                                 cfg.get("attn_window", 0))
            if mixer == "gla":
                return gla(W, p, h, cfg["n_head"])
            return grassmann(W, p, h, cfg["grassmann_rank"], windows[l], pair=cfg.get("grassmann_pair", "wedge"))

        def mlp(h):
            h = F.linear(h, W[p + "mlp.fc.weight"], W[p + "mlp.fc.bias"])
            h = F.relu(h).square() if relu2 else F.gelu(h, approximate="tanh")
            return F.linear(h, W[p + "mlp.proj.weight"], W[p + "mlp.proj.bias"])

        if post:  # h = LN1(h + mixer(h)), h = LN2(h + MLP(h))
            x = ln(p, "ln1", x + mix(x))
            x = ln(p, "ln2", x + mlp(x))
        else:  # h = h + mixer(LN1(h)), h = h + MLP(LN2(h))
            x = x + mix(ln(p, "ln1", x))
            x = x + mlp(ln(p, "ln2", x))
    x = ln("", "ln_f", x)
    logits = x @ (W["lm_head.weight"] if cfg.get("untied_head") else W["wte"]).T
    cap = cfg.get("logit_softcap", 0)
    return cap * torch.tanh(logits / cap) if cap else logits


def model_loss(W, cfg, inputs, targets, reduction="mean"):
    """Cross-entropy of the model; reduction "none" gives one loss per position, shaped like targets."""
    logits = model_logits(W, cfg, inputs)
    # Targets of -1 are left out of the loss, as bin/train's loss mask does (LOSS_IGNORE).
    loss = F.cross_entropy(logits.reshape(-1, cfg["vocab_size"]), targets.reshape(-1), reduction=reduction,
                           ignore_index=-1)
    return loss.view(targets.shape) if reduction == "none" else loss


def read_tokens(path):
    """A token file (bin/prepare) as an int64 tensor, and its vocabulary size."""
    head = token_header(path)
    with open(path, "rb") as f:
        raw = f.read()
    # the header's count: a version 2 file's unknown tokens' text follows the tokens
    toks = np.frombuffer(raw[32:32 + head["count"] * head["width"]],
                         dtype=np.uint16 if head["width"] == 2 else np.uint32).astype(np.int64)
    return torch.from_numpy(toks), head["vocab"]


def init_weights(cfg, dtype=torch.float32, seed=0):
    """Random weights of the right shapes (for benchmarks; values do not matter)."""
    g = torch.Generator().manual_seed(seed)
    C, V, T = cfg["n_embd"], cfg["vocab_size"], cfg["block_size"]
    r = cfg.get("grassmann_rank", 32)
    P = grassmann_features(cfg.get("grassmann_pair", "wedge"), r)
    rms = cfg.get("norm_type", "layernorm") == "rmsnorm"
    shapes = {"wte": (V, C), "ln_f.weight": (C,)}
    if not rms:
        shapes["ln_f.bias"] = (C,)
    if cfg.get("untied_head"):
        shapes["lm_head.weight"] = (V, C)
    if cfg["pos"] == "learned":
        shapes["wpe"] = (T, C)
    for l, mixer in enumerate(cfg["mixers"]):
        p = f"h.{l}."
        for n in ("ln1", "ln2"):
            shapes[p + n + ".weight"] = (C,)
            if not rms:
                shapes[p + n + ".bias"] = (C,)
        if mixer == "attention":
            shapes.update({p + "attn.qkv.weight": (3 * C, C), p + "attn.qkv.bias": (3 * C,),
                           p + "attn.proj.weight": (C, C), p + "attn.proj.bias": (C,)})
        elif mixer == "gla":
            H = cfg["n_head"]
            shapes.update({p + "gla.qkv.weight": (3 * C, C), p + "gla.qkv.bias": (3 * C,),
                           p + "gla.decay.weight": (H, C), p + "gla.decay.bias": (H,),
                           p + "gla.proj.weight": (C, C), p + "gla.proj.bias": (C,)})
        else:
            shapes.update({p + "grassmann.red.weight": (r, C), p + "grassmann.red.bias": (r,),
                           p + "grassmann.plu.weight": (C, P), p + "grassmann.plu.bias": (C,),
                           p + "grassmann.gate.weight": (C, 2 * C), p + "grassmann.gate.bias": (C,),
                           p + "grassmann.ln.weight": (C,), p + "grassmann.ln.bias": (C,)})
        shapes.update({p + "mlp.fc.weight": (4 * C, C), p + "mlp.fc.bias": (4 * C,),
                       p + "mlp.proj.weight": (C, 4 * C), p + "mlp.proj.bias": (C,)})
    W = {}
    for k, shape in shapes.items():
        if k.endswith(".weight") and len(shape) == 1:
            W[k] = torch.ones(shape, dtype=dtype)
        elif len(shape) == 1:
            W[k] = torch.zeros(shape, dtype=dtype)
        else:
            W[k] = 0.02 * torch.randn(shape, generator=g, dtype=dtype)
        W[k].requires_grad_(True)
    return W
