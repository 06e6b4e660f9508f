"""make compare's --precision: every bin/train command carries it, and a
tiny bf16 comparison (1 layer, 1 seed, one token budget, where the CPU has
AVX512_BF16 and gnuplot is installed: a few seconds) says bf16 in its report
and its CSV; the mixers' options given to the harness go to every run; and
a tiny comparison of the four families and a hybrid whose report has their
counts and p-values. The architectures themselves (syntax, sizes, state, a
new mixer through the registry alone): tests/harness/archs_test.py. Run from the
repository root after make: /usr/bin/python3 -m tests.harness.compare_test"""
import argparse
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
import unittest.mock

from harness import registry
from harness.common import BIN, SWEEP_ENV, Sweep, command_line, duration, fit_warmup, take_config
from harness.lib.compare.ablation import ABLATION
from harness.lib.compare.runs import Harness
from harness.lib.summary import precision_text
from harness.report_page import chart, markdown_sections, write_page
from harness.safetensors_np import read_safetensors

ARCH = {"name": "attention", "mixers": ["attention"], "size": None}


def tiny_data(tmp):
    """A prepared data folder of a few KB under tmp (bin/prepare, characters)."""
    text = os.path.join(tmp, "t.txt")
    with open(text, "w") as f:
        f.write("".join(f"line {i % 17} of the sea and the whale {i % 5}.\n" for i in range(3000)))
    data = os.path.join(tmp, "d")
    subprocess.run([os.path.join(BIN, "prepare"), "--input", text, "--out", data, "--tokenizer", "char",
                    "--val-fraction", "0.1", "--test-fraction", "0.1"], check=True, capture_output=True)
    return data


def has_bf16():
    with open("/proc/cpuinfo") as f:
        return "avx512_bf16" in f.read().split()


def options(precision, recipe=None):
    return argparse.Namespace(n_layer=1, n_head=2, n_embd=32, block_size=16, dropout=0.0, grassmann_windows="1,2",
                              norm="pre", data="d", batch_size=4, lr=1e-3, min_lr=1e-4, warmup_iters=2,
                              eval_iters=2, threads=1, precision=precision, recipe=recipe)


class MixerOptions(unittest.TestCase):
    def test_given_ones_go_to_every_run(self):
        """The mixers' options given to the harness (one for each of the registry's) go to every run's
        bin/train, the size knob's not (it is per architecture)."""
        o = options("fp32")
        o.grassmann_rank = "12"
        args = Harness(o).train_args(ARCH, 7, "runs/c", 5)
        self.assertEqual(args[args.index("--grassmann-windows") + 1], "1,2")
        self.assertNotIn("--grassmann-rank", args)
        self.assertEqual(registry.fixed_sizes(o), {"grassmann-rank": 12})
        o.grassmann_rank = "0"  # 0: matched, as not given
        self.assertEqual(registry.fixed_sizes(o), {})


class Commands(unittest.TestCase):
    def test_precision_passed(self):
        for p in ("fp32", "bf16"):
            args = Harness(options(p)).train_args(ARCH, 7, "runs/c", 5)
            i = args.index("--precision")
            self.assertEqual(args[i + 1], p)
        self.assertIn("bf16", precision_text("bf16"))
        self.assertNotIn("bf16", precision_text("fp32"))

    def test_recipe_and_ablation_passed(self):
        self.assertNotIn("--recipe", Harness(options("fp32")).train_args(ARCH, 7, "runs/c", 5))
        args = Harness(options("fp32", "modern")).train_args(ARCH, 7, "runs/c", 5)
        self.assertEqual(args[args.index("--recipe") + 1], "modern")
        # a variant's options come after --recipe, so that they win (bin/train: the last one given)
        variant = dict(ARCH, extra=["--qk-norm", "0"])
        args = Harness(options("fp32", "modern")).train_args(variant, 7, "runs/c", 5)
        self.assertGreater(args.index("--qk-norm"), args.index("--recipe"))
        self.assertEqual(ABLATION[0], ("modern", []))
        self.assertEqual(ABLATION[-1], ("gpt2", ["--recipe", "gpt2"]))
        # less Muon: AdamW, given after --recipe modern (which chooses Muon), so that it wins
        self.assertIn(("no Muon (AdamW)", ["--optimizer", "adamw"]), ABLATION)
        variant = dict(ARCH, extra=["--optimizer", "adamw"])
        args = Harness(options("fp32", "modern")).train_args(variant, 7, "runs/c", 5)
        self.assertGreater(args.index("--optimizer"), args.index("--recipe"))
        self.assertEqual(len({tuple(extra) for _, extra in ABLATION}), len(ABLATION))

    def test_train_args_passed(self):
        # after --recipe, so that they win; an ablation variant's options after them
        o = options("fp32", "modern")
        o.train_args = "--zero-init 0 --logit-softcap 30"
        args = Harness(o).train_args(dict(ARCH, extra=["--qk-norm", "0"]), 7, "runs/c", 5)
        self.assertEqual(args[args.index("--zero-init"):args.index("--zero-init") + 4],
                         ["--zero-init", "0", "--logit-softcap", "30"])
        self.assertGreater(args.index("--zero-init"), args.index("--recipe"))
        self.assertGreater(args.index("--qk-norm"), args.index("--logit-softcap"))

    def test_command_line_quotes(self):
        saved = sys.argv
        try:
            sys.argv = ["compare.py", "--archs", "attention grassmann", "--train-args=--zero-init 0"]
            self.assertEqual(command_line("harness.compare"),
                             "python3 -m harness.compare --archs 'attention grassmann' '--train-args=--zero-init 0'")
        finally:
            sys.argv = saved


    def test_help_says_the_syntax(self):
        for args in (["harness.compare"], ["harness.probe"], ["harness.probe", "--zoology"]):
            p = subprocess.run([sys.executable, "-m"] + args + ["--help"], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr[-1000:])
            self.assertIn("[NAME=]MIXERS[:KEY=VALUE]", p.stdout, args)
            self.assertIn("window=N", " ".join(p.stdout.split()), args)

    def test_bad_precision(self):
        p = subprocess.run([sys.executable, "-m", "harness.compare", "--precision", "fp16"], capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--precision", p.stderr)


class ExperimentFile(unittest.TestCase):
    def parser(self):
        ap = argparse.ArgumentParser(prog="compare_test")
        ap.add_argument("--n-layer", type=int, default=4)
        ap.add_argument("--lr", type=float, default=1e-3)
        ap.add_argument("--out", default="runs/compare")
        return ap

    def test_keys_become_defaults(self):
        """bin/train's experiment file: the keys the harness takes become its defaults, the command line
        wins, bin/train's --out (a checkpoint) and per-run keys are not taken."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "exp.json")
            with open(path, "w") as f:
                json.dump({"n-layer": 2, "lr": 0.002, "mixer": "gla", "out": "x.ckpt", "dropout": None}, f)
            ap = self.parser()
            with contextlib.redirect_stdout(io.StringIO()) as said:
                take_config(ap, ["--config", path, "--lr", "0.003"])
            a = ap.parse_args(["--config", path, "--lr", "0.003"])
            self.assertEqual((a.n_layer, a.lr, a.out), (2, 0.003, "runs/compare"))
            self.assertIn("not used here: mixer, out", said.getvalue())
            with open(path, "w") as f:
                f.write("[1, 2]")
            self.assertIn("not a JSON object", refusal(lambda: take_config(self.parser(), ["--config", path])))
            self.assertIn("--config", refusal(lambda: take_config(self.parser(), ["--config", path + ".missing"])))


def refusal(call):
    """The one line call() dies with (exit 2)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            call()
        except SystemExit as e:
            assert e.code == 2, e.code
            lines = err.getvalue().strip().splitlines()
            assert len(lines) == 1, lines
            return lines[0]
    raise AssertionError(f"{call} was not refused")


class Progress(unittest.TestCase):
    def test_sweep(self):
        """run k of N with elapsed and ETA; an inner sweep (make paper's compare per recipe) counts and times
        the outer one; the warm-up fits a short run; durations as bin/train prints them."""
        with unittest.mock.patch.dict(os.environ, {SWEEP_ENV: ""}):
            s = Sweep(3)
            self.assertRegex(s.begin(), r"^run 1 of 3, 0s elapsed, ETA after the first run$")
            s.start -= 60  # the first run took a minute: two left
            self.assertRegex(s.begin(), r"^run 2 of 3, 1m00s elapsed, ETA 2m00s$")
        outer = Sweep(12)
        outer.start -= 600
        outer.add_done(6)  # the first recipe's 6 runs, 10 minutes
        with unittest.mock.patch.dict(os.environ, outer.env()):
            inner = Sweep(6)
            self.assertEqual(inner.begin(), "run 7 of 12, 10m00s elapsed, ETA 10m00s")
            self.assertEqual(inner.end(), "7 of 12 runs done, 10m00s elapsed, ETA 7m09s")
        self.assertEqual([fit_warmup(100, 10), fit_warmup(100, 100), fit_warmup(5, 3), fit_warmup(2, 640)], [1, 100, 1, 2])
        self.assertEqual([duration(9.4), duration(69), duration(7500)], ["9s", "1m09s", "2h05m"])


class Page(unittest.TestCase):
    def test_markdown_sections(self):
        md = ["# Title", "", "## Reading", "", "- **a** point", "text", "", "| x | y |", "|---|---:|", "| 1 | 2 |",
              "| 3 | 4 |", "", "![plot](p.png)", "after"]
        s = markdown_sections(md)
        self.assertEqual([x["kind"] for x in s], ["heading", "heading", "text", "text", "table", "text"])
        self.assertEqual(s[2], {"kind": "text", "bullet": True, "text": "**a** point"})
        self.assertEqual(s[4]["columns"], ["x", "y"])
        self.assertEqual(s[4]["rows"], [["1", "2"], ["3", "4"]])

    def test_page_is_one_file_and_escaped(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "p.html")
            c = chart("c", "t", "x", "y", [{"name": "</script><b>", "color": "#000", "points": [[0, 1.0], [1, float("nan")]]}])
            write_page(path, "T", [c])
            with open(path) as f:
                html = f.read()
            self.assertEqual(html.count("</script>"), 2)  # the data's own cannot close its tag
            self.assertNotIn("@REPORT_DATA@", html)
            self.assertNotIn("src=", html)  # nothing loaded from elsewhere
            self.assertIn('[[0,1.0],[1,null]]', html)  # NaN, which JSON has not, as null


@unittest.skipUnless(has_bf16() and shutil.which("gnuplot"), "needs AVX512_BF16 and gnuplot")
class EndToEnd(unittest.TestCase):
    def test_bf16_report(self):
        with tempfile.TemporaryDirectory(prefix="lm-compare-") as tmp:
            data = tiny_data(tmp)
            out = os.path.join(tmp, "out")
            p = subprocess.run([sys.executable, "-m", "harness.compare", "--data", data, "--out", out, "--archs",
                                "attention", "--budget", "tokens:640", "--seeds", "1", "--n-layer", "1", "--n-head",
                                "2", "--n-embd", "32", "--block-size", "16", "--batch-size", "4", "--threads", "1",
                                "--curve-points", "2", "--precision", "bf16"], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:] + p.stdout[-2000:])
            self.assertIn("bin/train --precision bf16", p.stdout)
            with open(os.path.join(out, "compare.md")) as f:
                md = f.read()
            self.assertIn("bf16 products with fp32 accumulation", md)
            with open(os.path.join(out, "compare.csv")) as f:
                rows = list(csv.DictReader(f))
            self.assertEqual([r["precision"] for r in rows], ["bf16"])


@unittest.skipUnless(shutil.which("gnuplot") and os.path.exists(os.path.join(BIN, "train")), "needs make and gnuplot")
class Families(unittest.TestCase):
    def test_four_families_and_hybrids(self):
        """Attention, sliding-window attention, gla, Grassmann and two hybrids, 2 seeds of 640 tokens: the
        report's architecture table (family, options, matched rank, counts), each ratio to the first with its
        interval and no p-value (2 seeds), every run a run folder bin/info --list lists."""
        with tempfile.TemporaryDirectory(prefix="lm-compare-") as tmp:
            data, out = tiny_data(tmp), os.path.join(tmp, "out")
            archs = ("attention swa=attention:window=4 gla grassmann attn-gla=attention,gla "
                     "g-swa=attention,grassmann:window=4")
            p = subprocess.run([sys.executable, "-m", "harness.compare", "--data", data, "--out", out, "--archs", archs,
                                "--budget", "tokens:640", "--seeds", "2", "--n-layer", "2", "--n-head", "2",
                                "--n-embd", "32", "--block-size", "16", "--batch-size", "4", "--threads", "1",
                                "--curve-points", "2", "--eval-iters", "2", "--warmup-iters", "100",
                                "--grassmann-windows", "1,2", "--keep-checkpoints"], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:] + p.stdout[-2000:])
            # progress over the whole sweep: run k of 12, the time so far and an ETA from the second run on
            starts = [l for l in p.stdout.splitlines() if l.startswith("== run ")]
            self.assertEqual([l.split(",")[0] for l in starts], [f"== run {k} of 12" for k in range(1, 13)])
            self.assertIn("elapsed, ETA after the first run: attention, tokens:640, seed 1337", starts[0])
            self.assertRegex(starts[1], r"^== run 2 of 12, [0-9]+(s|m[0-9]{2}s) elapsed, ETA [0-9]+(s|m[0-9]{2}s): ")
            # a warm-up longer than the 10-step runs: said once and scaled, never bin/train's warning per run
            scaled = [l for l in p.stdout.splitlines() if "--warmup-iters 100 exceeds" in l]
            self.assertEqual(scaled, ["compare: --warmup-iters 100 exceeds the 10 steps of a tokens:640 run: its runs "
                                      "warm up over 1 (a tenth of their steps)"])
            self.assertNotIn("warning", p.stderr)
            # the plots it wrote, counted (a token budget alone: no seconds plot)
            self.assertIn("3 plots (val_loss_tokens.png, loss_by_position.png, recall_split.png)", p.stdout)
            self.assertFalse(os.path.exists(os.path.join(out, "val_loss_seconds.png")))
            with open(os.path.join(out, "compare.md")) as f:
                md = f.read().splitlines()
            table = {l.split("|")[1].strip(): [c.strip() for c in l.split("|")[2:-1]] for l in md
                     if l.startswith("| ") and len(l.split("|")) == 9}
            self.assertEqual(table["swa"][:3], ["sliding-window attention", "attention x 2", "window 4"])
            self.assertEqual(table["gla"][:2], ["gla", "gla x 2"])
            self.assertRegex(table["grassmann"][3], r"^rank [0-9]+ \(matched to attention\)$")
            self.assertEqual(table["g-swa"][:3], ["hybrid", "attention,grassmann", "window 4"])
            results = [l for l in md if l.startswith("| tokens:640 |")]
            self.assertEqual(len(results), 6)
            self.assertFalse([l for l in md if "p vs attention" in l])  # 2 seeds: no p column
            self.assertEqual(results[0].split("|")[11].strip(), "-")  # the first: no ratio to itself
            for line in results[1:]:
                self.assertRegex(line.split("|")[11].strip(), r"^[0-9.]+ (\[[0-9.]+, [0-9.]+\]|\(same on all 2\))$", line)
            with open(os.path.join(out, "compare.csv")) as f:
                rows = list(csv.DictReader(f))
            self.assertEqual({(r["arch"], r["attn_window"], r["grassmann_pair"]) for r in rows},
                             {("attention", "0", ""), ("swa", "4", ""), ("gla", "", ""), ("grassmann", "", "wedge"),
                              ("attn-gla", "0", ""), ("g-swa", "4", "wedge")})
            # each run was trained with its own options: the checkpoints' configs say so
            for name, window in (("attention", None), ("swa", 4), ("g-swa", 4), ("grassmann", None)):
                _, meta = read_safetensors(os.path.join(out, f"{name}_tokens_1337", "ckpt"))
                self.assertEqual(json.loads(meta["config"]).get("attn_window"), window, name)
            # a kept model opens in bin/inspect
            listed = subprocess.run([os.path.join(BIN, "info"), "--list", out], capture_output=True, text=True).stdout
            self.assertEqual(len([l for l in listed.splitlines() if "_tokens_13" in l]), 12, listed)
            insp = subprocess.run([os.path.join(BIN, "inspect"), "--model", os.path.join(out, "g-swa_tokens_1338", "ckpt"),
                                   "--prompt", "line 3 of the", "--out", os.path.join(tmp, "insp")],
                                  capture_output=True, text=True)
            self.assertEqual(insp.returncode, 0, insp.stderr)
            self.assertTrue(os.path.exists(os.path.join(tmp, "insp", "inspect.html")))


@unittest.skipUnless(shutil.which("gnuplot") and os.path.exists(os.path.join(BIN, "train")), "needs make and gnuplot")
class Jobs(unittest.TestCase):
    def test_runs_side_by_side(self):
        """--jobs 2: four runs two at a time, each counted as it ends, the report in the plan's order and
        its numbers those of the same runs one at a time."""
        with tempfile.TemporaryDirectory(prefix="lm-compare-") as tmp:
            data = tiny_data(tmp)
            csvs = []
            for jobs in ("1", "2"):
                out = os.path.join(tmp, "out" + jobs)
                p = subprocess.run([sys.executable, "-m", "harness.compare", "--data", data, "--out", out, "--archs",
                                    "attention grassmann", "--budget", "tokens:640", "--seeds", "2", "--n-layer", "1",
                                    "--n-head", "2", "--n-embd", "32", "--block-size", "16", "--batch-size", "4",
                                    "--threads", "1", "--curve-points", "2", "--eval-iters", "2", "--warmup-iters", "2",
                                    "--grassmann-windows", "1,2", "--jobs", jobs], capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, p.stderr[-2000:] + p.stdout[-2000:])
                with open(os.path.join(out, "compare.csv")) as f:
                    csvs.append([(r["arch"], r["seed"], r["val_loss"]) for r in csv.DictReader(f)])
            self.assertIn("(4 of 4 runs done, ", p.stdout)
            self.assertEqual(csvs[1], csvs[0])
            self.assertEqual([(a, s) for a, s, _ in csvs[1]],
                             [("attention", "1337"), ("grassmann", "1337"), ("attention", "1338"), ("grassmann", "1338")])

if __name__ == "__main__":
    unittest.main(verbosity=2)
