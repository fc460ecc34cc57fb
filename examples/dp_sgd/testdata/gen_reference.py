"""Reference numbers for examples/dp_sgd, computed with PyTorch in float64 by
plain autograd: the small ResNet (resnet18's stem, a BasicBlock of 8
channels, a strided BasicBlock of 16 with a 1x1 convolution shortcut,
nn.GroupNorm(4, C) for every norm) as torch modules; one
torch.autograd.grad call per sample (no vmap, no torch.func); the clipping
written out sample by sample; and torch.optim.Adam, or torch.optim.SGD with
momentum and weight decay. Stored: the first batch's per-sample losses,
outputs and gradient norms (over all the weights and per leaf), the first
sample's gradient, and after two steps of each optimizer the losses, the
outputs on the test set and its accuracy, and Adam's weights. The noise is off (sigma = 0): peel's
counter-based random numbers are not torch's, so main_test.go checks the
noise statistically instead. Weights and images come from synth.py, the
twin of the Go synth package, in the order the Go code draws them.

    /usr/bin/python3 examples/dp_sgd/testdata/gen_reference.py
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "internal", "synth"))
import synth  # noqa: E402

d = synth.data
SIZE, GROUPS, N_TRAIN, N_TEST, BATCH, MAX_NORM = 16, 4, 16, 16, 8, 1.0


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.GroupNorm(GROUPS, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.GroupNorm(GROUPS, cout)
        self.down = None
        if cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.GroupNorm(GROUPS, cout))

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (x if self.down is None else self.down(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 7, 2, 3, bias=False)
        self.bn1 = nn.GroupNorm(GROUPS, 8)
        self.block1 = Block(8, 8, 1)
        self.block2 = Block(8, 16, 2)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        x = self.block2(self.block1(x))
        return self.fc(x.mean(dim=(2, 3)))


def make_net():
    """The network with the Go port's weights, and the Go tree path of every
    parameter (the Linear's weight is stored transposed there)."""
    net = Net().double()
    convs = [net.conv1, net.block1.conv1, net.block1.conv2, net.block2.conv1, net.block2.conv2, net.block2.down[0]]
    with torch.no_grad():
        for seed, c in enumerate(convs, 1):
            o, i, k, _ = c.weight.shape
            c.weight.copy_(d(seed, o, i, k, k) * (2 / math.sqrt(o * k * k)))
        net.fc.weight.copy_(d(7, 16, 10).t() * 0.25)
        net.fc.bias.copy_(d(8, 10) * 0.25)
    paths = {
        "conv1.weight": ".Conv1", "bn1.weight": ".Bn1.Scale", "bn1.bias": ".Bn1.Bias",
        "fc.weight": ".Fc.W", "fc.bias": ".Fc.B",
    }
    for name, layer in (("block1", "[0][0]"), ("block2", "[1][0]")):
        for p, q in (("conv1.weight", "Conv1"), ("conv2.weight", "Conv2"), ("bn1.weight", "Bn1.Scale"),
                     ("bn1.bias", "Bn1.Bias"), ("bn2.weight", "Bn2.Scale"), ("bn2.bias", "Bn2.Bias"),
                     ("down.0.weight", "Downsample.Conv"), ("down.1.weight", "Downsample.Bn.Scale"),
                     ("down.1.bias", "Downsample.Bn.Bias")):
            paths["%s.%s" % (name, p)] = ".Layers%s.%s" % (layer, q)
    names = [n for n, _ in net.named_parameters()]
    return net, [paths[n] for n in names]


def go_layout(path, t):
    return t.transpose(-1, -2) if path.endswith(".Fc.W") else t


def cifar10(seed, n):
    targets = torch.argmax(d(seed, n, 10), 1)
    patterns = d(0, 10, 3, SIZE, SIZE)
    images = (patterns[targets] + d(seed, n, 3, SIZE, SIZE) + 2) / 4
    mean = torch.tensor([0.4914, 0.4822, 0.4465], dtype=torch.float64).reshape(3, 1, 1)
    std = torch.tensor([0.2023, 0.1994, 0.2010], dtype=torch.float64).reshape(3, 1, 1)
    return (images - mean) / std, targets


train_x, train_t = cifar10(1, N_TRAIN)
test_x, test_t = cifar10(2, N_TEST)
out = {}

for opt_name in ("Adam", "SGD"):
    net, paths = make_net()
    params = list(net.parameters())
    if opt_name == "Adam":
        opt = torch.optim.Adam(params, lr=1e-3)
    else:
        opt = torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=5e-4)
    losses = []
    for i in range(0, N_TRAIN - BATCH + 1, BATCH):
        x, t = train_x[i:i + BATCH], train_t[i:i + BATCH]
        total = [torch.zeros_like(p) for p in params]
        norms, sample_losses, outputs, sample_grads = [], [], [], []
        for s in range(BATCH):
            output = net(x[s:s + 1])
            loss = F.cross_entropy(output, t[s:s + 1])
            g = torch.autograd.grad(loss, params)
            norm = torch.sqrt(sum((gi ** 2).sum() for gi in g))
            factor = min(1.0, MAX_NORM / (norm.item() + 1e-6))
            for k in range(len(params)):
                total[k] += factor * g[k]
            norms.append(norm)
            sample_losses.append(loss.detach())
            outputs.append(output.detach()[0])
            sample_grads.append(g)
        losses.append(torch.stack(sample_losses).mean().item())
        if opt_name == "Adam" and i == 0:
            out["norms"] = torch.stack(norms)
            out["outputs"] = torch.stack(outputs)
            for k, path in enumerate(paths):
                out["sample_grads[0]" + path] = go_layout(path, sample_grads[0][k])
                out["leaf_norms" + path] = torch.stack([g[k].norm() for g in sample_grads])
        opt.zero_grad()
        for p, g in zip(params, total):
            p.grad = g
        opt.step()
    out[opt_name + ".losses"] = torch.tensor(losses, dtype=torch.float64)
    if opt_name == "Adam":
        for path, p in zip(paths, params):
            out["Adam.params" + path] = go_layout(path, p.detach())
    with torch.no_grad():
        test_out = net(test_x)
        out[opt_name + ".test_output"] = test_out
        acc = [(test_out[i:i + BATCH].argmax(1) == test_t[i:i + BATCH]).double().mean()
               for i in range(0, N_TEST, BATCH)]
        out[opt_name + ".test_acc"] = torch.stack(acc).mean()

synth.write(os.path.join(HERE, "reference.json"), out)
