"""The mixers as the C library's registry describes them: `bin/info --mixers
--json` (docs/programs.md), read once per model and kept for the process.

The harnesses know a mixer only through this module: its name, what it is in
one line, its options (bin/train's option, the config JSON's key, the key an
architecture gives it, its kind, bounds and default, the one that sizes the
layer, what a model that sets it is called), and at a model each layer's
tensors, parameters, state floats per sequence and FLOPs per token. No
mixer's name, option or formula is written in harness/ but in the mixer's
own PyTorch reference (harness/mixers/NAME.py); tests/house/house.py checks. A
name the registry does not have is one line and exit 2 (base.die), never
another mixer's branch.

A model is given as bin/train's model options (describe(args)) or as a
checkpoint's config JSON (describe(config=cfg)); describe() alone is the
registry at bin/train's default model, which is where the options, the
names and the about lines are read."""
import functools
import json
import os
import subprocess

from harness import base

HYBRID = "hybrid"  # the family of an architecture whose layers are of more than one family


def info_command():
    """bin/info's path: read where it is asked for (tests point BIN elsewhere)."""
    return os.path.join(base.BIN, "info")


@functools.lru_cache(maxsize=None)
def _describe(args, config_text):
    cmd = [info_command(), "--mixers", "--json"] + list(args) + (["-"] if config_text is not None else [])
    try:
        p = subprocess.run(cmd, input=config_text, capture_output=True, text=True)
    except OSError as e:
        base.die(f"cannot run {cmd[0]} (make builds it): {e.strerror}")
    if p.returncode != 0:
        lines = p.stderr.strip().splitlines()
        raise ValueError(lines[-1].split("error: ", 1)[-1] if lines else f"bin/info exited {p.returncode}")
    try:
        return json.loads(p.stdout)
    except ValueError:
        base.die(f"{cmd[0]} --mixers --json printed no JSON: make, then try again")


def describe(args=(), config=None, what=None):
    """bin/info --mixers --json at the model of bin/train's options `args`, or of a checkpoint's config
    (a dict), as a dict: {"model", "mixers", "layers"}. Each is asked once per process. A model bin/info
    refuses dies with its line, after `what` (the harness's option or item that asked for it)."""
    try:
        return _describe(tuple(str(a) for a in args), None if config is None else json.dumps(config, sort_keys=True))
    except ValueError as e:
        base.die(f"{what}: {e}" if what else str(e))


def refusal(args):
    """Why bin/info refuses the model of bin/train's options `args` (its line), or None."""
    try:
        _describe(tuple(str(a) for a in args), None)
    except ValueError as e:
        return str(e)
    return None


def mixers():
    """Every registered mixer, in the registry's order: {name, about, options, ...}."""
    return describe()["mixers"]


def names():
    return [m["name"] for m in mixers()]


def known_text():
    """'a, b or c': the registered names, for messages."""
    n = names()
    return n[0] if len(n) == 1 else ", ".join(n[:-1]) + " or " + n[-1]


def check_names(mixer_names, what):
    """Dies with one line naming the first name that is not a registered mixer."""
    for m in mixer_names:
        if m not in names():
            base.die(f"{what}: '{m}' is not a registered mixer (bin/info --mixers: {known_text()})")


def options(of=None):
    """Every mixer's options (of: only those of these mixers), each with its mixer's name under "mixer"."""
    return [dict(o, mixer=m["name"]) for m in mixers() if of is None or m["name"] in of for o in m["options"]]


def arch_options(of=None):
    """The options an architecture may give (those with an arch_key)."""
    return [o for o in options(of) if o["arch_key"]]


def size_knob(mixer_names):
    """The option that sizes an architecture of these layers' mixers (the first layer's that has one),
    which a size match varies; None when none has one."""
    for m in mixer_names:
        for o in options([m]):
            if o["size_knob"]:
                return o
    return None


def families():
    """Every family an architecture may be of: each mixer, what a model that sets one of its options is
    called, and HYBRID."""
    return names() + [o["family"] for o in options() if o["family"]] + [HYBRID]


def same_value(option, a, b):
    """Whether two values of an option (as text, numbers or None: its default) are the same setting."""
    norm = lambda v: str(option["default"] if v is None else v)
    if option["kind"] == "text":
        return norm(a) == norm(b)
    return float(norm(a)) == float(norm(b))


def label(name, row):
    """How the reports name an architecture's runs from a row holding its options by their JSON keys:
    'outer-m (rank 22, outer)', 'swa (window 17)': the size knob always, every other option where it is
    not its default (a text option by its value alone)."""
    parts = []
    for o in arch_options():
        v = row.get(o["json_key"])
        if v is None or v == "" or (not o["size_knob"] and same_value(o, v, None)):
            continue
        parts.append(str(v) if o["kind"] == "text" else f"{o['arch_key']} {v}")
    return name + (f" ({', '.join(parts)})" if parts else "")


def state_floats(args):
    """The state floats per sequence of the model of bin/train's options `args`, all its layers."""
    return sum(layer["state_floats"] for layer in describe(args)["layers"])


# ---- the harnesses' own options for the mixers' ----------------------------------------

def add_options(ap, knob_help="", group=None):
    """An option of the harness for every mixer option (its bin/train name, default: not given), each
    passed to every run's bin/train; the size knob's, with knob_help, instead sets every architecture's
    that gives none of its own (no match). The values are checked by bin/info (check_options)."""
    where = group or ap.add_argument_group("the mixers' options (bin/info --mixers), for every run")
    for o in options():
        text = o["help"].replace("\n", " ").replace("%", "%%")
        where.add_argument("--" + o["name"], metavar=o["value"], default=None,
                           help=f"{o['mixer']}: {text}" + (f"; {knob_help}" if o["size_knob"] else ""))


def given(a):
    """{option: value} of the mixers' options given to the harness (add_options), as text."""
    return {o["name"]: str(getattr(a, o["name"].replace("-", "_")))
            for o in options() if getattr(a, o["name"].replace("-", "_"), None) is not None}


def given_args(a, knob=False):
    """bin/train's options for the mixers' options given, the size knobs' only with knob."""
    knobs = {o["name"] for o in options() if o["size_knob"]}
    return [x for k, v in given(a).items() if knob or k not in knobs for x in ("--" + k, v)]


def fixed_sizes(a):
    """{size knob's option name: value} of the size knobs given to the harness for every architecture
    (0: not fixed, matched)."""
    return {o["name"]: int(v) for o in options() if o["size_knob"]
            for v in [given(a).get(o["name"])] if v not in (None, "0")}


def check_options(a, shape):
    """Dies with bin/info's line, before any work, where the mixers' options given do not make a model
    with bin/train's shape options `shape`."""
    why = refusal(shape + given_args(a, knob=True))
    if why:
        base.die(why)


def settings_text(a):
    """'--OPTION VALUE ...' for the mixers' options given (what every run had), or their defaults."""
    g = given_args(a, knob=True)
    return " ".join(g) if g else "the mixers' defaults"
