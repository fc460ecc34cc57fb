"""Reference numbers for examples/jacobians_hessians, computed with PyTorch by
plain autograd: every Jacobian and Hessian entry comes from
torch.autograd.grad in Python loops (one call per output element, nested
with create_graph=True for second derivatives; no vmap, no torch.func).
Inputs come from synth.py, the twin of the Go synth package.

    /usr/bin/python3 examples/jacobians_hessians/testdata/gen_reference.py
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "internal", "synth"))
import synth  # noqa: E402

d = synth.data


def predict(weight, bias, x):
    return torch.tanh(x @ weight.T + bias)


def jacobian(f, x):
    """d f(x) / d x, shape f(x).shape + x.shape, one autograd call per output."""
    x = x.detach().requires_grad_()
    y = f(x)
    rows = [torch.autograd.grad(y.reshape(-1)[i], x, retain_graph=True)[0] for i in range(y.numel())]
    return torch.stack(rows).reshape(y.shape + x.shape)


def hessian(f, x):
    """d² f(x) / d x², shape f(x).shape + x.shape + x.shape, nested autograd."""
    x = x.detach().requires_grad_()
    y = f(x).reshape(-1)
    out = []
    for k in range(y.numel()):
        (g,) = torch.autograd.grad(y[k], x, create_graph=True)
        out.append(torch.stack([torch.autograd.grad(g.reshape(-1)[i], x, retain_graph=True)[0]
                                for i in range(x.numel())]).reshape(x.shape + x.shape))
    return torch.stack(out).reshape(f(x).shape + x.shape + x.shape)


r = {}
D = 16
weight, bias, x = d(1, D, D) * 0.3, d(2, D), d(3, D)
r["jac_x"] = jacobian(lambda x: predict(weight, bias, x), x)
r["jac_weight"] = jacobian(lambda w: predict(w, bias, x), weight)
r["jac_bias"] = jacobian(lambda b: predict(weight, b, x), bias)

weight, bias, x = d(4, 4, 12) * 0.3, d(5, 4), d(6, 12)
r["hess"] = hessian(lambda x: predict(weight, bias, x), x)

weight, bias, x = d(7, 6, 7) * 0.3, d(8, 6), d(9, 5, 7)
r["batch_jac"] = torch.stack([jacobian(lambda v: predict(weight, bias, v), x[i]) for i in range(5)])
r["batch_hess"] = torch.stack([hessian(lambda v: predict(weight, bias, v), x[i]) for i in range(5)])

x, tangent = d(10, 32).requires_grad_(), d(11, 32)
(g,) = torch.autograd.grad(torch.sin(x).sum(), x, create_graph=True)
(r["hvp"],) = torch.autograd.grad(g, x, grad_outputs=tangent)
# sanity: the Hessian of sum(sin(x)) is diag(-sin(x))
assert torch.allclose(r["hvp"], -torch.sin(x.detach()) * tangent, rtol=1e-14, atol=1e-15)

synth.write(os.path.join(HERE, "reference.json"), r)
