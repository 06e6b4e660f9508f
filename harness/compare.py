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
are reported.

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
so); scoring stays fp32. Each run trains into a run folder of its own,
OUT/ARCH_KIND_SEED (bin/train --run: bin/info --list OUT lists them), and its
final checkpoint is scored on val and test with bin/eval --by-position
--split-recall N, and on each --evals NAME=FILE task (minimal pairs, cloze or
multiple choice, the kind read from FILE's format: harness/lib/evals.py).
--resume finishes a stopped sweep, --report-only rewrites the reports from
its runs (harness/lib/runfolders.py). Writes OUT/compare.md (a reading, then
the tables: every mean with its 95% t interval, p-values and verdicts from 3
seeds on: harness/lib/summary.py), compare.csv (one row per run), and plots:
val_loss_tokens.png, val_loss_seconds.png, loss_by_position.png,
recall_split.png; and compare.html, all of it in one page for a browser, the
curves of every run with zoom (harness/report_page.py).
"""
import argparse
import os
import shlex
import time

from harness import registry
from harness.archs import check_train_takes, parse_archs, size_archs, syntax
from harness.common import ROOT, die, guarded, need_gnuplot, out_dir, take_config
from harness.experiments import default
from harness.files import check_outputs
from harness.lib.compare.ablation import ablate
from harness.lib.compare.report import write_report
from harness.lib.compare.runs import DATA_FILES, OUTPUTS, Harness, check_stems, parse_budget, run_plan, stem
from harness.lib.evals import parse_evals
from harness.lib.summary import precision_text


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
    ap.add_argument("--evals", nargs="+", metavar="NAME=FILE", default=None,
                    help="downstream tasks each run's final checkpoint is scored on beside its perplexity (bin/eval "
                         "--pairs, --cloze or --choice FILE, the kind read from FILE's format: BLiMP's or HellaSwag's "
                         "JSON lines, or LAMBADA's plain text); NAME names it in the tables and compare.csv")
    ap.add_argument("--resume", action="store_true",
                    help="finish the sweep in --out, started with these options: its scored runs kept, a stopped "
                         "one continued (bin/train --resume), the rest trained")
    ap.add_argument("--report-only", action="store_true",
                    help="train nothing: rewrite the reports from the runs in --out (a sweep of these options)")
    ap.add_argument("--keep-checkpoints", action="store_true",
                    help="accepted for older commands: every run's folder keeps its checkpoints")
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
    if a.resume and a.report_only:
        die("--resume trains what a sweep lacks and --report-only trains nothing: give one")
    evals = parse_evals(a.evals)
    out_dir(a.out)
    check_outputs(a.out, OUTPUTS, inputs=[("the data's", os.path.join(a.data, f)) for f in DATA_FILES])
    h = Harness(a, evals)

    check_train_takes(specs)
    archs = size_archs(specs, a.data, h.shared, a.n_embd, registry.fixed_sizes(a),
                       say=lambda text: print(f"compare: {text}", flush=True))

    print(f"compare: every run trains with {precision_text(a.precision)}", flush=True)
    if a.ablate:
        return ablate(a, h, archs, budgets)
    plan = [(arch, (kind, value), seed, stem(f"{arch['name']}_{kind}_{seed}"))
            for kind, value in budgets for seed in seeds for arch in archs]
    t_all = time.time()
    runs = run_plan(h, plan, lambda arch, budget, seed: f"{arch['label']}, {budget[0]}:{budget[1]}, seed {seed}", "compare")
    total = 0 if a.report_only else time.time() - t_all
    md, _, plots = write_report(a, archs, budgets, seeds, runs, total, evals)
    print("\n" + "\n".join(md[:next(i for i, line in enumerate(md) if line.startswith("Model: "))]).rstrip())
    print(f"\nwrote {os.path.join(a.out, 'compare.md')}, compare.csv, {len(plots)} plots ({', '.join(plots)}) and "
          f"compare.html ({total / 60:.1f} min{', reports only' if a.report_only else ''})")


if __name__ == "__main__":
    guarded(main)
