"""The PyTorch reference model: the same architecture as the C code, written
with torch operations, from a dict of weights named as in docs/design.md: the
embeddings, the blocks' norms and MLPs and the head here, each layer's mixer
in its own reference (harness/mixers/NAME.py, found by the mixer's name).
Used by tests/parity/parity.py (autograd gradients), harness/bench/ (speed, through
harness/bench_torch.py) and harness/torch_train.py (the loss it reaches)."""
import importlib
import os
import re

import numpy as np
import torch
import torch.nn.functional as F

from harness import registry
from harness.common import token_header

MIXERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mixers")  # the references: one file per mixer


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


def reference(mixer):
    """The PyTorch reference of a registered mixer: harness/mixers/NAME.py (harness/mixers/__init__.py
    says what it exposes), or None where the mixer has none."""
    if not re.fullmatch(r"[a-z0-9_]+", mixer) or not os.path.exists(os.path.join(MIXERS, mixer + ".py")):
        return None
    return importlib.import_module(f"harness.mixers.{mixer}")


def layer_reference(mixer):
    """reference(mixer), or ValueError naming the file a mixer without one lacks."""
    ref = reference(mixer)
    if ref is None:
        raise ValueError(f"mixer '{mixer}' has no PyTorch reference (harness/mixers/{mixer}.py)")
    return ref


def model_logits(W, cfg, inputs):
    C = cfg["n_embd"]
    B, T = inputs.shape
    x = W["wte"][inputs]
    if cfg["pos"] == "learned":
        x = x + W["wpe"][:T]
    elif cfg["pos"] == "sinusoidal":
        x = x + sinusoidal(T, C)
    # rope: no table added; a mixer that uses it rotates its own q and k.
    post = cfg.get("norm", "pre") == "post"
    rms = cfg.get("norm_type", "layernorm") == "rmsnorm"
    relu2 = cfg.get("mlp_act", "gelu") == "relu2"

    def ln(p, name, v):
        if rms:
            return rms_norm(v, W[p + name + ".weight"])
        return F.layer_norm(v, (C,), W[p + name + ".weight"], W[p + name + ".bias"], 1e-5)

    refs = [layer_reference(m) for m in cfg["mixers"]]
    for l, ref in enumerate(refs):
        p = f"h.{l}."

        def mix(h):
            return ref.forward(W, p, h, cfg, l)

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


def full_config(cfg):
    """cfg with what a config JSON must hold and a hand-made one may leave out (n_layer from its mixers,
    no dropout): what bin/info reads."""
    return dict({"n_layer": len(cfg["mixers"]), "dropout": 0.0}, **cfg)


def init_weights(cfg, dtype=torch.float32, seed=0):
    """Random weights of the right shapes (for benchmarks; values do not matter): the model's own, and
    each layer's mixer's tensors as the C code lays them out (bin/info --mixers at this config)."""
    g = torch.Generator().manual_seed(seed)
    C, V, T = cfg["n_embd"], cfg["vocab_size"], cfg["block_size"]
    rms = cfg.get("norm_type", "layernorm") == "rmsnorm"
    shapes = {"wte": (V, C), "ln_f.weight": (C,)}
    if not rms:
        shapes["ln_f.bias"] = (C,)
    if cfg.get("untied_head"):
        shapes["lm_head.weight"] = (V, C)
    if cfg["pos"] == "learned":
        shapes["wpe"] = (T, C)
    layers = registry.describe(config=full_config(cfg), what="the PyTorch model's config")["layers"]
    for l, layer in enumerate(layers):
        p = f"h.{l}."
        for n in ("ln1", "ln2"):
            shapes[p + n + ".weight"] = (C,)
            if not rms:
                shapes[p + n + ".bias"] = (C,)
        shapes.update({p + t["name"]: tuple(t["shape"]) for t in layer["tensors"]})
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
