"""Reference numbers for examples/neural_tangent_kernels, computed with
PyTorch by plain autograd: the tutorial's CNN (F.conv2d three times, ReLU
after the first two, flatten, linear; 8x8 images) on deterministic weights
and images from synth.py (the twin of the Go synth package, with the seeds,
shapes and scales of main_test.go), then the gradient of every output of
every sample with respect to all parameters, one torch.autograd.grad call
each (no vmap, no torch.func), flattened into one Jacobian row; the NTK is the
matrix of dot products of those rows, pair of samples by pair of samples,
and its trace and diagonal are read off it.

    /usr/bin/python3 examples/neural_tangent_kernels/testdata/gen_reference.py
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "internal", "synth"))
import synth  # noqa: E402

d = synth.data
x_train, x_test = d(1, 4, 3, 8, 8), d(2, 2, 3, 8, 8)
# Conv weights OIHW as torch's; the linear weight [in, out] as peel's nn.Linear.
params = [
    d(3, 32, 3, 3, 3) / math.sqrt(27), d(4, 32) / math.sqrt(27),
    d(5, 32, 32, 3, 3) / math.sqrt(288), d(6, 32) / math.sqrt(288),
    d(7, 32, 32, 3, 3) / math.sqrt(288), d(8, 32) / math.sqrt(288),
    d(9, 128, 10) / math.sqrt(128), d(10, 10) / math.sqrt(128),
]
for p in params:
    p.requires_grad_()


def net(x):
    h = torch.relu(F.conv2d(x, params[0], params[1]))
    h = torch.relu(F.conv2d(h, params[2], params[3]))
    h = F.conv2d(h, params[4], params[5]).flatten(1)
    return h @ params[6] + params[7]


def jacobian_rows(xs):
    """[N, O, P]: d out[n, o] / d (all parameters, flattened and concatenated)."""
    out = []
    for n in range(xs.shape[0]):
        y = net(xs[n:n + 1])[0]
        out.append(torch.stack([
            torch.cat([g.reshape(-1) for g in torch.autograd.grad(y[o], params, retain_graph=True)])
            for o in range(y.numel())]))
    return torch.stack(out)


def ntk(x1, x2):
    j1, j2 = jacobian_rows(x1), jacobian_rows(x2)
    k = torch.zeros(j1.shape[0], j2.shape[0], j1.shape[1], j2.shape[1], dtype=torch.float64)
    for n in range(j1.shape[0]):
        for m in range(j2.shape[0]):
            k[n, m] = j1[n] @ j2[m].T
    return k


full = ntk(x_train, x_test)
test = ntk(x_test, x_train)
synth.write(os.path.join(HERE, "reference.json"), {
    "out_test": net(x_test),
    "full": full,
    "trace": torch.diagonal(full, dim1=2, dim2=3).sum(-1),
    "diagonal": torch.diagonal(full, dim1=2, dim2=3),
    "test": test,
    "test_trace": torch.diagonal(test, dim1=2, dim2=3).sum(-1),
    "test_diagonal": torch.diagonal(test, dim1=2, dim2=3),
})
