"""make bench's scaling pieces: the pure helpers (thread lists, layouts,
speed-up, efficiency and MFU arithmetic; --precision and the bf16/fp32 ratio,
bf16's memory), one-line errors for bad options, the train section in fp32
and bf16 (baby, attention, 2 rounds, where the CPU has AVX512_BF16), and
the scaling and layouts sections end to end at the smallest size (baby,
attention, 1 and 2 threads, no PyTorch, --quick: about half a minute), read
through --json. The mixers section: the chunked PyTorch forms it times (the
sliding window's and gla's, in their references harness/mixers/NAME.py) equal
to the references' naive ones, forward and gradients, in float64; its rows
and ratios from made-up
runs (the per-round arithmetic, the skipped full attention at T = 16384, the
1.25x check); and end to end for gla with PyTorch (--quick: 8 runs of 16384
tokens a step, about a minute on 2 cores; the window's rows are the same code
path, checked by the made-up runs), where it checks that
every row and ratio is there and is a number, not what the numbers are. The
generate section: its PyTorch decoding loop (harness/bench/torch_generate.py,
each layer's cache its reference's) equal to torch_ref's model, attention
(with and without a window) and Grassmann; its rows, GB/s and
ratios from made-up bin/sample, read-rate and PyTorch runs (a few ms; its
end-to-end run takes a minute, more than the tests' budget), and --plot's
PNG drawn from them (gnuplot).
Run from the repository root after make:
/usr/bin/python3 -m tests.harness.bench_test"""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

from harness import registry, torch_ref
from harness.bench import generate as bench_generate
from harness.bench import mixers as bench_mixers
from harness.bench import torch_generate
from harness.bench import torch_mixers
from harness.mixers import attention as ref_attention
from harness.mixers import gla as ref_gla
from harness.bench.layouts import layouts
from harness.bench.main import cpu_has_bf16, parse_precisions
from harness.bench.mixers import FLAT_LIMIT, MIXER_LENGTHS, MIXER_TOKENS, print_mixers, section_mixers
from harness.bench.scaling import default_thread_list, parse_threads, scaling
from harness.bench.shared import bench_archs, memory_count, profile_parts, train_args
from harness.bench.shared import STEPS, Context

MIXERS = list(bench_archs())  # experiments/defaults.json's bench.mixers: attention, grassmann, window, gla
WINDOW = 64  # the window's
from harness.bench.train import (cpu_isa_levels, level_env, parse_isa, pin_openblas_core, precision_ratio,
                                 print_speed, utilisation)

BENCH = [sys.executable, "-m", "harness.bench"]


class Helpers(unittest.TestCase):
    def test_parse_threads(self):
        self.assertEqual(parse_threads("4"), [4])
        self.assertEqual(parse_threads("8,1,2,2"), [1, 2, 8])
        for bad in ("0", "1,0", "x", "1,,2", "", "-2", "1.5"):
            self.assertIsNone(parse_threads(bad), bad)

    def test_default_thread_list(self):
        self.assertEqual(default_thread_list(1), [1])
        self.assertEqual(default_thread_list(2), [1, 2])
        self.assertEqual(default_thread_list(16), [1, 2, 4, 8, 16])
        self.assertEqual(default_thread_list(64), [1, 2, 4, 8, 16, 32, 64])
        self.assertEqual(default_thread_list(96), [1, 2, 4, 8, 16, 32, 64, 96])

    def test_pin_openblas_core(self):
        env = {}
        self.assertEqual(pin_openblas_core("avx2", env), "Haswell")
        self.assertEqual(env["OPENBLAS_CORETYPE"], "Haswell")
        env = {}
        self.assertEqual(pin_openblas_core("avx512", env), "SkylakeX")
        self.assertEqual(env["OPENBLAS_CORETYPE"], "SkylakeX")
        env = {}
        self.assertIsNone(pin_openblas_core("portable", env))  # OpenBLAS keeps its own core
        self.assertNotIn("OPENBLAS_CORETYPE", env)
        env = {"OPENBLAS_CORETYPE": "Zen"}  # set by the environment: never overridden
        self.assertIsNone(pin_openblas_core("avx2", env))
        self.assertEqual(env["OPENBLAS_CORETYPE"], "Zen")
        env = {"OPENBLAS_CORETYPE": ""}  # empty counts as unset, as OpenBLAS reads it
        self.assertEqual(pin_openblas_core("avx2", env), "Haswell")

    def test_parse_isa(self):
        zen3 = ["portable", "avx2"]
        self.assertEqual(parse_isa("avx2", zen3), ["avx2"])
        self.assertEqual(parse_isa("native,avx2,portable", zen3), ["native", "avx2", "portable"])  # in the order given
        for bad, says in (("native,avx512", "--isa avx512: this CPU lacks it (it runs portable, avx2)"),
                          ("avx2,avx2", "given twice"), ("sse", "unknown 'sse'"), ("native,", "unknown ''")):
            with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()) as err:
                parse_isa(bad, zen3)
            self.assertEqual(len(err.getvalue().strip().splitlines()), 1, bad)
            self.assertIn(says, err.getvalue(), bad)

    def test_level_env(self):
        base = {"PATH": "/bin"}
        self.assertEqual(level_env("native", base), (base, None))  # native: not capped
        env, core = level_env("avx2", base)
        self.assertEqual((env["LM_MAX_ISA"], env["ATEN_CPU_CAPABILITY"], env["OPENBLAS_CORETYPE"], core),
                         ("avx2", "avx2", "Haswell", "Haswell"))
        env, core = level_env("portable", base)
        self.assertEqual((env["LM_MAX_ISA"], env["ATEN_CPU_CAPABILITY"], core), ("portable", "default", None))
        self.assertEqual(base, {"PATH": "/bin"})  # the base is not changed

    def test_layouts(self):
        self.assertEqual(layouts(2), [(1, 2), (2, 1)])
        self.assertEqual(layouts(6), [(1, 6), (2, 3)])
        self.assertEqual(layouts(16), [(1, 16), (2, 8), (4, 4), (8, 2), (16, 1)])
        self.assertEqual(layouts(96), [(1, 96), (2, 48), (4, 24), (8, 12), (16, 6), (32, 3)])

    def test_arithmetic(self):
        # per-round ratios 2.0, 1.5, 1.8: median 1.8, on 2 threads 90% efficient
        speedup, eff = scaling([100.0, 90.0, 90.0], [50.0, 60.0, 50.0], 2)
        self.assertAlmostEqual(speedup, 1.8)
        self.assertAlmostEqual(eff, 0.9)
        self.assertEqual(scaling(None, [50.0], 2), (None, None))
        # 1e6 FLOPs per token at 20,000 tokens/s: 20 GFLOP/s, 25% of an 80 GFLOP/s sgemm
        gflops, mfu = utilisation(1e6, 2e4, 80.0)
        self.assertAlmostEqual(gflops, 20.0)
        self.assertAlmostEqual(mfu, 0.25)
        self.assertIsNone(utilisation(1e6, 2e4, None)[1])


    def test_precisions(self):
        self.assertEqual(parse_precisions(None, True), (["fp32", "bf16"], None))
        only, note = parse_precisions(None, False)
        self.assertEqual(only, ["fp32"])
        self.assertIn("AVX512_BF16", note)
        self.assertEqual(parse_precisions("bf16,fp32", True), (["fp32", "bf16"], None))  # fp32 first
        self.assertEqual(parse_precisions("bf16", True), (["bf16"], None))
        self.assertEqual(parse_precisions("fp32", False), (["fp32"], None))
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()) as err:
            parse_precisions("bf16", False)  # asked for, never emulated
        self.assertIn("AVX512_BF16", err.getvalue())
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            parse_precisions("fp16", True)

    def test_precision_arithmetic(self):
        # per-round fp32 ms / bf16 ms: 2.0, 1.5, 1.8 -> median 1.8
        self.assertAlmostEqual(precision_ratio([100.0, 90.0, 90.0], [50.0, 60.0, 50.0]), 1.8)
        self.assertIsNone(precision_ratio(None, [50.0]))
        self.assertIsNone(precision_ratio([50.0], None))
        # bf16 MFU is against the bf16 GEMM rate: 20 GFLOP/s achieved of 160 is 12.5%
        self.assertAlmostEqual(utilisation(1e6, 2e4, 160.0)[1], 0.125)
        m = memory_count({"memory_mib": {"weights": 1.0, "state": 3.0, "activations": 10.0, "bf16": 2.5}})
        self.assertEqual((m["bf16"], m["total"]), (2.5, 16.5))
        self.assertEqual(memory_count({"memory_mib": {"weights": 1.0, "state": 3.0, "activations": 10.0}})["total"],
                         14.0)


class TorchMixers(unittest.TestCase):
    """The chunked PyTorch mixers the bench times against torch_ref's naive ones (the sliding window's
    full T x T masked matrix, gla's recurrence token by token): the layer's output and the gradients of
    its input and every weight, in float64, at lengths that are and are not whole blocks and chunks."""

    def check(self, naive, chunked, W, h):
        dy = torch.randn(h.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
        got = []
        for f in (naive, chunked):
            for w in list(W.values()) + [h]:
                w.grad = None
            y = f()
            y.backward(dy)
            got.append([y.detach()] + [w.grad if w.grad is not None else torch.zeros_like(w)
                                       for w in list(W.values()) + [h]])
        for a, b in zip(*got):
            self.assertTrue(torch.allclose(a, b, rtol=1e-10, atol=1e-12), (a - b).abs().max().item())

    def weights(self, T, mixer):
        cfg = {"n_embd": 16, "n_head": 4, "vocab_size": 10, "block_size": T, "pos": "learned", "mixers": [mixer]}
        W = torch_ref.init_weights(cfg, dtype=torch.float64, seed=T)
        g = torch.Generator().manual_seed(T)
        with torch.no_grad():  # away from init's small values, so that the softmax and the decays vary
            for w in W.values():
                w.add_(0.3 * torch.randn(w.shape, dtype=torch.float64, generator=g))
        h = torch.randn(2, T, 16, dtype=torch.float64, generator=g).requires_grad_(True)
        return W, h

    def test_window_attention(self):
        # (T, window, query block): whole blocks, a ragged last block, blocks other than the window,
        # a window of 1 (each position itself) and one longer than T (plain causal attention).
        for T, window, block in ((64, 16, None), (50, 8, None), (37, 5, 16), (33, 1, None), (20, 64, None)):
            with self.subTest(T=T, window=window, block=block):
                W, h = self.weights(T, "attention")
                self.check(lambda: ref_attention.attention(W, "h.0.", h, 4, window=window),
                           lambda: ref_attention.window_layer(W, "h.0.", h, 4, window, block), W, h)

    def test_gla(self):
        for T, chunk in ((64, 16), (50, 16), (7, 16), (40, 1)):
            with self.subTest(T=T, chunk=chunk):
                W, h = self.weights(T, "gla")
                self.check(lambda: ref_gla.gla(W, "h.0.", h, 4),
                           lambda: ref_gla.gla_layer(W, "h.0.", h, 4, chunk), W, h)

    def test_gla_fast_decay(self):
        """Decays near 0 (the decay projection's bias at -30): every exponent stays <= 0, nothing overflows."""
        W, h = self.weights(48, "gla")
        with torch.no_grad():
            W["h.0.gla.decay.bias"].fill_(-30.0)
        self.check(lambda: ref_gla.gla(W, "h.0.", h, 4), lambda: ref_gla.gla_layer(W, "h.0.", h, 4, 16), W, h)

    def test_bench_config(self):
        """The program's layers for bin/train --json configs: the window's and gla's chunked versions; a
        mixer without one here (full attention, Grassmann) is refused."""
        cfg = {"mixers": ["attention", "gla"], "n_head": 4, "attn_window": WINDOW, "pos": "learned"}
        self.assertIn(f"query blocks of {WINDOW}", torch_mixers.mixer_layer(cfg, 0)[1])
        self.assertIn("chunk-parallel", torch_mixers.mixer_layer(cfg, 1)[1])
        with self.assertRaises(ValueError):
            torch_mixers.mixer_layer({"mixers": ["attention"], "n_head": 4, "pos": "learned"}, 0)
        with self.assertRaises(ValueError):
            torch_mixers.mixer_layer({"mixers": ["grassmann"], "n_head": 4, "pos": "learned"}, 0)


class MixersSection(unittest.TestCase):
    """section_mixers and print_mixers on made-up runs: bin/train's mixer times per (T, mixer, round) and
    PyTorch's, so the ratios are known."""

    def test_window_is_attention_with_a_window(self):
        args = train_args({"n_layer": 2, "n_head": 4, "n_embd": 128, "block": 256, "batch": 1}, "window")
        self.assertEqual(args[:4], ["--mixer", "attention", "--attn-window", str(WINDOW)])
        self.assertEqual(train_args({"n_layer": 2, "n_head": 4, "n_embd": 128, "block": 256, "batch": 1}, "gla")[:2],
                         ["--mixer", "gla"])
        report = {"profile": {"parts": {"attention": {"forward_ms": 1.0, "backward_ms": 2.0, "total_ms": 3.0,
                                                      "share": 50.0}},
                              "other": {"total_ms": 0.1, "share": 1.0}, "step_ms": 6.0}}
        self.assertEqual(profile_parts(report, "window")["mixer"]["total"], 3.0)  # its row is attention's

    def run_section(self, c_ms, t_ms, mixers=MIXERS, rounds=2):
        """section_mixers with bin/train and PyTorch replaced: c_ms(T, mixer, round) is the mixer's ms per
        step, t_ms(T, mixer, round) PyTorch's."""
        ctx = Context()
        ctx.steps, ctx.rounds, ctx.threads, ctx.section_mixers, ctx.torch_missing = STEPS["quick"], rounds, 2, list(mixers), None
        calls, counter = [], {}

        def fake_c(ctx_, cfg, mixer, steps, warmup, threads):
            T = cfg["block"]
            self.assertEqual(cfg["batch"] * T, MIXER_TOKENS)
            rnd = counter[(T, mixer)] = counter.get((T, mixer), -1) + 1
            calls.append((T, mixer))
            return {"ms": 3 * c_ms(T, mixer, rnd), "profile": {"mixer": {"total": c_ms(T, mixer, rnd)}}, "rss_mib": 100.0,
                    "memory": {"activations": 50.0}, "kernel": "K", "train": {"config": {}, "batch": cfg["batch"]},
                    "round": rnd, "T": T, "mixer": mixer}

        def fake_t(ctx_, c, steps, warmup):
            if c["mixer"] in ("attention", "grassmann"):  # as torch_mixer where the reference has no chunked form
                return {"none": "no chunked PyTorch form"}
            if t_ms(c["T"], c["mixer"], c["round"]) is None:  # as torch_mixer when PyTorch fails
                ctx_.torch_missing = "PyTorch run failed: no torch"
                return None
            return {"ms": t_ms(c["T"], c["mixer"], c["round"]), "blas": "OpenBLAS x, kernel K", "kernel": "K",
                    "threads": 2, "impl": "chunked", "rss_mib": 200.0}

        saved = bench_mixers.c_train, bench_mixers.torch_mixer
        bench_mixers.c_train, bench_mixers.torch_mixer = fake_c, fake_t
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                res = section_mixers(ctx)
        finally:
            bench_mixers.c_train, bench_mixers.torch_mixer = saved
        with contextlib.redirect_stdout(io.StringIO()) as shown:
            print_mixers(ctx, res)
        return res, calls, shown.getvalue()

    def test_rows_and_ratios(self):
        # Per-round mixer ms: flat mixers 10 then 20 at every T (a slow second round); window 1.5x at
        # T=4096 in round 1 only; attention x T/256. PyTorch: 3x C's time in round 1, 5x in round 2.
        def c_ms(T, mixer, rnd):
            base = 10.0 * (rnd + 1)
            if mixer == "attention":
                return base * T / 256
            return base * (1.5 if mixer == "window" and T == 4096 and rnd == 0 else 1.0)

        res, calls, shown = self.run_section(c_ms, lambda T, m, rnd: c_ms(T, m, rnd) * (3.0 if rnd == 0 else 5.0))
        self.assertNotIn((16384, "attention"), calls)  # full attention skipped at 16384
        self.assertEqual(len(calls), 2 * (4 * len(MIXER_LENGTHS) - 1))
        self.assertEqual([(r["mixer"], r["T"]) for r in res], [(m, T) for m in MIXERS for T in MIXER_LENGTHS])
        by = {(r["mixer"], r["T"]): r for r in res}
        skip = by[("attention", 16384)]
        self.assertIn("not run above T = 4096", skip["skipped"])
        self.assertNotIn("mixer_us_per_token", skip)
        for r in res:
            if r["skipped"]:
                continue
            self.assertEqual(r["B"] * r["T"], MIXER_TOKENS)
            self.assertAlmostEqual(r["mixer_us_per_token"], c_ms(r["T"], r["mixer"], 1) * 0.75 * 1e3 / MIXER_TOKENS
                                   if (r["mixer"], r["T"]) != ("window", 4096) else 17.5 * 1e3 / MIXER_TOKENS)
            self.assertEqual(len(r["rounds_mixer_us_per_token"]), 2)
            torch_row = r["mixer"] in ("window", "gla")
            self.assertEqual(r["c_over_torch"], 4.0 if torch_row else None)  # median of 3x and 5x
            self.assertEqual(r["c_faster"], True if torch_row else None)
            self.assertEqual(r["torch_mixer_us_per_token"] is not None, torch_row)
            self.assertEqual(r["options"], {"attn_window": WINDOW} if r["mixer"] == "window" else {})
        self.assertAlmostEqual(by[("attention", 4096)]["over_t256"], 16.0)
        self.assertIsNone(by[("attention", 4096)]["within_flat_limit"])  # grows with T: no check
        self.assertAlmostEqual(by[("window", 4096)]["over_t256"], 1.25)  # median of 1.5 and 1.0
        self.assertTrue(by[("window", 4096)]["within_flat_limit"])  # 1.25 is within 1.25x
        self.assertEqual(by[("gla", 16384)]["over_t256"], 1.0)
        self.assertEqual(by[("gla", 16384)]["flat_limit"], FLAT_LIMIT)
        self.assertIn("attention, T = 16384: not run above T = 4096", shown)
        self.assertIn("window (window 64): C faster at every T (4.00x to 4.00x)", shown)
        check = {line.split()[0]: line for line in shown.splitlines() if line.startswith("  ") and
                 line.split()[0] in MIXERS}
        self.assertTrue(check["gla"].rstrip().endswith("yes"))

    def test_flat_check_fails_and_torch_missing(self):
        """A flat mixer 1.3x at T=16384 in both rounds: NO at that T; PyTorch not measured: n/a, not invented."""
        res, _, shown = self.run_section(lambda T, m, rnd: 13.0 if T == 16384 else 10.0, lambda T, m, rnd: None,
                                         mixers=("gla",))
        for r in res:
            self.assertIsNone(r["c_over_torch"])
            self.assertIsNone(r["c_faster"])
        self.assertFalse(res[-1]["within_flat_limit"])
        self.assertIn("NO: T=16384", shown)
        self.assertIn("gla: n/a", shown)
        self.assertIn("PyTorch not measured: PyTorch run failed: no torch", shown)
        self.assertEqual(res[0]["torch_unavailable"], "PyTorch run failed: no torch")


class GenerateSection(unittest.TestCase):
    """The generate section: its PyTorch decoding loop is the model, and its arithmetic on made-up runs."""

    def test_torch_loop_is_the_model(self):
        for mixer, window in (("attention", 0), ("attention", 5), ("grassmann", 0)):
            cfg = {"n_embd": 16, "n_head": 4, "vocab_size": 11, "block_size": 24, "pos": "learned",
                   "mixers": [mixer, mixer], "grassmann_rank": 4, "grassmann_windows": [1, 2, 4],
                   "attn_window": window}
            W = torch_ref.init_weights(cfg, seed=3)
            with torch.no_grad():
                for w in W.values():
                    w.add_(0.3 * torch.randn(w.shape, generator=torch.Generator().manual_seed(5)))
            prompt = torch.tensor([1, 4, 2, 9, 0])
            _, times, logits = torch_generate.decode(W, cfg, prompt, 8)
            self.assertEqual(len(times), 8)
            tokens = torch.cat([prompt, logits[len(prompt) - 1:-1].argmax(1)])
            with torch.no_grad():
                ref = torch_ref.model_logits(W, cfg, tokens[None])[0]
            self.assertLess(float((logits - ref).abs().max()), 1e-4, (mixer, window))
        cfg = dict(cfg, mixers=["gla", "gla"])  # gla's reference has no decoding cache: said, not invented
        with self.assertRaisesRegex(ValueError, "no PyTorch decoding loop for mixer 'gla'"):
            torch_generate.decode(torch_ref.init_weights(cfg), cfg, prompt, 2)

    def run_section(self, step_ms, torch_ms, quick=True):
        """section_generate with bin/train, bin/sample, bin/gemm-rate and PyTorch replaced: step_ms(model,
        mixer, context, weights, samples) is bin/sample's ms per step, torch_ms(context) PyTorch's (None:
        it failed); prefill 2 ms a token of prompt; the read rate 20 GB/s."""
        ctx = Context()
        ctx.quick, ctx.rounds, ctx.threads, ctx.mixers, ctx.torch_missing, ctx.tmp = quick, 2, 1, \
            ["attention", "grassmann", "gla"], None, "/nonexistent"
        calls = []
        matrices = [{"rows": 1000, "cols": 1000}] * 3  # 3M weights: 12 MB in fp32

        def fake_model(ctx_, model, mixer):
            config = registry.describe(["--mixer", mixer, "--n-layer", 4, "--n-embd", 256, "--block-size", 4096])["model"]
            return f"{model}-{mixer}.ckpt", {"matrices": matrices, "config": config}

        def fake_sample(ctx_, ckpt, n_prompt, tokens, weights, samples):
            model, mixer = ckpt[:-5].split("-")
            calls.append((model, mixer, n_prompt, weights, samples))
            return {"prefill_tokens": n_prompt, "prefill_ms": 2.0 * n_prompt, "steps": tokens,
                    "step_ms": step_ms(model, mixer, n_prompt, weights, samples)}

        def fake_torch(ctx_, config, n_prompt, steps):
            if "gla" in config["mixers"]:  # as torch_decode where a reference has no decoding cache
                return {"none": "no PyTorch decoding loop for mixer 'gla'"}
            ms = torch_ms(n_prompt)
            if ms is None:
                ctx_.torch_missing = "PyTorch run failed: no torch"
                return None
            return {"prefill_ms": 4.0 * n_prompt, "step_ms": ms, "blas": "OpenBLAS"}

        saved = (bench_generate.make_model, bench_generate.c_sample, bench_generate.read_rate,
                 bench_generate.torch_decode)
        bench_generate.make_model, bench_generate.c_sample = fake_model, fake_sample
        bench_generate.read_rate, bench_generate.torch_decode = (lambda ctx_, mb: 20.0), fake_torch
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                res = bench_generate.section_generate(ctx)
        finally:
            (bench_generate.make_model, bench_generate.c_sample, bench_generate.read_rate,
             bench_generate.torch_decode) = saved
        with contextlib.redirect_stdout(io.StringIO()) as shown:
            bench_generate.print_generate(ctx, res)
        return res, calls, shown.getvalue()

    def test_rows_and_ratios(self):
        # fp32 1 ms a step, bf16 0.5, int8 0.25; 8 samples take 2x one sample's step; PyTorch 3 ms.
        fmt_ms = {"fp32": 1.0, "bf16": 0.5, "int8": 0.25}
        res, calls, shown = self.run_section(lambda m, mx, L, w, n: fmt_ms[w] * (2.0 if n > 1 else 1.0),
                                             lambda L: 3.0)
        self.assertEqual(res["torch_none"], {"gla": "no PyTorch decoding loop for mixer 'gla'"})
        self.assertEqual(res["read_rate"], {"l3": {"mb": 12.0, "gb_per_s": 20.0}})
        self.assertEqual([(r["mixer"], r["context"]) for r in res["rows"]],
                         [(m, L) for m in ("attention", "grassmann", "gla") for L in (128, 4032)])
        self.assertEqual(len(calls), 2 * 3 * (2 * 3 + 2))  # rounds x mixers x (contexts x formats + batch)
        for r in [r for r in res["rows"] if r["mixer"] == "gla"]:
            self.assertIsNone(r["c_over_torch"])
        for r in [r for r in res["rows"] if r["mixer"] != "gla"]:
            self.assertAlmostEqual(r["prefill_tokens_per_s"], 500.0)
            self.assertAlmostEqual(r["fp32"]["tokens_per_s"], 1000.0)
            self.assertAlmostEqual(r["int8"]["tokens_per_s"], 4000.0)
            self.assertAlmostEqual(r["int8_over_fp32"], 4.0)
            self.assertAlmostEqual(r["c_over_torch"], 3.0)
            self.assertAlmostEqual(r["torch_tokens_per_s"], 1000.0 / 3)
            # 12 MB of fp32 weights and the layers' state at the mean context (the registry's: attention's K/V
            # cache and its step's scratch, 4 layers) in 1 ms
            state = bench_generate.state_bytes({"config": registry.describe(
                ["--mixer", r["mixer"], "--n-layer", 4, "--n-embd", 256, "--block-size", 4096])["model"]},
                r["context"] + 32)
            kv = 2 * (r["context"] + 32) * 256 * 4 * 4
            self.assertTrue(kv <= state < 1.1 * kv if r["mixer"] == "attention" else state < 0.1 * kv, (r, state))
            self.assertAlmostEqual(r["fp32"]["gb_per_s"], (12e6 + state) / 1e-3 * 1e-9)
            self.assertAlmostEqual(r["fp32"]["read_share"], r["fp32"]["gb_per_s"] / 20.0)
            self.assertAlmostEqual(r["int8"]["gb_per_s"], (3e6 * 1.125 + state) / 0.25e-3 * 1e-9)
        for b in res["batch"]:
            self.assertEqual(b["n"], bench_generate.N_SAMPLES)
            self.assertAlmostEqual(b["fp32"]["tokens_per_s"], 8 * 1000.0 / 2)
            self.assertAlmostEqual(b["fp32"]["over_batch1"], 4.0)
        self.assertIn("read rate at the fp32 weights' 12 MB: 20.0 GB/s", shown)
        self.assertIn("PyTorch: no decoding loop of gla: no PyTorch decoding loop for mixer 'gla'", shown)

    def test_torch_missing(self):
        res, _, shown = self.run_section(lambda m, mx, L, w, n: 1.0, lambda L: None)
        for r in res["rows"]:
            self.assertIsNone(r["c_over_torch"])
            self.assertIsNone(r["torch_tokens_per_s"])
        self.assertIn("PyTorch: not measured (PyTorch run failed: no torch)", shown)

    def test_plot(self):
        """--plot on made-up runs of both models: a line per model, mixer and format, PyTorch's dashed,
        and the PNG the one file written."""
        res, _, _ = self.run_section(lambda m, mx, L, w, n: {"fp32": 1.0, "bf16": 0.5, "int8": 0.25}[w],
                                     lambda L: 3.0, quick=False)
        ctx = Context()
        ctx.threads, ctx.rounds = 1, 2
        scripts = []
        real_gnuplot = bench_generate.gnuplot
        bench_generate.gnuplot = lambda script, output=None: (scripts.append(script), real_gnuplot(script, output))
        try:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "decode.png")
                bench_generate.plot_generate(ctx, res, path)
                self.assertEqual(os.listdir(tmp), ["decode.png"])
                with open(path, "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
                self.assertGreater(os.path.getsize(path), 1000)
        finally:
            bench_generate.gnuplot = real_gnuplot
        lines = scripts[0].split("using 1:2")[1:]
        groups = [(m, mx) for m in ("l3", "gpt2") for mx in ("attention", "grassmann", "gla")]
        self.assertEqual(len(lines), len(groups) * (len(bench_generate.FORMATS) + 1) - 2)  # gla: no PyTorch line
        for m, mx in groups:
            for w in bench_generate.FORMATS + (("PyTorch",) if mx != "gla" else ()):
                line = next(ln for ln in lines if f"'{m} {mx} {w}'" in ln)
                self.assertEqual("dt 2" in line, w == "PyTorch", line)


class Options(unittest.TestCase):
    def test_bad_options(self):
        for args, says in ((["--threads", "2,0"], "--threads must be"), (["--mixers", "mamba"], "--mixers"),
                           (["--sections", "scaling,nope"], "--sections"), (["--torch-python", "/nonexistent"],
                                                                             "--torch-python"),
                           (["--precision", "fp32,fp16"], "--precision"), (["--isa", "sse"], "--isa"),
                           (["--isa", "native,native"], "--isa"), (["--plot", "decode.png"], "--plot"),
                           (["--sections", "generate", "--plot", "/nonexistent/decode.png"], "--plot")):
            p = subprocess.run(BENCH + args, capture_output=True, text=True)
            self.assertEqual(p.returncode, 2, args)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn(says, p.stderr)


    def test_isa_this_cpu_lacks(self):
        lacking = [lv for lv in ("avx2", "avx512") if lv not in cpu_isa_levels()]
        for lv in lacking:  # none on an AVX-512 machine: test_parse_isa covers the refusal there
            p = subprocess.run(BENCH + ["--isa", f"native,{lv}"], capture_output=True, text=True)
            self.assertEqual(p.returncode, 2)
            self.assertEqual(p.stderr.strip().splitlines(), [f"bench: error: --isa {lv}: this CPU lacks it "
                                                             f"(it runs {', '.join(cpu_isa_levels())})"])


class EndToEnd(unittest.TestCase):
    def run_bench(self, *args):
        """make bench --quick on the baby attention model without PyTorch: its JSON report and stderr
        (the run must succeed)."""
        p = subprocess.run(BENCH + ["--quick", "--configs", "baby", "--mixers", "attention", "--no-torch", "--json",
                                    *args], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        return json.loads(p.stdout), p.stderr

    def test_train_isa_levels(self):
        """--isa native,portable: both levels in the same round, one table with an --isa column, each row
        naming the level it ran at (native: this CPU's best)."""
        out, stderr = self.run_bench("--sections", "train", "--threads", "1", "--precision", "fp32",
                                     "--isa", "native,portable")
        self.assertEqual(out["machine"]["isa_levels"], ["native", "portable"])
        rows = out["train"]
        self.assertEqual([(r["config"], r["level"]) for r in rows], [("baby", "native"), ("baby", "portable")])
        self.assertEqual([r["c"]["isa"] for r in rows], [cpu_isa_levels()[-1], "portable"])
        for r in rows:
            self.assertEqual(len(r["c"]["rounds_ms"]), 1)
            self.assertGreater(r["eval"]["tokens_per_s"], 0)  # inference at each level
        runs = [line for line in stderr.splitlines() if "round 1/1" in line]  # progress names each run's level
        self.assertIn(f"--isa native (ran {cpu_isa_levels()[-1]})", runs[0])
        self.assertIn("--isa portable (ran portable)", runs[1])
        ctx = Context()
        ctx.steps, ctx.configs, ctx.rounds, ctx.threads = STEPS["quick"], ["baby"], 1, 1
        with contextlib.redirect_stdout(io.StringIO()) as shown:
            print_speed(ctx, rows)
        lines = shown.getvalue().splitlines()
        header = next(line for line in lines if "isa C/PT" in line).split()
        self.assertEqual(header[:5], ["config", "mixer", "precision", "--isa", "isa"])
        level_rows = [line.split()[:5] for line in lines if line.strip().startswith("baby")]
        self.assertEqual(level_rows, [["baby", "attention", "fp32", "native", f"{cpu_isa_levels()[-1]}/n/a"],
                                      ["baby", "attention", "fp32", "portable", "portable/n/a"]])
        self.assertIn(f"--isa native: our kernels ran at {cpu_isa_levels()[-1]}", shown.getvalue())


    @unittest.skipUnless(cpu_has_bf16(), "this CPU has no AVX512_BF16")
    def test_train_bf16(self):
        out, _ = self.run_bench("--sections", "train", "--threads", "2", "--rounds", "2", "--precision", "bf16,fp32")
        self.assertEqual(out["machine"]["precisions"], ["fp32", "bf16"])
        self.assertIsNone(out["machine"]["precision_note"])
        rows = out["train"]
        self.assertEqual([(r["config"], r["mixer"], r["precision"]) for r in rows],
                         [("baby", "attention", "fp32"), ("baby", "attention", "bf16")])
        fp32, bf16 = rows
        for r in rows:
            self.assertEqual(r["sgemm"]["precision"], r["precision"])
            self.assertGreater(r["sgemm"]["gflops"], 0)
            self.assertEqual(len(r["c"]["rounds_ms"]), 2)
            self.assertAlmostEqual(r["c"]["mfu"], r["c"]["gflops"] / r["sgemm"]["gflops"])
            self.assertIsNone(r["torch"])
        self.assertIn("oneDNN", bf16["sgemm"]["blas"])
        self.assertNotIn("oneDNN", fp32["sgemm"]["blas"])
        self.assertEqual(fp32["memory"]["bf16"], 0)
        self.assertGreater(bf16["memory"]["bf16"], 0)
        self.assertIsNone(fp32["bf16_over_fp32"])
        self.assertAlmostEqual(bf16["bf16_over_fp32"], precision_ratio(fp32["c"]["rounds_ms"], bf16["c"]["rounds_ms"]))
        self.assertIsNone(bf16["torch_bf16_over_fp32"])  # --no-torch: not measured, not invented
        self.assertGreater(fp32["eval"]["tokens_per_s"], 0)  # inference once, on the fp32 model
        self.assertIsNone(bf16["eval"])

    def test_mixers_section(self):
        """The mixers section for gla with PyTorch: a row per T, each with its numbers, its ratio to T = 256,
        its 1.25x check and C/PT; the tables print them. Not what the numbers are."""
        p = subprocess.run(BENCH + ["--quick", "--sections", "mixers", "--mixers", "gla", "--json"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        out = json.loads(p.stdout)
        rows = out["mixers"]
        self.assertEqual([(r["mixer"], r["T"]) for r in rows], [("gla", T) for T in MIXER_LENGTHS])
        numbers = ("mixer_us_per_token", "step_us_per_token", "peak_rss_mib", "activations_mib", "over_t256",
                   "torch_mixer_us_per_token", "c_over_torch")
        for r in rows:
            self.assertIsNone(r["skipped"])
            self.assertEqual(r["B"] * r["T"], MIXER_TOKENS)
            for k in numbers:
                self.assertIsInstance(r[k], float, (r["mixer"], r["T"], k))
                self.assertGreater(r[k], 0, (r["mixer"], r["T"], k))
            self.assertIsInstance(r["within_flat_limit"], bool)
            self.assertIsInstance(r["c_faster"], bool)
            self.assertEqual(r["flat_limit"], FLAT_LIMIT)
            self.assertEqual(r["torch_threads"], out["machine"]["threads"])
            self.assertIn("kernel", r["torch_blas"])
        self.assertEqual([r["options"] for r in rows], [{}] * len(MIXER_LENGTHS))  # gla has no options of its own
        self.assertEqual([r["over_t256"] for r in rows if r["T"] == 256], [1.0])

    def test_scaling_and_layouts(self):
        out, _ = self.run_bench("--sections", "scaling,layouts", "--threads", "1,2")
        self.assertEqual(out["machine"]["thread_list"], [1, 2])
        rows = out["scaling"]["rows"]
        self.assertEqual([(r["config"], r["mixer"], r["threads"]) for r in rows],
                         [("baby", "attention", 1), ("baby", "attention", 2)])
        for r in rows:
            self.assertGreater(r["tokens_per_s"], 0)
            self.assertGreater(r["sgemm_gflops"], 0)
            self.assertAlmostEqual(r["efficiency"], r["speedup"] / r["threads"])
            self.assertIsNone(r["torch_tokens_per_s"])  # --no-torch: not measured, not invented
            self.assertIsNone(r["ratio"])
        self.assertEqual(rows[0]["speedup"], 1.0)
        self.assertEqual(out["scaling"]["torch_unavailable"], "--no-torch was given")
        d = out["scaling"]["default_threads"]
        self.assertEqual(len(d), 1)
        self.assertIn(d[0]["best_threads"], (1, 2))
        self.assertGreater(d[0]["ratio"], 0)
        lay = out["layouts"]
        if "skipped" in lay:  # no mpirun: said so, nothing measured
            self.assertIn("mpirun", lay["skipped"])
            return
        self.assertEqual([(r["cores"], r["ranks"], r["threads"], r["grad_accum"]) for r in lay["rows"]],
                         [(2, 1, 2, 2), (2, 2, 1, 1)])
        self.assertEqual({r["tokens_per_step"] for r in lay["rows"]}, {2 * 12 * 64})
        self.assertEqual(lay["rows"][0]["ratio"], 1.0)
        self.assertEqual(len(lay["fastest"]), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
