"""How the reports say their numbers, never more than the seeds show: a mean
over seeds with the 95% interval of Student's t (n - 1 degrees of freedom,
said), a ratio of two architectures' perplexities from their paired
per-seed differences of loss, a p-value and a verdict only from MIN_SEEDS
seeds on, and "the same on every seed" where the seeds do not differ at all
(no interval can be made of no spread). Also the runs' precision and the
table of the architectures compared (harness.compare's report; make paper's
and the Zoology protocol's read their wording here too)."""
import math

from harness.stats import Estimate

# A p-value and a verdict need this many seeds at least: with 2, Student's t has 1 degree of freedom, its 95%
# interval spans 12.7 standard errors, and a p-value of one difference's sign says nothing a reader can use.
MIN_SEEDS = 3


def finite(xs):
    """The values that are numbers (not None, not NaN)."""
    return [x for x in xs if x is not None and not math.isnan(x)]


def safe_exp(x):
    """e to the x, inf where that overflows a float (a ratio of a run whose loss is astronomical)."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def fmt_p(p):
    """A p-value as the reports give it."""
    return "p n/a" if p is None else f"p {p:.2g}" if p >= 1e-3 else "p < 0.001"


def fmt_half(half, digits):
    """The half-width of an interval at `digits` decimals, or, where those would round it to 0 (a spread
    smaller than the numbers' last digit), at one significant digit: never '± 0.000' for a spread."""
    return f"{half:.{digits}f}" if round(half, digits) > 0 else f"{half:.1g}"


def seeds_text(n):
    """'one seed', '3 seeds'."""
    return "one seed" if n == 1 else f"{n} seeds"


def df_text(df):
    """'1 degree of freedom', '2 degrees of freedom'."""
    return f"{df} degree{'s' if df != 1 else ''} of freedom"


def estimate_cell(xs, digits=3, scale=1.0):
    """A table cell of values over seeds: the mean ± the half-width of its 95% t interval; the value alone for
    one seed; 'M (same on all N)' where the seeds agree exactly; '-' for none. scale: multiplies the values
    (100 for a percentage)."""
    e = Estimate([x * scale for x in finite(xs)])
    if e.n == 0:
        return "-"
    if e.n == 1:
        return f"{e.mean:.{digits}f}"
    if not e.spread:
        return f"{e.mean:.{digits}f} (same on all {e.n})"
    return f"{e.mean:.{digits}f} ± {fmt_half(e.half, digits)}"


def ratio_cell(deltas, digits=3):
    """A perplexity ratio from per-seed differences of log-perplexity (of loss): exp of their mean, and the
    exp of its 95% t interval in brackets (an interval of the log ratio, so not symmetric); see estimate_cell
    for one seed and no spread."""
    e = Estimate(finite(deltas))
    if e.n == 0:
        return "-"
    r = f"{safe_exp(e.mean):.{digits}f}"
    if e.n == 1:
        return r
    if not e.spread:
        return f"{r} (same on all {e.n})"
    return f"{r} [{safe_exp(e.mean - e.half):.{digits}f}, {safe_exp(e.mean + e.half):.{digits}f}]"


def ratio_words(deltas, digits=3):
    """The same ratio in a sentence: '1.023 (95% t interval 1.010 to 1.036, 2 degrees of freedom)'."""
    e = Estimate(finite(deltas))
    if e.n == 0:
        return "n/a"
    r = f"{safe_exp(e.mean):.{digits}f}"
    if e.n == 1:
        return f"{r} (one seed: no interval)"
    if not e.spread:
        return f"{r} (the same on all {e.n} seeds: no spread, so no interval)"
    return (f"{r} (95% t interval {safe_exp(e.mean - e.half):.{digits}f} to {safe_exp(e.mean + e.half):.{digits}f}, "
            f"{df_text(e.df)})")


def verdict(deltas, null="1"):
    """How paired per-seed differences read against none (a ratio against `null`): a p-value (the paired
    t-test) and a verdict from MIN_SEEDS seeds on, said in words below that and where the seeds agree
    exactly. 'no difference shown' is all an interval that includes the null says: not that there is none."""
    e = Estimate(finite(deltas))
    if e.n < MIN_SEEDS:
        return (f"{seeds_text(e.n)}: no p-value and no verdict (they need {MIN_SEEDS} seeds at least)"
                if e.n else "no runs to compare")
    if not e.spread:
        return f"the same on all {e.n} seeds: no spread, so no p-value or verdict"
    test = f"paired t, {fmt_p(e.p)}, {df_text(e.df)}"
    if e.p < 0.05:
        return f"a difference: its 95% interval excludes {null} ({test})"
    return f"no difference shown: its 95% interval includes {null} ({test})"


def p_cell(deltas):
    """A table's p-value cell of paired differences: the paired t-test's p from MIN_SEEDS seeds on, else '-'."""
    e = Estimate(finite(deltas))
    return fmt_p(e.p) if e.n >= MIN_SEEDS and e.spread else "-"


def paired(runs, base, key, seed="seed"):
    """The per-seed differences runs[key] - base[key] over the seeds both have (runs and base: lists of
    dicts with `seed`), in the runs' order."""
    ref = {r[seed]: r[key] for r in base if r.get(key) is not None}
    return [r[key] - ref[r[seed]] for r in runs if r[seed] in ref and r.get(key) is not None]


def interval_caption(n_seeds):
    """What the tables' ± and brackets are, for runs of n_seeds seeds."""
    if n_seeds < 2:
        return "One seed: each number is its run's, with no interval (that needs 2 seeds), no p-value and no verdict."
    return (f"Mean over {n_seeds} seeds ± the half-width of its 95% interval from Student's t with "
            f"{df_text(n_seeds - 1)}; ratios are paired by seed, exp of the mean per-seed difference of log-perplexity "
            f"with that interval's ends in brackets; \"same on all\" where the seeds agree exactly, so that no "
            f"interval can be made." + ("" if n_seeds >= MIN_SEEDS else
                                        f" With {n_seeds} seeds no p-value and no verdict is given "
                                        f"({MIN_SEEDS} at least)."))


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
