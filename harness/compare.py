"""make compare: architectures of matched size trained on the same data under
the same budgets, several seeds each, and where their losses differ.
Run from the repository root: python3 -m harness.compare [options] (--help).

--archs lists the architectures, separated by spaces: each is a registered
mixer (bin/info --mixers) or a per-layer list of them joined by commas,
optionally named with NAME=, and optionally followed by mixer options of its
own, `:KEY=VALUE` by the keys the registry gives them, and `:match=NAME`
(harness/archs.py; examples in docs/compare.md); by default
experiments/defaults.json's. Every architecture whose mixers have a size knob
(the option the registry marks as sizing the layer) and that gives none of
its own is size-matched to the first one (or to match='s) by that knob
(bisection on the exact `bin/train --count-params`, up to n_embd); the counts
are reported, with Welch's p of every architecture's val loss against the
first's.

--budget tokens:N trains for N tokens (N / (batch * block) steps, the cosine
schedule over them); --budget seconds:S for S seconds of training steps
(bin/train --max-seconds: the cosine follows the elapsed time, validation is
not counted). Both may be given; the default is both. --seeds N repeats every
run with seeds seed, seed+1, ...; seeds are paired across architectures (the
same seed draws the same batches), runs are interleaved so that a busy
machine slows every architecture alike.

--recipe gpt2|modern passes bin/train --recipe to every run (and to the
parameter counts that size-match the architectures). --ablate compares the
recipe's switches instead of architectures alone: every architecture of
--archs is trained with the modern recipe, with the modern recipe less each
one switch (ABLATION below), and with GPT-2's, at every budget and seed;
ablation.md then says per switch what taking it out costs each
architecture, and whether it closes or widens the gap between the first
architecture and each other one. The sizes are matched once, under
--recipe, and kept for every variant, so that a variant changes only its
switch.

--precision bf16 passes bin/train --precision bf16 to every training run (bf16
products, fp32 accumulation; the title, the model line and compare.csv say
so); scoring stays fp32. Each run is scored on val and test with bin/eval --by-position
--split-recall N. Writes OUT/compare.md (a reading, then the tables),
compare.csv (one row per run), and plots: val_loss_tokens.png,
val_loss_seconds.png, loss_by_position.png, recall_split.png; and
compare.html, all of it in one page for a browser, the curves of every run
with zoom (harness/report_page.py).
"""
import argparse
import concurrent.futures
import csv
import functools
import math
import os
import shlex
import statistics
import time

from harness import registry
from harness.archs import closest_size, lowest_size, parse_archs, syntax
from harness.common import (BIN, ROOT, Sweep, command_line, die, duration, fit_warmup, gnuplot, gnuplot_string, guarded,
                            need_gnuplot, out_dir, partial, run_ok, take_config)
from harness.files import check_outputs, output_text
from harness.report_page import COLORS, chart, markdown_sections, write_page
from harness.experiments import default
from harness.results import Int, Mixers, Name, Num, Text, arch_option_fields, read_train_log
from harness.stats import welch_p


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

# --ablate's variants: the modern recipe less one switch each (bin/train's
# options that set it back to GPT-2's, the optimizer among them), between the
# whole recipe and GPT-2's.
ABLATION = [
    ("modern", []),
    ("no rope (learned positions)", ["--pos", "learned"]),
    ("no RMSNorm (LayerNorm)", ["--norm-type", "layernorm"]),
    ("no ReLU^2 (GELU)", ["--mlp-act", "gelu"]),
    ("no qk-norm", ["--qk-norm", "0"]),
    ("no untied head (tied)", ["--untied-head", "0"]),
    ("no zero-init", ["--zero-init", "0"]),
    ("no logit softcap", ["--logit-softcap", "0"]),
    ("no Muon (AdamW)", ["--optimizer", "adamw"]),
    ("gpt2", ["--recipe", "gpt2"]),
]


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


def run(cmd, live=False):
    """A program's stdout; exit 2 with its error if it fails. live: its stdout
    is not kept and its stderr goes to ours as it comes."""
    return run_ok(cmd, capture=not live, status=2).out


def parse_budget(text):
    kind, _, value = text.partition(":")
    try:
        v = float(value)
    except ValueError:
        v = -1
    if kind not in ("tokens", "seconds") or not 0 < v < 1e15:  # NaN and inf fail this too
        die(f"--budget must be tokens:N or seconds:S with a positive number (got '{text}')")
    return (kind, int(v) if kind == "tokens" else v)


def count_params(data, shared, mixers, knob=None, size=None):
    """Exact parameter count from bin/train --count-params (shared: the model options), with the size
    knob `knob` (a registry option) at `size` where given."""
    args = shared + ["--mixer", ",".join(mixers)] + (["--" + knob["name"], str(size)] if knob and size else [])
    return int(run([os.path.join(BIN, "train"), "--data", data, "--count-params"] + args).strip())


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


def csv_options(arch):
    """compare.csv's cells of an architecture's options (csv_columns: every option an architecture may
    give, by its JSON key): the architecture's value where its mixers have the option, else empty."""
    return ["" if arch["columns"].get(o["json_key"]) is None else arch["columns"][o["json_key"]]
            for o in registry.arch_options()]


def layers_text(mixers):
    """'MIXER x 4' for one mixer in every layer, else the per-layer list."""
    return f"{mixers[0]} x {len(mixers)}" if len(set(mixers)) == 1 else ",".join(mixers)


def arch_table(archs):
    """The report's table of the architectures: their layers, own options, size (and what it was matched to)
    and exact parameter count beside the first's."""
    ref = archs[0]["params"]
    md = ["## Architectures", "",
          "| architecture | family | layers | options | size | parameters | vs " + archs[0]["name"] + " |",
          "|---|---|---|---|---|---|---|"]
    for x in archs:
        size = "-" if not x.get("size") else f"{x['knob']['arch_key']} {x['size']}" + (
            f" (matched to {x['matched']}{', capped at n_embd' if x.get('capped') else ''})" if x.get("matched") else "")
        own = [f"{k} {v}" for k, v in x.get("options", {}).items() if not x["knob"] or k != x["knob"]["arch_key"]]
        md.append(f"| {x['name']} | {x.get('family', '-')} | {layers_text(x['mixers'])} | {', '.join(own) or '-'} "
                  f"| {size} | {x['params']:,} | {100.0 * (x['params'] - ref) / ref:+.2f}% |")
    return md


def fmt_p(p):
    """Welch's p as the reports give it."""
    return "p n/a" if p is None else f"p {p:.2g}" if p >= 1e-3 else "p < 0.001"


def precision_text(precision):
    """How the report says the runs' precision."""
    return ("bf16 products with fp32 accumulation (bin/train --precision bf16)" if precision == "bf16"
            else "fp32 products")


def mean_spread(xs):
    """Mean and spread (half the range over seeds: every seed lies within mean +- spread... of the midrange)."""
    xs = [x for x in xs if x is not None and not math.isnan(x)]
    if not xs:
        return float("nan"), float("nan")
    return statistics.fmean(xs), (max(xs) - min(xs)) / 2


ONE_SEED = "one seed: no spread to compare against"


def difference(m, s, n_seeds):
    """How a paired ratio, mean m ± spread s over n_seeds seeds, reads against 1."""
    if n_seeds < 2:
        return ONE_SEED
    return "a difference (it exceeds the seed spread)" if abs(m - 1) > s else "NOT a difference (within the seed spread)"


def fmt(m, s, digits=3):
    return f"{m:.{digits}f} ± {s:.{digits}f}"


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
        run(args, live=getattr(a, "jobs", 1) == 1)  # several at once: their progress lines would interleave
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


def write_page_html(a, archs, budgets, runs, unit, md):
    """OUT/compare.html: the report's text and tables, every run's val-loss
    curve (per architecture and seed), the loss by position and a table of
    the runs."""
    charts = []
    for kind, x_of, xlabel in (("tokens", lambda p: p[0], "training tokens"),
                               ("seconds", lambda p: round(p[1], 3), "seconds of training steps")):
        b = next((f"{k}:{v}" for k, v in budgets if k == kind), None)
        if b is None:
            continue
        series = [{"name": f"{arch['label']}, seed {r['seed']}", "legend": arch["label"], "color": COLORS[i % len(COLORS)],
                   "points": [[x_of(p), p[2]] for p in r["curve"]]}
                  for i, arch in enumerate(archs) for r in runs if r["arch"] == arch["name"] and r["budget"] == b]
        charts.append(chart(f"val_{kind}", f"Validation loss, {kind} budget {b.split(':')[1]} (each seed a line)",
                            xlabel, f"validation loss (nats per {unit})", series,
                            note="Drag across the plot to zoom into a range, double-click to zoom out; click a "
                                 "legend entry to hide its lines."))
    series = []
    for kind, value in budgets:
        for i, arch in enumerate(archs):
            rs = [r for r in runs if r["arch"] == arch["name"] and r["budget"] == f"{kind}:{value}"]
            pts, band = [], []
            for t in range(len(rs[0]["by_position"])):
                vals = [r["by_position"][t] for r in rs if r["by_position"][t] is not None]
                if vals:
                    pts.append([t, statistics.fmean(vals)])
                    band.append([t, min(vals), max(vals)])
            series.append({"name": f"{arch['label']}, {kind}", "color": COLORS[i % len(COLORS)], "points": pts,
                           "band": band, "dash": kind == "seconds"})
    charts.append(chart("by_position", f"Validation loss by position in the window (mean and range over {a.seeds} seeds)",
                        "position (tokens of context before the target)", f"loss (nats per {unit})", series, xlog=True))
    # compare.csv's columns, named and rounded for reading (the CSV keeps every digit)
    cols = [("steps", "steps", "{:,}"), ("tokens", "tokens", "{:,}"), ("train_seconds", "train seconds", "{:,.1f}"),
            ("tok_s", "tokens/s", "{:,.0f}"), ("val_loss", "val loss", "{:.4f}"), ("val_ppl", "val ppl", "{:,.2f}"),
            ("test_ppl", "test ppl", "{:,.2f}"), ("recall_loss", "recall-token loss", "{:.4f}"),
            ("other_loss", "other-token loss", "{:.4f}")]
    table = {"kind": "table", "id": "runs", "columns": ["architecture", "budget", "seed"] + [c[1] for c in cols],
             "rows": [[next(x["label"] for x in archs if x["name"] == r["arch"]), r["budget"], r["seed"]] +
                      [f.format(r[k]) for k, _, f in cols] for r in runs]}
    sections = markdown_sections(md)
    sections += [{"kind": "heading", "level": 2, "text": "Curves"}] + charts + [
        {"kind": "heading", "level": 2, "text": "Every run"}, table]
    write_page(os.path.join(a.out, "compare.html"), md[0].lstrip("# "), sections)


def warmup_text(a):
    """'100 warm-up steps', and the budgets whose runs were too short for them."""
    scaled = getattr(a, "warmup_scaled", None) or {}
    return f"{a.warmup_iters} warm-up steps" + (
        " (" + ", ".join(f"{w} in the {b} runs" for b, w in scaled.items()) + ": a tenth of their steps)" if scaled else "")


def write_plots(a, archs, budgets, runs, unit):
    """The plots (PNG, through gnuplot); returns their file names."""
    out = a.out
    colors = COLORS
    head = "set terminal pngcairo size 900,560 font ',11'\nset grid\nset key top right\n"
    # Val loss against tokens: mean over seeds and a min-max band (same evaluation steps for every seed).
    tok_budget = next((b for b in budgets if b[0] == "tokens"), None)
    plots = []
    if tok_budget:
        b = f"tokens:{tok_budget[1]}"
        parts = []
        for i, arch in enumerate(archs):
            rs = [r for r in runs if r["arch"] == arch["name"] and r["budget"] == b]
            path = os.path.join(out, f"curve_tokens_{i}.dat")
            with output_text(path) as f:
                for k in range(min(len(r["curve"]) for r in rs)):
                    vals = [r["curve"][k][2] for r in rs]
                    f.write(f"{rs[0]['curve'][k][0]} {statistics.fmean(vals)} {min(vals)} {max(vals)}\n")
            c = colors[i % len(colors)]
            parts.append(f"{gnuplot_string(path)} using 1:3:4 with filledcurves lc rgb '{c}' fs transparent solid 0.25 "
                         "notitle")
            parts.append(f"{gnuplot_string(path)} using 1:2 with lines lw 2 lc rgb '{c}' "
                         f"title {gnuplot_string(arch['label'])}")
        plots.append(("val_loss_tokens.png", "training tokens", "set format x '%.1s%c'\n",
                      f"Validation loss, equal tokens (mean and min-max over {a.seeds} seeds)", parts))
    sec_budget = next((b for b in budgets if b[0] == "seconds"), None)
    if sec_budget:
        b = f"seconds:{sec_budget[1]}"
        parts = []
        for i, arch in enumerate(archs):
            c = colors[i % len(colors)]
            for j, r in enumerate(r for r in runs if r["arch"] == arch["name"] and r["budget"] == b):
                path = os.path.join(out, f"curve_seconds_{i}_{j}.dat")
                with output_text(path) as f:
                    f.writelines(f"{s} {v}\n" for _, s, v in r["curve"])
                title = f"title {gnuplot_string(arch['label'])}" if j == 0 else "notitle"
                parts.append(f"{gnuplot_string(path)} using 1:2 with linespoints lw 1.5 pt 7 ps 0.4 lc rgb '{c}' {title}")
        plots.append(("val_loss_seconds.png", "seconds of training steps", "",
                      f"Validation loss, equal time (each of {a.seeds} seeds drawn)", parts))
    for name, xlabel, extra, title, parts in plots:
        gnuplot(head + extra + f"set output {gnuplot_string(os.path.join(out, name))}\nset title {gnuplot_string(title)}\n"
                f"set xlabel '{xlabel}'\nset ylabel {gnuplot_string(f'validation loss (nats per {unit})')}\n"
                f"plot " + ", \\\n     ".join(parts) + "\n", output=os.path.join(out, name))
    # Loss by position in the window (val, mean over seeds), every budget.
    parts = []
    for bi, (kind, value) in enumerate(budgets):
        for i, arch in enumerate(archs):
            rs = [r for r in runs if r["arch"] == arch["name"] and r["budget"] == f"{kind}:{value}"]
            path = os.path.join(out, f"by_position_{bi}_{i}.dat")
            with output_text(path) as f:
                for t in range(len(rs[0]["by_position"])):
                    vals = [r["by_position"][t] for r in rs if r["by_position"][t] is not None]
                    if vals:
                        f.write(f"{t} {statistics.fmean(vals)} {min(vals)} {max(vals)}\n")
            dash = "" if kind == "tokens" else " dt 2"
            parts.append(f"{gnuplot_string(path)} using 1:2 with lines lw 2{dash} lc rgb '{colors[i % len(colors)]}' "
                         f"title {gnuplot_string(arch['label'] + ', ' + kind)}")
    gnuplot(head + f"set output {gnuplot_string(os.path.join(out, 'loss_by_position.png'))}\n"
            f"set title 'Validation loss by position in the window (mean over {a.seeds} seeds)'\n"
            f"set xlabel 'position (tokens of context before the target)'\n"
            f"set ylabel {gnuplot_string(f'loss (nats per {unit})')}\n"
            "set logscale x 2\nset xrange [1:*]\nplot " + ", \\\n     ".join(parts) + "\n",
            output=os.path.join(out, "loss_by_position.png"))
    # Recall vs other tokens: grouped bars with the seed range.
    path = os.path.join(out, "recall_split.dat")
    with output_text(path) as f:
        for kind, value in budgets:
            for arch in archs:
                rs = [r for r in runs if r["arch"] == arch["name"] and r["budget"] == f"{kind}:{value}"]
                rec = [r["recall_loss"] for r in rs]
                oth = [r["other_loss"] for r in rs]
                f.write(f"\"{arch['label']}\\n{kind}\" {statistics.fmean(rec)} {min(rec)} {max(rec)} "
                        f"{statistics.fmean(oth)} {min(oth)} {max(oth)}\n")
    gnuplot(head + f"set output {gnuplot_string(os.path.join(out, 'recall_split.png'))}\n"
            f"set title 'Val loss on tokens completing a {a.recall_n}-gram seen earlier in the window, vs all others'\n"
            f"set ylabel {gnuplot_string(f'loss (nats per {unit})')}\nset style data histogram\n"
            "set style histogram errorbars gap 2 lw 1\nset style fill solid 0.6 border -1\nset yrange [0:*]\n"
            "set xtics font ',9'\n"
            f"plot {gnuplot_string(path)} using 2:3:4:xtic(1) title 'recall tokens' lc rgb '#2ca02c', "
            f"'' using 5:6:7 title 'other tokens' lc rgb '#7f7f7f'\n", output=os.path.join(out, "recall_split.png"))
    return [p[0] for p in plots] + ["loss_by_position.png", "recall_split.png"]


def ablation_name(name, variant, extra):
    """A variant's run name: the architecture's, then the switch's option and value ('NAME-qk-norm-0';
    'NAME-modern' for the whole recipe), one per switch."""
    return f"{name}-" + ("-".join(x.lstrip("-") for x in extra) if extra else variant)


def ablate(a, h, archs, budgets):
    """--ablate: every architecture under every ABLATION variant, budgets and seeds interleaved as in the
    comparison (a busy machine slows every variant alike); ablation.md and ablation.csv."""
    variants = [dict(arch, base=arch["name"], variant=v, extra=extra, name=ablation_name(arch["name"], v, extra))
                for v, extra in ABLATION for arch in archs]
    seeds = [a.seed + k for k in range(a.seeds)]
    check_stems([f"{v['name']}_{kind}_{seed}" for kind, _ in budgets for seed in seeds for v in variants])
    runs, t_all = [], time.time()
    sweep = Sweep(len(budgets) * len(seeds) * len(variants))
    for kind, value in budgets:
        for seed in seeds:
            for v in variants:
                tag = stem(f"{v['name']}_{kind}_{seed}")
                print(f"== {sweep.begin()}: {v['base']}, {v['variant']}, {kind}:{value}, seed {seed}", flush=True)
                r = h.train(v, (kind, value), seed, tag)
                r.update(base=v["base"], variant=v["variant"])
                print(f"   {r['steps']} steps, "
                      f"{r['tokens']:,} tokens in {r['train_seconds']:.1f} s; val loss {r['val_loss']:.4f}", flush=True)
                runs.append(r)
    total = time.time() - t_all
    md = ablation_report(a, archs, budgets, runs, seeds, total)
    with output_text(os.path.join(a.out, "ablation.csv")) as f:
        w = csv.writer(f)
        keys = ["base", "variant", "budget", "seed", "steps", "tokens", "train_seconds", "val_loss", "test_loss"]
        w.writerow(keys)
        for r in runs:
            w.writerow([f"{r[k]:.6f}" if isinstance(r[k], float) else r[k] for k in keys])
    print("\n" + "\n".join(md))
    print(f"\nwrote {os.path.join(a.out, 'ablation.md')} and ablation.csv ({total / 60:.1f} min)")


def ablation_report(a, archs, budgets, runs, seeds, total):
    """ablation.md: per budget, each variant's val loss for every architecture, the change from the whole
    modern recipe (paired by seed), and the gap from the first architecture (paired by seed) against the
    recipe's own gap: a switch whose removal shrinks the gap was widening it, and the other way round."""
    def losses(base, variant, b):
        return {r["seed"]: r["val_loss"] for r in runs if r["budget"] == b and r["base"] == base and
                r["variant"] == variant}

    bases = [x["name"] for x in archs]
    md = [f"# Ablation of the modern recipe: {', '.join(bases)}", "",
          f"Each row takes one switch out of `--recipe modern` (or all of them: gpt2). Val loss (nats per "
          f"{runs[0]['unit']}) is the mean ± spread (half the range) over seeds {', '.join(map(str, seeds))}; "
          f"Δ is the paired change from the whole modern recipe (positive: without the switch the loss is higher, "
          f"so the switch helps); a change or gap "
          f"is called a difference only when it exceeds its spread.", ""]
    for kind, value in budgets:
        b = f"{kind}:{value}"
        md += [f"## {kind} budget ({value:,}{' s' if kind == 'seconds' else ' tokens'})", ""]
        head = "| variant |"
        for base in bases:
            head += f" {base} val loss | Δ {base} |"
        for base in bases[1:]:
            head += f" gap {base} - {bases[0]} | gap vs modern's |"
        md += [head, "|---" * (1 + 2 * len(bases) + 2 * (len(bases) - 1)) + "|"]
        for variant, _ in ABLATION:
            row = f"| {variant} |"
            for base in bases:
                cur, mod = losses(base, variant, b), losses(base, "modern", b)
                m, sp = mean_spread(list(cur.values()))
                dm, ds = mean_spread([cur[k] - mod[k] for k in cur if k in mod])
                note = "" if variant == "modern" or len(cur) < 2 or abs(dm) > ds else " (within spread)"
                row += f" {fmt(m, sp, 4)} | {'' if variant == 'modern' else fmt(dm, ds, 4) + note} |"
            for base in bases[1:]:
                cur0, cur1 = losses(bases[0], variant, b), losses(base, variant, b)
                mod0, mod1 = losses(bases[0], "modern", b), losses(base, "modern", b)
                gaps = {k: cur1[k] - cur0[k] for k in cur1 if k in cur0}
                gm, gs = mean_spread(list(gaps.values()))
                change = [gaps[k] - (mod1[k] - mod0[k]) for k in gaps if k in mod0 and k in mod1]
                cm, cs = mean_spread(change)
                if variant == "modern":
                    verdict = ""
                elif len(change) < 2 or abs(cm) <= cs:
                    verdict = f"{cm:+.4f} ± {cs:.4f}: no difference"
                else:  # without the switch the gap is larger: the switch closes it
                    what = "the recipe" if variant == "gpt2" else "the switch"
                    verdict = f"{cm:+.4f} ± {cs:.4f}: {what} {'closes' if cm > 0 else 'widens'} the gap"
                row += f" {fmt(gm, gs, 4)} | {verdict} |"
            md.append(row)
        md.append("")
    md += [f"Model: n_layer {a.n_layer}, n_head {a.n_head}, n_embd {a.n_embd}, block {a.block_size}, batch "
           f"{a.batch_size}, {a.norm}-norm{', then ' + a.train_args if a.train_args else ''}; "
           f"{precision_text(a.precision)}; lr {a.lr} -> {a.min_lr} cosine (AdamW's; under Muon its matrices take "
           f"bin/train's --muon-lr on the same schedule), "
           f"{warmup_text(a)}; mixer options {registry.settings_text(a)}" +
           "".join(f"; {x['label']} {x['params']:,} parameters under the modern recipe" for x in archs) +
           f". {len(runs)} runs took {total / 60:.1f} minutes of wall time.",
           f"Command: `{command_line('harness.compare')}`"]
    with output_text(os.path.join(a.out, "ablation.md")) as f:
        f.write("\n".join(md) + "\n")
    return md


def check_options(a):
    """Dies with one line, before any work, on an option no run could use."""
    for name in ("seeds", "n_layer", "n_head", "n_embd", "block_size", "batch_size", "curve_points",
                 "seconds_eval_interval", "eval_iters", "recall_n", "jobs"):
        if getattr(a, name) < 1:
            die(f"--{name.replace('_', '-')} must be at least 1 (got {getattr(a, name)})")
    for name in ("threads", "warmup_iters"):
        if getattr(a, name) < 0:
            die(f"--{name.replace('_', '-')} must not be negative (got {getattr(a, name)})")
    for name in ("lr", "min_lr"):
        if not 0 <= getattr(a, name) < 1e6:  # NaN and inf fail this too
            die(f"--{name.replace('_', '-')} must be a non-negative number (got {getattr(a, name)})")
    if not 0 <= a.dropout < 1:
        die(f"--dropout must be in [0, 1) (got {a.dropout})")
    try:
        shlex.split(a.train_args)
    except ValueError as e:
        die(f"--train-args is not a list of options a shell would split ({e}): {a.train_args!r}")


def main():
    ap = argparse.ArgumentParser(prog="python3 -m harness.compare",
                                 description="Architectures of matched size under equal token and time budgets, "
                                             "several seeds, with the loss split by position and by recall.")
    ap.add_argument("--data", default=os.path.join(ROOT, "data/moby"), help="prepared data directory (default data/moby)")
    ap.add_argument("--out", default=os.path.join(ROOT, "runs/compare"), help="output directory (default runs/compare)")
    archs = default("compare", "archs")
    ap.add_argument("--archs", default=archs,
                    help="space-separated architectures, " + syntax() + ". The first is the size reference: an "
                         "architecture with a size knob (bin/info --mixers) and no size or match= of its own takes "
                         "the knob's option given here, or the size matched to the first's parameter count; every "
                         f"count is printed and reported (default '{archs}': experiments/defaults.json)")
    ap.add_argument("--budget", action="append", default=None,
                    help="tokens:N or seconds:S; repeat for several (default tokens:768000 and seconds:40)")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per architecture and budget (default 3)")
    ap.add_argument("--seed", type=int, default=1337, help="first seed (default 1337)")
    ap.add_argument("--n-layer", type=int, default=4)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=128)
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=12)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--min-lr", type=float, default=1e-4)
    ap.add_argument("--warmup-iters", type=int, default=100)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--curve-points", type=int, default=10, help="validation estimates along a token budget (10)")
    ap.add_argument("--seconds-eval-interval", type=int, default=100, help="steps between validation estimates "
                    "under a time budget (100)")
    ap.add_argument("--eval-iters", type=int, default=10)
    ap.add_argument("--recall-n", type=int, default=4, help="n of the recall split (bin/eval --split-recall; 4)")
    ap.add_argument("--norm", default="pre", choices=("pre", "post"), help="LayerNorm placement (bin/train --norm; pre)")
    ap.add_argument("--recipe", choices=("gpt2", "modern"), default=None,
                    help="bin/train --recipe for every run (default: none, bin/train's defaults: gpt2)")
    ap.add_argument("--train-args", default="", metavar="ARGS",
                    help="more bin/train options for every run, after --recipe so that they win (one string: "
                         "--train-args='--zero-init 0')")
    ap.add_argument("--ablate", action="store_true",
                    help="the modern recipe's switches one at a time, for every architecture: ablation.md")
    ap.add_argument("--threads", type=int, default=0, help="threads per run; 0 = the cores / --jobs")
    ap.add_argument("--jobs", type=int, default=1,
                    help="runs trained at once, each on its own --threads (1; on a many-core machine, 1-thread runs "
                         "side by side use the cores better than one run on all of them)")
    ap.add_argument("--precision", default="fp32", choices=("fp32", "bf16"),
                    help="the matrix products of every training run (bin/train --precision; fp32). Evaluation "
                         "(bin/eval) is fp32 either way")
    ap.add_argument("--keep-checkpoints", action="store_true")
    registry.add_options(ap, knob_help="every architecture's that gives no size or match= of its own (0, or "
                                       "not given: matched to the first)")
    take_config(ap)
    a = ap.parse_args()
    budgets = [parse_budget(b) for b in (a.budget or ["tokens:768000", "seconds:40"])]
    check_options(a)
    registry.check_options(a, ["--n-layer", str(a.n_layer), "--n-head", str(a.n_head), "--n-embd", str(a.n_embd),
                               "--block-size", str(a.block_size)])
    if a.jobs > 1 and a.threads == 0:
        a.threads = max(1, (os.cpu_count() or 1) // a.jobs)
    specs = parse_archs(a.archs, a.n_layer)
    for f in ("train.bin", "val.bin", "test.bin", "tokenizer.txt"):
        if not os.path.exists(os.path.join(a.data, f)):
            die(f"'{a.data}' has no {f} (run make data, or bin/prepare with a test fraction)")
    if a.ablate and a.recipe not in (None, "modern"):
        die("--ablate takes the switches out of the modern recipe: give --recipe modern or no --recipe")
    if a.ablate:
        a.recipe = "modern"
    if not a.ablate:
        need_gnuplot()
    kinds = [kind for kind, _ in budgets]
    if len(set(kinds)) != len(kinds):
        die(f"--budget: two {next(k for k in kinds if kinds.count(k) > 1)} budgets would write the same runs' files "
            "(ARCH_KIND_SEED): give one budget of each kind")
    seeds = [a.seed + k for k in range(a.seeds)]
    check_stems([f"{x.name}_{kind}_{seed}" for kind, _ in budgets for seed in seeds for x in specs])
    out_dir(a.out)
    check_outputs(a.out, OUTPUTS, inputs=[("the data's", os.path.join(a.data, f)) for f in DATA_FILES])
    h = Harness(a)

    check_train_takes(specs)
    archs = size_archs(specs, a.data, h.shared, a.n_embd, registry.fixed_sizes(a),
                       say=lambda text: print(f"compare: {text}", flush=True))

    print(f"compare: every run trains with {precision_text(a.precision)}", flush=True)
    if a.ablate:
        return ablate(a, h, archs, budgets)
    plan = [(kind, value, seed, arch) for kind, value in budgets for seed in seeds for arch in archs]
    t_all = time.time()
    sweep = Sweep(len(plan))

    def train_one(job):
        kind, value, seed, arch = job
        tag = stem(f"{arch['name']}_{kind}_{seed}")
        said = f"{sweep.begin()}: " if a.jobs == 1 else ""  # side by side, the count is of runs done
        print(f"== {said}{arch['label']}, {kind}:{value}, seed {seed}", flush=True)
        r = h.train(arch, (kind, value), seed, tag)
        done = "" if a.jobs == 1 else f" ({sweep.end()})"
        print(f"   {arch['label']}, seed {seed}: {r['steps']} steps, {r['tokens']:,} tokens in "
              f"{r['train_seconds']:.1f} s ({r['tok_s']:.0f} tok/s); val loss {r['val_loss']:.4f}{done}", flush=True)
        return r

    if a.jobs == 1:
        runs = [train_one(job) for job in plan]
    else:  # the runs are independent; the results keep the plan's order
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
            runs = list(pool.map(train_one, plan))
    total = time.time() - t_all
    unit = runs[0]["unit"]

    # Aggregates per (budget, arch), and paired ratios against the first architecture.
    rows, reading = [], []
    for kind, value in budgets:
        b = f"{kind}:{value}"
        base = {r["seed"]: r for r in runs if r["budget"] == b and r["arch"] == archs[0]["name"]}
        for arch in archs:
            rs = [r for r in runs if r["budget"] == b and r["arch"] == arch["name"]]
            agg = {k: mean_spread([r[k] for r in rs]) for k in
                   ("tokens", "train_seconds", "tok_s", "val_loss", "val_ppl", "test_ppl", "recall_loss", "other_loss")}
            ratio = mean_spread([r["val_ppl"] / base[r["seed"]]["val_ppl"] for r in rs])
            test_ratio = mean_spread([r["test_ppl"] / base[r["seed"]]["test_ppl"] for r in rs])
            d_rec = mean_spread([r["recall_loss"] - base[r["seed"]]["recall_loss"] for r in rs])
            d_oth = mean_spread([r["other_loss"] - base[r["seed"]]["other_loss"] for r in rs])
            # The share of the val-loss gap carried by recall tokens: their count times their loss gap.
            shares = []
            for r in rs:
                n_all = r["recall_tokens"] + r["other_tokens"]
                gap = r["val_loss"] - base[r["seed"]]["val_loss"]
                if abs(gap) > 1e-9:
                    shares.append(r["recall_tokens"] / n_all * (r["recall_loss"] - base[r["seed"]]["recall_loss"]) / gap)
            # Welch's test of equal mean val loss (a perplexity ratio of 1), against the first architecture
            p = welch_p([r["val_loss"] for r in rs], [r["val_loss"] for r in base.values()])
            rows.append({"budget": b, "arch": arch, "agg": agg, "ratio": ratio, "test_ratio": test_ratio, "p": p,
                         "d_rec": d_rec, "d_oth": d_oth, "share": mean_spread(shares) if shares else None,
                         "recall_frac": rs[0]["recall_tokens"] / (rs[0]["recall_tokens"] + rs[0]["other_tokens"])})
            if arch is not archs[0]:
                m, s = ratio
                verdict = difference(m, s, len(rs))
                where = ""
                if rows[-1]["share"]:
                    sm, ss = rows[-1]["share"]
                    where = (f"; {100 * sm:.0f}% ± {100 * ss:.0f}% of the loss gap sits on the "
                             f"{100 * rows[-1]['recall_frac']:.0f}% of tokens that complete a {a.recall_n}-gram "
                             f"seen earlier in the window (loss gap {d_rec[0]:+.3f} there vs {d_oth[0]:+.3f} on the rest)")
                reading.append(f"- **{kind} budget ({value:,}{' s' if kind == 'seconds' else ' tokens'})**: "
                               f"{arch['label']} / {archs[0]['label']} val perplexity = {fmt(m, s)} "
                               f"(Welch {fmt_p(p)}): {verdict}{where}.")

    seeds_txt = ", ".join(map(str, seeds))
    cmd = command_line("harness.compare")
    md = ["# Comparison: " + " vs ".join(x["label"] for x in archs) + (", bf16" if a.precision == "bf16" else "") +
          (f", {a.recipe} recipe" if a.recipe else ""), "",
          "## Reading", ""] + reading + [
          "", f"Ratios are paired by seed (same batches) and given as mean ± spread, the spread being half the "
              f"range over the {a.seeds} seeds ({seeds_txt}); a ratio is called a difference only when its distance "
              f"from 1 exceeds that spread." if a.seeds > 1 else
              f"Ratios are paired by seed (same batches); with one seed ({seeds_txt}) there is no spread, so no ratio "
              f"is called a difference.", "",
          f"p: Welch's two-sided t-test of equal mean val loss against {archs[0]['name']} at the same budget "
          f"(n/a below 2 seeds).", ""] + arch_table(archs) + ["",
          "## Results", "",
          "| budget | architecture | parameters | tokens | train seconds | tokens/s | val loss | val ppl | test ppl "
          f"| val ppl / {archs[0]['name']} | p vs {archs[0]['name']} | recall-token loss | other-token loss |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        g = row["agg"]
        md.append(f"| {row['budget']} | {row['arch']['label']} | {row['arch']['params']:,} | {g['tokens'][0]:,.0f} "
                  f"| {fmt(*g['train_seconds'], 1)} | {g['tok_s'][0]:,.0f} | {fmt(*g['val_loss'], 4)} "
                  f"| {fmt(*g['val_ppl'])} | {fmt(*g['test_ppl'])} | {fmt(*row['ratio'])} "
                  f"| {'-' if row['arch'] is archs[0] else fmt_p(row['p'])} "
                  f"| {fmt(*g['recall_loss'])} | {fmt(*g['other_loss'])} |")
    md += ["", f"Model: n_layer {a.n_layer}, n_head {a.n_head}, n_embd {a.n_embd}, block {a.block_size}, batch "
               f"{a.batch_size}, {a.norm}-norm{', --recipe ' + a.recipe if a.recipe else ''}"
               f"{', then ' + a.train_args if a.train_args else ''}; {precision_text(a.precision)}; lr {a.lr} -> {a.min_lr} cosine (over the steps, or over the seconds under a time "
               f"budget), {warmup_text(a)}; mixer options {registry.settings_text(a)}. Val and test: "
               f"every token scored once (bin/eval). Recall tokens: {a.recall_n}-grams seen earlier in their "
               f"window ({100 * rows[0]['recall_frac']:.1f}% of val tokens). Train seconds count training steps only; "
               f"the whole comparison took {total / 60:.1f} minutes of wall time.",
           f"Command: `{cmd.strip()}`", "",
           " ".join((["![val loss vs tokens](val_loss_tokens.png)"] if any(k == "tokens" for k, _ in budgets) else []) +
                    (["![val loss vs seconds](val_loss_seconds.png)"] if any(k == "seconds" for k, _ in budgets) else [])),
           "![loss by position](loss_by_position.png) ![recall split](recall_split.png)"]
    with output_text(os.path.join(a.out, "compare.md")) as f:
        f.write("\n".join(md) + "\n")
    with output_text(os.path.join(a.out, "compare.csv")) as f:
        w = csv.writer(f)
        keys = ["arch", "budget", "seed", "params", "steps", "tokens", "train_seconds", "wall", "tok_s", "val_loss",
                "val_ppl", "test_loss", "test_ppl", "recall_loss", "other_loss", "recall_tokens", "other_tokens"]
        per_text = ["val_bpb", "val_word_ppl", "test_bpb", "test_word_ppl"]
        w.writerow(keys + ["mixers", "precision"] + per_text + [o["json_key"] for o in registry.arch_options()])
        for r in runs:
            arch = next(x for x in archs if x["name"] == r["arch"])
            w.writerow([f"{r[k]:.6f}" if isinstance(r[k], float) else r[k] for k in keys] +
                       [",".join(arch["mixers"]), a.precision] +
                       ["" if r[k] is None else f"{r[k]:.6f}" for k in per_text] + csv_options(arch))
    plots = write_plots(a, archs, budgets, runs, unit)
    write_page_html(a, archs, budgets, runs, unit, md)
    print("\n" + "\n".join(md[:len(reading) + 16]))
    print(f"\nwrote {os.path.join(a.out, 'compare.md')}, compare.csv, {len(plots)} plots ({', '.join(plots)}) and "
          f"compare.html ({total / 60:.1f} min)")


if __name__ == "__main__":
    guarded(main)
