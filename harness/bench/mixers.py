"""The mixers section of make bench.

The mixers alone as the sequence grows: n_layer 2, n_head 4, n_embd 128, T =
256, 1024, 4096 with B = 4096 / T; the mixer's time per token (its --profile
row), the whole step's, and the peak RSS."""
from harness.bench.shared import c_train, fmt, med, plural, progress, table

MIXER_LENGTHS = (256, 1024, 4096)
MIXER_TOKENS = 4096


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


def print_mixers(ctx, res):
    steps, warmup = ctx.steps["mixers"]
    print(f"\n== The mixers as T grows (n_layer 2, n_head 4, n_embd 128, B x T = {MIXER_TOKENS}; "
          f"{steps} steps, {warmup} dropped, median of {plural(ctx.rounds, 'round')}) ==")
    table(["T", "B", "mixer", "mixer us/token", "step us/token", "peak RSS MiB", "activations MiB"],
          [[r["T"], r["B"], r["mixer"], fmt(r["mixer_us_per_token"], ".2f"), fmt(r["step_us_per_token"], ".2f"),
            fmt(r["peak_rss_mib"]), fmt(r["activations_mib"])] for r in sorted(res, key=lambda r: (r["mixer"], r["T"]))])
    print("  mixer us/token: the mixer's --profile row (forward + backward of both layers) / tokens per step.")
