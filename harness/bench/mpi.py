"""The mpi section of make bench.

Data-parallel training, medium config: 1 rank x 1 thread, 2 ranks x 1 thread
(mpirun -np 2), 1 rank x 2 threads, alternating; tokens/s, the ratio to 1 x 1,
and the all-reduce wait (--profile) per step."""
import os
import shutil

from harness.bench.shared import CONFIGS, c_train, fmt, med, plural, progress, reference, table

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
    """Data-parallel scaling on the medium config (the reference mixer): 1 rank x 1
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
            c = c_train(ctx, cfg, reference(), steps, warmup, threads, env=env, launcher=launcher)
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


def print_mpi(ctx, res):
    steps, warmup = ctx.steps["mpi"]
    print(f"\n== Data-parallel training (medium, {reference()}; {steps} steps, {warmup} dropped, "
          f"median of {plural(ctx.rounds, 'alternating round')}) ==")
    if "skipped" in res:
        print(f"  skipped: {res['skipped']}")
        return
    table(["case", "tokens/s", "vs 1 x 1", "all-reduce wait ms/step", "wait share"],
          [[r["case"], fmt(r["tokens_per_s"], ",.0f"), fmt(r["over_1x1"], ".2f", "x"), fmt(r["wait_ms"]),
            fmt(r["wait_share"] and 100 * r["wait_share"], ".1f", "%")] for r in res["cases"]])
    print("  2 ranks: mpirun -np 2 bin/train ... --threads 1, each rank one micro-batch of 8 x 256 per step (twice the\n"
          "  tokens of one rank); vs 1 x 1: per-round ratio of tokens/s; wait: the --profile allreduce row.")
