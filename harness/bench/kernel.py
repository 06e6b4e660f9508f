"""The kernel section of make bench.

Default kernel choice: baby, the reference mixer (experiments/defaults.json's
bench.reference), with the environment as it is against
<VAR>=<the best kernel for this CPU> (from bin/gemm-rate --best-core; VAR is
BLIS_ARCH_TYPE or OPENBLAS_CORETYPE, the variable of the library bin/ was
built with), alternating; ratio of tokens/s. When the default run selected its
kernels (the library's own choice was slower), the library's own choice runs
too (<VAR>=<it>)."""
import os
import re

from harness.bench.shared import CONFIGS, c_train, fmt, med, plural, progress, reference, table
from harness.common import BIN, run_ok

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
        by = f"--isa {os.environ.get('LM_MAX_ISA')}" if var == "OPENBLAS_CORETYPE" and ctx.isa_core else "the environment"
        return {"variable": var, "skipped": f"{var}={os.environ[var]} is set by {by}: "
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
        d = c_train(ctx, cfg, reference(), steps, warmup, ctx.threads, profile=False)
        f = c_train(ctx, cfg, reference(), steps, warmup, ctx.threads, env=dict(os.environ, **{var: best}),
                    profile=False)
        runs["default"].append(d), runs["forced"].append(f)
        m = re.search(r"selected: the library chose (\w+)", d["blas"] or "")
        library = library or (m and m.group(1))
        if library:
            runs["library"].append(c_train(ctx, cfg, reference(), steps, warmup, ctx.threads,
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


def print_kernel(ctx, res):
    print(f"\n== Default {LIBRARY_NAME.get(ctx.library, 'BLAS')} kernel choice (baby, {reference()}) ==")
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
