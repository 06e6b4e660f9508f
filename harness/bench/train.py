"""The train section of make bench.

For each configuration (baby, medium, long) and mixer (--mixers; by default
experiments/defaults.json's bench.default_mixers):
R rounds, each one bin/train run (--threads N, so its adaptive thread tuner is
off; --profile) followed by one PyTorch run of the same model, batch, AdamW
and clipping (harness/bench_torch.py, torch.set_num_threads(N)) and one
bin/gemm-rate run. A run's time is the median ms per step after its warm-up
steps (bin/train's --log CSV, column ms_per_step); the PyTorch/C ratio is
taken per round, so that machine noise hits both alike, and its median
reported. FLOPs per token (bin/train's flops_per_token: dense 6 x the sum of
rows x cols over the weight matrices, the tied head included, the embeddings,
biases and LayerNorms not; mixing per layer the mixer's own, Mixer.flops, as
bin/info --mixers gives it) times tokens/s gives the achieved GFLOP/s; divided by
bin/gemm-rate's FLOP-weighted sgemm rate at the model's own products
(gemm_products: those of bin/train's matrices; same threads, same kernel; the
best of the rounds, as other load only ever lowers it) it gives the MFU.

Peak memory is ru_maxrss of each run's process tree (wait4), against what
bin/train says the model needs (weights + gradients and AdamW moments +
activations). Per-part times come from bin/train --profile.

Then, on the last C run's checkpoint (untrained weights: the speed does not
depend on them), bin/eval over the val split (its first 16384 tokens with
--quick; --threads N) and bin/sample for 500 tokens (its default --threads 1):
tokens per second of wall time of the whole command.

The C programs use the BLAS library they were built with, PyTorch uses
OpenBLAS (libblas.so.3). PyTorch is given the best OpenBLAS core for this CPU
(best_openblas_core: OPENBLAS_CORETYPE set for its runs), unless the
environment already sets OPENBLAS_CORETYPE, which is then kept as it is (some
machines pin it because old OpenBLAS builds compute wrong results there). The
kernel each ran is printed.

Precisions (--precision fp32,bf16; by default both where the CPU has
AVX512_BF16, else fp32 and one line saying why): every round runs each
configuration and mixer in each, alternating: bf16 is bin/train --precision
bf16, PyTorch under torch.autocast("cpu", dtype=torch.bfloat16), and bin/gemm-rate
--bf16 at the same products (oneDNN, bf16 inputs, fp32 accumulation; TN at
C += A B), the rate bf16's MFU is taken against. bf16/fp32: the median over
rounds of fp32 ms / bf16 ms in the same round, for C and for PyTorch.
Inference is fp32 whatever the training precision, so it runs once, on the
first precision's checkpoint. The other sections train in fp32."""
import json
import os
import re

from harness.bench.shared import CONFIGS, PARTS, c_train, fmt, gemm_products, med, plural, progress, table
from harness.common import BIN, ROOT, die, run, run_ok


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
# --isa: the OpenBLAS 0.3.21 core of that level (OPENBLAS_CORETYPE), for our
# programs and PyTorch alike, so that a capped run's products are the level's
# too (on an AVX-512 machine OpenBLAS would otherwise run SkylakeX kernels at
# --isa avx2). None for portable: OpenBLAS has no core of SSE2 alone worth
# measuring against (Prescott's are scalar-speed), so it keeps its own.
ISA_OPENBLAS_CORE = {"portable": None, "avx2": "Haswell", "avx512": "SkylakeX"}


def torch_isa(env=None):
    """PyTorch's kernel level as the bench set it in env (default ours: ATEN_CPU_CAPABILITY), or best."""
    return (os.environ if env is None else env).get("ATEN_CPU_CAPABILITY") or "best"


# --isa's names: native (not capped: the environment as it is) and the levels.
ISA_NAMES = ("native",) + tuple(ISA_ATEN)


def cpu_isa_levels():
    """The levels of our kernels this CPU runs (bin/gemm-rate --isa-levels), lowest first; [] if that fails."""
    r = run([os.path.join(BIN, "gemm-rate"), "--isa-levels"])
    return r.out.split() if r.status == 0 else []


def parse_isa(text, cpu_levels):
    """--isa LEVEL[,LEVEL...] as its names in the order given, each of
    ISA_NAMES and, native apart, of cpu_levels (what this CPU runs); dies in
    one line, before anything runs, on an unknown or repeated name or a level
    this CPU lacks."""
    names = text.split(",")
    for x in names:
        if x not in ISA_NAMES:
            die(f"--isa: unknown '{x}' (of {', '.join(ISA_NAMES)})")
        if names.count(x) > 1:
            die(f"--isa: '{x}' is given twice")
        if x != "native" and x not in cpu_levels:
            die(f"--isa {x}: this CPU lacks it (it runs {', '.join(cpu_levels) or 'no level: bin/gemm-rate --isa-levels failed'})")
    return names


def level_env(level, base):
    """(the environment every run at --isa's level gets, the OpenBLAS core it
    pinned or None): base with our kernels (LM_MAX_ISA) and PyTorch's
    (ATEN_CPU_CAPABILITY) capped alike and OpenBLAS pinned to the level's core
    (pin_openblas_core); native: base as it is."""
    env = dict(base)
    if level == "native":
        return env, None
    env["LM_MAX_ISA"] = level
    env["ATEN_CPU_CAPABILITY"] = ISA_ATEN[level]
    return env, pin_openblas_core(level, env)


def pin_openblas_core(level, env):
    """Sets env's OPENBLAS_CORETYPE to the OpenBLAS core of --isa's level,
    unless env already sets one (a value the environment set is never
    overridden: some machines pin it because old OpenBLAS builds compute wrong
    results there). Returns the core it set, or None."""
    core = ISA_OPENBLAS_CORE[level]
    if not core or env.get("OPENBLAS_CORETYPE"):
        return None
    env["OPENBLAS_CORETYPE"] = core
    return core


def torch_env(base=None):
    """The environment for PyTorch: base (default ours) with its OPENBLAS_CORETYPE
    if it sets one, else the best OpenBLAS core for this CPU."""
    env = dict(os.environ if base is None else base)
    best = best_openblas_core()
    if best and not env.get("OPENBLAS_CORETYPE"):
        env["OPENBLAS_CORETYPE"] = best
    return env


def torch_train(ctx, c, steps, warmup, threads, precision="fp32", base_env=None):
    """One harness/bench_torch.py run (with --torch-python's interpreter, N
    threads) of the model of the C run c (the config of its bin/train --json
    report, its batch): median ms/step after warm-up, peak RSS, the OpenBLAS
    kernel it ran; None (and ctx.torch_missing set) on failure or with
    --no-torch. base_env: the environment of an --isa level (default ours)."""
    if ctx.torch_missing:
        return None
    base = os.environ if base_env is None else base_env
    env = torch_env(base)
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
            "env_coretype": env.get("OPENBLAS_CORETYPE") if env.get("OPENBLAS_CORETYPE") != base.get("OPENBLAS_CORETYPE") else None,
            "isa": torch_isa(env)}


def gemm_rate(c, threads, precision="fp32", env=None):
    """bin/gemm-rate --json over one training step's products of the C run c, on N threads: the sgemm
    rate, or with bf16 (--bf16) the bf16 rate ("gflops") with "blas" naming oneDNN. env: an --isa level's."""
    cmd = [os.path.join(BIN, "gemm-rate"), "--threads", str(threads), "--json"] + gemm_products(c["train"])
    if precision == "fp32":
        return run_ok(cmd, env).json()
    r = run_ok(cmd[:1] + ["--bf16"] + cmd[1:], env).json()
    r["blas"] = r["bf16"]
    return r


def eval_speed(ctx, ckpt, env=None):
    """bin/eval over the val split (or its prefix with --quick): scored tokens per wall second."""
    cmd = [os.path.join(BIN, "eval"), "--model", ckpt, "--data", ctx.eval_data, "--split", "val",
           "--threads", str(ctx.threads), "--json"]
    r = run_ok(cmd, env)
    scored = r.json()["scored"]
    return {"tokens": scored, "seconds": r.seconds, "tokens_per_s": scored / r.seconds, "rss_mib": r.rss_mib}


def sample_speed(ctx, ckpt, n=500, env=None):
    """bin/sample of n tokens (its default --threads 1): tokens per wall second."""
    r = run_ok([os.path.join(BIN, "sample"), "--model", ckpt, "--tokens", str(n)], env)
    return {"tokens": n, "seconds": r.seconds, "tokens_per_s": n / r.seconds, "rss_mib": r.rss_mib}


def train_rounds(ctx, section, name, mixer, thread_counts, profile=True, tuner=False, precisions=("fp32",),
                 levels=((None, None),)):
    """R rounds, each of: for every N of thread_counts, every precision and
    every --isa level of levels ((name, environment); (None, None): ours as it
    is), bin/train --threads N [--precision bf16], PyTorch on N threads (bf16:
    under CPU autocast) and bin/gemm-rate on N threads (bf16: --bf16, the
    bf16 rate), so that machine noise hits C, PyTorch, N, the precisions and
    the levels alike; with tuner, then bin/train with its default threads.
    Returns ({(N, precision, level name): summarise_train(...)}, the default runs)."""
    cfg = CONFIGS[name]
    steps, warmup = ctx.steps[name]
    runs = {(n, p, lv): ([], [], []) for n in thread_counts for p in precisions for lv, _ in levels}
    tuned = []
    for rnd in range(ctx.rounds):
        for n in thread_counts:
            for p in precisions:
                for lv, env in levels:
                    extra = ["--precision", p] if p != "fp32" else []
                    c = c_train(ctx, cfg, mixer, steps, warmup, n, env=env, profile=profile, extra=extra)
                    t = torch_train(ctx, c, steps, warmup, n, p, base_env=env)
                    g = gemm_rate(c, n, p, env)
                    for kept, x in zip(runs[(n, p, lv)], (c, t, g)):
                        kept.append(x)
                    at = f" --isa {lv} (ran {c['isa']})" if lv else ""
                    progress(f"{section} {name} {mixer} {p}{at} "
                             f"round {rnd + 1}/{ctx.rounds}, {plural(n, 'thread')}: C {c['ms']:.1f} ms/step, "
                             + (f"PyTorch {t['ms']:.1f} ms/step ({t['ms'] / c['ms']:.2f}x)" if t else "PyTorch n/a")
                             + f", {'sgemm' if p == 'fp32' else 'bf16 GEMM'} {g['gflops']:.0f} GFLOP/s")
        if tuner:
            d = c_train(ctx, cfg, mixer, steps, warmup, 0, profile=False)
            tuned.append(d)
            progress(f"{section} {name} {mixer} round {rnd + 1}/{ctx.rounds}, default threads: "
                     f"{d['tokens_per_s_mean']:.0f} tokens/s (threads used: "
                     + " ".join(f"{k}:{v}" for k, v in d["threads_used"].items()) + ")")
    tokens = cfg["batch"] * cfg["block"]
    return {k: summarise_train(ctx, name, cfg, mixer, tokens, *r, precision=k[1], level=k[2])
            for k, r in runs.items()}, tuned


def precision_ratio(fp32_rounds_ms, bf16_rounds_ms):
    """bf16's speed over fp32's: the median over rounds of fp32 ms / bf16 ms in
    the same round (None if either was not measured)."""
    pairs = [(f, b) for f, b in zip(fp32_rounds_ms or [], bf16_rounds_ms or []) if f and b]
    return med([f / b for f, b in pairs]) if pairs else None


def section_train(ctx):
    results = []
    for name in ctx.configs:
        for mixer in ctx.mixers:
            summaries, _ = train_rounds(ctx, "train", name, mixer, [ctx.threads], precisions=ctx.precisions,
                                        levels=ctx.isa_levels)
            for lv, env in ctx.isa_levels:
                rows = [summaries[(ctx.threads, p, lv)] for p in ctx.precisions]
                fp32 = summaries.get((ctx.threads, "fp32", lv))
                for r in rows:
                    last = r["c"].pop("ckpt")
                    r["bf16_over_fp32"] = None
                    r["torch_bf16_over_fp32"] = None
                    if r["precision"] != "fp32" and fp32:
                        r["bf16_over_fp32"] = precision_ratio(fp32["c"]["rounds_ms"], r["c"]["rounds_ms"])
                        r["torch_bf16_over_fp32"] = precision_ratio(fp32["torch"] and fp32["torch"]["rounds_ms"],
                                                                    r["torch"] and r["torch"]["rounds_ms"])
                    # Inference is fp32 whatever the training precision: measured once, on the first precision's
                    # model (the checkpoint the last C run of this level wrote), at each --isa level.
                    r["eval"] = r["sample"] = None
                    if r is rows[0]:
                        r["eval"] = eval_speed(ctx, last, env)
                        r["sample"] = sample_speed(ctx, last, env=env)
                        progress(f"train {name} {mixer}{f' --isa {lv}' if lv else ''}: eval "
                                 f"{r['eval']['tokens_per_s']:.0f} tokens/s, sample {r['sample']['tokens_per_s']:.0f} tokens/s")
                results += rows
    return results


def utilisation(flops_per_token, tokens_per_s, sgemm_gflops):
    """(achieved GFLOP/s, MFU): FLOPs per token x tokens/s, and that over the
    sgemm rate (None without one)."""
    gflops = flops_per_token * tokens_per_s * 1e-9
    return gflops, gflops / sgemm_gflops if sgemm_gflops else None


def summarise_train(ctx, name, cfg, mixer, tokens, c_runs, t_runs, g_runs, precision="fp32", level=None):
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
                  "isa": t_ok[-1]["isa"], "rounds_ms": [x["ms"] for x in t_ok]})
    profiles = [x["profile"] for x in c_runs if x["profile"]]
    profile = None
    if profiles:
        profile = {part: {k: med([p.get(part, {}).get(k) for p in profiles])
                          for k in ("forward", "backward", "total", "share")} for part in PARTS}
        profile["step"] = med([p.get("step") for p in profiles])
    return {"config": name, "mixer": mixer, "precision": precision, "level": level,
            "shape": dict(cfg), "tokens_per_step": tokens,
            "flops_per_token": flops,
            "c": c, "torch": t, "torch_unavailable": None if t else ctx.torch_missing,
            "torch_over_c": {"median": med(ratios), "rounds": ratios},
            "sgemm": {"gflops": gemm, "precision": precision, "rounds": [g["gflops"] for g in g_runs], "blas": g_runs[-1]["blas"],
                      "products": g_runs[-1]["products"]},
            "memory": mem, "profile": profile}


def row_key(res, precision=True):
    """The columns that name a row of the train section's tables, as (header,
    cells of a row): config, mixer, precision and, where --isa was given, the
    level asked for."""
    levels = any(r["level"] for r in res)
    header = ["config", "mixer"] + (["precision"] if precision else []) + (["--isa"] if levels else [])
    return header, lambda r: [r["config"], r["mixer"]] + ([r["precision"]] if precision else []) \
        + ([r["level"]] if levels else [])


def print_speed(ctx, res):
    steps = ", ".join(f"{n} {ctx.steps[n][0]} steps ({ctx.steps[n][1]} dropped)" for n in ctx.configs)
    print(f"\n== Training steps, C vs PyTorch ({plural(ctx.rounds, 'alternating round')}; {steps}) ==")
    levels = any(r["level"] for r in res)
    header, key = row_key(res)
    table(header + ["isa C/PT", "C ms/step", "PT ms/step", "C tokens/s", "PT tokens/s", "PT/C",
             "C bf16/fp32", "PT bf16/fp32", "C kernel", "PT kernel"],
          [key(r) + [f'{r["c"].get("isa") or "?"}/{r["torch"]["isa"] if r["torch"] else "n/a"}',
            fmt(r["c"]["ms_per_step"]),
            fmt(r["torch"] and r["torch"]["ms_per_step"]),
            fmt(r["c"]["tokens_per_s"], ",.0f"), fmt(r["torch"] and r["torch"]["tokens_per_s"], ",.0f"),
            fmt(r["torch_over_c"]["median"], ".2f", "x"), fmt(r.get("bf16_over_fp32"), ".2f", "x"),
            fmt(r.get("torch_bf16_over_fp32"), ".2f", "x"), r["c"]["kernel"] or "?",
            r["torch"]["kernel"] if r["torch"] else "n/a"] for r in res])
    if levels:
        print("  --isa: the level asked for (native: not capped); each level's runs alternate with the others' in\n"
              "  every round, so their ratios are side by side.")
    print("  isa C/PT: the instruction-set level our kernels ran at (bin/train's start-up line; --isa caps it with\n"
          "  LM_MAX_ISA) / PyTorch's ATEN_CPU_CAPABILITY (best: not capped). The BLAS kernels are in the last columns.\n"
          "  ms/step: median over rounds of each run's median step time after warm-up (PT: PyTorch).\n"
          "  PT/C: median over rounds of PyTorch ms / C ms in the same round. precision bf16: bin/train\n"
          "  --precision bf16, PyTorch under torch.autocast(\"cpu\", dtype=torch.bfloat16); bf16/fp32: median over\n"
          "  rounds of fp32 ms / bf16 ms in the same round (> 1: bf16 is faster).")
    ran = {}
    for r in res:
        if r["level"]:
            ran.setdefault(r["level"], set()).add(r["c"].get("isa") or "?")
    for lv, isas in ran.items():
        print(f"  --isa {lv}: our kernels ran at {', '.join(sorted(isas))} (bin/train's start-up line)")
    said = set()
    for r in res:
        if r["torch"] and r["torch"]["openblas_coretype"] and (r["config"], r["mixer"], r["level"]) not in said:
            said.add((r["config"], r["mixer"], r["level"]))
            print(f"  {r['config']} {r['mixer']}{f' --isa ' + r['level'] if r['level'] else ''}: PyTorch ran with OPENBLAS_CORETYPE={r['torch']['openblas_coretype']}"
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
    header, key = row_key(res)
    table(header + ["MFLOP/token", "dense", "mixing", "GEMM GFLOP/s", "C GFLOP/s", "C MFU",
           "PT GFLOP/s", "PT MFU"],
          [key(r) + [fmt(r["flops_per_token"]["total"] / 1e6, ".2f"),
            fmt(r["flops_per_token"]["dense"] / 1e6, ".2f"), fmt(r["flops_per_token"]["mixing"] / 1e6, ".2f"),
            fmt(r["sgemm"]["gflops"]), fmt(r["c"]["gflops"]), fmt(r["c"]["mfu"] and 100 * r["c"]["mfu"], ".0f", "%"),
            fmt(r["torch"] and r["torch"]["gflops"]),
            fmt(r["torch"] and r["torch"]["mfu"] and 100 * r["torch"]["mfu"], ".0f", "%")] for r in res])
    print("  FLOPs/token: dense 6 x sum(rows x cols) of the weight matrices (LM head included, embeddings, biases,\n"
          "  LayerNorms not counted) + mixing per layer: the mixer's own (bin/info --mixers: Mixer.flops).\n"
          "  sgemm: bin/gemm-rate over one step's products at the model's shapes (forward NT, backward NN and TN),\n"
          "  total FLOPs / total time, the best of the rounds; bf16 rows: bin/gemm-rate --bf16 at the same products\n"
          "  (oneDNN, bf16 inputs, fp32 accumulation; TN at C += A B). MFU = achieved GFLOP/s / the row's rate.")
    high = [f"{r['config']} {r['mixer']}" for r in res if (r["c"]["mfu"] or 0) > 1 or (r["torch"] and (r["torch"]["mfu"] or 0) > 1)]
    if high:
        print(f"  MFU above 100% ({', '.join(high)}): the sgemm runs were slowed by other load; more rounds help.")


def print_memory(ctx, res):
    print("\n== Peak memory (ru_maxrss of the process tree) ==")
    header, key = row_key(res)
    table(header + ["weights", "grads+moments", "activations", "bf16", "theory MiB", "C peak MiB", "C/theory",
           "PT peak MiB", "PT/theory", "PT base MiB"],
          [key(r) + [fmt(r["memory"] and r["memory"]["weights"]),
            fmt(r["memory"] and r["memory"]["state"]), fmt(r["memory"] and r["memory"]["activations"]),
            fmt(r["memory"] and r["memory"]["bf16"]), fmt(r["memory"] and r["memory"]["total"]), fmt(r["c"]["peak_rss_mib"]),
            fmt(r["c"]["rss_over_theory"], ".2f", "x"), fmt(r["torch"] and r["torch"]["peak_rss_mib"]),
            fmt(r["torch"] and r["torch"]["rss_over_theory"], ".2f", "x"),
            fmt(r["torch"] and r["torch"]["base_rss_mib"])] for r in res])
    print("  theory: bin/train's own count (weights + gradients and AdamW moments + activation arena + with bf16 the\n"
          "  bf16 weights, operand scratch and packed heads). PT base:\n"
          "  PyTorch's peak after importing torch and reading the data, before the model (part of PT peak).")


def print_profile(ctx, res):
    print("\n== Where a C training step goes (bin/train --profile, ms per step, share; median over rounds) ==")
    header, key = row_key(res)
    table(header + list(PARTS) + ["step ms"],
          [key(r) + [prof_cell(r["profile"], p) for p in PARTS]
           + [fmt(r["profile"] and r["profile"]["step"])] for r in res])
    print("  mixer: the mixer layers (forward + backward); optimizer: clipping and AdamW.")


def print_inference(ctx, res):
    label = "first %d tokens of val" % ctx.eval_tokens if ctx.eval_tokens else "the whole val split"
    print("\n== Inference (the last C run's checkpoint) ==")
    header, key = row_key(res, precision=False)
    table(header + ["eval tokens", "eval s", "eval tokens/s", "sample tokens", "sample s", "sample tokens/s"],
          [key(r) + [r["eval"]["tokens"], fmt(r["eval"]["seconds"], ".2f"),
            fmt(r["eval"]["tokens_per_s"], ",.0f"), r["sample"]["tokens"], fmt(r["sample"]["seconds"], ".2f"),
            fmt(r["sample"]["tokens_per_s"], ",.0f")] for r in res if r["eval"]])
    print(f"  eval: bin/eval --threads {ctx.threads} over {label}; sample: bin/sample --tokens 500 (1 thread).\n"
          "  Seconds are the whole command's wall time (start-up and loading included). Inference is fp32, so it\n"
          "  runs once per model, on the first precision's checkpoint.")


def prof_cell(prof, part):
    if not prof or prof[part]["total"] is None:
        return "n/a"
    return f"{prof[part]['total']:.1f} ({prof[part]['share']:.0f}%)"
