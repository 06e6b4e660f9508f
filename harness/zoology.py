"""make probe PROBE_ARGS=--zoology: MQAR under the Zoology paper's protocol
(Arora et al. 2023, "Zoology: Measuring and Improving Recall in Efficient
Language Models", arXiv 2312.04927), accuracy against the mixer's state size.
Run from the repository root: python3 -m harness.probe --zoology [options]
(--help), or python3 -m harness.zoology.

The protocol, as the paper's Figure 2 sweep sets it: a vocabulary of 8,192
(keys from its first half, values from its second), (sequence length, pairs)
in (64, 4), (128, 8), (256, 16), every key queried once at a power-law
distance, every other position a random token of the whole vocabulary (the
generator's random_non_queries, on by default: distractors among the
queries; --fill zero puts id 0 there instead, an easier task without them,
and the report says which) (bin/probegen --task zoology), 2 layers of width 64, 128, 256 and
512, and a 4-point learning-rate sweep (1e-4 to 1e-2, log-spaced) of which
the best is kept for each architecture, cell and width. Each architecture is
size-matched to the first as in make probe (its size knob).

State size: the floats a model keeps per sequence when it generates, summed
over the layers, as the registry gives them at the cell's length and the
width (bin/info --mixers: each layer's Mixer.state_size, its key and value
cache, its window's, or its recurrent state, with its step's scratch); the
MLPs keep nothing. Any architecture of registered mixers has its point on
the axis; the four families of docs/compare.md side by side are one --archs.

--quick is the cut for a 2-core machine: the (64, 4) cell, width 64, the
sweep's two largest learning rates, 8000 steps each over 100,000 training
sequences (fewer sequences are memorised: at 20,000 the answer loss falls on
the training set and not on the scored one; fewer steps stop before
the first architecture has formed the lookup: 3000 steps of the four rates left it at
0.2, under the 0.25 of answering with any of the sequence's own values). Writes OUT/zoology.json (every run),
OUT/zoology.md (the best learning rate per cell and width, with its family,
seeds and the paired t-test's p against the first architecture from 3 seeds on), OUT/zoology_accuracy.png
(accuracy against state size, one panel per cell, a line per architecture)
and OUT/zoology.html (the report and the same plots, with zoom). zoology.json is rewritten after every run, and --resume trains only
the runs it lacks: the full sweep is many hours on 2 cores, and can be run a
few cells or widths at a time.
"""
import argparse
import concurrent.futures
import json
import os
import sys
import time

from harness import registry
from harness.archs import count_params, parse_archs, size_archs, syntax
from harness.common import BIN, ROOT, die, guarded, need_gnuplot, out_dir, output_of
from harness.experiments import default
from harness.files import check_outputs, output_text
from harness.lib import runfolders
from harness.lib.recall import kept_row, positions, run_name, size_args, train_command
from harness.lib.recall import train_and_score as recall_run
from harness.lib.zoology_report import (check_archs, check_settings, read_rows, run_key, runs_schema, state_floats,
                                        write_report)


# The paper's learning rates: numpy.logspace(-4, -2, 4).
LRS = "1e-4,4.6416e-4,2.1544e-3,1e-2"


QUICK = {"cells": "64:4", "widths": "64", "lrs": "2.1544e-3,1e-2", "steps": 8000, "train_seqs": 100000,
         "val_seqs": 500}


# What the sweep writes in --out: its report, page, plot and data, and the sweep's record (each run's folder is
# bin/train's, written by its own rule).
OUTPUTS = ("zoology.json", "zoology.md", "zoology.html", "zoology_accuracy.png", "zoology_*.dat", runfolders.PLAN)


def parse_cells(text):
    """'64:4,128:8' -> [(64, 4), (128, 8)]."""
    cells = []
    for item in text.split(","):
        t, _, p = item.partition(":")
        if not (t.isdigit() and p.isdigit() and int(t) > 0 and int(p) > 0):
            die(f"--cells must be a comma list of LENGTH:PAIRS (got '{text}')")
        cells.append((int(t), int(p)))
    return cells


def numbers(text, what, kind=int):
    try:
        xs = [kind(x) for x in text.split(",") if x]
    except ValueError:
        xs = []
    if not xs or min(xs) <= 0:
        die(f"{what} must be a comma list of positive numbers (got '{text}')")
    return xs



def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m harness.probe --zoology",
                                 description="MQAR under the Zoology protocol: accuracy against state size.")
    ap.add_argument("--out", default=os.path.join(ROOT, "runs/zoology"))
    archs = default("zoology", "archs")
    ap.add_argument("--archs", default=archs,
                    help="space-separated architectures, " + syntax() + "; size-matched to the first as in make "
                         f"compare (default '{archs}': experiments/defaults.json; docs/compare.md: the four "
                         "families)")
    ap.add_argument("--cells", default="64:4,128:8,256:16", help="LENGTH:PAIRS list (64:4,128:8,256:16)")
    ap.add_argument("--widths", default="64,128,256,512", help="n_embd list (64,128,256,512)")
    ap.add_argument("--lrs", default=LRS, help=f"learning rates swept, the best kept ({LRS})")
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--fill", default="random", choices=("random", "zero"),
                    help="the positions outside the pairs and the queries: random, a token of the whole vocabulary as "
                         "Zoology's generator draws it, or zero, id 0 (no distractors: an easier task) (random)")
    ap.add_argument("--steps", type=int, default=4000, help="training steps per run (4000)")
    ap.add_argument("--batch-tokens", type=int, default=2048, help="tokens per step (2048)")
    ap.add_argument("--warmup-iters", type=int, default=0, help="warm-up steps (default: a tenth of --steps)")
    ap.add_argument("--train-seqs", type=int, default=100000, help="training sequences (100000, as the paper)")
    ap.add_argument("--val-seqs", type=int, default=3000, help="scored sequences (3000, as the paper)")
    ap.add_argument("--n-layer", type=int, default=2)
    ap.add_argument("--n-head", type=int, default=1, help="heads (1, as the paper)")
    ap.add_argument("--pos", default="auto", help="as make probe's --pos (auto: experiments/defaults.json's "
                    "positions for an architecture's one mixer, else learned)")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--threads", type=int, default=0, help="threads per run; 0 = the cores / --jobs")
    ap.add_argument("--jobs", type=int, default=0, help="runs at once; 0 = one per core")
    ap.add_argument("--quick", action="store_true",
                    help="the 2-core cut: " + ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in QUICK.items()))
    ap.add_argument("--report-only", action="store_true", help="rebuild zoology.md and the plot from OUT/zoology.json")
    ap.add_argument("--resume", action="store_true",
                    help="keep OUT/zoology.json's runs and train only those missing (the same settings only)")
    registry.add_options(ap, knob_help="every architecture's that gives no size or match= of its own (0, or not "
                                       "given: matched to the first)")
    argv = sys.argv[1:] if argv is None else argv
    if "--quick" in argv:
        ap.set_defaults(**QUICK)
    a = ap.parse_args(argv)
    a.argv = argv
    cells = parse_cells(a.cells)
    widths = numbers(a.widths, "--widths")
    lrs = numbers(a.lrs, "--lrs", float)
    if min(a.steps, a.batch_tokens, a.train_seqs, a.val_seqs, a.seeds, a.vocab) < 1 or min(a.jobs, a.threads) < 0:
        die("--steps, --batch-tokens, --train-seqs, --val-seqs, --seeds and --vocab must be positive")
    archs = parse_archs(a.archs, a.n_layer)
    registry.check_options(a, ["--n-layer", str(a.n_layer), "--n-head", str(a.n_head)])
    need_gnuplot()
    out_dir(a.out)
    check_outputs(a.out, OUTPUTS)  # before any work: each file the sweep writes, where it is there already
    warmup = a.warmup_iters or max(1, a.steps // 10)
    t0, rows = time.time(), []
    settings = {"vocab": a.vocab, "fill": a.fill, "steps": a.steps, "batch_tokens": a.batch_tokens, "warmup_iters": warmup,
                "train_seqs": a.train_seqs, "val_seqs": a.val_seqs, "n_layer": a.n_layer, "n_head": a.n_head,
                "data_seed": a.seed, **{o["json_key"]: v for o in registry.options()
                                        for v in [registry.given(a).get(o["name"])] if v is not None}}
    if a.report_only or (a.resume and os.path.exists(os.path.join(a.out, "zoology.json"))):
        rows = read_rows(a.out)
    if a.report_only:
        cells = []
    elif a.resume:
        check_settings(rows, settings, a.out)
        check_archs(rows, archs, a.out)
    runs = []
    for L, pairs in cells:
        data = os.path.join(a.out, "data", f"zoology_{L}_{pairs}")
        os.makedirs(os.path.dirname(data), exist_ok=True)
        output_of([os.path.join(BIN, "probegen"), "--task", "zoology", "--out", data, "--seq-len", str(L),
                   "--pairs", str(pairs), "--vocab", str(a.vocab), "--train-seqs", str(a.train_seqs), "--val-seqs",
                   str(a.val_seqs), "--seed", str(a.seed), "--fill", a.fill])
        for width in widths:
            shape = ["--n-layer", str(a.n_layer), "--n-head", str(a.n_head), "--n-embd", str(width),
                     "--block-size", str(L)] + registry.given_args(a)
            # The sizes are matched with learned positions for every model (as make probe's), so that the
            # position table (absent with rope) does not enter the match: harness.archs.size_archs.
            for arch in size_archs(archs, data, shape + ["--pos", "learned"], width, registry.fixed_sizes(a)):
                name, mixers = arch["name"], arch["mixers"]
                pos = positions(a.pos, mixers)
                own = shape + arch["args"] + ["--pos", pos]
                n = count_params(data, own, mixers, arch["knob"], arch["size"])
                state = state_floats(shape + ["--pos", pos], arch)
                for lr in lrs:
                    for seed in range(a.seed, a.seed + a.seeds):
                        if any(run_key(r) == (name, L, pairs, width, lr, seed) for r in rows):
                            continue  # --resume: this run is in zoology.json already
                        folder = os.path.join(a.out, run_name("zoology", L, f"p{pairs}", name, f"e{width}",
                                                              f"lr{lr:g}", f"s{seed}"))
                        runs.append(dict(arch=name, mixers=mixers, pos=pos, shape=own[:-2], size=size_args(arch),
                                         params=n, state=state, lr=lr, seed=seed, L=L, pairs=pairs, width=width,
                                         data=data, columns=arch["columns"], family=arch["family"], folder=folder))
    if not a.resume:
        runfolders.check_fresh(a.out, [os.path.basename(r["folder"]) for r in runs])
    if a.resume:  # a run scored, but stopped before zoology.json was written, is kept from its folder
        found = [(r, kept_row(r["folder"], runs_schema())) for r in runs]
        rows += [row for _, row in found if row is not None]
        runs = [r for r, row in found if row is None]
    kept = len(rows) if a.resume else 0
    if a.resume:
        print(f"zoology: {len(rows)} runs kept from {os.path.join(a.out, 'zoology.json')} and the runs' folders, "
              f"{len(runs)} to train", flush=True)
    jobs = a.jobs or min(max(1, len(runs)), os.cpu_count() or 1)
    threads = a.threads or max(1, (os.cpu_count() or 1) // jobs)
    command = lambda r: train_command(r["mixers"], r["L"], a.batch_tokens, a.steps, r["lr"], r["lr"] / 10, warmup,
                                      r["seed"], threads, r["shape"] + ["--pos", r["pos"]], r["size"])
    if runs:
        runfolders.Record(a.out, a.resume).add({os.path.basename(r["folder"]): runfolders.recorded(
            command(r) + ["--data", r["data"]], None) for r in runs})

    def train_and_score(r):
        ev, secs = recall_run(r["folder"], command(r), r["data"], a.steps, threads, a.resume)
        row = {"arch": r["arch"], "seq_len": r["L"], "pairs": r["pairs"], "n_embd": r["width"], "lr": r["lr"],
               "seed": r["seed"], "accuracy": round(ev["accuracy"], 6), "answer_loss": round(ev["loss"], 6),
               "answers": ev["scored"], "params": r["params"], "state_floats": r["state"], "pos": r["pos"],
               "steps": a.steps, "train_seconds": round(secs, 1), "settings": settings, "family": r["family"],
               **r["columns"]}
        runfolders.write_scores(r["folder"], {"row": row})
        print(f"zoology: L={r['L']} pairs={r['pairs']} {r['arch']} n_embd={r['width']} lr={r['lr']:g} "
              f"seed={r['seed']}: accuracy {row['accuracy']:.3f} ({secs:.0f} s)", flush=True)
        return row

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for row in pool.map(train_and_score, runs):
            rows.append(row)
            with output_text(os.path.join(a.out, "zoology.json")) as f:  # after every run: a stopped sweep keeps them
                json.dump(rows, f, indent=1)
    if not rows:
        die("no runs to report")
    md = write_report(a, archs, rows, 0 if a.report_only else (time.time() - t0) / 60, kept)
    print("\n".join(md))
    print(f"\nwrote {os.path.join(a.out, 'zoology.md')}, zoology.json and zoology_accuracy.png")


if __name__ == "__main__":
    guarded(main)
