"""What make probe and its Zoology protocol share: the positions an
architecture is probed with, its size option, and bin/train's command for
one recall-probe run."""
import os

from harness.common import BIN
from harness.experiments import default


def size_args(arch):
    """bin/train's option for an architecture's size (harness.archs.size_archs), or none."""
    return ["--" + arch["knob"]["name"], str(arch["size"])] if arch["size"] else []


def positions(pos, mixers):
    """--pos for an architecture of these layers' mixers: pos as given, or with auto the positions
    experiments/defaults.json gives a model whose every layer has one mixer (probe.positions), else
    learned."""
    if pos != "auto":
        return pos
    return default("probe", "positions").get(mixers[0], "learned") if len(set(mixers)) == 1 else "learned"



def train_command(ckpt, mixers, L, batch_tokens, steps, lr, min_lr, warmup, seed, threads, shared, extra=()):
    """bin/train's command for one recall-probe run (make probe, and its
    --zoology protocol) of sequences of length L: every window one sequence,
    batch_tokens / L of them per step, no weight decay, no validation during
    training (bin/eval scores the answers after); extra: bin/train options
    after the rest (the architecture's size)."""
    args = [os.path.join(BIN, "train"), "--out", ckpt, "--mixer", ",".join(mixers), "--window-align", str(L),
            "--batch-size", str(max(1, batch_tokens // L)), "--max-iters", str(steps), "--lr", str(lr),
            "--min-lr", str(min_lr), "--warmup-iters", str(warmup), "--weight-decay", "0", "--eval-interval", "0",
            "--eval-iters", "2", "--log-interval", "1000000", "--seed", str(seed), "--threads", str(threads)] + shared
    return args + list(extra)
