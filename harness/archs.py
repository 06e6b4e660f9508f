"""The architectures the harnesses compare (--archs of make compare, make probe
and its --zoology protocol; make paper's own list): each a mixer per layer
and, optionally, mixer options of its own.

An architecture is written [NAME=]MIXERS[:KEY=VALUE]..., architectures
separated by spaces:

  MIXERS   a registered mixer for every layer (bin/info --mixers lists them)
           or one per layer joined by commas
  KEY=V    a mixer option of the architecture's own, by the key the registry
           gives it (bin/info --mixers: "architectures KEY="), for every
           layer whose mixer has that option; checked as bin/train checks it
  match=A  the value of the architecture's size knob (the option the
           registry marks as sizing the layer) whose parameter count is
           closest to that of the architecture named A, given earlier in
           the list

docs/compare.md has examples. An architecture with options must be named:
its name becomes part of file names and plots, so it may hold only
[A-Za-z0-9._-] (harness.results.name_problem). A key that no layer of the
architecture has is refused, as is anything else wrong, with one line
(common.die). size_archs gives each its size and exact parameter count
(bin/train --count-params), matched to the first's. Nothing here names a mixer: what an architecture may say comes
from the registry (harness/registry.py).
"""
import functools
import os

from harness import registry
from harness.common import BIN, die, output_of, run_ok
from harness.results import name_problem


def syntax():
    """The syntax as each harness's --help says it, with the registry's keys."""
    keys = ", ".join(sorted({f"{o['arch_key']}={o['value']} ({o['mixer']}: --{o['name']})"
                             for o in registry.arch_options()}))
    return ("each [NAME=]MIXERS[:KEY=VALUE]...: MIXERS a mixer (" + ", ".join(registry.names()) + ") or one per "
            "layer joined by commas; KEY one of a mixer's options, " + keys + ", or match=NAME (the size whose "
            "parameter count is closest to the earlier architecture NAME's). An architecture with options needs a "
            "NAME (letters, digits, '.', '_', '-'); examples in docs/compare.md")


class Arch:
    """One architecture: name, mixers (one per layer), its own options ({arch key: value as given}) and
    match (another architecture's name, or None)."""

    def __init__(self, name, mixers, options=None, match=None):
        self.name, self.mixers = name, list(mixers)
        self.options, self.match = dict(options or {}), match

    def option(self, key):
        """The registry's row of one of its keys (its first layer's mixer that has it)."""
        return next(o for m in self.mixers for o in registry.arch_options([m]) if o["arch_key"] == key)

    def knob(self):
        """The option that sizes it (registry.size_knob), or None."""
        return registry.size_knob(self.mixers)

    def size(self):
        """Its size knob's value as given (KEY=N), or None."""
        k = self.knob()
        return int(self.options[k["arch_key"]]) if k and k["arch_key"] in self.options else None

    def train_args(self):
        """bin/train's options for its own options, but its size (which the harness resolves: given,
        matched or the default)."""
        args = []
        for key, value in self.options.items():
            o = self.option(key)
            if not o["size_knob"]:
                args += ["--" + o["name"], value]
        return args

    def columns(self, size=None):
        """{JSON key: value} of every architecture option its mixers have: its own, the size (resolved:
        `size`), else the default; what the results files record of it."""
        out = {}
        for o in registry.arch_options(self.mixers):
            v = size if o["size_knob"] else self.options.get(o["arch_key"])
            v = o["default"] if v is None else v
            out.setdefault(o["json_key"], v if o["kind"] == "text" else int(v) if o["kind"] == "size" else float(v))
        return out

    def options_text(self):
        """'pair=outer:window=17': the options as given (match included), '' without any."""
        return ":".join([f"{k}={v}" for k, v in self.options.items()] +
                        ([f"match={self.match}"] if self.match else []))

    def family(self):
        """What the architecture is made of: its mixer, or what the registry calls a model that sets one
        of its options (not to its default), or registry.HYBRID for more than one."""
        kinds = set()
        for m in self.mixers:
            named = [o["family"] for o in registry.arch_options([m]) if o["family"] and o["arch_key"] in self.options
                     and not registry.same_value(o, self.options[o["arch_key"]], None)]
            kinds.add(named[0] if named else m)
        return kinds.pop() if len(kinds) == 1 else registry.HYBRID

    def __eq__(self, other):
        return isinstance(other, Arch) and vars(self) == vars(other)

    def __repr__(self):
        return f"Arch({self.name!r}, {self.mixers!r}{', ' + self.options_text() if self.options_text() else ''})"


def _value(option, value, item, what):
    """A number option's value checked against its bounds (text: bin/info checks it)."""
    key, kind = option["arch_key"], option["kind"]
    if kind == "text":
        return value
    whole = value.isascii() and value.isdigit()
    if kind == "size" and not whole:
        die(f"{what}: '{item}': {key}= must be a whole number (got '{value}')")
    try:
        number = float(value)
    except ValueError:
        die(f"{what}: '{item}': {key}= must be a number (got '{value}')")
    if not option["min"] <= number <= option["max"]:
        die(f"{what}: '{item}': {key}= must be from {option['min']} to {option['max']} (got '{value}')")
    return value


def parse_archs(text, n_layer, what="--archs"):
    """'M h=M,N,N,N s=M:KEY=V' -> [Arch], M and N registered mixers. A name becomes part of the runs' file
    names under --out and of the plots: name_problem says which it may be. Dies with one line on
    anything it cannot take, a value bin/train would refuse included (bin/info checks each)."""
    archs = []
    for item in text.split():
        head, *options = item.split(":")
        name, named, spec = head.rpartition("=")
        if named and name_problem(name):
            die(f"{what}: the name {name!r} {name_problem(name)}")
        mixers = spec.split(",")
        registry.check_names(mixers, f"{what}: '{item}'")
        if len(mixers) == 1:
            mixers = mixers * n_layer
        if len(mixers) != n_layer:
            die(f"{what}: '{item}' has {len(mixers)} layers but --n-layer is {n_layer}")
        if options and not named:
            die(f"{what}: '{item}' has options, so it needs a name (NAME={item}; letters, digits, '.', '_', '-')")
        arch = Arch(name or spec, mixers)
        keys = sorted({o["arch_key"] for o in registry.arch_options()} | {"match"})
        for option in options:
            key, eq, value = option.partition("=")
            if not eq or key not in keys:
                die(f"{what}: '{item}': '{option}' is not one of {', '.join(k + '=' for k in keys)}")
            if key in arch.options or (key == "match" and arch.match is not None):
                die(f"{what}: '{item}' gives {key}= twice")
            if key == "match":
                if value not in [a.name for a in archs]:
                    die(f"{what}: '{item}': match= must name an architecture given before it (got '{value}')")
                if arch.knob() is None:
                    die(f"{what}: '{item}' has no layer whose mixer has a size for match= to choose")
                arch.match = value
                continue
            if not any(o["arch_key"] == key for o in registry.arch_options(mixers)):
                owners = sorted({o["mixer"] for o in registry.arch_options() if o["arch_key"] == key})
                die(f"{what}: '{item}' has no {' or '.join(owners)} layer for {key}= to set")
            arch.options[key] = _value(arch.option(key), value, item, what)
        knob = arch.knob()
        if knob and knob["arch_key"] in arch.options and arch.match is not None:
            die(f"{what}: '{item}' gives both {knob['arch_key']}= and match=: one sets the size, the other chooses it")
        why = registry.refusal(["--n-layer", n_layer, "--mixer", ",".join(mixers)] + arch.train_args() +
                               (["--" + knob["name"], arch.options[knob["arch_key"]]]
                                if knob and knob["arch_key"] in arch.options else []))
        if why:
            die(f"{what}: '{item}': {why}")
        archs.append(arch)
    if not archs:
        die(f"{what} is empty")
    names = [a.name for a in archs]
    if len(set(names)) != len(names):
        die(f"{what}: two architectures have the same name (name them with NAME=...)")
    return archs


def closest_size(size, target, lo, hi):
    """The value in [lo, hi] whose size(value) is closest to target, by bisection (size grows with the
    value; each size asked once). Returns (value, size(value))."""
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


def lowest_size(knob, args):
    """The smallest value of the size knob that bin/info takes for the model of bin/train's options
    `args` (its bounds may allow values its checks refuse), within its bounds."""
    for v in range(int(knob["min"]), int(knob["max"]) + 1):
        if registry.refusal(list(args) + ["--" + knob["name"], v]) is None:
            return v
    die(f"no value of --{knob['name']} makes a model of {' '.join(map(str, args))}")


def count_params(data, shared, mixers, knob=None, size=None):
    """Exact parameter count from bin/train --count-params (shared: the model options), with the size
    knob `knob` (a registry option) at `size` where given."""
    args = shared + ["--mixer", ",".join(mixers)] + (["--" + knob["name"], str(size)] if knob and size else [])
    return int(output_of([os.path.join(BIN, "train"), "--data", data, "--count-params"] + args).strip())


def size_limit(knob, n_embd):
    """The largest size a match searches: n_embd (a size knob is a dimension of the layer's own, within
    its width: a larger one adds parameters and nothing the layer can express), within its bounds."""
    return max(int(knob["min"]), min(int(knob["max"]), n_embd))


def match_size(data, shared, mixers, knob, target, hi):
    """(size, count): the value of the size knob from its lowest bin/train takes to hi whose exact count is
    closest to target (counts grow with it), by bisection (archs.closest_size)."""
    lo = lowest_size(knob, shared + ["--mixer", ",".join(mixers)])
    return closest_size(lambda v: count_params(data, shared, mixers, knob, v), target, lo, max(lo, hi))


def size_archs(specs, data, shared, n_embd, fixed=None, say=None):
    """Each architecture (archs.Arch) with its size and exact parameter count (bin/train --count-params,
    with the architecture's own options), as the dicts the harness trains: name, mixers, knob (the
    registry's option that sizes it, or None), size, params, args (its bin/train options but the size),
    options (its own, as given), columns (what the results files record of its options), matched (the
    name whose count its size was matched to, or None), capped (the match stopped at size_limit), family,
    label. The size: the architecture's own; else the one whose count is closest to match='s; else
    fixed[knob's name] (the harness's option for the knob) where given, or the knob's default for the first
    architecture; else matched to the first. say(text): told each architecture's count as it is found."""
    out = []
    for spec in specs:
        own = shared + spec.train_args()
        knob, matched, capped = spec.knob(), None, False
        given = (fixed or {}).get(knob["name"]) if knob else None
        if knob is None:
            size, n = None, count_params(data, own, spec.mixers)
        elif spec.size() or spec.match is None and (not out or given):
            size = spec.size() or given or int(knob["default"])
            n = count_params(data, own, spec.mixers, knob, size)
        else:
            hi = size_limit(knob, n_embd)
            matched = spec.match or out[0]["name"]
            target = next(x["params"] for x in out if x["name"] == matched)
            size, n = match_size(data, own, spec.mixers, knob, target, hi)
            capped = size == hi and n < target
        columns = spec.columns(size)
        out.append({"name": spec.name, "mixers": spec.mixers, "knob": knob, "size": size, "params": n,
                    "args": spec.train_args(), "options": spec.options, "columns": columns, "matched": matched,
                    "capped": capped, "family": spec.family(), "label": registry.label(spec.name, columns)})
        if say:
            ref = out[0]
            gap = 100.0 * (n - ref["params"]) / ref["params"]
            say(f"{out[-1]['label']}: {n:,} parameters ({gap:+.2f}% vs {ref['label']})"
                + (f"; {knob['arch_key']} matched to {matched}'s {target:,}" +
                   (f", capped at n_embd {hi}" if capped else "") if matched and matched != ref["name"] else ""))
            if abs(gap) > 5:
                say(f"warning: {out[-1]['label']} differs in size from {ref['label']} by {gap:+.1f}%")
    return out


@functools.lru_cache(maxsize=1)
def train_help():
    r = run_ok([os.path.join(BIN, "train"), "--help"], status=2)
    return r.out + r.err


def train_takes(option):
    """Whether bin/train --help lists `option` (a newer option: one of a mixer's, say)."""
    return option in train_help()


def check_train_takes(specs, what="--archs"):
    """Dies with one line, before any work, where an architecture's option needs a bin/train option this
    bin/train has not."""
    for spec in specs:
        for flag in spec.train_args()[::2]:
            if not train_takes(flag):
                die(f"{what}: '{spec.name}' needs bin/train {flag}, which this bin/train has not (merge main and make)")

