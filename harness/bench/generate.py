"""The generate section of make bench: bin/sample's speed.

Two model shapes, each built by one bin/train step (the speed of decoding does
not depend on the weights' values): "l3", n_layer 4, n_head 4, n_embd 256,
block 4096, whose ~13 MB of fp32 weights sit in a server's last-level cache,
and "gpt2", GPT-2 small's 12 x 12 x 768 at block 1024 (~85M weights over the
data's vocabulary: ~340 MB in fp32, past a 300 MB cache); --quick runs l3
alone. For each of its mixers and each context length (l3: 128, 1024 and 4032
tokens of prompt; gpt2: 128 and 960; --quick the first and last), bin/sample
--timing (the section's threads, greedy) reads a prompt of that length and
decodes DECODE[model] tokens after it:

- prefill tokens/s: the prompt's batched forward (bin/sample's prefill);
- decode tokens/s with the weights in fp32, bf16 and int8 (--weights);
- GB/s: the bytes one step reads (its weight matrices in the format, and its
  layers' state at the context: bin/info --mixers's state floats per sequence,
  a key and value cache's, a recurrent state's) over the step's time, and that as a
  share of the machine's read rate at the fp32 weights' size (bin/gemm-rate
  --read-rate, one thread, measured in the same round);
- PyTorch: harness/bench/torch_generate.py's decoding loop of the same model
  (same config, its own random weights; each layer's cache its reference's,
  harness/mixers/NAME.py, where it has one, else n/a) on the same threads,
  fp32, its decode tokens/s and C's over it (C/PT > 1: C is faster).

At the shortest context also --num-samples N_SAMPLES (fp32 and int8): every
sample's tokens per second together, and that over batch 1's.

Numbers are medians over the rounds (each round runs everything once); the
ratios are medians of the same round's ratios.

--plot FILE draws the decode's tokens/s against the context into FILE (PNG,
through gnuplot, log scales): a line per model, mixer and weight format (a
colour per model and mixer, a point type per format), and PyTorch's dashed in
its model and mixer's colour."""
import json
import os
import re
import shutil
import tempfile

from harness import registry
from harness.bench.shared import c_train, fmt, label, med, plural, progress, table
from harness.bench.train import torch_env
from harness.common import BIN, ROOT, gnuplot, gnuplot_series, gnuplot_string, run, run_ok
from harness.compare import COLORS

GEN_MODELS = {
    "l3": {"n_layer": 4, "n_head": 4, "n_embd": 256, "block": 4096, "batch": 1},
    "gpt2": {"n_layer": 12, "n_head": 12, "n_embd": 768, "block": 1024, "batch": 1},
}
CONTEXTS = {"l3": (128, 1024, 4032), "gpt2": (128, 960)}
DECODE = {"l3": 64, "gpt2": 16}
NO_LOOP = 3  # harness/bench/torch_generate.py's exit status where a layer's reference has no Cache
FORMATS = ("fp32", "bf16", "int8")
N_SAMPLES = 8
# Bytes a weight takes in each format: int8 adds a 4-byte scale per 32 weights.
FORMAT_BYTES = {"fp32": 4.0, "bf16": 2.0, "int8": 1.0 + 4.0 / 32}
PROMPT_TEXT = ("call me ishmael. some years ago, never mind how long precisely, having little or no money in my "
               "purse, and nothing particular to interest me on shore, i thought i would sail about a little and "
               "see the watery part of the world. ")
# --plot's point type of each line (gnuplot_series's index: pngcairo's point type 7 + index): a filled
# circle, triangle and diamond for the formats, an open triangle for PyTorch.
PLOT_POINTS = {"fp32": 0, "bf16": 2, "int8": 6, "PyTorch": 3}
TIMING = re.compile(r"prefill (\d+) tokens ([\d.]+) ms .*decode (\d+) steps x (\d+) samples ([\d.]+) ms")


def prompt(n):
    """n characters of English text (one token each for a character tokenizer)."""
    return (PROMPT_TEXT * (n // len(PROMPT_TEXT) + 1))[:n]


def models(ctx):
    return ["l3"] if ctx.quick else list(GEN_MODELS)


def contexts(ctx, model):
    c = CONTEXTS[model]
    return [c[0], c[-1]] if ctx.quick else list(c)


def make_model(ctx, model, mixer):
    """One bin/train step of the model: (its checkpoint, its --json report)."""
    c = c_train(ctx, GEN_MODELS[model], mixer, 1, 0, ctx.threads, profile=False)
    ckpt = os.path.join(ctx.tmp, f"gen-{model}-{mixer}.ckpt")
    shutil.move(c["ckpt"], ckpt)
    return ckpt, c["train"]


def c_sample(ctx, ckpt, n_prompt, tokens, weights, samples):
    """One bin/sample --timing run: prefill tokens and ms, decode steps and ms per step."""
    r = run_ok([os.path.join(BIN, "sample"), "--model", ckpt, "--prompt", prompt(n_prompt), "--tokens", str(tokens),
                "--temperature", "0", "--weights", weights, "--num-samples", str(samples), "--threads",
                str(ctx.threads), "--timing"])
    m = TIMING.search(r.err)
    if not m:
        raise RuntimeError(f"bin/sample --timing printed no timing line: {r.err.strip()[-200:]}")
    return {"prefill_tokens": int(m[1]), "prefill_ms": float(m[2]), "steps": int(m[3]),
            "step_ms": float(m[5]) / max(int(m[3]), 1)}


def read_rate(ctx, mb):
    """bin/gemm-rate --read-rate: GB/s of one thread reading mb megabytes."""
    r = run_ok([os.path.join(BIN, "gemm-rate"), "--read-rate", str(max(1, round(mb))), "--json"])
    return json.loads(r.out)["gb_per_s"]


def torch_decode(ctx, config, n_prompt, steps):
    """harness/bench/torch_generate.py on the model's config: prefill ms and the median ms per step, or
    {"none": why} where a layer's reference has no decoding cache, or None (ctx.torch_missing set) on
    failure or with --no-torch."""
    if ctx.torch_missing:
        return None
    r = run([ctx.torch_python, "-m", "harness.bench.torch_generate", json.dumps(config), str(n_prompt), str(steps),
             str(ctx.threads)], torch_env(), cwd=ROOT)
    if r.status == NO_LOOP:
        return {"none": r.why()}
    if r.status != 0:
        ctx.torch_missing = f"PyTorch run failed: {r.why()}"
        return None
    res = json.loads(r.out)
    return {"prefill_ms": res["prefill_ms"], "step_ms": med(res["step_ms"][2:] or res["step_ms"]), "blas": res["blas"]}


def weight_entries(report):
    """The weights a decode step multiplies by: every matrix of bin/train's --json report."""
    return sum(m["rows"] * m["cols"] for m in report["matrices"])


def state_bytes(report, context):
    """What a step reads of its decoder state at the context: its layers' state floats per sequence (fp32)
    with the block at the context (bin/info --mixers: a key and value cache then holds the context)."""
    cfg = dict(report["config"], block_size=max(2, min(context, report["config"]["block_size"])))
    return 4 * sum(layer["step_floats"] for layer in registry.describe(config=cfg)["layers"])


def section_generate(ctx):
    mixers, no_loop = list(ctx.mixers), {}  # no_loop: mixer -> why PyTorch has no decoding loop of it
    built = {}
    for model in models(ctx):
        for mixer in mixers:
            progress(f"generate: building the {model} {mixer} model (one bin/train step)")
            built[(model, mixer)] = make_model(ctx, model, mixer)
    runs, batch_runs, rates = {}, {}, {}
    for rnd in range(ctx.rounds):
        for model in models(ctx):
            fp32_mb = weight_entries(built[(model, mixers[0])][1]) * 4e-6 if mixers else 0
            rates.setdefault(model, []).append(read_rate(ctx, fp32_mb) if mixers else None)
            for mixer in mixers:
                ckpt, report = built[(model, mixer)]
                K = DECODE[model]
                for L in contexts(ctx, model):
                    row = {w: c_sample(ctx, ckpt, L, K, w, 1) for w in FORMATS}
                    t = torch_decode(ctx, report["config"], row["fp32"]["prefill_tokens"], K) \
                        if mixer not in no_loop else None
                    if t and "none" in t:
                        no_loop[mixer], t = t["none"], None
                    row["torch"] = t
                    runs.setdefault((model, mixer, L), []).append(row)
                    t = row["torch"]
                    progress(f"generate round {rnd + 1}/{ctx.rounds} {model} {mixer} context {L}: "
                             + ", ".join(f"{w} {1e3 / row[w]['step_ms']:.0f}" for w in FORMATS) + " tokens/s"
                             + (f", PyTorch {1e3 / t['step_ms']:.0f}" if t else ""))
                L = contexts(ctx, model)[0]
                b = {w: c_sample(ctx, ckpt, L, K, w, N_SAMPLES) for w in ("fp32", "int8")}
                batch_runs.setdefault((model, mixer), []).append(b)
    out = {"rows": [], "batch": [], "read_rate": {}, "torch_none": no_loop, "n_samples": N_SAMPLES}
    for model in models(ctx):
        rate = med([r for r in rates.get(model, []) if r])
        out["read_rate"][model] = {"mb": weight_entries(built[(model, mixers[0])][1]) * 4e-6 if mixers else None,
                                   "gb_per_s": rate}
        for mixer in mixers:
            report = built[(model, mixer)][1]
            entries = weight_entries(report)
            for L in contexts(ctx, model):
                rs = runs[(model, mixer, L)]
                row = {"model": model, "mixer": mixer, "context_asked": L,
                       "context": rs[0]["fp32"]["prefill_tokens"], "decode": DECODE[model],
                       "weights_mb": {w: entries * FORMAT_BYTES[w] * 1e-6 for w in FORMATS},
                       "prefill_tokens_per_s": med([r["fp32"]["prefill_tokens"] * 1e3 / r["fp32"]["prefill_ms"]
                                                    for r in rs])}
                state = state_bytes(report, row["context"] + DECODE[model] // 2)  # at the steps' mean context
                for w in FORMATS:
                    step_ms = med([r[w]["step_ms"] for r in rs])
                    gbs = (entries * FORMAT_BYTES[w] + state) / (step_ms * 1e-3) * 1e-9
                    row[w] = {"tokens_per_s": 1e3 / step_ms, "gb_per_s": gbs,
                              "read_share": gbs / rate if rate else None}
                ts = [r["torch"] for r in rs if r["torch"]]
                row["torch_tokens_per_s"] = med([1e3 / t["step_ms"] for t in ts]) if ts else None
                row["torch_prefill_tokens_per_s"] = med([row["context"] * 1e3 / t["prefill_ms"] for t in ts]) if ts else None
                row["c_over_torch"] = med([t["step_ms"] / r["fp32"]["step_ms"] for r in rs for t in [r["torch"]] if t]) \
                    if ts else None
                row["int8_over_fp32"] = med([r["fp32"]["step_ms"] / r["int8"]["step_ms"] for r in rs])
                out["rows"].append(row)
            bs = batch_runs[(model, mixer)]
            base = runs[(model, mixer, contexts(ctx, model)[0])]
            brow = {"model": model, "mixer": mixer, "context": base[0]["fp32"]["prefill_tokens"], "n": N_SAMPLES}
            for w in ("fp32", "int8"):
                brow[w] = {"tokens_per_s": med([N_SAMPLES * 1e3 / b[w]["step_ms"] for b in bs]),
                           "over_batch1": med([N_SAMPLES * r[w]["step_ms"] / b[w]["step_ms"] for b, r in zip(bs, base)])}
            out["batch"].append(brow)
    out["torch_unavailable"] = ctx.torch_missing
    return out


def print_generate(ctx, res):
    print(f"\n== generate: bin/sample's prefill and decode (tokens/s, {plural(ctx.threads, 'thread')}, greedy; "
          "medians over rounds)")
    for model, r in res["read_rate"].items():
        print(f"  {model}: the machine's read rate at the fp32 weights' {fmt(r['mb'], '.0f')} MB: "
              f"{fmt(r['gb_per_s'], '.1f')} GB/s (bin/gemm-rate --read-rate, 1 thread)")
    rows = []
    for r in res["rows"]:
        rows.append([r["model"], label(r["mixer"]), r["context"], fmt(r["prefill_tokens_per_s"], ".0f"),
                     fmt(r["torch_prefill_tokens_per_s"], ".0f")]
                    + [fmt(r[w]["tokens_per_s"], ".0f") for w in FORMATS]
                    + [fmt(r["fp32"]["gb_per_s"], ".1f"),
                       fmt(None if r["fp32"]["read_share"] is None else 100 * r["fp32"]["read_share"], ".0f", "%"),
                       fmt(r["int8_over_fp32"], ".2f", "x"), fmt(r["torch_tokens_per_s"], ".0f"),
                       fmt(r["c_over_torch"], ".2f", "x")])
    table(["model", "mixer", "context", "prefill", "PT prefill", "fp32", "bf16", "int8", "fp32 GB/s", "of read",
           "int8/fp32", "PyTorch", "C/PT"], rows)
    print(f"  (decode columns: tokens/s decoding {', '.join(str(DECODE[m]) for m in GEN_MODELS)} tokens after the "
          "context; GB/s: the weight matrices and the layers' state a step reads over its time)")
    brows = [[b["model"], label(b["mixer"]), b["context"], b["n"], fmt(b["fp32"]["tokens_per_s"], ".0f"),
              fmt(b["fp32"]["over_batch1"], ".2f", "x"), fmt(b["int8"]["tokens_per_s"], ".0f"),
              fmt(b["int8"]["over_batch1"], ".2f", "x")] for b in res["batch"]]
    print(f"\n  --num-samples {res['n_samples']}: every sample's tokens/s together, and over batch 1's")
    table(["model", "mixer", "context", "N", "fp32", "over 1", "int8", "over 1"], brows)
    for mixer, why in res["torch_none"].items():
        print(f"  PyTorch: no decoding loop of {label(mixer)}: {why}")
    if res["torch_unavailable"]:
        print(f"  PyTorch: not measured ({res['torch_unavailable']})")


def plot_generate(ctx, res, path):
    """--plot: the decode's tokens/s against the context, into the PNG path alone (the lines' data
    files live in a temporary folder)."""
    groups = list(dict.fromkeys((r["model"], r["mixer"]) for r in res["rows"]))
    parts = []
    with tempfile.TemporaryDirectory(prefix="lm-bench-plot-") as tmp:
        for g, (model, mixer) in enumerate(groups):
            rows = [r for r in res["rows"] if (r["model"], r["mixer"]) == (model, mixer)]
            color = f"lc rgb '{COLORS[g % len(COLORS)]}'"
            lines = [(w, [(r["context"], r[w]["tokens_per_s"]) for r in rows], color) for w in FORMATS]
            lines.append(("PyTorch", [(r["context"], r["torch_tokens_per_s"]) for r in rows if r["torch_tokens_per_s"]],
                          color + " dt 2"))
            for name, points, style in lines:
                if points:
                    parts.append(gnuplot_series(os.path.join(tmp, f"decode_{g}_{name}.dat"), points,
                                                PLOT_POINTS[name], f"{model} {label(mixer)} {name}", style))
        title = (f"bin/sample's decode against context ({plural(ctx.threads, 'thread')}, greedy; medians over "
                 f"{plural(ctx.rounds, 'round')})")
        gnuplot("set terminal pngcairo size 1000,560 font ',11'\nset grid\nset key outside right top\n"
                f"set output {gnuplot_string(path)}\nset title {gnuplot_string(title)}\n"
                "set logscale xy\nset xlabel 'context (tokens of prompt)'\nset ylabel 'decode tokens/s'\n"
                "plot " + ", \\\n     ".join(parts) + "\n", output=path)
