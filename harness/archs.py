"""The architectures the harnesses compare (--archs of make compare, make probe
and its --zoology protocol; make paper's own list): each a mixer per layer
and, optionally, mixer options of its own.

An architecture is written [NAME=]MIXERS[:KEY=VALUE]..., architectures
separated by spaces:

  MIXERS   a mixer for every layer (attention, grassmann, gla) or one per
           layer joined by commas (attention,grassmann,grassmann,grassmann)
  pair=K   wedge | outer | sum: the Grassmann pair features (bin/train
           --grassmann-pair; wedge, the Pluecker coordinates, by default)
  rank=N   the Grassmann rank r, 2 to 1024 (bin/train --grassmann-rank)
  match=A  the Grassmann rank whose parameter count is closest to that of
           the architecture named A, given earlier in the list
  window=N attention sees the last N positions, itself included (bin/train
           --attn-window; 0 = all of them)

`swa=attention:window=17`, `outer=grassmann:pair=outer:rank=32`,
`outer-m=grassmann:pair=outer:match=grassmann`. An architecture with options
must be named: its name becomes part of file names and plots, so it may hold
only [A-Za-z0-9._-] (harness.results.name_problem). An option that no layer of
the architecture has (pair= without a Grassmann layer, window= without
attention) is refused, as is anything else wrong, with one line (common.die).
"""
from harness.common import die
from harness.results import MIXERS, name_problem

PAIRS = ("wedge", "outer", "sum")  # bin/train --grassmann-pair
FAMILIES = ("attention", "sliding-window attention", "gla", "grassmann", "hybrid")  # Arch.family
MAX_RANK = 1024    # bin/train's GRASSMANN_MAX_RANK
MAX_WINDOW = 16384  # bin/train --attn-window's largest

# Written into each harness's --help.
SYNTAX = ("each [NAME=]MIXERS[:KEY=VALUE]...: MIXERS a mixer (attention, grassmann, gla) or one per layer joined by "
          "commas; KEY pair=wedge|outer|sum (Grassmann pair features), rank=N (Grassmann rank), match=NAME (the "
          "Grassmann rank whose parameter count is closest to the earlier architecture NAME's), window=N (attention "
          "sees the last N positions, itself included; 0 = all). An architecture with options needs a NAME "
          "(letters, digits, '.', '_', '-'): 'attention swa=attention:window=17 outer=grassmann:pair=outer'")


class Arch:
    """One architecture: name, mixers (one per layer), and its own options (None where not given):
    pair, rank, match (another architecture's name), window."""

    def __init__(self, name, mixers, pair=None, rank=None, match=None, window=None):
        self.name, self.mixers = name, list(mixers)
        self.pair, self.rank, self.match, self.window = pair, rank, match, window

    def train_args(self):
        """bin/train's options for this architecture's own settings, but its rank (which the harness
        resolves: given, matched or its default)."""
        args = []
        if self.pair is not None:
            args += ["--grassmann-pair", self.pair]
        if self.window is not None:
            args += ["--attn-window", str(self.window)]
        return args

    def options_text(self):
        """'pair=outer:window=17': the options as given (rank and match included), '' without any."""
        return ":".join(f"{k}={v}" for k, v in (("pair", self.pair), ("rank", self.rank), ("match", self.match),
                                                 ("window", self.window)) if v is not None)

    def family(self):
        """What kind of mixer the architecture is made of: attention, sliding-window attention, gla,
        grassmann, or hybrid (more than one kind)."""
        kinds = {"sliding-window attention" if m == "attention" and self.window else m for m in self.mixers}
        return kinds.pop() if len(kinds) == 1 else "hybrid"

    def __eq__(self, other):
        return isinstance(other, Arch) and vars(self) == vars(other)

    def __repr__(self):
        return f"Arch({self.name!r}, {self.mixers!r}{', ' + self.options_text() if self.options_text() else ''})"


def label(name, rank=None, pair=None, window=None):
    """How the reports name an architecture's runs: 'outer-m (r=22, outer)', 'swa (window 17)' (the wedge,
    the default pair kind, unsaid)."""
    parts = ([f"r={rank}"] if rank else []) + ([pair] if pair not in (None, "wedge") else []) + (
        [f"window {window}"] if window else [])
    return name + (f" ({', '.join(parts)})" if parts else "")


def _number(key, value, lo, hi, item, what):
    if not (value.isascii() and value.isdigit()) or not lo <= int(value) <= hi:
        die(f"{what}: '{item}': {key}= must be a whole number from {lo} to {hi} (got '{value}')")
    return int(value)


def parse_archs(text, n_layer, what="--archs"):
    """'attention h=grassmann swa=attention:window=17' -> [Arch]. A name becomes part of the runs' file
    names under --out and of the plots: name_problem says which it may be. Dies with one line on
    anything it cannot take."""
    archs = []
    for item in text.split():
        head, *options = item.split(":")
        name, named, spec = head.rpartition("=")
        if named and name_problem(name):
            die(f"{what}: the name {name!r} {name_problem(name)}")
        mixers = spec.split(",")
        if any(m not in MIXERS for m in mixers):
            die(f"{what}: '{item}' names a mixer other than {', '.join(MIXERS[:-1])} or {MIXERS[-1]}")
        if len(mixers) == 1:
            mixers = mixers * n_layer
        if len(mixers) != n_layer:
            die(f"{what}: '{item}' has {len(mixers)} layers but --n-layer is {n_layer}")
        if options and not named:
            die(f"{what}: '{item}' has options, so it needs a name (NAME={item}; letters, digits, '.', '_', '-')")
        arch = Arch(name or spec, mixers)
        for option in options:
            key, eq, value = option.partition("=")
            if not eq or key not in ("pair", "rank", "match", "window"):
                die(f"{what}: '{item}': '{option}' is not one of pair=, rank=, match=, window=")
            if getattr(arch, key) is not None:
                die(f"{what}: '{item}' gives {key}= twice")
            if key in ("pair", "rank", "match") and "grassmann" not in mixers:
                die(f"{what}: '{item}' has no Grassmann layer for {key}= to set")
            if key == "window" and "attention" not in mixers:
                die(f"{what}: '{item}' has no attention layer for window= to set")
            if key == "pair":
                if value not in PAIRS:
                    die(f"{what}: '{item}': pair= must be {', '.join(PAIRS)} (got '{value}')")
                arch.pair = value
            elif key == "rank":
                arch.rank = _number(key, value, 2, MAX_RANK, item, what)
            elif key == "window":
                arch.window = _number(key, value, 0, MAX_WINDOW, item, what)
            else:
                if value not in [a.name for a in archs]:
                    die(f"{what}: '{item}': match= must name an architecture given before it (got '{value}')")
                arch.match = value
        if arch.rank is not None and arch.match is not None:
            die(f"{what}: '{item}' gives both rank= and match=: one sets the rank, the other chooses it")
        archs.append(arch)
    if not archs:
        die(f"{what} is empty")
    names = [a.name for a in archs]
    if len(set(names)) != len(names):
        die(f"{what}: two architectures have the same name (name them with NAME=...)")
    return archs


# ---- Grassmann parameters, by pair kind ---------------------------------------------

def pair_features(r, pair="wedge"):
    """The features a Grassmann layer of rank r computes from each (z_t, z_{t-d}): the Pluecker
    coordinates (wedge, r(r-1)/2), the normalised outer product (outer, r^2), or the sum (sum, r)."""
    return {"wedge": r * (r - 1) // 2, "outer": r * r, "sum": r}[pair]


def grassmann_layer_params(C, r, pair="wedge"):
    """A Grassmann layer's parameters at width C and rank r: W_red (r C + r), the feature projection
    (C F + C, F = pair_features), the gate (2 C C + C) and the LayerNorm (2 C)."""
    return r * C + r + C * pair_features(r, pair) + C + 2 * C * C + C + 2 * C


def closest_rank(size, target, lo=2, hi=256):
    """The rank in [lo, hi] whose size(rank) is closest to target, by bisection (size grows with the
    rank; each size asked once). Returns (rank, size(rank))."""
    seen = {}

    def count(r):
        if r not in seen:
            seen[r] = size(r)
        return seen[r]

    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if count(mid) <= target else (lo, mid)
    best = min((lo, hi), key=lambda r: (abs(count(r) - target), r))
    return best, count(best)
