"""Times the per-sample gradients of examples/per_sample_grads in PyTorch,
the tutorial's way: vmap(grad(compute_loss), in_dims=(None, None, 0, 0))
over the functional SimpleCNN, at the sizes of main.go and of
BenchmarkTutorial in main_test.go: a batch of 8 images 1x10x10, float64,
channels 1->4->8, fc1 72->16, fc2 16->10, log_softmax and NLL loss.

    /usr/bin/python3 examples/per_sample_grads/testdata/time_torch.py [--threads 1,2] [--mintime 2]

Prints, for each thread count (one process each, since the BLAS reads its
thread count when torch loads), the median time of one call.
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
    from torch.func import functional_call, grad, vmap
except ImportError:  # torch 1.13: functorch
    from functorch import grad, make_functional_with_buffers, vmap
    functional_call = None


torch.manual_seed(0)
torch.set_default_dtype(torch.float64)
torch.set_num_threads(THREADS)


class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.fc1 = nn.Linear(72, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = torch.flatten(F.max_pool2d(x, 2), 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


B = 8
data = torch.randn(B, 1, 10, 10)
targets = torch.randint(10, (B,))
model = SimpleCNN()
loss_fn = F.nll_loss

if functional_call is not None:
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def fmodel(params, buffers, x):
        return functional_call(model, (params, buffers), (x,))
else:
    fmodel, params, buffers = make_functional_with_buffers(model)


def compute_loss(params, buffers, sample, target):
    batch = sample.unsqueeze(0)
    targets = target.unsqueeze(0)
    return loss_fn(fmodel(params, buffers, batch), targets)


ft_compute_grad = grad(compute_loss)
ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))

g = ft_compute_sample_grad(params, buffers, data, targets)
assert tuple(g["conv1.weight"].shape if isinstance(g, dict) else g[0].shape) == (B, 4, 1, 3, 3)
report("per_sample_grads", lambda: ft_compute_sample_grad(params, buffers, data, targets))
