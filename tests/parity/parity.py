"""PyTorch parity: the C model's loss and every gradient against autograd.

For each architecture, bin/train --dump-grads writes the weights, the first
batch, the loss and all gradients (safetensors). This script rebuilds the same
model in PyTorch (float64, from those float32 weights), runs autograd on the
same batch and requires a relative error below 1e-4 for the loss and for each
gradient tensor: |c - torch| / |torch| over the whole tensor.

Where the CPU has AVX512_BF16, the same for bin/train --precision bf16
(check_bf16): against float64 within a derived bf16 tolerance, and against
PyTorch's CPU autocast to bf16 (torch.autocast("cpu", dtype=torch.bfloat16),
the same fp32 weights), which our recipe must match at least as closely to
float64 (it rounds less: its products' outputs and the attention scores stay
fp32, autocast's are bf16).

Every mixer of the registry (bin/info --mixers) that has a PyTorch reference
(harness/mixers/NAME.py) is checked: in the models below, and a model of its
own where none of them has it; those that have none are named in one line
and fail nothing.

Run from the project root after `make`: /usr/bin/python3 -m tests.parity

--kernel-paths runs KERNEL_PATHS alone: make test runs every model at the
best level our kernels run at and these at the levels below, where only the
kernels (lm/cpu.h's levels: the templates src/*/*_kernel.h, compiled per level)
differ. Run at LM_MAX_ISA=portable on a coverage build (gcc --coverage), they
execute every line of the levels' files that the whole set does, with each
mixer, its tiles and windows, every pair map, the soft cap, gla's chunks and
two trained models (AdamW's loop); docs/testing.md.
"""
import json
import os
import subprocess
import sys
import tempfile

import torch

from harness import registry
from harness.common import BIN
from harness.safetensors_np import read_safetensors
from harness.torch_ref import model_loss, reference

TOL = 1e-4

# bf16 against float64, per gradient tensor (and the loss), relatively: each
# product on a path adds at most 2^-7 of its magnitude sum (bf16.h: both
# operands rounded by <= 2^-8); with P products on the longest path from the
# weights through the loss and back, and K = 4 for magnitude sums above the
# results' size (as tests/unit/train/test_bf16_train.c): P 2^-7 K. These models (2
# layers) have P = 9 forward (per layer mixer 2-3 + MLP 2, then the head)
# and 9 backward: P = 18.
TOL_BF16 = 18 * 2.0 ** -7 * 4
# Our bf16 gradients' distance from float64 (all tensors together) may be at
# most this multiple of autocast's.
AUTOCAST_RATIO = 1.5


def report(line, failures):
    """Print one check's line with ok or FAILED and each failure under it; True if it passed."""
    print(f"{line}  {'ok' if not failures else 'FAILED'}")
    for f in failures:
        print("   ", f)
    return not failures


def check(name, dump):
    tensors, meta = read_safetensors(dump)
    cfg = json.loads(meta["config"])
    W = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True)
         for k, v in tensors.items() if not k.startswith("grad.") and k not in ("inputs", "targets")}
    inputs = torch.tensor(tensors["inputs"], dtype=torch.long)
    targets = torch.tensor(tensors["targets"], dtype=torch.long)
    loss = model_loss(W, cfg, inputs, targets)
    loss.backward()
    c_loss = float(meta["loss"])
    worst = abs(c_loss - loss.item()) / abs(loss.item())
    failures = []
    if worst >= TOL:
        failures.append(f"loss {c_loss} vs {loss.item()}")
    for k, w in W.items():
        ours = torch.tensor(tensors["grad." + k], dtype=torch.float64)
        ref = w.grad
        rel = (ours - ref).norm().item() / max(ref.norm().item(), 1e-30)
        worst = max(worst, rel)
        if not rel < TOL:
            failures.append(f"{k}: relative error {rel:.2e}")
    return report(f"parity {name:<34} loss {c_loss:.6f} torch {loss.item():.6f}  "
                  f"{len(W)} gradients, worst relative error {worst:.2e}", failures)


def grads_against(W, cfg, inputs, targets, dtype, autocast):
    """Loss and gradients of the model at weights W (float64 tensors), computed in dtype, under autocast or not."""
    Wd = {k: v.detach().to(dtype).requires_grad_(True) for k, v in W.items()}
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        loss = model_loss(Wd, cfg, inputs, targets)
    loss.float().backward()
    return loss.item(), {k: v.grad.to(torch.float64) for k, v in Wd.items()}


def check_bf16(name, dump):
    tensors, meta = read_safetensors(dump)
    cfg = json.loads(meta["config"])
    W = {k: torch.tensor(v, dtype=torch.float64)
         for k, v in tensors.items() if not k.startswith("grad.") and k not in ("inputs", "targets")}
    inputs = torch.tensor(tensors["inputs"], dtype=torch.long)
    targets = torch.tensor(tensors["targets"], dtype=torch.long)
    loss64, g64 = grads_against(W, cfg, inputs, targets, torch.float64, False)
    loss_ac, g_ac = grads_against(W, cfg, inputs, targets, torch.float32, True)
    ours = {k: torch.tensor(tensors["grad." + k], dtype=torch.float64) for k in W}
    c_loss = float(meta["loss"])
    failures = []
    if not abs(c_loss - loss64) / abs(loss64) <= TOL_BF16:
        failures.append(f"loss {c_loss} vs float64 {loss64}")
    for k in W:
        rel = (ours[k] - g64[k]).norm().item() / max(g64[k].norm().item(), 1e-30)
        if not rel <= TOL_BF16:
            failures.append(f"{k}: relative error {rel:.2e} from float64, bound {TOL_BF16:.2e}")
    flat = lambda g: torch.cat([g[k].flatten() for k in sorted(W)])
    ref = flat(g64)
    e_ours = (flat(ours) - ref).norm().item() / ref.norm().item()
    e_ac = (flat(g_ac) - ref).norm().item() / ref.norm().item()
    if not e_ours > 1e-6:
        failures.append(f"gradients equal float64's to {e_ours:.1e}: the bf16 products did not run")
    if not e_ours <= AUTOCAST_RATIO * e_ac:
        failures.append(f"gradients {e_ours:.2e} from float64, autocast's {e_ac:.2e}")
    return report(f"parity {name:<34} loss {c_loss:.6f} float64 {loss64:.6f} autocast {loss_ac:.6f}  gradients from "
                  f"float64: ours {e_ours:.2e}, autocast {e_ac:.2e}", failures)


def bf16_absent():
    """Why bin/train --precision bf16 cannot run at this level (None: it runs): the CPU
    lacks AVX512_BF16, or LM_MAX_ISA caps our kernels below AVX-512, which hides it
    (lm/cpu.h), as make test's runs at the lower levels do."""
    try:
        flags = open("/proc/cpuinfo").read().split()
    except OSError:
        flags = []
    if "avx512_bf16" not in flags:
        return "this CPU has no AVX512_BF16"
    cap = os.environ.get("LM_MAX_ISA", "")
    if cap not in ("", "avx512"):
        return f"LM_MAX_ISA={cap} caps our kernels below AVX-512, which bf16 needs"
    return None


# The models --kernel-paths runs (see the docstring).
KERNEL_PATHS = ("hybrid attention,grassmann, rope", "attention, 5 tiles of 64, window 40", "grassmann, outer pair map",
                "hybrid g,a, sum pair map, rope", "attention, rmsnorm relu2 qk-norm softcap", "gla, 3 chunks",
                "hybrid a,g post-norm, modern recipe", "hybrid g,a post-norm, trained", "gla, modern recipe, trained")


def layer_mixers(extra):
    """The mixers a model of these bin/train options has (the registry's first without --mixer)."""
    given = extra[extra.index("--mixer") + 1] if "--mixer" in extra else registry.names()[0]
    return set(given.split(","))


def missing_references():
    """The registered mixers (bin/info --mixers) without a PyTorch reference, said in one line."""
    missing = [m for m in registry.names() if reference(m) is None]
    if missing:
        print(f"parity: no PyTorch reference (harness/mixers/NAME.py) for: {', '.join(missing)}: not checked")
    return set(missing)


def checkable(models, missing):
    """The models whose every mixer has a PyTorch reference."""
    return [(n, extra) for n, extra in models if not layer_mixers(extra) & missing]


def own_models(models, missing):
    """A model (bin/train's defaults but --mixer) for each registered mixer with a reference that none of
    the models has."""
    covered = set().union(*(layer_mixers(extra) for _, extra in models))
    return [(f"{m}, from the registry", ["--mixer", m]) for m in registry.names() if m not in missing | covered]


def main():
    if sys.argv[1:] not in ([], ["--kernel-paths"]):
        print("usage: python3 -m tests.parity [--kernel-paths]", file=sys.stderr)
        return 2
    kernel_paths = sys.argv[1:] == ["--kernel-paths"]
    torch.manual_seed(0)
    text = ("It is not down in any map; true places never are. " * 3 +
            "Call me Ishmael. Some years ago, never mind how long precisely, "
            "having little or no money in my purse, I thought I would sail about.\n") * 8
    configs = [
        ("attention, learned positions", ["--mixer", "attention"]),
        ("attention, sinusoidal positions", ["--mixer", "attention", "--pos", "sinusoidal"]),
        ("attention, rope positions", ["--mixer", "attention", "--pos", "rope"]),
        ("hybrid attention,grassmann, rope", ["--mixer", "attention,grassmann", "--pos", "rope",
                                              "--grassmann-rank", "6", "--grassmann-windows", "1,2,4"]),
        ("attention, 3 tiles (128, 128, 44)", ["--mixer", "attention", "--block-size", "300", "--batch-size", "2"]),
        ("grassmann", ["--mixer", "grassmann", "--grassmann-rank", "6", "--grassmann-windows", "1,2,4,8"]),
        ("hybrid grassmann,attention,grassmann", ["--mixer", "grassmann,attention,grassmann", "--n-layer", "3",
                                                  "--grassmann-rank", "5", "--grassmann-windows", "1,3,5"]),
        ("attention, post-norm", ["--mixer", "attention", "--norm", "post"]),
        ("grassmann, post-norm, per-layer windows", ["--mixer", "grassmann", "--norm", "post", "--grassmann-rank", "6",
                                                     "--grassmann-windows", "1;2,4"]),
        ("hybrid a,g,g, per-layer windows", ["--mixer", "attention,grassmann,grassmann", "--n-layer", "3",
                                             "--grassmann-rank", "5", "--grassmann-windows", "1;1,3;5"]),
        # The recipe's switches, without zero-init (whose zeros would hide
        # gradients; the trained models below have it). Caps of 0.5 to 2 bite:
        # these models' logits are of that size.
        ("attention, rmsnorm relu2 qk-norm softcap", ["--mixer", "attention", "--norm-type", "rmsnorm", "--mlp-act",
                                                     "relu2", "--qk-norm", "1", "--logit-softcap", "0.5"]),
        ("attention, rope qk-norm untied head", ["--mixer", "attention", "--pos", "rope", "--qk-norm", "1",
                                                 "--untied-head", "1"]),
        ("grassmann, rmsnorm relu2 untied softcap", ["--mixer", "grassmann", "--grassmann-rank", "6",
                                                     "--grassmann-windows", "1,2,4", "--norm-type", "rmsnorm",
                                                     "--mlp-act", "relu2", "--untied-head", "1",
                                                     "--logit-softcap", "1"]),
        # No positions reach a first Grassmann layer at rope: a repeated token
        # gives equal z, a parallel pair (the text repeats letters at every
        # offset), which adds nothing and passes no gradient.
        ("grassmann, rope, repeated tokens", ["--mixer", "grassmann", "--pos", "rope", "--grassmann-rank", "6",
                                              "--grassmann-windows", "1,2,4"]),
        ("hybrid g,a, rope, repeated tokens", ["--mixer", "grassmann,attention", "--pos", "rope",
                                               "--grassmann-rank", "6", "--grassmann-windows", "1,2,4"]),
        # The controls' pair maps: the normalised outer product and the sum.
        ("grassmann, outer pair map", ["--mixer", "grassmann", "--grassmann-rank", "5", "--grassmann-windows", "1,2,4",
                                       "--grassmann-pair", "outer"]),
        ("hybrid g,a, sum pair map, rope", ["--mixer", "grassmann,attention", "--pos", "rope", "--grassmann-rank", "6",
                                            "--grassmann-windows", "1,3", "--grassmann-pair", "sum"]),
        # A sliding window: within a tile, and over three tiles whose bands
        # cut some key tiles and skip others.
        ("attention, window 5", ["--mixer", "attention", "--attn-window", "5"]),
        ("attention, 3 tiles, window 150", ["--mixer", "attention", "--block-size", "300", "--batch-size", "2",
                                            "--attn-window", "150"]),
        # A window shorter than the tile: tiles of 64 (five over 300 positions).
        ("attention, 5 tiles of 64, window 40", ["--mixer", "attention", "--block-size", "300", "--batch-size", "2",
                                                 "--attn-window", "40"]),
        # Gated linear attention: one chunk of its recurrence, then three
        # (block 80: chunks of 32, 32 and 16), in a hybrid with rope.
        ("gla", ["--mixer", "gla"]),
        ("gla, 3 chunks", ["--mixer", "gla", "--block-size", "80", "--batch-size", "2"]),
        ("hybrid gla,attention, rope, window 4", ["--mixer", "gla,attention", "--pos", "rope", "--attn-window", "4"]),
        ("hybrid a,g post-norm, modern recipe", ["--recipe", "modern", "--pos", "learned", "--zero-init", "0", "--mixer",
                                                 "attention,grassmann", "--norm", "post", "--grassmann-rank", "6",
                                                 "--grassmann-windows", "1,2,4", "--logit-softcap", "2"]),
        # Gated DeltaNet: one chunk of its recurrence, then three (block 40:
        # chunks of 16, 16 and 8), in a hybrid with rope.
        ("deltanet", ["--mixer", "deltanet"]),
        ("deltanet, 3 chunks", ["--mixer", "deltanet", "--block-size", "40", "--batch-size", "2"]),
        ("hybrid deltanet,attention, rope", ["--mixer", "deltanet,attention", "--pos", "rope"]),
    ]
    # Trained first (60 steps at a high rate), so that LayerNorm gains and
    # biases are no longer 1 and 0: a LayerNorm applied in the wrong place,
    # or its gradient sent to the wrong tensor, then shows (and zero-init's
    # zeros are gone).
    trained = [
        ("attention, pre-norm, trained", ["--mixer", "attention"]),
        ("attention, post-norm, trained", ["--mixer", "attention", "--norm", "post"]),
        ("hybrid g,a post-norm, trained", ["--mixer", "grassmann,attention", "--norm", "post",
                                           "--grassmann-rank", "6", "--grassmann-windows", "2,4;1"]),
        ("attention, modern recipe, trained", ["--recipe", "modern", "--logit-softcap", "2"]),
        ("gla, modern recipe, trained", ["--recipe", "modern", "--logit-softcap", "2", "--mixer", "gla"]),
        ("hybrid g,a, modern recipe, trained", ["--recipe", "modern", "--logit-softcap", "2", "--mixer",
                                                "grassmann,attention", "--grassmann-rank", "6",
                                                "--grassmann-windows", "2,4;1"]),
        ("deltanet, modern recipe, trained", ["--recipe", "modern", "--logit-softcap", "2", "--mixer", "deltanet"]),
    ]
    bf16 = [
        ("bf16 attention", ["--mixer", "attention"]),
        ("bf16 hybrid a,g post-norm, rope", ["--mixer", "attention,grassmann", "--norm", "post", "--pos", "rope",
                                            "--grassmann-rank", "6", "--grassmann-windows", "1,2,4"]),
        ("bf16 attention, modern recipe", ["--recipe", "modern", "--zero-init", "0", "--logit-softcap", "2"]),
        ("bf16 gla", ["--mixer", "gla"]),
        ("bf16 attention, window 5, rope", ["--mixer", "attention", "--attn-window", "5", "--pos", "rope"]),
    ] if not bf16_absent() else []
    if not bf16:
        print(f"parity: {bf16_absent()}: the bf16 comparisons are left to the levels that run them")
    names = [n for n, _ in configs + trained]
    assert all(n in names for n in KERNEL_PATHS), [n for n in KERNEL_PATHS if n not in names]
    missing = missing_references()
    configs, trained, bf16 = checkable(configs, missing), checkable(trained, missing), checkable(bf16, missing)
    configs += own_models(configs + trained, missing)
    if kernel_paths:
        print(f"parity: --kernel-paths: {len(KERNEL_PATHS)} of the {len(names)} models (and bf16's where it runs)")
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "text.txt"), "w") as f:
            f.write(text)
        subprocess.run([os.path.join(BIN, "prepare"), "--input", os.path.join(tmp, "text.txt"),
                        "--out", os.path.join(tmp, "data"), "--val-fraction", "0.2", "--test-fraction", "0"],
                       check=True, stdout=subprocess.DEVNULL)
        base = ["--n-layer", "2", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "3"]
        for i, (name, extra) in enumerate(bf16):
            dump = os.path.join(tmp, f"bf16_{i}.safetensors")
            subprocess.run([os.path.join(BIN, "train"), "--data", os.path.join(tmp, "data"), "--seed", str(3 + i),
                            "--precision", "bf16", "--dump-grads", dump] + base + extra,
                           check=True, stdout=subprocess.DEVNULL)
            if check_bf16(name, dump):
                passed += 1
            else:
                failed += 1
        for i, (name, extra) in enumerate(configs + trained):
            if kernel_paths and name not in KERNEL_PATHS:
                continue
            dump = os.path.join(tmp, f"dump{i}.safetensors")
            train = [os.path.join(BIN, "train"), "--data", os.path.join(tmp, "data"), "--seed", str(7 + i)] + base + extra
            if i >= len(configs):
                ckpt = os.path.join(tmp, f"trained{i}.ckpt")
                subprocess.run(train + ["--out", ckpt, "--max-iters", "60", "--lr", "1e-2", "--warmup-iters", "0",
                                        "--eval-interval", "0", "--eval-iters", "1"], check=True, stdout=subprocess.DEVNULL)
                args = [os.path.join(BIN, "train"), "--data", os.path.join(tmp, "data"), "--resume", ckpt,
                        "--dump-grads", dump]
            else:
                args = train + ["--dump-grads", dump]
            subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
            if check(name, dump):
                passed += 1
            else:
                failed += 1
    print(f"parity: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
