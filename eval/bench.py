#!/usr/bin/env python3
"""make bench: training speed and memory of bin/train against PyTorch on the
same CPU, model, batch and thread count.

For each architecture it alternates runs of the two (so that machine noise
hits both alike), takes per-step times after a warm-up, and prints medians,
tokens/s, peak resident memory and the PyTorch/C time ratio. Nothing here is
a fixed expectation: the numbers are what this machine did.
Options: --steps N --rounds R --threads N --data DIR (default data/moby)."""
import argparse
import csv
import json
import os
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WARMUP = 5


def peak_rss_mib(cmd):
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execv(cmd[0], cmd)
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        sys.exit(f"bench: error: {cmd[0]} exited with status {status}")
    return usage.ru_maxrss / 1024.0


def c_step_ms(args, cfg_args, tmp):
    log = os.path.join(tmp, "c.csv")
    cmd = [os.path.join(ROOT, "bin/train"), "--data", args.data, "--out", os.path.join(tmp, "c.ckpt"),
           "--max-iters", str(args.steps), "--eval-interval", "0", "--eval-iters", "1",
           "--log-interval", str(args.steps), "--threads", str(args.threads), "--log", log] + cfg_args
    rss = peak_rss_mib(cmd)
    with open(log) as f:
        ms = [float(r["ms_per_step"]) for r in csv.DictReader(f) if r["ms_per_step"] not in ("", "nan")]
    return ms[WARMUP:], rss


def torch_step_ms(args, cfg, batch, tmp):
    out_path = os.path.join(tmp, "torch.json")
    cmd = ["/usr/bin/python3", os.path.join(ROOT, "eval/bench_torch.py"), json.dumps(cfg), args.data,
           str(batch), str(args.steps), str(args.threads)]
    wrapper = ["/bin/sh", "-c", '"$@" > ' + out_path, "sh"] + cmd
    rss = peak_rss_mib(wrapper)
    with open(out_path) as f:
        return json.load(f)[WARMUP:], rss


def scaling(args, tmp):
    """Training cost per token as the sequence grows, B*T held at 4096 tokens:
    attention's per-token work grows with T (the T x T scores), the Grassmann
    layer's does not (|D| pairs per token)."""
    print(f"\nper-token training cost vs sequence length (B*T = 4096 tokens, n_layer 2, n_embd 128; "
          f"{args.threads} threads)")
    print(f"{'T':>5} {'B':>4} {'attention us/tok':>17} {'grassmann us/tok':>17} {'attention RSS MiB':>18} "
          f"{'grassmann RSS MiB':>18}")
    for T in (64, 128, 256, 512):
        B = 4096 // T
        res = []
        for mixer in ("attention", "grassmann"):
            cfg = ["--mixer", mixer, "--n-layer", "2", "--n-head", "4", "--n-embd", "128", "--block-size", str(T),
                   "--batch-size", str(B)]
            ms, rss = c_step_ms(argparse.Namespace(**{**vars(args), "steps": 12}), cfg, tmp)
            res.append((1e3 * statistics.median(ms) / 4096, rss))
        print(f"{T:>5} {B:>4} {res[0][0]:>17.2f} {res[1][0]:>17.2f} {res[0][1]:>18.1f} {res[1][1]:>18.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--data", default=os.path.join(ROOT, "data/moby"))
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.data, "train.bin")):
        sys.exit(f"bench: error: no prepared data in {args.data} (run make data)")
    with open(os.path.join(args.data, "tokenizer.txt")) as f:
        vocab = int(f.read().split("\n")[1].split()[1])
    B, T, L, H, C = 12, 64, 4, 4, 128
    arch = [
        ("transformer", ["--mixer", "attention"], ["attention"] * L),
        ("grassmann r=32", ["--mixer", "grassmann"], ["grassmann"] * L),
    ]
    print(f"bench: n_layer {L}, n_head {H}, n_embd {C}, block {T}, batch {B}, vocab {vocab}; "
          f"{args.threads} threads; {args.rounds} rounds of {args.steps} steps, first {WARMUP} dropped")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags, mixers in arch:
            cfg_args = flags + ["--n-layer", str(L), "--n-head", str(H), "--n-embd", str(C),
                                "--block-size", str(T), "--batch-size", str(B)]
            cfg = {"vocab_size": vocab, "block_size": T, "n_layer": L, "n_head": H, "n_embd": C,
                   "mixers": mixers, "pos": "learned", "grassmann_rank": 32,
                   "grassmann_windows": [1, 2, 4, 8, 12, 16], "dropout": 0.0}
            c_ms, t_ms, c_rss, t_rss = [], [], 0.0, 0.0
            for _ in range(args.rounds):
                ms, rss = c_step_ms(args, cfg_args, tmp)
                c_ms += ms
                c_rss = max(c_rss, rss)
                ms, rss = torch_step_ms(args, cfg, B, tmp)
                t_ms += ms
                t_rss = max(t_rss, rss)
            c_med, t_med = statistics.median(c_ms), statistics.median(t_ms)
            rows.append((name, c_med, t_med, B * T * 1e3 / c_med, B * T * 1e3 / t_med, c_rss, t_rss))
    print(f"{'model':<16} {'C ms/step':>10} {'torch ms/step':>14} {'C tok/s':>9} {'torch tok/s':>12} "
          f"{'torch/C':>8} {'C RSS MiB':>10} {'torch RSS MiB':>14}")
    for name, c, t, ctok, ttok, crss, trss in rows:
        print(f"{name:<16} {c:>10.2f} {t:>14.2f} {ctok:>9.0f} {ttok:>12.0f} {t / c:>7.2f}x {crss:>10.1f} {trss:>14.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        scaling(args, tmp)


if __name__ == "__main__":
    main()
