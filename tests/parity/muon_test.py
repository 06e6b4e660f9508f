"""bin/train's Muon step (src/optim/muon.c) against a PyTorch Muon written from
the published algorithm (harness/torch_muon.py), with torch.optim.AdamW on the
tensors Muon leaves: the weights of a tiny hybrid model (attention, Grassmann)
after one step and after three, from the same weights and gradients (written
by build-openblas/test_optim --dump), agree to float tolerance.

usage: /usr/bin/python3 -m tests.parity.muon_test [BUILD_DIR]"""
import json
import os
import subprocess
import sys
import tempfile

import torch

from harness.safetensors_np import read_safetensors
from harness.torch_muon import Muon, muon_takes


def torch_steps(tensors, s):
    """The run in PyTorch: the weights after each step, by name."""
    names = [k[len("before."):] for k in tensors if k.startswith("before.")]
    params = {n: torch.tensor(tensors["before." + n].copy(), requires_grad=True) for n in names}
    hidden = [params[n] for n in names if muon_takes(n, params[n].shape)]
    decayed = [params[n] for n in names if not muon_takes(n, params[n].shape) and params[n].dim() == 2]
    plain = [params[n] for n in names if params[n].dim() == 1]
    assert hidden and decayed and plain, "the model has tensors of every kind"
    adamw = torch.optim.AdamW([{"params": decayed, "weight_decay": s["weight_decay"]},
                               {"params": plain, "weight_decay": 0.0}],
                              lr=s["lr"][0], betas=(s["beta1"], s["beta2"]), eps=s["eps"])
    muon = Muon(hidden, lr=s["muon_lr"], momentum=s["muon_momentum"], weight_decay=s["muon_weight_decay"])
    after = []
    for k in range(s["steps"]):
        lr = s["lr"][k]
        for g in adamw.param_groups:
            g["lr"] = lr
        muon.param_groups[0]["lr"] = s["muon_lr"] * lr / s["lr_peak"]
        for n in names:
            params[n].grad = torch.tensor(tensors[f"grad.{k}.{n}"].copy()) * s["grad_scale"]
        adamw.step()
        muon.step()
        after.append({n: params[n].detach().clone() for n in names})
    return names, after


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "build-openblas")
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "muon.safetensors")
        subprocess.run([os.path.join(build, "test_optim"), "--dump", path], check=True)
        tensors, meta = read_safetensors(path)
    s = json.loads(meta["settings"])
    names, after = torch_steps(tensors, s)
    failures = 0
    for k in (0, s["steps"] - 1):  # one step, and the last (momentum and moments carried)
        worst, where = 0.0, ""
        for n in names:
            ours = torch.tensor(tensors[f"after.{k}.{n}"].copy())
            moved = (after[k][n] - torch.tensor(tensors["before." + n].copy())).abs().max().item()
            err = (ours - after[k][n]).abs().max().item() / max(moved, 1e-12)
            if err > worst:
                worst, where = err, n
        ok = worst < 1e-3
        failures += not ok
        print(f"muon_test: after step {k + 1}: worst difference {worst:.2e} of the weights' change ({where})"
              f" {'ok' if ok else 'FAIL'}")
    # the check can fail: a Muon without Nesterov is told apart
    s2 = dict(s, muon_momentum=0.0)
    _, plain = torch_steps(tensors, s2)
    n = next(n for n in names if muon_takes(n, tensors["before." + n].shape))
    differs = (torch.tensor(tensors[f"after.{s['steps'] - 1}.{n}"].copy()) - plain[-1][n]).abs().max().item()
    print(f"muon_test: without momentum the reference differs by {differs:.2e} ({n}) "
          f"{'ok' if differs > 1e-4 else 'FAIL: the comparison cannot tell'}")
    failures += differs <= 1e-4
    print(f"muon_test: {'passed' if failures == 0 else f'{failures} failed'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
