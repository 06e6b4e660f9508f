"""The mixers section of make bench.

The mixers alone as the sequence grows: n_layer 2, n_head 4, n_embd 128, T =
256, 1024, 4096, 16384 with B = 16384 / T (whole batches at every T; block
16384 fits data/moby's train split). Per mixer (the bench's: experiments/
defaults.json's bench.mixers, registered mixers and architectures of one
with options of its own) and T: the mixer's training time per token (its
bin/train --profile row: forward and backward of both layers over the step's
tokens), the whole step's, and the peak RSS. A mixer whose cost per token
grows with T (its FLOPs per token at the longest T over the shortest, as
bin/info --mixers gives them: a quadratic mixer's) is not run at T = 16384
(a step takes seconds there; said so in the output).

Per mixer and T, the mixer's cost per token over its cost at T = 256: the
median over rounds of the two runs' ratio in the same round (a round runs
each mixer's lengths back to back, so that load from elsewhere drifts less
between the two). For the mixers
whose cost per token is meant to be flat in T (their FLOPs per token are) a
line says whether each T is within 1.25x of T = 256: a printed check, not a
failure, as a loaded machine can push it out.

Against PyTorch, for the mixers whose reference (harness/mixers/NAME.py) has
a chunked form: after each C run, one run of
harness/bench/torch_mixers.py (--torch-python's interpreter,
torch.set_num_threads(the same N), the OpenBLAS core harness/bench/train.py
gives PyTorch) on the C run's model config and batch: the same mixer layers
(the weights' shapes of harness/torch_ref.init_weights) written in their
chunked PyTorch forms, forward and backward, timed per step. C/PT is the median
over rounds of PyTorch's ms over C's mixer ms in the same round: how many times
faster C's mixer is (> 1: C is faster)."""
import json

from harness import registry
from harness.bench.shared import bench_arch, c_train, fmt, label, med, model_args, own_options, plural, progress, table
from harness.bench.train import torch_env
from harness.common import ROOT, run

MIXER_LENGTHS = (256, 1024, 4096, 16384)
NO_FORM = 3  # harness/bench/torch_mixers.py's exit status where a mixer's reference has no chunked form
MIXER_TOKENS = 16384
# A mixer whose cost per token grows with T (a quadratic one's, linearly): a step at 16384 takes about 4
# times one at 4096 (seconds on 2 cores), for a row that shows nothing new.
GROWING_MAX_T = 4096
GROWING_SKIPPED = (f"not run above T = {GROWING_MAX_T}: its cost per token grows with T (bin/info --mixers: its "
                   f"FLOPs per token), a step at T takes ~T/{GROWING_MAX_T} times one at {GROWING_MAX_T} or more")
# How much the cost per token of a mixer whose FLOPs per token do not grow with T may grow.
FLAT_LIMIT = 1.25


def mixer_config(T):
    return {"n_layer": 2, "n_head": 4, "n_embd": 128, "block": T, "batch": MIXER_TOKENS // T}


def grows(mixer):
    """Whether a mixer's cost per token grows with T: its mixing FLOPs per token (bin/info --mixers) at the
    longest length over the shortest, beyond FLAT_LIMIT."""
    flops = [registry.describe(model_args(mixer_config(T), mixer))["layers"][0]["flops_per_token"]["mixing"]
             for T in (MIXER_LENGTHS[0], MIXER_LENGTHS[-1])]
    return flops[1] > FLAT_LIMIT * flops[0]


def skipped(mixer, T):
    return GROWING_SKIPPED if T > GROWING_MAX_T and grows(mixer) else None


def mixer_ms(c):
    """The mixer's --profile row (ms per step, forward + backward), or None."""
    return (c["profile"] or {}).get("mixer", {}).get("total")


def torch_mixer(ctx, c, steps, warmup):
    """One harness/bench/torch_mixers.py run on the model and batch of the C
    run c, ctx.threads threads: the median ms per step after warm-up, its
    OpenBLAS, threads, version and peak RSS; {"none": why} where the mixer's
    reference has no chunked form; None (and ctx.torch_missing set) on
    failure or with --no-torch."""
    if ctx.torch_missing:
        return None
    env = torch_env()
    cmd = [ctx.torch_python, "-m", "harness.bench.torch_mixers", json.dumps(c["train"]["config"]),
           str(c["train"]["batch"]), str(steps), str(ctx.threads)]
    r = run(cmd, env, cwd=ROOT)
    if r.status == NO_FORM:
        return {"none": r.why()}
    if r.status != 0:
        ctx.torch_missing = f"PyTorch run failed: {r.why()}"
        return None
    res = json.loads(r.out)
    return {"ms": med(res["ms"][warmup:]), "blas": res["blas"], "kernel": res["blas"].rsplit("kernel ", 1)[-1],
            "threads": res["threads"], "impl": res["impl"], "rss_mib": r.rss_mib}


def ratio(xs, ys):
    """The median over rounds of x / y in the same round (None where no round has both)."""
    pairs = [(x, y) for x, y in zip(xs, ys) if x is not None and y]
    return med([x / y for x, y in pairs]) if pairs else None


def section_mixers(ctx):
    steps, warmup = ctx.steps["mixers"]
    t_steps, t_warmup = ctx.steps["mixers_torch"]
    runs, no_form = {}, set()  # no_form: the mixers whose reference has no chunked PyTorch form
    for rnd in range(ctx.rounds):
        # A mixer's lengths back to back, so that the ratios to T = 256 compare runs of the same minute.
        for mixer in ctx.section_mixers:
            for T in MIXER_LENGTHS:
                if skipped(mixer, T):
                    continue
                c = c_train(ctx, mixer_config(T), mixer, steps, warmup, ctx.threads)
                t = torch_mixer(ctx, c, t_steps, t_warmup) if mixer not in no_form else None
                if t and "none" in t:
                    no_form.add(mixer)
                    t = None
                runs.setdefault((T, mixer), []).append((c, t))
                mix = mixer_ms(c)
                progress(f"mixers round {rnd + 1}/{ctx.rounds} T={T} {mixer}: {c['ms']:.1f} ms/step"
                         + (f", mixer {mix:.1f} ms" if mix is not None else "")
                         + (f", PyTorch mixer {t['ms']:.1f} ms ({t['ms'] / mix:.2f}x)" if t and mix else ""))
    out = []
    per_tok = 1e3 / MIXER_TOKENS
    for mixer in ctx.section_mixers:
        base = [mixer_ms(c) for c, _ in runs.get((MIXER_LENGTHS[0], mixer), [])]
        for T in MIXER_LENGTHS:
            flat, torch_form = not grows(mixer), mixer not in no_form
            row = {"T": T, "B": MIXER_TOKENS // T, "mixer": mixer, "options": own_options(mixer),
                   "skipped": skipped(mixer, T), "flat": flat, "torch_form": torch_form}
            if row["skipped"]:
                out.append(row)
                continue
            cs = [c for c, _ in runs[(T, mixer)]]
            ts = [t for _, t in runs[(T, mixer)]]
            mix = [mixer_ms(c) for c in cs]
            m = med([x for x in mix if x is not None])
            t_ok = [t for t in ts if t]
            t_ms = med([t["ms"] for t in t_ok])
            over = ratio(mix, base)
            row.update({"mixer_us_per_token": m * per_tok if m is not None else None,
                        "step_us_per_token": med([c["ms"] for c in cs]) * per_tok,
                        "peak_rss_mib": max(c["rss_mib"] for c in cs),
                        "activations_mib": cs[-1]["memory"]["activations"] if cs[-1]["memory"] else None,
                        "rounds_mixer_us_per_token": [x * per_tok if x is not None else None for x in mix],
                        "kernel": cs[-1]["kernel"],
                        "over_t256": over,
                        "flat_limit": FLAT_LIMIT if flat else None,
                        "within_flat_limit": (over <= FLAT_LIMIT if over is not None else None) if flat else None,
                        "torch_mixer_us_per_token": t_ms * per_tok if t_ms is not None else None,
                        "c_over_torch": ratio([t and t["ms"] for t in ts], mix) if torch_form else None,
                        "torch_impl": t_ok[-1]["impl"] if t_ok else None,
                        "torch_kernel": t_ok[-1]["kernel"] if t_ok else None,
                        "torch_blas": t_ok[-1]["blas"] if t_ok else None,
                        "torch_threads": t_ok[-1]["threads"] if t_ok else None,
                        "torch_peak_rss_mib": max(t["rss_mib"] for t in t_ok) if t_ok else None,
                        "torch_unavailable": ctx.torch_missing if torch_form and not t_ok else None})
            row["c_faster"] = row["c_over_torch"] > 1 if row["c_over_torch"] is not None else None
            out.append(row)
    return out


def print_mixers(ctx, res):
    steps, warmup = ctx.steps["mixers"]
    t_steps, t_warmup = ctx.steps["mixers_torch"]
    ran = [r for r in res if not r.get("skipped")]
    print(f"\n== The mixers as T grows (n_layer 2, n_head 4, n_embd 128, B x T = {MIXER_TOKENS}, {ctx.threads} threads; "
          f"C {steps} steps, {warmup} dropped, PyTorch {t_steps}, {t_warmup} dropped; median of "
          f"{plural(ctx.rounds, 'round')}) ==")
    table(["T", "B", "mixer", "mixer us/token", "step us/token", "peak RSS MiB", "activations MiB",
           "PT mixer us/token", "C/PT"],
          [[r["T"], r["B"], label(r["mixer"]), fmt(r["mixer_us_per_token"], ".2f"), fmt(r["step_us_per_token"], ".2f"),
            fmt(r["peak_rss_mib"]), fmt(r["activations_mib"]), fmt(r.get("torch_mixer_us_per_token"), ".2f"),
            fmt(r.get("c_over_torch"), ".2f", "x")] for r in ran])
    print("  mixer us/token: the mixer's --profile row (forward + backward of both layers) / tokens per step.")
    for m in dict.fromkeys(r["mixer"] for r in res):
        if bench_arch(m).options:
            print(f"  {label(m)}: {bench_arch(m).mixers[0]} with bin/train {' '.join(bench_arch(m).train_args())}.")
    print(f"  PT: the same mixer layers in PyTorch, where the mixer's reference (harness/mixers/NAME.py) has a form\n"
          f"  written to be fast (harness/bench/torch_mixers.py), forward + backward, torch.set_num_threads({ctx.threads}).\n"
          f"  C/PT: median over rounds of PyTorch's mixer ms / C's in the same round (> 1: C is faster).")
    for r in res:
        if r.get("skipped"):
            print(f"  {label(r['mixer'])}, T = {r['T']}: {r['skipped']}")
    kernels = {r["kernel"] for r in ran if r.get("kernel")}
    if kernels:
        print(f"  bin/train ran BLAS kernel {', '.join(sorted(kernels))}")
    for blas in sorted({r["torch_blas"] for r in ran if r.get("torch_blas")}):
        print(f"  PyTorch ran: {blas}")
    for impl in sorted({r["torch_impl"] for r in ran if r.get("torch_impl")}):
        print(f"  PyTorch version: {impl}")
    for r in ran:
        if r.get("torch_threads") and r["torch_threads"] != ctx.threads:
            print(f"  T = {r['T']} {label(r['mixer'])}: PyTorch ran {r['torch_threads']} threads, not {ctx.threads}")
    for note in sorted({r["torch_unavailable"] for r in ran if r.get("torch_unavailable")}):
        print(f"  PyTorch not measured: {note}")
    print_against_torch(res)
    print_flatness(res)


def print_flatness(res):
    mixers = list(dict.fromkeys(r["mixer"] for r in res))
    lengths = MIXER_LENGTHS[1:]
    print(f"\n== Cost per token against T = {MIXER_LENGTHS[0]} (mixer us/token at T / at {MIXER_LENGTHS[0]}, "
          f"median of the per-round ratios) ==")
    rows = []
    for m in mixers:
        by_t = {r["T"]: r for r in res if r["mixer"] == m}
        cells = [fmt(by_t[T].get("over_t256"), ".2f", "x") if not by_t[T].get("skipped") else "not run"
                 for T in lengths]
        flat = [by_t[T].get("within_flat_limit") for T in lengths if not by_t[T].get("skipped")]
        if not by_t[MIXER_LENGTHS[0]].get("flat", True):
            check = "- (grows with T)"
        elif None in flat or not flat:
            check = "n/a"
        else:
            check = "yes" if all(flat) else "NO: " + ", ".join(
                f"T={T}" for T in lengths if by_t[T].get("within_flat_limit") is False)
        rows.append([label(m)] + cells + [check])
    table(["mixer"] + [f"T={T}" for T in lengths] + [f"within {FLAT_LIMIT}x"], rows)
    print(f"  within {FLAT_LIMIT}x: for the mixers whose cost per token should not grow with T (their FLOPs per token\n"
          f"  do not: bin/info --mixers), whether every T is within {FLAT_LIMIT}x of T = {MIXER_LENGTHS[0]}. A printed "
          f"check, not a test: other load on\n  the machine moves it; rerun with more --rounds before reading a NO as a "
          f"regression.")


def print_against_torch(res):
    rows = [r for r in res if r.get("c_over_torch") is not None or (r.get("torch_form") and not r.get("skipped"))]
    if not rows:
        return
    mixers = list(dict.fromkeys(r["mixer"] for r in rows))
    verdict = []
    for m in mixers:
        ratios = [r["c_over_torch"] for r in rows if r["mixer"] == m]
        if None in ratios:
            verdict.append(f"{label(m)}: n/a")
        elif all(x > 1 for x in ratios):
            verdict.append(f"{label(m)}: C faster at every T ({min(ratios):.2f}x to {max(ratios):.2f}x)")
        else:
            slow = [f"T={r['T']} ({r['c_over_torch']:.2f}x)" for r in rows if r["mixer"] == m and r["c_over_torch"] <= 1]
            verdict.append(f"{label(m)}: PyTorch as fast or faster at {', '.join(slow)}")
    print("  C against PyTorch (C/PT > 1 at every T): " + "; ".join(verdict))
