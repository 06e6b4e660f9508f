"""The harnesses' --config (bin/train's experiment file read into their defaults): each value goes
through the type and choice checks its option has on the command line (harness/config.py). A switch
reads 0, false, "no", "false" as off (a run folder's config.json holds "keep-checkpoints": 0), a
number where a list belongs is refused, choices are kept; and whatever the file holds (true where a
value belongs, nesting 200,000 deep, a FIFO, /dev/zero) is refused in one line, never a traceback
or a hang. parsed() reads a harness's options as its main() does, and stops there.
Run from the repository root: /usr/bin/python3 -m tests.harness.harness_config_test"""
import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

from harness import compare, paper, probe
from harness.common import ROOT

ENV = dict(os.environ, PYTHONPATH=ROOT)
HARNESSES = {"compare": compare, "paper": paper, "probe": probe}


class Parsed(Exception):
    """What a harness's main() parsed, raised instead of running it."""


def parsed(module, argv, parser=False):
    """The options module.main() parses from argv (its --config read into them), without running
    anything: its parse_args hands them to the test instead of to main(). parser: (the parser, them)."""
    parse = argparse.ArgumentParser.parse_args

    def grab(self, args=None, namespace=None):
        options = parse(self, args, namespace)
        raise Parsed((self, options) if parser else options)
    with mock.patch.object(argparse.ArgumentParser, "parse_args", grab), \
            mock.patch.object(sys, "argv", [module.__name__] + list(argv)), \
            contextlib.redirect_stdout(io.StringIO()):
        try:
            module.main()
        except Parsed as p:
            return p.args[0]
    raise AssertionError(f"{module.__name__}.main() parsed no options")


def refusal(call):
    """The one line call() dies with (exit 2)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            call()
        except SystemExit as e:
            lines = err.getvalue().strip().splitlines()
            assert e.code == 2 and len(lines) == 1, (e.code, err.getvalue())
            return lines[0]
    raise AssertionError("not refused")


def limited():
    """A child's memory limit: a reader that does not stop (of /dev/zero) fails, not the machine."""
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def harness(module, args, cwd, timeout=60):
    """python3 -m harness.MODULE ARGS in cwd: (exit status, stderr); a hang is a failure."""
    try:
        p = subprocess.run([sys.executable, "-m", f"harness.{module}"] + args, cwd=cwd, env=ENV, capture_output=True,
                           text=True, timeout=timeout, preexec_fn=limited, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"harness.{module} {args}: still running after {timeout} s") from None
    return p.returncode, p.stderr


class Config(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lm-config-")
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.tmp]))

    def file(self, content, name="c.json"):
        path = os.path.join(self.tmp, name)
        data = content if isinstance(content, (str, bytes)) else json.dumps(content)
        with open(path, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        return path

    def options(self, name, cfg, *args):
        return parsed(HARNESSES[name], ["--config", self.file(cfg)] + list(args))

    def refused(self, name, cfg, text):
        line = refusal(lambda: self.options(name, cfg))
        self.assertIn(text, line)
        return line

    def test_switches(self):
        """0, false, "no", "false", "0", "off" are off; 1, true, "yes", "true", "on" on; null the default."""
        for off in (0, False, "no", "false", "0", "off", "No", None):
            a = self.options("compare", {"keep-checkpoints": off, "ablate": off})
            self.assertEqual((a.keep_checkpoints, a.ablate), (False, False), off)
            self.assertIs(self.options("paper", {"report-only": off}).report_only, False, off)
            self.assertIs(self.options("probe", {"report-only": off, "zoology": off}).report_only, False, off)
        for on in (1, True, "yes", "true", "1", "on"):
            self.assertIs(self.options("compare", {"keep-checkpoints": on}).keep_checkpoints, True, on)
        # the command line still wins
        self.assertIs(self.options("compare", {"keep-checkpoints": 0}, "--keep-checkpoints").keep_checkpoints, True)
        for bad in (2, -1, 0.5, "maybe", "", [], {}, [0]):
            self.refused("compare", {"keep-checkpoints": bad}, "'keep-checkpoints' is a switch: true or false")

    def test_types_and_choices(self):
        """A value is converted and checked as its option's is on the command line."""
        a = self.options("compare", {"n-layer": 2, "lr": 0.002, "norm": "post", "budget": "tokens:1000",
                                     "train-args": "--zero-init 0", "dropout": False})
        self.assertEqual((a.n_layer, a.lr, a.norm, a.budget, a.train_args, a.dropout),
                         (2, 0.002, "post", ["tokens:1000"], "--zero-init 0", 0.0))
        self.assertEqual(self.options("compare", {"budget": ["tokens:1000", "seconds:5"]}).budget,
                         ["tokens:1000", "seconds:5"])
        self.assertEqual(self.options("paper", {"table": 2}).table, 2)
        self.refused("compare", {"norm": True}, "'norm' takes a value")
        self.refused("compare", {"norm": "middle"}, "'norm' must be one of pre, post")
        self.refused("compare", {"precision": "fp16"}, "'precision' must be one of fp32, bf16")
        self.refused("paper", {"table": 3}, "'table' must be one of 1, 2 (got 3)")
        self.refused("paper", {"table": "x"}, "'table' 'x' is not a valid number")
        self.refused("compare", {"n-layer": "abc"}, "'n-layer' 'abc' is not a valid number")
        self.refused("compare", {"n-layer": 2.5}, "'n-layer'")
        self.refused("compare", {"budget": 5}, "'budget' takes a string or a list of strings (got 5)")
        self.refused("compare", {"budget": [True]}, "'budget' takes a value")
        self.refused("compare", {"lr": [0.1]}, "'lr' takes one value")

    def test_what_no_option_takes(self):
        """true where a string belongs: one line each, never a traceback later on."""
        cases = [("compare", "archs"), ("compare", "budget"), ("compare", "train-args"), ("paper", "norms"),
                 ("paper", "recipes"), ("paper", "controls"), ("paper", "wikitext2"), ("probe", "archs"),
                 ("probe", "tasks")]
        for name, key in cases:
            path = self.file({key: True}, f"{name}-{key}.json")
            status, err = harness(name, ["--config", path, "--out", os.path.join(self.tmp, "o"), "--data",
                                         os.path.join(self.tmp, "nodata")], self.tmp)
            self.assertEqual(status, 2, f"{name} {key}: {err[-1500:]}")
            self.assertEqual(len(err.strip().splitlines()), 1, err[-1500:])
            self.assertIn(f"'{key}'", err)
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "o")), "refused after it began")

    def test_hostile_files(self):
        """Nesting 200,000 deep, a FIFO, /dev/zero, a folder, a key twice, NaN: one line, at once."""
        deep = self.file('{"a": ' + "[" * 200000 + "]" * 200000 + "}", "deep.json")
        fifo = os.path.join(self.tmp, "fifo.json")
        os.mkfifo(fifo)
        for path, text in ((deep, "nests too deep"), (fifo, "is not a regular file"), ("/dev/zero", "not a regular file"),
                           (self.tmp, "is a directory"), (self.file('{"lr": 1, "lr": 2}', "twice.json"), "twice"),
                           (self.file('{"lr": NaN}', "nan.json"), "NaN"), (self.file("[1]", "list.json"), "not a JSON"),
                           (self.file(b'{"a": "\xff"}', "latin.json"), "not UTF-8")):
            status, err = harness("compare", ["--config", path, "--out", os.path.join(self.tmp, "o")], self.tmp,
                                  timeout=30)
            self.assertEqual(status, 2, f"{path}: {err[-1500:]}")
            self.assertEqual(len(err.strip().splitlines()), 1, err[-1500:])
            self.assertIn(text, err)
        big = self.file(" " * (2 << 20) + "{}", "big.json")
        self.assertIn("more than the", refusal(lambda: parsed(compare, ["--config", big])))


if __name__ == "__main__":
    unittest.main(verbosity=2)
