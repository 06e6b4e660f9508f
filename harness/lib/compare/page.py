"""make compare's page, OUT/compare.html: the report's text and tables,
every run's val-loss curve, the loss by position and a table of the runs,
in one file for a browser (harness/report_page.py)."""
import os
import statistics

from harness.report_page import COLORS, chart, markdown_sections, write_page


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
            for t in range(len(rs[0]["by_position"])):  # at position + 1, so that the log axis keeps position 0
                vals = [r["by_position"][t] for r in rs if r["by_position"][t] is not None]
                if vals:
                    pts.append([t + 1, statistics.fmean(vals)])
                    band.append([t + 1, min(vals), max(vals)])
            series.append({"name": f"{arch['label']}, {kind}", "color": COLORS[i % len(COLORS)], "points": pts,
                           "band": band, "dash": kind == "seconds"})
    charts.append(chart("by_position", f"Validation loss by position in the window (mean and range over {a.seeds} seeds)",
                        "position + 1 (tokens of context before the target, plus one: position 0, no context, at 1 "
                        "on the log axis)", f"loss (nats per {unit})", series, xlog=True))
    # compare.csv's columns, named and rounded for reading (the CSV keeps every digit)
    cols = [("steps", "steps", "{:,}"), ("tokens", "tokens", "{:,}"), ("train_seconds", "train seconds", "{:,.1f}"),
            ("tok_s", "tokens/s", "{:,.0f}"), ("load", "load", "{:.1f}"), ("val_loss", "val loss", "{:.4f}"), ("val_ppl", "val ppl", "{:,.2f}"),
            ("test_ppl", "test ppl", "{:,.2f}"), ("recall_loss", "recall-token loss", "{:.4f}"),
            ("other_loss", "other-token loss", "{:.4f}")]
    table = {"kind": "table", "id": "runs", "columns": ["architecture", "budget", "seed"] + [c[1] for c in cols],
             "rows": [[next(x["label"] for x in archs if x["name"] == r["arch"]), r["budget"], r["seed"]] +
                      ["-" if r[k] is None else f.format(r[k]) for k, _, f in cols] for r in runs]}  # None: none scored
    sections = markdown_sections(md)
    sections += [{"kind": "heading", "level": 2, "text": "Curves"}] + charts + [
        {"kind": "heading", "level": 2, "text": "Every run"}, table]
    write_page(os.path.join(a.out, "compare.html"), md[0].lstrip("# "), sections)
