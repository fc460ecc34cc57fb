"""Times the ensemble predictions of examples/ensembling in PyTorch, the
tutorial's way: the models' states stacked once, then vmap of the
functional model, each model on its own minibatch and all on one shared
minibatch (in_dims=(0, 0, None)), at the sizes of main.go and of
BenchmarkTutorial in main_test.go: 4 SimpleMLPs 64->16->16->10, minibatches
of 8 images 1x8x8, float64.

    /usr/bin/python3 examples/ensembling/testdata/time_torch.py [--threads 1,2] [--mintime 2]

Prints, for each thread count (one process each, since the BLAS reads its
thread count when torch loads), the median time of the two predictions.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "internal", "torchtime"))
import torchtime  # noqa: E402

THREADS = torchtime.setup(__file__)
report = torchtime.report

import torch  # noqa: E402


import copy  # noqa: E402

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

try:
    from torch.func import functional_call, stack_module_state, vmap
except ImportError:  # torch 1.13: functorch
    from functorch import combine_state_for_ensemble, vmap
    stack_module_state = None

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)
torch.set_num_threads(THREADS)


class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 16)
        self.fc2 = nn.Linear(16, 16)
        self.fc3 = nn.Linear(16, 10)

    def forward(self, x):
        x = x.flatten(1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


num_models = 4
data = torch.randn(10, 8, 1, 8, 8)
models = [SimpleMLP() for _ in range(num_models)]
minibatches = data[:num_models]
minibatch = data[0]

if stack_module_state is not None:
    params, buffers = stack_module_state(models)
    base_model = copy.deepcopy(models[0]).to("meta")

    def fmodel(params, buffers, x):
        return functional_call(base_model, (params, buffers), (x,))
else:
    fmodel, params, buffers = combine_state_for_ensemble(models)


def predictions():
    predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)
    predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    return predictions1_vmap, predictions2_vmap


p1, p2 = predictions()
assert p1.shape == p2.shape == (num_models, 8, 10)
report("ensembling", predictions)
