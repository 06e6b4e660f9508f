"""The PyTorch reference of the grassmann mixer (src/mixers/grassmann.c): the
causal Grassmann layer exactly as docs/design.md states it, its pairs mapped
by the config's grassmann_pair (wedge: the Plücker coordinates; outer, sum:
the controls), over each layer's window offsets (grassmann_windows: one list
for every layer, or one per layer); and for make bench a decoding loop's
cache. The interface: harness/mixers/__init__.py."""
import torch
import torch.nn.functional as F

EPS, PARALLEL = 1e-8, 1e-5
LN_EPS = 1e-5


def layer_windows(cfg, layer):
    """Layer `layer`'s offsets: 'grassmann_windows' is one list for every layer or one list per layer."""
    w = cfg["grassmann_windows"]
    return w[layer] if w and isinstance(w[0], list) else w


def features(pair, r):
    """F, the features of each position for a pair map of rank r."""
    return {"wedge": r * (r - 1) // 2, "outer": r * r, "sum": r}[pair]


def pair_map(pair, zc, zp, eps=EPS, parallel=PARALLEL):
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


def gate(W, p, h, g):
    """The gate between the input and the features, and the layer's own LayerNorm."""
    C = h.shape[-1]
    a = torch.sigmoid(F.linear(torch.cat([h, g], dim=-1), W[p + "grassmann.gate.weight"], W[p + "grassmann.gate.bias"]))
    return F.layer_norm(a * h + (1 - a) * g, (C,), W[p + "grassmann.ln.weight"], W[p + "grassmann.ln.bias"], LN_EPS)


def grassmann(W, p, h, r, windows, pair="wedge"):
    B, T, C = h.shape
    z = F.linear(h, W[p + "grassmann.red.weight"], W[p + "grassmann.red.bias"])
    qsum = torch.zeros(B, T, features(pair, r), dtype=h.dtype)
    count = torch.zeros(T, dtype=h.dtype)
    for d in windows:
        if d >= T:
            continue
        q = pair_map(pair, z[:, d:, :], z[:, :-d, :])
        qsum = qsum + F.pad(q, (0, 0, d, 0))
        count[d:] += 1
    mean = qsum / count.clamp(min=1)[None, :, None]
    g = F.linear(mean, W[p + "grassmann.plu.weight"], W[p + "grassmann.plu.bias"])
    g = g * (count > 0).to(h.dtype)[None, :, None]
    return gate(W, p, h, g)


def forward(W, prefix, h, cfg, layer):
    return grassmann(W, prefix, h, cfg["grassmann_rank"], layer_windows(cfg, layer), cfg.get("grassmann_pair", "wedge"))


class Cache:
    """A decoding loop's reduced vectors: every position's z = W_red h."""

    def __init__(self, W, prefix, cfg, layer):
        self.W, self.p, self.pair = W, prefix, cfg.get("grassmann_pair", "wedge")
        self.windows = layer_windows(cfg, layer)
        self.Z = torch.zeros(cfg["block_size"], cfg["grassmann_rank"])

    def step(self, h, t0):
        n, W, p, Z = h.shape[0], self.W, self.p, self.Z
        Z[t0:t0 + n] = F.linear(h, W[p + "grassmann.red.weight"], W[p + "grassmann.red.bias"])
        # Every (row, offset) pair at once: (n, D) past positions, those before 0 masked.
        t = torch.arange(t0, t0 + n)[:, None]
        past = t - torch.tensor(self.windows)[None, :]
        ok = (past >= 0).to(h.dtype)[..., None]
        q = pair_map(self.pair, Z[t].expand(-1, past.shape[1], -1), Z[past.clamp(min=0)]) * ok
        count = ok.sum(1)
        g = F.linear(q.sum(1) / count.clamp(min=1), W[p + "grassmann.plu.weight"], W[p + "grassmann.plu.bias"])
        return gate(W, p, h, g * (count > 0))
