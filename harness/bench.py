"""make bench: speed and memory of this project's C programs on this machine,
against PyTorch running the same model, and against the machine's own sgemm.
Run from the repository root: /usr/bin/python3 -m harness.bench [options].
What it knows of a run of bin/train it reads from bin/train --json (the
model's FLOPs, weight matrices, memory, BLAS kernel, --profile) and its --log
CSV (the step times); bin/eval and bin/gemm-rate are read through --json too.

Sections (--sections, all by default):

train    For each configuration (baby, medium, long) and mixer (attention,
         grassmann): R rounds, each one bin/train run (--threads N, so its
         adaptive thread tuner is off; --profile) followed by one PyTorch run
         of the same model, batch, AdamW and clipping (harness/bench_torch.py,
         torch.set_num_threads(N)) and one bin/gemm-rate run. A run's time is
         the median ms per step after its warm-up steps (bin/train's --log
         CSV, column ms_per_step); the PyTorch/C ratio is taken per round, so
         that machine noise hits both alike, and its median reported.
         FLOPs per token (bin/train's flops_per_token: dense 6 x the sum of
         rows x cols over the weight matrices, the tied head included, the
         embeddings, biases and LayerNorms not; mixing per layer attention
         6 C (T+1), Grassmann 3 (2P + 8 r |D|)) times tokens/s gives the
         achieved GFLOP/s; divided by bin/gemm-rate's FLOP-weighted sgemm rate
         at the model's own products (gemm_products: those of bin/train's
         matrices; same threads, same kernel; the best of the rounds, as
         other load only ever lowers it) it gives the MFU.
         Peak memory is ru_maxrss of each run's process tree (wait4), against
         what bin/train says the model needs (weights + gradients and AdamW
         moments + activations). Per-part times come from bin/train --profile.
         Then, on the last C run's checkpoint (untrained weights: the speed
         does not depend on them), bin/eval over the val split (its first
         16384 tokens with --quick; --threads N)
         and bin/sample for 500 tokens (its default --threads 1): tokens per
         second of wall time of the whole command.
         The C programs use BLIS, PyTorch uses OpenBLAS (libblas.so.3). PyTorch
         is given the best OpenBLAS core for this CPU (best_openblas_core:
         OPENBLAS_CORETYPE set for its runs), unless the environment already
         sets OPENBLAS_CORETYPE, which is then kept as it is (some machines
         pin it because old OpenBLAS builds compute wrong results there). The
         kernel each ran is printed.
         Precisions (--precision fp32,bf16; by default both where the CPU
         has AVX512_BF16, else fp32 and one line saying why): every round runs
         each configuration and mixer in each, alternating: bf16 is bin/train
         --precision bf16, PyTorch under torch.autocast("cpu",
         dtype=torch.bfloat16), and bin/gemm-rate --bf16 at the same products
         (oneDNN, bf16 inputs, fp32 accumulation; TN at C += A B), the rate
         bf16's MFU is taken against. bf16/fp32: the median over rounds of
         fp32 ms / bf16 ms in the same round, for C and for PyTorch. Inference
         is fp32 whatever the training precision, so it runs once, on the
         first precision's checkpoint. The other sections train in fp32.
mixers   The mixers alone as the sequence grows: n_layer 2, n_head 4,
         n_embd 128, T = 256, 1024, 4096 with B = 4096 / T; the mixer's time
         per token (its --profile row), the whole step's, and the peak RSS.
kernel   Default kernel choice: baby attention with the environment as it is
         against <VAR>=<the best kernel for this CPU> (from bin/gemm-rate
         --best-core; VAR is BLIS_ARCH_TYPE or OPENBLAS_CORETYPE, the variable of
         the library bin/ was built with), alternating; ratio of tokens/s. When
         the default run selected its kernels (the library's own choice was
         slower), the library's own choice runs too (<VAR>=<it>).
blas     The two BLAS builds (bin/ and the other library's, bin-blis or
         bin-openblas, which make bench builds; --other-bin DIR), alternating, per
         config and mixer: at the run's thread count, and on 1 thread cutting the
         work as W threads would (LM_PARALLEL_WIDTH=W, W = 1, 16, 64; 1, 16 with
         --quick; the baby config unless --configs says otherwise): what a
         W-way cut costs a core with each library, which a
         2-core machine can measure for 16- and 64-core runs. Per core: 1-way
         ms / W-way ms of the same library.
load     The thread tuner: baby config, bin/train with its default threads
         (adaptive) against --threads 1, alternating: without load, beside one
         busy process (a shell loop, always killed at the end) started by the
         bench, and beside one in a session of its own, as another terminal's
         job would be (Linux's autogroups then share the CPU between sessions);
         tokens/s over each run's steps after warm-up, median per-round ratio.
mpi      Data-parallel training, medium config: 1 rank x 1 thread, 2 ranks x
         1 thread (mpirun -np 2), 1 rank x 2 threads, alternating; tokens/s,
         the ratio to 1 x 1, and the all-reduce wait (--profile) per step.
scaling  For each configuration and mixer, the train section's rounds (C,
         PyTorch, bin/gemm-rate) at every thread count N of --threads (by
         default 1, 2, 4, ... below the core count, then the core count), the
         counts alternating within each round, and then bin/train with its
         default threads (--threads 0, the adaptive tuner); no --profile. Per N:
         tokens/s, the speed-up over 1 thread (median of the per-round ratios),
         the parallel efficiency (speed-up / N), the sgemm rate at the model's
         products on N threads and the MFU against it, PyTorch's tokens/s on N
         threads and C/PyTorch. Then per configuration and mixer the default
         threads against the best fixed N, both as all tokens after warm-up
         over their total time (the tuner's probes included; target >= 0.95).
layouts  For each total core count P >= 2 of the thread counts, every layout
         R ranks x T threads with R x T = P and R a power of two (1 x P first):
         mpirun -np R --bind-to none bin/train --threads T (1 x P without
         mpirun), on the medium configuration (or --configs), each mixer,
         alternating. Every layout of P trains on the same micro-batches per
         optimizer step, those of the most ranks R_max (R ranks x --grad-accum
         R_max / R), so the same tokens and the same training; tokens/s counts
         all ranks' tokens; the per-round ratio to 1 x P, the all-reduce wait,
         and per P the fastest layout.

--threads N is one count for every section; a comma list gives scaling and
layouts their counts (the largest serving the other sections) and, without
--sections, adds those two sections to the default five. --no-torch skips
PyTorch; --torch-python PATH runs it with another interpreter (where the
PyTorch to compare against is installed). --quick runs fewer steps and one
round (about two minutes on 2 cores for the default sections; the full run
about fifteen). Every number printed is measured by this run; what could not
be measured is said so. Progress goes to stderr; --json prints one JSON object
instead of the tables (scaling: {threads, rows, default_threads}, layouts:
{rows, fastest}, rows with named fields; train: one row per config, mixer and
precision, with bf16_over_fp32 and torch_bf16_over_fp32 on bf16 rows, the
row's GEMM rate under sgemm, and eval and sample null on all but the first
precision's)."""
import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time

from harness.common import (BIN, PYTHON, ROOT, cpu_model, die, kill_children, read_train_log, run, run_ok,
                            token_header)
from harness.common import median as med

CONFIGS = {
    "baby": {"n_layer": 4, "n_head": 4, "n_embd": 128, "block": 64, "batch": 12},
    "medium": {"n_layer": 6, "n_head": 6, "n_embd": 384, "block": 256, "batch": 8},
    "long": {"n_layer": 2, "n_head": 4, "n_embd": 128, "block": 4096, "batch": 1},
}
MIXERS = ("attention", "grassmann")
PRECISIONS = ("fp32", "bf16")
RANK, WINDOWS = 32, (1, 2, 4, 8, 12, 16)
MIXER_LENGTHS = (256, 1024, 4096)
MIXER_TOKENS = 4096
SECTIONS = ("train", "mixers", "kernel", "blas", "load", "mpi", "scaling", "layouts")
# What runs when --sections is not given: these, and the last two as well when
# --threads lists more than one count.
DEFAULT_SECTIONS = ("train", "mixers", "kernel", "blas", "load", "mpi")
WIDTHS = {"full": (1, 16, 64), "quick": (1, 16)}  # the blas section's W-way cuts
LAYOUT_CONFIGS = ("medium",)  # the layouts section's configs when --configs is not given
BLAS_CONFIGS = ("baby",)  # the blas section's: the smallest products, where the libraries part most
PARTS = ("embedding", "layernorm", "mixer", "residual", "mlp", "head", "optimizer", "other")

# (steps, warm-up steps dropped) per kind of run; --quick uses the second table.
STEPS = {
    "full": {"baby": (40, 5), "medium": (8, 2), "long": (8, 2), "mixers": (12, 3), "kernel": (60, 5), "mpi": (8, 2),
             "noload": (100, 5), "load": (150, 5), "load_session": (100, 5), "eval_tokens": 0, "rounds": 3},
    "quick": {"baby": (20, 4), "medium": (4, 1), "long": (4, 1), "mixers": (5, 2), "kernel": (25, 4), "mpi": (4, 1),
              "noload": (40, 4), "load": (50, 4), "load_session": (40, 4), "eval_tokens": 16384, "rounds": 1},
}

T0 = time.monotonic()


def progress(msg):
    print(f"bench [{time.monotonic() - T0:5.0f}s] {msg}", file=sys.stderr, flush=True)


# ---- processes ------------------------------------------------------------------

@contextlib.contextmanager
def busy_process(own_session):
    """One process spinning on a core for the duration of the block, in the
    bench's session or in a session of its own (setsid), as a job started from
    another terminal or by another user would be: with Linux's autogroup
    scheduling the CPU is then shared between sessions rather than threads.
    It also stops by itself within a fraction of a second if the bench dies."""
    loop = 'while kill -0 "$1" 2>/dev/null; do i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; done'
    pid = os.posix_spawn("/bin/sh", ["sh", "-c", loop, "sh", str(os.getpid())], dict(os.environ),
                         setsid=own_session)
    try:
        yield pid
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


# ---- what bin/train --json says -------------------------------------------------

def train_args(cfg, mixer):
    return ["--mixer", mixer, "--n-layer", str(cfg["n_layer"]), "--n-head", str(cfg["n_head"]),
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
    prof = {"mixer" if name == mixer else name: {"forward": row["forward_ms"], "backward": row["backward_ms"],
                                                   "total": row["total_ms"], "share": row["share"]}
            for name, row in p["parts"].items()}
    prof["other"] = {"total": p["other"]["total_ms"], "share": p["other"]["share"]}
    prof["step"] = p["step_ms"]
    return prof


# ---- single measurements ---------------------------------------------------------

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


def best_openblas_core():
    """The fastest OpenBLAS 0.3.21 core this CPU's flags allow (/proc/cpuinfo),
    or None: Cooperlake for AVX-512 with BF16, SkylakeX for AVX-512, Zen or
    Haswell for AVX2 with FMA, Sandybridge for AVX."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return None
    flags = set(re.search(r"^flags\s*:(.*)$", text, re.M).group(1).split()) if "flags" in text else set()
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"} <= flags:
        return "Cooperlake" if "avx512_bf16" in flags else "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Zen" if "AuthenticAMD" in text else "Haswell"
    return "Sandybridge" if "avx" in flags else None


# --isa: our level (LM_MAX_ISA) and PyTorch's ATEN_CPU_CAPABILITY for it.
ISA_ATEN = {"portable": "default", "avx2": "avx2", "avx512": "avx512"}


def torch_isa():
    """PyTorch's kernel level as the bench set it (ATEN_CPU_CAPABILITY), or best."""
    return os.environ.get("ATEN_CPU_CAPABILITY") or "best"


def cap_isa(level):
    """--isa: cap our kernels (LM_MAX_ISA) and PyTorch's (ATEN_CPU_CAPABILITY)
    alike for every run the bench starts; dies in one line on a level that
    bin/gemm-rate --isa-levels does not list (this CPU lacks it)."""
    if level not in ISA_ATEN:
        die(f"--isa must be one of {', '.join(ISA_ATEN)} (got '{level}')")
    r = run([os.path.join(BIN, "gemm-rate"), "--isa-levels"])
    levels = r.out.split() if r.status == 0 else []
    if level not in levels:
        die(f"--isa {level}: this CPU runs {', '.join(levels) or 'no level (bin/gemm-rate --isa-levels failed)'}")
    os.environ["LM_MAX_ISA"] = level
    os.environ["ATEN_CPU_CAPABILITY"] = ISA_ATEN[level]


def torch_env():
    """The environment for PyTorch: the environment's OPENBLAS_CORETYPE if it
    sets one, else the best OpenBLAS core for this CPU."""
    env = dict(os.environ)
    best = best_openblas_core()
    if best and not os.environ.get("OPENBLAS_CORETYPE"):
        env["OPENBLAS_CORETYPE"] = best
    return env


def torch_train(ctx, c, steps, warmup, threads, precision="fp32"):
    """One harness/bench_torch.py run (with --torch-python's interpreter, N
    threads) of the model of the C run c (the config of its bin/train --json
    report, its batch): median ms/step after warm-up, peak RSS, the OpenBLAS
    kernel it ran; None (and ctx.torch_missing set) on failure or with
    --no-torch."""
    if ctx.torch_missing:
        return None
    env = torch_env()
    cmd = [ctx.torch_python, "-m", "harness.bench_torch", json.dumps(c["train"]["config"]), ctx.data,
           str(c["train"]["batch"]), str(steps), str(threads), precision]
    r = run(cmd, env, cwd=ROOT)
    if r.status != 0:
        ctx.torch_missing = f"PyTorch run failed: {r.why()}"
        return None
    res = json.loads(r.out)
    ms = res["ms"][warmup:]
    return {"ms": med(ms), "rss_mib": r.rss_mib, "blas": res["blas"],
            "kernel": res["blas"].rsplit("kernel ", 1)[-1], "threads": res["threads"],
            "base_rss_mib": res["base_rss_mib"],
            "env_coretype": env.get("OPENBLAS_CORETYPE") if env.get("OPENBLAS_CORETYPE") != os.environ.get("OPENBLAS_CORETYPE") else None}


def gemm_rate(c, threads, precision="fp32"):
    """bin/gemm-rate --json over one training step's products of the C run c, on N threads: the sgemm
    rate, or with bf16 (--bf16) the bf16 rate ("gflops") with "blas" naming oneDNN."""
    cmd = [os.path.join(BIN, "gemm-rate"), "--threads", str(threads), "--json"] + gemm_products(c["train"])
    if precision == "fp32":
        return run_ok(cmd).json()
    r = run_ok(cmd[:1] + ["--bf16"] + cmd[1:]).json()
    r["blas"] = r["bf16"]
    return r


def eval_speed(ctx, ckpt):
    """bin/eval over the val split (or its prefix with --quick): scored tokens per wall second."""
    cmd = [os.path.join(BIN, "eval"), "--model", ckpt, "--data", ctx.eval_data, "--split", "val",
           "--threads", str(ctx.threads), "--json"]
    r = run_ok(cmd)
    scored = r.json()["scored"]
    return {"tokens": scored, "seconds": r.seconds, "tokens_per_s": scored / r.seconds, "rss_mib": r.rss_mib}


def sample_speed(ctx, ckpt, n=500):
    """bin/sample of n tokens (its default --threads 1): tokens per wall second."""
    r = run_ok([os.path.join(BIN, "sample"), "--model", ckpt, "--tokens", str(n)])
    return {"tokens": n, "seconds": r.seconds, "tokens_per_s": n / r.seconds, "rss_mib": r.rss_mib}


# ---- sections --------------------------------------------------------------------

def train_rounds(ctx, section, name, mixer, thread_counts, profile=True, tuner=False, precisions=("fp32",)):
    """R rounds, each of: for every N of thread_counts and every precision,
    bin/train --threads N [--precision bf16], PyTorch on N threads (bf16:
    under CPU autocast) and bin/gemm-rate on N threads (bf16: --bf16, the
    bf16 rate), so that machine noise hits C, PyTorch, N and the precisions
    alike; with tuner, then bin/train with its default threads. Returns
    ({(N, precision): summarise_train(...)}, the default runs)."""
    cfg = CONFIGS[name]
    steps, warmup = ctx.steps[name]
    runs = {(n, p): ([], [], []) for n in thread_counts for p in precisions}
    tuned = []
    for rnd in range(ctx.rounds):
        for n in thread_counts:
            for p in precisions:
                extra = ["--precision", p] if p != "fp32" else []
                c = c_train(ctx, cfg, mixer, steps, warmup, n, profile=profile, extra=extra)
                t = torch_train(ctx, c, steps, warmup, n, p)
                g = gemm_rate(c, n, p)
                for kept, x in zip(runs[(n, p)], (c, t, g)):
                    kept.append(x)
                progress(f"{section} {name} {mixer} {p} round {rnd + 1}/{ctx.rounds}, {plural(n, 'thread')}: "
                         f"C {c['ms']:.1f} ms/step, "
                         + (f"PyTorch {t['ms']:.1f} ms/step ({t['ms'] / c['ms']:.2f}x)" if t else "PyTorch n/a")
                         + f", {'sgemm' if p == 'fp32' else 'bf16 GEMM'} {g['gflops']:.0f} GFLOP/s")
        if tuner:
            d = c_train(ctx, cfg, mixer, steps, warmup, 0, profile=False)
            tuned.append(d)
            progress(f"{section} {name} {mixer} round {rnd + 1}/{ctx.rounds}, default threads: "
                     f"{d['tokens_per_s_mean']:.0f} tokens/s (threads used: "
                     + " ".join(f"{k}:{v}" for k, v in d["threads_used"].items()) + ")")
    tokens = cfg["batch"] * cfg["block"]
    return {k: summarise_train(ctx, name, cfg, mixer, tokens, *r, precision=k[1]) for k, r in runs.items()}, tuned


def precision_ratio(fp32_rounds_ms, bf16_rounds_ms):
    """bf16's speed over fp32's: the median over rounds of fp32 ms / bf16 ms in
    the same round (None if either was not measured)."""
    pairs = [(f, b) for f, b in zip(fp32_rounds_ms or [], bf16_rounds_ms or []) if f and b]
    return med([f / b for f, b in pairs]) if pairs else None


def section_train(ctx):
    results = []
    for name in ctx.configs:
        for mixer in ctx.mixers:
            summaries, _ = train_rounds(ctx, "train", name, mixer, [ctx.threads], precisions=ctx.precisions)
            rows = [summaries[(ctx.threads, p)] for p in ctx.precisions]
            fp32 = summaries.get((ctx.threads, "fp32"))
            for r in rows:
                last = r["c"].pop("ckpt")
                r["bf16_over_fp32"] = None
                r["torch_bf16_over_fp32"] = None
                if r["precision"] != "fp32" and fp32:
                    r["bf16_over_fp32"] = precision_ratio(fp32["c"]["rounds_ms"], r["c"]["rounds_ms"])
                    r["torch_bf16_over_fp32"] = precision_ratio(fp32["torch"] and fp32["torch"]["rounds_ms"],
                                                                r["torch"] and r["torch"]["rounds_ms"])
                # Inference is fp32 whatever the training precision: measured once, on the first precision's model.
                r["eval"] = r["sample"] = None
                if r is rows[0]:
                    r["eval"] = eval_speed(ctx, last)
                    r["sample"] = sample_speed(ctx, last)
                    progress(f"train {name} {mixer}: eval {r['eval']['tokens_per_s']:.0f} tokens/s, "
                             f"sample {r['sample']['tokens_per_s']:.0f} tokens/s")
            results += rows
    return results


def utilisation(flops_per_token, tokens_per_s, sgemm_gflops):
    """(achieved GFLOP/s, MFU): FLOPs per token x tokens/s, and that over the
    sgemm rate (None without one)."""
    gflops = flops_per_token * tokens_per_s * 1e-9
    return gflops, gflops / sgemm_gflops if sgemm_gflops else None


def summarise_train(ctx, name, cfg, mixer, tokens, c_runs, t_runs, g_runs, precision="fp32"):
    flops = {k: c_runs[-1]["train"]["flops_per_token"][k] for k in ("dense", "mixing", "total")}
    c_ms = med([c["ms"] for c in c_runs])
    t_ok = [t for t in t_runs if t]
    t_ms = med([t["ms"] for t in t_ok])
    ratios = [t["ms"] / c["ms"] for c, t in zip(c_runs, t_runs) if t]
    gemm = max(g["gflops"] for g in g_runs)  # load from elsewhere only ever lowers it
    mem = c_runs[-1]["memory"]

    def speed(ms, rss):
        if ms is None:
            return None
        tps = tokens * 1e3 / ms
        gflops, mfu = utilisation(flops["total"], tps, gemm)
        return {"ms_per_step": ms, "tokens_per_s": tps, "gflops": gflops, "mfu": mfu,
                "peak_rss_mib": rss, "rss_over_theory": rss / mem["total"] if mem and rss else None}

    c = speed(c_ms, max(x["rss_mib"] for x in c_runs))
    c.update({"blas": c_runs[-1]["blas"], "kernel": c_runs[-1]["kernel"], "isa": c_runs[-1]["isa"],
              "rounds_ms": [x["ms"] for x in c_runs],
              "rounds_tokens_per_s_mean": [x["tokens_per_s_mean"] for x in c_runs], "ckpt": c_runs[-1]["ckpt"]})
    t = speed(t_ms, max(x["rss_mib"] for x in t_ok) if t_ok else None)
    if t:
        t.update({"blas": t_ok[-1]["blas"], "kernel": t_ok[-1]["kernel"], "threads": t_ok[-1]["threads"],
                  "base_rss_mib": t_ok[-1]["base_rss_mib"], "openblas_coretype": t_ok[-1]["env_coretype"],
                  "rounds_ms": [x["ms"] for x in t_ok]})
    profiles = [x["profile"] for x in c_runs if x["profile"]]
    profile = None
    if profiles:
        profile = {part: {k: med([p.get(part, {}).get(k) for p in profiles])
                          for k in ("forward", "backward", "total", "share")} for part in PARTS}
        profile["step"] = med([p.get("step") for p in profiles])
    return {"config": name, "mixer": mixer, "precision": precision, "shape": dict(cfg), "tokens_per_step": tokens,
            "flops_per_token": flops,
            "c": c, "torch": t, "torch_unavailable": None if t else ctx.torch_missing,
            "torch_over_c": {"median": med(ratios), "rounds": ratios},
            "sgemm": {"gflops": gemm, "precision": precision, "rounds": [g["gflops"] for g in g_runs], "blas": g_runs[-1]["blas"],
                      "products": g_runs[-1]["products"]},
            "memory": mem, "profile": profile}


def section_mixers(ctx):
    steps, warmup = ctx.steps["mixers"]
    runs = {}
    for rnd in range(ctx.rounds):
        for T in MIXER_LENGTHS:
            cfg = {"n_layer": 2, "n_head": 4, "n_embd": 128, "block": T, "batch": MIXER_TOKENS // T}
            for mixer in ctx.mixers:
                c = c_train(ctx, cfg, mixer, steps, warmup, ctx.threads)
                runs.setdefault((T, mixer), []).append(c)
                mix = (c["profile"] or {}).get("mixer", {}).get("total")
                progress(f"mixers round {rnd + 1}/{ctx.rounds} T={T} {mixer}: {c['ms']:.1f} ms/step"
                         + (f", mixer {mix:.1f} ms" if mix is not None else ""))
    out = []
    for (T, mixer), cs in runs.items():
        per_tok = 1e3 / MIXER_TOKENS
        mix = med([(c["profile"] or {}).get("mixer", {}).get("total") for c in cs])
        out.append({"T": T, "B": MIXER_TOKENS // T, "mixer": mixer,
                    "mixer_us_per_token": mix * per_tok if mix is not None else None,
                    "step_us_per_token": med([c["ms"] for c in cs]) * per_tok,
                    "peak_rss_mib": max(c["rss_mib"] for c in cs),
                    "activations_mib": cs[-1]["memory"]["activations"] if cs[-1]["memory"] else None})
    return out


# The variable that selects each library's kernels (src/blas/backends/).
KERNEL_VARIABLE = {"blis": "BLIS_ARCH_TYPE", "openblas": "OPENBLAS_CORETYPE"}
LIBRARY_NAME = {"blis": "BLIS", "openblas": "OpenBLAS"}


def library_of(bin_dir):
    """The BLAS library the programs in bin_dir were linked with (the name make
    writes to .blas-library there), or None."""
    try:
        with open(os.path.join(bin_dir, ".blas-library")) as f:
            name = f.read().strip()
    except OSError:
        return None
    return name if name in KERNEL_VARIABLE else None


def section_kernel(ctx):
    var = KERNEL_VARIABLE.get(ctx.library, "BLIS_ARCH_TYPE")
    if os.environ.get(var):
        return {"variable": var, "skipped": f"{var}={os.environ[var]} is set by the environment: "
                                            "the programs keep it, so there is no default choice to check"}
    best = run_ok([os.path.join(BIN, "gemm-rate"), "--best-core"]).out.strip()
    if not best or best == "none":
        return {"variable": var,
                "skipped": "no kernel worth choosing for this CPU (bin/gemm-rate --best-core: none)"}
    steps, warmup = ctx.steps["kernel"]
    cfg = CONFIGS["baby"]
    runs = {"default": [], "forced": [], "library": []}
    library = None
    for rnd in range(ctx.rounds):
        d = c_train(ctx, cfg, "attention", steps, warmup, ctx.threads, profile=False)
        f = c_train(ctx, cfg, "attention", steps, warmup, ctx.threads, env=dict(os.environ, **{var: best}),
                    profile=False)
        runs["default"].append(d), runs["forced"].append(f)
        m = re.search(r"selected: the library chose (\w+)", d["blas"] or "")
        library = library or (m and m.group(1))
        if library:
            runs["library"].append(c_train(ctx, cfg, "attention", steps, warmup, ctx.threads,
                                           env=dict(os.environ, **{var: library}), profile=False))
        progress(f"kernel round {rnd + 1}/{ctx.rounds}: " + ", ".join(
            f"{k} {v[-1]['kernel']} {v[-1]['ms']:.1f} ms/step" for k, v in runs.items() if v))
    tokens = cfg["batch"] * cfg["block"]
    out = {"variable": var, "best_core": best, "library_core": library}
    for k, v in runs.items():
        if v:
            out[k + "_blas"] = v[-1]["blas"]
            out[k + "_tokens_per_s"] = tokens * 1e3 / med([x["ms"] for x in v])
    out["rounds"] = [f["ms"] / d["ms"] for d, f in zip(runs["default"], runs["forced"])]
    out["ratio"] = med(out["rounds"])
    if library:
        out["over_library"] = med([lib["ms"] / d["ms"] for d, lib in zip(runs["default"], runs["library"])])
    return out


def tuner_rounds(ctx, steps, warmup, label):
    """Per baby mixer: R rounds of bin/train with default threads then --threads 1."""
    cfg = CONFIGS["baby"]
    out = []
    for mixer in ctx.mixers:
        ratios, dflt, one = [], [], []
        for rnd in range(ctx.rounds):
            d = c_train(ctx, cfg, mixer, steps, warmup, 0, profile=False)
            s = c_train(ctx, cfg, mixer, steps, warmup, 1, profile=False)
            dflt.append(d), one.append(s)
            ratios.append(d["tokens_per_s_mean"] / s["tokens_per_s_mean"])
            progress(f"load ({label}) {mixer} round {rnd + 1}/{ctx.rounds}: default {d['tokens_per_s_mean']:.0f}, "
                     f"1 thread {s['tokens_per_s_mean']:.0f} tokens/s ({ratios[-1]:.2f}x)")
        threads_used = {}
        for d in dflt:
            for k, v in d["threads_used"].items():
                threads_used[k] = threads_used.get(k, 0) + v
        out.append({"mixer": mixer, "default_tokens_per_s": med([d["tokens_per_s_mean"] for d in dflt]),
                    "one_thread_tokens_per_s": med([s["tokens_per_s_mean"] for s in one]),
                    "ratio": med(ratios), "rounds": ratios, "default_threads_steps": threads_used})
    return out


LOAD_CASES = (("no_load", "no other load", "noload", None),
              ("busy", "one busy process (a shell loop started by the bench)", "load", False),
              ("busy_own_session", "one busy process in a session of its own (setsid)", "load_session", True))


def section_load(ctx):
    res = {}
    for key, label, steps, own_session in LOAD_CASES:
        with busy_process(own_session) if own_session is not None else contextlib.nullcontext():
            res[key] = tuner_rounds(ctx, *ctx.steps[steps], key.replace("_", " "))
    return res


NO_MPIRUN = "mpirun not found (Debian openmpi-bin)"


def mpi_env():
    """The environment for mpirun: Open MPI refuses to run as root unless told."""
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def mpi_launcher(mpirun, ranks, threads, *options):
    """mpirun for `ranks` ranks of `threads` OpenMP threads each on this machine
    (--oversubscribe: Open MPI may count fewer slots than cores), then options."""
    return [mpirun, "-np", str(ranks), "--oversubscribe", *options, "-x", f"OMP_NUM_THREADS={threads}"]


MPI_CASES = (("1 rank x 1 thread", 1, 1), ("2 ranks x 1 thread", 2, 1), ("1 rank x 2 threads", 1, 2))


def section_mpi(ctx):
    """Data-parallel scaling on the medium config (attention): 1 rank x 1
    thread, 2 ranks x 1 thread (mpirun), 1 rank x 2 threads, alternating;
    tokens/s (2 ranks take twice the tokens a step) and, for 2 ranks, the
    all-reduce wait (its --profile row) as a share of the step."""
    mpirun = shutil.which("mpirun")
    if not mpirun:
        return {"skipped": NO_MPIRUN}
    steps, warmup = ctx.steps["mpi"]
    cfg = CONFIGS["medium"]
    env = mpi_env()
    runs = {}
    for rnd in range(ctx.rounds):
        for label, ranks, threads in MPI_CASES:
            launcher = mpi_launcher(mpirun, ranks, threads) if ranks > 1 else []
            c = c_train(ctx, cfg, "attention", steps, warmup, threads, env=env, launcher=launcher)
            tps = ranks * cfg["batch"] * cfg["block"] * 1e3 / c["ms"]
            wait = (c["profile"] or {}).get("allreduce", {}).get("total")
            runs.setdefault(label, []).append({"tokens_per_s": tps, "ms": c["ms"], "wait_ms": wait})
            progress(f"mpi round {rnd + 1}/{ctx.rounds} {label}: {c['ms']:.0f} ms/step, {tps:.0f} tokens/s"
                     + (f", all-reduce wait {wait:.1f} ms" if wait is not None else ""))
    base = [r["tokens_per_s"] for r in runs[MPI_CASES[0][0]]]
    out = []
    for label, ranks, threads in MPI_CASES:
        rs = runs[label]
        out.append({"case": label, "ranks": ranks, "threads": threads,
                    "tokens_per_s": med([r["tokens_per_s"] for r in rs]),
                    "over_1x1": med([r["tokens_per_s"] / b for r, b in zip(rs, base)]),
                    "wait_ms": med([r["wait_ms"] for r in rs]) if ranks > 1 else None,
                    "wait_share": med([r["wait_ms"] / r["ms"] for r in rs if r["wait_ms"] is not None]) if ranks > 1 else None})
    return {"cases": out}


# ---- thread counts and layouts -----------------------------------------------------

def section_blas(ctx):
    """The two BLAS builds side by side (bin/ and --other-bin), per config and
    mixer, alternating: at the run's thread count, and on 1 thread cutting the
    work as W threads would (LM_PARALLEL_WIDTH=W, lm/threads.h), so
    that a small machine measures what a W-way cut costs each core: the rows
    and tiles of a product shrink as threads grow, and a library's per-call
    costs (packing) with them. Per-core efficiency: 1-way ms / W-way ms, the
    ceiling the cut alone puts on W threads' parallel efficiency (memory
    bandwidth and clocks not included)."""
    if not ctx.other_bin:
        return {"skipped": ctx.other_missing}
    builds = {ctx.library: BIN, ctx.other_library: ctx.other_bin}
    rows = []
    for name in ctx.blas_configs:
        cfg = CONFIGS[name]
        steps, warmup = ctx.steps[name]
        for mixer in ctx.mixers:
            cases = [(ctx.threads, None)] + [(1, w) for w in ctx.widths]
            ms = {(lib, case): [] for lib in builds for case in cases}
            for rnd in range(ctx.rounds):
                for threads, width in cases:
                    env = dict(os.environ, LM_PARALLEL_WIDTH=str(width)) if width else None
                    for lib, bin_dir in builds.items():
                        c = c_train(ctx, cfg, mixer, steps, warmup, threads, env=env, profile=False, bin_dir=bin_dir)
                        ms[(lib, (threads, width))].append(c["ms"])
                    progress(f"blas {name} {mixer} round {rnd + 1}/{ctx.rounds}, {plural(threads, 'thread')}"
                             + (f" cut {width} ways" if width else "") + ": "
                             + ", ".join(f"{LIBRARY_NAME[lib]} {ms[(lib, (threads, width))][-1]:.1f} ms"
                                         for lib in builds))
            for threads, width in cases:
                row = {"config": name, "mixer": mixer, "threads": threads, "width": width or threads}
                for lib in builds:
                    mine = ms[(lib, (threads, width))]
                    one = ms[(lib, (1, 1))] if 1 in ctx.widths else None
                    row[lib] = {"ms_per_step": med(mine), "tokens_per_s": cfg["batch"] * cfg["block"] * 1e3 / med(mine),
                                "per_core_efficiency": med([o / x for o, x in zip(one, mine)]) if one and width else None}
                row["ratio"] = med([o / x for o, x in zip(ms[(ctx.other_library, (threads, width))],
                                                          ms[(ctx.library, (threads, width))])])
                rows.append(row)
    return {"libraries": list(builds), "widths": ctx.widths, "rows": rows}


def print_blas(ctx, res):
    print("\n== The BLAS libraries: this build against the other, and a core's cost of a W-way cut ==")
    if "skipped" in res:
        print(f"  skipped: {res['skipped']}")
        return
    this, other = res["libraries"]
    a, b = LIBRARY_NAME[this], LIBRARY_NAME[other]
    table(["config", "mixer", "threads", "cut", f"{a} ms/step", f"{b} ms/step", f"{b}/{a}",
           f"{a} per core", f"{b} per core"],
          [[r["config"], r["mixer"], str(r["threads"]), f"{r['width']} ways", fmt(r[this]["ms_per_step"]),
            fmt(r[other]["ms_per_step"]), fmt(r["ratio"], ".2f", "x"),
            fmt(r[this]["per_core_efficiency"] and 100 * r[this]["per_core_efficiency"], ".0f", "%"),
            fmt(r[other]["per_core_efficiency"] and 100 * r[other]["per_core_efficiency"], ".0f", "%")]
           for r in res["rows"]])
    print(f"  {b}/{a}: median over rounds of {b}'s ms per step / {a}'s in the same round (> 1: {a} is faster).")
    print("  cut W ways: 1 thread doing the pieces of work each of W threads would (LM_PARALLEL_WIDTH=W);")
    print("  per core: that library's 1-way ms / W-way ms, the ceiling the cut puts on W threads' efficiency.")


def parse_threads(text):
    """--threads: one positive count or a comma list of them, as a sorted list
    without repeats; None if text is not that."""
    parts = text.split(",")
    if not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        return None
    return sorted({int(p) for p in parts})


def default_thread_list(nproc):
    """The scaling section's counts when --threads is not given: 1, 2, 4, ...
    below nproc, then nproc itself."""
    counts, n = [], 1
    while n < nproc:
        counts.append(n)
        n *= 2
    return counts + [nproc]


def layouts(cores):
    """(ranks, threads per rank) with ranks x threads = cores and ranks a power
    of two, 1 x cores first."""
    out, r = [], 1
    while r <= cores:
        if cores % r == 0:
            out.append((r, cores // r))
        r *= 2
    return out


def scaling(base_rounds_ms, rounds_ms, threads):
    """(speed-up, parallel efficiency) of a run on N threads over the 1-thread
    run: the median over rounds of 1-thread ms / N-thread ms in the same round,
    and that / N; (None, None) without a 1-thread run."""
    if not base_rounds_ms:
        return None, None
    speedup = med([b / x for b, x in zip(base_rounds_ms, rounds_ms)])
    return speedup, speedup / threads


def section_scaling(ctx):
    """Per config and mixer, train_rounds over the thread counts (and bin/train's
    default threads): one row per count, and one comparing the default with
    the best fixed count."""
    rows, defaults = [], []
    for name in ctx.configs:
        for mixer in ctx.mixers:
            summaries, tuned = train_rounds(ctx, "scaling", name, mixer, ctx.thread_list, profile=False, tuner=True)
            summaries = {n: s for (n, _), s in summaries.items()}  # fp32 only
            base = summaries[1]["c"]["rounds_ms"] if 1 in summaries else None
            for n, s in summaries.items():
                speedup, efficiency = scaling(base, s["c"]["rounds_ms"], n)
                t = s["torch"]
                rows.append({"config": name, "mixer": mixer, "threads": n, "ranks": 1,
                             "ms_per_step": s["c"]["ms_per_step"], "tokens_per_s": s["c"]["tokens_per_s"],
                             "speedup": speedup, "efficiency": efficiency, "sgemm_gflops": s["sgemm"]["gflops"],
                             "gflops": s["c"]["gflops"], "mfu": s["c"]["mfu"],
                             "torch_tokens_per_s": t and t["tokens_per_s"], "torch_mfu": t and t["mfu"],
                             "torch_threads": t and t["threads"], "ratio": s["torch_over_c"]["median"],
                             "kernel": s["c"]["kernel"], "torch_kernel": t and t["kernel"]})
            defaults.append(default_row(name, mixer, summaries, tuned))
    return {"threads": ctx.thread_list, "rows": rows, "default_threads": defaults,
            "torch_unavailable": ctx.torch_missing}


def default_row(name, mixer, summaries, tuned):
    """bin/train's default threads against the fixed count with the most
    tokens/s; both as all tokens after warm-up over their total time (the
    tuner's probes included), the ratio the median of the per-round ratios."""
    fixed = {n: s["c"]["rounds_tokens_per_s_mean"] for n, s in summaries.items()}
    best = max(fixed, key=lambda n: med(fixed[n]))
    used = {}
    for d in tuned:
        for k, v in d["threads_used"].items():
            used[k] = used.get(k, 0) + v
    return {"config": name, "mixer": mixer, "tokens_per_s": med([d["tokens_per_s_mean"] for d in tuned]),
            "threads_used_steps": used, "best_threads": best, "best_tokens_per_s": med(fixed[best]),
            "ratio": med([d["tokens_per_s_mean"] / b for d, b in zip(tuned, fixed[best])])}


def section_layouts(ctx):
    """Per total core count P >= 2 of the thread counts: every layout R ranks x
    T threads (layouts(P)), alternating, on the same micro-batches per
    optimizer step (the most ranks, R_max: R ranks x --grad-accum R_max / R);
    tokens/s of all ranks, the per-round ratio to 1 x P, the all-reduce wait."""
    mpirun = shutil.which("mpirun")
    if not mpirun:
        return {"skipped": NO_MPIRUN}
    cores = [p for p in ctx.thread_list if p >= 2]
    if not cores:
        return {"skipped": "no count of 2 or more in --threads"}
    rows, fastest = [], []
    for name in ctx.layout_configs:
        cfg = CONFIGS[name]
        steps, warmup = ctx.steps[name]
        for mixer in ctx.mixers:
            runs = {}
            for rnd in range(ctx.rounds):
                for p in cores:
                    micro = layouts(p)[-1][0]
                    for ranks, threads in layouts(p):
                        launcher = mpi_launcher(mpirun, ranks, threads, "--bind-to", "none") if ranks > 1 else []
                        c = c_train(ctx, cfg, mixer, steps, warmup, threads, env=mpi_env(), launcher=launcher,
                                    extra=["--grad-accum", str(micro // ranks)])
                        tps = micro * cfg["batch"] * cfg["block"] * 1e3 / c["ms"]
                        wait = (c["profile"] or {}).get("allreduce", {}).get("total")
                        runs.setdefault((p, ranks), []).append({"tokens_per_s": tps, "ms": c["ms"], "wait_ms": wait})
                        progress(f"layouts {name} {mixer} round {rnd + 1}/{ctx.rounds}: {ranks} x {threads} "
                                 f"(--grad-accum {micro // ranks}): {c['ms']:.0f} ms/step, {tps:.0f} tokens/s")
            for p in cores:
                base = [r["tokens_per_s"] for r in runs[(p, 1)]]
                these = []
                for ranks, threads in layouts(p):
                    rs = runs[(p, ranks)]
                    waits = [r["wait_ms"] for r in rs if r["wait_ms"] is not None]
                    these.append({"config": name, "mixer": mixer, "cores": p, "ranks": ranks, "threads": threads,
                                  "grad_accum": layouts(p)[-1][0] // ranks,
                                  "tokens_per_step": layouts(p)[-1][0] * cfg["batch"] * cfg["block"],
                                  "tokens_per_s": med([r["tokens_per_s"] for r in rs]),
                                  "ratio": med([r["tokens_per_s"] / b for r, b in zip(rs, base)]),
                                  "wait_ms": med(waits) if ranks > 1 else None,
                                  "wait_share": med([r["wait_ms"] / r["ms"] for r in rs if r["wait_ms"] is not None])
                                  if ranks > 1 else None})
                rows += these
                best = max(these, key=lambda r: r["tokens_per_s"])
                fastest.append({k: best[k] for k in ("config", "mixer", "cores", "ranks", "threads", "tokens_per_s",
                                                     "ratio")})
    return {"rows": rows, "fastest": fastest}


# ---- tables ----------------------------------------------------------------------

def plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def fmt(x, spec=".1f", suffix=""):
    return "n/a" if x is None else f"{x:{spec}}{suffix}"


def table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in [header] + rows]
    print("\n".join(["  " + lines[0], "  " + "-" * len(lines[0])] + ["  " + line for line in lines[1:]]))


def print_speed(ctx, res):
    steps = ", ".join(f"{n} {ctx.steps[n][0]} steps ({ctx.steps[n][1]} dropped)" for n in ctx.configs)
    print(f"\n== Training steps, C vs PyTorch ({plural(ctx.rounds, 'alternating round')}; {steps}) ==")
    table(["config", "mixer", "precision", "isa C/PT", "C ms/step", "PT ms/step", "C tokens/s", "PT tokens/s", "PT/C",
           "C bf16/fp32", "PT bf16/fp32", "C kernel", "PT kernel"],
          [[r["config"], r["mixer"], r["precision"], f'{r["c"].get("isa") or "?"}/{torch_isa() if r["torch"] else "n/a"}',
            fmt(r["c"]["ms_per_step"]),
            fmt(r["torch"] and r["torch"]["ms_per_step"]),
            fmt(r["c"]["tokens_per_s"], ",.0f"), fmt(r["torch"] and r["torch"]["tokens_per_s"], ",.0f"),
            fmt(r["torch_over_c"]["median"], ".2f", "x"), fmt(r.get("bf16_over_fp32"), ".2f", "x"),
            fmt(r.get("torch_bf16_over_fp32"), ".2f", "x"), r["c"]["kernel"] or "?",
            r["torch"]["kernel"] if r["torch"] else "n/a"] for r in res])
    print("  isa C/PT: the instruction-set level our kernels ran at (bin/train's start-up line; --isa caps it with\n"
          "  LM_MAX_ISA) / PyTorch's ATEN_CPU_CAPABILITY (best: not capped). The BLAS kernels are in the last columns.\n"
          "  ms/step: median over rounds of each run's median step time after warm-up (PT: PyTorch).\n"
          "  PT/C: median over rounds of PyTorch ms / C ms in the same round. precision bf16: bin/train\n"
          "  --precision bf16, PyTorch under torch.autocast(\"cpu\", dtype=torch.bfloat16); bf16/fp32: median over\n"
          "  rounds of fp32 ms / bf16 ms in the same round (> 1: bf16 is faster).")
    said = set()
    for r in res:
        if r["torch"] and r["torch"]["openblas_coretype"] and (r["config"], r["mixer"]) not in said:
            said.add((r["config"], r["mixer"]))
            print(f"  {r['config']} {r['mixer']}: PyTorch ran with OPENBLAS_CORETYPE={r['torch']['openblas_coretype']}"
                  " (the best OpenBLAS core for this CPU)")
    for r in res:
        if r["torch"] and r["torch"]["threads"] != ctx.threads:
            print(f"  {r['config']} {r['mixer']}: PyTorch ran {r['torch']['threads']} threads, not {ctx.threads}")
    notes = {r["torch_unavailable"] for r in res if r["torch_unavailable"]}
    for n in notes:
        print(f"  PyTorch not measured: {n}")
    for prog, blas in (("bin/train", {r["c"]["blas"] for r in res}), ("bin/gemm-rate", {r["sgemm"]["blas"] for r in res}),
                       ("PyTorch", {r["torch"]["blas"] for r in res if r["torch"]})):
        if blas:
            print(f"  {prog} ran: " + "; ".join(sorted(b or "?" for b in blas)))


def print_flops(ctx, res):
    print(f"\n== FLOPs and utilisation ({ctx.threads} threads) ==")
    table(["config", "mixer", "precision", "MFLOP/token", "dense", "mixing", "GEMM GFLOP/s", "C GFLOP/s", "C MFU",
           "PT GFLOP/s", "PT MFU"],
          [[r["config"], r["mixer"], r["precision"], fmt(r["flops_per_token"]["total"] / 1e6, ".2f"),
            fmt(r["flops_per_token"]["dense"] / 1e6, ".2f"), fmt(r["flops_per_token"]["mixing"] / 1e6, ".2f"),
            fmt(r["sgemm"]["gflops"]), fmt(r["c"]["gflops"]), fmt(r["c"]["mfu"] and 100 * r["c"]["mfu"], ".0f", "%"),
            fmt(r["torch"] and r["torch"]["gflops"]),
            fmt(r["torch"] and r["torch"]["mfu"] and 100 * r["torch"]["mfu"], ".0f", "%")] for r in res])
    print("  FLOPs/token: dense 6 x sum(rows x cols) of the weight matrices (LM head included, embeddings, biases,\n"
          "  LayerNorms not counted) + mixing per layer: attention 6C(T+1), Grassmann 3(2P + 8r|D|), P = r(r-1)/2.\n"
          "  sgemm: bin/gemm-rate over one step's products at the model's shapes (forward NT, backward NN and TN),\n"
          "  total FLOPs / total time, the best of the rounds; bf16 rows: bin/gemm-rate --bf16 at the same products\n"
          "  (oneDNN, bf16 inputs, fp32 accumulation; TN at C += A B). MFU = achieved GFLOP/s / the row's rate.")
    high = [f"{r['config']} {r['mixer']}" for r in res if (r["c"]["mfu"] or 0) > 1 or (r["torch"] and (r["torch"]["mfu"] or 0) > 1)]
    if high:
        print(f"  MFU above 100% ({', '.join(high)}): the sgemm runs were slowed by other load; more rounds help.")


def print_memory(ctx, res):
    print("\n== Peak memory (ru_maxrss of the process tree) ==")
    table(["config", "mixer", "precision", "weights", "grads+moments", "activations", "bf16", "theory MiB", "C peak MiB", "C/theory",
           "PT peak MiB", "PT/theory", "PT base MiB"],
          [[r["config"], r["mixer"], r["precision"], fmt(r["memory"] and r["memory"]["weights"]),
            fmt(r["memory"] and r["memory"]["state"]), fmt(r["memory"] and r["memory"]["activations"]),
            fmt(r["memory"] and r["memory"]["bf16"]), fmt(r["memory"] and r["memory"]["total"]), fmt(r["c"]["peak_rss_mib"]),
            fmt(r["c"]["rss_over_theory"], ".2f", "x"), fmt(r["torch"] and r["torch"]["peak_rss_mib"]),
            fmt(r["torch"] and r["torch"]["rss_over_theory"], ".2f", "x"),
            fmt(r["torch"] and r["torch"]["base_rss_mib"])] for r in res])
    print("  theory: bin/train's own count (weights + gradients and AdamW moments + activation arena + with bf16 the\n"
          "  bf16 weights, operand scratch and packed attention heads). PT base:\n"
          "  PyTorch's peak after importing torch and reading the data, before the model (part of PT peak).")


def print_profile(ctx, res):
    print("\n== Where a C training step goes (bin/train --profile, ms per step, share; median over rounds) ==")
    table(["config", "mixer", "precision"] + list(PARTS) + ["step ms"],
          [[r["config"], r["mixer"], r["precision"]] + [prof_cell(r["profile"], p) for p in PARTS]
           + [fmt(r["profile"] and r["profile"]["step"])] for r in res])
    print("  mixer: the attention or Grassmann layers (forward + backward); optimizer: clipping and AdamW.")


def print_inference(ctx, res):
    label = "first %d tokens of val" % ctx.eval_tokens if ctx.eval_tokens else "the whole val split"
    print("\n== Inference (the last C run's checkpoint) ==")
    table(["config", "mixer", "eval tokens", "eval s", "eval tokens/s", "sample tokens", "sample s", "sample tokens/s"],
          [[r["config"], r["mixer"], r["eval"]["tokens"], fmt(r["eval"]["seconds"], ".2f"),
            fmt(r["eval"]["tokens_per_s"], ",.0f"), r["sample"]["tokens"], fmt(r["sample"]["seconds"], ".2f"),
            fmt(r["sample"]["tokens_per_s"], ",.0f")] for r in res if r["eval"]])
    print(f"  eval: bin/eval --threads {ctx.threads} over {label}; sample: bin/sample --tokens 500 (1 thread).\n"
          "  Seconds are the whole command's wall time (start-up and loading included). Inference is fp32, so it\n"
          "  runs once per model, on the first precision's checkpoint.")


def prof_cell(prof, part):
    if not prof or prof[part]["total"] is None:
        return "n/a"
    return f"{prof[part]['total']:.1f} ({prof[part]['share']:.0f}%)"


def print_mixers(ctx, res):
    steps, warmup = ctx.steps["mixers"]
    print(f"\n== The mixers as T grows (n_layer 2, n_head 4, n_embd 128, B x T = {MIXER_TOKENS}; "
          f"{steps} steps, {warmup} dropped, median of {plural(ctx.rounds, 'round')}) ==")
    table(["T", "B", "mixer", "mixer us/token", "step us/token", "peak RSS MiB", "activations MiB"],
          [[r["T"], r["B"], r["mixer"], fmt(r["mixer_us_per_token"], ".2f"), fmt(r["step_us_per_token"], ".2f"),
            fmt(r["peak_rss_mib"]), fmt(r["activations_mib"])] for r in sorted(res, key=lambda r: (r["mixer"], r["T"]))])
    print("  mixer us/token: the mixer's --profile row (forward + backward of both layers) / tokens per step.")


def print_kernel(ctx, res):
    print(f"\n== Default {LIBRARY_NAME.get(ctx.library, 'BLAS')} kernel choice (baby, attention) ==")
    if "skipped" in res:
        print(f"  skipped: {res['skipped']}")
        return
    var = res["variable"]
    rows = [["environment as is", res["default_blas"], fmt(res["default_tokens_per_s"], ",.0f")],
            [f"{var}={res['best_core']}", res["forced_blas"], fmt(res["forced_tokens_per_s"], ",.0f")]]
    if res.get("library_core"):
        rows.append([f"{var}={res['library_core']} (the library's own)", res["library_blas"],
                     fmt(res["library_tokens_per_s"], ",.0f")])
    table(["run", "BLAS", "tokens/s"], rows)
    print(f"  default / forced tokens/s: {fmt(res['ratio'], '.2f')} (median of {plural(ctx.rounds, 'alternating round')}; "
          f"target >= 0.9)")
    if res.get("library_core"):
        print(f"  default / the library's own choice: {fmt(res['over_library'], '.2f')}x")


def print_load(ctx, res):
    print("\n== Thread tuner (baby; bin/train default threads vs --threads 1, alternating) ==")
    for key, label, steps, _ in LOAD_CASES:
        steps, warmup = ctx.steps[steps]
        print(f"  {label} ({plural(ctx.rounds, 'round')} of {steps} steps, {warmup} dropped):")
        table(["mixer", "default tokens/s", "1 thread tokens/s", "default/1", "threads used (steps)"],
              [[r["mixer"], fmt(r["default_tokens_per_s"], ",.0f"), fmt(r["one_thread_tokens_per_s"], ",.0f"),
                fmt(r["ratio"], ".2f", "x"),
                " ".join(f"{k}:{v}" for k, v in r["default_threads_steps"].items())] for r in res[key]])
    print("  tokens/s: all tokens after warm-up / their total time (the tuner's probes included); default/1: median\n"
          "  over rounds of the per-round ratio (targets: >= 0.9 under load, ~ the core count without). threads used:\n"
          "  how many of the default runs' steps ran on each thread count (bin/train --log, column threads).")


def print_mpi(ctx, res):
    steps, warmup = ctx.steps["mpi"]
    print(f"\n== Data-parallel training (medium, attention; {steps} steps, {warmup} dropped, "
          f"median of {plural(ctx.rounds, 'alternating round')}) ==")
    if "skipped" in res:
        print(f"  skipped: {res['skipped']}")
        return
    table(["case", "tokens/s", "vs 1 x 1", "all-reduce wait ms/step", "wait share"],
          [[r["case"], fmt(r["tokens_per_s"], ",.0f"), fmt(r["over_1x1"], ".2f", "x"), fmt(r["wait_ms"]),
            fmt(r["wait_share"] and 100 * r["wait_share"], ".1f", "%")] for r in res["cases"]])
    print("  2 ranks: mpirun -np 2 bin/train ... --threads 1, each rank one micro-batch of 8 x 256 per step (twice the\n"
          "  tokens of one rank); vs 1 x 1: per-round ratio of tokens/s; wait: the --profile allreduce row.")


def print_scaling(ctx, res):
    steps = ", ".join(f"{n} {ctx.steps[n][0]} steps ({ctx.steps[n][1]} dropped)" for n in ctx.configs)
    print(f"\n== Thread scaling, C vs PyTorch ({plural(ctx.rounds, 'alternating round')}; {steps}) ==")
    table(["config", "mixer", "threads", "C tokens/s", "speed-up", "efficiency", "sgemm GFLOP/s", "C MFU",
           "PT tokens/s", "C/PT"],
          [[r["config"], r["mixer"], r["threads"], fmt(r["tokens_per_s"], ",.0f"), fmt(r["speedup"], ".2f", "x"),
            fmt(r["efficiency"] and 100 * r["efficiency"], ".0f", "%"), fmt(r["sgemm_gflops"]),
            fmt(r["mfu"] and 100 * r["mfu"], ".0f", "%"), fmt(r["torch_tokens_per_s"], ",.0f"),
            fmt(r["ratio"], ".2f", "x")] for r in res["rows"]])
    print("  tokens/s: from the median over rounds of each run's median step time after warm-up (bin/train --threads N,\n"
          "  PyTorch torch.set_num_threads(N)). speed-up: median over rounds of 1-thread ms / N-thread ms in the same\n"
          "  round; efficiency: speed-up / N. sgemm: bin/gemm-rate --threads N at the model's own products (best of\n"
          "  the rounds); MFU: C's achieved GFLOP/s over it. C/PT: median over rounds of PyTorch ms / C ms.")
    high = [f"{r['config']} {r['mixer']} {r['threads']}" for r in res["rows"] if (r["mfu"] or 0) > 1]
    if high:
        print(f"  MFU above 100% ({', '.join(high)}): the sgemm runs were slowed by other load; more rounds help.")
    if 1 not in res["threads"]:
        print("  speed-up and efficiency not measured: --threads has no 1 (the 1-thread run they are taken against).")
    if res["torch_unavailable"]:
        print(f"  PyTorch not measured: {res['torch_unavailable']}")
    for r in res["rows"]:
        if r["torch_threads"] is not None and r["torch_threads"] != r["threads"]:
            print(f"  {r['config']} {r['mixer']}: PyTorch ran {r['torch_threads']} threads, not {r['threads']}")
    kernels = {(r["kernel"] or "?", r["torch_kernel"] or "n/a") for r in res["rows"]}
    print("  kernels (C, PyTorch): " + "; ".join(f"{c}, {t}" for c, t in sorted(kernels)))
    print("\n== Default threads (bin/train --threads 0, the adaptive tuner) against the best fixed count ==")
    table(["config", "mixer", "default tokens/s", "threads used (steps)", "best fixed", "its tokens/s", "default/best"],
          [[r["config"], r["mixer"], fmt(r["tokens_per_s"], ",.0f"),
            " ".join(f"{k}:{v}" for k, v in r["threads_used_steps"].items()), r["best_threads"],
            fmt(r["best_tokens_per_s"], ",.0f"), fmt(r["ratio"], ".2f", "x")] for r in res["default_threads"]])
    print("  tokens/s here: all tokens after warm-up over their total time (the tuner's probe steps included), the\n"
          "  same steps as the table above; best fixed: the count of the table above with the most such tokens/s;\n"
          "  default/best: median over rounds of the per-round ratio (target >= 0.95). threads used: how many of\n"
          "  the default runs' steps ran on each count (bin/train --log, column threads).")


def print_layouts(ctx, res):
    print(f"\n== Ranks x threads ({plural(ctx.rounds, 'alternating round')}; "
          + ", ".join(f"{n} {ctx.steps[n][0]} steps ({ctx.steps[n][1]} dropped)" for n in ctx.layout_configs) + ") ==")
    if "skipped" in res:
        print(f"  skipped: {res['skipped']}")
        return
    table(["config", "mixer", "cores", "layout", "grad-accum", "tokens/step", "tokens/s", "vs 1 x P",
           "all-reduce wait ms/step", "wait share"],
          [[r["config"], r["mixer"], r["cores"], f"{r['ranks']} x {r['threads']}", r["grad_accum"],
            r["tokens_per_step"], fmt(r["tokens_per_s"], ",.0f"), fmt(r["ratio"], ".2f", "x"), fmt(r["wait_ms"]),
            fmt(r["wait_share"] and 100 * r["wait_share"], ".1f", "%")] for r in res["rows"]])
    print("  layout R x T: mpirun -np R --bind-to none bin/train --threads T (1 x P: bin/train alone). Every layout of\n"
          "  P cores trains on the same micro-batches per optimizer step, those of the most ranks R_max: R ranks with\n"
          "  --grad-accum R_max / R, so the same tokens per step and the same training; tokens/s counts all ranks'\n"
          "  tokens (from the median step time after warm-up). vs 1 x P: median over rounds of the per-round ratio.")
    for p in sorted({r["cores"] for r in res["fastest"]}):
        print(f"  fastest on {plural(p, 'core')}: " + "; ".join(
            f"{r['config']} {r['mixer']} {plural(r['ranks'], 'rank')} x {plural(r['threads'], 'thread')} "
            f"({fmt(r['ratio'], '.2f', 'x')} of 1 x {p})" for r in res["fastest"] if r["cores"] == p))


# ---- main ------------------------------------------------------------------------

class Context:
    """What every measurement needs: paths, threads, steps, rounds, vocabulary."""


def eval_prefix(data, tmp, n):
    """DIR with val.bin = the first n tokens of data's val split (and its tokenizer)."""
    src = os.path.join(data, "val.bin")
    head = token_header(src)
    width, n = head["width"], min(n, head["count"])
    out = os.path.join(tmp, "evaldata")
    os.makedirs(out, exist_ok=True)
    with open(src, "rb") as f:
        f.seek(32)
        body = f.read(n * width)
    with open(os.path.join(out, "val.bin"), "wb") as f:
        f.write(head["raw"][:24] + n.to_bytes(8, "little") + body)
    shutil.copy(os.path.join(data, "tokenizer.txt"), out)
    return out


def parse_args():
    ap = argparse.ArgumentParser(prog="/usr/bin/python3 -m harness.bench",
                                 description="Speed and memory of the C programs against PyTorch and sgemm.",
                                 epilog="Sections: train (C vs PyTorch, FLOPs, memory, profile, eval and sample "
                                        "speed), mixers (cost vs sequence length), kernel (default BLIS "
                                        "kernel check), load (the thread tuner), mpi (2 ranks against 1 rank "
                                        "and against 2 threads), scaling (tokens/s, speed-up, efficiency and MFU "
                                        "per thread count, and bin/train's default threads against the best), "
                                        "layouts (ranks x threads for each core count). By default the first "
                                        "five; scaling and layouts too when --threads lists more than one count.")
    ap.add_argument("--quick", action="store_true", help="fewer steps and one round (a few minutes)")
    ap.add_argument("--threads", metavar="N[,N...]",
                    help="thread counts: one N for C and PyTorch in every section (default: all cores); a comma "
                         "list is scaling's and layouts' counts, the largest serving the other sections (scaling's "
                         "default: 1, 2, 4, ... and the core count)")
    ap.add_argument("--rounds", type=int, help="alternating rounds (default 3, 1 with --quick)")
    ap.add_argument("--configs", help="of baby, medium, long (default all; layouts: medium; blas: baby)")
    ap.add_argument("--mixers", default=",".join(MIXERS), help="of " + ", ".join(MIXERS) + " (default both)")
    ap.add_argument("--sections", help="of " + ", ".join(SECTIONS) + " (default: see below)")
    ap.add_argument("--no-torch", action="store_true", help="do not run PyTorch (its columns then say n/a)")
    ap.add_argument("--torch-python", metavar="PATH", default=sys.executable or PYTHON,
                    help="the Python that has torch, for the PyTorch runs (default: this one)")
    ap.add_argument("--other-bin", metavar="DIR",
                    help="the programs built with the other BLAS library, for the blas section (default: "
                         "bin-blis or bin-openblas, whichever is the other; make bench builds it when that "
                         "library is installed)")
    ap.add_argument("--data", default=os.path.join(ROOT, "data", "moby"), help="prepared data (default data/moby)")
    ap.add_argument("--precision", metavar="P[,P]",
                    help="the train section's precisions, of fp32, bf16 (bin/train --precision; default both where "
                         "the CPU has AVX512_BF16, else fp32)")
    ap.add_argument("--isa", metavar="LEVEL",
                    help="cap our kernels (LM_MAX_ISA) and PyTorch's (ATEN_CPU_CAPABILITY) alike at portable, avx2 "
                         "or avx512, e.g. to measure AVX2 on an AVX-512 machine (default: each at its best); the BLAS "
                         "libraries keep their kernels")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    a = ap.parse_args()
    if a.isa is not None:
        cap_isa(a.isa)
    a.precisions, a.precision_note = parse_precisions(a.precision, cpu_has_bf16())
    a.thread_list = parse_threads(a.threads) if a.threads is not None else default_thread_list(os.cpu_count() or 1)
    if a.thread_list is None:
        die(f"--threads must be a positive count or a comma list of them (got '{a.threads}')")
    a.layout_configs = comma_list("--configs", a.configs, CONFIGS) if a.configs else list(LAYOUT_CONFIGS)
    a.blas_configs = comma_list("--configs", a.configs, CONFIGS) if a.configs else list(BLAS_CONFIGS)
    a.configs = comma_list("--configs", a.configs, CONFIGS) if a.configs else list(CONFIGS)
    a.mixers = comma_list("--mixers", a.mixers, MIXERS)
    multi = a.threads is not None and len(a.thread_list) > 1
    a.sections = comma_list("--sections", a.sections, SECTIONS) if a.sections else \
        [s for s in SECTIONS if s in DEFAULT_SECTIONS or multi]
    if a.rounds is not None and a.rounds < 1:
        die("--rounds must be positive")
    if not a.no_torch and not (os.path.isfile(a.torch_python) and os.access(a.torch_python, os.X_OK)):
        die(f"--torch-python '{a.torch_python}' is not an executable file")
    return a


def cpu_has_bf16():
    """Whether /proc/cpuinfo lists avx512_bf16 (what bin/train --precision bf16 needs)."""
    try:
        with open("/proc/cpuinfo") as f:
            return "avx512_bf16" in f.read().split()
    except OSError:
        return False


def parse_precisions(text, has_bf16):
    """--precision as (the precisions, fp32 first; a note on one left out, or
    None). Not given: fp32 and bf16 where the CPU has AVX512_BF16, else fp32
    and a note saying why; bf16 asked for on a CPU without it dies."""
    if text is None:
        if has_bf16:
            return ["fp32", "bf16"], None
        return ["fp32"], "bf16 left out: this CPU has no AVX512_BF16 (bin/train --precision bf16 needs it)"
    names = comma_list("--precision", text, PRECISIONS)
    if "bf16" in names and not has_bf16:
        die("--precision bf16: this CPU has no AVX512_BF16 (bin/train --precision bf16 needs it)")
    return [p for p in PRECISIONS if p in names], None


def comma_list(option, text, known):
    """The names of a comma list, each of known; dies naming the first unknown one."""
    names = [x for x in text.split(",") if x]
    for x in names:
        if x not in known:
            die(f"{option}: unknown '{x}' (of {', '.join(known)})")
    if not names:
        die(f"{option} is empty")
    return names


def make_context(a, tmp):
    for f in ("train.bin", "val.bin", "tokenizer.txt"):
        if not os.path.exists(os.path.join(a.data, f)):
            die(f"no prepared data in '{a.data}' ({f} missing): run make data")
    for prog in ("train", "eval", "sample", "gemm-rate"):
        if not os.access(os.path.join(BIN, prog), os.X_OK):
            die(f"bin/{prog} is missing: run make")
    ctx = Context()
    mode = "quick" if a.quick else "full"
    ctx.steps, ctx.rounds = STEPS[mode], a.rounds or STEPS[mode]["rounds"]
    # One count for the sections other than scaling and layouts: the one given, the largest of a list, or all cores.
    ctx.threads = a.thread_list[-1] if a.threads is not None else os.cpu_count()
    ctx.thread_list, ctx.layout_configs, ctx.mixers = a.thread_list, a.layout_configs, a.mixers
    ctx.blas_configs = a.blas_configs
    ctx.quick, ctx.configs, ctx.tmp = a.quick, a.configs, tmp
    ctx.torch_python = a.torch_python
    ctx.precisions, ctx.precision_note = a.precisions, a.precision_note
    ctx.data = os.path.abspath(a.data)
    ctx.vocab = token_header(os.path.join(a.data, "train.bin"))["vocab"]
    ctx.eval_tokens = ctx.steps["eval_tokens"]
    ctx.eval_data = eval_prefix(ctx.data, tmp, ctx.eval_tokens) if ctx.eval_tokens else ctx.data
    ctx.widths = list(WIDTHS[mode])
    ctx.library = library_of(BIN)
    others = [lib for lib in KERNEL_VARIABLE if lib != ctx.library]
    ctx.other_bin = os.path.abspath(a.other_bin) if a.other_bin else \
        os.path.join(ROOT, f"bin-{others[0]}") if ctx.library and len(others) == 1 else None
    ctx.other_library = library_of(ctx.other_bin) if ctx.other_bin else None
    ctx.other_missing = None
    if not ctx.library:
        ctx.other_missing = "bin/.blas-library is missing: run make"
    elif not ctx.other_bin or not os.access(os.path.join(ctx.other_bin, "train"), os.X_OK) or not ctx.other_library:
        ctx.other_missing = (f"no build with the other library in {ctx.other_bin} "
                             f"(make BLAS={others[0]} BIN=bin-{others[0]}, or --other-bin DIR)")
    elif ctx.other_library == ctx.library:
        ctx.other_missing = f"{ctx.other_bin} holds a {LIBRARY_NAME[ctx.library]} build too"
    if ctx.other_missing:
        ctx.other_bin = None
    # The reason PyTorch is not measured: --no-torch, or set by the first PyTorch run that fails.
    ctx.torch_missing = "--no-torch was given" if a.no_torch else None
    return ctx


def main():
    a = parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    out = {}
    try:
        with tempfile.TemporaryDirectory(prefix="lm-bench-") as tmp:
            ctx = make_context(a, tmp)
            out["machine"] = {"cpu": cpu_model(), "cores": os.cpu_count(), "threads": ctx.threads,
                              "thread_list": ctx.thread_list, "torch_python": ctx.torch_python,
                              "rounds": ctx.rounds, "quick": ctx.quick, "data": ctx.data, "vocab": ctx.vocab,
                              "openblas_coretype_env": os.environ.get("OPENBLAS_CORETYPE"),
                              "lm_max_isa": os.environ.get("LM_MAX_ISA"), "torch_isa": torch_isa(),
                              "blis_arch_type_env": os.environ.get("BLIS_ARCH_TYPE"),
                              "torch_unavailable": ctx.torch_missing, "precisions": ctx.precisions,
                              "precision_note": ctx.precision_note}
            progress(f"{cpu_model()}, {ctx.threads} threads"
                     + (f" (scaling: {','.join(map(str, ctx.thread_list))})" if {"scaling", "layouts"} & set(a.sections) else "")
                     + f", {plural(ctx.rounds, 'round')}; sections {','.join(a.sections)}")
            for s in SECTIONS:
                if s in a.sections:
                    out[s] = SECTION_RUNS[s](ctx)
            out["machine"]["torch_unavailable"] = ctx.torch_missing
    except KeyboardInterrupt:
        kill_children()
        die("interrupted", 130)
    finally:
        kill_children()
    out["seconds"] = time.monotonic() - T0
    if a.json:
        print(json.dumps(out, indent=1))
        return
    print_report(ctx, out)


def print_report(ctx, out):
    m = out["machine"]
    print(f"make bench: {m['cpu']} ({m['cores']} cores), {m['threads']} threads for C and PyTorch, "
          f"{plural(m['rounds'], 'round')}{' (--quick)' if m['quick'] else ''}; data {m['data']} (vocab {m['vocab']})")
    if m["openblas_coretype_env"]:
        print(f"OPENBLAS_CORETYPE={m['openblas_coretype_env']} is set by the environment: PyTorch's OpenBLAS and "
              "every C program built with OpenBLAS keep it.")
    if m.get("blis_arch_type_env"):
        print(f"BLIS_ARCH_TYPE={m['blis_arch_type_env']} is set by the environment: every C program keeps it.")
    if m["torch_unavailable"]:
        print(f"PyTorch: not measured ({m['torch_unavailable']})")
    if m.get("precision_note"):
        print(f"precision: {m['precision_note']}")
    for s in SECTIONS:
        for show in SECTION_PRINTS[s] if s in out else ():
            show(ctx, out[s])
    print(f"\nbench took {out['seconds']:.0f} s")


SECTION_RUNS = {"train": section_train, "mixers": section_mixers, "kernel": section_kernel, "blas": section_blas,
                "load": section_load,
               "mpi": section_mpi, "scaling": section_scaling, "layouts": section_layouts}
SECTION_PRINTS = {"train": (print_speed, print_flops, print_memory, print_profile, print_inference),
                  "mixers": (print_mixers,), "kernel": (print_kernel,), "blas": (print_blas,), "load": (print_load,),
                  "mpi": (print_mpi,),
                  "scaling": (print_scaling,), "layouts": (print_layouts,)}

if __name__ == "__main__":
    main()
