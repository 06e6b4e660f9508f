"""The load section of make bench.

The thread tuner: baby config, bin/train with its default threads (adaptive)
against --threads 1, alternating: without load, beside one busy process (a
shell loop, always killed at the end) started by the bench, and beside one in
a session of its own, as another terminal's job would be (Linux's autogroups
then share the CPU between sessions); tokens/s over each run's steps after
warm-up, median per-round ratio."""
import contextlib
import os
import signal

from harness.bench.shared import CONFIGS, c_train, fmt, med, plural, progress, table


@contextlib.contextmanager
def busy_process(own_session):
    """One process spinning on a core for the duration of the block, in the
    bench's session or in a session of its own (setsid), as a job started from
    another terminal or by another user would be: with Linux's autogroup
    scheduling the CPU is then shared between sessions rather than threads.
    It also stops by itself within a fraction of a second if the bench dies."""
    loop = 'while kill -0 "$1" 2>/dev/null; do i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; done'
    pid = os.posix_spawn("/bin/sh", ["sh", "-c", loop, "sh", str(os.getpid())], dict(os.environ),
                         setsid=own_session)
    try:
        yield pid
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def tuner_rounds(ctx, steps, warmup, label):
    """Per baby mixer: R rounds of bin/train with default threads then --threads 1."""
    cfg = CONFIGS["baby"]
    out = []
    for mixer in ctx.mixers:
        ratios, dflt, one = [], [], []
        for rnd in range(ctx.rounds):
            d = c_train(ctx, cfg, mixer, steps, warmup, 0, profile=False)
            s = c_train(ctx, cfg, mixer, steps, warmup, 1, profile=False)
            dflt.append(d), one.append(s)
            ratios.append(d["tokens_per_s_mean"] / s["tokens_per_s_mean"])
            progress(f"load ({label}) {mixer} round {rnd + 1}/{ctx.rounds}: default {d['tokens_per_s_mean']:.0f}, "
                     f"1 thread {s['tokens_per_s_mean']:.0f} tokens/s ({ratios[-1]:.2f}x)")
        threads_used = {}
        for d in dflt:
            for k, v in d["threads_used"].items():
                threads_used[k] = threads_used.get(k, 0) + v
        out.append({"mixer": mixer, "default_tokens_per_s": med([d["tokens_per_s_mean"] for d in dflt]),
                    "one_thread_tokens_per_s": med([s["tokens_per_s_mean"] for s in one]),
                    "ratio": med(ratios), "rounds": ratios, "default_threads_steps": threads_used})
    return out


LOAD_CASES = (("no_load", "no other load", "noload", None),
              ("busy", "one busy process (a shell loop started by the bench)", "load", False),
              ("busy_own_session", "one busy process in a session of its own (setsid)", "load_session", True))


def section_load(ctx):
    res = {}
    for key, label, steps, own_session in LOAD_CASES:
        with busy_process(own_session) if own_session is not None else contextlib.nullcontext():
            res[key] = tuner_rounds(ctx, *ctx.steps[steps], key.replace("_", " "))
    return res


def print_load(ctx, res):
    print("\n== Thread tuner (baby; bin/train default threads vs --threads 1, alternating) ==")
    for key, label, steps, _ in LOAD_CASES:
        steps, warmup = ctx.steps[steps]
        print(f"  {label} ({plural(ctx.rounds, 'round')} of {steps} steps, {warmup} dropped):")
        table(["mixer", "default tokens/s", "1 thread tokens/s", "default/1", "threads used (steps)"],
              [[r["mixer"], fmt(r["default_tokens_per_s"], ",.0f"), fmt(r["one_thread_tokens_per_s"], ",.0f"),
                fmt(r["ratio"], ".2f", "x"),
                " ".join(f"{k}:{v}" for k, v in r["default_threads_steps"].items())] for r in res[key]])
    print("  tokens/s: all tokens after warm-up / their total time (the tuner's probes included); default/1: median\n"
          "  over rounds of the per-round ratio (targets: >= 0.9 under load, ~ the core count without). threads used:\n"
          "  how many of the default runs' steps ran on each thread count (bin/train --log, column threads).")
