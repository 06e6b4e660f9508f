"""make paper: the Grassmann paper's comparison (arXiv 2512.19428) at its own
configuration, with both LayerNorm placements, through the compare harness.
Run from the repository root: python3 -m harness.paper [options] (--help).

Table 1 (the default): 6 layers, n_embd 256, FFN 1024, block 128, Grassmann
rank 32 with windows 1,2,4,8,12,16 in every layer. Table 2 (--table 2): 12
layers, block 256, one window per layer (1;1;2;2;4;4;8;8;12;12;16;16). Three
architectures: the Transformer, the Grassmann model, and the hybrid with
attention in the first layer and Grassmann in the others; each under pre-norm
and post-norm (the paper's), with --seeds seeds each, paired by seed.

The data is a prepared directory (--data, default data/sotu from
`make data-large`), or Wikitext-2's own files (--wikitext2 DIR holding
wiki.train.tokens, wiki.valid.tokens and wiki.test.tokens, or the .raw ones),
prepared here with bin/prepare --train/--val/--test and BPE.

--controls pair,window,hybrid adds the controls to every recipe's
column (CONTROLS below): the Grassmann pair kinds outer and sum at rank 32
and at the rank whose parameter count is closest to the wedge's (where rank
32's differs by more than 5%), sliding-window attention over the 17
positions the Grassmann offsets reach, and the hybrids with gla and with
the sliding window; paper.md then has a table for each, every ratio with
Welch's p against the wedge, swa, the Transformer or the hybrid.

Writes OUT/paper.md (a reading, the paper's numbers beside ours, bits per byte
and word perplexity beside token perplexity, Welch's p for every ratio, the
per-window ablation of the Grassmann model, the table of runs), OUT/paper.json
(one row per run) and OUT/paper.html (all of paper.md and every run's curve in
one page for a browser); each recipe's compare report is in OUT/pre/, OUT/post/
(and OUT/modern/ with --recipes ...,modern). --report-only rewrites paper.md,
paper.json and paper.html from those compare reports without training.
"""
import argparse
import json
import os
import shlex
import time

from harness.archs import train_takes
from harness.common import ROOT, Sweep, die, guarded, need_gnuplot, out_dir, run, take_config
from harness.files import check_outputs, output_text
from harness.lib.paper.ablation import ablate, ablation_path, head_file, read_ablations
from harness.lib.paper.report import report, write_plot
from harness.lib.paper.runs import read_runs
from harness.lib.paper.setup import (CONTROLS, NORMS, OUTPUTS, PAIRS, RECIPES, SETTINGS, TABLES, archs_for,
                                     attention_window, compare_command, layer_windows, matched_pairs, pair_counts,
                                     prepare_wikitext2, recipe_label, train_tokens)
from harness.lib.evals import parse_evals
from harness.lib.trained import unigram_loss


def main():
    ap = argparse.ArgumentParser(description="The Grassmann paper's comparison at its own configuration, both norms.")
    ap.add_argument("--table", type=int, choices=(1, 2), default=1, help="the paper's Table 1 (default) or Table 2")
    ap.add_argument("--data", default=os.path.join(ROOT, "data/sotu"),
                    help="prepared data directory (default data/sotu: make data-large)")
    ap.add_argument("--wikitext2", metavar="DIR", help="Wikitext-2's wiki.{train,valid,test}.tokens (or .raw): "
                    "prepared with BPE into OUT/data and used instead of --data")
    ap.add_argument("--vocab-size", type=int, default=8192, help="BPE vocabulary for --wikitext2 (8192)")
    ap.add_argument("--out", default=os.path.join(ROOT, "runs/paper"), help="output directory (runs/paper)")
    ap.add_argument("--norms", default="pre,post", help="which norms to run (pre,post)")
    ap.add_argument("--recipes", help="which recipes to run, each a column: pre, post (GPT-2's blocks, LayerNorm "
                    "before or after) and modern (bin/train --recipe modern, when bin/train has it); "
                    "instead of --norms")
    ap.add_argument("--ablation-tokens", type=int, default=16384,
                    help="the per-window ablation of the Grassmann model (first seed, each recipe) scores this many "
                         "val tokens per layer and offset; 0: none (16384)")
    ap.add_argument("--budget", default="tokens:800000",
                    help="per run, as make compare takes it (tokens:800000: the 12 runs take about an hour on 2 cores)")
    ap.add_argument("--seeds", type=int, default=2, help="seeds per architecture and norm (2)")
    ap.add_argument("--seed", type=int, default=1337, help="first seed (1337)")
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup-iters", type=int, default=100)
    ap.add_argument("--threads", type=int, default=0, help="threads per run; 0 = the cores / --jobs")
    ap.add_argument("--jobs", type=int, default=1, help="runs of a recipe trained at once (harness.compare --jobs; 1)")
    ap.add_argument("--train-args", default="", metavar="ARGS",
                    help="more bin/train options for every run, after the recipe's so that they win (one string: "
                         "--train-args='--zero-init 0')")
    ap.add_argument("--controls", default="", metavar="GROUPS",
                    help="the controls, trained beside the three architectures in every recipe's column "
                         "(comma list; default none). " + " ".join(f"{k}: {v}." for k, v in CONTROLS.items()).replace("%", "%%") +
                         " A run costs about what one of the three does (more for outer and gla), so a group's cost "
                         "is its share of runs: --controls pair,window,hybrid is 8 more architectures, 44 runs in "
                         "all at the defaults, about 4 times the hour of the three. Commands for each question: "
                         "docs/compare.md, the controls' commands")
    ap.add_argument("--evals", nargs="+", metavar="NAME=FILE", default=None,
                    help="downstream tasks every run is scored on beside its perplexity (harness.compare --evals: "
                         "bin/eval's minimal pairs, cloze or multiple choice, the kind read from FILE's format)")
    ap.add_argument("--resume", action="store_true",
                    help="finish a stopped make paper of these options: each started recipe's compare --resume "
                         "(its finished runs kept, a stopped one continued), the ablations it has kept")
    ap.add_argument("--report-only", action="store_true", help="rewrite paper.md and paper.json from OUT/pre and OUT/post")
    take_config(ap)
    a = ap.parse_args()
    controls = [c for c in a.controls.split(",") if c]
    if any(c not in CONTROLS for c in controls):
        die(f"--controls must list {', '.join(CONTROLS)} (got '{a.controls}')")
    if a.recipes is not None:
        norms = [n for n in a.recipes.split(",") if n]
        if not norms or any(n not in RECIPES for n in norms):
            die(f"--recipes must list pre, post and/or modern (got '{a.recipes}')")
        if "modern" in norms and not a.report_only and not train_takes("--recipe"):
            die("--recipes modern needs a bin/train with --recipe (this one has none)")
    else:
        norms = [n for n in a.norms.split(",") if n]
        if not norms or any(n not in ("pre", "post") for n in norms):
            die(f"--norms must list pre and/or post (got '{a.norms}')")
    if a.ablation_tokens < 0:
        die("--ablation-tokens must not be negative")
    if a.resume and a.report_only:
        die("--resume trains what a make paper lacks and --report-only trains nothing: give one")
    parse_evals(a.evals)  # each FILE's kind, before any work
    for name in ("seeds", "jobs"):
        if getattr(a, name) < 1:
            die(f"--{name} must be at least 1")
    if "pair" in controls and not a.report_only and not train_takes("--grassmann-pair"):
        die("--controls pair needs a bin/train with --grassmann-pair (this one has none)")
    need_gnuplot()
    out_dir(a.out)
    check_outputs(a.out, OUTPUTS)  # before any work: each file paper writes, where it is there already
    for norm in NORMS:
        check_outputs(os.path.join(a.out, norm), (SETTINGS, "ablation_*.json"))
    cfg = TABLES[a.table]
    window = attention_window(layer_windows(cfg["windows"], cfg["n_layer"]))
    data, data_label = a.data, os.path.relpath(a.data, ROOT)
    if a.wikitext2:
        data, data_label = os.path.join(a.out, "data"), "Wikitext-2 (" + a.wikitext2 + f"), BPE {a.vocab_size}"
        if not a.report_only:
            prepare_wikitext2(a.wikitext2, data, a.vocab_size)
    elif data_label == "data/sotu":
        data_label = "State of the Union addresses 1790-2021 (make data-large), BPE 8,192, split by speech"
    t0 = time.time()
    if not a.report_only:
        for f in ("train.bin", "val.bin", "test.bin", "tokenizer.txt"):
            if not os.path.exists(os.path.join(data, f)):
                die(f"'{data}' has no {f} (run make data-large, or give --data or --wikitext2)")
        matched = []
        if "pair" in controls:  # which pair kinds get a rank-matched variant: decided once, for every recipe
            counts = pair_counts(a, data, norms[0])
            matched = matched_pairs(counts)
            print("paper: the Grassmann model at rank 32, " + recipe_label(norms[0]) + ": " + ", ".join(
                f"{p} {n:,} parameters ({100.0 * (n - counts['wedge']) / counts['wedge']:+.1f}%)"
                for p, n in counts.items()) + "; rank-matched variants for: " + (", ".join(matched) or "none"),
                flush=True)
        archs = archs_for(cfg["n_layer"], controls, window, matched)
        # one sweep over every recipe's comparison: each harness.compare counts and times its runs in it
        per_recipe = len(archs) * a.seeds
        sweep = Sweep(len(norms) * per_recipe)
        for k, norm in enumerate(norms):
            cmd = compare_command(a, norm, data, archs)
            print(f"paper: recipe {k + 1} of {len(norms)}, {recipe_label(norm)}: {shlex.join(cmd[1:])}", flush=True)
            # its runs' progress as they come; stopping paper stops it, and it its runs (harness/procs.py)
            if run(cmd, env=sweep.env(), capture=False, cwd=ROOT, show=True).status != 0:
                die(f"the {recipe_label(norm)} comparison failed (its output is above)")
            sweep.add_done(per_recipe)
            with output_text(os.path.join(a.out, norm, SETTINGS)) as f:
                json.dump({"lr": a.lr, "warmup_iters": a.warmup_iters}, f)
            if a.ablation_tokens and not (a.resume and os.path.lexists(
                    ablation_path(a.out, norm, "grassmann", a.seed))):  # --resume keeps a finished ablation
                val_head, n = head_file(data, a.out, a.ablation_tokens)
                ablate(a.out, norm, "grassmann", a.seed, a.budget.split(":")[0], ["grassmann"] * cfg["n_layer"],
                       layer_windows(cfg["windows"], cfg["n_layer"]), val_head, n, a.threads)
    # Read back every architecture make paper may have trained (a --report-only needs no --controls);
    # the report has the three and whichever others have runs.
    known = archs_for(cfg["n_layer"], CONTROLS, window, [p for p in PAIRS if p != "wedge"])
    rows = [r for norm in NORMS for r in read_runs(a.out, norm, known, a)]
    archs = known[:3] + [x for x in known[3:] if any(r["name"] == x[0] for r in rows)]
    a.train_tokens = train_tokens(data)
    if not rows:
        die(f"no runs in {a.out}/pre, {a.out}/post or {a.out}/modern")
    unigram = unigram_loss(data)
    plot = write_plot(a.out, archs, rows, unigram)
    md = report(a, archs, rows, 0 if a.report_only else (time.time() - t0) / 60, data_label, unigram, plot,
                read_ablations(a.out, rows))
    print("\n".join(md[:12]))
    print(f"\nwrote {os.path.join(a.out, 'paper.md')} and paper.json")


if __name__ == "__main__":
    guarded(main)
