"""Sweeps made of run folders. Every run of a sweep (make compare, make
paper's compare per recipe, make probe and its Zoology protocol) trains
into a folder of its own, OUT/NAME (bin/train --run: its checkpoint, best
checkpoint, logs and config.json), so that bin/info --list OUT lists the
sweep's runs and harness.runs_page draws them. Once the run is scored, the
sweep writes what it made of it beside bin/train's files:
OUT/NAME/scores.json. When a sweep starts it records every run's bin/train
command in OUT/sweep.json.

So a stopped sweep can be finished (--resume): a run with its scores is
kept as it is; a run folder with a checkpoint and no scores was stopped
(bin/train saves its checkpoint when told to stop) and is continued
exactly, bin/train --resume OUT/NAME, or only scored where it had trained
to its end; one with nothing to continue (stopped before its first
checkpoint, or a time budget's, which bin/train does not resume) is trained
again from its start. A finished sweep thus ends as one uninterrupted
sweep would. --resume and --report-only refuse a sweep recorded with other
options in one line; without --resume, a sweep refuses to start where a
run's folder is there already (a finished run is never trained over)."""
import json
import os
import shutil

from harness.common import BIN, die, run
from harness.files import output_text
from harness.results import ListOf, MapOf, Obj, Text, load_json

SCORES = "scores.json"
PLAN = "sweep.json"
MARKER = ".lm-run"  # bin/train's mark of a run folder (docs/programs.md, run folders)
PLAN_SCHEMA = Obj({"runs": MapOf(r"[A-Za-z0-9._-]{1,200}", ListOf(Text(max_len=100000)), min_len=1),
                   "scoring": ListOf(Text(max_len=100000), optional=True)})


def check_fresh(out, names):
    """Dies with one line, before any work, where a run of this sweep has a folder in out already."""
    for name in names:
        if os.path.lexists(os.path.join(out, name)):
            die(f"--out '{out}' holds '{name}' already, a run of an earlier sweep: --resume finishes that sweep "
                "(given the options it was started with), or give another --out")


def recorded(args, folder):
    """A run's bin/train arguments as sweep.json records them: the run folder as RUN and the programs by
    their names, so that the record does not depend on where --out and the checkout were reached from."""
    return ["RUN" if x == folder else "bin/" + os.path.basename(x) if os.path.dirname(x) == BIN else str(x)
            for x in args]


def write_plan(out, plan, scoring=()):
    """OUT/sweep.json: {name: the run's recorded bin/train arguments}, and what the sweep scores them with
    (scoring: a list of strings, compared as the runs' commands are)."""
    with output_text(os.path.join(out, PLAN)) as f:
        json.dump({"runs": plan, "scoring": list(scoring)}, f, indent=1)
        f.write("\n")


def first_difference(old, new):
    """The first option whose value differs between two argument lists: 'OPTION OLD (this command: NEW)'."""
    pairs = lambda args: {args[i]: args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("--") else ""
                          for i in range(len(args)) if args[i].startswith("--")}
    a, b = pairs(old), pairs(new)
    for key in list(a) + [k for k in b if k not in a]:
        if a.get(key) != b.get(key):
            return f"{key} {a.get(key, '(not given)')} (this command: {b.get(key, 'not given')})"
    return f"{' '.join(old)} (this command: {' '.join(new)})"


def check_plan(out, plan, what, scoring=()):
    """Dies with one line unless OUT/sweep.json records exactly this plan's runs and commands, and its
    scoring: what (--resume, --report-only) reads only a sweep of the options it was started with."""
    path = os.path.join(out, PLAN)
    if not os.path.lexists(path):
        die(f"{what}: '{out}' has no {PLAN}: no sweep was started there (give the --out of one)")
    record = load_json(path, PLAN_SCHEMA)
    if (record.get("scoring") or []) != list(scoring):
        die(f"{what}: {path}: the sweep's runs were scored with {' '.join(record.get('scoring') or []) or 'nothing more'} "
            f"(this command: {' '.join(scoring) or 'nothing more'}): give the options the sweep was started with")
    old = record["runs"]
    for name, args in plan.items():
        if name not in old:
            die(f"{what}: the sweep in '{out}' has no run {name}: give the options it was started with "
                f"({len(old)} runs: {', '.join(list(old)[:3])}{', ...' if len(old) > 3 else ''})")
        if old[name] != args:
            die(f"{what}: {path}: run {name} was started with {first_difference(old[name], args)}: give the "
                "options the sweep was started with, or another --out")
    extra = [name for name in old if name not in plan]
    if extra:
        die(f"{what}: the sweep in '{out}' has runs this command does not ({extra[0]}, ...): give the options it "
            "was started with")


class Record:
    """OUT/sweep.json of a sweep that may grow (make probe, the Zoology protocol: --resume may add cells,
    widths or runs to the sweep in OUT): its runs' commands so far, kept across a --resume (else started
    anew); add() dies with one line where a run is planned with other options than it was recorded with."""

    def __init__(self, out, resume):
        self.out, path = out, os.path.join(out, PLAN)
        self.runs = load_json(path, PLAN_SCHEMA)["runs"] if resume and os.path.lexists(path) else {}

    def add(self, plan):
        for name, args in plan.items():
            if name in self.runs and self.runs[name] != args:
                die(f"--resume: {os.path.join(self.out, PLAN)}: run {name} was started with "
                    f"{first_difference(self.runs[name], args)}: give the options the sweep was started with, or "
                    "another --out")
        self.runs.update(plan)
        write_plan(self.out, self.runs)


def finished(folder):
    """Whether the run in folder was trained and scored (its scores.json is there)."""
    return os.path.isfile(os.path.join(folder, SCORES))


def resume_point(folder, continuable=True):
    """Where a sweep's --resume takes up the run in folder, not yet scored: the step of its checkpoint, to
    continue from (bin/info --json), or None to train it from its start, its folder (a stopped run's, by
    bin/train's marker) removed first: nothing there yet, no checkpoint to continue, or not continuable (a
    time budget's). Dies where something else is in the way."""
    if not os.path.lexists(folder):
        return None
    if not os.path.isdir(folder) or os.path.islink(folder) or not os.path.exists(os.path.join(folder, MARKER)):
        die(f"'{folder}' is in the way of a run of this sweep and is no run folder (bin/train --run): move it")
    info = run([os.path.join(BIN, "info"), folder, "--json"]) if continuable else None
    step = None
    if info is not None and info.status == 0:
        try:
            found = json.loads(info.out)
            step = found.get("step") if found.get("resumable") else None
        except (ValueError, AttributeError):
            step = None
    if isinstance(step, int):
        return step
    shutil.rmtree(folder)
    return None


def write_scores(folder, scores):
    """OUT/NAME/scores.json: what the sweep made of the run (written whole, or not at all)."""
    with output_text(os.path.join(folder, SCORES)) as f:
        json.dump(scores, f)
        f.write("\n")


def read_scores(folder, schema):
    """A finished run's scores.json, checked against schema (one line and exit 2 if it is not)."""
    return load_json(os.path.join(folder, SCORES), schema)
