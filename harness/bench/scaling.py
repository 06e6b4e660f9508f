"""The scaling section of make bench.

For each configuration and mixer, the train section's rounds (C, PyTorch,
bin/gemm-rate) at every thread count N of --threads (by default 1, 2, 4, ...
below the core count, then the core count), the counts alternating within each
round, and then bin/train with its default threads (--threads 0, the adaptive
tuner); no --profile. Per N: tokens/s, the speed-up over 1 thread (median of
the per-round ratios), the parallel efficiency (speed-up / N), the sgemm rate
at the model's products on N threads and the MFU against it, PyTorch's
tokens/s on N threads and C/PyTorch. Then per configuration and mixer the
default threads against the best fixed N, both as all tokens after warm-up
over their total time (the tuner's probes included; target >= 0.95)."""
from harness.bench.shared import fmt, med, plural, table
from harness.bench.train import train_rounds


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
            summaries = {n: s for (n, _, _), s in summaries.items()}  # fp32, one level only
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
