"""make paper: the Grassmann paper's comparison (arXiv 2512.19428) at its own
configuration, with both LayerNorm placements, through the compare harness.
Run from the repository root: python3 -m harness.paper [options] (--help).

Table 1 (the default): 6 layers, n_embd 256, FFN 1024, block 128, Grassmann
rank 32 with windows 1,2,4,8,12,16 in every layer. Table 2 (--table 2): 12
layers, block 256, one window per layer (1;1;2;2;4;4;8;8;12;12;16;16). Three
architectures: the Transformer, the Grassmann model, and the hybrid with
attention in the first layer and Grassmann in the others; each under pre-norm
and post-norm (the paper's), with --seeds seeds each, paired by seed.

The data is a prepared directory (--data, default data/sotu from
`make data-large`), or Wikitext-2's own files (--wikitext2 DIR holding
wiki.train.tokens, wiki.valid.tokens and wiki.test.tokens, or the .raw ones),
prepared here with bin/prepare --train/--val/--test and BPE.

Writes OUT/paper.md (a reading, the paper's numbers beside ours, bits per byte
and word perplexity beside token perplexity, Welch's p for every ratio, the
per-window ablation of the Grassmann model, the table of runs), OUT/paper.json
(one row per run) and OUT/paper.html (all of paper.md and every run's curve in
one page for a browser); each recipe's compare report is in OUT/pre/, OUT/post/
(and OUT/modern/ with --recipes ...,modern). --report-only rewrites paper.md,
paper.json and paper.html from those compare reports without training.
"""
import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import time
from array import array
from collections import Counter

from harness.common import (BIN, ROOT, command_line, die, gnuplot, gnuplot_string, layer_windows, need_gnuplot, out_dir,
                            run_ok, token_header)
from harness.compare import CSV_COLUMNS, CSV_RUN, ONE_SEED, fmt, fmt_p, mean_spread
from harness.report_page import chart, markdown_sections, write_page
from harness.results import Int, MapOf, Num, Obj, load_csv, load_json, read_train_log
from harness.stats import welch_p

# The paper's numbers: (what, transformer val ppl, grassmann val ppl, ratio).
PAPER = {
    1: ("Table 1: 6 layers, block 128, post-norm, 30,522-token vocabulary", 248.4, 275.7, 1.110),
    2: ("Table 2: 12 layers, block 256, one window per layer", 235.2, 261.1, 1.110),
}
TABLES = {
    1: {"n_layer": 6, "block_size": 128, "windows": "1,2,4,8,12,16"},
    2: {"n_layer": 12, "block_size": 256, "windows": "1;1;2;2;4;4;8;8;12;12;16;16"},
}
# The recipes each architecture is trained under: the column of runs OUT/RECIPE, and
# what bin/train (through harness.compare) is given for it. modern needs a bin/train
# with --recipe; pre and post are GPT-2's blocks with the LayerNorm before or after.
RECIPES = {"pre": ["--norm", "pre"], "post": ["--norm", "post"], "modern": ["--norm", "pre", "--recipe", "modern"]}
NORMS = tuple(RECIPES)


def recipe_label(recipe):
    """'pre-norm', 'post-norm', 'modern recipe'."""
    return f"{recipe}-norm" if recipe in ("pre", "post") else f"{recipe} recipe"


# Each recipe's line in the plot: (the caption's word, gnuplot's dash type).
LINE_STYLES = {"pre": ("solid", ""), "post": ("dashed", " dt 2"), "modern": ("dash-dotted", " dt 4")}


def line_styles_caption(rows):
    """'pre-norm solid, modern recipe dash-dotted': the recipes these rows have."""
    return ", ".join(f"{recipe_label(n)} {LINE_STYLES[n][0]}" for n in NORMS if any(r["norm"] == n for r in rows))


def train_has_recipe():
    """Whether bin/train takes --recipe (the modern recipe's column needs it)."""
    r = subprocess.run([os.path.join(BIN, "train"), "--help"], capture_output=True, text=True)
    return "--recipe" in r.stdout + r.stderr


def archs_for(n_layer):
    hybrid = ",".join(["attention"] + ["grassmann"] * (n_layer - 1))
    return [("transformer", "attention"), ("grassmann", "grassmann"), ("hybrid", hybrid)]


def prepare_wikitext2(src, out, vocab):
    """Wikitext-2's files, prepared with BPE (learned from train only) into out."""
    names = {}
    for split, stem in (("train", "wiki.train"), ("val", "wiki.valid"), ("test", "wiki.test")):
        found = [os.path.join(src, stem + ext) for ext in (".tokens", ".raw") if os.path.exists(os.path.join(src, stem + ext))]
        if not found:
            die(f"--wikitext2: '{src}' has no {stem}.tokens or {stem}.raw")
        names[split] = found[0]
    if all(os.path.exists(os.path.join(out, f)) for f in ("train.bin", "val.bin", "test.bin", "tokenizer.txt")):
        print(f"paper: using {out}, prepared before", flush=True)
        return
    run_ok([os.path.join(BIN, "prepare"), "--train", names["train"], "--val", names["val"], "--test", names["test"],
            "--out", out, "--tokenizer", "bpe", "--vocab-size", str(vocab)], capture=False, status=2)


def train_tokens(data):
    """Tokens in data/train.bin (its header), or None when it is not there."""
    path = os.path.join(data, "train.bin")
    if not os.path.exists(path):
        return None
    return token_header(path)["count"]


def val_curve(rows):
    """(val loss at step 0, the lowest later, the last, whether any training
    loss was not a number) from a run's training log rows; None without
    val losses."""
    val = [r["val_loss"] for r in rows if r["val_loss"] is not None]
    nan = any(r["ms_per_step"] is not None and r["train_loss"] is None for r in rows)
    return (val[0], min(val[1:] or val), val[-1], nan) if val else None


def read_token_file(path):
    """A token file (bin/prepare) as an array, and its vocabulary size."""
    head = token_header(path)
    tokens = array("H" if head["width"] == 2 else "I")
    with open(path, "rb") as f:
        f.seek(32)
        body = f.read(head["count"] * head["width"])
    if len(body) != head["count"] * head["width"]:
        die(f"'{path}' is shorter than the {head['count']:,} tokens its header claims")
    tokens.frombytes(body)
    if sys.byteorder != "little":
        tokens.byteswap()
    return tokens, head["vocab"]


def unigram_loss(data):
    """The val loss, in nats per token, of the model that knows only how often
    each token occurs in train (add-one smoothed): what a model that learned
    nothing of context scores. None when the token files are not there."""
    paths = [os.path.join(data, f) for f in ("train.bin", "val.bin")]
    if not all(os.path.exists(p) for p in paths):
        return None
    (train, vocab), (val, _) = read_token_file(paths[0]), read_token_file(paths[1])
    if not val:
        return None
    counts, total = Counter(train), len(train) + vocab
    return -sum(n * math.log((counts[t] + 1) / total) for t, n in Counter(val).items()) / len(val)


# A run whose val loss ends within this much of the unigram model's learned
# token frequencies and nothing of context: it did not train.
UNIGRAM_MARGIN = 0.2


def stuck(row, unigram):
    """Whether a run ended at the unigram model's loss (see UNIGRAM_MARGIN)."""
    return unigram is not None and row["val_loss"] > unigram - UNIGRAM_MARGIN


def diverged(curve):
    """A run diverged when its training loss stopped being a number, or its
    last val loss is not below where it started, or climbed back more than
    0.5 nats above its lowest."""
    first, low, last, nan = curve
    return nan or last != last or last >= first or last > low + 0.5


# Per byte and per word of the scored text (bin/eval --word-ppl): comparable across tokenizers.
PER_TEXT = ("val_bpb", "val_word_ppl", "test_bpb", "test_word_ppl")
SETTINGS = "paper_settings.json"  # beside each norm's compare.csv: the lr and warm-up its runs had
SETTINGS_SCHEMA = Obj({"lr": Num(0, lo_open=True, optional=True), "warmup_iters": Int(0, optional=True)}, closed=True)


def read_runs(out, norm, archs, a):
    """The runs of one norm's compare report (compare.csv, checked against
    harness.compare's CSV_COLUMNS; its architectures this table's), with the
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
    for r in load_csv(path, CSV_COLUMNS, unique=CSV_RUN):
        if r["arch"] not in mixers:
            die(f"{path}: architecture '{r['arch']}' is not one of {', '.join(mixers)}")
        log = os.path.join(out, norm, f"{r['arch']}_{r['budget'].split(':')[0]}_{r['seed']}.csv")
        steps = read_train_log(log) if os.path.lexists(log) else []
        rows.append({"curve": val_curve(steps), "lr": settings["lr"], "warmup_iters": settings["warmup_iters"],
                     "points": [(s["tokens"], s["val_loss"]) for s in steps if s["val_loss"] is not None],
                     "name": r["arch"], "arch": r["mixers"], "norm": norm,
                     **{k: r[k] for k in ("seed", "tokens", "val_ppl", "test_ppl", "val_loss", "params",
                                          "train_seconds", "tok_s", "grassmann_rank") + PER_TEXT}})
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


# ---- the per-window ablation -------------------------------------------------------

def ablation_path(out, norm, name, seed):
    return os.path.join(out, norm, f"ablation_{name}_{seed}.json")


def head_file(data, out, tokens):
    """OUT/val_head.bin: the first `tokens` tokens of data/val.bin (all of them when fewer),
    a token file of its own, so that every ablation scores the same text."""
    src, dst = os.path.join(data, "val.bin"), os.path.join(out, "val_head.bin")
    head = token_header(src)
    n = min(tokens, head["count"])
    with open(src, "rb") as f:
        f.seek(32)
        body = f.read(n * head["width"])
    with open(dst, "wb") as f:
        f.write(head["raw"][:24] + n.to_bytes(8, "little") + body)
    return dst, n


def ablate(out, norm, name, seed, kind, mixers, windows, val_head, tokens, threads):
    """The val loss on val_head with each (Grassmann layer, window offset) left out in turn
    (bin/eval --ablate-offset), beside the plain loss: OUT/NORM/ablation_NAME_SEED.json.
    Needs the run's checkpoint (harness.compare --keep-checkpoints)."""
    ckpt = os.path.join(out, norm, f"{name}_{kind}_{seed}.ckpt")  # harness.compare's name for it
    if not os.path.exists(ckpt):
        die(f"no checkpoint {ckpt} to ablate")
    score = lambda extra: run_ok([os.path.join(BIN, "eval"), "--model", ckpt, "--data", val_head, "--json",
                                  "--threads", str(threads)] + extra, status=2).json()["loss"]
    plain = score([])
    delta = {}
    for layer, mixer in enumerate(mixers):
        if mixer != "grassmann":
            continue
        for d in windows[layer]:
            delta[f"{layer}:{d}"] = score(["--ablate-offset", f"{layer}:{d}"]) - plain
            print(f"paper: {recipe_label(norm)} {name} seed {seed}: without layer {layer}'s offset {d}: "
                  f"{delta[f'{layer}:{d}']:+.4f} nats", flush=True)
    with open(ablation_path(out, norm, name, seed), "w") as f:
        json.dump({"tokens": tokens, "plain_loss": plain, "delta": delta}, f, indent=1)


# An ablation file as ablate() writes it: the loss added by leaving out each "LAYER:OFFSET".
ABLATION_SCHEMA = Obj({"tokens": Int(1), "plain_loss": Num(0),
                       "delta": MapOf(r"[0-9]{1,4}:[0-9]{1,6}", Num(), min_len=1)})


def read_ablations(out, rows):
    """{(norm, name, seed): {tokens, plain_loss, delta}} for the runs that have an ablation file."""
    found = {}
    for r in rows:
        path = ablation_path(out, r["norm"], r["name"], r["seed"])
        if os.path.lexists(path):
            found[(r["norm"], r["name"], r["seed"])] = load_json(path, ABLATION_SCHEMA)
    return found


def ablation_report(ablations):
    """paper.md's section: per run ablated, a layer x offset table of the loss each offset's
    removal adds, and a sentence on where the information comes from."""
    if not ablations:
        return []
    md = ["", "## Where each Grassmann layer's information comes from", "",
          "Each cell: the val loss (nats per token) with that layer's window offset left out of its mean "
          "(`bin/eval --ablate-offset LAYER:OFFSET`: its term dropped, the mean's count kept), minus the loss of the "
          f"whole model, on the first {max(ab['tokens'] for ab in ablations.values()):,} val tokens. Large: the layer "
          "relies on the token that far back; near 0: it could do without it."]
    for (norm, name, seed), ab in sorted(ablations.items()):
        cells = {tuple(map(int, k.split(":"))): v for k, v in ab["delta"].items()}
        layers = sorted({l for l, _ in cells})
        offsets = sorted({d for _, d in cells})
        by_offset = {d: sum(v for (_, dd), v in cells.items() if dd == d) for d in offsets}
        by_layer = {l: sum(v for (ll, _), v in cells.items() if ll == l) for l in layers}
        top_d = max(by_offset, key=by_offset.get)
        top_l = max(by_layer, key=by_layer.get)
        md += ["", f"**{recipe_label(norm)}, {name}, seed {seed}** (whole model: {ab['plain_loss']:.4f} nats). "
                   f"Most is lost without offset {top_d} ({by_offset[top_d]:+.4f} summed over the layers) and "
                   f"in layer {top_l} ({by_layer[top_l]:+.4f} summed over its offsets).", "",
               "| layer | " + " | ".join(f"offset {d}" for d in offsets) + " |",
               "|---|" + "---|" * len(offsets)]
        for l in layers:
            md.append(f"| {l} | " + " | ".join(f"{cells[(l, d)]:+.4f}" if (l, d) in cells else "-" for d in offsets)
                      + " |")
    return md


def write_plot(out, archs, rows, unigram):
    """OUT/paper_val_loss.png: val loss against training tokens, mean over
    seeds, each architecture in its colour, each recipe in its line style
    (LINE_STYLES), and the unigram model's loss as a grey line."""
    colors = {"transformer": "#1f77b4", "grassmann": "#d62728", "hybrid": "#2ca02c"}
    parts = []
    for norm in NORMS:
        for name, _ in archs:
            runs = [r["points"] for r in rows if r["norm"] == norm and r["name"] == name and r["points"]]
            if not runs:
                continue
            path = os.path.join(out, f"paper_{norm}_{name}.dat")
            with open(path, "w") as f:
                for k in range(min(map(len, runs))):
                    f.write(f"{runs[0][k][0]} {sum(p[k][1] for p in runs) / len(runs)}\n")
            parts.append(f"{gnuplot_string(path)} using 1:2 with linespoints lw 2 pt 7 ps 0.5{LINE_STYLES[norm][1]} "
                         f"lc rgb '{colors.get(name, '#9467bd')}' title {gnuplot_string(name + ', ' + recipe_label(norm))}")
    if not parts:
        return None
    if unigram is not None:
        parts.append(f"{unigram} with lines lw 1.5 dt 3 lc rgb '#7f7f7f' title 'token frequencies alone (unigram)'")
    png = os.path.join(out, "paper_val_loss.png")
    title = "Validation loss, the paper's configuration (mean over seeds)"
    gnuplot("set terminal pngcairo size 900,560 font ',11'\nset grid\nset key top right\n"
            f"set output {gnuplot_string(png)}\n"
            f"set title {gnuplot_string(title)}\n"
            "set xlabel 'training tokens'\nset format x '%.1s%c'\nset ylabel 'validation loss (nats per token)'\n"
            "set yrange [*:7.5]\nplot " + ", \\\n     ".join(parts) + "\n")
    return png


def write_page_html(out, archs, rows, unigram, md):
    """OUT/paper.html: the report's text and tables, and every run's val-loss
    curve (architecture by colour, every recipe but pre-norm dashed) with zoom."""
    colors = {"transformer": "#1f77b4", "grassmann": "#d62728", "hybrid": "#2ca02c"}
    series = [{"name": f"{r['name']}, {recipe_label(r['norm'])}, seed {r['seed']}",
               "legend": f"{r['name']}, {recipe_label(r['norm'])}",
               "color": colors.get(r["name"], "#9467bd"), "dash": r["norm"] != "pre", "points": [list(p) for p in r["points"]]}
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


def report(a, archs, rows, minutes, data_label, unigram=None, plot=None, ablations=None):
    what, paper_t, paper_g, paper_ratio = PAPER[a.table]
    seeds = sorted({r["seed"] for r in rows})
    md = [f"# The Grassmann paper at its own configuration ({what.split(':')[0]})", "", "## Reading", ""]
    for norm in NORMS:
        g = ratios(rows, norm, "grassmann")
        h = ratios(rows, norm, "hybrid")
        if not g:
            if norm in ("pre", "post"):
                md.append(f"- **{recipe_label(norm)}**: not run.")
            continue
        gm, gs = mean_spread(g)
        lo, hi = min(g), max(g)
        holds = ("**the paper's 1.11 lies inside our seed range**" if lo <= paper_ratio <= hi else
                 f"**the paper's {paper_ratio:.2f} lies outside our seed range** ({lo:.3f} to {hi:.3f})")
        line = (f"- **{recipe_label(norm)}**: Grassmann / Transformer val perplexity {fmt(gm, gs)} "
                f"(Welch {fmt_p(ratio_p(rows, norm, 'grassmann'))}); {holds}.")
        if h:
            hm, hs = mean_spread(h)
            side = (ONE_SEED if len(h) < 2 else
                    "better than the Transformer by more than the seed spread" if hm + hs < 1 else
                    "worse than the Transformer by more than the seed spread" if hm - hs > 1 else
                    "level with the Transformer within the seed spread")
            line += (f" The hybrid (attention first, then Grassmann) / Transformer: {fmt(hm, hs)} "
                     f"(Welch {fmt_p(ratio_p(rows, norm, 'hybrid'))}), {side}.")
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
        pr = norm_ratios(rows, name)
        if pr:
            m, s = mean_spread(pr)
            md.append(f"- Post-norm / pre-norm val perplexity, {name}: {fmt(m, s)} "
                      f"(Welch {fmt_p(ratio_p(rows, 'post', name, name, 'pre'))}).")
    budget_tokens = sorted({r["tokens"] for r in rows})
    if plot:
        md += ["", f"![Validation loss against training tokens, {line_styles_caption(rows)}]"
                   f"({os.path.basename(plot)})"]
    md += ["", f"Ratios are paired by seed (same initial weights' seed, same batches) and given as mean ± spread, "
               f"the spread being half the range over {len(seeds)} seeds ({', '.join(map(str, seeds))}). Each run "
               f"trained on {', '.join(f'{t:,}' for t in budget_tokens)} tokens; the paper trains 30 epochs of "
               f"Wikitext-2 (about 62M tokens), so absolute perplexities are not comparable with the paper's, and "
               f"ratios are what this measures.", "",
           "## The paper beside ours", "",
           "| source | norm | Transformer val ppl | Grassmann val ppl | hybrid val ppl | Grassmann / Transformer | hybrid / Transformer |",
           "|---|---|---|---|---|---|---|",
           f"| the paper, {what} | post | {paper_t} | {paper_g} | - | {paper_ratio:.3f} | - |"]
    per_text = ["", "## Per token, per byte, per word", "",
                "Token perplexity depends on the tokenizer; bits per byte and word perplexity (the same nats over "
                "the bytes, and the whitespace-separated words, of the text the scored tokens stand for: `bin/eval "
                "--word-ppl`) compare across tokenizers. Mean ± spread over seeds, val split; p: Welch's t-test of "
                "equal mean val loss against the Transformer under the same recipe (two-sided; n/a below 2 seeds).", "",
                "| recipe | architecture | val ppl (token) | bits per byte | word ppl | p vs Transformer |",
                "|---|---|---|---|---|---|"]
    for norm in NORMS:
        per = {name: mean_spread([r["val_ppl"] for r in rows if r["norm"] == norm and r["name"] == name])
               for name, _ in archs}
        if all(v[0] != v[0] for v in per.values()):  # NaN: no runs
            continue
        g, h = mean_spread(ratios(rows, norm, "grassmann")), mean_spread(ratios(rows, norm, "hybrid"))
        md.append(f"| ours, {data_label} | {norm} | {fmt(*per['transformer'], 1)} | {fmt(*per['grassmann'], 1)} "
                  f"| {fmt(*per['hybrid'], 1)} | {fmt(*g)} ({fmt_p(ratio_p(rows, norm, 'grassmann'))}) "
                  f"| {fmt(*h)} ({fmt_p(ratio_p(rows, norm, 'hybrid'))}) |")
        for name, _ in archs:
            rs = [r for r in rows if r["norm"] == norm and r["name"] == name]
            col = lambda k, d: (fmt(*mean_spread([r[k] for r in rs if r.get(k) is not None]), d)
                                if any(r.get(k) is not None for r in rs) else "-")
            p = "-" if name == "transformer" else fmt_p(ratio_p(rows, norm, name))
            per_text.append(f"| {recipe_label(norm)} | {name} | {col('val_ppl', 1)} | {col('val_bpb', 4)} "
                            f"| {col('val_word_ppl', 1)} | {p} |")
    md += per_text
    # The paper's 30 epochs at the speed measured here.
    train_tokens = a.train_tokens
    if train_tokens:
        tok_s = statistics.median(r["tok_s"] for r in rows)  # the median: a shared machine slows some runs
        per_run = 30 * train_tokens / tok_s / 3600
        md += ["", f"**The paper's 30 epochs** of this train split ({train_tokens:,} tokens, {30 * train_tokens:,} per "
                   f"run) at the median {tok_s:,.0f} tokens/s measured here: about {per_run:.1f} hours per run, "
                   f"{per_run * len(rows):.0f} hours for these {len(rows)} runs: "
                   f"`make paper PAPER_ARGS=\"--budget tokens:{30 * train_tokens}\"`."]
    md += ablation_report(ablations or {})
    md += ["", "## Runs", "",
           "| norm | architecture | parameters | seed | tokens | train seconds | tokens/s | val ppl | test ppl |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["norm"] != "pre", [n for n, _ in archs].index(r["name"]), r["seed"])):
        md.append(f"| {r['norm']} | {r['name']} | {r['params']:,} | {r['seed']} | {r['tokens']:,} "
                  f"| {r['train_seconds']:.0f} | {r['tok_s']:,.0f} | {r['val_ppl']:.2f} | {r['test_ppl']:.2f} |")
    cfg = TABLES[a.table]
    md += ["", f"Model: n_layer {cfg['n_layer']}, n_embd 256, n_head {a.n_head}, FFN 1024, block {cfg['block_size']}, "
               f"Grassmann rank 32, windows {cfg['windows']}; batch {a.batch_size}; {setting(rows)[3:]}, then cosine "
               f"decay to a tenth{'; bin/train options after the recipe: ' + a.train_args if a.train_args else ''}. "
               f"Data: {data_label}. "
               f"Architectures: " + "; ".join(f"{n} = {s}" for n, s in archs) + ". "
               f"Each norm's full comparison (loss curves, loss by position, recall split) is in "
               f"[pre/compare.md](pre/compare.md) and [post/compare.md](post/compare.md). "
               + (f"Training and scoring took {minutes:.0f} minutes of wall time." if minutes else ""),
           f"Command: `{command_line('harness.paper')}`"]
    with open(os.path.join(a.out, "paper.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(a.out, "paper.json"), "w") as f:
        json.dump([dict({k: r[k] for k in ("arch", "norm", "seed", "tokens", "val_ppl", "test_ppl", "params", "name",
                                           "grassmann_rank", "train_seconds", "val_loss") + PER_TEXT},
                        recipe=r["norm"],
                        welch_p_vs_transformer=None if r["name"] == "transformer" else ratio_p(rows, r["norm"], r["name"]),
                        ablation=(ablations or {}).get((r["norm"], r["name"], r["seed"])),
                        diverged=diverged(r["curve"]) if r["curve"] else None,
                        stuck_at_unigram=stuck(r, unigram) if unigram is not None else None) for r in rows], f, indent=1)
        f.write("\n")
    write_page_html(a.out, archs, rows, unigram, md)
    return md


def compare_command(a, norm, data, archs):
    """harness.compare's command for one recipe's column: the paper's
    configuration (--table), this run's seeds and budget, the recipe's options,
    then --train-args (so that they win), keeping the checkpoints the per-window
    ablation reads."""
    cfg = TABLES[a.table]
    cmd = [sys.executable, "-m", "harness.compare", "--data", data, "--out", os.path.join(a.out, norm),
           "--archs", " ".join(f"{n}={s}" for n, s in archs), "--n-layer", str(cfg["n_layer"]),
           "--n-head", str(a.n_head), "--n-embd", "256", "--block-size", str(cfg["block_size"]),
           "--batch-size", str(a.batch_size), "--lr", str(a.lr), "--min-lr", str(a.lr / 10),
           "--warmup-iters", str(a.warmup_iters), "--grassmann-rank", "32",
           "--grassmann-windows", cfg["windows"], "--budget", a.budget,
           "--seeds", str(a.seeds), "--seed", str(a.seed), "--threads", str(a.threads)] + RECIPES[norm]
    if a.train_args:
        cmd.append(f"--train-args={a.train_args}")  # '=': its value starts with '--'
    if a.ablation_tokens:
        cmd.append("--keep-checkpoints")  # the ablation reads them
    return cmd


def main():
    ap = argparse.ArgumentParser(description="The Grassmann paper's comparison at its own configuration, both norms.")
    ap.add_argument("--table", type=int, choices=(1, 2), default=1, help="the paper's Table 1 (default) or Table 2")
    ap.add_argument("--data", default=os.path.join(ROOT, "data/sotu"),
                    help="prepared data directory (default data/sotu: make data-large)")
    ap.add_argument("--wikitext2", metavar="DIR", help="Wikitext-2's wiki.{train,valid,test}.tokens (or .raw): "
                    "prepared with BPE into OUT/data and used instead of --data")
    ap.add_argument("--vocab-size", type=int, default=8192, help="BPE vocabulary for --wikitext2 (8192)")
    ap.add_argument("--out", default=os.path.join(ROOT, "runs/paper"), help="output directory (runs/paper)")
    ap.add_argument("--norms", default="pre,post", help="which norms to run (pre,post)")
    ap.add_argument("--recipes", help="which recipes to run, each a column: pre, post (GPT-2's blocks, LayerNorm "
                    "before or after) and modern (bin/train --recipe modern, when bin/train has it); "
                    "instead of --norms")
    ap.add_argument("--ablation-tokens", type=int, default=16384,
                    help="the per-window ablation of the Grassmann model (first seed, each recipe) scores this many "
                         "val tokens per layer and offset; 0: none (16384)")
    ap.add_argument("--budget", default="tokens:800000",
                    help="per run, as make compare takes it (tokens:800000: the 12 runs take about an hour on 2 cores)")
    ap.add_argument("--seeds", type=int, default=2, help="seeds per architecture and norm (2)")
    ap.add_argument("--seed", type=int, default=1337, help="first seed (1337)")
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup-iters", type=int, default=100)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--train-args", default="", metavar="ARGS",
                    help="more bin/train options for every run, after the recipe's so that they win (one string: "
                         "--train-args='--zero-init 0')")
    ap.add_argument("--report-only", action="store_true", help="rewrite paper.md and paper.json from OUT/pre and OUT/post")
    a = ap.parse_args()
    if a.recipes is not None:
        norms = [n for n in a.recipes.split(",") if n]
        if not norms or any(n not in RECIPES for n in norms):
            die(f"--recipes must list pre, post and/or modern (got '{a.recipes}')")
        if "modern" in norms and not a.report_only and not train_has_recipe():
            die("--recipes modern needs a bin/train with --recipe (this one has none)")
    else:
        norms = [n for n in a.norms.split(",") if n]
        if not norms or any(n not in ("pre", "post") for n in norms):
            die(f"--norms must list pre and/or post (got '{a.norms}')")
    if a.ablation_tokens < 0:
        die("--ablation-tokens must not be negative")
    if a.seeds < 1:
        die("--seeds must be at least 1")
    need_gnuplot()
    out_dir(a.out)
    cfg = TABLES[a.table]
    archs = archs_for(cfg["n_layer"])
    data, data_label = a.data, os.path.relpath(a.data, ROOT)
    if a.wikitext2:
        data, data_label = os.path.join(a.out, "data"), "Wikitext-2 (" + a.wikitext2 + f"), BPE {a.vocab_size}"
        if not a.report_only:
            prepare_wikitext2(a.wikitext2, data, a.vocab_size)
    elif data_label == "data/sotu":
        data_label = "State of the Union addresses 1790-2021 (make data-large), BPE 8,192, split by speech"
    t0 = time.time()
    if not a.report_only:
        for f in ("train.bin", "val.bin", "test.bin", "tokenizer.txt"):
            if not os.path.exists(os.path.join(data, f)):
                die(f"'{data}' has no {f} (run make data-large, or give --data or --wikitext2)")
        for norm in norms:
            cmd = compare_command(a, norm, data, archs)
            print(f"paper: {recipe_label(norm)}: {shlex.join(cmd[1:])}", flush=True)
            if subprocess.run(cmd, cwd=ROOT).returncode != 0:
                die(f"the {recipe_label(norm)} comparison failed (its output is above)")
            with open(os.path.join(a.out, norm, SETTINGS), "w") as f:
                json.dump({"lr": a.lr, "warmup_iters": a.warmup_iters}, f)
            if a.ablation_tokens:
                val_head, n = head_file(data, a.out, a.ablation_tokens)
                ablate(a.out, norm, "grassmann", a.seed, a.budget.split(":")[0], ["grassmann"] * cfg["n_layer"],
                       layer_windows(cfg["windows"], cfg["n_layer"]), val_head, n, a.threads)
    rows = [r for norm in NORMS for r in read_runs(a.out, norm, archs, a)]
    a.train_tokens = train_tokens(data)
    if not rows:
        die(f"no runs in {a.out}/pre, {a.out}/post or {a.out}/modern")
    unigram = unigram_loss(data)
    plot = write_plot(a.out, archs, rows, unigram)
    md = report(a, archs, rows, 0 if a.report_only else (time.time() - t0) / 60, data_label, unigram, plot,
                read_ablations(a.out, rows))
    print("\n".join(md[:12]))
    print(f"\nwrote {os.path.join(a.out, 'paper.md')} and paper.json")


if __name__ == "__main__":
    main()
