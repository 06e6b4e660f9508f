"""Muon in PyTorch, written from the published algorithm (K. Jordan, "Muon: An
optimizer for hidden layers in neural networks", 2024), as bin/train runs it:
for each matrix W (rows x cols) with gradient G,

    B = momentum * B + G                    (momentum buffer, zero at first)
    U = G + momentum * B                    (Nesterov)
    X = U / (|U|_F + 1e-7), on X^T when rows > cols
    5 times: A = X X^T; X = a X + (b A + c A A) X,  (a, b, c) = (3.4445, -4.7750, 2.0315)
    W = W (1 - lr * weight_decay) - lr * sqrt(max(1, rows / cols)) * X

For tests/parity/muon_test.py (against the C step) and harness/torch_train.py
--optimizer muon (the PyTorch model trained with it)."""
import torch

NS_COEFFS = (3.4445, -4.7750, 2.0315)


def newton_schulz(g, steps=5, eps=1e-7):
    """The nearest semi-orthogonal matrix to g, approximately (singular values
    driven into about 0.7..1.2 rather than exactly 1)."""
    a, b, c = NS_COEFFS
    x = g / (g.norm() + eps)
    tall = x.size(0) > x.size(1)
    if tall:
        x = x.t()
    for _ in range(steps):
        gram = x @ x.t()
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.t() if tall else x


class Muon(torch.optim.Optimizer):
    """Muon on 2-D parameters only; param groups take lr, momentum and weight_decay."""

    def __init__(self, params, lr=0.02, momentum=0.95, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, mu, wd = group["lr"], group["momentum"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                assert p.dim() == 2, "Muon updates matrices only"
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(p)
                buf = state["momentum_buffer"]
                buf.mul_(mu).add_(p.grad)
                update = newton_schulz(p.grad + mu * buf)
                rows, cols = p.shape
                p.mul_(1 - lr * wd)
                p.add_(update, alpha=-lr * max(1.0, rows / cols) ** 0.5)


def muon_takes(name, shape):
    """bin/train's choice: the hidden layers' matrices ("h.<l>." and 2-D)."""
    return name.startswith("h.") and len(shape) == 2
