"""The downstream evaluations a sweep scores each run's final checkpoint on
beside its perplexity (--evals NAME=FILE ...): bin/eval's minimal pairs,
cloze and multiple choice (docs/evals.md). Each FILE's kind is read from its
format, its first line: a JSON object with "sentence_good" and
"sentence_bad" is minimal pairs (BLiMP's JSON lines), one with "ctx" and
"endings" multiple choice (HellaSwag's), and a line of plain text a cloze
passage (LAMBADA's). NAME names the task in the tables and the columns of
compare.csv (eval_NAME_acc, ...); bin/eval checks every line of the file
when the first run is scored."""
import json
import os
import re

from harness.common import BIN, die, run_ok
from harness.files import read_input
from harness.results import Int, ListOf, Num, Obj

KINDS = {"pairs": "minimal pairs", "cloze": "cloze", "choice": "multiple choice"}
CHANCE = {"pairs": "0.5", "cloze": "about 0", "choice": "1 / endings"}
NAME = re.compile(r"[A-Za-z0-9_-]{1,40}")
FIRST_LINE = 65536 + 2  # bin/eval's longest line, and its line end


def kind_of(path, what):
    """The kind of bin/eval task file path is, from its first non-empty line (see the module's comment)."""
    head = read_input(path, FIRST_LINE * 4, what, head=True).decode("utf-8", "replace")
    line = next((x for x in head.splitlines() if x.strip()), None)
    if line is None:
        die(f"{what}: '{path}' has no line to score")
    if not line.lstrip().startswith("{"):
        return "cloze"
    try:
        item = json.loads(line)
    except ValueError:
        die(f"{what}: the first line of '{path}' opens like a JSON object and is not one: give BLiMP's or "
            "HellaSwag's JSON lines, or LAMBADA's plain text")
    if isinstance(item, dict) and "sentence_good" in item and "sentence_bad" in item:
        return "pairs"
    if isinstance(item, dict) and "ctx" in item and "endings" in item:
        return "choice"
    die(f"{what}: the first line of '{path}' is a JSON object with neither sentence_good and sentence_bad "
        "(minimal pairs) nor ctx and endings (multiple choice)")


def parse_evals(items):
    """[(name, kind, path)] of --evals NAME=FILE ...; dies with one line, before any work, on a bad one."""
    evals = []
    for item in items or []:
        name, eq, path = item.partition("=")
        what = f"--evals '{item}'"
        if not eq or not NAME.fullmatch(name):
            die(f"{what}: give NAME=FILE, NAME of letters, digits, '_' and '-' (at most 40)")
        if any(name == n for n, _, _ in evals):
            die(f"{what}: two evaluations are named {name}")
        if not os.path.isfile(path):
            die(f"{what}: '{path}' is not a file (bash data/fetch_evals.sh fetches the public sets)")
        evals.append((name, kind_of(path, what), path))
    return evals


def score(ckpt, evals, threads):
    """{name: bin/eval --KIND FILE --json's object for the kind} of a checkpoint."""
    return {name: run_ok([os.path.join(BIN, "eval"), "--model", ckpt, "--" + kind, path, "--json", "--threads",
                          str(threads)], status=2).json()[kind] for name, kind, path in evals}


def schema(evals):
    """What scores.json keeps of each evaluation (bin/eval's JSON), as read back."""
    def one(kind):
        extra = ({"accuracy_norm": Num(0, 1, optional=True)} if kind == "choice" else
                 {"perplexity": Num(0, finite=False, optional=True)} if kind == "cloze" else {})
        return Obj({"scored": Int(0), "correct": Int(0), "accuracy": Num(0, 1, optional=True),
                    "interval": ListOf(Num(0, 1), min_len=2, optional=True), **extra})
    return Obj({name: one(kind) for name, kind, _ in evals})


def columns(evals):
    """[(csv column, what it holds)] of the evaluations: accuracy (and acc_norm for multiple choice, the last
    word's perplexity for cloze), and the items scored."""
    cols = []
    for name, kind, _ in evals:
        cols.append((f"eval_{name}_acc", (name, "accuracy")))
        if kind == "choice":
            cols.append((f"eval_{name}_acc_norm", (name, "accuracy_norm")))
        if kind == "cloze":
            cols.append((f"eval_{name}_word_ppl", (name, "perplexity")))
        cols.append((f"eval_{name}_scored", (name, "scored")))
    return cols


def row_values(scores, evals):
    """{csv column: value} of one run's evaluations."""
    return {col: scores.get(name, {}).get(key) for col, (name, key) in columns(evals)}


def describe(name, kind, scored):
    """'blimp (minimal pairs, 2,000 items scored; chance 0.5)'."""
    return f"{name} ({KINDS[kind]}, {scored:,} item{'s' if scored != 1 else ''} scored; chance {CHANCE[kind]})"
