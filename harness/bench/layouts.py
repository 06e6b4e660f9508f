"""The layouts section of make bench.

For each total core count P >= 2 of the thread counts, every layout R ranks x
T threads with R x T = P and R a power of two (1 x P first): mpirun -np R
--bind-to none bin/train --threads T (1 x P without mpirun), on the medium
configuration (or --configs), each mixer, alternating. Every layout of P
trains on the same micro-batches per optimizer step, those of the most ranks
R_max (R ranks x --grad-accum R_max / R), so the same tokens and the same
training; tokens/s counts all ranks' tokens; the per-round ratio to 1 x P, the
all-reduce wait, and per P the fastest layout."""
import shutil

from harness.bench.mpi import NO_MPIRUN, mpi_env, mpi_launcher
from harness.bench.shared import CONFIGS, c_train, fmt, med, plural, progress, table

LAYOUT_CONFIGS = ("medium",)  # the layouts section's configs when --configs is not given


def layouts(cores):
    """(ranks, threads per rank) with ranks x threads = cores and ranks a power
    of two, 1 x cores first."""
    out, r = [], 1
    while r <= cores:
        if cores % r == 0:
            out.append((r, cores // r))
        r *= 2
    return out


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
