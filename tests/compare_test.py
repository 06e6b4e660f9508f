"""make compare's --precision: every bin/train command carries it, and a
tiny bf16 comparison (1 layer, 1 seed, one token budget, where the CPU has
AVX512_BF16 and gnuplot is installed: a few seconds) says bf16 in its report
and its CSV. Run from the repository root after make:
/usr/bin/python3 -m tests.compare_test"""
import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from harness.common import BIN, command_line
from harness.compare import ABLATION, ONE_SEED, Harness, difference, precision_text
from harness.report_page import chart, markdown_sections, write_page

ARCH = {"name": "attention", "mixers": ["attention"], "rank": None}


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


class Commands(unittest.TestCase):
    def test_precision_passed(self):
        for p in ("fp32", "bf16"):
            args = Harness(options(p)).train_args(ARCH, 7, "c.ckpt", "c.csv", 5)
            i = args.index("--precision")
            self.assertEqual(args[i + 1], p)
        self.assertIn("bf16", precision_text("bf16"))
        self.assertNotIn("bf16", precision_text("fp32"))

    def test_recipe_and_ablation_passed(self):
        self.assertNotIn("--recipe", Harness(options("fp32")).train_args(ARCH, 7, "c.ckpt", "c.csv", 5))
        args = Harness(options("fp32", "modern")).train_args(ARCH, 7, "c.ckpt", "c.csv", 5)
        self.assertEqual(args[args.index("--recipe") + 1], "modern")
        # a variant's options come after --recipe, so that they win (bin/train: the last one given)
        variant = dict(ARCH, extra=["--qk-norm", "0"])
        args = Harness(options("fp32", "modern")).train_args(variant, 7, "c.ckpt", "c.csv", 5)
        self.assertGreater(args.index("--qk-norm"), args.index("--recipe"))
        self.assertEqual(ABLATION[0], ("modern", []))
        self.assertEqual(ABLATION[-1], ("gpt2", ["--recipe", "gpt2"]))
        # less Muon: AdamW, given after --recipe modern (which chooses Muon), so that it wins
        self.assertIn(("no Muon (AdamW)", ["--optimizer", "adamw"]), ABLATION)
        variant = dict(ARCH, extra=["--optimizer", "adamw"])
        args = Harness(options("fp32", "modern")).train_args(variant, 7, "c.ckpt", "c.csv", 5)
        self.assertGreater(args.index("--optimizer"), args.index("--recipe"))
        self.assertEqual(len({tuple(extra) for _, extra in ABLATION}), len(ABLATION))

    def test_train_args_passed(self):
        # after --recipe, so that they win; an ablation variant's options after them
        o = options("fp32", "modern")
        o.train_args = "--zero-init 0 --logit-softcap 30"
        args = Harness(o).train_args(dict(ARCH, extra=["--qk-norm", "0"]), 7, "c.ckpt", "c.csv", 5)
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

    def test_one_seed_has_no_spread(self):
        self.assertEqual(difference(1.339, 0.0, 1), ONE_SEED)
        self.assertEqual(difference(1.339, 0.010, 3), "a difference (it exceeds the seed spread)")
        self.assertEqual(difference(1.005, 0.010, 3), "NOT a difference (within the seed spread)")

    def test_bad_precision(self):
        p = subprocess.run([sys.executable, "-m", "harness.compare", "--precision", "fp16"], capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--precision", p.stderr)


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


if __name__ == "__main__":
    unittest.main(verbosity=2)
