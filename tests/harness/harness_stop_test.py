"""The harnesses stop when told (harness/procs.py): SIGTERM, SIGINT to the whole group (Ctrl-C) or
SIGHUP (a closed terminal) to harness.compare or harness.paper is forwarded to the programs it runs,
each in a process group of its own; the harness waits for them, says so in one line and ends by the
same signal: no traceback, no child left training, no temporary or lock left; the stopped run's folder
keeps the checkpoint bin/train saved, for --resume. `... | head -1` ends it quietly, without a BrokenPipeError; two architectures
whose runs would share files are refused before any run. Each case trains a toy model on a time
budget it never reaches, and signals the harness once its bin/train is running.
Run from the repository root after make: /usr/bin/python3 -m tests.harness.harness_stop_test"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from harness.common import BIN, ROOT
from tests.harness.compare_test import tiny_data

ENV = dict(os.environ, PYTHONPATH=ROOT)
TOY = ["--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "2", "--seeds", "1",
       "--threads", "1", "--eval-iters", "1", "--warmup-iters", "2"]
LONG = ["--budget", "seconds:120"]  # never reached: the harness is stopped first


def children():
    """{pid: parent pid} of every process."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    found[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return found


def descendants(pid):
    """The processes below pid: {pid: its command line}."""
    parents, found, todo = children(), {}, [pid]
    while todo:
        p = todo.pop()
        for child, parent in parents.items():
            if parent == p and child not in found:
                cmd = command_of(child)
                if cmd is not None:
                    found[child] = cmd
                    todo.append(child)
    return found


def running(pid):
    """Whether pid is a live process (not gone, not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def kill_left(below):
    """Kills each process of below still running as recorded (its command line the same: not a new
    process that took its pid)."""
    for pid, cmd in below.items():
        if running(pid) and command_of(pid) == cmd:
            os.kill(pid, signal.SIGKILL)


def command_of(pid):
    """pid's command line, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None


@unittest.skipUnless(os.path.exists(os.path.join(BIN, "train")) and shutil.which("gnuplot"), "needs make and gnuplot")
class Stop(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lm-stop-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.data = tiny_data(self.tmp)

    def start(self, module, args):
        """The harness, in a session of its own (as a terminal would start it: its own process group);
        its stderr into a file (a pipe the test does not read could fill), read by err()."""
        self.err_file = open(os.path.join(self.tmp, "stderr"), "w+")
        self.addCleanup(self.err_file.close)
        p = subprocess.Popen([sys.executable, "-m", module] + args, cwd=self.tmp, env=ENV, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=self.err_file, start_new_session=True)
        self.addCleanup(lambda: p.poll() is None and os.killpg(p.pid, signal.SIGKILL))
        return p

    def err(self):
        self.err_file.seek(0)
        return self.err_file.read()

    def training(self, p, n=1, timeout=120):
        """The processes below p once n bin/train runs are training (their --max-seconds given)."""
        stop = time.monotonic() + timeout
        while time.monotonic() < stop:
            below = descendants(p.pid)
            if sum(cmd.startswith(os.path.join(BIN, "train")) and "--max-seconds" in cmd for cmd in below.values()) >= n:
                time.sleep(1)  # into its training steps
                return descendants(p.pid)
            if p.poll() is not None:
                self.fail(f"it ended before training: {self.err()[-2000:]}")
            time.sleep(0.1)
        self.fail(f"no {n} bin/train running after {timeout} s: {descendants(p.pid)}")

    def stopped(self, p, below, sig, name, out):
        """p ended by sig with its one line, its programs with it, nothing partial left in out."""
        self.addCleanup(kill_left, below)  # orphans, if it failed to stop them
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.fail(f"still running 120 s after {signal.Signals(sig).name}")
        err = self.err()
        self.assertNotIn("Traceback", err)
        self.assertEqual(p.returncode, -sig, err[-2000:])
        self.assertRegex((err.strip().splitlines() or ["(nothing)"])[-1],
                         rf"^{name}: stopped \({signal.Signals(sig).name}\): ")
        left = {pid: cmd for pid, cmd in below.items() if running(pid)}
        self.assertEqual(left, {}, "programs it ran are still running")
        for folder, _, files in os.walk(out):
            partial = [f for f in files if re.search(r"\.tmp\.|\.lock$", f)]
            self.assertEqual(partial, [], f"partial files in {folder}")

    def test_sigterm_compare(self):
        out = os.path.join(self.tmp, "out")
        p = self.start("harness.compare", ["--data", self.data, "--out", out, "--archs", "attention"] + TOY + LONG)
        below = self.training(p)
        p.send_signal(signal.SIGTERM)
        self.stopped(p, below, signal.SIGTERM, "compare", out)
        self.assertEqual(sorted(os.listdir(out)), ["attention_seconds_1337", "sweep.json"])
        run = os.path.join(out, "attention_seconds_1337")  # the stopped run's folder: its checkpoint, no scores
        self.assertTrue(os.path.isfile(os.path.join(run, "ckpt")), os.listdir(run))
        self.assertFalse(os.path.exists(os.path.join(run, "scores.json")))

    def test_ctrl_c_to_the_group_compare_jobs_2(self):
        out = os.path.join(self.tmp, "out")
        p = self.start("harness.compare", ["--data", self.data, "--out", out, "--archs", "attention gla",
                                           "--jobs", "2"] + TOY + LONG)
        below = self.training(p, 2)
        os.killpg(p.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the harness's group
        self.stopped(p, below, signal.SIGINT, "compare", out)

    def test_sighup_paper_stops_its_sweep(self):
        out = os.path.join(self.tmp, "paper")
        p = self.start("harness.paper", ["--data", self.data, "--out", out, "--norms", "pre", "--seeds", "1",
                                         "--ablation-tokens", "0", "--threads", "1", "--budget", "seconds:120"])
        below = self.training(p)
        self.assertTrue(any("harness.compare" in cmd for cmd in below.values()), below)
        p.send_signal(signal.SIGHUP)
        self.stopped(p, below, signal.SIGHUP, "paper", out)

    def test_head_1(self):
        out = os.path.join(self.tmp, "out")
        # a short run: its next line, once head has gone, ends it quietly
        cmd = [sys.executable, "-m", "harness.compare", "--data", self.data, "--out", out, "--archs", "attention",
               "--budget", "tokens:320"] + TOY
        p = subprocess.run(["bash", "-c", 'set -o pipefail; "$@" | head -1', "bash"] + cmd, cwd=self.tmp, env=ENV,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.stdout.count("\n"), 1, p.stdout)
        self.assertNotIn("Error", p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        self.assertEqual(p.returncode, 128 + signal.SIGPIPE, p.stderr)

    def test_archs_that_share_files(self):
        out = os.path.join(self.tmp, "out")
        for archs, text in (("attention,gla attention-gla=attention,gla", "'attention,gla_seconds_1337' and "
                                                                            "'attention-gla_seconds_1337'"),):
            p = subprocess.run([sys.executable, "-m", "harness.compare", "--data", self.data, "--out", out, "--archs",
                                archs] + TOY + LONG + ["--n-layer", "2"], cwd=self.tmp, env=ENV, capture_output=True,
                               text=True, timeout=120)
            self.assertEqual((p.returncode, len(p.stderr.strip().splitlines())), (2, 1), p.stderr)
            self.assertIn(text, p.stderr)
            self.assertFalse(os.path.exists(out), "refused after it began")
        p = subprocess.run([sys.executable, "-m", "harness.compare", "--data", self.data, "--out", out, "--archs",
                            "attention"] + TOY + LONG + ["--budget", "seconds:2"], cwd=self.tmp, env=ENV, capture_output=True,
                           text=True, timeout=120)
        self.assertEqual((p.returncode, len(p.stderr.strip().splitlines())), (2, 1), p.stderr)
        self.assertIn("two seconds budgets", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
