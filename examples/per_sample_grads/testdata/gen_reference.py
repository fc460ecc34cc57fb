"""Reference numbers for examples/per_sample_grads, computed with PyTorch by
plain autograd: one torch.autograd.grad call per sample (no vmap, no
torch.func). Inputs come from synth.py, the twin of the Go synth package.

    /usr/bin/python3 examples/per_sample_grads/testdata/gen_reference.py
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "internal", "synth"))
import synth  # noqa: E402

B = 8
data = synth.data(1, B, 1, 4, 4)
targets = synth.labels(0, B, 10)
params = {
    "W1": synth.data(2, 16, 32) * 0.25, "B1": synth.data(3, 32) * 0.1,
    "W2": synth.data(4, 32, 10) * 0.18, "B2": synth.data(5, 10) * 0.1,
}
for p in params.values():
    p.requires_grad_()
names = list(params)


def forward(x):
    h = torch.relu(x.reshape(x.shape[0], -1) @ params["W1"] + params["B1"])
    return torch.log_softmax(h @ params["W2"] + params["B2"], dim=1)


out = {}
avg = torch.autograd.grad(F.nll_loss(forward(data), targets), [params[n] for n in names])
for n, g in zip(names, avg):
    out["avg." + n] = g
rows = []
for i in range(B):
    loss = F.nll_loss(forward(data[i:i + 1]), targets[i:i + 1])
    rows.append(torch.autograd.grad(loss, [params[n] for n in names]))
for k, n in enumerate(names):
    out["per_sample." + n] = torch.stack([r[k] for r in rows])
    # sanity: the mean of per-sample grads is the average grad
    assert torch.allclose(out["per_sample." + n].mean(0), out["avg." + n], rtol=1e-12, atol=1e-14)

synth.write(os.path.join(HERE, "reference.json"), out)
