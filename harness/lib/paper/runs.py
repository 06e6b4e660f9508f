"""make paper's runs read back from each recipe's compare report
(OUT/RECIPE/compare.csv and the runs' training logs), and the ratios,
p-values and sentences the report makes of them, paired by seed."""
import os
import re

from harness.common import die
from harness.lib.compare.runs import CSV_RUN, csv_columns
from harness.lib.paper.setup import SETTINGS, recipe_label
from harness.lib.summary import MIN_SEEDS, df_text, fmt_p, p_cell, paired, ratio_words, verdict
from harness.lib.summary import ratio_cell as summary_ratio_cell
from harness.lib.trained import val_curve
from harness.results import Int, Num, Obj, load_csv, load_json, read_train_log
from harness.stats import Estimate


# Per byte and per word of the scored text (bin/eval --word-ppl): comparable across tokenizers.
PER_TEXT = ("val_bpb", "val_word_ppl", "test_bpb", "test_word_ppl")


# compare.csv's columns of the --evals tasks (harness/lib/evals.py): eval_NAME_acc, eval_NAME_scored, ...
EVAL_COLUMN = re.compile(r"eval_[A-Za-z0-9_-]{1,40}_(acc|acc_norm|word_ppl|scored)")
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
    for r in load_csv(path, csv_columns(), unique=CSV_RUN, extra=(EVAL_COLUMN, Num(0, optional=True))):
        if r["arch"] not in mixers:
            die(f"{path}: architecture '{r['arch']}' is not one of {', '.join(mixers)}")
        steps = []
        for log in run_logs(out, norm, r):
            if os.path.lexists(log):
                steps = read_train_log(log)
                break
        rows.append({"curve": val_curve(steps), "lr": settings["lr"], "warmup_iters": settings["warmup_iters"],
                     "points": [(s["tokens"], s["val_loss"]) for s in steps if s["val_loss"] is not None],
                     "name": r["arch"], "arch": r["mixers"], "norm": norm,
                     "evals": {k: v for k, v in r.items() if EVAL_COLUMN.fullmatch(k)},
                     **{k: r[k] for k in ("seed", "tokens", "val_ppl", "test_ppl", "val_loss", "params",
                                          "train_seconds", "tok_s", "load", "cores", "grassmann_rank",
                                          "grassmann_pair", "attn_window") + PER_TEXT}})
    return rows


def run_logs(out, norm, r):
    """Where a compare.csv row's training log is: its run folder's log.csv (OUT/NORM/ARCH_KIND_SEED), or
    beside compare.csv as ARCH_KIND_SEED.csv (a compare of before run folders)."""
    tag = f"{r['arch']}_{r['budget'].split(':')[0]}_{r['seed']}"
    return [os.path.join(out, norm, tag, "log.csv"), os.path.join(out, norm, f"{tag}.csv")]


def ratios(rows, norm, name, base="transformer", key="val_ppl"):
    """Per-seed ratios of name to base under one norm, paired by seed."""
    ref = {r["seed"]: r[key] for r in rows if r["norm"] == norm and r["name"] == base}
    return [r[key] / ref[r["seed"]] for r in rows if r["norm"] == norm and r["name"] == name and r["seed"] in ref]


def norm_ratios(rows, name):
    """Per-seed post / pre for one architecture."""
    pre = {r["seed"]: r["val_ppl"] for r in rows if r["norm"] == "pre" and r["name"] == name}
    return [r["val_ppl"] / pre[r["seed"]] for r in rows if r["norm"] == "post" and r["name"] == name and r["seed"] in pre]


def runs_of(rows, norm, name):
    return [r for r in rows if r["norm"] == norm and r["name"] == name]


def deltas(rows, norm, name, base="transformer", base_norm=None):
    """The per-seed differences of val loss, name under norm minus base under base_norm (default the
    same): the logs of the paired val-perplexity ratios (the same seed draws the same batches)."""
    return paired(runs_of(rows, norm, name), runs_of(rows, base_norm or norm, base), "val_loss")


def ratio_p(rows, norm, name, base="transformer", base_norm=None):
    """The paired t-test's p of a val-perplexity ratio of 1 (equal mean val loss) between name under norm
    and base under base_norm (default the same norm); None below MIN_SEEDS seeds or without spread."""
    e = Estimate(deltas(rows, norm, name, base, base_norm))
    return e.p if e.n >= MIN_SEEDS else None


def versus(d, what):
    """How per-seed differences of val loss d read against `what`: better, worse or no difference shown,
    from MIN_SEEDS seeds on (said in words below that)."""
    e = Estimate(d)
    if e.n < MIN_SEEDS or not e.spread:
        return verdict(d)
    test = f"paired t, {fmt_p(e.p)}, {df_text(e.df)}"
    if e.p >= 0.05:
        return f"no difference from {what} shown: its 95% interval includes 1 ({test})"
    return f"{'better' if e.mean < 0 else 'worse'} than {what}: its 95% interval excludes 1 ({test})"


def ratio_cell(rows, norm, name, base):
    """'1.023 [1.010, 1.036] | p 0.03' of name against base under one recipe, or '- | -' for base itself
    or where either has no runs."""
    d = deltas(rows, norm, name, base)
    if name == base or not d:
        return "- | -"
    return f"{summary_ratio_cell(d)} | {p_cell(d)}"


def reading_line(rows, norm, name, base, what):
    """A bullet: name / base val perplexity with its interval, and how it reads."""
    d = deltas(rows, norm, name, base)
    return f"- **{recipe_label(norm)}**: {name} / {base} val perplexity {ratio_words(d)}: {versus(d, what)}."
