"""make compare's report of its runs: compare.md (a reading, the
architectures, the results, the evaluations), compare.csv (one row per run),
the plots (harness/lib/compare/plots.py) and compare.html (page.py). Every
number over seeds is said as harness/lib/summary.py says it: with its 95%
t interval, a p-value and a verdict from 3 seeds on only; runs that did not
train are named, the recall split is read only where the models' loss falls
with context, and tokens/s are given beside the machine's load."""
import csv
import os
import statistics

from harness import registry
from harness.common import command_line
from harness.files import output_text
from harness.lib import evals as eval_tasks
from harness.lib.compare.page import write_page_html
from harness.lib.compare.plots import has_split, write_plots
from harness.lib.compare.runs import CSV_KEYS, PER_TEXT
from harness.lib.summary import (MIN_SEEDS, arch_table, estimate_cell, interval_caption, p_cell, paired,
                                 precision_text, ratio_cell, ratio_words, verdict)
from harness.lib.trained import UNIGRAM_MARGIN, diverged, falls_with_context, stuck, unigram_loss, val_curve
from harness.stats import Estimate


def csv_options(arch):
    """compare.csv's cells of an architecture's options (csv_columns: every option an architecture may
    give, by its JSON key): the architecture's value where its mixers have the option, else empty."""
    return ["" if arch["columns"].get(o["json_key"]) is None else arch["columns"][o["json_key"]]
            for o in registry.arch_options()]


def warmup_text(a):
    """'100 warm-up steps', and the budgets whose runs were too short for them."""
    scaled = getattr(a, "warmup_scaled", None) or {}
    return f"{a.warmup_iters} warm-up steps" + (
        " (" + ", ".join(f"{w} in the {b} runs" for b, w in scaled.items()) + ": a tenth of their steps)" if scaled else "")


def busy(r):
    """Whether the machine was busier than its cores while the run trained: its timings measure the load."""
    return r["load"] is not None and r["load"] > r["cores"]


def mean_by_position(rs):
    """The loss at each position of the window, the mean over the runs (None where none has one)."""
    out = []
    for t in range(len(rs[0]["by_position"])):
        vals = [r["by_position"][t] for r in rs if t < len(r["by_position"]) and r["by_position"][t] is not None]
        out.append(statistics.fmean(vals) if vals else None)
    return out


def budget_text(kind, value):
    return f"{kind} budget ({value:,}{' s' if kind == 'seconds' else ' tokens'})"


def recall_text(a, rs, base, learns):
    """Where the loss gap of rs to base sits (the recall split), said only where both learn from context."""
    if not learns:
        return ""
    gaps = paired(rs, base, "val_loss")
    rec, oth = paired(rs, base, "recall_loss"), paired(rs, base, "other_loss")
    shares = [r["recall_tokens"] / (r["recall_tokens"] + r["other_tokens"]) * d / g
              for r, d, g in zip(rs, rec, gaps) if abs(g) > 1e-9]
    if not shares:
        return ""
    frac = rs[0]["recall_tokens"] / (rs[0]["recall_tokens"] + rs[0]["other_tokens"])
    return (f"; of the loss gap, {estimate_cell(shares, 0, 100)}% sits on the {100 * frac:.0f}% of tokens that "
            f"complete a {a.recall_n}-gram seen earlier in the window (loss gap {Estimate(rec).mean:+.3f} there vs "
            f"{Estimate(oth).mean:+.3f} on the rest)")


def checks(runs, labels, unigram, learning):
    """The reading's lines on runs that did not train, models whose loss does not fall with context, and
    timings taken on a machine busier than its cores."""
    md = []
    curves = {id(r): val_curve(r["log"]) for r in runs}
    bad = [r for r in runs if curves[id(r)] and diverged(curves[id(r)])]
    flat = [r for r in runs if stuck(r, unigram) and r not in bad]
    name = lambda r: f"{labels[r['arch']]} {r['budget']} seed {r['seed']}"
    if bad:
        md.append("- **Diverged**: " + "; ".join(
            f"{name(r)} (val loss {curves[id(r)][0]:.2f} at step 0, lowest {curves[id(r)][1]:.2f}, last "
            f"{curves[id(r)][2]:.2f})" for r in bad) + ": their numbers below are of models that did not train.")
    if flat:
        md.append("- **Did not train**: " + "; ".join(f"{name(r)} (val loss {r['val_loss']:.3f})" for r in flat) +
                  f": a model that knows only each token's frequency in train scores {unigram:.3f} on val, and these "
                  f"runs ended within {UNIGRAM_MARGIN} nats of it or above, so they learned the frequencies and "
                  "nothing of context; their numbers below are of models that did not train (a larger budget, or "
                  "another learning rate).")
    if not bad and not flat and unigram is not None:
        md.append(f"- **Every run trained**: every val loss fell from its start, ended within 0.5 nats of its lowest "
                  f"and more than {UNIGRAM_MARGIN} nats below the {unigram:.3f} of token frequencies alone.")
    flat_ctx = [key for key, learns in learning.items() if not learns]
    if flat_ctx:
        md.append("- **Loss by position**: the loss does not fall with context for " +
                  ", ".join(f"{labels[n]} ({b})" for b, n in flat_ctx) +
                  " (its mean over the window's second half is not below its loss at position 0): where its loss "
                  "sits in the window (the recall split) is not read for it.")
    hot = [r for r in runs if busy(r)]
    if hot:
        md.append(f"- **Load**: {len(hot)} of the {len(runs)} runs trained on a machine busier than its "
                  f"{hot[0]['cores']} cores (1-minute load average up to {max(r['load'] for r in hot):.1f}): their "
                  "tokens/s and train seconds measure the load as much as the model, and are marked not comparable "
                  "below; under a time budget their losses depend on it too.")
    return md


def eval_lines(evals, budgets, archs, runs):
    """The reading's lines and the table of the --evals tasks: each architecture's accuracy over seeds, and
    its paired difference from the first architecture's."""
    if not evals:
        return [], []
    reading, table = [], ["", "## Evaluations", "",
                          "| budget | architecture | " + " | ".join(
                              f"{name} ({eval_tasks.KINDS[kind]}) acc" + (" | acc_norm" if kind == "choice" else
                                                                          " | last-word ppl" if kind == "cloze" else "")
                              for name, kind, _ in evals) + " |"]
    table.append("|---|---|" + "---|" * sum(2 if kind in ("choice", "cloze") else 1 for _, kind, _ in evals))
    base_name = archs[0]["name"]
    for kind_b, value in budgets:
        b = f"{kind_b}:{value}"
        of = lambda arch: [r for r in runs if r["budget"] == b and r["arch"] == arch]
        for arch in archs:
            rs = of(arch["name"])
            cells = []
            for name, kind, _ in evals:
                acc = [r["evals"][name]["accuracy"] for r in rs]
                cells.append(estimate_cell(acc, 3))
                if kind == "choice":
                    cells.append(estimate_cell([r["evals"][name].get("accuracy_norm") for r in rs], 3))
                if kind == "cloze":
                    cells.append(estimate_cell([r["evals"][name].get("perplexity") for r in rs], 1))
            table.append(f"| {b} | {arch['label']} | " + " | ".join(cells) + " |")
        for name, kind, _ in evals:
            scored = of(base_name)[0]["evals"][name]["scored"]
            parts = []
            for arch in archs:
                rs = of(arch["name"])
                acc = [{"seed": r["seed"], "acc": r["evals"][name]["accuracy"]} for r in rs]
                text = f"{arch['label']} {estimate_cell([x['acc'] for x in acc], 3)}"
                if arch["name"] != base_name:
                    base = [{"seed": r["seed"], "acc": r["evals"][name]["accuracy"]} for r in of(base_name)]
                    deltas = paired(acc, base, "acc")
                    text += f" (minus {archs[0]['label']}: {estimate_cell(deltas, 3)}; {verdict(deltas, '0')})"
                parts.append(text)
            reading.append(f"- **{eval_tasks.describe(name, kind, scored)}, {budget_text(kind_b, value)}**: "
                           "accuracy " + "; ".join(parts) + ".")
    lo, hi, name = max(((r["evals"][n].get("interval") or [0.0, 0.0]) + [n] for r in runs for n, _, _ in evals),
                       key=lambda x: x[1] - x[0])
    table += ["", "Accuracy over seeds as in the results above. Each run's accuracy also has its own 95% Wilson interval "
              f"over the task's items (bin/eval), which the seeds' interval does not hold: the widest here is {lo:.3f} "
              f"to {hi:.3f} ({name})."]
    return reading, table


def write_report(a, archs, budgets, seeds, runs, total, evals=()):
    """compare.md, compare.csv, the plots and compare.html of the runs (harness.compare's, in the plan's
    order) of a sweep that took `total` seconds: (the report's lines, how many of them the reading has, the
    plots' file names)."""
    unit = runs[0]["unit"]
    labels = {x["name"]: x["label"] for x in archs}
    base_name = archs[0]["name"]
    learning = {(f"{k}:{v}", x["name"]): falls_with_context(mean_by_position(
        [r for r in runs if r["budget"] == f"{k}:{v}" and r["arch"] == x["name"]])) for k, v in budgets for x in archs}
    reading, rows = [], []
    for kind, value in budgets:
        b = f"{kind}:{value}"
        base = [r for r in runs if r["budget"] == b and r["arch"] == base_name]
        for arch in archs:
            rs = [r for r in runs if r["budget"] == b and r["arch"] == arch["name"]]
            deltas = paired(rs, base, "val_loss")  # the log of each seed's val perplexity ratio
            rows.append((b, arch, rs, deltas))
            if arch["name"] != base_name:
                where = recall_text(a, rs, base, learning[(b, arch["name"])] and learning[(b, base_name)])
                reading.append(f"- **{budget_text(kind, value)}**: {arch['label']} / {archs[0]['label']} val "
                               f"perplexity = {ratio_words(deltas)}: {verdict(deltas)}{where}.")
    reading += checks(runs, labels, unigram_loss(a.data), learning)
    eval_reading, eval_table = eval_lines(evals, budgets, archs, runs)
    reading += eval_reading
    tested = len(seeds) >= MIN_SEEDS
    md = ["# Comparison: " + " vs ".join(x["label"] for x in archs) + (", bf16" if a.precision == "bf16" else "") +
          (f", {a.recipe} recipe" if a.recipe else ""), "", "## Reading", ""] + reading + [
          "", interval_caption(len(seeds)) + f" Seeds {', '.join(map(str, seeds))}; the same seed draws the same "
          "batches for every architecture, so the ratios are paired by seed." +
          (f" p: the paired t-test of equal mean val loss against {archs[0]['name']} at the same budget (two-sided)."
           if tested else ""), ""] + arch_table(archs) + ["", "## Results", "",
          "| budget | architecture | parameters | tokens | train seconds | tokens/s | load | val loss | val ppl "
          f"| test ppl | val ppl / {archs[0]['name']} |" + (f" p vs {archs[0]['name']} |" if tested else "") +
          " recall-token loss | other-token loss |",
          "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if tested else "") + "---|---|"]
    for b, arch, rs, deltas in rows:
        hot = any(busy(r) for r in rs)
        timing = lambda k, d: estimate_cell([r[k] for r in rs], d) + (" (not comparable)" if hot else "")
        md.append(f"| {b} | {arch['label']} | {arch['params']:,} | {statistics.fmean(r['tokens'] for r in rs):,.0f} "
                  f"| {timing('train_seconds', 1)} | {timing('tok_s', 0)} "
                  f"| {max(r['load'] for r in rs):.1f} of {rs[0]['cores']} | {estimate_cell([r['val_loss'] for r in rs], 4)} "
                  f"| {estimate_cell([r['val_ppl'] for r in rs])} | {estimate_cell([r['test_ppl'] for r in rs])} "
                  f"| {'-' if arch['name'] == base_name else ratio_cell(deltas)} |"
                  + (f" {'-' if arch['name'] == base_name else p_cell(deltas)} |" if tested else "") +
                  f" {estimate_cell([r['recall_loss'] for r in rs])} | {estimate_cell([r['other_loss'] for r in rs])} |")
    frac = runs[0]["recall_tokens"] / (runs[0]["recall_tokens"] + runs[0]["other_tokens"])
    md += eval_table + [
        "", f"Model: n_layer {a.n_layer}, n_head {a.n_head}, n_embd {a.n_embd}, block {a.block_size}, batch "
            f"{a.batch_size}, {a.norm}-norm{', --recipe ' + a.recipe if a.recipe else ''}"
            f"{', then ' + a.train_args if a.train_args else ''}; {precision_text(a.precision)}; lr {a.lr} -> "
            f"{a.min_lr} cosine (over the steps, or over the seconds under a time budget), {warmup_text(a)}; mixer "
            f"options {registry.settings_text(a)}. Val and test: every token scored once (bin/eval). Recall tokens: "
            f"{a.recall_n}-grams seen earlier in their window ({100 * frac:.1f}% of val tokens). Train seconds count "
            "training steps only; load: the machine's 1-minute load average during a run's training, the highest of "
            "the row's runs, of its cores; " + (f"the whole comparison took {total / 60:.1f} minutes of wall time."
                                                 if total else "rebuilt from the runs' folders (--report-only)."),
        f"Command: `{command_line('harness.compare').strip()}`", "",
        " ".join((["![val loss vs tokens](val_loss_tokens.png)"] if any(k == "tokens" for k, _ in budgets) else []) +
                 (["![val loss vs seconds](val_loss_seconds.png)"] if any(k == "seconds" for k, _ in budgets) else [])),
        "![loss by position](loss_by_position.png)" + (" ![recall split](recall_split.png)" if has_split(runs) else "")]
    with output_text(os.path.join(a.out, "compare.md")) as f:
        f.write("\n".join(md) + "\n")
    write_csv(a, archs, runs, evals)
    plots = write_plots(a, archs, budgets, runs, unit)
    write_page_html(a, archs, budgets, runs, unit, md)
    return md, len(reading), plots


def write_csv(a, archs, runs, evals):
    """compare.csv: one row per run, every digit kept."""
    eval_cols = eval_tasks.columns(evals)
    with output_text(os.path.join(a.out, "compare.csv")) as f:
        w = csv.writer(f)
        w.writerow(CSV_KEYS + ["mixers", "precision"] + PER_TEXT + [c for c, _ in eval_cols] +
                   [o["json_key"] for o in registry.arch_options()])
        cell = lambda v: "" if v is None else f"{v:.6f}" if isinstance(v, float) else v
        for r in runs:
            arch = next(x for x in archs if x["name"] == r["arch"])
            values = eval_tasks.row_values(r["evals"], evals)
            w.writerow([cell(r[k]) for k in CSV_KEYS] + [",".join(arch["mixers"]), a.precision] +
                       [cell(r[k]) for k in PER_TEXT] + [cell(values[c]) for c, _ in eval_cols] + csv_options(arch))
