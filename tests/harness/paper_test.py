"""make paper's pieces without its hour of training: the architectures, the
paired ratios, the report written from compare reports (--report-only, on
runs made up here), one-line errors for bad options and missing data, and
Wikitext-2's files prepared through bin/prepare --train/--val/--test. Run from
the repository root after make: /usr/bin/python3 -m tests.harness.paper_test"""
import argparse
import csv
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile
import unittest

from harness.common import BIN
from harness.archs import parse_archs
from harness.archs import train_takes
from harness.lib.paper.ablation import head_file
from harness.lib.paper.runs import norm_ratios, ratios
from harness.lib.paper.setup import (CONTROLS, archs_for, attention_window, compare_command, matched_pairs, pair_counts,
                                     prepare_wikitext2)
from harness.lib.trained import read_token_file, unigram_loss
from harness.stats import betainc, t_two_sided, welch_p

PAPER = [sys.executable, "-m", "harness.paper"]
T975 = {1: 12.706205, 2: 4.302653}  # Student's t: the 97.5% points at 1 and 2 degrees of freedom (the tables')


def t_interval(deltas):
    """The mean of per-seed differences and the half-width of its 95% t interval, from the formulas."""
    n = len(deltas)
    mean = sum(deltas) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in deltas) / (n - 1))
    return mean, T975[n - 1] * sd / math.sqrt(n)


def ratio_text(xs, ys):
    """A paired val-perplexity ratio as paper.md's tables give it, from the perplexities per seed."""
    mean, half = t_interval([math.log(x / y) for x, y in zip(xs, ys)])
    return f"{math.exp(mean):.3f} [{math.exp(mean - half):.3f}, {math.exp(mean + half):.3f}]"


def mean_text(xs, digits):
    """A mean over seeds ± the half-width of its 95% t interval, as the tables give it."""
    mean, half = t_interval(xs)
    return f"{mean:.{digits}f} ± {half:.{digits}f}"
KEYS = ["arch", "budget", "seed", "params", "steps", "tokens", "train_seconds", "wall", "tok_s", "val_loss", "val_ppl",
        "test_loss", "test_ppl", "recall_loss", "other_loss", "recall_tokens", "other_tokens", "mixers", "grassmann_rank",
        "val_bpb", "val_word_ppl"]


LOG = "step,tokens,train_loss,val_loss,val_bits_per_byte,lr,grad_norm,ms_per_step,elapsed_s,threads\n"


def fake_log(out, norm, name, seed, losses, folder=True):
    """A run's training log: (train loss, val loss) per step, in its run folder (OUT/NORM/TAG/log.csv), or
    with folder=False beside compare.csv (OUT/NORM/TAG.csv: a compare of before run folders)."""
    path = os.path.join(out, norm, f"{name}_tokens_{seed}", "log.csv") if folder else \
        os.path.join(out, norm, f"{name}_tokens_{seed}.csv")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(LOG + "0,0,,9.0,2.0,,,,0.000,\n")
        for i, (tl, vl) in enumerate(losses, 1):
            f.write(f"{i},{i * 100},{tl},{vl},1.0,0.001,1.0,10.0,{i * 0.01:.3f},2\n")


def page_data(path):
    """The report data of a page harness/report_page.py wrote."""
    with open(path, encoding="utf-8") as f:
        html = f.read()
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1))


def fake_compare(out, norm, ppl):
    """A compare.csv as harness.compare writes it: ppl[name] = [val ppl per seed]; bits per byte
    and word perplexity as if a token were 4 bytes and a word 1.5 tokens."""
    os.makedirs(os.path.join(out, norm))
    with open(os.path.join(out, norm, "compare.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(KEYS)
        for name, mixers in archs_for(6):
            for k, p in enumerate(ppl[name]):
                spec = ",".join([mixers] * 6 if "," not in mixers else mixers.split(","))
                w.writerow([name, "tokens:1000", 1337 + k, 6_868_992, 10, 1000, 1.0, 2.0, 1000.0, math.log(p), p, 5.0, p * 1.01,
                            3.0, 5.0, 10, 90, spec, "" if name == "transformer" else 32,
                            math.log(p) / math.log(2) / 4, p ** 1.5])


# The controls' architectures as compare.csv has them (Table 1): (mixers, rank, pair, window, params).
CONTROL_ROWS = {"grassmann-outer": ("grassmann", 32, "outer", "", 7_680_000),
                "grassmann-sum": ("grassmann", 32, "sum", "", 6_156_288),
                "grassmann-outer-m": ("grassmann", 22, "outer", "", 6_800_000),
                "grassmann-sum-m": ("grassmann", 256, "sum", "", 6_850_000),
                "swa": ("attention", "", "", 17, 6_845_440), "gla": ("gla", "", "", "", 6_850_048),
                "hybrid-gla": ("attention" + ",gla" * 5, "", "", "", 6_848_000),
                "hybrid-swa": ("attention" + ",grassmann" * 5, 32, "wedge", 17, 6_866_000)}


def fake_controls(out, norm, ppl):
    """compare.csv rows of the controls (ppl[name] = [val ppl per seed]), with the columns of today's
    compare.csv (grassmann_pair, attn_window), appended to what fake_compare wrote."""
    path = os.path.join(out, norm, "compare.csv")
    with open(path) as f:
        old = list(csv.reader(f))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(old[0] + ["grassmann_pair", "attn_window"])
        for row in old[1:]:
            w.writerow(row + ["wedge" if row[0] != "transformer" else "", ""])
        for name, per_seed in ppl.items():
            mixers, rank, pair, window, params = CONTROL_ROWS[name]
            spec = ",".join([mixers] * 6 if "," not in mixers else mixers.split(","))
            for k, p in enumerate(per_seed):
                w.writerow([name, "tokens:1000", 1337 + k, params, 10, 1000, 1.0, 2.0, 1000.0, math.log(p), p, 5.0,
                            p * 1.01, 3.0, 5.0, 10, 90, spec, rank, math.log(p) / math.log(2) / 4, p ** 1.5, pair, window])


def token_file(path, tokens, vocab):
    """A token file as bin/prepare writes it (format 1, 2-byte tokens)."""
    with open(path, "wb") as f:
        f.write(b"LMTOKENS" + struct.pack("<IIQQ", 1, 2, vocab, len(tokens)) + struct.pack(f"<{len(tokens)}H", *tokens))


class Pieces(unittest.TestCase):
    def test_archs(self):
        archs = dict(archs_for(6))
        self.assertEqual(archs["transformer"], "attention")
        self.assertEqual(archs["hybrid"].split(","), ["attention"] + ["grassmann"] * 5)
        self.assertEqual(len(dict(archs_for(12))["hybrid"].split(",")), 12)

    def test_controls(self):
        names = lambda archs: [n for n, _ in archs]
        self.assertEqual(archs_for(6, ()), archs_for(6))
        every = archs_for(6, ("pair", "window", "hybrid"), 17, ("outer", "sum"))
        self.assertEqual(names(every), ["transformer", "grassmann", "hybrid", "grassmann-outer", "grassmann-sum",
                                        "grassmann-outer-m", "grassmann-sum-m", "swa", "gla", "hybrid-gla",
                                        "hybrid-swa"])
        self.assertEqual(names(archs_for(6, ("pair",), 17, ("sum",)))[3:], ["grassmann-outer", "grassmann-sum",
                                                                            "grassmann-sum-m"])
        # every spec is one harness.compare takes, with the options each control is about
        parsed = {x.name: x for x in parse_archs(" ".join(f"{n}={s}" for n, s in every), 6)}
        self.assertEqual((parsed["grassmann-outer"].options, parsed["grassmann-outer"].size()), ({"pair": "outer"}, None))
        self.assertEqual((parsed["grassmann-sum-m"].options, parsed["grassmann-sum-m"].match), ({"pair": "sum"}, "grassmann"))
        self.assertEqual((parsed["swa"].mixers, parsed["swa"].options), (["attention"] * 6, {"window": "17"}))
        self.assertEqual(parsed["hybrid-gla"].mixers, ["attention"] + ["gla"] * 5)
        self.assertEqual((parsed["hybrid-swa"].mixers, parsed["hybrid-swa"].options),
                         (["attention"] + ["grassmann"] * 5, {"window": "17"}))
        # the window that sees what the Grassmann layers see: the largest offset and the position itself
        self.assertEqual(attention_window([[1, 2, 4, 8, 12, 16]] * 6), 17)
        self.assertEqual(attention_window([[1], [1], [2], [2], [16], [16]]), 17)
        # a rank-matched variant only past 5% of the wedge's count
        self.assertEqual(matched_pairs({"wedge": 1000, "outer": 1051, "sum": 950}), ["outer"])
        self.assertEqual(matched_pairs({"wedge": 1000, "outer": 1168, "sum": 852}), ["outer", "sum"])
        self.assertEqual(set(CONTROLS), {"pair", "window", "hybrid"})

    @unittest.skipUnless(os.path.exists(os.path.join(BIN, "train")) and train_takes("--grassmann-pair"),
                         "needs make (a bin/train with --grassmann-pair)")
    def test_pair_counts(self):
        """The counts that decide the matched variants are bin/train's at Table 1, each with its pair kind."""
        with tempfile.TemporaryDirectory() as tmp:
            from tests.harness.compare_test import tiny_data
            data = tiny_data(tmp)
            a = argparse.Namespace(table=1, n_head=4, train_args="")
            counts = pair_counts(a, data, "pre")
            features = {"wedge": 32 * 31 // 2, "outer": 32 * 32, "sum": 32}  # r(r-1)/2, r^2, r at r = 32
            for pair in ("outer", "sum"):  # the feature projection's C x F weights differ, in each of 6 layers
                self.assertEqual(counts[pair] - counts["wedge"], 6 * 256 * (features[pair] - features["wedge"]), pair)
            self.assertEqual(matched_pairs(counts), ["outer", "sum"])

    def test_compare_command(self):
        # the recipe's options, then --train-args (one argument: its value starts with '--'), so that they win
        a = argparse.Namespace(table=1, out="o", n_head=4, batch_size=16, lr=1e-3, warmup_iters=100,
                               budget="tokens:800000", seeds=2, seed=1337, threads=0, jobs=3, train_args="--zero-init 0",
                               ablation_tokens=16384)
        cmd = compare_command(a, "modern", "d", archs_for(6))
        self.assertEqual(cmd[cmd.index("--jobs") + 1], "3")
        self.assertEqual(cmd[cmd.index("--recipe") + 1], "modern")
        self.assertGreater(cmd.index("--train-args=--zero-init 0"), cmd.index("--recipe"))
        self.assertEqual(cmd[cmd.index("--out") + 1], os.path.join("o", "modern"))
        self.assertNotIn("--resume", cmd)
        a.train_args, a.ablation_tokens, a.resume, a.evals = "", 0, True, ["blimp=b.jsonl", "lambada=l.txt"]
        with tempfile.TemporaryDirectory() as tmp:
            a.out = tmp
            cmd = compare_command(a, "pre", "d", archs_for(6))
            self.assertFalse([x for x in cmd if x.startswith("--train-args") or x == "--recipe"])
            self.assertEqual(cmd[cmd.index("--evals"):cmd.index("--evals") + 3],
                             ["--evals", "blimp=b.jsonl", "lambada=l.txt"])
            self.assertNotIn("--resume", cmd)  # a recipe whose sweep a stopped make paper had not started
            os.makedirs(os.path.join(tmp, "pre"))
            with open(os.path.join(tmp, "pre", "sweep.json"), "w") as f:
                f.write('{"runs": {"transformer_tokens_1337": ["bin/train"]}}\n')
            self.assertIn("--resume", compare_command(a, "pre", "d", archs_for(6)))

    def test_ratios_are_paired_by_seed(self):
        rows = [{"norm": "pre", "name": "transformer", "seed": 1, "val_ppl": 100.0},
                {"norm": "pre", "name": "transformer", "seed": 2, "val_ppl": 200.0},
                {"norm": "pre", "name": "grassmann", "seed": 2, "val_ppl": 220.0},
                {"norm": "pre", "name": "grassmann", "seed": 1, "val_ppl": 120.0},
                {"norm": "post", "name": "grassmann", "seed": 1, "val_ppl": 60.0}]
        self.assertEqual(sorted(ratios(rows, "pre", "grassmann")), [1.1, 1.2])
        self.assertEqual(norm_ratios(rows, "grassmann"), [0.5])
        self.assertEqual(ratios(rows, "post", "grassmann"), [])  # no post-norm transformer to pair with

    def test_unigram_loss(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertIsNone(unigram_loss(tmp))
            # train counts 3, 1, 0 of a 3-token vocabulary, add-one: 4/7, 2/7, 1/7
            token_file(os.path.join(tmp, "train.bin"), [0, 0, 1, 0], 3)
            token_file(os.path.join(tmp, "val.bin"), [0, 2], 3)
            self.assertAlmostEqual(unigram_loss(tmp), -(math.log(4 / 7) + math.log(1 / 7)) / 2, places=12)


class Stats(unittest.TestCase):
    def test_student_t(self):
        for t in (0.3, 1.0, 2.5, 10.0):  # closed forms at 1 and 2 degrees of freedom
            self.assertAlmostEqual(t_two_sided(t, 1), 1 - 2 * math.atan(t) / math.pi, places=12)
            self.assertAlmostEqual(t_two_sided(-t, 2), 1 - t / math.sqrt(2 + t * t), places=12)
        self.assertAlmostEqual(t_two_sided(2.228139, 10), 0.05, places=6)  # the table's 5% point at 10
        self.assertAlmostEqual(betainc(2, 3, 0.4), 0.5248, places=12)  # sum over j >= 2 of C(4,j) x^j (1-x)^(4-j)
        self.assertAlmostEqual(betainc(2, 3, 0.9), 1 - betainc(3, 2, 0.1), places=12)

    def test_welch(self):
        xs, ys = [1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]
        vx, vy = 1.0 / 3, (5.0 / 3) / 4  # variance of each mean
        df = (vx + vy) ** 2 / (vx ** 2 / 2 + vy ** 2 / 3)
        self.assertAlmostEqual(welch_p(xs, ys), t_two_sided(3.5 / math.sqrt(vx + vy), df), places=12)
        self.assertAlmostEqual(welch_p(xs, ys), 0.0100769, places=6)
        self.assertEqual(welch_p(xs, ys), welch_p(ys, xs))
        self.assertIsNone(welch_p([1.0], ys))            # one seed: no test
        self.assertIsNone(welch_p([2.0, 2.0], [2.0, 2.0]))  # no spread at all
        self.assertGreater(welch_p([1.0, 1.1], [1.05, 1.0]), 0.5)


class Report(unittest.TestCase):
    def test_report_only(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake_compare(tmp, "pre", {"transformer": [200.0, 210.0], "grassmann": [220.0, 235.2],
                                      "hybrid": [190.0, 199.5]})
            fake_compare(tmp, "post", {"transformer": [250.0, 240.0], "grassmann": [300.0, 300.0],
                                       "hybrid": [240.0, 230.0]})
            r = subprocess.run(PAPER + ["--out", tmp, "--report-only", "--data", tmp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(tmp, "paper.json")) as f:
                rows = json.load(f)
            self.assertEqual(len(rows), 12)
            for row in rows:
                for k in ("arch", "norm", "seed", "tokens", "val_ppl", "test_ppl", "params"):
                    self.assertIn(k, row)
                self.assertEqual(len(row["arch"].split(",")), 6)
            with open(os.path.join(tmp, "paper.md")) as f:
                md = f.read()
            # 2 seeds: each ratio with its 95% t interval (1 degree of freedom), and no p-value or verdict.
            # pre: ln(220/200), ln(235.2/210); post: ln 1.2, ln 1.25: the paper's 1.11 inside both intervals
            for norm, g, t in (("pre", [220.0, 235.2], [200.0, 210.0]), ("post", [300.0, 300.0], [250.0, 240.0])):
                mean, half = t_interval([math.log(x / y) for x, y in zip(g, t)])
                lo, hi = math.exp(mean - half), math.exp(mean + half)
                self.assertIn(f"**{norm}-norm**: Grassmann / Transformer val perplexity {math.exp(mean):.3f} (95% t "
                              f"interval {lo:.3f} to {hi:.3f}, 1 degree of freedom): 2 seeds: no p-value and no verdict "
                              f"(they need 3 seeds at least); **the paper's 1.11 lies inside our 95% interval** "
                              f"({lo:.3f} to {hi:.3f}).", md)
            self.assertIn("hybrid (attention first, then Grassmann) / Transformer: 0.950 (the same on all 2 seeds: no "
                          "spread, so no interval): 2 seeds: no p-value and no verdict", md)
            self.assertIsNone(re.search(r"\bp (<|[0-9])", md))
            # per byte and per word: the mean over seeds of what compare.csv says, with its interval
            bpb = [math.log(x) / math.log(2) / 4 for x in (220.0, 235.2)]
            self.assertIn(f"| pre-norm | grassmann | {mean_text([220.0, 235.2], 1)} | {mean_text(bpb, 4)} "
                          f"| {mean_text([220.0 ** 1.5, 235.2 ** 1.5], 1)} | - |", md)
            self.assertIn("| post-norm | grassmann | 300.0 (same on all 2) |", md)
            by = {(r["norm"], r["name"], r["seed"]): r for r in rows}
            self.assertAlmostEqual(by[("pre", "grassmann", 1338)]["val_word_ppl"], 235.2 ** 1.5, delta=1e-3)
            self.assertIsNone(by[("pre", "grassmann", 1338)]["p_vs_transformer"])  # 2 seeds: none
            self.assertIsNone(by[("pre", "transformer", 1337)]["p_vs_transformer"])
            self.assertIn("| the paper, Table 1", md)
            self.assertNotIn("diverged", md.lower())  # no training logs: nothing said
            # The page: the Markdown's tables, the runs one row each; no curves without logs.
            page = page_data(os.path.join(tmp, "paper.html"))
            runs = next(s for s in page["sections"] if s.get("id") == "runs")
            self.assertEqual(len(runs["rows"]), 12)
            self.assertEqual(sorted(float(r[-2]) for r in runs["rows"]), sorted(r["val_ppl"] for r in rows))
            self.assertFalse([s for s in page["sections"] if s["kind"] == "chart"])

    def test_evals_and_load(self):
        """compare.csv's --evals columns become paper.md's evaluations table and reading, paper.json's evals;
        its load columns sit beside tokens/s, which a load above the cores marks not comparable."""
        with tempfile.TemporaryDirectory() as tmp:
            fake_compare(tmp, "pre", {"transformer": [200.0, 210.0], "grassmann": [220.0, 231.0],
                                      "hybrid": [190.0, 199.5]})
            path = os.path.join(tmp, "pre", "compare.csv")
            with open(path) as f:
                table = list(csv.reader(f))
            with open(path, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(table[0] + ["load", "cores", "eval_blimp_acc", "eval_blimp_scored"])
                for i, row in enumerate(table[1:]):
                    w.writerow(row + [3.5 if i == 0 else 1.0, 2, 0.5 + 0.01 * i, 100])
            r = subprocess.run(PAPER + ["--out", tmp, "--report-only", "--data", tmp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(tmp, "paper.md")) as f:
                md = f.read()
            self.assertIn("## Evaluations", md)
            self.assertIn(f"| pre-norm | transformer | {mean_text([0.50, 0.51], 3)} |", md)
            self.assertIn(f"- **blimp**, pre-norm: accuracy transformer {mean_text([0.50, 0.51], 3)}; grassmann ", md)
            self.assertIn("| pre | transformer | 6,868,992 | 1337 | 1,000 | 1 | 1,000 (not comparable) | 3.5 of 2 |", md)
            self.assertIn("| pre | transformer | 6,868,992 | 1338 | 1,000 | 1 | 1,000 | 1.0 of 2 |", md)
            with open(os.path.join(tmp, "paper.json")) as f:
                rows = {(r["name"], r["seed"]): r for r in json.load(f)}
            self.assertEqual(rows[("grassmann", 1337)]["evals"]["eval_blimp_acc"], 0.52)

    def test_ablation_table(self):
        """The per-window ablation's files (as harness.paper's ablate writes them) become a
        table per run and a sentence on where the layer's information comes from."""
        with tempfile.TemporaryDirectory() as tmp:
            ppl = {"transformer": [200.0], "grassmann": [220.0], "hybrid": [190.0]}
            fake_compare(tmp, "pre", ppl)
            delta = {f"{l}:{d}": 0.001 * d + (0.5 if (l, d) == (2, 1) else 0.0) for l in range(6)
                     for d in (1, 2, 4, 8, 12, 16)}
            with open(os.path.join(tmp, "pre", "ablation_grassmann_1337.json"), "w") as f:
                json.dump({"tokens": 4096, "plain_loss": 5.25, "delta": delta}, f)
            r = subprocess.run(PAPER + ["--out", tmp, "--report-only", "--data", tmp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(tmp, "paper.md")) as f:
                md = f.read()
            self.assertIn("on the first 4,096 val tokens", md)
            self.assertIn("**pre-norm, grassmann, seed 1337** (whole model: 5.2500 nats). Most is lost without offset 1 "
                          "(+0.5060 summed over the layers) and in layer 2 (+0.5430 summed over its offsets).", md)
            self.assertIn("| layer | offset 1 | offset 2 | offset 4 | offset 8 | offset 12 | offset 16 |", md)
            self.assertIn("| 2 | +0.5010 | +0.0020 | +0.0040 | +0.0080 | +0.0120 | +0.0160 |", md)
            with open(os.path.join(tmp, "paper.json")) as f:
                rows = {(r["norm"], r["name"]): r for r in json.load(f)}
            self.assertEqual(rows[("pre", "grassmann")]["ablation"]["delta"]["2:1"], delta["2:1"])
            self.assertIsNone(rows[("pre", "hybrid")]["ablation"])

    def test_head_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            token_file(os.path.join(tmp, "val.bin"), list(range(50)), 60)
            path, n = head_file(tmp, tmp, 20)
            self.assertEqual(n, 20)
            tokens, vocab = read_token_file(path)
            self.assertEqual((list(tokens), vocab), (list(range(20)), 60))
            self.assertEqual(head_file(tmp, tmp, 500)[1], 50)  # no more than there is

    def test_divergence(self):
        with tempfile.TemporaryDirectory() as tmp:
            ppl = {"transformer": [200.0], "grassmann": [220.0], "hybrid": [190.0]}
            fake_compare(tmp, "pre", ppl)
            fake_compare(tmp, "post", ppl)
            for norm in ("pre", "post"):  # pre's logs in run folders, post's beside compare.csv: both read
                for name in ppl:
                    fake_log(tmp, norm, name, 1337, [(6.0, 6.5), (5.0, 5.5)], folder=norm == "pre")
            r = subprocess.run(PAPER + ["--out", tmp, "--report-only", "--data", tmp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(tmp, "paper.md")) as f:
                md = f.read()
            self.assertIn("**Every run trained** at lr 0.001 with 100 linear warm-up steps", md)
            self.assertIn("/ Transformer: 0.950 (one seed: no interval): one seed: no p-value and no verdict", md)
            self.assertNotIn("by more than the seed spread", md)
            # The page's curves: each run's val losses from its log, post-norm dashed.
            curves = [s for s in page_data(os.path.join(tmp, "paper.html"))["sections"] if s["kind"] == "chart"]
            self.assertEqual(len(curves), 1)
            runs = [s for s in curves[0]["series"] if "seed" in s["name"]]
            self.assertEqual(len(runs), 6)
            for s in runs:
                self.assertEqual(s["points"], [[0, 9.0], [100, 6.5], [200, 5.5]])
                self.assertEqual(s["dash"], "post-norm" in s["name"])
            fake_log(tmp, "post", "transformer", 1337, [(6.0, 6.5), ("nan", 8.9)], folder=False)
            fake_log(tmp, "pre", "grassmann", 1337, [(6.0, 4.5), (5.0, 5.5)])  # back up 1 nat from its lowest
            r = subprocess.run(PAPER + ["--out", tmp, "--report-only", "--data", tmp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(tmp, "paper.md")) as f:
                md = f.read()
            self.assertIn("**Diverged**: pre-norm grassmann seed 1337", md)
            self.assertIn("post-norm transformer seed 1337 (val loss 9.00 at step 0, lowest 6.50, last 8.90)", md)
            with open(os.path.join(tmp, "paper.json")) as f:
                flags = {(r["norm"], r["name"]): r["diverged"] for r in json.load(f)}
            self.assertEqual(sum(flags.values()), 2)

    def test_stuck_at_unigram(self):
        """A run that ends at the loss of token frequencies alone did not
        train, though its loss fell and never climbed back."""
        with tempfile.TemporaryDirectory() as tmp:
            # Train and val with uniform frequencies over 400 tokens: the
            # unigram loss is log 400 = 5.99 nats (ppl 400).
            token_file(os.path.join(tmp, "train.bin"), list(range(400)) * 3, 400)
            token_file(os.path.join(tmp, "val.bin"), list(range(400)), 400)
            ppl = {"transformer": [390.0], "grassmann": [220.0], "hybrid": [190.0]}
            for norm in ("pre", "post"):
                fake_compare(tmp, norm, ppl if norm == "post" else dict(ppl, transformer=[200.0]))
                for name in ppl:
                    fake_log(tmp, norm, name, 1337, [(6.0, 6.5), (5.0, 5.5)])
            # The post-norm runs had a longer warm-up: the report says what each norm's runs had.
            with open(os.path.join(tmp, "post", "paper_settings.json"), "w") as f:
                json.dump({"lr": 0.001, "warmup_iters": 400}, f)
            r = subprocess.run(PAPER + ["--out", tmp, "--report-only", "--data", tmp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(tmp, "paper.md")) as f:
                md = f.read()
            self.assertIn("**Did not train**: post-norm transformer seed 1337 (val loss 5.966), at lr 0.001 with 400 "
                          "linear warm-up steps", md)
            self.assertIn("batch 16; pre-norm 0.001 with 100 warm-up steps; post-norm 0.001 with 400 warm-up steps", md)
            self.assertIn("is 5.991, so these runs learned the frequencies and nothing of context", md)
            self.assertNotIn("Every run trained", md)
            with open(os.path.join(tmp, "paper.json")) as f:
                flags = {(r["norm"], r["name"]): r["stuck_at_unigram"] for r in json.load(f)}
            self.assertEqual([k for k, v in flags.items() if v], [("post", "transformer")])


class Controls(unittest.TestCase):
    def test_report_only(self):
        """Every control's table, from compare reports made up here (read back without --controls: the
        report has whichever controls have runs), with ratios, their intervals and the paired t-test's p
        (3 seeds) against the wedge, swa and the Transformer; a compare.csv from before the controls (no pair
        or window columns) beside them."""
        with tempfile.TemporaryDirectory() as tmp:
            base = {"transformer": [200.0, 210.0, 205.0], "grassmann": [220.0, 231.0, 228.0],
                    "hybrid": [190.0, 199.5, 196.0]}
            ctl = {"grassmann-outer": [210.0, 222.0, 214.0], "grassmann-sum": [260.0, 270.0, 268.0],
                   "grassmann-outer-m": [230.0, 240.0, 236.0], "grassmann-sum-m": [250.0, 262.0, 259.0],
                   "swa": [205.0, 214.0, 212.0], "gla": [215.0, 225.0, 224.0], "hybrid-gla": [195.0, 205.0, 201.0],
                   "hybrid-swa": [192.0, 200.0, 199.0]}
            fake_compare(tmp, "pre", base)
            fake_controls(tmp, "pre", ctl)
            fake_compare(tmp, "post", base)  # the old columns only: still read
            r = subprocess.run(PAPER + ["--out", tmp, "--report-only", "--data", tmp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(tmp, "paper.md")) as f:
                md = f.read()
            ppl = lambda name: ctl.get(name, base.get(name))

            def p(name, base_name):  # the paired t-test at 2 degrees of freedom: p = 1 - |t| / sqrt(2 + t^2)
                mean, half = t_interval([math.log(x / y) for x, y in zip(ppl(name), ppl(base_name))])
                t = mean / (half / T975[2])
                value = 1 - abs(t) / math.sqrt(2 + t * t)
                return f"p {value:.2g}" if value >= 1e-3 else "p < 0.001"

            ratio = lambda name, base_name: ratio_text(ppl(name), ppl(base_name))

            def words(name, base_name):
                mean, half = t_interval([math.log(x / y) for x, y in zip(ppl(name), ppl(base_name))])
                return (f"{math.exp(mean):.3f} (95% t interval {math.exp(mean - half):.3f} to "
                        f"{math.exp(mean + half):.3f}, 2 degrees of freedom)")
            # 1. the pair kinds: outer against the wedge; its count +11.8% of the wedge's
            self.assertIn("## The pair kinds: wedge, outer, sum", md)
            self.assertIn(f"| pre-norm | grassmann-outer | outer | 32 | 7,680,000 | +11.8% | "
                          f"{mean_text(ppl('grassmann-outer'), 1)} | {ratio('grassmann-outer', 'grassmann')} "
                          f"| {p('grassmann-outer', 'grassmann')} | {ratio('grassmann-outer', 'transformer')} "
                          f"| {p('grassmann-outer', 'transformer')} |", md)
            self.assertIn("| pre-norm | grassmann-sum-m | sum | 256 (capped at n_embd) | 6,850,000 | -0.3% |", md)
            self.assertIn("| pre-norm | grassmann-outer-m | outer | 22 | 6,800,000 | -1.0% |", md)
            self.assertIn(f"| pre-norm | grassmann | wedge | 32 | 6,868,992 | +0.0% | {mean_text(ppl('grassmann'), 1)} "
                          "| - | - |", md)
            self.assertIn(f"- **pre-norm**: grassmann-sum / grassmann val perplexity {words('grassmann-sum', 'grassmann')}: "
                          f"worse than the wedge: its 95% interval excludes 1 (paired t, {p('grassmann-sum', 'grassmann')}, "
                          "2 degrees of freedom).", md)
            # 2. Grassmann against sliding-window attention at 17 positions
            self.assertIn("## Grassmann against sliding-window attention at the same window", md)
            self.assertIn("the last 17 positions, the query's own included (`bin/train --attn-window 17`)", md)
            self.assertIn(f"| pre-norm | grassmann | offsets up to 16 | 6,868,992 | {mean_text(ppl('grassmann'), 1)} "
                          f"| {ratio('grassmann', 'swa')} | {p('grassmann', 'swa')} |", md)
            self.assertIn(f"- **pre-norm**: grassmann / swa val perplexity {words('grassmann', 'swa')}: worse than "
                          f"sliding-window attention: its 95% interval excludes 1 (paired t, {p('grassmann', 'swa')}", md)
            # 4. the hybrids, against the Transformer and the paper's hybrid
            self.assertIn("## The hybrids", md)
            self.assertIn("| pre-norm | hybrid-swa | attention,grassmann,grassmann,grassmann,grassmann,grassmann, "
                          f"window 17 | 6,866,000 | {mean_text(ppl('hybrid-swa'), 1)} | {ratio('hybrid-swa', 'transformer')} ",
                          md)
            self.assertIn(f"| pre-norm | hybrid-gla | attention,gla,gla,gla,gla,gla | 6,848,000 "
                          f"| {mean_text(ppl('hybrid-gla'), 1)} | {ratio('hybrid-gla', 'transformer')} "
                          f"| {p('hybrid-gla', 'transformer')} | {ratio('hybrid-gla', 'hybrid')} "
                          f"| {p('hybrid-gla', 'hybrid')} |", md)
            # a recipe without the controls has no rows in their tables
            self.assertNotIn("| post-norm | grassmann-outer", md)
            self.assertNotIn("| post-norm | swa", md)
            self.assertNotIn("| post-norm | grassmann | wedge", md)
            with open(os.path.join(tmp, "paper.json")) as f:
                rows = {(r["norm"], r["name"], r["seed"]): r for r in json.load(f)}
            self.assertEqual(len(rows), 3 * (6 + 8))
            self.assertEqual((rows[("pre", "swa", 1337)]["attn_window"], rows[("pre", "swa", 1337)]["grassmann_pair"]),
                             (17, None))
            self.assertEqual(rows[("pre", "grassmann-sum-m", 1338)]["grassmann_pair"], "sum")
            self.assertIsNone(rows[("post", "grassmann", 1337)]["grassmann_pair"])  # the old file has none
            self.assertEqual(f"p {rows[('pre', 'gla', 1337)]['p_vs_transformer']:.2g}", p("gla", "transformer"))

    def test_no_controls_no_tables(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake_compare(tmp, "pre", {"transformer": [200.0, 210.0], "grassmann": [220.0, 231.0],
                                      "hybrid": [190.0, 199.5]})
            r = subprocess.run(PAPER + ["--out", tmp, "--report-only", "--data", tmp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(tmp, "paper.md")) as f:
                md = f.read()
            for heading in ("## The pair kinds", "## Grassmann against sliding-window", "## The hybrids"):
                self.assertNotIn(heading, md)


class Errors(unittest.TestCase):
    def expect(self, args, text):
        r = subprocess.run(PAPER + args, capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn(text, r.stderr)

    def test_bad_options(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.expect(["--out", tmp, "--norms", "pre,middle"], "--norms must list pre and/or post")
            self.expect(["--out", tmp, "--seeds", "0"], "--seeds must be at least 1")
            self.expect(["--out", tmp, "--jobs", "0"], "--jobs must be at least 1")
            self.expect(["--out", tmp, "--data", os.path.join(tmp, "none")], "has no train.bin")
            self.expect(["--out", tmp, "--wikitext2", tmp], "has no wiki.train.tokens or wiki.train.raw")
            self.expect(["--out", tmp, "--report-only"], "no runs in")
            self.expect(["--out", tmp, "--recipes", "pre,fancy"], "--recipes must list pre, post and/or modern")
            self.expect(["--out", tmp, "--ablation-tokens", "-1"], "--ablation-tokens must not be negative")
            self.expect(["--out", tmp, "--controls", "pair,wedge"], "--controls must list pair, window, hybrid")
            if not train_takes("--recipe"):  # the modern column needs bin/train --recipe
                self.expect(["--out", tmp, "--recipes", "pre,modern"], "--recipes modern needs a bin/train with --recipe")
            else:  # it passes that check and stops at the missing data instead
                self.expect(["--out", tmp, "--recipes", "pre,modern", "--data", os.path.join(tmp, "none")],
                            "has no train.bin")

    def test_help(self):
        """--help prints (argparse formats it with %: a bare '%' in a help text is a traceback)."""
        r = subprocess.run(PAPER + ["--help"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr[-1000:])
        self.assertIn("more than 5% (both", " ".join(r.stdout.split()))
        for group in CONTROLS:
            self.assertIn(f" {group}: ", " ".join(r.stdout.split()))

    def test_wikitext2_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "wikitext-2")
            os.makedirs(src)
            for stem, n in (("wiki.train", 60), ("wiki.valid", 8), ("wiki.test", 8)):
                with open(os.path.join(src, stem + ".tokens"), "w") as f:
                    for i in range(n):
                        f.write(f" = Heading {i} = \n The whale @-@ line {i} of {stem} , it repeats . \n")
            out = os.path.join(tmp, "data")
            prepare_wikitext2(src, out, 300)
            counts = {}
            for split in ("train", "val", "test"):
                with open(os.path.join(out, split + ".bin"), "rb") as f:
                    counts[split] = int.from_bytes(f.read(32)[24:32], "little")
            self.assertGreater(counts["train"], 5 * counts["val"])
            self.assertGreater(counts["val"], 0)
            self.assertGreater(counts["test"], 0)
            self.assertTrue(os.path.exists(os.path.join(out, "tokenizer.json")))
            self.assertTrue(os.path.exists(os.path.join(BIN, "prepare")))


if __name__ == "__main__":
    unittest.main()
