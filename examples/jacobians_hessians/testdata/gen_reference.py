"""Reference numbers for examples/jacobians_hessians, computed with PyTorch by
plain autograd: every Jacobian entry comes from torch.autograd.grad of one
output element (a Python loop over the outputs), every Hessian entry from a
second torch.autograd.grad of one element of that gradient (create_graph=True),
batches are a Python loop over the samples, and the Hessian-vector product is
the double backward of sum(sin(x)), checked against its closed form
-sin(x)*v. No vmap, no torch.func. Inputs come from synth.py, the twin of the
Go synth package, with the seeds and sizes of main.go.

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
    """d f(x) / d x, shape f(x).shape + x.shape, one autograd call per output element."""
    x = x.detach().requires_grad_()
    y = f(x).reshape(-1)
    rows = [torch.autograd.grad(y[i], x, retain_graph=True)[0] for i in range(y.numel())]
    return torch.stack(rows).reshape(f(x).shape + x.shape)


def hessian(f, x):
    """d2 f(x) / dx2, shape f(x).shape + x.shape + x.shape, nested autograd per element."""
    x = x.detach().requires_grad_()
    y = f(x).reshape(-1)
    out = []
    for k in range(y.numel()):
        (g,) = torch.autograd.grad(y[k], x, create_graph=True)
        g = g.reshape(-1)
        out.append(torch.stack([torch.autograd.grad(g[i], x, retain_graph=True)[0]
                                for i in range(g.numel())]).reshape(x.shape + x.shape))
    return torch.stack(out).reshape(f(x).shape + x.shape + x.shape)


r = {}
D = 16
weight, bias, x = d(1, D, D), d(2, D), d(3, D)
r["jac_x"] = jacobian(lambda v: predict(weight, bias, v), x)
r["jac_weight"] = jacobian(lambda w: predict(w, bias, x), weight)
r["jac_bias"] = jacobian(lambda b: predict(weight, b, x), bias)

for name, (din, dout, seed) in {"taller": (4, 32, 4), "wider": (32, 4, 7)}.items():
    weight, bias, x = d(seed, dout, din), d(seed + 1, dout), d(seed + 2, din)
    r["jac_" + name] = jacobian(lambda v: predict(weight, bias, v), x)

weight, bias, x = d(10, 4, 12), d(11, 4), d(12, 12)
r["hess"] = hessian(lambda v: predict(weight, bias, v), x)

weight, bias, x = d(13, 6, 7), d(14, 6), d(15, 5, 7)
r["batch_jac"] = torch.stack([jacobian(lambda v: predict(weight, bias, v), x[i]) for i in range(5)])
r["batch_hess"] = torch.stack([hessian(lambda v: predict(weight, bias, v), x[i]) for i in range(5)])

x, tangent = d(16, 32).requires_grad_(), d(17, 32)
(g,) = torch.autograd.grad(torch.sin(x).sum(), x, create_graph=True)
(r["hvp"],) = torch.autograd.grad(g, x, grad_outputs=tangent)
# The Hessian of sum(sin(x)) is diag(-sin(x)).
assert torch.allclose(r["hvp"], -torch.sin(x.detach()) * tangent, rtol=1e-14, atol=1e-15)

synth.write(os.path.join(HERE, "reference.json"), r)
