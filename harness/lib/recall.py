"""What make probe and its Zoology protocol share: the positions an
architecture is probed with, its size option, bin/train's command for one
recall-probe run, and training it into its run folder (or, with --resume,
continuing it: harness/lib/runfolders.py) and scoring its answers."""
import os
import time

from harness.common import BIN, output_of, run_ok
from harness.experiments import default
from harness.lib import runfolders
from harness.results import Obj


def size_args(arch):
    """bin/train's option for an architecture's size (harness.archs.size_archs), or none."""
    return ["--" + arch["knob"]["name"], str(arch["size"])] if arch["size"] else []


def positions(pos, mixers):
    """--pos for an architecture of these layers' mixers: pos as given, or with auto the positions
    experiments/defaults.json gives a model whose every layer has one mixer (probe.positions), else
    learned."""
    if pos != "auto":
        return pos
    return default("probe", "positions").get(mixers[0], "learned") if len(set(mixers)) == 1 else "learned"



def run_name(*parts):
    """A run's folder name: its parts joined by '_', without the ',' and '^' a list of mixers may hold."""
    return "_".join(str(p) for p in parts).replace(",", "-").replace("^", "")


def train_command(mixers, L, batch_tokens, steps, lr, min_lr, warmup, seed, threads, shared, extra=()):
    """bin/train's command for one recall-probe run (make probe, and its
    --zoology protocol) of sequences of length L, but its run folder and data:
    every window one sequence, batch_tokens / L of them per step, no weight
    decay, no validation during training (bin/eval scores the answers after);
    extra: bin/train options after the rest (the architecture's size)."""
    args = [os.path.join(BIN, "train"), "--mixer", ",".join(mixers), "--window-align", str(L),
            "--batch-size", str(max(1, batch_tokens // L)), "--max-iters", str(steps), "--lr", str(lr),
            "--min-lr", str(min_lr), "--warmup-iters", str(warmup), "--weight-decay", "0", "--eval-interval", "0",
            "--eval-iters", "2", "--log-interval", "1000000", "--seed", str(seed), "--threads", str(threads)] + shared
    return args + list(extra)


def train_and_score(folder, args, data, steps, threads, resume, stage=None):
    """Trains one recall-probe run into its run folder (bin/train --run; args: train_command's) on data,
    in two stages where stage = (the first stage's data, its steps): stopped there (--stop-at), then resumed
    on data. With resume, a run a stopped sweep left in folder is continued exactly where it stopped
    (harness/lib/runfolders.py). Then bin/eval scores the marked answers of data's val split. Returns
    (bin/eval's JSON, the seconds it trained)."""
    train = os.path.join(BIN, "train")
    start = runfolders.resume_point(folder) if resume else None
    t0 = time.time()
    if stage:  # the first stage stops at its steps; the second resumes it on the full task
        first, stop = stage
        if start is None:
            output_of(args + ["--run", folder, "--data", first, "--stop-at", str(stop)], live=True)
            start = stop
        elif start < stop:
            output_of([train, "--resume", folder, "--stop-at", str(stop), "--threads", str(threads)], live=True)
            start = stop
        if start < steps:
            output_of([train, "--resume", folder, "--data", data, "--threads", str(threads)], live=True)
    elif start is None:
        output_of(args + ["--run", folder, "--data", data], live=True)
    elif start < steps:
        output_of([train, "--resume", folder, "--threads", str(threads)], live=True)
    secs = time.time() - t0
    ev = run_ok([os.path.join(BIN, "eval"), "--model", os.path.join(folder, "ckpt"), "--data", data, "--json",
                 "--threads", str(threads)], status=2).json()
    return ev, secs


def row_schema(rows_schema):
    """OUT/NAME/scores.json of a recall-probe run: {"row": its row, as the sweep's results file lists it}."""
    return Obj({"row": rows_schema.item})


def kept_row(folder, rows_schema):
    """The row of a run a sweep finished before (its scores.json), or None."""
    if not runfolders.finished(folder):
        return None
    return runfolders.read_scores(folder, row_schema(rows_schema))["row"]
