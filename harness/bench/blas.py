"""The blas section of make bench.

The two BLAS builds (bin/ and the other library's, bin-blis or bin-openblas,
which make bench builds; --other-bin DIR), alternating, per config and mixer:
at the run's thread count, and on 1 thread cutting the work as W threads would
(LM_PARALLEL_WIDTH=W, W = 1, 16, 64; 1, 16 with --quick; the baby config
unless --configs says otherwise): what a W-way cut costs a core with each
library, which a 2-core machine can measure for 16- and 64-core runs. Per
core: 1-way ms / W-way ms of the same library."""
import os

from harness.bench.kernel import LIBRARY_NAME
from harness.bench.shared import CONFIGS, c_train, fmt, med, plural, progress, table
from harness.common import BIN

WIDTHS = {"full": (1, 16, 64), "quick": (1, 16)}  # the blas section's W-way cuts
BLAS_CONFIGS = ("baby",)  # the blas section's: the smallest products, where the libraries part most


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
