"""make paper's runs read back from each recipe's compare report
(OUT/RECIPE/compare.csv and the runs' training logs), and the ratios,
p-values and sentences the report makes of them, paired by seed."""
import os

from harness.common import die
from harness.lib.compare.runs import CSV_RUN, csv_columns
from harness.lib.paper.setup import SETTINGS, recipe_label
from harness.lib.summary import ONE_SEED, fmt, fmt_p, mean_spread
from harness.lib.trained import val_curve
from harness.results import Int, Num, Obj, load_csv, load_json, read_train_log
from harness.stats import welch_p


# Per byte and per word of the scored text (bin/eval --word-ppl): comparable across tokenizers.
PER_TEXT = ("val_bpb", "val_word_ppl", "test_bpb", "test_word_ppl")


SETTINGS_SCHEMA = Obj({"lr": Num(0, lo_open=True, optional=True), "warmup_iters": Int(0, optional=True)}, closed=True)


def read_runs(out, norm, archs, a):
    """The runs of one norm's compare report (compare.csv, checked against
    harness/lib/compare/runs.py's csv_columns; its architectures this table's), with the
    lr and warm-up they trained with (OUT/NORM/paper_settings.json; else this
    command's) and their training logs where they are there."""
    path = os.path.join(out, norm, "compare.csv")
    if not os.path.lexists(path):
        return []
    settings = {"lr": a.lr, "warmup_iters": a.warmup_iters}
    if os.path.lexists(os.path.join(out, norm, SETTINGS)):
        given = load_json(os.path.join(out, norm, SETTINGS), SETTINGS_SCHEMA)
        settings.update({k: v for k, v in given.items() if v is not None})
    mixers = {name: spec for name, spec in archs}
    rows = []
    for r in load_csv(path, csv_columns(), unique=CSV_RUN):
        if r["arch"] not in mixers:
            die(f"{path}: architecture '{r['arch']}' is not one of {', '.join(mixers)}")
        log = os.path.join(out, norm, f"{r['arch']}_{r['budget'].split(':')[0]}_{r['seed']}.csv")
        steps = read_train_log(log) if os.path.lexists(log) else []
        rows.append({"curve": val_curve(steps), "lr": settings["lr"], "warmup_iters": settings["warmup_iters"],
                     "points": [(s["tokens"], s["val_loss"]) for s in steps if s["val_loss"] is not None],
                     "name": r["arch"], "arch": r["mixers"], "norm": norm,
                     **{k: r[k] for k in ("seed", "tokens", "val_ppl", "test_ppl", "val_loss", "params",
                                          "train_seconds", "tok_s", "grassmann_rank", "grassmann_pair",
                                          "attn_window") + PER_TEXT}})
    return rows


def ratios(rows, norm, name, base="transformer", key="val_ppl"):
    """Per-seed ratios of name to base under one norm, paired by seed."""
    ref = {r["seed"]: r[key] for r in rows if r["norm"] == norm and r["name"] == base}
    return [r[key] / ref[r["seed"]] for r in rows if r["norm"] == norm and r["name"] == name and r["seed"] in ref]


def norm_ratios(rows, name):
    """Per-seed post / pre for one architecture."""
    pre = {r["seed"]: r["val_ppl"] for r in rows if r["norm"] == "pre" and r["name"] == name}
    return [r["val_ppl"] / pre[r["seed"]] for r in rows if r["norm"] == "post" and r["name"] == name and r["seed"] in pre]


def losses(rows, norm, name):
    """The val losses of one architecture's runs under one recipe."""
    return [r["val_loss"] for r in rows if r["norm"] == norm and r["name"] == name]


def ratio_p(rows, norm, name, base="transformer", base_norm=None):
    """Welch's p-value for a val-perplexity ratio of 1 (equal mean val loss) between
    name under norm and base under base_norm (default the same norm); None below 2 seeds."""
    return welch_p(losses(rows, norm, name), losses(rows, base_norm or norm, base))


def versus(rs, what):
    """How per-seed ratios rs read against 1, beside `what`."""
    if len(rs) < 2:
        return ONE_SEED
    m, s = mean_spread(rs)
    return (f"better than {what} by more than the seed spread" if m + s < 1 else
            f"worse than {what} by more than the seed spread" if m - s > 1 else
            f"level with {what} within the seed spread")


def runs_of(rows, norm, name):
    return [r for r in rows if r["norm"] == norm and r["name"] == name]


def ratio_cell(rows, norm, name, base):
    """'1.023 ± 0.004 | p 0.03' of name against base under one recipe, or '- | -' for base itself or
    where either has no runs."""
    rs = ratios(rows, norm, name, base)
    if name == base or not rs:
        return "- | -"
    return f"{fmt(*mean_spread(rs))} | {fmt_p(ratio_p(rows, norm, name, base))}"


def reading_line(rows, norm, name, base, what):
    """A bullet: name / base val perplexity, its p, and how it reads."""
    rs = ratios(rows, norm, name, base)
    return (f"- **{recipe_label(norm)}**: {name} / {base} val perplexity {fmt(*mean_spread(rs))} "
            f"(Welch {fmt_p(ratio_p(rows, norm, name, base))}): {versus(rs, what)}.")
