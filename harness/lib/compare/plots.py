"""make compare's plots, through gnuplot: val loss against tokens and
against seconds, loss by position in the window, and the recall split."""
import os
import statistics

from harness.common import gnuplot, gnuplot_string
from harness.files import output_text
from harness.report_page import COLORS


def bar(rs, key):
    """A bar's mean, lowest and highest over the runs of key; NaN (no bar: gnuplot's undefined) where none of
    them scored such a token (a window too short for any recall token, say)."""
    xs = [r[key] for r in rs if r[key] is not None]
    return f"{statistics.fmean(xs)} {min(xs)} {max(xs)}" if xs else "NaN NaN NaN"


def has_split(runs):
    """Whether the runs' windows held recall tokens and others (every run scores the same val windows, so
    all or none of them has each kind): the recall-split plot has bars to draw."""
    return all(any(r[k] is not None for r in runs) for k in ("recall_loss", "other_loss"))


def write_plots(a, archs, budgets, runs, unit):
    """The plots (PNG, through gnuplot); returns their file names."""
    out = a.out
    colors = COLORS
    head = "set terminal pngcairo size 900,560 font ',11'\nset grid\nset key top right\n"
    # Val loss against tokens: mean over seeds and a min-max band (same evaluation steps for every seed).
    tok_budget = next((b for b in budgets if b[0] == "tokens"), None)
    plots = []
    if tok_budget:
        b = f"tokens:{tok_budget[1]}"
        parts = []
        for i, arch in enumerate(archs):
            rs = [r for r in runs if r["arch"] == arch["name"] and r["budget"] == b]
            path = os.path.join(out, f"curve_tokens_{i}.dat")
            with output_text(path) as f:
                for k in range(min(len(r["curve"]) for r in rs)):
                    vals = [r["curve"][k][2] for r in rs]
                    f.write(f"{rs[0]['curve'][k][0]} {statistics.fmean(vals)} {min(vals)} {max(vals)}\n")
            c = colors[i % len(colors)]
            parts.append(f"{gnuplot_string(path)} using 1:3:4 with filledcurves lc rgb '{c}' fs transparent solid 0.25 "
                         "notitle")
            parts.append(f"{gnuplot_string(path)} using 1:2 with lines lw 2 lc rgb '{c}' "
                         f"title {gnuplot_string(arch['label'])}")
        plots.append(("val_loss_tokens.png", "training tokens", "set format x '%.1s%c'\n",
                      f"Validation loss, equal tokens (mean and min-max over {a.seeds} seeds)", parts))
    sec_budget = next((b for b in budgets if b[0] == "seconds"), None)
    if sec_budget:
        b = f"seconds:{sec_budget[1]}"
        parts = []
        for i, arch in enumerate(archs):
            c = colors[i % len(colors)]
            for j, r in enumerate(r for r in runs if r["arch"] == arch["name"] and r["budget"] == b):
                path = os.path.join(out, f"curve_seconds_{i}_{j}.dat")
                with output_text(path) as f:
                    f.writelines(f"{s} {v}\n" for _, s, v in r["curve"])
                title = f"title {gnuplot_string(arch['label'])}" if j == 0 else "notitle"
                parts.append(f"{gnuplot_string(path)} using 1:2 with linespoints lw 1.5 pt 7 ps 0.4 lc rgb '{c}' {title}")
        plots.append(("val_loss_seconds.png", "seconds of training steps", "",
                      f"Validation loss, equal time (each of {a.seeds} seeds drawn)", parts))
    for name, xlabel, extra, title, parts in plots:
        gnuplot(head + extra + f"set output {gnuplot_string(os.path.join(out, name))}\nset title {gnuplot_string(title)}\n"
                f"set xlabel '{xlabel}'\nset ylabel {gnuplot_string(f'validation loss (nats per {unit})')}\n"
                f"plot " + ", \\\n     ".join(parts) + "\n", output=os.path.join(out, name))
    # Loss by position in the window (val, mean over seeds), every budget.
    parts = []
    for bi, (kind, value) in enumerate(budgets):
        for i, arch in enumerate(archs):
            rs = [r for r in runs if r["arch"] == arch["name"] and r["budget"] == f"{kind}:{value}"]
            path = os.path.join(out, f"by_position_{bi}_{i}.dat")
            with output_text(path) as f:
                for t in range(len(rs[0]["by_position"])):  # at t + 1: the log axis keeps position 0 (at 1)
                    vals = [r["by_position"][t] for r in rs if r["by_position"][t] is not None]
                    if vals:
                        f.write(f"{t + 1} {statistics.fmean(vals)} {min(vals)} {max(vals)}\n")
            dash = "" if kind == "tokens" else " dt 2"
            parts.append(f"{gnuplot_string(path)} using 1:2 with lines lw 2{dash} lc rgb '{colors[i % len(colors)]}' "
                         f"title {gnuplot_string(arch['label'] + ', ' + kind)}")
    gnuplot(head + f"set output {gnuplot_string(os.path.join(out, 'loss_by_position.png'))}\n"
            f"set title 'Validation loss by position in the window (mean over {a.seeds} seeds)'\n"
            f"set xlabel 'position + 1 (tokens of context before the target, plus one: position 0 at 1)'\n"
            f"set ylabel {gnuplot_string(f'loss (nats per {unit})')}\n"
            "set logscale x 2\nset xrange [1:*]\nplot " + ", \\\n     ".join(parts) + "\n",
            output=os.path.join(out, "loss_by_position.png"))
    if not has_split(runs):  # a window too short for any recall token: no bars to draw
        return [p[0] for p in plots] + ["loss_by_position.png"]
    # Recall vs other tokens: grouped bars with the seed range.
    path = os.path.join(out, "recall_split.dat")
    with output_text(path) as f:
        for kind, value in budgets:
            for arch in archs:
                rs = [r for r in runs if r["arch"] == arch["name"] and r["budget"] == f"{kind}:{value}"]
                f.write(f"\"{arch['label']}\\n{kind}\" {bar(rs, 'recall_loss')} {bar(rs, 'other_loss')}\n")
    gnuplot(head + f"set output {gnuplot_string(os.path.join(out, 'recall_split.png'))}\n"
            f"set title 'Val loss on tokens completing a {a.recall_n}-gram seen earlier in the window, vs all others'\n"
            f"set ylabel {gnuplot_string(f'loss (nats per {unit})')}\nset style data histogram\n"
            "set style histogram errorbars gap 2 lw 1\nset style fill solid 0.6 border -1\nset yrange [0:*]\n"
            "set xtics font ',9'\n"
            f"plot {gnuplot_string(path)} using 2:3:4:xtic(1) title 'recall tokens' lc rgb '#2ca02c', "
            f"'' using 5:6:7 title 'other tokens' lc rgb '#7f7f7f'\n", output=os.path.join(out, "recall_split.png"))
    return [p[0] for p in plots] + ["loss_by_position.png", "recall_split.png"]
