"""make compare's statistics and sweeps: what the report may say of a few
seeds (intervals from Student's t with their degrees of freedom, no p-value
and no verdict below 3 seeds, "same on all" where the seeds agree exactly),
runs too short to train named as such, position 0 on the loss-by-position
plot, timings beside the machine's load, the --evals tasks in compare.csv
and compare.md, and a sweep of run folders stopped by SIGINT and finished
with --resume into the same compare.csv as an uninterrupted one. Tiny models
on a few KB of text: seconds. Run from the repository root after make:
/usr/bin/python3 -m tests.harness.compare_sweep_test"""
import csv
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from harness.common import BIN
from harness.lib.compare.report import busy
from harness.lib.runfolders import first_difference
from harness.lib.summary import estimate_cell, p_cell, paired, ratio_cell, ratio_words, verdict
from harness.lib.trained import falls_with_context
from harness.stats import Estimate, t_critical
from tests.harness.compare_test import tiny_data

TINY = ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "4",
        "--threads", "1", "--eval-iters", "2", "--warmup-iters", "2"]
# compare.csv's columns that time a run: the clock and the machine's load differ between any two runs of the
# same sweep, so a stopped and resumed sweep is compared with an uninterrupted one on every other column.
TIMING = {"train_seconds", "wall", "tok_s", "load"}
P_VALUE = re.compile(r"\bp (< ?0|[0-9])")


def compare(args, **kw):
    return subprocess.run([sys.executable, "-m", "harness.compare"] + args, capture_output=True, text=True, **kw)


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def read(path):
    with open(path) as f:
        return f.read()


class Statistics(unittest.TestCase):
    def test_t_intervals(self):
        """Student's t quantiles as the tables give them; an estimate's half-width is t sd / sqrt(n)."""
        self.assertEqual([round(t_critical(df), 3) for df in (1, 2, 10)], [12.706, 4.303, 2.228])
        e = Estimate([1.0, 1.2, 1.1])
        self.assertAlmostEqual(e.half, t_critical(2) * 0.1 / math.sqrt(3), places=12)
        self.assertEqual((e.n, e.df), (3, 2))
        self.assertIsNone(Estimate([2.0, 2.0]).half)  # no spread: no interval

    def test_cells_never_claim_more_than_the_seeds(self):
        """Two identical seeds: "same on all", never "± 0"; a spread below the last digit shown at one
        significant digit; one seed: the value alone."""
        self.assertEqual(estimate_cell([0.02, 0.02], 0, 100), "2 (same on all 2)")
        self.assertEqual(estimate_cell([2.5582, 2.5582], 4), "2.5582 (same on all 2)")
        self.assertEqual(estimate_cell([1.0, 1.00001], 2), "1.00 ± 6e-05")
        self.assertEqual(estimate_cell([3.25], 2), "3.25")
        self.assertEqual(estimate_cell([], 2), "-")
        self.assertNotIn("± 0", estimate_cell([0.5, 0.5000001], 3))

    def test_verdicts_from_three_seeds(self):
        """Below 3 seeds no p-value and no verdict, said in words; from 3 on the paired t-test decides."""
        two = [0.1, 0.12]
        self.assertEqual(verdict(two), "2 seeds: no p-value and no verdict (they need 3 seeds at least)")
        self.assertEqual(p_cell(two), "-")
        self.assertRegex(ratio_words(two), r"^1\.116 \(95% t interval [0-9.]+ to [0-9.]+, 1 degree of freedom\)$")
        clear, unclear = [0.10, 0.11, 0.12], [0.10, -0.05, 0.02]
        self.assertRegex(verdict(clear), r"^a difference: its 95% interval excludes 1 \(paired t, p 0\.0[0-9]+, "
                                         r"2 degrees of freedom\)$")
        self.assertRegex(verdict(unclear), r"^no difference shown: its 95% interval includes 1 \(paired t, p 0\.")
        self.assertEqual(verdict([0.1, 0.1, 0.1]), "the same on all 3 seeds: no spread, so no p-value or verdict")
        lo, hi = (float(x) for x in re.findall(r"[0-9.]+", ratio_cell(clear))[1:])
        self.assertTrue(lo < math.exp(0.11) < hi and lo > 1)
        self.assertEqual(ratio_words([0.05]), f"{math.exp(0.05):.3f} (one seed: no interval)")

    def test_pairs_by_seed(self):
        runs = [{"seed": 2, "x": 5.0}, {"seed": 1, "x": 4.0}, {"seed": 3, "x": 1.0}]
        base = [{"seed": 1, "x": 3.0}, {"seed": 2, "x": 3.5}]
        self.assertEqual(paired(runs, base, "x"), [1.5, 1.0])  # seed 3 has no partner

    def test_context_and_load(self):
        self.assertTrue(falls_with_context([3.0, 2.5, 2.0, 1.9, 1.8, 1.8]))
        self.assertFalse(falls_with_context([3.0, 3.1, 3.2, 3.3]))  # rising with context: nothing learned of it
        self.assertFalse(falls_with_context([None, None]))
        self.assertTrue(falls_with_context([None, 3.0, 2.0, 1.0]))  # the first position scored stands for 0
        self.assertTrue(busy({"load": 2.5, "cores": 2}))
        self.assertFalse(busy({"load": 1.9, "cores": 2}))

    def test_plan_difference_named(self):
        self.assertEqual(first_difference(["bin/train", "--lr", "0.001", "--seed", "1"],
                                          ["bin/train", "--lr", "0.002", "--seed", "1"]), "--lr 0.001 (this command: 0.002)")


@unittest.skipUnless(shutil.which("gnuplot") and os.path.exists(os.path.join(BIN, "train")), "needs make and gnuplot")
class TwoSeeds(unittest.TestCase):
    """One compare of two architectures, 2 seeds of 640 tokens (10 steps: too few to train), scored on a
    minimal-pairs, a cloze and a multiple-choice file as well."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lm-compare-sweep-")
        cls.data, cls.out = tiny_data(cls.tmp), os.path.join(cls.tmp, "out")
        files = {"pairs.jsonl": '{"sentence_good": "line 3 of the sea.", "sentence_bad": "line 3 of sea the."}\n'
                                '{"sentence_good": "the whale 2.", "sentence_bad": "whale the 2."}\n',
                 "cloze.txt": "line 4 of the sea and the whale\nline 5 of the sea and the whale\n",
                 "choice.jsonl": '{"ctx": "line 3 of the", "endings": ["sea", "whale"], "label": 0}\n'}
        for name, text in files.items():
            with open(os.path.join(cls.tmp, name), "w") as f:
                f.write(text)
        cls.evals = [f"{n}={os.path.join(cls.tmp, f)}" for n, f in (("blimp", "pairs.jsonl"), ("lambada", "cloze.txt"),
                                                                   ("hellaswag", "choice.jsonl"))]
        cls.p = compare(["--data", cls.data, "--out", cls.out, "--archs", "attention gla", "--budget", "tokens:640",
                         "--seeds", "2", "--curve-points", "2", "--evals"] + cls.evals + TINY)
        cls.md = read(os.path.join(cls.out, "compare.md"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    def setUp(self):
        self.assertEqual(self.p.returncode, 0, self.p.stderr[-2000:] + self.p.stdout[-2000:])

    def test_two_seeds_print_no_p_value_and_no_verdict(self):
        for text in (self.p.stdout, self.md):
            self.assertIsNone(P_VALUE.search(text), P_VALUE.search(text))
            self.assertNotIn("a difference", text)
            self.assertNotIn("no difference shown", text)
            self.assertNotIn("p vs", text)
        self.assertIn("gla / attention val perplexity = ", self.md)
        self.assertIn(": 2 seeds: no p-value and no verdict (they need 3 seeds at least)", self.md)
        self.assertIn("1 degree of freedom", self.md)
        self.assertIn("With 2 seeds no p-value and no verdict is given", self.md)

    def test_too_small_a_budget_did_not_train(self):
        line = next(l for l in self.md.splitlines() if l.startswith("- **Did not train**: "))
        for arch in ("attention", "gla"):
            for seed in (1337, 1338):
                self.assertIn(f"{arch} tokens:640 seed {seed} (val loss ", line)
        self.assertIn("learned the frequencies and nothing of context", line)
        self.assertNotIn("Every run trained", self.md)

    def test_position_zero_and_load(self):
        """The loss-by-position plot's data start at position 0, drawn at 1 on its log axis; tokens/s is
        marked not comparable exactly where a run's load exceeded its cores."""
        with open(os.path.join(self.out, "by_position_0_0.dat")) as f:
            self.assertEqual(f.readline().split()[0], "1")
        self.assertIn("position + 1", read(os.path.join(self.out, "compare.html")))
        rows = read_csv(os.path.join(self.out, "compare.csv"))
        for arch in ("attention", "gla"):
            hot = any(float(r["load"]) > int(r["cores"]) for r in rows if r["arch"] == arch)
            line = next(l for l in self.md.splitlines() if l.startswith(f"| tokens:640 | {arch} |"))
            self.assertEqual("(not comparable)" in line, hot, line)

    def test_evals_in_the_tables(self):
        """Each task's accuracy per run in compare.csv is bin/eval's on the run's final checkpoint; compare.md
        has the table and a reading line per task."""
        rows = read_csv(os.path.join(self.out, "compare.csv"))
        ckpt = os.path.join(self.out, "gla_tokens_1338", "ckpt")
        got = subprocess.run([os.path.join(BIN, "eval"), "--model", ckpt, "--pairs", os.path.join(self.tmp, "pairs.jsonl"),
                              "--json", "--threads", "1"], capture_output=True, text=True)
        want = json.loads(got.stdout)["pairs"]
        row = next(r for r in rows if r["arch"] == "gla" and r["seed"] == "1338")
        self.assertAlmostEqual(float(row["eval_blimp_acc"]), want["accuracy"], places=6)
        self.assertEqual(int(row["eval_blimp_scored"]), want["scored"])
        for col in ("eval_lambada_acc", "eval_lambada_word_ppl", "eval_hellaswag_acc", "eval_hellaswag_acc_norm"):
            self.assertTrue(all(r[col] != "" for r in rows), col)
        self.assertIn("## Evaluations", self.md)
        self.assertIn("| tokens:640 | gla | ", self.md.split("## Evaluations")[1])
        for what in ("blimp (minimal pairs", "lambada (cloze", "hellaswag (multiple choice"):
            self.assertIn(f"- **{what}", self.md)

    def test_no_recall_token(self):
        """A window too short to hold a 4-gram twice has no recall token (bin/eval: recall_loss null): the
        report and page say '-', and the recall-split plot, which would have no bars, is left out."""
        out = os.path.join(self.tmp, "short")
        tiny = list(TINY)
        tiny[tiny.index("--block-size") + 1] = "4"
        p = compare(["--data", self.data, "--out", out, "--archs", "attention", "--budget", "tokens:640"] + tiny)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        self.assertIn("2 plots (val_loss_tokens.png, loss_by_position.png)", p.stdout)
        self.assertFalse(os.path.exists(os.path.join(out, "recall_split.png")))
        self.assertNotIn("recall_split.png", read(os.path.join(out, "compare.md")))
        self.assertEqual(read_csv(os.path.join(out, "compare.csv"))[0]["recall_loss"], "")

    def test_bad_evals_refused(self):
        bad = os.path.join(self.tmp, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"text": "no known keys"}\n')
        for evals, text in (([f"x={bad}"], "neither sentence_good and sentence_bad"), (["x"], "give NAME=FILE"),
                            ([f"x={self.tmp}/none"], "is not a file")):
            p = compare(["--data", self.data, "--out", os.path.join(self.tmp, "o2"), "--archs", "attention",
                         "--budget", "tokens:640", "--evals"] + evals + TINY)
            self.assertEqual((p.returncode, len(p.stderr.strip().splitlines())), (2, 1), p.stderr)
            self.assertIn(text, p.stderr)


@unittest.skipUnless(shutil.which("gnuplot") and os.path.exists(os.path.join(BIN, "train")), "needs make and gnuplot")
class Resume(unittest.TestCase):
    def test_stopped_sweep_resumed_equals_uninterrupted(self):
        """attention, 2 seeds of 2,000 steps: once straight through, once stopped by SIGINT to harness.compare
        while the second run trains (its folder left with a checkpoint part of the way) and finished with
        --resume (the first run kept, the second continued with bin/train --resume). compare.csv is the same
        but for TIMING; --report-only rewrites it the same, and refuses a tampered scores.json in one line; a
        second sweep into the same --out, or a --resume with other options, is refused."""
        with tempfile.TemporaryDirectory(prefix="lm-compare-resume-") as tmp:
            data = tiny_data(tmp)
            args = ["--data", data, "--archs", "attention", "--budget", "tokens:128000", "--seeds", "2",
                    "--curve-points", "4"] + TINY
            whole, parts = os.path.join(tmp, "whole"), os.path.join(tmp, "parts")
            p = compare(args + ["--out", whole])
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            self.assertIn("- **Every run trained**", read(os.path.join(whole, "compare.md")))
            log = os.path.join(parts, "attention_tokens_1338", "log.csv")
            stopped = subprocess.Popen([sys.executable, "-m", "harness.compare"] + args + ["--out", parts],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and stopped.poll() is None:
                if os.path.exists(log) and read(log).count("\n") > 50:  # 50 of its 2,000 steps trained
                    break
                time.sleep(0.01)
            stopped.send_signal(signal.SIGINT)
            _, err = stopped.communicate(timeout=120)
            self.assertEqual(stopped.returncode, -signal.SIGINT, err[-2000:])
            info = json.loads(subprocess.run([os.path.join(BIN, "info"), os.path.join(parts, "attention_tokens_1338"),
                                              "--json"], capture_output=True, text=True).stdout)
            self.assertTrue(0 < info["step"] < 2000, info["step"])  # stopped part of the way
            self.assertFalse(os.path.exists(os.path.join(parts, "attention_tokens_1338", "scores.json")))
            p = compare(args + ["--out", parts, "--resume"])
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            self.assertIn("--resume: 1 of the 2 runs finished before and kept, 1 to finish", p.stdout)
            want = read_csv(os.path.join(whole, "compare.csv"))
            for path in (os.path.join(parts, "compare.csv"), None):
                if path is None:  # the reports rewritten from the runs' folders
                    p = compare(args + ["--out", parts, "--report-only"])
                    self.assertEqual(p.returncode, 0, p.stderr[-2000:])
                    path = os.path.join(parts, "compare.csv")
                got = read_csv(path)
                self.assertEqual([{k: v for k, v in r.items() if k not in TIMING} for r in got],
                                 [{k: v for k, v in r.items() if k not in TIMING} for r in want])
            p = compare(args + ["--out", parts])
            self.assertEqual((p.returncode, len(p.stderr.strip().splitlines())), (2, 1), p.stderr)
            self.assertIn("holds 'attention_tokens_1337' already, a run of an earlier sweep: --resume", p.stderr)
            p = compare(args + ["--out", parts, "--resume", "--lr", "0.002"])
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("was started with --lr 0.001 (this command: 0.002)", p.stderr)
            # a run's scores.json is read back as untrusted data: a tampered one is one line, exit 2
            scores = os.path.join(parts, "attention_tokens_1337", "scores.json")
            good = json.loads(read(scores))
            for change, text in ((lambda d: d["val"]["split_recall"].update(recall_tokens=0, other_tokens=0),
                                  "no token scored"),
                                 (lambda d: d["val"]["by_position"].update(loss=[1.0]), "1 positions, not the window's 16"),
                                 (lambda d: d.update(load="high"), "load")):
                bad = json.loads(json.dumps(good))
                change(bad)
                with open(scores, "w") as f:
                    json.dump(bad, f)
                p = compare(args + ["--out", parts, "--report-only"])
                self.assertEqual((p.returncode, len(p.stderr.strip().splitlines())), (2, 1), p.stderr[-2000:])
                self.assertIn(text, p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
