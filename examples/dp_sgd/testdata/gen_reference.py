"""Reference numbers for examples/dp_sgd, computed with PyTorch by plain
autograd: one torch.autograd.grad call per sample (no vmap, no torch.func),
per-sample clipping written out sample by sample, and torch.optim.SGD with
momentum. The noise is off (sigma = 0): peel's counter-based random numbers
are not torch's, so main_test.go checks the noise statistically instead.
Inputs come from synth.py, the twin of the Go synth package.

    /usr/bin/python3 examples/dp_sgd/testdata/gen_reference.py
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "internal", "synth"))
import synth  # noqa: E402

d = synth.data
EPOCHS, N, BATCH, MAX_NORM = 2, 32, 8, 1.0
images, targets = d(1, N, 3, 4, 4), synth.labels(0, N, 10)
names = ["W1", "B1", "W2", "B2"]
params = [d(2, 48, 32) * 0.15, torch.zeros(32, dtype=torch.float64),
          d(3, 32, 10) * 0.18, torch.zeros(10, dtype=torch.float64)]
for p in params:
    p.requires_grad_()
opt = torch.optim.SGD(params, lr=0.1, momentum=0.9)


def forward(x):
    h = torch.relu(x.reshape(x.shape[0], -1) @ params[0] + params[1])
    return h @ params[2] + params[3]


out, losses = {}, []
for epoch in range(EPOCHS):
    for i in range(0, N, BATCH):
        x, t = images[i:i + BATCH], targets[i:i + BATCH]
        with torch.no_grad():
            losses.append(F.cross_entropy(forward(x), t).item())
        total = [torch.zeros_like(p) for p in params]
        norms = []
        for s in range(BATCH):
            g = torch.autograd.grad(F.cross_entropy(forward(x[s:s + 1]), t[s:s + 1]), params)
            norm = torch.sqrt(sum((gi ** 2).sum() for gi in g))
            factor = min(1.0, MAX_NORM / (norm.item() + 1e-6))
            for k in range(len(params)):
                total[k] += factor * g[k]
            norms.append(norm)
            if epoch == 0 and i == 0:
                for k, n in enumerate(names):
                    out.setdefault("sample_grads." + n, []).append(g[k])
        if epoch == 0 and i == 0:
            out["norms"] = torch.stack(norms)
        opt.zero_grad()
        for p, g in zip(params, total):
            p.grad = g / BATCH
        opt.step()

for n in names:
    out["sample_grads." + n] = torch.stack(out["sample_grads." + n])
for n, p in zip(names, params):
    out["params." + n] = p
out["losses"] = torch.tensor(losses, dtype=torch.float64)
synth.write(os.path.join(HERE, "reference.json"), out)
