"""What every section uses: the configurations, the steps per kind of run, progress lines,
what bin/train --json says, one bin/train run (c_train), the table printer, and which OpenBLAS the
PyTorch side (bench_torch.py, torch_mixers.py, torch_generate.py) runs on."""
import ctypes
import functools
import os
import sys
import time

from harness import registry
from harness.archs import parse_archs
from harness.common import BIN, die, run_ok
from harness.common import median as med
from harness.experiments import PATH as DEFAULTS, default
from harness.results import read_train_log

CONFIGS = {
    "baby": {"n_layer": 4, "n_head": 4, "n_embd": 128, "block": 64, "batch": 12},
    "medium": {"n_layer": 6, "n_head": 6, "n_embd": 384, "block": 256, "batch": 8},
    "long": {"n_layer": 2, "n_head": 4, "n_embd": 128, "block": 4096, "batch": 1},
}
PRECISIONS = ("fp32", "bf16")
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


# The bench's mixers: architectures of one mixer in every layer, each a registered mixer (at its
# options' defaults) or one named in experiments/defaults.json's bench.mixers with options of its own
# (experiments/README.md says why each is there). The train, scaling and other sections run
# bench.default_mixers unless --mixers says otherwise; the mixers section runs every one of bench.mixers.
@functools.lru_cache(maxsize=1)
def bench_archs():
    """{name: archs.Arch} of experiments/defaults.json's bench.mixers, in order."""
    return {a.name: a for a in parse_archs(" ".join(default("bench", "mixers")), 1, f"{DEFAULTS} bench.mixers")}


def bench_mixers():
    """The names --mixers takes: bench.mixers', then every other registered mixer."""
    return list(bench_archs()) + [m for m in registry.names() if m not in bench_archs()]


def default_mixers():
    return list(default("bench", "default_mixers"))


def reference():
    """The one mixer of the kernel and mpi sections (experiments/defaults.json's bench.reference)."""
    return default("bench", "reference")


def bench_arch(mixer):
    """The architecture of a bench mixer (archs.Arch)."""
    return bench_archs().get(mixer) or parse_archs(mixer, 1, "--mixers")[0]


def c_mixer(mixer):
    """The bin/train mixer (and its --profile row's name) of a bench mixer."""
    return bench_arch(mixer).mixers[0]


def label(mixer):
    """How the tables name a bench mixer: its name, and its own options ('window (window 64)')."""
    a = bench_arch(mixer)
    return registry.label(a.name, a.columns()) if a.options else a.name


def model_args(cfg, mixer):
    """bin/train's model options (bin/info --mixers takes them too) of a bench mixer at a configuration."""
    a = bench_arch(mixer)
    return ["--mixer", a.mixers[0]] + a.train_args() + ["--n-layer", str(cfg["n_layer"]), "--n-head", str(cfg["n_head"]),
            "--n-embd", str(cfg["n_embd"]), "--block-size", str(cfg["block"])]


def train_args(cfg, mixer):
    return model_args(cfg, mixer) + ["--batch-size", str(cfg["batch"])]


def own_options(mixer):
    """{JSON key: value} of a bench mixer's own options (the window's attn_window)."""
    a = bench_arch(mixer)
    return {a.option(k)["json_key"]: int(v) if a.option(k)["kind"] == "size" else v for k, v in a.options.items()}


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
    bf16 weights, operand scratch and packed heads of --precision bf16; 0 in fp32), total."""
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


def loaded_openblas():
    """'OpenBLAS 0.3.21, kernel Cooperlake' for the OpenBLAS mapped into this
    process (PyTorch reaches it through libblas.so.3), or a note saying none."""
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if ".so" in line and "blas" in line.rsplit("/", 1)[-1]}
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_get_config.restype = ctypes.c_char_p
        except (OSError, AttributeError):
            continue
        version = " ".join(lib.openblas_get_config().decode().split()[:2])
        return f"{version}, kernel {lib.openblas_get_corename().decode()}"
    return "no OpenBLAS loaded (PyTorch uses another BLAS)"

