#!/usr/bin/env python3
"""make compare: a Transformer and a Grassmann model of matched size, trained
on the same prepared data with the same token budget, seed and schedule, then
evaluated on val and test (every token scored once).

Sizes are matched by the Grassmann reduced rank r: the script asks bin/train
for the exact parameter count of every r from 2 to 128 and takes the one
closest to the Transformer's (unless --grassmann-rank is given), and it prints
both counts. Everything else -- layers, width, MLP, embeddings -- is shared.

Writes OUT/compare.md, OUT/compare.csv and OUT/val_loss.png (gnuplot), plus
each model's checkpoint and training log.
"""
import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "bin")


def die(msg):
    print(f"compare: error: {msg}", file=sys.stderr)
    sys.exit(2)


def run(cmd, live=False):
    if live:
        p = subprocess.run(cmd)
        if p.returncode != 0:
            die(f"{os.path.basename(cmd[0])} failed (exit {p.returncode})")
        return ""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        die(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"{cmd[0]} failed")
    return p.stdout


def count_params(data, model_args):
    return int(run([os.path.join(BIN, "train"), "--data", data, "--count-params"] + model_args).strip())


def main():
    ap = argparse.ArgumentParser(description="Transformer vs Grassmann language model, matched size and budget.")
    ap.add_argument("--data", default=os.path.join(ROOT, "data/moby"), help="prepared data directory (default data/moby)")
    ap.add_argument("--out", default=os.path.join(ROOT, "runs/compare"), help="output directory (default runs/compare)")
    ap.add_argument("--n-layer", type=int, default=4)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=128)
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=12)
    ap.add_argument("--max-iters", type=int, default=3000)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--min-lr", type=float, default=1e-4)
    ap.add_argument("--warmup-iters", type=int, default=100)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--eval-interval", type=int, default=100, help="steps between validation estimates (curve)")
    ap.add_argument("--eval-iters", type=int, default=20)
    ap.add_argument("--grassmann-rank", type=int, default=0, help="0 = choose r to match the Transformer's size")
    ap.add_argument("--grassmann-windows", default="1,2,4,8,12,16")
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    for f in ("train.bin", "val.bin", "test.bin", "tokenizer.txt"):
        if not os.path.exists(os.path.join(a.data, f)):
            die(f"'{a.data}' has no {f} (run make data, or bin/prepare with a test fraction)")
    if not shutil.which("gnuplot"):
        die("gnuplot is not installed (bash scripts/install-deps.sh)")
    os.makedirs(a.out, exist_ok=True)

    shared = ["--n-layer", str(a.n_layer), "--n-head", str(a.n_head), "--n-embd", str(a.n_embd),
              "--block-size", str(a.block_size), "--dropout", str(a.dropout)]
    n_tf = count_params(a.data, shared + ["--mixer", "attention"])
    gr_args = shared + ["--mixer", "grassmann", "--grassmann-windows", a.grassmann_windows]
    if a.grassmann_rank:
        rank = a.grassmann_rank
    else:
        counts = {r: count_params(a.data, gr_args + ["--grassmann-rank", str(r)]) for r in range(2, 129)}
        rank = min(counts, key=lambda r: abs(counts[r] - n_tf))
    n_gr = count_params(a.data, gr_args + ["--grassmann-rank", str(rank)])
    gap = 100.0 * (n_gr - n_tf) / n_tf
    print(f"compare: Transformer {n_tf} parameters; Grassmann r={rank} {n_gr} parameters ({gap:+.2f}%)")
    if abs(gap) > 5:
        print(f"compare: warning: parameter counts differ by {gap:+.1f}% (more than 5%)")

    train_common = ["--batch-size", str(a.batch_size), "--max-iters", str(a.max_iters), "--lr", str(a.lr),
                    "--min-lr", str(a.min_lr), "--warmup-iters", str(a.warmup_iters), "--seed", str(a.seed),
                    "--eval-interval", str(a.eval_interval), "--eval-iters", str(a.eval_iters),
                    "--log-interval", str(max(1, a.max_iters // 20)), "--threads", str(a.threads)]
    models = [("Transformer", "transformer", shared + ["--mixer", "attention"], n_tf),
              (f"Grassmann (r={rank})", "grassmann", gr_args + ["--grassmann-rank", str(rank)], n_gr)]
    rows = []
    for label, tag, args, n_params in models:
        ckpt, log = os.path.join(a.out, f"{tag}.ckpt"), os.path.join(a.out, f"{tag}.csv")
        if os.path.exists(log):
            os.remove(log)
        print(f"\n== {label}: training", flush=True)
        t0 = time.time()
        run([os.path.join(BIN, "train"), "--data", a.data, "--out", ckpt, "--log", log] + args + train_common, live=True)
        wall = time.time() - t0
        with open(log) as f:
            steps = list(csv.DictReader(f))
        train_rows = [r for r in steps if r["ms_per_step"] not in ("", "nan")]
        step_time = sum(float(r["ms_per_step"]) for r in train_rows) / 1e3
        tokens = int(train_rows[-1]["tokens"])
        last = train_rows[-50:]
        final_train = sum(float(r["train_loss"]) for r in last) / len(last)
        curve = [(int(r["tokens"]), float(r["val_loss"])) for r in steps if r["val_loss"] not in ("", "nan")]
        ev = {}
        for split in ("val", "test"):
            ev[split] = json.loads(run([os.path.join(BIN, "eval"), "--model", ckpt, "--data", a.data,
                                        "--split", split, "--json", "--threads", str(a.threads)]))
        unit = next(k for k in ev["val"] if k.startswith("bits_per_")).split("_")[-1]
        rows.append({"label": label, "tag": tag, "params": n_params, "tokens": tokens, "wall": wall,
                     "step_time": step_time, "tok_s": tokens / step_time, "train_loss": final_train,
                     "val_loss": ev["val"]["loss"], "val_ppl": ev["val"]["perplexity"],
                     "test_loss": ev["test"]["loss"], "test_ppl": ev["test"]["perplexity"],
                     "test_bits": ev["test"][f"bits_per_{unit}"], "curve": curve, "unit": unit})

    unit = rows[0]["unit"]
    header = ["architecture", "parameters", "training tokens", "wall time (s)", "tokens/s", "final train loss",
              "val loss", "val ppl", "test loss", "test ppl", f"test bits/{unit}"]
    table = [[r["label"], f"{r['params']:,}", f"{r['tokens']:,}", f"{r['wall']:.0f}", f"{r['tok_s']:.0f}",
              f"{r['train_loss']:.4f}", f"{r['val_loss']:.4f}", f"{r['val_ppl']:.3f}", f"{r['test_loss']:.4f}",
              f"{r['test_ppl']:.3f}", f"{r['test_bits']:.4f}"] for r in rows]
    ratio = rows[1]["test_ppl"] / rows[0]["test_ppl"]
    command = "python3 eval/compare.py " + " ".join(sys.argv[1:])
    md = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    md += ["| " + " | ".join(row) + " |" for row in table]
    md += ["", f"Grassmann / Transformer test perplexity: {ratio:.3f} "
               f"({100 * (ratio - 1):+.1f}%); val: {rows[1]['val_ppl'] / rows[0]['val_ppl']:.3f}.",
           f"Same data ({a.data}), {rows[0]['tokens']:,} training tokens each, seed {a.seed}, "
           f"lr {a.lr} -> {a.min_lr} cosine, {a.warmup_iters} warm-up steps. Wall time includes the "
           f"periodic validation estimates; tokens/s counts training steps only.",
           f"Command: `{command.strip()}`"]
    with open(os.path.join(a.out, "compare.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(a.out, "compare.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["architecture", "parameters", "training_tokens", "wall_s", "tokens_per_s", "final_train_loss",
                    "val_loss", "val_ppl", "test_loss", "test_ppl", f"test_bits_per_{unit}"])
        for r in rows:
            w.writerow([r["label"], r["params"], r["tokens"], f"{r['wall']:.1f}", f"{r['tok_s']:.0f}",
                        f"{r['train_loss']:.6f}", f"{r['val_loss']:.6f}", f"{r['val_ppl']:.6f}",
                        f"{r['test_loss']:.6f}", f"{r['test_ppl']:.6f}", f"{r['test_bits']:.6f}"])
    for r in rows:
        with open(os.path.join(a.out, f"{r['tag']}.curve"), "w") as f:
            f.writelines(f"{t} {v}\n" for t, v in r["curve"])
    png = os.path.join(a.out, "val_loss.png")
    plot = f"""set terminal pngcairo size 900,560 font ',11'
set output '{png}'
set title 'Validation loss: Transformer vs Grassmann ({rows[0]['params']:,} vs {rows[1]['params']:,} parameters)'
set xlabel 'training tokens'
set ylabel 'validation loss (nats per {unit})'
set grid
set key top right
set format x '%.1s%c'
plot '{os.path.join(a.out, 'transformer.curve')}' using 1:2 with linespoints lw 2 pt 7 ps 0.5 title '{rows[0]['label']}', \\
     '{os.path.join(a.out, 'grassmann.curve')}' using 1:2 with linespoints lw 2 pt 5 ps 0.5 title '{rows[1]['label']}'
"""
    p = subprocess.run(["gnuplot"], input=plot, text=True, capture_output=True)
    if p.returncode != 0:
        die(f"gnuplot failed: {p.stderr.strip()}")
    print("\n" + "\n".join(md[:len(rows) + 3]))
    print(f"\nwrote {os.path.join(a.out, 'compare.md')}, compare.csv and val_loss.png")


if __name__ == "__main__":
    main()
