"""Times the PINN training of examples/pinn in PyTorch. The example ports a
JAX script, so this is its natural torch.func equivalent: the network u is
a function of its parameters and of one point, the Laplacian the trace of
jacfwd(jacrev(u)) in the point, vmapped over the collocation points, and
torch.optim.Adam (lr 1e-2, as the port's schedule stays at its initial
rate) steps on the residual and boundary losses, the gradient by
loss.backward(). The sizes are those of main.go and of BenchmarkTutorial in
main_test.go: the [2, 32, 1] tanh MLP with normal weights and biases
scaled by 0.1, float64, 14x14 = 196 interior and 60 boundary points, 100
steps from the initial parameters. (torch 1.13 has no compiler; the steps
run eagerly, where peel's are compiled.)

    /usr/bin/python3 examples/pinn/testdata/time_torch.py [--threads 1,2] [--mintime 2]

Prints, for each thread count (one process each, since the BLAS reads its
thread count when torch loads), the median time of the 100 steps.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "internal", "torchtime"))
import torchtime  # noqa: E402

THREADS = torchtime.setup(__file__)
report = torchtime.report

import torch  # noqa: E402


import math  # noqa: E402

try:
    from torch.func import jacfwd, jacrev, vmap
except ImportError:  # torch 1.13: functorch
    from functorch import jacfwd, jacrev, vmap

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)
torch.set_num_threads(THREADS)
STEPS = 100


def init_params(layer_sizes):
    return [(0.1 * torch.randn(m, n), 0.1 * torch.randn(n)) for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]


def model(params, x):
    hidden = x
    for w, b in params[:-1]:
        hidden = torch.tanh(hidden @ w + b)
    w, b = params[-1]
    return (hidden @ w + b).reshape(())


def square_points(n):
    t = torch.linspace(0, 1, n)[1:-1]
    gx, gy = torch.meshgrid(t, t, indexing="ij")
    return torch.stack([gx.flatten(), gy.flatten()], 1)


def boundary_points(n):
    t = torch.linspace(0, 1, n)[:-1]
    zero, one = torch.zeros_like(t), torch.ones_like(t)
    sides = [(t, zero), (one, t), (1 - t, one), (zero, 1 - t)]
    return torch.cat([torch.stack(xy, 1) for xy in sides])


interior, boundary = square_points(16), boundary_points(16)


def u_star(x):
    return torch.prod(torch.sin(math.pi * x))


def f(x):
    return 2 * math.pi ** 2 * u_star(x)


def laplace(params, x):
    return torch.trace(jacfwd(jacrev(model, argnums=1), argnums=1)(params, x))


def residual(params, x):
    return (laplace(params, x) + f(x)) ** 2


v_residual = vmap(residual, (None, 0))
v_model = vmap(model, (None, 0))


def loss(params):
    interior_loss = v_residual(params, interior).mean()
    boundary_loss = 4 * (v_model(params, boundary) ** 2).mean()
    return interior_loss + boundary_loss


params0 = init_params([2, 32, 1])


def train():
    params = [(w.clone().requires_grad_(), b.clone().requires_grad_()) for w, b in params0]
    optimizer = torch.optim.Adam([p for layer in params for p in layer], lr=1e-2)
    for _ in range(STEPS):
        optimizer.zero_grad()
        value = loss(params)
        value.backward()
        optimizer.step()
    return value


first = loss(params0).item()
last = train().item()
assert last < first / 10, (first, last)
report("pinn", train)
