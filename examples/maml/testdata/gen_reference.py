"""Reference numbers for examples/maml, computed with PyTorch by plain
autograd: each task's adaptation step is torch.autograd.grad with
create_graph=True in a Python loop over the tasks (no vmap, no torch.func),
the meta-gradient is .backward() through it, and the optimizer is
torch.optim.Adam. Weights are [in, out] as in the Go port. Tasks come from
synth.py, the twin of the Go synth package.

    /usr/bin/python3 examples/maml/testdata/gen_reference.py
"""
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "internal", "synth"))
import synth  # noqa: E402

d = synth.data
ITERS, K, NUM_TASKS, ALPHA = 300, 20, 4, 0.1


def net(params, x):
    x = torch.relu(x @ params[0] + params[1])
    x = torch.relu(x @ params[2] + params[3])
    return x @ params[4] + params[5]


def sample_tasks(seed):
    amp = (d(seed, NUM_TASKS, 1, 1) + 1) * 0.2 + 0.1
    phase = (d(seed + 1, NUM_TASKS, 1, 1) + 1) * (math.pi / 2)
    x1, x2 = d(seed + 2, NUM_TASKS, K, 1) * 5, d(seed + 3, NUM_TASKS, K, 1) * 5
    return x1, amp * torch.sin(x1 + phase), x2, amp * torch.sin(x2 + phase)


params = [d(-1, 1, 40), torch.zeros(40, dtype=torch.float64),
          d(-2, 40, 40) / math.sqrt(40), torch.zeros(40, dtype=torch.float64),
          d(-3, 40, 1) / math.sqrt(40), torch.zeros(1, dtype=torch.float64)]
for p in params:
    p.requires_grad_()
opt = torch.optim.Adam(params, lr=1e-3)
losses = []
for it in range(ITERS):
    x1, y1, x2, y2 = sample_tasks(10.0 * it)
    opt.zero_grad()
    task_losses = []
    for t in range(NUM_TASKS):
        inner = ((net(params, x1[t]) - y1[t]) ** 2).mean()
        grads = torch.autograd.grad(inner, params, create_graph=True)
        adapted = [p - ALPHA * g for p, g in zip(params, grads)]
        task_losses.append(((net(adapted, x2[t]) - y2[t]) ** 2).mean())
    loss = torch.stack(task_losses).mean()
    loss.backward()
    opt.step()
    losses.append(loss.item())

t_a, t_b = 0.35, 1.2
t_x = d(12, 4, 1) * 5
t_y = torch.sin(t_x + t_b) * t_a
t_params = [p.detach().requires_grad_() for p in params]
for _ in range(5):
    t_loss = (net(t_params, t_x) - t_y).abs().mean()
    grads = torch.autograd.grad(t_loss, t_params)
    t_params = [(p - ALPHA * g).detach().requires_grad_() for p, g in zip(t_params, grads)]
test_x = torch.arange(-2 * math.pi, 2 * math.pi, 0.01, dtype=torch.float64).unsqueeze(1)

out = {"losses": torch.tensor(losses, dtype=torch.float64), "test_x": test_x,
       "test_f": net(t_params, test_x)}
for i, p in enumerate(params):
    out["params[%d]" % i] = p
synth.write(os.path.join(HERE, "reference.json"), out)
