"""Reference numbers for examples/per_sample_grads, computed with PyTorch by
plain autograd: the batch-average gradient by one torch.autograd.grad call on
the batch's loss, and the per-sample gradients by one call per sample (no
vmap, no torch.func). The CNN is written with torch.nn.functional on explicit
tensors; inputs and weights come from synth.py, the twin of the Go synth
package (main_test.go builds the same ones).

    /usr/bin/python3 examples/per_sample_grads/testdata/gen_reference.py
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "internal", "synth"))
import synth  # noqa: E402

B = 8
data = synth.data(1, B, 1, 10, 10)
targets = synth.labels(0, B, 10)


def layer(seed, fan_in, *shape):
    """A weight of the given shape and a bias of shape[0] (conv) or shape[-1]
    (linear, peel's [in, out] layout), both scaled by 1/sqrt(fan_in)."""
    s = 1 / math.sqrt(fan_in)
    out = shape[0] if len(shape) == 4 else shape[-1]
    return synth.data(seed, *shape) * s, synth.data(seed + 1, out) * s


# Leaves in the order of the Go struct, named by their tree.Paths.
params = {}
for name, (w, b) in [
    ("Conv1", layer(2, 9, 4, 1, 3, 3)),
    ("Conv2", layer(4, 36, 8, 4, 3, 3)),
    ("FC1", layer(6, 72, 72, 16)),
    ("FC2", layer(8, 16, 16, 10)),
]:
    params["." + name + ".W"] = w.requires_grad_()
    params["." + name + ".B"] = b.requires_grad_()
names = list(params)
leaves = [params[n] for n in names]


def forward(x):
    p = params
    x = torch.relu(F.conv2d(x, p[".Conv1.W"], p[".Conv1.B"]))
    x = torch.relu(F.conv2d(x, p[".Conv2.W"], p[".Conv2.B"]))
    x = F.max_pool2d(x, 2).reshape(x.shape[0], -1)
    x = torch.relu(x @ p[".FC1.W"] + p[".FC1.B"])
    return torch.log_softmax(x @ p[".FC2.W"] + p[".FC2.B"], dim=1)


out = {}
for n, g in zip(names, torch.autograd.grad(F.nll_loss(forward(data), targets), leaves)):
    out["grads" + n] = g
rows = []
for i in range(B):
    loss = F.nll_loss(forward(data[i:i + 1]), targets[i:i + 1])
    rows.append(torch.autograd.grad(loss, leaves))
for k, n in enumerate(names):
    out["per_sample" + n] = torch.stack([r[k] for r in rows])
    # sanity: the mean of the per-sample gradients is the batch-average one
    assert torch.allclose(out["per_sample" + n].mean(0), out["grads" + n], rtol=1e-12, atol=1e-14)

synth.write(os.path.join(HERE, "reference.json"), out)
