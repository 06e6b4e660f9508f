"""How the reports say their numbers: a mean and its spread over seeds, a
p-value, whether a ratio is a difference, the runs' precision, and the
table of the architectures compared (harness.compare's report; make paper's
reads its wording from here too)."""
import math
import statistics


def fmt(m, s, digits=3):
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def fmt_p(p):
    """Welch's p as the reports give it."""
    return "p n/a" if p is None else f"p {p:.2g}" if p >= 1e-3 else "p < 0.001"


def mean_spread(xs):
    """Mean and spread (half the range over seeds: every seed lies within mean +- spread... of the midrange)."""
    xs = [x for x in xs if x is not None and not math.isnan(x)]
    if not xs:
        return float("nan"), float("nan")
    return statistics.fmean(xs), (max(xs) - min(xs)) / 2


ONE_SEED = "one seed: no spread to compare against"


def difference(m, s, n_seeds):
    """How a paired ratio, mean m ± spread s over n_seeds seeds, reads against 1."""
    if n_seeds < 2:
        return ONE_SEED
    return "a difference (it exceeds the seed spread)" if abs(m - 1) > s else "NOT a difference (within the seed spread)"


def precision_text(precision):
    """How the report says the runs' precision."""
    return ("bf16 products with fp32 accumulation (bin/train --precision bf16)" if precision == "bf16"
            else "fp32 products")


def layers_text(mixers):
    """'MIXER x 4' for one mixer in every layer, else the per-layer list."""
    return f"{mixers[0]} x {len(mixers)}" if len(set(mixers)) == 1 else ",".join(mixers)


def arch_table(archs):
    """The report's table of the architectures: their layers, own options, size (and what it was matched to)
    and exact parameter count beside the first's."""
    ref = archs[0]["params"]
    md = ["## Architectures", "",
          "| architecture | family | layers | options | size | parameters | vs " + archs[0]["name"] + " |",
          "|---|---|---|---|---|---|---|"]
    for x in archs:
        size = "-" if not x.get("size") else f"{x['knob']['arch_key']} {x['size']}" + (
            f" (matched to {x['matched']}{', capped at n_embd' if x.get('capped') else ''})" if x.get("matched") else "")
        own = [f"{k} {v}" for k, v in x.get("options", {}).items() if not x["knob"] or k != x["knob"]["arch_key"]]
        md.append(f"| {x['name']} | {x.get('family', '-')} | {layers_text(x['mixers'])} | {', '.join(own) or '-'} "
                  f"| {size} | {x['params']:,} | {100.0 * (x['params'] - ref) / ref:+.2f}% |")
    return md
