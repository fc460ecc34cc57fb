"""Times the empirical NTKs of examples/neural_tangent_kernels in PyTorch,
the tutorial's way (functorch / torch.func), at the sizes of main.go and of
BenchmarkTutorial in main_test.go: 20 train and 5 test images 3x8x8,
float32, the CNN 3->32->32->32 channels and a linear layer 128->10; main's
four calls: the Jacobian contraction (train x test) with compute "full" and
"trace", then (test x train) "full" by the Jacobian contraction and by
NTK-vector products.

    /usr/bin/python3 examples/neural_tangent_kernels/testdata/time_torch.py [--threads 1,2] [--mintime 2]

Prints, for each thread count (one process each, since the BLAS reads its
thread count when torch loads), the median time of the four calls.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "internal", "torchtime"))
import torchtime  # noqa: E402

THREADS = torchtime.setup(__file__)
report = torchtime.report

import torch  # noqa: E402


import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

try:
    from torch.func import functional_call, jacrev, jvp, vjp, vmap
except ImportError:  # torch 1.13: functorch
    from functorch import jacrev, jvp, make_functional, vjp, vmap
    functional_call = None

torch.manual_seed(0)
torch.set_num_threads(THREADS)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, (3, 3))
        self.conv2 = nn.Conv2d(32, 32, (3, 3))
        self.conv3 = nn.Conv2d(32, 32, (3, 3))
        self.fc = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = self.conv3(x).flatten(1)
        return self.fc(x)


x_train = torch.randn(20, 3, 8, 8)
x_test = torch.randn(5, 3, 8, 8)
net = CNN()

if functional_call is not None:
    params = {k: v.detach() for k, v in net.named_parameters()}

    def fnet_single(params, x):
        return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)
else:
    fnet, params = make_functional(net)

    def fnet_single(params, x):
        return fnet(params, x.unsqueeze(0)).squeeze(0)


def leaves(tree):
    return tree.values() if isinstance(tree, dict) else tree


def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, compute="full"):
    jac1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
    jac1 = [j.flatten(2) for j in leaves(jac1)]
    jac2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
    jac2 = [j.flatten(2) for j in leaves(jac2)]
    einsum_expr = {"full": "Naf,Mbf->NMab", "trace": "Naf,Maf->NM", "diagonal": "Naf,Maf->NMa"}[compute]
    result = torch.stack([torch.einsum(einsum_expr, j1, j2) for j1, j2 in zip(jac1, jac2)])
    return result.sum(0)


def empirical_ntk_ntk_vps(func, params, x1, x2, compute="full"):
    def get_ntk(x1, x2):
        def func_x1(params):
            return func(params, x1)

        def func_x2(params):
            return func(params, x2)

        output, vjp_fn = vjp(func_x1, params)

        def get_ntk_slice(vec):
            vjps = vjp_fn(vec)  # a tuple of one tree, like (params,)
            _, jvps = jvp(func_x2, (params,), vjps)
            return jvps

        basis = torch.eye(output.numel(), dtype=output.dtype).view(output.numel(), -1)
        return vmap(get_ntk_slice)(basis)

    result = vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)
    if compute == "trace":
        return torch.einsum("NMKK->NM", result)
    if compute == "diagonal":
        return torch.einsum("NMKK->NMK", result)
    return result


def tutorial():
    full = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test, "full")
    trace = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test, "trace")
    from_jacobian_contraction = empirical_ntk_jacobian_contraction(fnet_single, params, x_test, x_train, "full")
    from_ntk_vps = empirical_ntk_ntk_vps(fnet_single, params, x_test, x_train, "full")
    return full, trace, from_jacobian_contraction, from_ntk_vps


full, trace, jc, vps = tutorial()
assert full.shape == (20, 5, 10, 10) and trace.shape == (20, 5) and jc.shape == vps.shape == (5, 20, 10, 10)
assert torch.allclose(jc, vps, atol=1e-5 * jc.abs().max().item()), (jc - vps).abs().max()
report("neural_tangent_kernels", tutorial)
