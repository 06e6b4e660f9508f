"""make compare's runs: what names them and their folders (stem), the budgets,
compare.csv's columns as its readers check them, and the Harness that
trains one run into its run folder with bin/train (or, with --resume,
continues or keeps it: harness/lib/runfolders.py), scores its final
checkpoint with bin/eval (val and test, and the --evals tasks) and makes
its row of what the folder then holds: the same row for a run trained at
once, continued after a stop, or read back by --report-only."""
import concurrent.futures
import os
import shlex
import threading
import time

from harness import registry
from harness.common import BIN, Sweep, die, fit_warmup, output_of, run_ok
from harness.lib import evals as eval_tasks, runfolders
from harness.results import Int, ListOf, Mixers, Name, Num, Obj, Text, arch_option_fields, read_train_log


def csv_columns():
    """compare.csv as its readers (harness.paper) check it: the columns they use, one row per run; an
    architecture's options by their JSON keys (the registry's; a file written before an option has none
    of its column)."""
    return {"arch": Name(), "budget": Text(r"(tokens|seconds):[0-9][0-9.eE+-]*"), "seed": Int(0),
            "params": Int(1), "tokens": Int(0), "train_seconds": Num(0), "tok_s": Num(0, lo_open=True),
            "val_loss": Num(0), "val_ppl": Num(0, lo_open=True), "test_ppl": Num(0, lo_open=True),
            "mixers": Mixers(), **arch_option_fields(), "load": Num(0, optional=True), "cores": Int(1, optional=True),
            **{k: Num(0, lo_open=True, optional=True) for k in ("val_bpb", "val_word_ppl", "test_bpb", "test_word_ppl")}}


# compare.csv's columns, in order (then the mixers, the precision, the per-text ones, the evaluations' and the
# architectures' options); the timing columns differ between two runs of the same sweep, the others do not.
CSV_KEYS = ["arch", "budget", "seed", "params", "steps", "tokens", "train_seconds", "wall", "tok_s", "load", "cores",
            "val_loss", "val_ppl", "test_loss", "test_ppl", "recall_loss", "other_loss", "recall_tokens", "other_tokens"]
TIMING = ("train_seconds", "wall", "tok_s", "load")
PER_TEXT = ["val_bpb", "val_word_ppl", "test_bpb", "test_word_ppl"]


CSV_RUN = ("arch", "budget", "seed")  # what names a run: no two rows may agree on it


# What compare writes in --out (harness/files.py checks each one there before any work): its reports, plots
# and their data, and the sweep's record (each run's folder is bin/train's, written by its own rule).
OUTPUTS = ("compare.md", "compare.csv", "compare.html", "ablation.md", "ablation.csv", "*.png", "*.dat",
           runfolders.PLAN)


DATA_FILES = ("train.bin", "val.bin", "test.bin", "tokenizer.txt", "tokenizer.json")


def stem(tag):
    """The name of a run's folder (OUT/STEM): its tag with ',' and '^' left out."""
    return tag.replace(",", "-").replace("^", "")


def check_stems(tags, what="--archs"):
    """Dies with one line, before any run, where two runs' tags have one file-name stem (`M,N` and
    `M-N=M,N`): the second would overwrite the first, or wait on its lock."""
    seen = {}
    for tag in tags:
        other = seen.setdefault(stem(tag), tag)
        if other != tag:
            die(f"{what}: the runs '{other}' and '{tag}' would train into the same folder ({stem(tag)}): "
                "name one otherwise (NAME=...)")


def parse_budget(text):
    kind, _, value = text.partition(":")
    try:
        v = float(value)
    except ValueError:
        v = -1
    if kind not in ("tokens", "seconds") or not 0 < v < 1e15:  # NaN and inf fail this too
        die(f"--budget must be tokens:N or seconds:S with a positive number (got '{text}')")
    return (kind, int(v) if kind == "tokens" else v)


def split_schema():
    """What scores.json keeps of bin/eval's JSON for a split, as read back."""
    return Obj({"loss": Num(0), "perplexity": Num(0, lo_open=True),
                "split_recall": Obj({"recall_loss": Num(0, optional=True), "other_loss": Num(0, optional=True),
                                     "recall_tokens": Int(0), "other_tokens": Int(0)}),
                "by_position": Obj({"loss": ListOf(Num(0, optional=True))}),
                "bits_per_byte": Num(0, optional=True), "word_perplexity": Num(0, optional=True)})


def scores_schema(evals):
    """OUT/NAME/scores.json as --resume and --report-only read it back."""
    return Obj({"val": split_schema(), "test": split_schema(), "evals": eval_tasks.schema(evals),
                "load": Num(0), "cores": Int(1), "wall": Num(0)})


class Load:
    """The machine's 1-minute load average while a run trains, sampled every `every` seconds (and at its
    start and end): how busy the machine was beside the run's tokens/s."""

    def __init__(self, every=5.0):
        self.every, self.samples, self.done = every, [os.getloadavg()[0]], threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def sample(self):
        while not self.done.wait(self.every):
            self.samples.append(os.getloadavg()[0])

    def stop(self):
        """The mean of the samples."""
        self.done.set()
        self.thread.join()
        self.samples.append(os.getloadavg()[0])
        return sum(self.samples) / len(self.samples)


class Harness:
    def __init__(self, a, evals=()):
        self.a, self.evals = a, list(evals)
        self.shared = ["--n-layer", str(a.n_layer), "--n-head", str(a.n_head), "--n-embd", str(a.n_embd),
                       "--block-size", str(a.block_size), "--dropout", str(a.dropout), "--norm", a.norm]
        self.shared += registry.given_args(a)  # the mixers' options given, but the size knobs (per architecture)
        if getattr(a, "recipe", None):
            self.shared += ["--recipe", a.recipe]
        # after the recipe, so that they win (bin/train: the last one given); an ablation variant's come later still
        self.shared += shlex.split(getattr(a, "train_args", None) or "")
        self.scaled = a.warmup_scaled = {}  # budget -> the warm-up its runs got, where --warmup-iters did not fit

    def train_args(self, arch, seed, folder, eval_interval, warmup=None):
        """bin/train's command for one run into its run folder, but its budget: every run in --precision's
        products."""
        a = self.a
        warmup = a.warmup_iters if warmup is None else warmup
        args = [os.path.join(BIN, "train"), "--data", a.data, "--run", folder] + self.shared + [
            "--mixer", ",".join(arch["mixers"]), "--batch-size", str(a.batch_size), "--lr", str(a.lr), "--min-lr", str(a.min_lr),
            "--warmup-iters", str(warmup), "--seed", str(seed), "--eval-interval", str(eval_interval),
            "--eval-iters", str(a.eval_iters), "--log-interval", "1000000", "--threads", str(a.threads),
            "--precision", a.precision]
        if arch.get("size"):
            args += ["--" + arch["knob"]["name"], str(arch["size"])]
        # the architecture's own options (harness/archs.py), then an ablation variant's, after --recipe
        return args + arch.get("args", []) + arch.get("extra", [])

    def warmup(self, steps, budget):
        """The warm-up of a run of `steps` steps (fit_warmup), said once per budget where it is scaled."""
        w = fit_warmup(self.a.warmup_iters, steps)
        if w != self.a.warmup_iters and budget not in self.scaled:
            print(f"compare: --warmup-iters {self.a.warmup_iters} exceeds the {steps} steps of a {budget} run: "
                  f"its runs warm up over {w} (a tenth of their steps)", flush=True)
        if w != self.a.warmup_iters:
            self.scaled[budget] = w
        return w

    def command(self, arch, budget, seed, name):
        """(the run's folder, its bin/train command, its steps: None under a time budget)."""
        a = self.a
        folder = os.path.join(a.out, name)
        kind, value = budget
        if kind == "tokens":
            steps = max(1, value // (a.batch_size * a.block_size))
            limit, eval_interval = ["--max-iters", str(steps)], max(1, steps // a.curve_points)
            warmup = self.warmup(steps, f"{kind}:{value}")
        else:
            steps, warmup = None, a.warmup_iters
            limit, eval_interval = ["--max-iters", "100000000", "--max-seconds", str(value)], a.seconds_eval_interval
        return folder, self.train_args(arch, seed, folder, eval_interval, warmup) + limit, steps

    def score(self, folder):
        """bin/eval of the run's final checkpoint on val and test (the loss by position and the recall
        split), and on each --evals task."""
        a, ckpt = self.a, os.path.join(folder, "ckpt")
        ev = {split: run_ok([os.path.join(BIN, "eval"), "--model", ckpt, "--data", a.data, "--split", split, "--json",
                             "--word-ppl", "--by-position", "--split-recall", str(a.recall_n), "--threads",
                             str(a.threads)], status=2).json() for split in ("val", "test")}
        return dict(ev, evals=eval_tasks.score(ckpt, self.evals, a.threads))

    def train(self, arch, budget, seed, name, resume=False):
        """Trains one run into OUT/NAME and scores it (scores.json), or with resume finishes what a stopped
        sweep left of it (harness/lib/runfolders.py); its row (row())."""
        a = self.a
        folder, args, steps = self.command(arch, budget, seed, name)
        if not (resume and runfolders.finished(folder)):
            start = runfolders.resume_point(folder, continuable=steps is not None) if resume else None
            live = getattr(a, "jobs", 1) == 1  # several at once: their progress lines would interleave
            t0, load = time.time(), Load()
            if start is None:
                output_of(args, live=live)
            elif start < steps:  # stopped while training: continued exactly, on the threads it trained with
                output_of([os.path.join(BIN, "train"), "--resume", folder, "--threads", str(a.threads)], live=live)
            wall, mean_load = time.time() - t0, load.stop()
            runfolders.write_scores(folder, dict(self.score(folder), load=round(mean_load, 2),
                                                 cores=os.cpu_count() or 1, wall=round(wall, 3)))
        return self.row(arch, budget, seed, folder)

    def row(self, arch, budget, seed, folder):
        """A run's row: compare.csv's columns, its val curve (tokens, seconds of training steps, val loss),
        its loss by position, its evaluations, from its log (OUT/NAME/log.csv) and its scores.json alone."""
        kind, value = budget
        ev = runfolders.read_scores(folder, scores_schema(self.evals))
        steps_rows = read_train_log(os.path.join(folder, "log.csv"))
        clock, curve = 0.0, []
        for r in steps_rows:
            if r["ms_per_step"] is not None:
                clock += r["ms_per_step"] / 1e3
            if r["val_loss"] is not None:
                curve.append((int(r["tokens"]), clock, r["val_loss"]))
        train_rows = [r for r in steps_rows if r["ms_per_step"] is not None]
        if not train_rows or clock <= 0:
            die(f"{os.path.join(folder, 'log.csv')}: no training step is logged")
        split_recall = ev["val"]["split_recall"]
        scores = os.path.join(folder, runfolders.SCORES)
        if split_recall["recall_tokens"] + split_recall["other_tokens"] < 1:
            die(f"{scores}: val: split_recall: no token scored (recall_tokens + other_tokens is 0)")
        if len(ev["val"]["by_position"]["loss"]) != self.a.block_size:
            die(f"{scores}: val: by_position: {len(ev['val']['by_position']['loss'])} positions, not the window's "
                f"{self.a.block_size}")
        return {"arch": arch["name"], "budget": f"{kind}:{value}", "seed": seed, "params": arch["params"],
                "steps": int(train_rows[-1]["step"]), "tokens": int(train_rows[-1]["tokens"]),
                "train_seconds": clock, "wall": ev["wall"], "tok_s": int(train_rows[-1]["tokens"]) / clock,
                "load": ev["load"], "cores": ev["cores"],
                "val_loss": ev["val"]["loss"], "val_ppl": ev["val"]["perplexity"],
                "test_loss": ev["test"]["loss"], "test_ppl": ev["test"]["perplexity"],
                **{k: split_recall[k] for k in ("recall_loss", "other_loss", "recall_tokens", "other_tokens")},
                "by_position": ev["val"]["by_position"]["loss"], "curve": curve, "log": steps_rows,
                # per byte and per word of the text: comparable across tokenizers (None where not known)
                **{f"{split}_{short}": ev[split].get(key) for split in ("val", "test")
                   for short, key in (("bpb", "bits_per_byte"), ("word_ppl", "word_perplexity"))},
                "evals": ev["evals"], "folder": folder,
                "unit": next(k for k in ev["val"] if k.startswith("bits_per_")).split("_")[-1]}


def run_plan(h, plan, label, who):
    """The rows of plan's runs, [(arch, budget, seed, name)], in its order: each trained into OUT/NAME by
    h (--jobs at once); with --resume the sweep in OUT finished, with --report-only only read back (the
    sweep's record checked first: harness/lib/runfolders.py). label(arch, budget, seed): a run's progress
    line; who: the program saying it."""
    a = h.a
    record = {name: runfolders.recorded(h.command(arch, budget, seed, name)[1], os.path.join(a.out, name))
              for arch, budget, seed, name in plan}
    done = [name for *_, name in plan if runfolders.finished(os.path.join(a.out, name))]
    scoring = ["--split-recall", str(a.recall_n)] + [f"--{kind} {name}={path}" for name, kind, path in h.evals]
    if a.report_only or a.resume:
        runfolders.check_plan(a.out, record, "--report-only" if a.report_only else "--resume", scoring)
    else:
        runfolders.check_fresh(a.out, list(record))
        runfolders.write_plan(a.out, record, scoring)
    if a.report_only:
        if len(done) < len(plan):
            missing = next(name for *_, name in plan if name not in done)
            die(f"--report-only: {len(plan) - len(done)} of the sweep's {len(plan)} runs have no scores yet "
                f"({missing} first): --resume finishes the sweep")
        return [h.row(arch, budget, seed, os.path.join(a.out, name)) for arch, budget, seed, name in plan]
    if a.resume:
        print(f"{who}: --resume: {len(done)} of the {len(plan)} runs finished before and kept, "
              f"{len(plan) - len(done)} to finish", flush=True)
    sweep = Sweep(len(plan))

    def one(job):
        arch, budget, seed, name = job
        said = f"{sweep.begin()}: " if a.jobs == 1 else ""  # side by side, the count is of runs done
        print(f"== {said}{label(arch, budget, seed)}{' (kept)' if name in done else ''}", flush=True)
        r = h.train(arch, budget, seed, name, resume=a.resume)
        end = "" if a.jobs == 1 else f" ({sweep.end()})"
        print(f"   {arch['label']}, seed {seed}: {r['steps']} steps, {r['tokens']:,} tokens in "
              f"{r['train_seconds']:.1f} s ({r['tok_s']:.0f} tok/s, load {r['load']:.1f} on {r['cores']} cores); "
              f"val loss {r['val_loss']:.4f}{end}", flush=True)
        return r

    if a.jobs == 1:
        return [one(job) for job in plan]
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:  # the rows keep the plan's order
        return list(pool.map(one, plan))
