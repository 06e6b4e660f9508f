"""make compare's --precision: every bin/train command carries it, and a
tiny bf16 comparison (1 layer, 1 seed, one token budget, where the CPU has
AVX512_BF16 and gnuplot is installed: a few seconds) says bf16 in its report
and its CSV. The architectures' syntax (harness/archs.py: options of their
own, refused in one line), the rank matched by parameter count (against
brute force, the pair kinds' layer counts, and bin/train's own counts), and
a tiny comparison of the four families and a hybrid whose report has their
counts and p-values. The harness knows mixers only from the registry
(bin/info --mixers --json): fed a registry with one more mixer (a copy of
gla under another name), it takes that mixer everywhere, and a name the
registry lacks is one line. Run from the repository root after make:
/usr/bin/python3 -m tests.compare_test"""
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
from harness.archs import Arch, closest_size, parse_archs
from harness.common import BIN, SWEEP_ENV, Sweep, command_line, duration, fit_warmup, take_config
from harness.compare import (ABLATION, ONE_SEED, Harness, count_params, csv_columns, difference, precision_text,
                             size_archs, train_takes)
from harness.report_page import chart, markdown_sections, write_page
from harness.results import Invalid
from harness.safetensors_np import read_safetensors
from harness.zoology import runs_schema, state_floats

ARCH = {"name": "attention", "mixers": ["attention"], "size": None}


def pair_features(r, pair="wedge"):
    """The features a Grassmann layer of rank r computes from each (z_t, z_{t-d}): the Pluecker
    coordinates (wedge, r(r-1)/2), the normalised outer product (outer, r^2), or the sum (sum, r)."""
    return {"wedge": r * (r - 1) // 2, "outer": r * r, "sum": r}[pair]


def grassmann_layer_params(C, r, pair="wedge"):
    """A Grassmann layer's parameters at width C and rank r, written out here as the brief has them (the
    harness has no formula of its own: it asks the registry): W_red (r C + r), the feature projection
    (C F + C, F = pair_features), the gate (2 C C + C) and the LayerNorm (2 C)."""
    return r * C + r + C * pair_features(r, pair) + C + 2 * C * C + C + 2 * C


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
        args = Harness(o).train_args(ARCH, 7, "c.ckpt", "c.csv", 5)
        self.assertEqual(args[args.index("--grassmann-windows") + 1], "1,2")
        self.assertNotIn("--grassmann-rank", args)
        self.assertEqual(registry.fixed_sizes(o), {"grassmann-rank": 12})
        o.grassmann_rank = "0"  # 0: matched, as not given
        self.assertEqual(registry.fixed_sizes(o), {})


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


class Archs(unittest.TestCase):
    def test_options(self):
        archs = parse_archs("attention swa=attention:window=17 outer=grassmann:pair=outer:rank=24 "
                            "sum-m=grassmann:pair=sum:match=outer hyb=attention,grassmann:window=0", 2)
        self.assertEqual(archs[0], Arch("attention", ["attention"] * 2))
        self.assertEqual((archs[1].options, archs[1].train_args()), ({"window": "17"}, ["--attn-window", "17"]))
        self.assertEqual((archs[2].options, archs[2].size(), archs[2].match), ({"pair": "outer", "rank": "24"}, 24, None))
        self.assertEqual(archs[2].train_args(), ["--grassmann-pair", "outer"])  # the size: the harness's to pass
        self.assertEqual((archs[3].options, archs[3].size(), archs[3].match), ({"pair": "sum"}, None, "outer"))
        self.assertEqual((archs[4].mixers, archs[4].options), (["attention", "grassmann"], {"window": "0"}))
        self.assertEqual([a.family() for a in archs],
                         ["attention", "sliding-window attention", "grassmann", "grassmann", "hybrid"])
        self.assertEqual(parse_archs("gla", 3)[0].family(), "gla")
        self.assertEqual(archs[3].options_text(), "pair=sum:match=outer")
        # what the results files record: each option its mixers have, its own or the default, the size resolved
        self.assertEqual(archs[1].columns(), {"attn_window": 17})
        self.assertEqual(archs[2].columns(24), {"grassmann_rank": 24, "grassmann_pair": "outer"})
        self.assertEqual(archs[4].columns(15), {"attn_window": 0, "grassmann_rank": 15, "grassmann_pair": "wedge"})
        self.assertEqual(registry.label("outer-m", archs[2].columns(22)), "outer-m (rank 22, outer)")
        self.assertEqual(registry.label("swa", archs[1].columns()), "swa (window 17)")
        self.assertEqual(registry.label("hyb", archs[4].columns(15)), "hyb (rank 15)")  # defaults unsaid, the size said

    def test_refused_in_one_line(self):
        for spec, says in (("attention:window=17", "needs a name"),
                           ("g=grassmann:pair=cross", "grassmann pair map must be wedge, outer or sum"),
                           ("g=grassmann:rank=1", "grassmann rank must be at least 2"),
                           ("g=grassmann:rank=2x", "rank= must be a whole number"),
                           ("g=grassmann:rank=１２", "rank= must be a whole number"),
                           ("s=attention:window=-1", "window= must be a whole number"),
                           ("s=attention:window=20000", "window= must be from 0 to 16384"),
                           ("a=attention:pair=outer", "no grassmann layer for pair="),
                           ("g=grassmann:window=4", "no attention layer for window="),
                           ("g=grassmann:match=h h=grassmann", "match= must name an architecture given before it"),
                           ("g=grassmann:match=g", "match= must name an architecture given before it"),
                           ("a=attention b=attention:match=a", "no layer whose mixer has a size for match="),
                           ("a=attention g=grassmann:rank=4:match=a", "both rank= and match="),
                           ("g=grassmann:rank=4:rank=8", "gives rank= twice"),
                           ("g=grassmann:size=4", "'size=4' is not one of match=, pair=, rank=, window="),
                           ("g=grassmann:outer", "'outer' is not one of"),
                           ("a:b=attention", "'a' is not a registered mixer"),
                           ("x=attention,nope", "'nope' is not a registered mixer (bin/info --mixers: attention, "),
                           ("x'y=grassmann:pair=sum", "may hold only letters"),
                           ("s=attention:window=4 s=attention", "the same name")):
            line = refusal(lambda: parse_archs(spec, 1))
            self.assertIn(says, line, spec)
            self.assertTrue(line.startswith("compare_test: error: --archs"), line)

    def test_layer_counts_are_the_registry_s(self):
        """The registry's parameters of a layer (bin/info --mixers) against the closed form, for each pair kind."""
        for C, r, pair in ((32, 4, "wedge"), (64, 15, "outer"), (128, 32, "sum"), (256, 32, "wedge")):
            d = registry.describe(["--n-layer", 1, "--n-head", 4, "--n-embd", C, "--mixer", "grassmann",
                                   "--grassmann-rank", r, "--grassmann-pair", pair])
            self.assertEqual(d["layers"][0]["params"], grassmann_layer_params(C, r, pair), (C, r, pair))
        self.assertEqual(grassmann_layer_params(256, 32), 32 * 256 + 32 + 256 * 496 + 256 + 2 * 256 * 256 + 256 + 512)

    def test_closest_size(self):
        # the rank of outer and of sum whose layer count is closest to wedge's at the paper's r = 32, n_embd 256
        target = grassmann_layer_params(256, 32, "wedge")
        outer = closest_size(lambda r: grassmann_layer_params(256, r, "outer"), target, 2, 256)
        self.assertEqual(outer, (22, grassmann_layer_params(256, 22, "outer")))  # 22: 5,642 short; 23: 6,135 over
        # sum would need r = 264 > n_embd: the search stops at its hi
        self.assertEqual(closest_size(lambda r: grassmann_layer_params(256, r, "sum"), target, 2, 256)[0], 256)
        self.assertEqual(closest_size(lambda r: grassmann_layer_params(256, r, "sum"), target, 2, 1024)[0], 264)
        for C in (32, 64, 100, 128):  # against brute force
            for pair in ("wedge", "outer", "sum"):
                for ref in (4, 16, 31):
                    size = lambda r: grassmann_layer_params(C, r, pair)
                    want = grassmann_layer_params(C, ref, "wedge")
                    brute = min(range(2, C + 1), key=lambda r: (abs(size(r) - want), r))
                    self.assertEqual(closest_size(size, want, 2, C)[0], brute, (C, pair, ref))
        asked = []
        closest_size(lambda r: asked.append(r) or r, 100, 2, 256)
        self.assertEqual(len(asked), len(set(asked)))  # each count asked once (each is a bin/train run)

    def test_state_floats(self):
        """make probe --zoology's state sizes are the registry's (bin/info --mixers): sliding-window attention
        keeps its window's keys and values whatever T, full attention's grow with T, a hybrid's are its
        layers', a recurrent state does not grow."""
        def state(spec, T=256, C=64, heads=1):
            shape = ["--n-layer", 2, "--n-head", heads, "--n-embd", C, "--block-size", T]
            a = parse_archs(spec, 2)[0]
            knob = a.knob()
            return state_floats(shape, {"mixers": a.mixers, "args": a.train_args(), "knob": knob,
                                        "size": a.size() or (knob and knob["default"])})
        full = state("attention")
        self.assertGreater(full, 2 * 2 * 256 * 64)  # the keys and values, and the step's scratch
        self.assertLess(state("attention", T=128), full)
        self.assertLess(state("w=attention:window=17"), full / 8)
        self.assertEqual(state("w=attention:window=17"), state("w=attention:window=17", T=128))
        self.assertEqual(state("w=attention:window=0"), full)  # 0: no window
        self.assertEqual(state("w=attention:window=512"), full)  # past T: all of it
        layer = lambda spec: state(spec) // 2
        self.assertEqual(state("h=attention,grassmann:rank=15:window=17"),
                         layer("w=attention:window=17") + layer("g=grassmann:rank=15"))
        self.assertEqual(state("gla", heads=4), state("gla", heads=4, T=64))
        self.assertGreaterEqual(state("gla", heads=4), 2 * 64 * 16)  # its heads' matrices, and scratch


def with_copy(real, name="glb", of="gla"):
    """registry._describe as bin/info --mixers --json would answer with a copy of mixer `of` registered
    under `name` (its files copied with every `of` replaced), from the real registry's answer for `of`."""
    def rename(entry):
        text = json.dumps(entry).replace(f'"{of}"', f'"{name}"').replace(f'"{of}.', f'"{name}.')
        return json.loads(text)

    def fake(args, config_text):
        args = list(args)
        layers = None
        if "--mixer" in args:
            i = args.index("--mixer") + 1
            layers = args[i].split(",")
            args[i] = ",".join(of if m == name else m for m in layers)
        d = json.loads(json.dumps(real(tuple(args), config_text)))
        d["mixers"].append(rename(next(m for m in d["mixers"] if m["name"] == of)))
        for l, layer in enumerate(d["layers"]):
            if layers and (layers[0] if len(layers) == 1 else layers[l]) == name:
                d["layers"][l] = rename(layer)
        return d
    return fake


class NewMixer(unittest.TestCase):
    """A mixer the harness has never heard of, given by the registry alone: a copy of gla named glb (as
    src/mixers/gla* copied under that name and registered would give). Every part of the harness takes it,
    with gla's numbers; a name the registry lacks is one line, never another mixer's branch."""

    def setUp(self):
        patch = unittest.mock.patch.object(registry, "_describe", with_copy(registry._describe))
        patch.start()
        self.addCleanup(patch.stop)

    def test_everywhere(self):
        self.assertIn("glb", registry.names())
        archs = parse_archs("gla glb h=attention,glb", 2)
        self.assertEqual([a.family() for a in archs], ["gla", "glb", "hybrid"])
        self.assertIsNone(archs[1].knob())
        self.assertIn("glb", registry.families())
        # the results files' schemas take it
        self.assertEqual(csv_columns()["mixers"].text("glb,attention"), "glb,attention")
        with self.assertRaises(Invalid):
            csv_columns()["mixers"].text("glc,attention")
        row = {"arch": "glb", "seq_len": 64, "pairs": 4, "n_embd": 64, "lr": 1e-3, "seed": 1, "accuracy": 0.5,
               "answer_loss": 1.0, "answers": 10, "params": 1000, "state_floats": 10, "steps": 1, "train_seconds": 1.0,
               "family": "glb"}
        self.assertEqual(runs_schema().json([row])[0]["family"], "glb")
        # on the Zoology axis with gla's state size, at every width and length
        shape = lambda C, T: ["--n-layer", 2, "--n-head", 1, "--n-embd", C, "--block-size", T]
        arch = lambda m: {"mixers": [m, m], "args": [], "knob": None, "size": None}
        for C, T in ((64, 64), (128, 256)):
            self.assertEqual(state_floats(shape(C, T), arch("glb")), state_floats(shape(C, T), arch("gla")))
        # its tensors are its own, with gla's shapes
        d = registry.describe(["--mixer", "attention,glb", "--n-layer", 2])
        self.assertEqual([t["name"] for t in d["layers"][1]["tensors"]][:2], ["glb.qkv.weight", "glb.qkv.bias"])
        self.assertIn("'glc' is not a registered mixer", refusal(lambda: parse_archs("glc", 2)))


@unittest.skipUnless(os.path.exists(os.path.join(BIN, "train")), "needs make (bin/train)")
class Counts(unittest.TestCase):
    """The layer count and the matching against bin/train --count-params (tiny data)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="lm-counts-")
        cls.data = tiny_data(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def shared(self, n_embd=32):
        return ["--n-layer", "2", "--n-head", "2", "--n-embd", str(n_embd), "--block-size", "16",
                "--grassmann-windows", "1,2"]

    def test_layer_count_is_bin_train_s(self):
        pairs = ("wedge", "outer", "sum") if train_takes("--grassmann-pair") else ("wedge",)
        knob = registry.size_knob(["grassmann"])
        for pair in pairs:
            extra = ["--grassmann-pair", pair] if pair != "wedge" else []
            n = lambda r: count_params(self.data, self.shared() + extra, ["grassmann"] * 2, knob, r)
            self.assertEqual(n(8) - n(4), 2 * (grassmann_layer_params(32, 8, pair) - grassmann_layer_params(32, 4, pair)),
                             pair)

    def test_size_archs(self):
        said = []
        archs = size_archs(parse_archs("a=attention,attention g=grassmann:rank=6 h=attention,grassmann:match=g "
                                       "m=grassmann big=grassmann:rank=60 c=grassmann:match=big", 2),
                           self.data, self.shared(), 32, say=said.append)
        by = {x["name"]: x for x in archs}
        self.assertEqual((by["a"]["size"], by["g"]["size"]), (None, 6))
        # h's rank: its count closest to g's, among every rank up to n_embd (brute force over bin/train's counts)
        knob = registry.size_knob(["grassmann"])
        counts = {r: count_params(self.data, self.shared(), ["attention", "grassmann"], knob, r) for r in range(2, 33)}
        want = min(counts, key=lambda r: (abs(counts[r] - by["g"]["params"]), r))
        self.assertEqual((by["h"]["size"], by["h"]["params"], by["h"]["matched"]), (want, counts[want], "g"))
        self.assertEqual(by["m"]["matched"], "a")  # no rank of its own: matched to the first
        self.assertEqual((by["c"]["size"], by["c"]["capped"]), (32, True))  # 60 is out of reach below n_embd 32
        self.assertTrue(any("rank matched to big's" in t and "capped at n_embd 32" in t for t in said), said)
        self.assertEqual(by["h"]["label"], "h (rank %d)" % want)
        # a size given to the harness for every architecture that gives none (--grassmann-rank 9)
        fixed = size_archs(parse_archs("a=attention m=grassmann", 2), self.data, self.shared(), 32,
                           {"grassmann-rank": 9})
        self.assertEqual((fixed[1]["size"], fixed[1]["matched"]), (9, None))


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
        report's architecture table (family, options, matched rank, counts) and a p for each against the first,
        trained two at a time."""
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
            self.assertEqual(results[0].split("|")[11].strip(), "-")  # the first: no p against itself
            for line in results[1:]:
                self.assertRegex(line.split("|")[11].strip(), r"^p ([0-9.e-]+|< 0\.001)$", line)
            with open(os.path.join(out, "compare.csv")) as f:
                rows = list(csv.DictReader(f))
            self.assertEqual({(r["arch"], r["attn_window"], r["grassmann_pair"]) for r in rows},
                             {("attention", "0", ""), ("swa", "4", ""), ("gla", "", ""), ("grassmann", "", "wedge"),
                              ("attn-gla", "0", ""), ("g-swa", "4", "wedge")})
            # each run was trained with its own options: the checkpoints' configs say so
            for name, window in (("attention", None), ("swa", 4), ("g-swa", 4), ("grassmann", None)):
                _, meta = read_safetensors(os.path.join(out, f"{name}_tokens_1337.ckpt"))
                self.assertEqual(json.loads(meta["config"]).get("attn_window"), window, name)
            # a kept model opens in bin/inspect
            insp = subprocess.run([os.path.join(BIN, "inspect"), "--model", os.path.join(out, "g-swa_tokens_1338.ckpt"),
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
