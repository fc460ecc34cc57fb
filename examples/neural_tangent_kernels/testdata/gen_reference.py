"""Reference numbers for examples/neural_tangent_kernels, computed with
PyTorch by plain autograd: the gradient of every output of every sample with
respect to all parameters, one torch.autograd.grad call each (no vmap, no
torch.func), flattened into one Jacobian row; the NTK is then the matrix of
dot products of those rows. Inputs come from synth.py, the twin of the Go
synth package.

    /usr/bin/python3 examples/neural_tangent_kernels/testdata/gen_reference.py
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "internal", "synth"))
import synth  # noqa: E402

d = synth.data
x_train, x_test = d(1, 6, 3, 4, 4), d(2, 3, 3, 4, 4)
params = [d(3, 48, 16) * 0.15, d(4, 16) * 0.1, d(5, 16, 16) * 0.25, d(6, 16) * 0.1,
          d(7, 16, 5) * 0.25, d(8, 5) * 0.1]
for p in params:
    p.requires_grad_()


def net(x):
    h = x.reshape(x.shape[0], -1)
    h = torch.relu(h @ params[0] + params[1])
    h = torch.relu(h @ params[2] + params[3])
    return h @ params[4] + params[5]


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
    "full": full,
    "trace": torch.diagonal(full, dim1=2, dim2=3).sum(-1),
    "diagonal": torch.diagonal(full, dim1=2, dim2=3),
    "test": test,
    "test_trace": torch.diagonal(test, dim1=2, dim2=3).sum(-1),
})
