"""Times the transform cells of examples/jacobians_hessians in PyTorch, the
tutorial's way (functorch / torch.func), on the inputs and at the sizes of
BenchmarkTutorial in main_test.go (synth.py's values, float64): the Jacobian
of predict in x by vmap of a vjp and by jacrev, and in (weight, bias) by
jacrev argnums=(0, 1) (D = 16); jacfwd and jacrev on a taller (4->32) and
a wider (32->4) layer; the Hessian in x by hessian, jacfwd(jacfwd) and
jacrev(jacrev) (12->4); the batch Jacobian by vmap of jacrev and by the
summed output, and the batch Hessian (a batch of 5 of 7->6); the hvp of
sum(sin(x)) by jvp of grad and by vjp of grad (x of 32). The row-by-row
loop of vjps, the tutorial's baseline, is left out, as it is in the Go
benchmark.

    /usr/bin/python3 examples/jacobians_hessians/testdata/time_torch.py [--threads 1,2] [--mintime 2]

Prints, for each thread count (one process each, since the BLAS reads its
thread count when torch loads), the median time of all the cells.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "internal", "torchtime"))
import torchtime  # noqa: E402

THREADS = torchtime.setup(__file__)
report = torchtime.report

import torch  # noqa: E402


from functools import partial  # noqa: E402

import torch.nn.functional as F  # noqa: E402

try:
    from torch.func import grad, hessian, jacfwd, jacrev, jvp, vjp, vmap
except ImportError:  # torch 1.13: functorch
    from functorch import grad, hessian, jacfwd, jacrev, jvp, vjp, vmap

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "internal", "synth"))
import synth  # noqa: E402

torch.set_num_threads(THREADS)
d = synth.data


def predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


def layer(seed, din, dout, *batch):
    return d(seed, dout, din), d(seed + 1, dout), d(seed + 2, *batch, din)


D = 16
weight, bias, x = d(1, D, D), d(2, D), d(3, D)
unit_vectors = torch.eye(D, dtype=torch.float64)
taller, wider, hess = layer(4, 4, 32), layer(7, 32, 4), layer(10, 12, 4)
batch = layer(13, 7, 6, 5)
hvp_x, hvp_tangent = d(16, 32), d(17, 32)


def predict_with_output_summed(weight, bias, x):
    return predict(weight, bias, x).sum(0)


def f(x):
    return x.sin().sum()


def hvp(f, primals, tangents):
    return jvp(grad(f), primals, tangents)[1]


def hvp_revrev(f, primals, tangents):
    _, vjp_fn = vjp(grad(f), *primals)
    return vjp_fn(*tangents)


def cells():
    _, vjp_fn = vjp(partial(predict, weight, bias), x)
    (ft_jacobian,) = vmap(vjp_fn)(unit_vectors)
    ft_jacobian = jacrev(predict, argnums=2)(weight, bias, x)
    ft_jac_weight, ft_jac_bias = jacrev(predict, argnums=(0, 1))(weight, bias, x)
    for w, b, v in (taller, wider):
        jacfwd(predict, argnums=2)(w, b, v)
        jacrev(predict, argnums=2)(w, b, v)
    hess_api = hessian(predict, argnums=2)(*hess)
    jacfwd(jacfwd(predict, argnums=2), argnums=2)(*hess)
    jacrev(jacrev(predict, argnums=2), argnums=2)(*hess)
    compute_batch_jacobian = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))
    compute_batch_jacobian(*batch)
    jacrev(predict_with_output_summed, argnums=2)(*batch).movedim(1, 0)
    compute_batch_hessian = vmap(hessian(predict, argnums=2), in_dims=(None, None, 0))
    batch_hess = compute_batch_hessian(*batch)
    hvp(f, (hvp_x,), (hvp_tangent,))
    hvp_revrev(f, (hvp_x,), (hvp_tangent,))
    return ft_jacobian, ft_jac_weight, ft_jac_bias, hess_api, batch_hess


shapes = [tuple(t.shape) for t in cells()]
assert shapes == [(D, D), (D, D, D), (D, D), (4, 12, 12), (5, 6, 7, 7)], shapes
report("jacobians_hessians", cells)
