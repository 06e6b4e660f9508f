"""make compare's report of its runs: compare.md (a reading, the
architectures, the results), compare.csv (one row per run), the plots
(harness/lib/compare_plots.py) and compare.html, all of it in one page."""
import csv
import os
import statistics

from harness import registry
from harness.common import command_line
from harness.files import output_text
from harness.lib.compare.plots import write_plots
from harness.lib.summary import arch_table, difference, fmt, fmt_p, mean_spread, precision_text
from harness.report_page import COLORS, chart, markdown_sections, write_page
from harness.stats import welch_p


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


def write_report(a, archs, budgets, seeds, runs, total):
    """compare.md, compare.csv, the plots and compare.html of the runs (harness.compare's, in the plan's
    order) of a sweep that took `total` seconds: (the report's lines, how many of them the reading has, the
    plots' file names)."""
    unit = runs[0]["unit"]

    # Aggregates per (budget, arch), and paired ratios against the first architecture.
    rows, reading = [], []
    for kind, value in budgets:
        b = f"{kind}:{value}"
        base = {r["seed"]: r for r in runs if r["budget"] == b and r["arch"] == archs[0]["name"]}
        for arch in archs:
            rs = [r for r in runs if r["budget"] == b and r["arch"] == arch["name"]]
            agg = {k: mean_spread([r[k] for r in rs]) for k in
                   ("tokens", "train_seconds", "tok_s", "val_loss", "val_ppl", "test_ppl", "recall_loss", "other_loss")}
            ratio = mean_spread([r["val_ppl"] / base[r["seed"]]["val_ppl"] for r in rs])
            test_ratio = mean_spread([r["test_ppl"] / base[r["seed"]]["test_ppl"] for r in rs])
            d_rec = mean_spread([r["recall_loss"] - base[r["seed"]]["recall_loss"] for r in rs])
            d_oth = mean_spread([r["other_loss"] - base[r["seed"]]["other_loss"] for r in rs])
            # The share of the val-loss gap carried by recall tokens: their count times their loss gap.
            shares = []
            for r in rs:
                n_all = r["recall_tokens"] + r["other_tokens"]
                gap = r["val_loss"] - base[r["seed"]]["val_loss"]
                if abs(gap) > 1e-9:
                    shares.append(r["recall_tokens"] / n_all * (r["recall_loss"] - base[r["seed"]]["recall_loss"]) / gap)
            # Welch's test of equal mean val loss (a perplexity ratio of 1), against the first architecture
            p = welch_p([r["val_loss"] for r in rs], [r["val_loss"] for r in base.values()])
            rows.append({"budget": b, "arch": arch, "agg": agg, "ratio": ratio, "test_ratio": test_ratio, "p": p,
                         "d_rec": d_rec, "d_oth": d_oth, "share": mean_spread(shares) if shares else None,
                         "recall_frac": rs[0]["recall_tokens"] / (rs[0]["recall_tokens"] + rs[0]["other_tokens"])})
            if arch is not archs[0]:
                m, s = ratio
                verdict = difference(m, s, len(rs))
                where = ""
                if rows[-1]["share"]:
                    sm, ss = rows[-1]["share"]
                    where = (f"; {100 * sm:.0f}% ± {100 * ss:.0f}% of the loss gap sits on the "
                             f"{100 * rows[-1]['recall_frac']:.0f}% of tokens that complete a {a.recall_n}-gram "
                             f"seen earlier in the window (loss gap {d_rec[0]:+.3f} there vs {d_oth[0]:+.3f} on the rest)")
                reading.append(f"- **{kind} budget ({value:,}{' s' if kind == 'seconds' else ' tokens'})**: "
                               f"{arch['label']} / {archs[0]['label']} val perplexity = {fmt(m, s)} "
                               f"(Welch {fmt_p(p)}): {verdict}{where}.")

    seeds_txt = ", ".join(map(str, seeds))
    cmd = command_line("harness.compare")
    md = ["# Comparison: " + " vs ".join(x["label"] for x in archs) + (", bf16" if a.precision == "bf16" else "") +
          (f", {a.recipe} recipe" if a.recipe else ""), "",
          "## Reading", ""] + reading + [
          "", f"Ratios are paired by seed (same batches) and given as mean ± spread, the spread being half the "
              f"range over the {a.seeds} seeds ({seeds_txt}); a ratio is called a difference only when its distance "
              f"from 1 exceeds that spread." if a.seeds > 1 else
              f"Ratios are paired by seed (same batches); with one seed ({seeds_txt}) there is no spread, so no ratio "
              f"is called a difference.", "",
          f"p: Welch's two-sided t-test of equal mean val loss against {archs[0]['name']} at the same budget "
          f"(n/a below 2 seeds).", ""] + arch_table(archs) + ["",
          "## Results", "",
          "| budget | architecture | parameters | tokens | train seconds | tokens/s | val loss | val ppl | test ppl "
          f"| val ppl / {archs[0]['name']} | p vs {archs[0]['name']} | recall-token loss | other-token loss |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        g = row["agg"]
        md.append(f"| {row['budget']} | {row['arch']['label']} | {row['arch']['params']:,} | {g['tokens'][0]:,.0f} "
                  f"| {fmt(*g['train_seconds'], 1)} | {g['tok_s'][0]:,.0f} | {fmt(*g['val_loss'], 4)} "
                  f"| {fmt(*g['val_ppl'])} | {fmt(*g['test_ppl'])} | {fmt(*row['ratio'])} "
                  f"| {'-' if row['arch'] is archs[0] else fmt_p(row['p'])} "
                  f"| {fmt(*g['recall_loss'])} | {fmt(*g['other_loss'])} |")
    md += ["", f"Model: n_layer {a.n_layer}, n_head {a.n_head}, n_embd {a.n_embd}, block {a.block_size}, batch "
               f"{a.batch_size}, {a.norm}-norm{', --recipe ' + a.recipe if a.recipe else ''}"
               f"{', then ' + a.train_args if a.train_args else ''}; {precision_text(a.precision)}; lr {a.lr} -> {a.min_lr} cosine (over the steps, or over the seconds under a time "
               f"budget), {warmup_text(a)}; mixer options {registry.settings_text(a)}. Val and test: "
               f"every token scored once (bin/eval). Recall tokens: {a.recall_n}-grams seen earlier in their "
               f"window ({100 * rows[0]['recall_frac']:.1f}% of val tokens). Train seconds count training steps only; "
               f"the whole comparison took {total / 60:.1f} minutes of wall time.",
           f"Command: `{cmd.strip()}`", "",
           " ".join((["![val loss vs tokens](val_loss_tokens.png)"] if any(k == "tokens" for k, _ in budgets) else []) +
                    (["![val loss vs seconds](val_loss_seconds.png)"] if any(k == "seconds" for k, _ in budgets) else [])),
           "![loss by position](loss_by_position.png) ![recall split](recall_split.png)"]
    with output_text(os.path.join(a.out, "compare.md")) as f:
        f.write("\n".join(md) + "\n")
    with output_text(os.path.join(a.out, "compare.csv")) as f:
        w = csv.writer(f)
        keys = ["arch", "budget", "seed", "params", "steps", "tokens", "train_seconds", "wall", "tok_s", "val_loss",
                "val_ppl", "test_loss", "test_ppl", "recall_loss", "other_loss", "recall_tokens", "other_tokens"]
        per_text = ["val_bpb", "val_word_ppl", "test_bpb", "test_word_ppl"]
        w.writerow(keys + ["mixers", "precision"] + per_text + [o["json_key"] for o in registry.arch_options()])
        for r in runs:
            arch = next(x for x in archs if x["name"] == r["arch"])
            w.writerow([f"{r[k]:.6f}" if isinstance(r[k], float) else r[k] for k in keys] +
                       [",".join(arch["mixers"]), a.precision] +
                       ["" if r[k] is None else f"{r[k]:.6f}" for k in per_text] + csv_options(arch))
    plots = write_plots(a, archs, budgets, runs, unit)
    write_page_html(a, archs, budgets, runs, unit, md)
    return md, len(reading), plots


def write_page_html(a, archs, budgets, runs, unit, md):
    """OUT/compare.html: the report's text and tables, every run's val-loss
    curve (per architecture and seed), the loss by position and a table of
    the runs."""
    charts = []
    for kind, x_of, xlabel in (("tokens", lambda p: p[0], "training tokens"),
                               ("seconds", lambda p: round(p[1], 3), "seconds of training steps")):
        b = next((f"{k}:{v}" for k, v in budgets if k == kind), None)
        if b is None:
            continue
        series = [{"name": f"{arch['label']}, seed {r['seed']}", "legend": arch["label"], "color": COLORS[i % len(COLORS)],
                   "points": [[x_of(p), p[2]] for p in r["curve"]]}
                  for i, arch in enumerate(archs) for r in runs if r["arch"] == arch["name"] and r["budget"] == b]
        charts.append(chart(f"val_{kind}", f"Validation loss, {kind} budget {b.split(':')[1]} (each seed a line)",
                            xlabel, f"validation loss (nats per {unit})", series,
                            note="Drag across the plot to zoom into a range, double-click to zoom out; click a "
                                 "legend entry to hide its lines."))
    series = []
    for kind, value in budgets:
        for i, arch in enumerate(archs):
            rs = [r for r in runs if r["arch"] == arch["name"] and r["budget"] == f"{kind}:{value}"]
            pts, band = [], []
            for t in range(len(rs[0]["by_position"])):
                vals = [r["by_position"][t] for r in rs if r["by_position"][t] is not None]
                if vals:
                    pts.append([t, statistics.fmean(vals)])
                    band.append([t, min(vals), max(vals)])
            series.append({"name": f"{arch['label']}, {kind}", "color": COLORS[i % len(COLORS)], "points": pts,
                           "band": band, "dash": kind == "seconds"})
    charts.append(chart("by_position", f"Validation loss by position in the window (mean and range over {a.seeds} seeds)",
                        "position (tokens of context before the target)", f"loss (nats per {unit})", series, xlog=True))
    # compare.csv's columns, named and rounded for reading (the CSV keeps every digit)
    cols = [("steps", "steps", "{:,}"), ("tokens", "tokens", "{:,}"), ("train_seconds", "train seconds", "{:,.1f}"),
            ("tok_s", "tokens/s", "{:,.0f}"), ("val_loss", "val loss", "{:.4f}"), ("val_ppl", "val ppl", "{:,.2f}"),
            ("test_ppl", "test ppl", "{:,.2f}"), ("recall_loss", "recall-token loss", "{:.4f}"),
            ("other_loss", "other-token loss", "{:.4f}")]
    table = {"kind": "table", "id": "runs", "columns": ["architecture", "budget", "seed"] + [c[1] for c in cols],
             "rows": [[next(x["label"] for x in archs if x["name"] == r["arch"]), r["budget"], r["seed"]] +
                      [f.format(r[k]) for k, _, f in cols] for r in runs]}
    sections = markdown_sections(md)
    sections += [{"kind": "heading", "level": 2, "text": "Curves"}] + charts + [
        {"kind": "heading", "level": 2, "text": "Every run"}, table]
    write_page(os.path.join(a.out, "compare.html"), md[0].lstrip("# "), sections)
