"""Times the GP fit and posterior of examples/gp_regression in PyTorch. The
example ports a JAX script, so this is its natural torch.func equivalent:
the covariance matrices by vmap of vmap of the kernel (the script's
cov_map), the negative log marginal likelihood from torch.linalg.cholesky
and torch.cholesky_solve, its gradient by backward(), torch.optim.Adam at
0.01, then the posterior mean and covariance with
torch.linalg.solve_triangular. Sizes and inputs are those of main.go and of
BenchmarkTutorial in main_test.go: float64, 7 training points (synth.py's
values), 200 test points, 100 steps from the initial hyperparameters.
(torch 1.13 has no compiler; the steps run eagerly, where peel's gradient
is compiled.)

    /usr/bin/python3 examples/gp_regression/testdata/time_torch.py [--threads 1,2] [--mintime 2]

Prints, for each thread count (one process each, since the BLAS reads its
thread count when torch loads), the median time of the fit and posterior.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "internal", "torchtime"))
import torchtime  # noqa: E402

THREADS = torchtime.setup(__file__)
report = torchtime.report

import torch  # noqa: E402


import json  # noqa: E402
import math  # noqa: E402

import torch.nn.functional as F  # noqa: E402

try:
    from torch.func import vmap
except ImportError:  # torch 1.13: functorch
    from functorch import vmap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "internal", "synth"))
import synth  # noqa: E402

torch.set_default_dtype(torch.float64)
torch.set_num_threads(THREADS)
STEPS = 100
numpts = 7
eye = torch.eye(numpts)


def cov_map(cov_func, xs, xs2=None):
    if xs2 is None:
        xs2 = xs
    return vmap(lambda x: vmap(lambda y: cov_func(x, y))(xs2))(xs)


def exp_quadratic(x1, x2):
    return torch.exp(-torch.sum((x1 - x2) ** 2))


def gp(params, x, y, xtest=None):
    noise = F.softplus(params["noise"])
    amp = F.softplus(params["amplitude"])
    ls = F.softplus(params["lengthscale"])
    ymean = y.mean()
    y = y - ymean
    x = x / ls
    train_cov = amp * cov_map(exp_quadratic, x) + eye * (noise + 1e-6)
    chol = torch.linalg.cholesky(train_cov)
    kinvy = torch.cholesky_solve(y, chol)
    if xtest is None:
        log2pi = math.log(2 * 3.1415)
        ml = torch.sum(-0.5 * (y.T @ kinvy) - torch.sum(torch.log(torch.diagonal(chol))) - (numpts / 2.0) * log2pi)
        ml = ml - torch.sum(-0.5 * math.log(2 * 3.1415) - torch.log(amp) - 0.5 * torch.log(amp) ** 2)  # lognormal prior
        return -ml
    xtest = xtest / ls
    cross_cov = amp * cov_map(exp_quadratic, x, xtest)
    mu = cross_cov.T @ kinvy + ymean
    v = torch.linalg.solve_triangular(chol, cross_cov, upper=False)
    var = amp * cov_map(exp_quadratic, xtest) - v.T @ v
    return mu, var


def marginal_likelihood(params, x, y):
    return gp(params, x, y)


x = (synth.data(1, numpts, 1) + 1) * 2 + 1
y = torch.sin(x) + synth.data(2, numpts, 1) * 0.1
xtest = torch.linspace(0, 6, 200).reshape(-1, 1)


def initial():
    return {
        "amplitude": torch.zeros(1, 1, requires_grad=True),
        "noise": torch.full((1, 1), -5.0, requires_grad=True),
        "lengthscale": torch.zeros(1, 1, requires_grad=True),
    }


def fit():
    params = initial()
    opt = torch.optim.Adam(params.values(), lr=0.01)
    for _ in range(STEPS):
        opt.zero_grad()
        marginal_likelihood(params, x, y).backward()
        opt.step()
    with torch.no_grad():
        return gp(params, x, y, xtest)


# The likelihood at the initial hyperparameters is the reference's.
with open(os.path.join(HERE, "reference.json")) as f:
    nlml0 = json.load(f)["nlml0"]["data"][0]
assert abs(marginal_likelihood(initial(), x, y).item() - nlml0) <= 1e-12 * abs(nlml0)
mu, var = fit()
assert mu.shape == (200, 1) and var.shape == (200, 200)
report("gp_regression", fit)
