"""Times the meta-training of examples/maml in PyTorch, the tutorial's way
(functorch's evjang_transforms.py): the MLP is a function of a list of
weights (F.linear), each task's loss takes one grad step inside and
evaluates the adapted weights, vmap batches it over the tasks (the weights
closed over), and the mean's .backward() and torch.optim.Adam (lr 1e-3)
make the meta-step. The sizes are those of main.go and of
BenchmarkTutorial in main_test.go: the 1->40->40->1 ReLU MLP, float64, 4
tasks y = A sin(x + phase) of K = 20 examples in each of the two batches,
the inner step size 0.1, 20 meta-iterations from the initial weights, the
tasks drawn before the timing. (torch 1.13 has no compiler; the steps run
eagerly, where peel's meta-step is compiled.)

    /usr/bin/python3 examples/maml/testdata/time_torch.py [--threads 1,2] [--mintime 2]

Prints, for each thread count (one process each, since the BLAS reads its
thread count when torch loads), the median time of the 20 iterations.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "internal", "torchtime"))
import torchtime  # noqa: E402

THREADS = torchtime.setup(__file__)
report = torchtime.report

import torch  # noqa: E402


import math  # noqa: E402

import torch.nn.functional as F  # noqa: E402

try:
    from torch.func import grad, vmap
except ImportError:  # torch 1.13: functorch
    from functorch import grad, vmap

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)
torch.set_num_threads(THREADS)
ITERS, K, NUM_TASKS, ALPHA = 20, 20, 4, 0.1


def net(x, params):
    x = F.relu(F.linear(x, params[0], params[1]))
    x = F.relu(F.linear(x, params[2], params[3]))
    return F.linear(x, params[4], params[5])


def sample_tasks():
    amp = 0.1 + 0.4 * torch.rand(NUM_TASKS, 1, 1)
    phase = math.pi * torch.rand(NUM_TASKS, 1, 1)
    x1 = 10 * torch.rand(NUM_TASKS, K, 1) - 5
    x2 = 10 * torch.rand(NUM_TASKS, K, 1) - 5
    return x1, amp * torch.sin(x1 + phase), x2, amp * torch.sin(x2 + phase)


tasks = [sample_tasks() for _ in range(ITERS)]
params0 = [torch.rand(40, 1) * 2 - 1, torch.zeros(40),
           torch.randn(40, 40) / math.sqrt(40), torch.zeros(40),
           torch.randn(1, 40) / math.sqrt(40), torch.zeros(1)]


def meta_loss(params, x1, y1, x2, y2):
    def get_loss_for_task(x1, y1, x2, y2):
        def inner_loss(params, x1, y1):
            return F.mse_loss(net(x1, params), y1)

        grads = grad(inner_loss)(tuple(params), x1, y1)
        new_params = [p - ALPHA * g for p, g in zip(params, grads)]
        return F.mse_loss(net(x2, new_params), y2)

    return vmap(get_loss_for_task)(x1, y1, x2, y2).mean()


def train():
    params = [p.clone().requires_grad_() for p in params0]
    opt = torch.optim.Adam(params, lr=1e-3)
    for x1, y1, x2, y2 in tasks:
        opt.zero_grad()
        loss2 = meta_loss(params, x1, y1, x2, y2)
        loss2.backward()
        opt.step()
    return params


# The meta-gradient through vmap and grad is that of a loop over the tasks
# with plain autograd (create_graph=True).
params = [p.clone().requires_grad_() for p in params0]
x1, y1, x2, y2 = tasks[0]
got = torch.autograd.grad(meta_loss(params, x1, y1, x2, y2), params)
task_losses = []
for t in range(NUM_TASKS):
    g = torch.autograd.grad(F.mse_loss(net(x1[t], params), y1[t]), params, create_graph=True)
    task_losses.append(F.mse_loss(net(x2[t], [p - ALPHA * gi for p, gi in zip(params, g)]), y2[t]))
want = torch.autograd.grad(torch.stack(task_losses).mean(), params)
assert all(torch.allclose(a, b, rtol=1e-10, atol=1e-12) for a, b in zip(got, want))
report("maml", train)
