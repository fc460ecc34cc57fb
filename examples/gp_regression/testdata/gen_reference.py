"""Reference numbers for examples/gp_regression, computed with PyTorch in
float64 by plain autograd: the covariance matrices element by element in
Python loops (no vmap), torch.linalg.cholesky, torch.cholesky_solve and
torch.linalg.solve_triangular, and torch.optim.Adam for the fit. Inputs come
from synth.py, the twin of the Go synth package.

    /usr/bin/python3 examples/gp_regression/testdata/gen_reference.py
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "internal", "synth"))
import synth  # noqa: E402

N = 7
STEPS = 1000
LOG2PI = math.log(2 * 3.1415)  # the example's constant

x = (synth.data(1, N, 1) + 1) * 2 + 1
y = torch.sin(x) + synth.data(2, N, 1) * 0.1
xtest = torch.linspace(0, 6, 200, dtype=torch.float64).reshape(-1, 1)


def kernel(a, b, amp, ls):
    """amp * exp(-|a_i - b_j|^2 / ls^2), one element at a time."""
    rows = []
    for i in range(a.shape[0]):
        rows.append(torch.stack([amp * torch.exp(-(((a[i] - b[j]) / ls) ** 2).sum()) for j in range(b.shape[0])]))
    return torch.stack(rows)


def factor(p):
    amp, noise, ls = (F.softplus(p[k]).reshape(()) for k in ("Amplitude", "Noise", "Lengthscale"))
    yc = y - y.mean()
    K = kernel(x, x, amp, ls) + torch.eye(N, dtype=torch.float64) * (noise + 1e-6)
    L = torch.linalg.cholesky(K)
    return amp, ls, yc, L, torch.cholesky_solve(yc, L)


def nlml(p):
    amp, _, yc, L, alpha = factor(p)
    ml = -0.5 * (yc * alpha).sum() - torch.log(torch.diagonal(L)).sum() - N / 2 * LOG2PI
    prior = -0.5 * math.log(2 * 3.1415) - torch.log(amp) - 0.5 * torch.log(amp) ** 2
    return -(ml - prior)


def predict(p):
    amp, ls, yc, L, alpha = factor(p)
    cross = kernel(x, xtest, amp, ls)
    mu = cross.T @ alpha + y.mean()
    v = torch.linalg.solve_triangular(L, cross, upper=False)
    return mu, kernel(xtest, xtest, amp, ls) - v.T @ v


names = ("Amplitude", "Noise", "Lengthscale")
params = {
    "Amplitude": torch.zeros(1, 1, dtype=torch.float64, requires_grad=True),
    "Noise": torch.full((1, 1), -5.0, dtype=torch.float64, requires_grad=True),
    "Lengthscale": torch.zeros(1, 1, dtype=torch.float64, requires_grad=True),
}
out = {}
value = nlml(params)
grads = torch.autograd.grad(value, [params[n] for n in names])
out["nlml0"] = value
for n, g in zip(names, grads):
    out["grad0." + n] = g

opt = torch.optim.Adam([params[n] for n in names], lr=0.01)
for _ in range(STEPS):
    opt.zero_grad()
    nlml(params).backward()
    opt.step()
with torch.no_grad():
    for n in names:
        out["trained." + n] = params[n]
    out["nlml_trained"] = nlml(params)
    mu, var = predict(params)
    out["mu"] = mu
    out["var_diag"] = torch.diagonal(var)
    out["var_every20"] = var[::20, ::20]

synth.write(os.path.join(HERE, "reference.json"), out)
