"""The harnesses' readers of results files, fuzzed with Hypothesis (Debian's
python3-hypothesis): compare.csv, paper_settings.json, a training log and an
ablation file as harness.paper --report-only reads them, a sweep's run's
scores.json as harness.compare --report-only reads it, zoology.json
(--report-only and --resume's check of its settings), probe.json, and an
experiment file as harness.compare, harness.paper and harness.probe read it
(--config: each value through its option's type and choices). Each
input is a good file mutated (a value replaced by any JSON value or CSV
cell, a key or a column dropped, a key added, a run repeated, bytes spliced
in, or something else entirely); the harness then reads it and writes its
report in-process, and must either accept it, with values that keep the
schema's promises, or exit 2 with one printable line: any other exception
fails. The plots' scripts are checked instead of run: no line of them may
start with gnuplot's '!' or hold a backquote or system(.

/usr/bin/python3 -m tests.fuzz.harness_fuzz             a fixed set of inputs (make test)
/usr/bin/python3 -m tests.fuzz.harness_fuzz --seconds N random inputs for about N seconds in all (make fuzz)"""
import argparse
import atexit
import contextlib
import copy
import csv
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock

# Hypothesis keeps a cache of Unicode tables: in the temporary folder, not the working tree.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "lm-hypothesis"))
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402 (after its setting)

from harness import compare, paper, probe, zoology
from harness.archs import size_archs
from harness.lib import probe_report, zoology_report
from harness.lib.compare import plots as compare_plots
from harness.lib.paper import report as paper_report, runs as paper_runs, setup as paper_setup
from harness.config import is_switch
from harness.results import name_problem, read_train_log
from tests.harness.compare_test import tiny_data
from tests.harness.harness_config_test import parsed
from tests.harness.harness_harden_test import PAPER_COLUMNS, paper_rows, probe_rows, zoology_rows

# Strings that have broken a reader somewhere, or should be refused by one.
INTERESTING = ["", "0", "-0", "-1", "1e999", "-1e999", "nan", "NaN", "inf", "-inf", "Infinity", "1.5", "1e-320", "x",
               "'", '"', "\n", "\r\n", "../x", "a/b", "..", "a:b", "0:1", "attention", "grassmann", "tokens:1000",
               "seconds:nan", "a'!touch PWNED", "`touch PWNED`", "system('touch PWNED')", "\x00", "\x1b]0;T\x07",
               "\u2028", "\ufeff", "9" * 30, "True", "null", "[]", "{}"]
leaves = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.floats(), st.text(max_size=12),
                   st.sampled_from(INTERESTING))
json_values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=3) |
                           st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)
# Half of the cells from INTERESTING: a random string seldom lands on 0 or -1 in a number's column.
cells = st.one_of(st.sampled_from(INTERESTING), st.one_of(st.text(max_size=12), st.integers(-2 ** 70, 2 ** 70).map(str),
                                                          st.floats().map(repr)))

# What each input was made as, and what became of it: the counts --seconds reports.
tally = {}


def splice(draw, data):
    """data (bytes) with a few bytes at a drawn place replaced by drawn ones."""
    i = draw(st.integers(0, len(data)))
    j = draw(st.integers(i, min(len(data), i + 8)))
    return data[:i] + draw(st.binary(max_size=6)) + data[j:]


def dict_nodes(value):
    """Every JSON object in value, outermost first."""
    found = [value] if isinstance(value, dict) else []
    for v in value.values() if isinstance(value, dict) else value if isinstance(value, list) else []:
        found += dict_nodes(v)
    return found


def mutated_json(draw, good):
    """(how, bytes): the JSON document good, changed one drawn way."""
    how = draw(st.sampled_from(["as is", "value", "drop key", "add key", "repeat run", "splice bytes", "any JSON"]))
    doc = copy.deepcopy(good)
    if how == "any JSON":
        doc = draw(json_values)
    nodes = dict_nodes(doc)
    if how in ("value", "drop key", "add key") and nodes:
        node = draw(st.sampled_from(nodes))
        key = draw(st.sampled_from(sorted(node))) if node else None
        if how == "value" and key is not None:
            node[key] = draw(json_values)
        elif how == "drop key" and key is not None:
            del node[key]
        else:
            node[draw(st.text(max_size=8))] = draw(json_values)
    if how == "repeat run" and isinstance(doc, list) and doc:
        doc.append(copy.deepcopy(draw(st.sampled_from(doc))))
    data = json.dumps(doc).encode()  # NaN and Infinity as Python writes them: readers must refuse them
    return how, splice(draw, data) if how == "splice bytes" else data


def mutated_csv(draw, columns, rows):
    """(how, bytes): the CSV table of rows (dicts over columns), changed one drawn way."""
    how = draw(st.sampled_from(["as is", "cell", "drop column", "repeat run", "short row", "splice bytes",
                                "any text"]))
    columns, rows = list(columns), [dict(r) for r in rows]
    if how == "cell":
        draw(st.sampled_from(rows))[draw(st.sampled_from(columns))] = draw(cells)
    elif how == "drop column":
        columns.remove(draw(st.sampled_from(columns)))
    elif how == "repeat run":
        rows.append(dict(draw(st.sampled_from(rows))))
    data = csv_bytes(columns, rows)
    if how == "short row":
        data += ",".join(draw(st.lists(cells, max_size=3))).encode("utf-8", "surrogatepass") + b"\n"
    elif how == "splice bytes":
        data = splice(draw, data)
    elif how == "any text":
        data = draw(st.text(max_size=200)).encode("utf-8", "surrogatepass")
    return how, data


def check_script(script, output=None):
    """What harness.common.gnuplot gets: nothing in it may run a command."""
    for line in script.splitlines():
        assert not line.lstrip().startswith("!"), line
    assert "`" not in script and "system(" not in script, script


def outcome(call):
    """'accepted' (call's value kept in .value) or 'refused': call may only return, or exit 2 with one
    printable line on stderr. Any other exception is the fuzzer's finding and goes up."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            outcome.value = call()
    except SystemExit as e:
        lines = err.getvalue().strip().splitlines()
        assert e.code == 2, (e.code, err.getvalue())
        assert len(lines) == 1 and lines[0].isprintable(), err.getvalue()
        return "refused"
    return "accepted"


# ---- the targets: where the file goes, how a good one looks, what reads it ------------------------

def run_paper(out):
    """harness.paper --report-only on the pre-norm column, after its reader alone, whose accepted rows
    must keep compare.csv's schema."""
    args = argparse.Namespace(lr=1e-3, warmup_iters=100)
    if outcome(lambda: paper_runs.read_runs(out, "pre", paper_setup.archs_for(6), args)) == "accepted":
        rows = outcome.value
        assert len({(r["name"], r["seed"]) for r in rows}) == len(rows), rows
        for r in rows:
            assert name_problem(r["name"]) is None and isinstance(r["seed"], int), r
            for k in ("val_ppl", "test_ppl", "tok_s"):
                assert math.isfinite(r[k]) and r[k] > 0, r
            assert r["lr"] > 0 and isinstance(r["warmup_iters"], int), r
    argv = ["paper", "--out", out, "--report-only", "--data", out, "--norms", "pre"]
    with mock.patch.object(sys, "argv", argv), mock.patch.object(paper_report, "gnuplot", check_script):
        return outcome(paper.main)


def run_zoology(out):
    """harness.probe --zoology --report-only, after its reader and --resume's check of the settings."""
    if outcome(lambda: zoology_report.read_rows(out)) == "accepted":
        rows = outcome.value
        for r in rows:
            assert 0 <= r["accuracy"] <= 1 and name_problem(r["arch"]) is None and r["state_floats"] > 0, r
        outcome(lambda: zoology_report.check_settings(rows, zoology_rows()[0]["settings"], out))
    with mock.patch.object(zoology_report, "gnuplot", check_script):
        return outcome(lambda: zoology.main(["--out", out, "--report-only"]))


def run_probe(out):
    """harness.probe --report-only, after its reader."""
    if outcome(lambda: probe_report.read_rows(out)) == "accepted":
        for r in outcome.value:
            assert 0 <= r["accuracy"] <= 1 and (r["task"] == "mqar") == (r["pairs"] is not None), r
            assert r["task"] == "mqar" or r["distance"] is not None, r
    argv = ["probe", "--out", out, "--report-only"]
    with mock.patch.object(sys, "argv", argv), mock.patch.object(probe_report, "gnuplot", check_script):
        return outcome(probe.main)


# A finished one-run compare sweep (tiny: trained once per process), whose scores.json is fuzzed: the sweep's
# command, its files but the checkpoints, and its architecture as sized (so that no input trains or sizes).
SWEEP = {}
SWEEP_RUN = "attention_tokens_1337"


def compare_sweep():
    if not SWEEP:
        base = tempfile.mkdtemp(prefix="lm-harness-fuzz-sweep-")
        atexit.register(shutil.rmtree, base, True)
        data, out = tiny_data(base), os.path.join(base, "out")
        args = ["--data", data, "--archs", "attention", "--budget", "tokens:640", "--seeds", "1", "--n-layer", "1",
                "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "4", "--threads", "1",
                "--eval-iters", "2", "--warmup-iters", "2", "--curve-points", "2"]
        subprocess.run([sys.executable, "-m", "harness.compare", "--out", out] + args, check=True, capture_output=True)
        sized = []
        with mock.patch.object(compare, "size_archs", lambda *x, **k: sized.append(size_archs(*x, **k)) or sized[-1]):
            run_compare_report(out, args)
        with open(os.path.join(out, SWEEP_RUN, "scores.json")) as f:
            SWEEP.update(base=base, out=out, args=args, archs=sized[0], scores=json.load(f))
    return SWEEP


def run_compare_report(out, args):
    argv = ["compare", "--out", out, "--report-only"] + args
    with mock.patch.object(sys, "argv", argv), mock.patch.object(compare_plots, "gnuplot", check_script):
        return outcome(compare.main)


def run_scores(out):
    """harness.compare --report-only of the sweep, the run's scores.json fuzzed (the sizing taken as done)."""
    sweep = compare_sweep()
    os.makedirs(os.path.join(out, SWEEP_RUN), exist_ok=True)
    shutil.copy(os.path.join(sweep["out"], "sweep.json"), out)
    shutil.copy(os.path.join(sweep["out"], SWEEP_RUN, "log.csv"), os.path.join(out, SWEEP_RUN))
    with mock.patch.object(compare, "size_archs", lambda *x, **k: copy.deepcopy(sweep["archs"])), \
            mock.patch.object(compare, "check_train_takes", lambda *x: None):
        return run_compare_report(out, sweep["args"])


def run_paper_log(out):
    path = os.path.join(out, "pre", "transformer_tokens_1337.csv")
    if outcome(lambda: read_train_log(path)) == "accepted":
        for r in outcome.value:
            assert isinstance(r["step"], int) and r["step"] >= 0 and isinstance(r["tokens"], int), r
    return run_paper(out)


def options_kept(ap, options):
    """An accepted --config keeps what the command line promises: a switch is a bool, a number its
    option's type, a value one of its choices, a repeated option a list of strings."""
    for action in ap._actions:
        v = getattr(options, action.dest, None)
        if v is None or action.dest == "help":
            continue
        if is_switch(action):
            assert isinstance(v, bool), (action.dest, v)
        elif isinstance(action, argparse._AppendAction):
            assert isinstance(v, list) and all(isinstance(x, str) for x in v), (action.dest, v)
        else:
            assert type(v) is (action.type or str), (action.dest, v)
            assert action.choices is None or v in action.choices, (action.dest, v)


def run_config(out):
    """An experiment file read by each harness that takes --config, as its main() parses its options."""
    path = os.path.join(out, "c.json")
    became = []
    for module in (compare, paper, probe):
        became.append(outcome(lambda: parsed(module, ["--config", path], parser=True)))
        if became[-1] == "accepted":
            options_kept(*outcome.value)
    return "refused" if "refused" in became else "accepted"


# A run folder's config.json and the harnesses' own keys (a budget, architectures, a switch as 0).
GOOD_CONFIG = {"n-layer": 2, "n-head": 2, "n-embd": 32, "block-size": 16, "batch-size": 4, "lr": 0.001,
               "min-lr": 0.0001, "warmup-iters": 2, "dropout": 0.0, "seed": 7, "keep-checkpoints": 0,
               "mixer": "attention", "out": "x.ckpt", "norm": "pre", "precision": "fp32", "budget": "tokens:1000",
               "archs": "attention grassmann", "table": 1, "norms": "pre", "tasks": "mqar", "report-only": False,
               "train-args": "--zero-init 0", "qk-norm": True, "threads": 1}

GOOD_LOG = [{"step": 0, "tokens": 0, "train_loss": "", "val_loss": 9.0, "ms_per_step": ""}] + [
    {"step": i, "tokens": 100 * i, "train_loss": 6.0 - i, "val_loss": 6.5 - i, "ms_per_step": 10.0} for i in (1, 2)]
GOOD_ABLATION = {"tokens": 4096, "plain_loss": 5.25, "delta": {"0:1": 0.5, "0:2": 0.01, "1:1": 0.2}}

# name: (the file under OUT, how an input is drawn, what reads it)
TARGETS = {
    "compare.csv": ("pre/compare.csv", lambda d: mutated_csv(d, PAPER_COLUMNS, paper_rows()), run_paper),
    "paper_settings.json": ("pre/paper_settings.json",
                            lambda d: mutated_json(d, {"lr": 0.001, "warmup_iters": 100}), run_paper),
    "training log": ("pre/transformer_tokens_1337.csv",
                     lambda d: mutated_csv(d, list(GOOD_LOG[0]), GOOD_LOG), run_paper_log),
    "ablation json": ("pre/ablation_grassmann_1337.json", lambda d: mutated_json(d, GOOD_ABLATION), run_paper),
    "zoology.json": ("zoology.json", lambda d: mutated_json(d, zoology_rows()), run_zoology),
    "probe.json": ("probe.json", lambda d: mutated_json(d, probe_rows()), run_probe),
    "--config": ("c.json", lambda d: mutated_json(d, GOOD_CONFIG), run_config),
    "scores.json": (f"{SWEEP_RUN}/scores.json", lambda d: mutated_json(d, compare_sweep()["scores"]), run_scores),
}


def good_column(out):
    """A good pre-norm compare.csv, beside which the paper's other files are fuzzed."""
    os.makedirs(os.path.join(out, "pre"), exist_ok=True)
    with open(os.path.join(out, "pre", "compare.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(PAPER_COLUMNS)
        for r in paper_rows():
            w.writerow([r[k] for k in PAPER_COLUMNS])


def try_input(name, how, content):
    """One input to one target, in a folder of its own; counted in tally."""
    where, _, read = TARGETS[name]
    with tempfile.TemporaryDirectory(prefix="lm-harness-fuzz-") as out:
        if where.startswith("pre/"):
            good_column(out)
        os.makedirs(os.path.dirname(os.path.join(out, where)), exist_ok=True)
        with open(os.path.join(out, where), "wb") as f:
            f.write(content)
        became = read(out)
    key = (name, how, became)
    tally[key] = tally.get(key, 0) + 1
    return became


def fuzz_test(name, examples, derandomize):
    """A Hypothesis test of one target: `examples` inputs, the same ones each run with derandomize."""
    @settings(max_examples=examples, derandomize=derandomize, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def test(data):
        try_input(name, *TARGETS[name][1](data.draw))
    return test


# The values every field of a good file is set to in turn (make test): the edges of the schemas.
EDGE_CELLS = ["", "0", "-1", "-0", "1.5", "nan", "inf", "1e999", "x", "'", "../x", "99999999999999999999"]
EDGE_JSON = [None, True, 0, -1, -0.0, 1.5, 2 ** 64, "", "x", "1", "../x", [], {}, [1], {"a": 1}]
# --config's edges: an option of each kind (a switch, an integer, a number, choices, a list, a string,
# a key no harness takes), not all of them.
EDGE_KEYS = {"--config": ("keep-checkpoints", "report-only", "n-layer", "lr", "norm", "table", "budget", "archs",
                          "mixer"),
             "scores.json": ("loss", "recall_tokens", "recall_loss", "load", "cores")}
GOOD_JSON = {"paper_settings.json": {"lr": 0.001, "warmup_iters": 100}, "ablation json": GOOD_ABLATION,
             "zoology.json": zoology_rows(), "probe.json": probe_rows(), "--config": GOOD_CONFIG,
             "scores.json": None}  # the sweep's, made when first read (every_edge)


def csv_bytes(columns, rows):
    f = io.StringIO(newline="")
    w = csv.writer(f)
    w.writerow(columns)
    for r in rows:
        w.writerow([r.get(k, "") for k in columns])
    return f.getvalue().encode()


def every_edge():
    """(target, how, bytes): each field of each good file set to each edge value, one at a time."""
    for name, columns, rows in (("compare.csv", PAPER_COLUMNS, paper_rows()),
                                ("training log", list(GOOD_LOG[0]), GOOD_LOG)):
        for col in columns:
            for v in EDGE_CELLS:
                changed = [dict(r) for r in rows]
                changed[-1][col] = v
                yield name, "edge", csv_bytes(columns, changed)
    for name, good in GOOD_JSON.items():
        good = compare_sweep()["scores"] if good is None else good
        for path in range(len(dict_nodes(good))):
            for key in sorted(set(dict_nodes(good)[path]) & set(EDGE_KEYS.get(name, dict_nodes(good)[path]))):
                for v in EDGE_JSON:
                    doc = copy.deepcopy(good)
                    dict_nodes(doc)[path][key] = v
                    yield name, "edge", json.dumps(doc).encode()


class Fuzz(unittest.TestCase):
    """A fixed set of inputs per reader: every field at every edge value, then Hypothesis's
    (derandomized, so the same on every run)."""
    EXAMPLES = 50

    def test_every_field_at_its_edges(self):
        became = [try_input(*case) for case in every_edge()]
        self.assertGreater(became.count("refused"), len(became) // 2)

    def test_readers(self):
        for name in TARGETS:
            with self.subTest(name):
                fuzz_test(name, self.EXAMPLES, True)()
        for name in TARGETS:  # a good file is read: the readers do not merely refuse everything
            self.assertTrue(tally.get((name, "as is", "accepted")), f"{name}: no good file was accepted")


def main():
    ap = argparse.ArgumentParser(description="Fuzz the harnesses' readers of results files.")
    ap.add_argument("--seconds", type=float, help="random inputs for about this long, shared by the readers")
    a, rest = ap.parse_known_args()
    if a.seconds is None:
        sys.argv[1:] = rest  # unittest's: a test's name
        return unittest.main(verbosity=2)
    share = a.seconds / len(TARGETS)
    for name in TARGETS:
        stop = time.monotonic() + share
        while time.monotonic() < stop:
            fuzz_test(name, 50, False)()
        counts = {k[1:]: n for k, n in tally.items() if k[0] == name}
        total = sum(counts.values())
        print(f"harness_fuzz: {name}: {total} inputs, " + ", ".join(
            f"{how} {n} {became}" for (how, became), n in sorted(counts.items())), flush=True)


if __name__ == "__main__":
    main()
