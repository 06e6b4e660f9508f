"""make compare's runs: what names them and their files (stem), the budgets,
compare.csv's columns as its readers check them, and the Harness that
trains one run with bin/train and scores it with bin/eval."""
import os
import shlex
import time

from harness import registry
from harness.common import BIN, die, fit_warmup, output_of, partial, run_ok
from harness.results import Int, Mixers, Name, Num, Text, arch_option_fields, read_train_log


def csv_columns():
    """compare.csv as its readers (harness.paper) check it: the columns they use, one row per run; an
    architecture's options by their JSON keys (the registry's; a file written before an option has none
    of its column)."""
    return {"arch": Name(), "budget": Text(r"(tokens|seconds):[0-9][0-9.eE+-]*"), "seed": Int(0),
            "params": Int(1), "tokens": Int(0), "train_seconds": Num(0), "tok_s": Num(0, lo_open=True),
            "val_loss": Num(0), "val_ppl": Num(0, lo_open=True), "test_ppl": Num(0, lo_open=True),
            "mixers": Mixers(), **arch_option_fields(),
            **{k: Num(0, lo_open=True, optional=True) for k in ("val_bpb", "val_word_ppl", "test_bpb", "test_word_ppl")}}


CSV_RUN = ("arch", "budget", "seed")  # what names a run: no two rows may agree on it


# What compare writes in --out (harness/files.py checks each one there before any work): its reports,
# plots and their data, and each run's checkpoint and log (bin/train writes those, by its own rule).
OUTPUTS = ("compare.md", "compare.csv", "compare.html", "ablation.md", "ablation.csv", "*.png", "*.dat", "*.ckpt",
           "*.csv")


DATA_FILES = ("train.bin", "val.bin", "test.bin", "tokenizer.txt", "tokenizer.json")


def stem(tag):
    """The file-name stem of a run (OUT/STEM.ckpt, OUT/STEM.csv): its tag with ',' and '^' left out."""
    return tag.replace(",", "-").replace("^", "")


def check_stems(tags, what="--archs"):
    """Dies with one line, before any run, where two runs' tags have one file-name stem (`M,N` and
    `M-N=M,N`): the second would overwrite the first, or wait on its lock."""
    seen = {}
    for tag in tags:
        other = seen.setdefault(stem(tag), tag)
        if other != tag:
            die(f"{what}: the runs '{other}' and '{tag}' would write the same files ({stem(tag)}.ckpt, .csv): "
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


class Harness:
    def __init__(self, a):
        self.a = a
        self.shared = ["--n-layer", str(a.n_layer), "--n-head", str(a.n_head), "--n-embd", str(a.n_embd),
                       "--block-size", str(a.block_size), "--dropout", str(a.dropout), "--norm", a.norm]
        self.shared += registry.given_args(a)  # the mixers' options given, but the size knobs (per architecture)
        if getattr(a, "recipe", None):
            self.shared += ["--recipe", a.recipe]
        # after the recipe, so that they win (bin/train: the last one given); an ablation variant's come later still
        self.shared += shlex.split(getattr(a, "train_args", None) or "")
        self.scaled = a.warmup_scaled = {}  # budget -> the warm-up its runs got, where --warmup-iters did not fit

    def train_args(self, arch, seed, ckpt, log, eval_interval, warmup=None):
        """bin/train's command for one run, but its budget: every run in --precision's products."""
        a = self.a
        warmup = a.warmup_iters if warmup is None else warmup
        args = [os.path.join(BIN, "train"), "--data", a.data, "--out", ckpt, "--log", log] + self.shared + [
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

    def train_run(self, args, ckpt, log):
        """Trains one run and scores its checkpoint (bin/eval on val and test): (its log's rows, the
        scores of each split)."""
        a = self.a
        output_of(args, live=getattr(a, "jobs", 1) == 1)  # several at once: their progress lines would interleave
        ev = {split: run_ok([os.path.join(BIN, "eval"), "--model", ckpt, "--data", a.data, "--split", split, "--json",
                             "--word-ppl", "--by-position", "--split-recall", str(a.recall_n), "--threads",
                             str(a.threads)], status=2).json() for split in ("val", "test")}
        return read_train_log(log), ev

    def train(self, arch, budget, seed, tag):
        a = self.a
        ckpt, log = os.path.join(a.out, f"{tag}.ckpt"), os.path.join(a.out, f"{tag}.csv")
        if os.path.exists(log):
            os.remove(log)
        kind, value = budget
        tokens_per_step = a.batch_size * a.block_size
        warmup = a.warmup_iters
        if kind == "tokens":
            steps = max(1, value // tokens_per_step)
            limit = ["--max-iters", str(steps)]
            eval_interval = max(1, steps // a.curve_points)
            warmup = self.warmup(steps, f"{kind}:{value}")
        else:
            limit = ["--max-iters", "100000000", "--max-seconds", str(value)]
            eval_interval = a.seconds_eval_interval
        args = self.train_args(arch, seed, ckpt, log, eval_interval, warmup) + limit
        t0 = time.time()
        with partial(ckpt, log):  # a stopped sweep removes the runs it stopped: compare has no resume
            steps_rows, ev = self.train_run(args, ckpt, log)
        wall = time.time() - t0
        clock, curve = 0.0, []
        for r in steps_rows:
            if r["ms_per_step"] is not None:
                clock += r["ms_per_step"] / 1e3
            if r["val_loss"] is not None:
                curve.append((int(r["tokens"]), clock, r["val_loss"]))
        train_rows = [r for r in steps_rows if r["ms_per_step"] is not None]
        if not a.keep_checkpoints:
            os.remove(ckpt)
        return {"arch": arch["name"], "budget": f"{kind}:{value}", "seed": seed, "params": arch["params"],
                "steps": int(train_rows[-1]["step"]), "tokens": int(train_rows[-1]["tokens"]),
                "train_seconds": clock, "wall": wall, "tok_s": int(train_rows[-1]["tokens"]) / clock,
                "val_loss": ev["val"]["loss"], "val_ppl": ev["val"]["perplexity"],
                "test_loss": ev["test"]["loss"], "test_ppl": ev["test"]["perplexity"],
                "recall_loss": ev["val"]["split_recall"]["recall_loss"],
                "other_loss": ev["val"]["split_recall"]["other_loss"],
                "recall_tokens": ev["val"]["split_recall"]["recall_tokens"],
                "other_tokens": ev["val"]["split_recall"]["other_tokens"],
                "by_position": ev["val"]["by_position"]["loss"], "curve": curve,
                # per byte and per word of the text: comparable across tokenizers (None where not known)
                **{f"{split}_{short}": ev[split].get(key) for split in ("val", "test")
                   for short, key in (("bpb", "bits_per_byte"), ("word_ppl", "word_perplexity"))},
                "unit": next(k for k in ev["val"] if k.startswith("bits_per_")).split("_")[-1]}
