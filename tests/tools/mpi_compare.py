"""Compares two bin/train runs for tests/cli/mpi_test.sh: the train and val
losses of two --log CSV files at every step, and the weights of two
checkpoints, each to a relative tolerance. Prints the worst differences;
exit 1 if any exceeds the tolerance.
Usage: /usr/bin/python3 -m tests.tools.mpi_compare [--logs A.csv B.csv] [--ckpts A.ckpt B.ckpt] [--tol 1e-5]"""
import argparse
import csv
import sys

import numpy as np

from harness.safetensors_np import read_safetensors


def log_losses(path):
    with open(path) as f:
        return {int(r["step"]): (r["train_loss"], r["val_loss"]) for r in csv.DictReader(f)}


def compare_logs(a, b, tol):
    la, lb = log_losses(a), log_losses(b)
    if la.keys() != lb.keys():
        return [f"logs have different steps: {sorted(la)[:5]}... vs {sorted(lb)[:5]}..."]
    worst, bad = 0.0, []
    for step in sorted(la):
        for name, x, y in zip(("train", "val"), la[step], lb[step]):
            if (x == "") != (y == ""):
                bad.append(f"step {step}: {name} loss '{x}' vs '{y}'")
            elif x:
                rel = abs(float(x) - float(y)) / max(abs(float(y)), 1e-30)
                worst = max(worst, rel)
                if rel > tol:
                    bad.append(f"step {step}: {name} loss {x} vs {y} (relative {rel:.2e})")
    print(f"losses: {len(la)} steps, worst relative difference {worst:.2e}")
    return bad


def compare_ckpts(a, b, tol):
    ta, _ = read_safetensors(a)
    tb, _ = read_safetensors(b)
    weights = [n for n in ta if not n.startswith(("adam", "opt")) and ta[n].dtype == np.float32]
    bad, worst = [], 0.0
    for n in weights:
        if n not in tb or ta[n].shape != tb[n].shape:
            bad.append(f"tensor {n} missing or of another shape")
            continue
        scale = max(float(np.abs(tb[n]).max()), 1e-30)
        rel = float(np.abs(ta[n] - tb[n]).max()) / scale
        worst = max(worst, rel)
        if rel > tol:
            bad.append(f"{n}: max difference {rel:.2e} of its largest entry")
    print(f"weights: {len(weights)} tensors, worst relative difference {worst:.2e}")
    return bad


def main():
    ap = argparse.ArgumentParser(prog="/usr/bin/python3 -m tests.tools.mpi_compare", description=__doc__.split("\n")[0])
    ap.add_argument("--logs", nargs=2)
    ap.add_argument("--ckpts", nargs=2)
    ap.add_argument("--tol", type=float, default=1e-5)
    a = ap.parse_args()
    bad = (compare_logs(*a.logs, a.tol) if a.logs else []) + (compare_ckpts(*a.ckpts, a.tol) if a.ckpts else [])
    for line in bad[:10]:
        print(line)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
