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

--controls pair,window,hybrid adds the controls to every recipe's
column (CONTROLS below): the Grassmann pair kinds outer and sum at rank 32
and at the rank whose parameter count is closest to the wedge's (where rank
32's differs by more than 5%), sliding-window attention over the 17
positions the Grassmann offsets reach, and the hybrids with gla and with
the sliding window; paper.md then has a table for each, every ratio with
Welch's p against the wedge, swa, the Transformer or the hybrid.

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
import sys
import time
from array import array
from collections import Counter

from harness.common import (BIN, ROOT, Sweep, command_line, die, gnuplot, gnuplot_string, guarded, need_gnuplot,
                            out_dir, run, run_ok, take_config, token_header)
from harness.files import check_outputs, output_text, read_input, write_output
from harness.compare import (COLORS, CSV_RUN, ONE_SEED, count_params, csv_columns, fmt, fmt_p, layers_text,
                             mean_spread, train_takes)
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
# The paper's own experiment names its mixers: the Grassmann layer's pair maps (bin/train --grassmann-pair)
# are the pair control's architectures.
PAIRS = ("wedge", "outer", "sum")


def layer_windows(spec, n_layer):
    """Each layer's Grassmann window offsets from a --grassmann-windows value:
    '1,2,4' for every layer, or 'a;b;...' one list per layer."""
    per = [[int(x) for x in part.split(",") if x] for part in spec.split(";")]
    return per * n_layer if len(per) == 1 else per


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
    r = run([os.path.join(BIN, "train"), "--help"])
    return "--recipe" in r.out + r.err


def archs_for(n_layer, controls=(), window=17, matched=()):
    """[(name, spec)] of the architectures one recipe's column trains, each spec as harness.compare's
    --archs takes it (harness/archs.py): the Transformer, the Grassmann model, the hybrid, then the
    architectures of each group in `controls` (CONTROLS), the pair group's rank-matched variants only
    for the pair kinds in `matched`."""
    rest = ",".join(["grassmann"] * (n_layer - 1))
    archs = [("transformer", "attention"), ("grassmann", "grassmann"), ("hybrid", "attention," + rest)]
    if "pair" in controls:
        for pair in ("outer", "sum"):
            archs.append((f"grassmann-{pair}", f"grassmann:pair={pair}"))
        for pair in ("outer", "sum"):
            if pair in matched:  # the rank whose count is closest to the wedge's at rank 32
                archs.append((f"grassmann-{pair}-m", f"grassmann:pair={pair}:match=grassmann"))
    if "window" in controls:
        archs.append(("swa", f"attention:window={window}"))
    if "hybrid" in controls:
        archs += [("gla", "gla"), ("hybrid-gla", "attention," + ",".join(["gla"] * (n_layer - 1))),
                  ("hybrid-swa", f"attention,{rest}:window={window}")]
    return archs


# --controls: the groups of architectures that ask whether the geometry, the window or neither explains the Grassmann results, beside the three.
CONTROLS = {
    "pair": "the Grassmann pair kinds: grassmann-outer and grassmann-sum at rank 32 (the wedge is the grassmann "
            "model), and grassmann-outer-m, grassmann-sum-m at the rank whose parameter count is closest to the "
            "wedge's, each only where rank 32's count differs from the wedge's by more than 5% (both do at Tables 1 "
            "and 2): 4 more architectures, 4 x seeds x recipes runs, 16 at the defaults, beside the 12 of the three "
            "(outer's runs train at about 0.8 of the wedge's speed: r^2 = 1024 features against its 496)",
    "window": "sliding-window attention, swa: attention whose queries see the last W = largest Grassmann offset + 1 "
              "= 17 positions, itself included, the positions a Grassmann layer's output reads: 1 more "
              "architecture, 4 runs at the defaults, each about a Transformer run's cost",
    "hybrid": "the hybrids of the other mixers: gla, hybrid-gla (attention first, gla in the rest) and hybrid-swa "
              "(sliding-window attention first, Grassmann in the rest): 3 more architectures, 12 runs at the defaults "
              "(gla's train at about 0.7 of the Transformer's speed)",
}
N_EMBD = 256  # both tables' width
MATCH_GAP = 5.0  # percent: a pair kind's count at rank 32 this far from the wedge's gets a rank-matched variant


def attention_window(windows):
    """The sliding window that sees what a Grassmann layer of these offsets sees: the largest offset, and
    the position itself (bin/train --attn-window counts the query's own position)."""
    return max(max(w) for w in windows) + 1


def pair_counts(a, data, norm):
    """{pair: bin/train's parameter count of the Grassmann model at rank 32 with that pair kind}, at this
    table's configuration under `norm`'s recipe (the untied head of the modern one included)."""
    cfg = TABLES[a.table]
    shared = ["--n-layer", str(cfg["n_layer"]), "--n-head", str(a.n_head), "--n-embd", "256", "--block-size",
              str(cfg["block_size"]), "--grassmann-windows", cfg["windows"]] + RECIPES[norm] + shlex.split(a.train_args)
    return {pair: count_params(data, shared + ["--grassmann-pair", pair, "--grassmann-rank", "32"],
                               ["grassmann"] * cfg["n_layer"]) for pair in PAIRS}


def matched_pairs(counts):
    """The pair kinds (not the wedge) whose count at rank 32 differs from the wedge's by more than MATCH_GAP
    percent: those that get a rank-matched variant."""
    return [p for p in PAIRS if p != "wedge" and abs(counts[p] - counts["wedge"]) > MATCH_GAP / 100 * counts["wedge"]]


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
    body = read_input(path, 32 + head["count"] * head["width"], f"'{path}'", head=True)[32:]
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
# What paper writes in --out (each recipe's compare.* and runs are harness.compare's, in OUT/RECIPE).
OUTPUTS = ("paper.md", "paper.json", "paper.html", "paper_val_loss.png", "paper_*.dat", "val_head.bin")
SETTINGS_SCHEMA = Obj({"lr": Num(0, lo_open=True, optional=True), "warmup_iters": Int(0, optional=True)}, closed=True)


def read_runs(out, norm, archs, a):
    """The runs of one norm's compare report (compare.csv, checked against
    harness.compare's csv_columns; its architectures this table's), with the
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


# ---- the controls (--controls): pair kinds, the sliding window, the hybrids ---------------

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


def pair_report(rows, archs):
    """paper.md's answer to "wedge, outer or sum?": every pair kind at rank 32, and at the rank matched
    to the wedge's count, against the wedge (the grassmann model) and the Transformer, per recipe."""
    names = [n for n, _ in archs if n.startswith("grassmann-") and any(r["name"] == n for r in rows)]
    if not names:
        return []
    md = ["", "## The pair kinds: wedge, outer, sum", "",
          "What a Grassmann layer makes of each pair (z_t, z_{t-d}) (`bin/train --grassmann-pair`): the wedge, its "
          "normalised Plücker coordinates (r(r-1)/2 features: the grassmann model), the normalised outer product "
          "z_t z_{t-d}^T / (|z_t| |z_{t-d}|) (outer, r^2 features), or the sum z_t + z_{t-d} (sum, r features: a "
          "gated causal convolution of rank r). The features feed a C x F projection, so at equal rank the counts "
          "differ; the -m rows take the rank whose count is closest to the wedge's at rank 32 (searched up to "
          "n_embd: a larger rank adds parameters, not directions). Equal tokens for every row. Ratios of val "
          "perplexity paired by seed; p: Welch's t-test of equal mean val loss.", "",
          "| recipe | architecture | pair | rank | parameters | vs wedge | val ppl | / wedge | p vs wedge "
          "| / Transformer | p vs Transformer |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    reading = []
    for norm in NORMS:
        wedge = runs_of(rows, norm, "grassmann")
        if not any(runs_of(rows, norm, n) for n in names):
            continue  # a recipe without the controls
        for name in ["grassmann"] + names:
            rs = runs_of(rows, norm, name)
            if not rs:
                continue
            gap = (f"{100.0 * (rs[0]['params'] - wedge[0]['params']) / wedge[0]['params']:+.1f}%" if wedge else "-")
            rank = rs[0]["grassmann_rank"] or "-"
            if name.endswith("-m") and rank == N_EMBD:
                rank = f"{rank} (capped at n_embd)"
            md.append(f"| {recipe_label(norm)} | {name} | {rs[0]['grassmann_pair'] or 'wedge'} "
                      f"| {rank} | {rs[0]['params']:,} | {gap} "
                      f"| {fmt(*mean_spread([r['val_ppl'] for r in rs]), 1)} | {ratio_cell(rows, norm, name, 'grassmann')} "
                      f"| {ratio_cell(rows, norm, name, 'transformer')} |")
            if name != "grassmann" and ratios(rows, norm, name, "grassmann"):
                reading.append(reading_line(rows, norm, name, "grassmann", "the wedge"))
    return md + [""] + reading


def window_report(rows, archs, window):
    """paper.md's answer to "Grassmann or sliding-window attention at the same window?"."""
    if not any(r["name"] == "swa" for r in rows):
        return []
    names = [n for n in ("transformer", "swa", "grassmann", "hybrid", "hybrid-swa") if any(r["name"] == n for r in rows)]
    md = ["", "## Grassmann against sliding-window attention at the same window", "",
          f"swa is attention whose queries see the last {window} positions, the query's own included "
          f"(`bin/train --attn-window {window}`): the largest Grassmann offset, {window - 1}, and the position itself, "
          f"exactly the positions a Grassmann layer's output at t reads (z_t and z_(t-d) for its offsets d). "
          f"--attn-window {window - 1} would see one position fewer than the Grassmann layer. So the two differ in "
          f"what they do with the same {window} positions: attention chooses among them by content, Grassmann "
          f"averages fixed pair features over a few offsets. Ratios of val perplexity paired by seed; p: Welch's "
          f"t-test of equal mean val loss.", "",
          "| recipe | architecture | sees | parameters | val ppl | / swa | p vs swa | / Transformer | p vs Transformer |",
          "|---|---|---|---|---|---|---|---|---|"]
    reading = []
    for norm in NORMS:
        if not runs_of(rows, norm, "swa"):
            continue
        for name in names:
            rs = runs_of(rows, norm, name)
            if not rs:
                continue
            sees = {"transformer": "the whole block", "swa": f"the last {window} positions",
                    "grassmann": f"offsets up to {window - 1}", "hybrid": "whole block (layer 0), then offsets",
                    "hybrid-swa": f"the last {window} (layer 0), then offsets"}[name]
            md.append(f"| {recipe_label(norm)} | {name} | {sees} | {rs[0]['params']:,} "
                      f"| {fmt(*mean_spread([r['val_ppl'] for r in rs]), 1)} | {ratio_cell(rows, norm, name, 'swa')} "
                      f"| {ratio_cell(rows, norm, name, 'transformer')} |")
        if ratios(rows, norm, "grassmann", "swa"):
            reading.append(reading_line(rows, norm, "grassmann", "swa", "sliding-window attention"))
    return md + [""] + reading


def hybrid_report(rows, archs):
    """paper.md's table of the hybrids that mix the mixers, against the Transformer and the paper's hybrid."""
    names = [n for n in ("hybrid", "gla", "hybrid-gla", "hybrid-swa") if any(r["name"] == n for r in rows)]
    if not any(n != "hybrid" for n in names):
        return []
    md = ["", "## The hybrids", "",
          "Each mixer beside the Transformer, and the paper's hybrid (attention first, then Grassmann) beside "
          "those with gla in the rest (hybrid-gla) and with sliding-window attention first (hybrid-swa). Ratios of "
          "val perplexity paired by seed; p: Welch's t-test of equal mean val loss.", "",
          "| recipe | architecture | layers | parameters | val ppl | / Transformer | p vs Transformer | / hybrid "
          "| p vs hybrid |", "|---|---|---|---|---|---|---|---|---|"]
    for norm in NORMS:
        if not any(runs_of(rows, norm, n) for n in names if n != "hybrid"):
            continue
        for name in names:
            rs = runs_of(rows, norm, name)
            if rs:
                layers = layers_text(rs[0]["arch"].split(",")) + (f", window {rs[0]['attn_window']}"
                                                                  if rs[0].get("attn_window") else "")
                md.append(f"| {recipe_label(norm)} | {name} | {layers} | {rs[0]['params']:,} "
                          f"| {fmt(*mean_spread([r['val_ppl'] for r in rs]), 1)} "
                          f"| {ratio_cell(rows, norm, name, 'transformer')} | {ratio_cell(rows, norm, name, 'hybrid')} |")
    return md


# ---- the per-window ablation -------------------------------------------------------

def ablation_path(out, norm, name, seed):
    return os.path.join(out, norm, f"ablation_{name}_{seed}.json")


def head_file(data, out, tokens):
    """OUT/val_head.bin: the first `tokens` tokens of data/val.bin (all of them when fewer),
    a token file of its own, so that every ablation scores the same text."""
    src, dst = os.path.join(data, "val.bin"), os.path.join(out, "val_head.bin")
    head = token_header(src)
    n = min(tokens, head["count"])
    body = read_input(src, 32 + n * head["width"], f"'{src}'", head=True)[32:]
    write_output(dst, head["raw"][:24] + n.to_bytes(8, "little") + body)
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
    with output_text(ablation_path(out, norm, name, seed)) as f:
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
            if not rs and name not in ("transformer", "grassmann", "hybrid"):
                continue  # a control this recipe did not run
            col = lambda k, d: (fmt(*mean_spread([r[k] for r in rs if r.get(k) is not None]), d)
                                if any(r.get(k) is not None for r in rs) else "-")
            p = "-" if name == "transformer" else fmt_p(ratio_p(rows, norm, name))
            per_text.append(f"| {recipe_label(norm)} | {name} | {col('val_ppl', 1)} | {col('val_bpb', 4)} "
                            f"| {col('val_word_ppl', 1)} | {p} |")
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
    md += ablation_report(ablations or {})
    md += ["", "## Runs", "",
           "| norm | architecture | parameters | seed | tokens | train seconds | tokens/s | val ppl | test ppl |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["norm"] != "pre", [n for n, _ in archs].index(r["name"]), r["seed"])):
        md.append(f"| {r['norm']} | {r['name']} | {r['params']:,} | {r['seed']} | {r['tokens']:,} "
                  f"| {r['train_seconds']:.0f} | {r['tok_s']:,.0f} | {r['val_ppl']:.2f} | {r['test_ppl']:.2f} |")
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
           "--seeds", str(a.seeds), "--seed", str(a.seed), "--threads", str(a.threads),
           "--jobs", str(a.jobs)] + RECIPES[norm]
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
    ap.add_argument("--threads", type=int, default=0, help="threads per run; 0 = the cores / --jobs")
    ap.add_argument("--jobs", type=int, default=1, help="runs of a recipe trained at once (harness.compare --jobs; 1)")
    ap.add_argument("--train-args", default="", metavar="ARGS",
                    help="more bin/train options for every run, after the recipe's so that they win (one string: "
                         "--train-args='--zero-init 0')")
    ap.add_argument("--controls", default="", metavar="GROUPS",
                    help="the controls, trained beside the three architectures in every recipe's column "
                         "(comma list; default none). " + " ".join(f"{k}: {v}." for k, v in CONTROLS.items()).replace("%", "%%") +
                         " A run costs about what one of the three does (more for outer and gla), so a group's cost "
                         "is its share of runs: --controls pair,window,hybrid is 8 more architectures, 44 runs in "
                         "all at the defaults, about 4 times the hour of the three. Commands for each question: "
                         "docs/compare.md, the controls' commands")
    ap.add_argument("--report-only", action="store_true", help="rewrite paper.md and paper.json from OUT/pre and OUT/post")
    take_config(ap)
    a = ap.parse_args()
    controls = [c for c in a.controls.split(",") if c]
    if any(c not in CONTROLS for c in controls):
        die(f"--controls must list {', '.join(CONTROLS)} (got '{a.controls}')")
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
    for name in ("seeds", "jobs"):
        if getattr(a, name) < 1:
            die(f"--{name} must be at least 1")
    if "pair" in controls and not a.report_only and not train_takes("--grassmann-pair"):
        die("--controls pair needs a bin/train with --grassmann-pair (this one has none)")
    need_gnuplot()
    out_dir(a.out)
    check_outputs(a.out, OUTPUTS)  # before any work: each file paper writes, where it is there already
    for norm in NORMS:
        check_outputs(os.path.join(a.out, norm), (SETTINGS, "ablation_*.json"))
    cfg = TABLES[a.table]
    window = attention_window(layer_windows(cfg["windows"], cfg["n_layer"]))
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
        matched = []
        if "pair" in controls:  # which pair kinds get a rank-matched variant: decided once, for every recipe
            counts = pair_counts(a, data, norms[0])
            matched = matched_pairs(counts)
            print("paper: the Grassmann model at rank 32, " + recipe_label(norms[0]) + ": " + ", ".join(
                f"{p} {n:,} parameters ({100.0 * (n - counts['wedge']) / counts['wedge']:+.1f}%)"
                for p, n in counts.items()) + "; rank-matched variants for: " + (", ".join(matched) or "none"),
                flush=True)
        archs = archs_for(cfg["n_layer"], controls, window, matched)
        # one sweep over every recipe's comparison: each harness.compare counts and times its runs in it
        per_recipe = len(archs) * a.seeds
        sweep = Sweep(len(norms) * per_recipe)
        for k, norm in enumerate(norms):
            cmd = compare_command(a, norm, data, archs)
            print(f"paper: recipe {k + 1} of {len(norms)}, {recipe_label(norm)}: {shlex.join(cmd[1:])}", flush=True)
            # its runs' progress as they come; stopping paper stops it, and it its runs (harness/procs.py)
            if run(cmd, env=sweep.env(), capture=False, cwd=ROOT, show=True).status != 0:
                die(f"the {recipe_label(norm)} comparison failed (its output is above)")
            sweep.add_done(per_recipe)
            with output_text(os.path.join(a.out, norm, SETTINGS)) as f:
                json.dump({"lr": a.lr, "warmup_iters": a.warmup_iters}, f)
            if a.ablation_tokens:
                val_head, n = head_file(data, a.out, a.ablation_tokens)
                ablate(a.out, norm, "grassmann", a.seed, a.budget.split(":")[0], ["grassmann"] * cfg["n_layer"],
                       layer_windows(cfg["windows"], cfg["n_layer"]), val_head, n, a.threads)
    # Read back every architecture make paper may have trained (a --report-only needs no --controls);
    # the report has the three and whichever others have runs.
    known = archs_for(cfg["n_layer"], CONTROLS, window, [p for p in PAIRS if p != "wedge"])
    rows = [r for norm in NORMS for r in read_runs(a.out, norm, known, a)]
    archs = known[:3] + [x for x in known[3:] if any(r["name"] == x[0] for r in rows)]
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
    guarded(main)
