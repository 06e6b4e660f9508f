"""make paper's report: paper.md (a reading, the paper's numbers beside
ours, per byte and per word, the controls, the per-window ablation, the
runs), paper.json (one row per run), paper.html and the plot of every
recipe's val-loss curves."""
import json
import os
import statistics

from harness.common import command_line, gnuplot, gnuplot_string
from harness.files import output_text
from harness.lib.paper.ablation import ablation_report
from harness.lib.paper.controls import hybrid_report, pair_report, window_report
from harness.lib.paper.runs import PER_TEXT, deltas, ratio_p, runs_of, versus
from harness.lib.paper.setup import NORMS, PAPER, TABLES, attention_window, layer_windows, recipe_label
from harness.lib.summary import (MIN_SEEDS, estimate_cell, interval_caption, p_cell, ratio_cell, ratio_words,
                                 safe_exp, verdict)
from harness.stats import Estimate
from harness.lib.trained import UNIGRAM_MARGIN, diverged, stuck
from harness.report_page import COLORS, chart, markdown_sections, write_page


# Each recipe's line in the plot: (the caption's word, gnuplot's dash type).
LINE_STYLES = {"pre": ("solid", ""), "post": ("dashed", " dt 2"), "modern": ("dash-dotted", " dt 4")}


def line_styles_caption(rows):
    """'pre-norm solid, modern recipe dash-dotted': the recipes these rows have."""
    return ", ".join(f"{recipe_label(n)} {LINE_STYLES[n][0]}" for n in NORMS if any(r["norm"] == n for r in rows))


def arch_colors(archs):
    """{name: colour}: the three's own, then the others' in turn."""
    own = {"transformer": "#1f77b4", "grassmann": "#d62728", "hybrid": "#2ca02c"}
    rest = [c for c in COLORS + ["#17becf", "#bcbd22", "#e377c2", "#7f7f7f", "#aec7e8", "#ffbb78", "#98df8a",
                                 "#c5b0d5"] if c not in own.values()]
    others = [n for n, _ in archs if n not in own]
    return {**own, **{n: rest[i % len(rest)] for i, n in enumerate(others)}}


def write_plot(out, archs, rows, unigram):
    """OUT/paper_val_loss.png: val loss against training tokens, mean over
    seeds, each architecture in its colour, each recipe in its line style
    (LINE_STYLES), and the unigram model's loss as a grey line."""
    colors = arch_colors(archs)
    parts = []
    for norm in NORMS:
        for name, _ in archs:
            runs = [r["points"] for r in rows if r["norm"] == norm and r["name"] == name and r["points"]]
            if not runs:
                continue
            path = os.path.join(out, f"paper_{norm}_{name}.dat")
            with output_text(path) as f:
                for k in range(min(map(len, runs))):
                    f.write(f"{runs[0][k][0]} {sum(p[k][1] for p in runs) / len(runs)}\n")
            parts.append(f"{gnuplot_string(path)} using 1:2 with linespoints lw 2 pt 7 ps 0.5{LINE_STYLES[norm][1]} "
                         f"lc rgb '{colors[name]}' title {gnuplot_string(name + ', ' + recipe_label(norm))}")
    if not parts:
        return None
    if unigram is not None:
        parts.append(f"{unigram} with lines lw 1.5 dt 3 lc rgb '#7f7f7f' title 'token frequencies alone (unigram)'")
    png = os.path.join(out, "paper_val_loss.png")
    title = "Validation loss, the paper's configuration (mean over seeds)"
    # with the controls' lines the key goes beside the plot, where it hides no curve
    key = "set key top right\n" if len(parts) <= 8 else "set key outside right top font ',9'\n"
    gnuplot(f"set terminal pngcairo size {900 if len(parts) <= 8 else 1200},560 font ',11'\nset grid\n{key}"
            f"set output {gnuplot_string(png)}\n"
            f"set title {gnuplot_string(title)}\n"
            "set xlabel 'training tokens'\nset format x '%.1s%c'\nset ylabel 'validation loss (nats per token)'\n"
            "set yrange [*:7.5]\nplot " + ", \\\n     ".join(parts) + "\n", output=png)
    return png


def write_page_html(out, archs, rows, unigram, md):
    """OUT/paper.html: the report's text and tables, and every run's val-loss
    curve (architecture by colour, every recipe but pre-norm dashed) with zoom."""
    colors = arch_colors(archs)
    series = [{"name": f"{r['name']}, {recipe_label(r['norm'])}, seed {r['seed']}",
               "legend": f"{r['name']}, {recipe_label(r['norm'])}",
               "color": colors[r["name"]], "dash": r["norm"] != "pre", "points": [list(p) for p in r["points"]]}
              for norm in NORMS for name, _ in archs for r in rows
              if r["norm"] == norm and r["name"] == name and r["points"]]
    if series and unigram is not None:
        xs = [p[0] for s in series for p in s["points"]]
        series.append({"name": "token frequencies alone (unigram)", "color": "#7f7f7f", "dash": True, "width": 1.2,
                       "points": [[min(xs), unigram], [max(xs), unigram]]})
    sections = markdown_sections(md)
    if series:
        sections += [{"kind": "heading", "level": 2, "text": "Curves"},
                     chart("val_tokens", "Validation loss, the paper's configuration (each seed a line)",
                           "training tokens", "validation loss (nats per token)", series, ymax=7.5,
                           note="Drag across the plot to zoom into a range, double-click to zoom out; click a "
                                "legend entry to hide its lines.")]
    runs = next((s for s in sections if s["kind"] == "table" and s["columns"][:2] == ["norm", "architecture"]), None)
    if runs:
        runs["id"] = "runs"
    write_page(os.path.join(out, "paper.html"), md[0].lstrip("# "), sections)


def beside_paper(d, paper_ratio):
    """Where the paper's Grassmann / Transformer ratio lies against ours (per-seed differences d of val loss):
    inside or outside our 95% interval, or beside our one value where there is no interval."""
    e = Estimate(d)
    if e.half is None:
        why = "one seed" if e.n == 1 else f"the same on all {e.n} seeds"
        return f"the paper's {paper_ratio:.2f} beside our {safe_exp(e.mean):.3f} ({why}: no interval to place it in)"
    lo, hi = safe_exp(e.mean - e.half), safe_exp(e.mean + e.half)
    if lo <= paper_ratio <= hi:
        return f"**the paper's {paper_ratio:.2f} lies inside our 95% interval** ({lo:.3f} to {hi:.3f})"
    return f"**the paper's {paper_ratio:.2f} lies outside our 95% interval** ({lo:.3f} to {hi:.3f})"


def eval_names(rows):
    """The --evals tasks the runs were scored on (compare.csv's eval_NAME_acc columns), in order."""
    return list(dict.fromkeys(k[5:-4] for r in rows for k in r.get("evals") or {} if k.endswith("_acc")))


def eval_reading(rows, archs):
    """The reading's line per recipe and task: each architecture's accuracy over seeds."""
    md = []
    for name in eval_names(rows):
        key = f"eval_{name}_acc"
        for norm in NORMS:
            cells = [f"{n} {estimate_cell([r['evals'].get(key) for r in runs_of(rows, norm, n)], 3)}"
                     for n, _ in archs if runs_of(rows, norm, n)]
            if cells:
                md.append(f"- **{name}**, {recipe_label(norm)}: accuracy " + "; ".join(cells) +
                          " (the evaluations' table below).")
    return md


def eval_table(rows, archs):
    """paper.md's table of the --evals tasks (compare --evals): accuracy per recipe and architecture."""
    names = eval_names(rows)
    if not names:
        return []
    md = ["", "## Evaluations", "",
          "Each run's final checkpoint scored on the tasks of --evals (bin/eval: minimal pairs, cloze or multiple "
          "choice; each recipe's compare.md has the kind, the items and the intervals over items). Accuracy over "
          "seeds as above.", "",
          "| recipe | architecture | " + " | ".join(f"{n} acc" for n in names) + " |",
          "|---|---|" + "---|" * len(names)]
    for norm in NORMS:
        for n, _ in archs:
            rs = runs_of(rows, norm, n)
            if rs:
                md.append(f"| {recipe_label(norm)} | {n} | " + " | ".join(
                    estimate_cell([r["evals"].get(f"eval_{e}_acc") for r in rs], 3) for e in names) + " |")
    return md


def report(a, archs, rows, minutes, data_label, unigram=None, plot=None, ablations=None):
    what, paper_t, paper_g, paper_ratio = PAPER[a.table]
    seeds = sorted({r["seed"] for r in rows})
    md = [f"# The Grassmann paper at its own configuration ({what.split(':')[0]})", "", "## Reading", ""]
    for norm in NORMS:
        g, h = deltas(rows, norm, "grassmann"), deltas(rows, norm, "hybrid")
        if not g:
            if norm in ("pre", "post"):
                md.append(f"- **{recipe_label(norm)}**: not run.")
            continue
        line = (f"- **{recipe_label(norm)}**: Grassmann / Transformer val perplexity {ratio_words(g)}: "
                f"{versus(g, 'the Transformer')}; {beside_paper(g, paper_ratio)}.")
        if h:
            line += (f" The hybrid (attention first, then Grassmann) / Transformer: {ratio_words(h)}: "
                     f"{versus(h, 'the Transformer')}.")
        md.append(line)
    curves = [r for r in rows if r["curve"]]
    bad = [r for r in curves if diverged(r["curve"])]
    flat = [r for r in rows if stuck(r, unigram) and r not in bad]
    def setting(runs):
        """'at lr X with W linear warm-up steps' for these runs, per norm where the norms differ."""
        per = {r["norm"]: (r["lr"], r["warmup_iters"]) for r in runs}
        say = [f"lr {lr:g} with {w} linear warm-up steps" for lr, w in dict.fromkeys(per.values())]
        if len(say) == 1:
            return "at " + say[0]
        return "at " + "; ".join(f"{recipe_label(n)} {lr:g} with {w} warm-up steps" for n, (lr, w) in per.items())

    if bad:
        md.append("- **Diverged**: " + "; ".join(
            f"{recipe_label(r['norm'])} {r['name']} seed {r['seed']} (val loss {r['curve'][0]:.2f} at step 0, lowest "
            f"{r['curve'][1]:.2f}, last {r['curve'][2]:.2f})" for r in bad) + f", {setting(bad)}.")
    if flat:
        md.append("- **Did not train**: " + "; ".join(
            f"{recipe_label(r['norm'])} {r['name']} seed {r['seed']} (val loss {r['val_loss']:.3f})" for r in flat) +
            f", {setting(flat)}: the val loss of a model that knows only each token's frequency in train is "
            f"{unigram:.3f}, so these runs learned the frequencies and nothing of context; their ratios "
            f"above compare with a model that did not train.")
    if curves and not bad and not flat:
        post_t = [r["curve"] for r in curves if r["norm"] == "post" and r["name"] == "transformer"]
        md.append(f"- **Every run trained** {setting(rows)}: every val loss fell from its start, ended within 0.5 nats "
                  f"of its lowest" + (f" and more than {UNIGRAM_MARGIN} nats below the unigram model's "
                                      f"{unigram:.3f}" if unigram is not None else "")
                  + (f"; the post-norm Transformer's from {post_t[0][0]:.2f} to {post_t[0][2]:.2f}." if post_t else "."))
    for name, _ in archs:
        d = deltas(rows, "post", name, name, "pre")
        if d:
            md.append(f"- Post-norm / pre-norm val perplexity, {name}: {ratio_words(d)}: {verdict(d)}.")
    md += eval_reading(rows, archs)
    budget_tokens = sorted({r["tokens"] for r in rows})
    if plot:
        md += ["", f"![Validation loss against training tokens, {line_styles_caption(rows)}]"
                   f"({os.path.basename(plot)})"]
    md += ["", interval_caption(len(seeds)) + f" Seeds {', '.join(map(str, seeds))}: the same seed gives the same "
               "initial weights' seed and the same batches to every architecture and recipe, so ratios are paired by "
               "seed" + (", and p is the paired t-test's of equal mean val loss (two-sided)."
                         if len(seeds) >= MIN_SEEDS else ".") + f" Each run trained on {', '.join(f'{t:,}' for t in budget_tokens)} tokens; the paper trains 30 epochs of "
               f"Wikitext-2 (about 62M tokens), so absolute perplexities are not comparable with the paper's, and "
               f"ratios are what this measures.", "",
           "## The paper beside ours", "",
           "| source | norm | Transformer val ppl | Grassmann val ppl | hybrid val ppl | Grassmann / Transformer | hybrid / Transformer |",
           "|---|---|---|---|---|---|---|",
           f"| the paper, {what} | post | {paper_t} | {paper_g} | - | {paper_ratio:.3f} | - |"]
    per_text = ["", "## Per token, per byte, per word", "",
                "Token perplexity depends on the tokenizer; bits per byte and word perplexity (the same nats over "
                "the bytes, and the whitespace-separated words, of the text the scored tokens stand for: `bin/eval "
                "--word-ppl`) compare across tokenizers. Over seeds as above, val split; p: the paired t-test of "
                f"equal mean val loss against the Transformer under the same recipe (from {MIN_SEEDS} seeds on).", "",
                "| recipe | architecture | val ppl (token) | bits per byte | word ppl | p vs Transformer |",
                "|---|---|---|---|---|---|"]
    for norm in NORMS:
        per = {name: [r["val_ppl"] for r in runs_of(rows, norm, name)] for name, _ in archs}
        if not any(per.values()):
            continue
        ratio = lambda name: f"{ratio_cell(deltas(rows, norm, name))} ({p_cell(deltas(rows, norm, name))})"
        md.append(f"| ours, {data_label} | {norm} | {estimate_cell(per['transformer'], 1)} "
                  f"| {estimate_cell(per['grassmann'], 1)} | {estimate_cell(per['hybrid'], 1)} | {ratio('grassmann')} "
                  f"| {ratio('hybrid')} |")
        for name, _ in archs:
            rs = runs_of(rows, norm, name)
            if not rs and name not in ("transformer", "grassmann", "hybrid"):
                continue  # a control this recipe did not run
            p = "-" if name == "transformer" else p_cell(deltas(rows, norm, name))
            per_text.append(f"| {recipe_label(norm)} | {name} | {estimate_cell([r['val_ppl'] for r in rs], 1)} "
                            f"| {estimate_cell([r.get('val_bpb') for r in rs], 4)} "
                            f"| {estimate_cell([r.get('val_word_ppl') for r in rs], 1)} | {p} |")
    md += per_text
    cfg = TABLES[a.table]
    md += pair_report(rows, archs)
    md += window_report(rows, archs, attention_window(layer_windows(cfg["windows"], cfg["n_layer"])))
    md += hybrid_report(rows, archs)
    # The paper's 30 epochs at the speed measured here.
    train_tokens = a.train_tokens
    if train_tokens:
        tok_s = statistics.median(r["tok_s"] for r in rows)  # the median: a shared machine slows some runs
        per_run = 30 * train_tokens / tok_s / 3600
        md += ["", f"**The paper's 30 epochs** of this train split ({train_tokens:,} tokens, {30 * train_tokens:,} per "
                   f"run) at the median {tok_s:,.0f} tokens/s measured here: about {per_run:.1f} hours per run, "
                   f"{per_run * len(rows):.0f} hours for these {len(rows)} runs: "
                   f"`make paper PAPER_ARGS=\"--budget tokens:{30 * train_tokens}\"`."]
    md += eval_table(rows, archs)
    md += ablation_report(ablations or {})
    md += ["", "## Runs", "",
           "| norm | architecture | parameters | seed | tokens | train seconds | tokens/s | load | val ppl | test ppl |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["norm"] != "pre", [n for n, _ in archs].index(r["name"]), r["seed"])):
        busy = r.get("load") is not None and r.get("cores") and r["load"] > r["cores"]
        load = "-" if r.get("load") is None else f"{r['load']:.1f} of {r['cores']}"  # compare.csv had none before
        md.append(f"| {r['norm']} | {r['name']} | {r['params']:,} | {r['seed']} | {r['tokens']:,} "
                  f"| {r['train_seconds']:.0f} | {r['tok_s']:,.0f}{' (not comparable)' if busy else ''} | {load} "
                  f"| {r['val_ppl']:.2f} | {r['test_ppl']:.2f} |")
    md += ["", f"Model: n_layer {cfg['n_layer']}, n_embd 256, n_head {a.n_head}, FFN 1024, block {cfg['block_size']}, "
               f"Grassmann rank 32, windows {cfg['windows']}; batch {a.batch_size}; {setting(rows)[3:]}, then cosine "
               f"decay to a tenth{'; bin/train options after the recipe: ' + a.train_args if a.train_args else ''}. "
               f"Data: {data_label}. "
               f"Architectures: " + "; ".join(f"{n} = {s}" for n, s in archs) + ". "
               f"Each norm's full comparison (loss curves, loss by position, recall split) is in "
               f"[pre/compare.md](pre/compare.md) and [post/compare.md](post/compare.md). "
               + (f"Training and scoring took {minutes:.0f} minutes of wall time." if minutes else ""),
           f"Command: `{command_line('harness.paper')}`"]
    with output_text(os.path.join(a.out, "paper.md")) as f:
        f.write("\n".join(md) + "\n")
    with output_text(os.path.join(a.out, "paper.json")) as f:
        json.dump([dict({k: r[k] for k in ("arch", "norm", "seed", "tokens", "val_ppl", "test_ppl", "params", "name",
                                           "grassmann_rank", "grassmann_pair", "attn_window", "train_seconds",
                                           "val_loss") + PER_TEXT},
                        recipe=r["norm"],
                        p_vs_transformer=None if r["name"] == "transformer" else ratio_p(rows, r["norm"], r["name"]),
                        evals=r.get("evals") or {}, load=r.get("load"), cores=r.get("cores"),
                        ablation=(ablations or {}).get((r["norm"], r["name"], r["seed"])),
                        diverged=diverged(r["curve"]) if r["curve"] else None,
                        stuck_at_unigram=stuck(r, unigram) if unigram is not None else None) for r in rows], f, indent=1)
        f.write("\n")
    write_page_html(a.out, archs, rows, unigram, md)
    return md
