"""bin/info's reader of checkpoint headers and run folders, fuzzed with
Hypothesis (Debian's python3-hypothesis). Each input is a run folder made
from a good one (a tiny model bin/train writes at the start): a header
field of the checkpoint (its run options, config, step, tokenizer) set to a
drawn value or JSON text, bytes of the header spliced, the folder's name or
its config.json drawn (control bytes, newlines, pasted JSON, not JSON at
all). bin/info then reads it as text, --json and --list --json, and must
either show it, with text free of control bytes, one valid JSON object with
its keys and (--list) the group's line, the header and one line per run, or exit 2 with one printable line: anything
else (a crash, a signal, invalid JSON, a second line) fails.

/usr/bin/python3 -m tests.fuzz.info_fuzz             a fixed set of inputs (make test)
/usr/bin/python3 -m tests.fuzz.info_fuzz --seconds N random inputs for about N seconds (make fuzz)"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest

# Hypothesis keeps a cache of Unicode tables: in the temporary folder, not the working tree.
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "lm-hypothesis"))
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402 (after its setting)

from tests.tools.ckpt_poison import KEY, sign

BIN = os.environ.get("BIN", "bin")
KEYS = {"path", "name", "run", "checkpoint", "resumable", "step", "max_iters", "tokens", "val_loss", "best_val_loss",
        "best_step", "best_checkpoint", "params", "model", "recipe", "tokenizer", "options", "config"}
# Strings that have broken a reader somewhere, or should be escaped by one.
INTERESTING = ["", "0", "-1", "1e999", "nan", "x", '"', "\n", "\x1b[2J", "\x1b]0;T\x07", "\x9b", "\x00", "\u2028",
               "9" * 30, "{", "}", '1, "resumable": true, "step": 999999, "x":{', '{"a":1}, "tokens": "many", "q": {}',
               "--help", "\xff\xfe"]
leaves = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.floats(), st.text(max_size=12),
                   st.sampled_from(INTERESTING))
json_values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=3) |
                           st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)
texts = st.one_of(st.sampled_from(INTERESTING), st.text(max_size=20), json_values.map(json.dumps))
FIELDS = ["train", "config", "step", "tokenizer", "data_rng", "tokenizer_text"]


def pack(header, data):
    """A checkpoint from its header (a dict) and data, the checksum recomputed."""
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-(len(h) + 8) % 8)
    raw = bytearray(struct.pack("<Q", len(h)) + h + data)
    return bytes(sign(raw) if KEY in raw else raw)


class Good:
    """The good run folder every input is made from."""
    dir = None

    @classmethod
    def make(cls):
        if cls.dir:
            return cls
        cls.dir = tempfile.mkdtemp(prefix="lm-info-fuzz-")
        text = os.path.join(cls.dir, "a.txt")
        with open(text, "w") as f:
            f.writelines(f"The whale, the whale! Line {i} of a small corpus.\n" for i in range(60))
        data, run = os.path.join(cls.dir, "data"), os.path.join(cls.dir, "run")
        for cmd in ([os.path.join(BIN, "prepare"), "--input", text, "--out", data],
                    [os.path.join(BIN, "train"), "--data", data, "--run", run, "--n-layer", "1", "--n-head", "2",
                     "--n-embd", "16", "--block-size", "16", "--batch-size", "2", "--max-iters", "2",
                     "--eval-iters", "1", "--warmup-iters", "1"]):
            subprocess.run(cmd, check=True, capture_output=True)
        raw = open(os.path.join(run, "ckpt"), "rb").read()
        (hlen,) = struct.unpack("<Q", raw[:8])
        cls.header, cls.data = json.loads(raw[8:8 + hlen]), raw[8 + hlen:]
        cls.config = open(os.path.join(run, "config.json"), "rb").read()
        return cls


def drawn_input(draw):
    """(how, folder name, checkpoint bytes, config.json bytes or None)."""
    good = Good.make()
    how = draw(st.sampled_from(["as is", "field", "field JSON", "splice header", "name", "config"]))
    header = json.loads(json.dumps(good.header))
    meta = header["__metadata__"]
    if how == "field":
        meta[draw(st.sampled_from(FIELDS))] = draw(texts)
    elif how == "field JSON":  # a field that is JSON text: a value of it replaced, or any JSON
        field = draw(st.sampled_from(["train", "config"]))
        doc = json.loads(meta[field])
        if draw(st.booleans()) and isinstance(doc, dict) and doc:
            doc[draw(st.sampled_from(sorted(doc)))] = draw(json_values)
        else:
            doc = draw(json_values)
        meta[field] = json.dumps(doc)
    ckpt = pack(header, good.data)
    if how == "splice header":
        (hlen,) = struct.unpack("<Q", ckpt[:8])
        i = draw(st.integers(8, 8 + hlen))
        j = draw(st.integers(i, min(8 + hlen, i + 8)))
        ckpt = ckpt[:i] + draw(st.binary(max_size=6)) + ckpt[j:]
    name = draw(texts.filter(lambda s: s and not s.startswith(".") and "/" not in s and "\x00" not in s and s not in (".", "..")
                             and len(s.encode()) < 200)) if how == "name" else "run"
    config = good.config
    if how == "config":
        config = draw(st.one_of(texts.map(lambda s: s.encode("utf-8", "surrogatepass")), st.binary(max_size=40),
                                st.none()))
    return how, name, ckpt, config


def printable(text):
    """No control character but the newlines between lines."""
    return not any(ord(c) < 0x20 and c != "\n" or 0x7f <= ord(c) < 0xa0 for c in text)


def check(how, name, ckpt, config):
    """One input: the folder written, bin/info run three ways; returns what became of it."""
    with tempfile.TemporaryDirectory(prefix="lm-info-fuzz-") as top:
        try:
            run = os.path.join(top, name)
            os.mkdir(run)
        except (OSError, ValueError):  # a name this file system refuses
            return "skipped"
        with open(os.path.join(run, "ckpt"), "wb") as f:
            f.write(ckpt)
        if config is not None:
            with open(os.path.join(run, "config.json"), "wb") as f:
                f.write(config)
        info = os.path.join(BIN, "info")
        outs = [subprocess.run([info] + extra + ["--", run], capture_output=True, timeout=60)
                for extra in ([], ["--json"])]
        outs += [subprocess.run([info, "--list", top] + extra, capture_output=True, timeout=60) for extra in ([], ["--json"])]
    became = "accepted"
    for p in outs:
        err, out = p.stderr.decode("utf-8", "replace"), p.stdout.decode("utf-8", "replace")
        where = f"{how}: {p.args[1:]}: exit {p.returncode}, stderr {err[:300]!r}, stdout {out[:300]!r}"
        assert p.returncode in (0, 2), where
        if p.returncode == 2:
            assert err.count("\n") == 1 and err.endswith("\n") and printable(err), where
            became = "refused"
            continue
        assert printable(out), where
        if "--json" in p.args:
            doc = json.loads(out)
            for obj in doc if isinstance(doc, list) else [doc]:
                assert isinstance(obj, dict) and (KEYS <= set(obj) or {"path", "name", "run", "error"} <= set(obj)), where
                assert obj.get("options") is None or isinstance(obj["options"], dict), where
                assert obj.get("config") is None or isinstance(obj["config"], dict), where
        elif "--list" in p.args:
            # the group's line (data and tokenizer), the header and the run's; or why it cannot be read
            assert out.count("\n") == (1 if " unreadable: " in out else 3), where
    return became


tally = {}


def fuzz_test(examples, derandomize):
    @settings(max_examples=examples, derandomize=derandomize, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def test(data):
        how, *rest = drawn_input(data.draw)
        key = (how, check(how, *rest))
        tally[key] = tally.get(key, 0) + 1
    return test


class Fuzz(unittest.TestCase):
    """A fixed set of inputs (derandomized: the same on every run)."""
    EXAMPLES = 20

    def test_info(self):
        fuzz_test(self.EXAMPLES, True)()
        self.assertTrue(tally.get(("as is", "accepted")), f"no good folder was shown: {tally}")

    def test_controls_in_kept_text(self):
        """Controls jansson leaves raw in its ASCII output (DEL), and those it escapes, in a key and a value."""
        good = Good.make()
        for control in ("\x7f", "\x1b[31m", "\x9b"):
            header = json.loads(json.dumps(good.header))
            meta = header["__metadata__"]
            train = json.loads(meta["train"])
            train[control] = control
            meta["train"] = json.dumps(train)
            self.assertEqual(check("field JSON", "run", pack(header, good.data), good.config), "accepted")

    @classmethod
    def tearDownClass(cls):
        if Good.dir:
            shutil.rmtree(Good.dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description="Fuzz bin/info's reader of checkpoint headers and run folders.")
    ap.add_argument("--seconds", type=float, help="random inputs for about this long")
    a, rest = ap.parse_known_args()
    if a.seconds is None:
        sys.argv[1:] = rest
        return unittest.main(verbosity=2)
    stop = time.monotonic() + a.seconds
    try:
        while time.monotonic() < stop:
            fuzz_test(20, False)()
    finally:
        if Good.dir:
            shutil.rmtree(Good.dir, ignore_errors=True)
    print(f"info_fuzz: {sum(tally.values())} inputs, " +
          ", ".join(f"{how} {n} {became}" for (how, became), n in sorted(tally.items())), flush=True)


if __name__ == "__main__":
    main()
