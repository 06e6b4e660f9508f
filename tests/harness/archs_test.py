"""The architectures the harnesses compare (harness/archs.py), from the mixer
registry alone (bin/info --mixers --json, through harness/registry.py): the
syntax (each key an option's arch key; refused in one line: a mixer the
registry lacks, a key no layer has, a value bin/info refuses), families and
labels, the registry's layer counts against the closed form, the size match
(against brute force, and against bin/train's own counts), the Zoology state
sizes; and a new mixer through the registry alone: fed a registry with a
copy of gla named glb, the harness parses it, its results schemas take it,
and it sits on the Zoology axis with gla's state size. Run from the
repository root after make: /usr/bin/python3 -m tests.harness.archs_test"""
import json
import os
import shutil
import tempfile
import unittest
import unittest.mock

from harness import registry
from harness.archs import Arch, closest_size, parse_archs
from harness.common import BIN
from harness.archs import count_params, size_archs, train_takes
from harness.lib.compare.runs import csv_columns
from harness.results import Invalid
from harness.lib.zoology_report import runs_schema, state_floats
from tests.harness.compare_test import refusal, tiny_data


def pair_features(r, pair="wedge"):
    """The features a Grassmann layer of rank r computes from each (z_t, z_{t-d}): the Pluecker
    coordinates (wedge, r(r-1)/2), the normalised outer product (outer, r^2), or the sum (sum, r)."""
    return {"wedge": r * (r - 1) // 2, "outer": r * r, "sum": r}[pair]


def grassmann_layer_params(C, r, pair="wedge"):
    """A Grassmann layer's parameters at width C and rank r, written out here as the brief has them (the
    harness has no formula of its own: it asks the registry): W_red (r C + r), the feature projection
    (C F + C, F = pair_features), the gate (2 C C + C) and the LayerNorm (2 C)."""
    return r * C + r + C * pair_features(r, pair) + C + 2 * C * C + C + 2 * C



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
            self.assertTrue(line.startswith("archs_test: error: --archs"), line)

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
        self.assertEqual(full, 2 * 2 * 256 * 64)  # two layers' keys and values (the step's scratch not counted)
        self.assertLess(state("attention", T=128), full)
        self.assertEqual(state("w=attention:window=17"), 2 * 2 * 17 * 64)
        self.assertEqual(state("w=attention:window=17"), state("w=attention:window=17", T=128))
        self.assertEqual(state("w=attention:window=0"), full)  # 0: no window
        self.assertEqual(state("w=attention:window=512"), full)  # past T: all of it
        layer = lambda spec: state(spec) // 2
        self.assertEqual(state("h=attention,grassmann:rank=15:window=17"),
                         layer("w=attention:window=17") + layer("g=grassmann:rank=15"))
        self.assertEqual(state("gla", heads=4), state("gla", heads=4, T=64))
        # the delta rule asks its question at gla's state: each head's hs x hs matrix, no scratch
        self.assertEqual(state("deltanet", heads=4), 2 * 64 * 16)
        self.assertEqual(state("deltanet", heads=4), state("gla", heads=4))
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
