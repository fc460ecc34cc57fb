"""Times one training epoch of examples/dp_sgd in PyTorch, the tutorial's
way (functorch's cifar10_transforms.py): per batch, make_functional of the
model, the per-sample gradients, losses and outputs by vmap of
grad_and_value(..., has_aux=True) over the images (the weights shared),
stored on the parameters as grad_sample; each sample's gradient clipped to
norm 1, the clipped gradients summed with einsum and Gaussian noise of
standard deviation 1 added (not divided by the batch size, as in the
tutorial and the port); then torch.optim.Adam's step (lr 1e-3). The sizes
are those of main.go and of BenchmarkTutorial in main_test.go, in float64:
512 images 3x16x16 in 8 shuffled batches of 64 and the port's ResNet (the
7x7 stride-2 stem to 8 channels, GroupNorm with 4 groups, 3x3 stride-2 max
pooling, a BasicBlock of 8 channels, a strided BasicBlock of 16 with a 1x1
convolution shortcut, average pooling, Linear 16->10; convolutions without
bias). The losses, accuracy and printing are left out, as in the
benchmark. make_functional deep-copies the model every batch, as in the
tutorial (a few percent of the time). (torch 1.13 has no compiler; the
steps run eagerly, where peel's per-sample gradients are compiled.)

    /usr/bin/python3 examples/dp_sgd/testdata/time_torch.py [--threads 1,2] [--mintime 2]

Prints, for each thread count (one process each, since the BLAS reads its
thread count when torch loads), the median time of the epoch.
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
    from torch.func import functional_call, grad_and_value, vmap

    def make_functional(model):
        """functorch's make_functional, from torch.func's functional_call:
        a copy of the model as a function of its weights, and the weights."""
        model = copy.deepcopy(model)
        names = [name for name, _ in model.named_parameters()]

        def fmodel(weights, x):
            return functional_call(model, dict(zip(names, weights)), (x,))
        return fmodel, tuple(p.detach() for p in model.parameters())
except ImportError:  # torch 1.13: functorch
    from functorch import grad_and_value, make_functional, vmap

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)
torch.set_num_threads(THREADS)
N_TRAIN, BATCH, SIZE, GROUPS, SIGMA, MAX_NORM = 512, 64, 16, 4, 1.0, 1.0


class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.GroupNorm(GROUPS, planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.GroupNorm(GROUPS, planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.GroupNorm(GROUPS, planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return F.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, planes=(8, 16), num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, planes[0], 7, 2, 3, bias=False)
        self.bn1 = nn.GroupNorm(GROUPS, planes[0])
        self.layer1 = BasicBlock(planes[0], planes[0], 1)
        self.layer2 = BasicBlock(planes[0], planes[1], 2)
        self.fc = nn.Linear(planes[1], num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        x = self.layer2(self.layer1(x))
        return self.fc(x.mean(dim=(2, 3)))


criterion = nn.CrossEntropyLoss()
images = torch.randn(N_TRAIN, 3, SIZE, SIZE)
targets = torch.randint(10, (N_TRAIN,))
order = torch.randperm(N_TRAIN)
batches = [(images[order[i:i + BATCH]], targets[order[i:i + BATCH]]) for i in range(0, N_TRAIN, BATCH)]
model0 = ResNet()


def per_sample_grads(model, images, target):
    """The per-sample gradients, losses and outputs of a batch."""
    func_model, weights = make_functional(model)

    def compute_loss_and_output(weights, image, target):
        output = func_model(weights, image.unsqueeze(0))
        return criterion(output, target.unsqueeze(0)), output.squeeze(0)

    return vmap(grad_and_value(compute_loss_and_output, has_aux=True), (None, 0, 0))(weights, images, target)


def clip_and_accumulate_and_add_noise(model, max_per_sample_grad_norm, noise_multiplier):
    sample_grads = [p.grad_sample for p in model.parameters()]
    batch_size = sample_grads[0].shape[0]
    norms = torch.stack([g.reshape(batch_size, -1).norm(2, dim=-1) for g in sample_grads]).norm(2, dim=0)
    clip_factor = (max_per_sample_grad_norm / (norms + 1e-6)).clamp(max=1.0)
    stddev = max_per_sample_grad_norm * noise_multiplier
    for p, g in zip(model.parameters(), sample_grads):
        clipped = torch.einsum("i,i...", clip_factor, g)
        p.grad = torch.normal(0, stddev, clipped.shape) + clipped


def train():
    model = copy.deepcopy(model0)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for images, target in batches:
        sample_grads, (sample_loss, output) = per_sample_grads(model, images, target)
        for g, p in zip(sample_grads, model.parameters()):
            p.grad_sample = g.detach()
        clip_and_accumulate_and_add_noise(model, MAX_NORM, SIGMA)
        optimizer.step()
        optimizer.zero_grad()
    return model


# The per-sample gradients, losses and outputs are those of autograd one
# sample at a time.
images, target = batches[0]
sample_grads, (sample_loss, output) = per_sample_grads(model0, images, target)
for s in (0, 1, BATCH - 1):
    out = model0(images[s:s + 1])
    loss = criterion(out, target[s:s + 1])
    want = torch.autograd.grad(loss, list(model0.parameters()))
    assert torch.allclose(sample_loss[s], loss) and torch.allclose(output[s], out[0])
    assert all(torch.allclose(g[s], w, rtol=1e-10, atol=1e-13) for g, w in zip(sample_grads, want))
report("dp_sgd", train)
