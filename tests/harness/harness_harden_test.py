"""The harnesses treat results files and names as untrusted data: nothing
pasted into a gnuplot script runs (its '!' and system() would run shell
commands), architecture names cannot reach outside --out, and every reader
of a results file, and compare's options, refuse bad input in one line with
exit 2, never a traceback. Each hostile case runs the harness as a user
would, in a temporary folder, and checks that no PWNED file appeared.
Run from the repository root after make: /usr/bin/python3 -m tests.harness.harness_harden_test"""
import contextlib
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from harness.common import BIN, ROOT, gnuplot_string
from harness import registry
from harness.archs import parse_archs
from harness.results import Invalid, Num, name_problem
from tests.harness.compare_test import tiny_data

ENV = dict(os.environ, PYTHONPATH=ROOT)
# compare at toy size: a second of training per run, where it gets that far
TINY = ["--n-layer", "1", "--n-head", "2", "--n-embd", "32", "--block-size", "16", "--batch-size", "4",
        "--budget", "tokens:640", "--seeds", "1", "--threads", "1", "--curve-points", "2", "--eval-iters", "2"]


def harness(module, args, cwd):
    """python3 -m MODULE ARGS run in cwd: (exit status, stderr)."""
    p = subprocess.run([sys.executable, "-m", module] + args, cwd=cwd, env=ENV, capture_output=True, text=True,
                       timeout=300)
    return p.returncode, p.stderr


class Hostile(unittest.TestCase):
    """Helpers: a refusal is exit 2 with one line on stderr, and nothing ran."""

    def refused(self, module, args, cwd, text=None):
        status, err = harness(module, args, cwd)
        self.assertEqual(status, 2, f"{args}: {err[-1500:]}")
        self.assertEqual(len(err.strip().splitlines()), 1, err[-1500:])
        if text:
            self.assertIn(text, err)
        self.assertFalse(os.path.exists(os.path.join(cwd, "PWNED")), "a command from the data ran")
        return err


class GnuplotStrings(unittest.TestCase):
    HOSTILE = ["plain", "it's", "''", "'", "'''", "'a", "a'", "!touch PWNED", "'!touch PWNED", "x' . system('touch PWNED') . '", "`touch PWNED`",
               "@macro", "\\n", '"', 'a"`touch PWNED`"b', "$(touch PWNED)", "é ünïcode", "' ; !touch PWNED ; '"]

    @unittest.skipUnless(shutil.which("gnuplot"), "needs gnuplot")
    def test_gnuplot_prints_them_and_runs_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            script = "set macros\nmacro = 'touch PWNED'\n" + "".join(f"print {gnuplot_string(s)}\n"
                                                                         for s in self.HOSTILE)
            p = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True, cwd=tmp)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stderr.splitlines(), self.HOSTILE)  # gnuplot's print writes to stderr
            self.assertEqual(os.listdir(tmp), [])

    def test_control_characters_refused(self):
        for s in ("a\nb", "a\rb", "\x1b]0;T\x07", "tab\there", "nul\x00"):
            with self.assertRaises(SystemExit) as e, contextlib.redirect_stderr(io.StringIO()):
                gnuplot_string(s)
            self.assertEqual(e.exception.code, 2)


class Names(unittest.TestCase):
    def test_names(self):
        for good in ("attention", "hybrid", "a.b_c-1", "grassmann,attention"):
            self.assertIsNone(name_problem(good), good)
        for bad in ("", "..", "a..b", "../x", "a/b", "a b", "x'y", "a\nb", "tab\t", "é", "$(x)", "a,b"):
            self.assertIsNotNone(name_problem(bad), bad)

    def test_parse_archs_refuses(self):
        for spec in ("attention ../../outside=attention", "x'.system('touch PWNED').'=attention", "=attention",
                     "a/b=grassmann"):
            with self.assertRaises(SystemExit) as e, contextlib.redirect_stderr(io.StringIO()):
                parse_archs(spec, 1)
            self.assertEqual(e.exception.code, 2)
        self.assertEqual([(x.name, x.mixers) for x in parse_archs("attention h=grassmann", 2)],
                         [("attention", ["attention"] * 2), ("h", ["grassmann"] * 2)])


class NumberCells(unittest.TestCase):
    def test_whitespace_around_a_number(self):
        """A cell with whitespace str.strip() removes but float() does not ('\x1c', found by
        tests/fuzz/harness_fuzz.py) reads as its number, never a traceback; a letter is still refused."""
        self.assertEqual(Num(0).text("1.9\x1c"), 1.9)
        self.assertEqual(Num(0).text(" 2.5\t"), 2.5)
        with self.assertRaises(Invalid):
            Num(0).text("1.9x")


@unittest.skipUnless(os.path.exists(os.path.join(BIN, "prepare")) and shutil.which("gnuplot"),
                     "needs make (bin/prepare) and gnuplot")
class Compare(Hostile):
    """harness.compare on real (tiny) data, so that today's checks are what stops each case, not a
    missing data folder."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lm-harden-")
        self.data = tiny_data(self.tmp)
        self.addCleanup(shutil.rmtree, self.tmp)

    def compare(self, *args, text=None):
        return self.refused("harness.compare", ["--data", self.data] + TINY + list(args), self.tmp, text)

    def test_arch_name_does_not_run_in_gnuplot(self):
        self.compare("--out", "o", "--archs", "attention x'.system('touch${IFS}PWNED').'=attention", text="--archs")

    def test_out_with_a_line_break_does_not_run_in_gnuplot(self):
        self.compare("--out", "o\n!touch PWNED\n#", "--archs", "attention", text="control characters")

    def test_arch_name_stays_under_out(self):
        os.makedirs(os.path.join(self.tmp, "cmp", "o1"))
        planted = os.path.join(self.tmp, "outside_tokens_1337.csv")
        with open(planted, "w") as f:
            f.write("keep me\n")
        self.compare("--out", os.path.join(self.tmp, "cmp", "o1"), "--archs", "attention ../../outside=attention",
                     text="'../../outside'")
        with open(planted) as f:
            self.assertEqual(f.read(), "keep me\n")
        self.assertEqual(sorted(os.listdir(self.tmp)), ["cmp", "d", "outside_tokens_1337.csv", "t.txt"])
        self.assertEqual(os.listdir(os.path.join(self.tmp, "cmp", "o1")), [])

    def test_quoted_names_plot(self):
        """Names and a folder with quotes and spaces reach gnuplot as text: the plots are drawn."""
        out = os.path.join(self.tmp, "it's a \"folder\" `x`")
        status, err = harness("harness.compare", ["--data", self.data] + TINY + [
            "--out", out, "--archs", "attention g.1_x-y=grassmann", "--warmup-iters", "2", "--grassmann-windows", "1,2"],
                              self.tmp)
        self.assertEqual(status, 0, err[-2000:])
        for png in ("val_loss_tokens.png", "loss_by_position.png", "recall_split.png"):
            self.assertGreater(os.path.getsize(os.path.join(out, png)), 1000, png)
        self.assertEqual(sorted(os.listdir(self.tmp)), sorted(["d", "t.txt", os.path.basename(out)]))

    def test_options(self):
        self.compare("--out", "o", "--train-args", "'", text="--train-args")
        self.compare("--out", "o", "--budget", "tokens:nan", text="--budget")
        self.compare("--out", "o", "--budget", "seconds:inf", text="--budget")
        self.compare("--out", "o", "--curve-points", "0", text="--curve-points")
        self.compare("--out", "o", "--batch-size", "0", text="--batch-size")
        with open(os.path.join(self.tmp, "afile"), "w") as f:
            f.write("x")
        self.compare("--out", os.path.join(self.tmp, "afile"), text="is not a directory")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "o")))  # each refused before any work


# ---- the readers: paper's compare.csv, settings, logs and ablations; zoology.json; probe.json ----------

PAPER_COLUMNS = ["arch", "budget", "seed", "params", "steps", "tokens", "train_seconds", "wall", "tok_s", "val_loss",
                 "val_ppl", "test_loss", "test_ppl", "recall_loss", "other_loss", "recall_tokens", "other_tokens",
                 "mixers", "grassmann_rank", "precision", "val_bpb", "val_word_ppl", "test_bpb", "test_word_ppl",
                 "grassmann_pair", "attn_window"]


def paper_rows():
    """compare.csv's rows of a good pre-norm column of make paper (Table 1), one seed."""
    rows = []
    for name, mixers, rank in (("transformer", "attention", ""), ("grassmann", "grassmann", 32),
                               ("hybrid", "attention" + ",grassmann" * 5, 32)):
        spec = ",".join([mixers] * 6) if "," not in mixers else mixers
        rows.append({"arch": name, "budget": "tokens:1000", "seed": 1337, "params": 6868992, "steps": 10,
                     "tokens": 1000, "train_seconds": 1.0, "wall": 2.0, "tok_s": 1000.0, "val_loss": 5.3,
                     "val_ppl": 200.0, "test_loss": 5.3, "test_ppl": 201.0, "recall_loss": 3.0, "other_loss": 5.0,
                     "recall_tokens": 10, "other_tokens": 90, "mixers": spec, "grassmann_rank": rank,
                     "precision": "fp32", "val_bpb": 1.9, "val_word_ppl": 300.0, "test_bpb": 1.9,
                     "test_word_ppl": 300.0, "grassmann_pair": "wedge" if rank else "", "attn_window": ""})
    return rows


def write_compare_csv(path, rows, columns=PAPER_COLUMNS):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for r in rows:
            w.writerow([r.get(k, "") for k in columns])


def zoology_rows():
    settings = {"vocab": 64, "steps": 20, "batch_tokens": 2048, "warmup_iters": 2, "train_seqs": 200, "val_seqs": 20,
                "n_layer": 2, "n_head": 1, "grassmann_windows": "1,2,4", "data_seed": 1337}
    return [{"arch": arch, "seq_len": 16, "pairs": 2, "n_embd": 16, "lr": 0.001, "seed": 1337, "accuracy": 0.5,
             "answer_loss": 1.0, "answers": 40, "params": 1000, "grassmann_rank": rank, "state_floats": state,
             "pos": pos, "steps": 20, "train_seconds": 1.0, "settings": settings, "family": family,
             "grassmann_pair": pair, "attn_window": window}
            for arch, rank, state, pos, family, pair, window in (
                ("attention", None, 1024, "rope", "attention", None, None),
                ("grassmann", 8, 64, "learned", "grassmann", "wedge", None),
                ("swa", None, 256, "rope", "sliding-window attention", None, 4))]


def probe_rows():
    rows = []
    for arch, rank, pos in (("attention", None, "rope"), ("grassmann", 8, "learned")):
        rows.append({"arch": arch, "task": "mqar", "seq_len": 16, "pairs": 4, "n_embd": 64, "seed": 1337,
                     "accuracy": 0.5, "answer_loss": 1.0, "answers": 40, "params": 1000, "grassmann_rank": rank,
                     "pos": pos, "distance": None, "steps": 30, "train_seconds": 1.0,
                     "curriculum": {"pairs": 2, "steps": 20}, "grassmann_pair": "wedge" if rank else None,
                     "attn_window": None})
        rows.append({"arch": arch, "task": "copy", "seq_len": 32, "gap": 4, "n_embd": 64, "seed": 1337,
                     "accuracy": 0.5, "answer_loss": 1.0, "answers": 40, "params": 1000, "grassmann_rank": rank,
                     "pos": pos, "distance": 9, "steps": 10, "train_seconds": 1.0, "curriculum": None})
    return rows


def write_json(path, value):
    with open(path, "w") as f:
        f.write(value if isinstance(value, str) else json.dumps(value))


@unittest.skipUnless(shutil.which("gnuplot"), "needs gnuplot")
class Readers(Hostile):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lm-readers-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def fresh(self, name):
        out = os.path.join(self.tmp, name)
        os.makedirs(out)
        return out

    def paper(self, name, rows=None, settings=None, log=None, ablation=None, text=None, csv_text=None):
        """paper --report-only on a pre-norm column with these rows (or this compare.csv text), settings,
        a training log of the first run, an ablation file; returns the error line."""
        out = self.fresh(name)
        os.makedirs(os.path.join(out, "pre"))
        path = os.path.join(out, "pre", "compare.csv")
        if csv_text is not None:
            write_json(path, csv_text)
        else:
            write_compare_csv(path, paper_rows() if rows is None else rows)
        if settings is not None:
            write_json(os.path.join(out, "pre", "paper_settings.json"), settings)
        if log is not None:
            write_json(os.path.join(out, "pre", "transformer_tokens_1337.csv"), log)
        if ablation is not None:
            write_json(os.path.join(out, "pre", "ablation_grassmann_1337.json"), ablation)
        return self.refused("harness.paper", ["--out", out, "--report-only", "--data", out, "--norms", "pre"],
                            self.tmp, text)

    def test_paper_good_column_reads(self):
        out = self.fresh("good 'quoted' `x`")  # its plot's path reaches gnuplot as text
        os.makedirs(os.path.join(out, "pre"))
        write_compare_csv(os.path.join(out, "pre", "compare.csv"), paper_rows())
        write_json(os.path.join(out, "pre", "transformer_tokens_1337.csv"),
                   "step,tokens,train_loss,val_loss,ms_per_step\n0,0,,9.0,\n1,100,6.0,6.5,10.0\n2,200,5.0,5.5,10.0\n")
        status, err = harness("harness.paper", ["--out", out, "--report-only", "--data", out], self.tmp)
        self.assertEqual(status, 0, err)
        self.assertGreater(os.path.getsize(os.path.join(out, "paper_val_loss.png")), 1000)

    def test_paper_compare_csv(self):
        def changed(i, **kv):
            rows = paper_rows()
            rows[i].update(kv)
            return rows
        self.paper("ppl0", changed(1, val_ppl=0), text="'val_ppl' must be above 0")
        self.paper("ppl-neg", changed(0, val_ppl=-5), text="'val_ppl' must be above 0")
        self.paper("ppl-nan", changed(0, val_ppl="nan"), text="'val_ppl' must be a number")
        self.paper("ppl-inf", changed(0, test_ppl="inf"), text="'test_ppl' must be finite")
        self.paper("seed-str", changed(2, seed="x"), text="'seed' must be an integer")
        self.paper("seed-float", changed(2, seed="1.5"), text="'seed' must be an integer")
        self.paper("tok_s-0", changed(0, tok_s=0), text="'tok_s' must be above 0")
        self.paper("dup", paper_rows() + paper_rows()[:1], text="repeats a run")
        self.paper("arch-path", changed(0, arch="../x"), text="'arch'")
        self.paper("arch-other", changed(0, arch="other"), text="is not one of")
        self.paper("mixers", changed(0, mixers="attention;rm"), text="'mixers'")
        self.paper("pair", changed(1, grassmann_pair="cross"),
                   text="'grassmann_pair' is not a value of bin/train --grassmann-pair: grassmann pair map must be")
        self.paper("window", changed(0, attn_window="-1"), text="'attn_window' must be in [0,")
        out = self.fresh("no-column")
        os.makedirs(os.path.join(out, "pre"))
        write_compare_csv(os.path.join(out, "pre", "compare.csv"), paper_rows(),
                          [k for k in PAPER_COLUMNS if k != "val_ppl"])
        self.refused("harness.paper", ["--out", out, "--report-only", "--data", out], self.tmp, "no column 'val_ppl'")
        self.paper("short-row", csv_text=",".join(PAPER_COLUMNS) + "\ntransformer,tokens:1000\n", text="row 2 has 2")
        self.paper("nul", csv_text=",".join(PAPER_COLUMNS) + "\n\0\n", text="compare.csv")
        self.paper("empty", csv_text="", text="is empty")
        out = self.fresh("not-utf8")
        os.makedirs(os.path.join(out, "pre"))
        with open(os.path.join(out, "pre", "compare.csv"), "wb") as f:
            f.write(b"arch\n\xff\xfe\n")
        self.refused("harness.paper", ["--out", out, "--report-only", "--data", out], self.tmp, "not UTF-8")
        out = self.fresh("dir")
        os.makedirs(os.path.join(out, "pre", "compare.csv"))
        self.refused("harness.paper", ["--out", out, "--report-only", "--data", out], self.tmp, "is a directory")

    def test_paper_settings_log_ablation(self):
        self.paper("lr-x", settings={"lr": "x"}, text="'lr' must be a number")
        self.paper("lr-0", settings={"lr": 0}, text="'lr' must be above 0")
        self.paper("warmup-list", settings={"warmup_iters": [1]}, text="'warmup_iters' must be an integer")
        self.paper("settings-list", settings=[], text="must be an object")
        self.paper("settings-key", settings={"lr": 1e-3, "lr ": 1}, text="has a key it should not")
        self.paper("settings-nan", settings='{"lr": NaN}', text="NaN")
        self.paper("settings-dup", settings='{"lr": 0.1, "lr": 0.2}', text="twice")
        self.paper("log-str", log="step,tokens,train_loss,val_loss,ms_per_step\n0,0,,x,\n", text="'val_loss'")
        self.paper("log-tokens", log="step,tokens,train_loss,val_loss,ms_per_step\n0,-1,,5.0,\n", text="'tokens'")
        delta = {"0:1": 0.1}
        self.paper("abl-key", ablation={"tokens": 10, "plain_loss": 5.0, "delta": {"a:b": 0.1}}, text="a:b")
        self.paper("abl-empty", ablation={"tokens": 10, "plain_loss": 5.0, "delta": {}}, text="at least 1")
        self.paper("abl-tokens", ablation={"tokens": "10", "plain_loss": 5.0, "delta": delta}, text="'tokens'")
        self.paper("abl-null", ablation="null", text="is missing or null")
        out = self.fresh("abl-dir")
        os.makedirs(os.path.join(out, "pre", "ablation_grassmann_1337.json"))
        write_compare_csv(os.path.join(out, "pre", "compare.csv"), paper_rows())
        self.refused("harness.paper", ["--out", out, "--report-only", "--data", out], self.tmp, "is a directory")

    def zoology(self, name, rows, text=None, how=("--report-only",)):
        out = self.fresh(name)
        write_json(os.path.join(out, "zoology.json"), rows)
        return self.refused("harness.probe", ["--zoology", "--out", out] + list(how), self.tmp, text)

    def test_zoology_pairs_do_not_run_in_gnuplot(self):
        rows = [dict(r, pairs="4'\n!touch PWNED\nset title '") for r in zoology_rows()]
        self.zoology("pwned", rows, "'pairs' must be an integer")

    def test_zoology_json(self):
        def changed(**kv):
            rows = zoology_rows()
            rows[1].update(kv)
            return rows
        self.zoology("acc", changed(accuracy="0.5"), "'accuracy' must be a number")
        self.zoology("acc-range", changed(accuracy=1.5), "'accuracy' must be at most 1")
        self.zoology("no-arch", [{k: v for k, v in r.items() if k != "arch"} for r in zoology_rows()], "'arch'")
        self.zoology("arch", changed(arch="a'b"), "'arch'")
        self.zoology("lr", changed(lr=-1), "'lr' must be above 0")
        self.zoology("state", changed(state_floats=0), "'state_floats'")
        self.zoology("family", changed(family="transformer"),  # the families the registry has, whatever they are
                     f"'family' must be one of {', '.join(registry.families())} (got 'transformer')")
        self.zoology("pair", changed(grassmann_pair="'!touch PWNED"), "'grassmann_pair' is not a value of bin/train")
        self.zoology("window", changed(attn_window=1.5), "'attn_window' must be an integer")
        self.zoology("dup", zoology_rows() + zoology_rows()[:1], "repeats a run")
        self.zoology("not-list", {"runs": []}, "must be a list")
        self.zoology("entry", [1], "must be an object")
        self.zoology("bool", changed(seed=True), "'seed' must be an integer")
        self.zoology("deep", "[" * 100000 + "]" * 100000, "zoology.json")
        self.zoology("bad-json", "[{", "is not JSON")
        out = self.fresh("dir")
        os.makedirs(os.path.join(out, "zoology.json"))
        self.refused("harness.probe", ["--zoology", "--out", out, "--report-only"], self.tmp, "is a directory")

    def test_zoology_resume_reads_its_state(self):
        rows = zoology_rows()
        rows[0]["settings"] = ["steps", 20]
        self.zoology("resume", rows, "'settings' must be an object",
                     how=["--resume", "--cells", "16:2", "--widths", "16", "--lrs", "1e-3", "--steps", "20"])

    def probe(self, name, rows, text=None):
        out = self.fresh(name)
        write_json(os.path.join(out, "probe.json"), rows)
        return self.refused("harness.probe", ["--out", out, "--report-only"], self.tmp, text)

    def test_probe_json(self):
        def changed(i, **kv):
            rows = probe_rows()
            rows[i].update(kv)
            return rows
        self.probe("copy-distance", changed(1, distance=None), "gap and distance")
        self.probe("mqar-pairs", [{k: v for k, v in r.items() if k != "pairs"} for r in probe_rows()], "pairs")
        self.probe("seq-str", changed(0, seq_len="16"), "'seq_len' must be an integer")
        self.probe("task", changed(0, task="other"), "'task' must be one of")
        self.probe("curriculum", changed(0, curriculum={"pairs": 2}), "'curriculum' 'steps'")
        self.probe("dup", probe_rows() + probe_rows()[:1], "repeats a run")
        self.probe("empty", "", "is not JSON")
        out = self.fresh("it's good")
        write_json(os.path.join(out, "probe.json"), probe_rows())
        status, err = harness("harness.probe", ["--out", out, "--report-only"], self.tmp)
        self.assertEqual(status, 0, err)
        self.assertGreater(os.path.getsize(os.path.join(out, "probe_accuracy.png")), 1000)

    def test_zoology_good_rows_read(self):
        out = self.fresh("it's good")
        write_json(os.path.join(out, "zoology.json"), zoology_rows())
        status, err = harness("harness.probe", ["--zoology", "--out", out, "--report-only"], self.tmp)
        self.assertEqual(status, 0, err)
        self.assertGreater(os.path.getsize(os.path.join(out, "zoology_accuracy.png")), 1000)

    def test_out_is_a_file(self):
        path = os.path.join(self.tmp, "afile")
        write_json(path, "x")
        self.refused("harness.paper", ["--out", path, "--report-only"], self.tmp, "is not a directory")
        self.refused("harness.probe", ["--out", path, "--report-only"], self.tmp, "is not a directory")
        self.refused("harness.probe", ["--zoology", "--out", path, "--report-only"], self.tmp, "is not a directory")
        self.refused("harness.probe", ["--out", "", "--report-only"], self.tmp, "--out is empty")


if __name__ == "__main__":
    unittest.main(verbosity=2)
