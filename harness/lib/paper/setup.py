"""make paper's configuration: the paper's numbers and tables (arXiv
2512.19428), the recipes each architecture is trained under, the
architectures and the controls, the data (Wikitext-2 prepared with BPE), and
harness.compare's command for one recipe's column."""
import os
import shlex
import sys

from harness.archs import count_params
from harness.common import BIN, die, run_ok, token_header
from harness.lib import runfolders


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


SETTINGS = "paper_settings.json"  # beside each norm's compare.csv: the lr and warm-up its runs had


# What paper writes in --out (each recipe's compare.* and runs are harness.compare's, in OUT/RECIPE).
OUTPUTS = ("paper.md", "paper.json", "paper.html", "paper_val_loss.png", "paper_*.dat", "val_head.bin")


def compare_command(a, norm, data, archs):
    """harness.compare's command for one recipe's column: the paper's
    configuration (--table), this run's seeds and budget, the recipe's options,
    then --train-args (so that they win); --evals passed on, and --resume where the
    recipe's sweep was started (its OUT/RECIPE/sweep.json: a recipe a stopped make
    paper had not reached starts afresh)."""
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
    if getattr(a, "evals", None):
        cmd += ["--evals"] + a.evals
    if getattr(a, "resume", False) and os.path.lexists(os.path.join(a.out, norm, runfolders.PLAN)):
        cmd.append("--resume")
    return cmd
