"""What every section uses: the configurations, the steps per kind of run, progress lines,
what bin/train --json says, one bin/train run (c_train), and the table printer."""
import os
import sys
import time

from harness.common import BIN, die, run_ok
from harness.common import median as med
from harness.results import read_train_log

CONFIGS = {
    "baby": {"n_layer": 4, "n_head": 4, "n_embd": 128, "block": 64, "batch": 12},
    "medium": {"n_layer": 6, "n_head": 6, "n_embd": 384, "block": 256, "batch": 8},
    "long": {"n_layer": 2, "n_head": 4, "n_embd": 128, "block": 4096, "batch": 1},
}
# The bench's mixers: bin/train's, and window, attention with a sliding window
# of WINDOW positions (bin/train --attn-window). 64 is the default: four times
# the Grassmann layer's largest offset (16), and under the 128 up to which a
# 128-query tile meets at most two key tiles (docs/design.md). The train,
# scaling and other sections run DEFAULT_MIXERS unless --mixers says
# otherwise; the mixers section runs them all.
MIXERS = ("attention", "grassmann", "window", "gla")
DEFAULT_MIXERS = ("attention", "grassmann")
WINDOW = 64
PRECISIONS = ("fp32", "bf16")
RANK, WINDOWS = 32, (1, 2, 4, 8, 12, 16)
PARTS = ("embedding", "layernorm", "mixer", "residual", "mlp", "head", "optimizer", "other")

# (steps, warm-up steps dropped) per kind of run; --quick uses the second table.
STEPS = {
    "full": {"baby": (40, 5), "medium": (8, 2), "long": (8, 2), "mixers": (8, 2), "mixers_torch": (6, 2), "kernel": (60, 5), "mpi": (8, 2),
             "noload": (100, 5), "load": (150, 5), "load_session": (100, 5), "eval_tokens": 0, "rounds": 3},
    "quick": {"baby": (20, 4), "medium": (4, 1), "long": (4, 1), "mixers": (4, 1), "mixers_torch": (3, 1), "kernel": (25, 4), "mpi": (4, 1),
              "noload": (40, 4), "load": (50, 4), "load_session": (40, 4), "eval_tokens": 16384, "rounds": 1},
}

T0 = time.monotonic()


def progress(msg):
    print(f"bench [{time.monotonic() - T0:5.0f}s] {msg}", file=sys.stderr, flush=True)


def c_mixer(mixer):
    """The bin/train mixer (and its --profile row's name) of a bench mixer."""
    return "attention" if mixer == "window" else mixer


def train_args(cfg, mixer):
    window = ["--attn-window", str(WINDOW)] if mixer == "window" else []
    return ["--mixer", c_mixer(mixer)] + window + ["--n-layer", str(cfg["n_layer"]), "--n-head", str(cfg["n_head"]),
            "--n-embd", str(cfg["n_embd"]), "--block-size", str(cfg["block"]), "--batch-size", str(cfg["batch"]),
            "--grassmann-rank", str(RANK), "--grassmann-windows", ",".join(map(str, WINDOWS))]


def gemm_products(report):
    """One training step's matrix products, for bin/gemm-rate, from a bin/train
    --json report: per weight W (out x in) of its "matrices" and N = batch x
    block tokens, forward NT (N, out, in), backward NN (N, in, out) for dX and
    TN (out, in, N) for dW; identical matrices as one product with a count."""
    n_tok = report["batch"] * report["block"]
    counts = {}
    for m in report["matrices"]:
        shape = (m["rows"], m["cols"])
        counts[shape] = counts.get(shape, 0) + 1
    prods = []
    for (o, i), count in counts.items():
        prods += [f"{n_tok}x{o}x{i}:NT:{count}", f"{n_tok}x{i}x{o}:NN:{count}", f"{o}x{i}x{n_tok}:TN:{count}"]
    return prods


def memory_count(report):
    """bin/train's own count in MiB: weights, state (gradients and AdamW moments), activations, bf16 (the
    bf16 weights, operand scratch and packed attention heads of --precision bf16; 0 in fp32), total."""
    m = report.get("memory_mib")
    if not m:
        return None
    bf16 = m.get("bf16", 0.0)
    return {"weights": m["weights"], "state": m["state"], "activations": m["activations"], "bf16": bf16,
            "total": m["weights"] + m["state"] + m["activations"] + bf16}


def profile_parts(report, mixer):
    """bin/train --profile's parts in ms per step: {part: {forward, backward,
    total, share}} with the mixer's row under 'mixer', 'other', and 'step'."""
    p = report.get("profile")
    if not p:
        return None
    prof = {"mixer" if name == c_mixer(mixer) else name: {"forward": row["forward_ms"], "backward": row["backward_ms"],
                                                   "total": row["total_ms"], "share": row["share"]}
            for name, row in p["parts"].items()}
    prof["other"] = {"total": p["other"]["total_ms"], "share": p["other"]["share"]}
    prof["step"] = p["step_ms"]
    return prof


def c_train(ctx, cfg, mixer, steps, warmup, threads, env=None, profile=True, launcher=(), extra=(), bin_dir=BIN):
    """One bin/train run: median ms/step after warm-up, tokens/s over the same
    steps, peak RSS, and from its --json report the BLAS it ran, its memory
    count, profile and the report itself ("train"); the checkpoint.
    threads 0: bin/train's default (the adaptive tuner). launcher: e.g. mpirun
    and its options, before the program; extra: more bin/train options;
    bin_dir: the programs' directory (another BLAS library's build)."""
    log, ckpt = os.path.join(ctx.tmp, "c.csv"), os.path.join(ctx.tmp, f"c-{mixer}.ckpt")
    cmd = list(launcher) + [os.path.join(bin_dir, "train"), "--data", ctx.data, "--out", ckpt, "--max-iters", str(steps),
           "--eval-interval", "0", "--eval-iters", "1", "--log-interval", str(steps), "--log", log,
           "--seed", "1337", "--json"] + train_args(cfg, mixer)
    cmd += ["--threads", str(threads)] if threads else []
    cmd += ["--profile"] if profile else []
    r = run_ok(cmd + list(extra), env)
    report = r.json()
    # Step 0 (validation only) has no step time.
    rows = [row for row in read_train_log(log) if row["ms_per_step"] is not None][warmup:]
    if not rows:
        die(f"bin/train logged no steps after the {warmup} warm-up steps", 1)
    ms = [row["ms_per_step"] for row in rows]
    tokens = cfg["batch"] * cfg["block"]
    used = {}
    for row in rows:
        th = None if row.get("threads") is None else int(row["threads"])
        used[th] = used.get(th, 0) + 1
    return {"ms": med(ms), "tokens_per_s_mean": tokens * len(ms) * 1e3 / sum(ms),
            "rss_mib": r.rss_mib, "kernel": report.get("blas_kernel"), "blas": report.get("blas"), "isa": report.get("isa"),
            "memory": memory_count(report), "profile": profile_parts(report, mixer), "ckpt": ckpt, "train": report,
            "threads_used": {str(k): v for k, v in sorted(used.items(), key=lambda kv: -(kv[0] or 0))}}


def plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def fmt(x, spec=".1f", suffix=""):
    return "n/a" if x is None else f"{x:{spec}}{suffix}"


def table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in [header] + rows]
    print("\n".join(["  " + lines[0], "  " + "-" * len(lines[0])] + ["  " + line for line in lines[1:]]))


class Context:
    """What every measurement needs: paths, threads, steps, rounds, vocabulary."""
