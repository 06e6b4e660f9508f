"""PyTorch parity: the C model's loss and every gradient against autograd.

For each architecture, bin/train --dump-grads writes the weights, the first
batch, the loss and all gradients (safetensors). This script rebuilds the same
model in PyTorch (float64, from those float32 weights), runs autograd on the
same batch and requires a relative error below 1e-4 for the loss and for each
gradient tensor: |c - torch| / |torch| over the whole tensor.

Run from the project root after `make`: /usr/bin/python3 -m tests.parity
"""
import json
import os
import subprocess
import sys
import tempfile

import torch

from harness.common import BIN
from harness.safetensors_np import read_safetensors
from harness.torch_ref import model_loss

TOL = 1e-4


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
    status = "ok" if not failures else "FAILED"
    print(f"parity {name:<34} loss {c_loss:.6f} torch {loss.item():.6f}  "
          f"{len(W)} gradients, worst relative error {worst:.2e}  {status}")
    for f in failures:
        print("   ", f)
    return not failures


def main():
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
    ]
    # Trained first (60 steps at a high rate), so that LayerNorm gains and
    # biases are no longer 1 and 0: a LayerNorm applied in the wrong place,
    # or its gradient sent to the wrong tensor, then shows.
    trained = [
        ("attention, pre-norm, trained", ["--mixer", "attention"]),
        ("attention, post-norm, trained", ["--mixer", "attention", "--norm", "post"]),
        ("hybrid g,a post-norm, trained", ["--mixer", "grassmann,attention", "--norm", "post",
                                           "--grassmann-rank", "6", "--grassmann-windows", "2,4;1"]),
    ]
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "text.txt"), "w") as f:
            f.write(text)
        subprocess.run([os.path.join(BIN, "prepare"), "--input", os.path.join(tmp, "text.txt"),
                        "--out", os.path.join(tmp, "data"), "--val-fraction", "0.2", "--test-fraction", "0"],
                       check=True, stdout=subprocess.DEVNULL)
        base = ["--n-layer", "2", "--n-head", "2", "--n-embd", "16", "--block-size", "16", "--batch-size", "3"]
        for i, (name, extra) in enumerate(configs + trained):
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
