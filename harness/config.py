"""--config FILE for the harnesses: bin/train's experiment file (JSON, its options by their long names)
read into a harness's defaults, each value through the same type and choice checks as the command
line would put it, so that a sweep trains the file's model and never something the file did not say.

As bin/train reads the file: null and false leave an option at its default, true turns a switch on,
a number or a string is the option's value. A harness switch (store_true) also takes 0 and 1 and the
strings "0", "1", "false", "true", "no", "yes", "off", "on" (a run folder's config.json holds
"keep-checkpoints": 0, which is no). An option given more than once (--budget) takes a string or a
list of them. Anything else (true for an option with a value, a number where a list belongs, a
value outside the option's choices or type) is refused in one line, as is a file that is not a
regular file of at most MAX_BYTES holding one JSON object."""
import argparse
import json

from harness.base import die
from harness.files import read_input

MAX_BYTES = 1 << 20  # an experiment file is a few hundred bytes
# bin/train's experiment-file keys a harness does not take as its own, though it has an option of
# that name: bin/train's --out is a checkpoint, a harness's a folder.
CONFIG_NOT_TAKEN = ("out", "log", "run", "resume", "config", "print-config")
YES = ("1", "true", "yes", "on")
NO = ("0", "false", "no", "off")


class Refused(ValueError):
    """Why a key's value is refused; take_config says where."""


def shown(value):
    text = json.dumps(value) if not isinstance(value, float) or value == value else "NaN"
    return text if len(text) <= 40 else text[:40] + "..."


def is_switch(action):
    return isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction))


def text_of(value):
    """A JSON number or string as the command line would give it; Refused for anything else."""
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        raise Refused("takes a value: a number or a string")
    if isinstance(value, float):
        return repr(value)
    return str(value)


def converted(action, text):
    """text as the command line converts it: the option's type, then its choices."""
    try:
        value = action.type(text) if action.type else text
    except (ValueError, TypeError, argparse.ArgumentTypeError):
        kind = getattr(action.type, "__name__", "value")
        raise Refused(f"{text!r} is not a valid {'number' if kind in ('int', 'float') else kind}") from None
    if action.choices is not None and value not in action.choices:
        raise Refused(f"must be one of {', '.join(map(str, action.choices))} (got {shown(value)})")
    return value


def switch(value):
    """A switch's JSON value: True, False, or None (null: its default); Refused for anything else."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return value == 1
    if isinstance(value, str) and value.strip().lower() in YES + NO:
        return value.strip().lower() in YES
    raise Refused(f"is a switch: true or false (got {shown(value)})")


def value_of(action, value):
    """The default a key's JSON value gives its option; None: leave it at its default."""
    if is_switch(action):
        on = switch(value)
        return None if on is None else action.const if on else not action.const
    if value is None or value is False:
        return None  # bin/train's reading: the option at its default
    if isinstance(action, argparse._AppendAction):
        items = value if isinstance(value, list) else [value] if isinstance(value, str) else None
        if items is None:
            raise Refused(f"takes a string or a list of strings (got {shown(value)})")
        return [converted(action, text_of(v)) for v in items]
    if isinstance(value, (list, dict)):
        raise Refused(f"takes one value, a number or a string (got {shown(value)})")
    return converted(action, text_of(value))


def read_config(path):
    """The experiment file at path as a dict; dies with one line where it is not one."""
    from harness.results import Invalid, parse_json
    data = read_input(path, MAX_BYTES, f"--config '{path}'")
    try:
        cfg = parse_json(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        die(f"--config '{path}': not UTF-8 text (byte {e.start})")
    except Invalid as e:
        die(f"--config '{path}': {e}")
    if not isinstance(cfg, dict):
        die(f"--config '{path}': not a JSON object of options")
    return cfg


def take_config(ap, argv=None):
    """--config FILE: the keys this harness has an option for become that option's default (the
    command line still wins); the others (the mixer, the budget: the harness sets those per run) are
    named once as not used. Dies with one line on a file or a value it refuses."""
    ap.add_argument("--config", metavar="FILE",
                    help="bin/train's experiment file (JSON): its keys that are options here become their "
                         "defaults; options given win")
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config")
    path = pre.parse_known_args(argv)[0].config
    if path is None:
        return
    cfg = read_config(path)
    actions = {s[2:]: x for x in ap._actions for s in x.option_strings if s.startswith("--")}
    used, unused = {}, []
    for key, value in cfg.items():
        action = actions.get(key)
        if key in CONFIG_NOT_TAKEN or action is None or action.dest == "help":
            unused.append(key)
            continue
        try:
            v = value_of(action, value)
        except Refused as e:
            die(f"--config '{path}': '{key}' {e}")
        if v is not None:
            used[action.dest] = v
    ap.set_defaults(**used)
    print(f"{ap.prog}: --config {path}: " + (", ".join(f"--{k.replace('_', '-')} {v}" for k, v in used.items())
                                            or "no option of this harness") +
          (f"; not used here: {', '.join(unused)}" if unused else ""), flush=True)
