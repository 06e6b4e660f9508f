"""What the harnesses write is held to the C programs' rule (harness/files.py): a regular file or a
new path, checked before any work; a symbolic link there is replaced, never written through; a FIFO,
a device or a folder is refused in one line (never a hang, never written into); a run folder's own
files (ckpt, best.ckpt, its logs) are never a page's path; every file comes through a temporary and
a rename, so a failure leaves the old one. A results or experiment file is opened without blocking
and read to a bound. And a run page draws a log of 300,000 rows (its chart found its range with
Math.min(...rows), past the call stack), checked in headless Chromium where it is installed.
Run from the repository root after make: /usr/bin/python3 -m tests.harness.harness_outputs_test"""
import contextlib
import io
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

from harness.common import BIN, ROOT
from harness.files import output_path, output_problem, read_input, write_output
from harness.report_page import chart, write_page
from tests.harness.compare_test import tiny_data

ENV = dict(os.environ, PYTHONPATH=ROOT)
PRECIOUS = "the user's own file\n"


def harness(module, args, cwd, timeout=300):
    """python3 -m MODULE ARGS in cwd: (exit status, stderr); a hang is a failure."""
    try:
        p = subprocess.run([sys.executable, "-m", module] + args, cwd=cwd, env=ENV, capture_output=True, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{module} {args}: still running after {timeout} s (a FIFO waited on?)") from None
    return p.returncode, p.stderr


def dies(call):
    """The one line call() dies with (exit 2)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            call()
        except SystemExit as e:
            lines = err.getvalue().strip().splitlines()
            assert e.code == 2 and len(lines) == 1, (e.code, err.getvalue())
            return lines[0]
    raise AssertionError("not refused")


class Scratch(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lm-outputs-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.precious = self.path("precious.txt", PRECIOUS)

    def path(self, name, text=None):
        p = os.path.join(self.tmp, name)
        if text is not None:
            with open(p, "w") as f:
                f.write(text)
        return p

    def fifo(self, name):
        p = self.path(name)
        os.mkfifo(p)
        return p

    def untouched(self):
        with open(self.precious) as f:
            self.assertEqual(f.read(), PRECIOUS, "a file was written through a link to it")


class Rule(Scratch):
    """harness/files.py itself."""

    def test_writes_replace_a_link_never_through_it(self):
        link = self.path("out.md")
        os.symlink(self.precious, link)
        write_output(link, "# a report\n")
        self.untouched()
        self.assertFalse(os.path.islink(link))
        with open(link) as f:
            self.assertEqual(f.read(), "# a report\n")
        link2 = self.path("plot.png")
        os.symlink(self.precious, link2)
        with output_path(link2) as tmp:  # what gnuplot gets: the temporary, new and empty
            self.assertEqual(os.path.getsize(tmp), 0)
            with open(tmp, "w") as f:
                f.write("png")
        self.untouched()
        self.assertEqual(sorted(os.listdir(self.tmp)), ["out.md", "plot.png", "precious.txt"])  # no temporary left

    def test_refusals(self):
        fifo = self.fifo("f.md")
        os.makedirs(self.path("d"))
        os.symlink("/dev/null", self.path("null-link"))
        for path, text in ((fifo, "is a FIFO or pipe, not a file"), ("/dev/null", "is a character device"),
                           (self.path("null-link"), "is a character device"), (self.path("d"), "is a directory"),
                           (self.path("nowhere/x.html"), "does not exist (create it first)"),
                           (self.path("d") + "/", "names a folder"), ("", "is empty"),
                           (self.path("a\nb"), "control characters")):
            self.assertIn(text, output_problem(path, "--out"), path)
            if "device" in text or "FIFO" in text or "directory" in text:  # and at the write itself
                self.assertIn(text, dies(lambda: write_output(path, "x")), path)
        self.assertEqual(stat.S_ISFIFO(os.lstat(fifo).st_mode), True)
        run = self.path("run")
        os.makedirs(run)
        for name in ("ckpt", "best.ckpt", "log.csv", "config.json", "step-000010.ckpt", "ckpt.lock"):
            self.assertIn("the run's own", output_problem(os.path.join(run, name), "--out", run_folders=[run]), name)
        self.path("run/ckpt", "weights")
        os.link(self.path("run/ckpt"), self.path("elsewhere.html"))
        self.assertIn("which this run reads", output_problem(self.path("elsewhere.html"), "--out", run_folders=[run]))
        self.assertIsNone(output_problem(os.path.join(run, "run.html"), "--out", run_folders=[run]))

    def test_a_failed_write_keeps_the_old_file(self):
        path = self.path("keep.md", "old\n")
        self.assertIn("No such file", dies(lambda: write_output(self.path("d/x"), "new")))
        with self.assertRaises(RuntimeError):
            with output_path(path):
                raise RuntimeError("gnuplot failed")
        with open(path) as f:
            self.assertEqual(f.read(), "old\n")
        self.assertEqual(sorted(os.listdir(self.tmp)), ["keep.md", "precious.txt"])

    def test_reads_never_block_and_are_bounded(self):
        fifo = self.fifo("r.json")
        self.assertIn("not a regular file", dies(lambda: read_input(fifo, 100)))
        self.assertIn("character device", dies(lambda: read_input("/dev/zero", 100)))
        self.assertIn("is a directory", dies(lambda: read_input(self.tmp, 100)))
        big = self.path("big", "x" * 101)
        self.assertIn("more than the 100", dies(lambda: read_input(big, 100)))
        self.assertEqual(read_input(big, 10, head=True), b"x" * 10)
        self.assertEqual(read_input(big, 200), b"x" * 101)


@unittest.skipUnless(os.path.exists(os.path.join(BIN, "train")) and shutil.which("gnuplot"), "needs make and gnuplot")
class Writers(Scratch):
    """The harnesses as a user runs them, at toy size."""

    SMALL = ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "2",
             "--eval-iters", "1", "--max-iters", "4", "--eval-interval", "2", "--threads", "1"]

    def run_folder(self):
        data = tiny_data(self.tmp)
        run = self.path("run")
        p = subprocess.run([os.path.join(BIN, "train"), "--data", data, "--run", run] + self.SMALL, capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        return run

    def page(self, *args):
        return harness("harness.runs_page", list(args) + ["--sample-tokens", "0"], self.tmp)

    def test_runs_page(self):
        run = self.run_folder()
        ckpt = os.path.join(run, "ckpt")
        with open(ckpt, "rb") as f:
            weights = f.read()
        os.symlink(self.precious, os.path.join(run, "run.html"))  # a planted link: replaced, never written through
        status, err = self.page(run)
        self.assertEqual(status, 0, err)
        self.untouched()
        self.assertFalse(os.path.islink(os.path.join(run, "run.html")))
        self.fifo("page.html")
        os.makedirs(self.path("folder"))
        for out, text in ((ckpt, "the run's own ckpt"), (os.path.join(run, "log.csv"), "the run's own log.csv"),
                          (self.path("page.html"), "is a FIFO or pipe"), ("/dev/null", "is a character device"),
                          (self.path("folder"), "is a directory"), ("/nonexistent/x.html", "does not exist")):
            status, err = self.page(run, "--out", out)
            self.assertEqual((status, len(err.strip().splitlines())), (2, 1), f"{out}: {err}")
            self.assertIn(text, err)
        with open(ckpt, "rb") as f:
            self.assertEqual(f.read(), weights, "the run's checkpoint was replaced")
        self.assertEqual(sorted(os.listdir(run)), [".lm-run", "best.ckpt", "ckpt", "config.json", "log.csv", "log.jsonl",
                                                   "run.html"])

    def test_compare_folder(self):
        """A planted link in compare's folder is replaced, a FIFO or a folder where a file goes refused
        before any run."""
        data = tiny_data(self.tmp)
        out = self.path("cmp")
        os.makedirs(out)
        for name in ("compare.md", "val_loss_tokens.png", "curve_tokens_0.dat", "compare.html"):
            os.symlink(self.precious, os.path.join(out, name))
        args = ["--data", data, "--out", out, "--archs", "attention", "--budget", "tokens:320", "--seeds", "1",
                "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "2",
                "--threads", "1", "--curve-points", "2", "--eval-iters", "1", "--warmup-iters", "2"]
        for planted, text in (("compare.csv", "is a FIFO or pipe"), ("recall_split.png", "is a directory")):
            path = os.path.join(out, planted)
            os.mkfifo(path) if planted.endswith("csv") else os.makedirs(path)
            status, err = harness("harness.compare", args, self.tmp, timeout=120)
            self.assertEqual((status, len(err.strip().splitlines())), (2, 1), err[-2000:])
            self.assertIn(text, err)
            self.assertFalse([f for f in os.listdir(out) if f.endswith(".ckpt")], "it ran before refusing")
            os.remove(path) if planted.endswith("csv") else os.rmdir(path)
        status, err = harness("harness.compare", args, self.tmp)
        self.assertEqual(status, 0, err[-2000:])
        self.untouched()
        for name in ("compare.md", "val_loss_tokens.png", "curve_tokens_0.dat", "compare.html"):
            self.assertTrue(os.path.isfile(os.path.join(out, name)) and not os.path.islink(os.path.join(out, name)))
        self.assertFalse([f for f in os.listdir(out) if ".tmp." in f])


@unittest.skipUnless(shutil.which("chromium"), "needs chromium (make deps)")
class LongLog(Scratch):
    def test_chart_of_300000_rows(self):
        """The charts find their ranges by a loop: a series of 300,000 points is drawn, and the page says
        it is ready (chromium --dump-dom: the page after its script has run)."""
        page = self.path("long.html")
        write_page(page, "a long run", [chart("loss", "Loss", "step", "loss", [
            {"name": "train", "color": "#1f77b4", "points": [[i, 5.0 - i * 1e-6] for i in range(300000)]}])])
        dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                              "file://" + page], capture_output=True, text=True, timeout=180).stdout
        self.assertTrue('data-ready="1"' in dom, "the page did not finish its script")
        self.assertTrue('class="series"' in dom, "no line drawn")


if __name__ == "__main__":
    unittest.main(verbosity=2)
