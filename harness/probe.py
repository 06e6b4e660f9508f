"""make probe: synthetic recall probes (MQAR, copy) for each architecture.
Run from the repository root: python3 -m harness.probe [options] (--help).

For every task setting, bin/probegen writes sequences of fixed length (token
files plus train.mask and val.mask marking the answers); each architecture is
trained from scratch on them with bin/train (--block-size = --window-align =
the sequence length, so every window is one sequence; the loss on the marked
answers only, bin/train's loss mask) and scored with bin/eval on the marked
answer tokens only. Accuracy = the share of answers that are the
model's most likely next token.

  MQAR: --pairs key-value pairs, then queries of them filling the rest of the
        sequence; swept over --mqar-seq-lens (the query-to-key distance grows
        with the length). Trained in two stages at each length: first on
        --curriculum-pairs pairs, where the lookup forms, then on --pairs.
  copy: a random segment, a gap of filler, a marker, the segment again;
        swept over --copy-gaps at --copy-seq-len (the distance is
        segment + gap + 1).

Architectures as make compare takes them (harness/archs.py: --archs, size-matched to the first by
their size knob; by default experiments/defaults.json's). Writes OUT/probe.json (a list of rows {arch, task, seq_len,
pairs or gap, n_embd, seed, accuracy, ...}), OUT/probe.md and
OUT/probe_accuracy.png.

--zoology runs MQAR under the Zoology paper's protocol instead (vocabulary
8,192, three length/pairs cells, four widths, a learning-rate sweep, accuracy
against state size): harness/zoology.py.
"""
import argparse
import concurrent.futures
import json
import os
import sys
import time

from harness import registry
from harness.archs import count_params, parse_archs, size_archs, syntax
from harness.common import BIN, ROOT, Sweep, die, fit_warmup, guarded, need_gnuplot, out_dir, output_of, take_config
from harness.experiments import default
from harness.files import check_outputs, output_text
from harness.lib import runfolders
from harness.lib.probe_report import read_rows, runs_schema, write_report
from harness.lib.recall import kept_row, positions, run_name, size_args, train_command
from harness.lib.recall import train_and_score as recall_run


# What probe writes in --out: its report, plot and data, and the sweep's record (each run's folder is
# bin/train's, written by its own rule).
OUTPUTS = ("probe.json", "probe.md", "probe_accuracy.png", "acc_*.dat", runfolders.PLAN)


def zoology(argv):
    """--zoology: the Zoology protocol's program (harness/zoology.py) in place of this one, with argv."""
    path = os.environ.get("PYTHONPATH")
    env = dict(os.environ, PYTHONPATH=ROOT + (os.pathsep + path if path else ""))  # harness found from any folder
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, "-m", "harness.zoology"] + argv, env)


def ints(text, what):
    try:
        xs = [int(x) for x in text.split(",") if x]
    except ValueError:
        xs = []
    if not xs or min(xs) < 0:
        die(f"{what} must be a comma list of non-negative integers (got '{text}')")
    return xs



def main():
    if "--zoology" in sys.argv[1:]:  # the Zoology protocol: its own program, with its own options
        return zoology([x for x in sys.argv[1:] if x != "--zoology"])
    ap = argparse.ArgumentParser(prog="python3 -m harness.probe",
                                 description="MQAR and copy probes: recall accuracy by distance, per architecture.")
    ap.add_argument("--zoology", action="store_true",
                    help="MQAR under the Zoology paper's protocol instead (its options: --zoology --help)")
    ap.add_argument("--out", default=os.path.join(ROOT, "runs/probe"))
    archs = default("probe", "archs")
    ap.add_argument("--archs", default=archs,
                    help="space-separated architectures, " + syntax() + "; size-matched to the first as in make "
                         f"compare (default '{archs}': experiments/defaults.json)")
    ap.add_argument("--tasks", default="mqar,copy")
    ap.add_argument("--mqar-seq-lens", default="64,128,256")
    ap.add_argument("--pairs", type=int, default=16)
    ap.add_argument("--symbols", type=int, default=64, help="distinct keys and values (MQAR) or symbols (copy)")
    # Independent queries: in shuffled rounds the last key of a round can be guessed by elimination, a
    # shortcut that competed with the lookup (length 128: 0.107 with rounds, 0.73 random; README).
    ap.add_argument("--queries", default="random", choices=("random", "rounds"), help="MQAR query order (random)")
    ap.add_argument("--copy-seq-len", type=int, default=64)
    ap.add_argument("--copy-segment", type=int, default=8)
    ap.add_argument("--copy-gaps", default="0,16,40")
    ap.add_argument("--n-embds", default="64", help="model widths, comma list (default 64)")
    ap.add_argument("--n-layer", type=int, default=2)
    ap.add_argument("--n-head", type=int, default=2)
    # auto: each architecture with the positions it learns these tasks with (README, "make probe";
    # experiments/defaults.json's probe.positions, learned for the rest). Sinusoidal ones (entries of
    # size ~1) drown the token embeddings (init 0.02).
    ap.add_argument("--pos", default="auto", help="auto | learned | sinusoidal | rope (auto: the positions "
                    "experiments/defaults.json gives an architecture's one mixer, else learned)")
    # Longer sequences need more steps before the lookup forms (README, "make probe"): at 2,048 tokens per
    # step, length 128 learned 16 pairs in 8,000 steps and 256 in 12,000, where 4,000 were not enough.
    ap.add_argument("--mqar-iters", default="4000,8000,12000",
                    help="MQAR steps (both stages) at each of --mqar-seq-lens, or one number for all (4000,8000,12000)")
    ap.add_argument("--copy-max-iters", type=int, default=1000, help="copy steps (1000)")
    # Equal tokens per step at every length: a step of a longer sequence is not a bigger step.
    ap.add_argument("--batch-tokens", type=int, default=2048,
                    help="tokens per step; each length trains batch-tokens / seq_len sequences per step (2048)")
    # A small learning rate: at 3e-3 (Adam steps of 15% of the 0.02-sized initial weights) the
    # lookup never formed, even on 2 pairs; at 3e-4 it does (README, "make probe").
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--min-lr", type=float, default=3e-5)
    ap.add_argument("--warmup-iters", type=int, default=30)
    ap.add_argument("--train-seqs", type=int, default=8000)
    ap.add_argument("--val-seqs", type=int, default=200)
    # The staged curriculum: MQAR runs first learn the lookup on --curriculum-pairs pairs (at the same
    # length) for --curriculum-steps of the run's steps (--mqar-iters), then go on with the full number of pairs
    # (bin/train --stop-at, then --resume on the harder data: one learning-rate schedule). Straight on
    # 16 pairs the lookup did not form at all within thousands of steps (README, "make probe").
    ap.add_argument("--curriculum-pairs", type=int, default=4, help="MQAR pairs of the first stage; 0 = no curriculum")
    ap.add_argument("--curriculum-steps", type=int, default=0, help="steps of the first stage (default: 2/3 of the run's --mqar-iters)")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--threads", type=int, default=0, help="threads per run; 0 = the cores / --jobs")
    ap.add_argument("--jobs", type=int, default=0, help="architectures trained at once; 0 = one per core, at most all")
    ap.add_argument("--report-only", action="store_true",
                    help="train nothing: rebuild probe.md and the plot from OUT/probe.json (e.g. of a stopped sweep)")
    ap.add_argument("--resume", action="store_true",
                    help="finish the sweep in --out: its scored runs kept, a stopped one continued exactly "
                         "(bin/train --resume), the rest trained (the options it was started with)")
    registry.add_options(ap, knob_help="every architecture's that gives no size or match= of its own (0, or not "
                                       "given: matched to the first)")
    take_config(ap)
    a = ap.parse_args()
    tasks = [t for t in a.tasks.split(",") if t]
    if not tasks or any(t not in ("mqar", "copy") for t in tasks):
        die(f"--tasks must list mqar and/or copy (got '{a.tasks}')")
    if a.seeds < 1 or a.copy_max_iters < 1 or a.batch_tokens < 1 or a.jobs < 0 or a.threads < 0:
        die("--seeds, --copy-max-iters and --batch-tokens must be positive, --jobs and --threads not negative")
    if a.resume and a.report_only:
        die("--resume trains what a sweep lacks and --report-only trains nothing: give one")
    if a.curriculum_pairs < 0 or a.curriculum_steps < 0:
        die("--curriculum-pairs and --curriculum-steps must be non-negative")
    mqar_lens = ints(a.mqar_seq_lens, "--mqar-seq-lens")
    mqar_iters = ints(a.mqar_iters, "--mqar-iters")
    if len(mqar_iters) == 1:
        mqar_iters *= len(mqar_lens)
    if len(mqar_iters) != len(mqar_lens) or min(mqar_iters) < 1:
        die(f"--mqar-iters needs one positive number, or one per length of --mqar-seq-lens ({len(mqar_lens)})")
    iters_at = dict(zip(mqar_lens, mqar_iters))
    stage_at = {L: a.curriculum_steps or (2 * n) // 3 for L, n in iters_at.items()}
    if a.curriculum_pairs and any(not 1 <= stage_at[L] < iters_at[L] for L in mqar_lens):
        die(f"--curriculum-steps must be below --mqar-iters ({a.mqar_iters})")

    archs = parse_archs(a.archs, a.n_layer)
    registry.check_options(a, ["--n-layer", str(a.n_layer), "--n-head", str(a.n_head)])
    need_gnuplot()
    out_dir(a.out)
    check_outputs(a.out, OUTPUTS)  # before any work: each file probe writes, where it is there already
    jobs = a.jobs or min(len(archs) * a.seeds, os.cpu_count() or 1)
    threads = a.threads or max(1, (os.cpu_count() or 1) // jobs)

    # The settings: (task, seq_len, pairs or gap, the distance from stored item to its query).
    settings = []
    if "mqar" in tasks:
        settings += [("mqar", L, a.pairs) for L in mqar_lens]
    if "copy" in tasks:
        settings += [("copy", a.copy_seq_len, g) for g in ints(a.copy_gaps, "--copy-gaps")]
    rows, t_all, sized = [], time.time(), {}
    if a.report_only:
        rows = read_rows(a.out)
        settings = []
    widths = ints(a.n_embds, "--n-embds")
    name_of = lambda task, L, p, arch, width, seed: run_name(task, L, ("p" if task == "mqar" else "g") + str(p), arch,
                                                           f"e{width}", f"s{seed}")
    if not a.resume:
        runfolders.check_fresh(a.out, [name_of(t, L, p, x.name, w, s) for t, L, p in settings for w in widths
                                       for x in archs for s in range(a.seed, a.seed + a.seeds)])
    record = runfolders.Record(a.out, a.resume)
    def generate(task, L, p):
        data = os.path.join(a.out, "data", f"{task}_{L}_{p}")
        os.makedirs(os.path.dirname(data), exist_ok=True)
        gen = [os.path.join(BIN, "probegen"), "--task", task, "--out", data, "--seq-len", str(L), "--symbols",
               str(a.symbols), "--train-seqs", str(a.train_seqs), "--val-seqs", str(a.val_seqs), "--seed", str(a.seed)]
        gen += ["--pairs", str(p), "--queries", a.queries] if task == "mqar" else \
            ["--segment", str(a.copy_segment), "--gap", str(p)]
        output_of(gen)
        return data

    sweep = Sweep(len(settings) * len(widths) * len(archs) * a.seeds)
    scaled = set()
    for task, L, p in settings:
        data = generate(task, L, p)
        staged = task == "mqar" and 0 < a.curriculum_pairs < p
        first_data = generate(task, L, a.curriculum_pairs) if staged else None
        steps = iters_at[L] if task == "mqar" else a.copy_max_iters
        stage_steps = stage_at.get(L) if staged else None
        warmup = fit_warmup(a.warmup_iters, steps)
        if warmup != a.warmup_iters and steps not in scaled:
            scaled.add(steps)
            print(f"probe: --warmup-iters {a.warmup_iters} exceeds the {steps} steps of the {task} runs: they warm up "
                  f"over {warmup} (a tenth of their steps)", flush=True)
        for width in widths:
            shape = ["--n-layer", str(a.n_layer), "--n-head", str(a.n_head), "--n-embd", str(width),
                     "--block-size", str(L)] + registry.given_args(a)
            runs = []
            # The sizes are matched with learned positions for every model, so that they match at any
            # length and the position table (absent with rope) does not enter the match: once per width.
            if width not in sized:
                sized[width] = size_archs(archs, data, shape + ["--pos", "learned"], width, registry.fixed_sizes(a))
            for arch in sized[width]:
                pos = positions(a.pos, arch["mixers"])
                shared = shape + arch["args"] + ["--pos", pos]
                n = count_params(data, shared, arch["mixers"], arch["knob"], arch["size"])
                runs += [(arch, pos, shared, n, seed) for seed in range(a.seed, a.seed + a.seeds)]

            commands = {name_of(task, L, p, arch["name"], width, seed):
                        train_command(arch["mixers"], L, a.batch_tokens, steps, a.lr, a.min_lr, warmup, seed, threads,
                                      shared, size_args(arch)) for arch, pos, shared, n, seed in runs}
            record.add({name: runfolders.recorded(args + ["--data", data], None) +
                        (["--curriculum", first_data, str(stage_steps)] if staged else [])
                        for name, args in commands.items()})

            def train_and_score(arch, pos, shared, n, seed):
                name = arch["name"]
                folder = os.path.join(a.out, name_of(task, L, p, name, width, seed))
                row = kept_row(folder, runs_schema()) if a.resume else None
                if row is not None:
                    print(f"probe: {task} L={L} {'pairs' if task == 'mqar' else 'gap'}={p} {name} n_embd={width} "
                          f"seed={seed}: kept, finished before (accuracy {row['accuracy']:.3f}); {sweep.end()}",
                          flush=True)
                    return row
                ev, secs = recall_run(folder, commands[os.path.basename(folder)], data, steps, threads, a.resume,
                                      (first_data, stage_steps) if staged else None)
                distance = None if task == "mqar" else a.copy_segment + p + 1
                row = {"arch": name, "task": task, "seq_len": L, ("pairs" if task == "mqar" else "gap"): p,
                       "n_embd": width, "seed": seed, "accuracy": round(ev["accuracy"], 6),
                       "answer_loss": round(ev["loss"], 6), "answers": ev["scored"], "params": n,
                       "pos": pos, "distance": distance, "steps": steps, "train_seconds": round(secs, 1),
                       "curriculum": {"pairs": a.curriculum_pairs, "steps": stage_steps} if staged else None,
                       **arch["columns"]}
                runfolders.write_scores(folder, {"row": row})
                print(f"probe: {task} L={L} {'pairs' if task == 'mqar' else 'gap'}={p} {name} n_embd={width} "
                      f"seed={seed}: accuracy {row['accuracy']:.3f} ({secs:.0f} s); {sweep.end()}", flush=True)
                return row

            # The runs of a setting are independent: `jobs` of them at a time, each on its own threads.
            with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
                rows += list(pool.map(lambda job: train_and_score(*job), runs))
            with output_text(os.path.join(a.out, "probe.json")) as f:  # after every setting: a partial sweep is kept
                json.dump(rows, f, indent=1)
    total = time.time() - t_all
    md = write_report(a, rows, tasks, archs, total)
    print("\n".join(md))
    print(f"\nwrote {os.path.join(a.out, 'probe.md')}, probe.json and probe_accuracy.png ({total / 60:.1f} min)")


if __name__ == "__main__":
    guarded(main)
