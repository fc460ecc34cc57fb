"""Times the per-sample gradients of examples/per_sample_grads in PyTorch,
the tutorial's way: vmap(grad(compute_loss), in_dims=(None, None, 0, 0))
over the functional SimpleCNN, at the sizes of main.go and of
BenchmarkTutorial in main_test.go: a batch of 8 images 1x10x10, float64,
channels 1->4->8, fc1 72->16, fc2 16->10, log_softmax and NLL loss.

    /usr/bin/python3 examples/per_sample_grads/testdata/time_torch.py [--threads 1,2] [--mintime 2]

Prints, for each thread count (one process each, since the BLAS reads its
thread count when torch loads), the median time of one call.
"""
import argparse
import os
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
ap.add_argument("--mintime", type=float, default=2.0, help="timed seconds per thread count")
ARGS = ap.parse_args()
COUNTS = [int(n) for n in ARGS.threads.split(",")]
if len(COUNTS) > 1:
    for n in COUNTS:
        subprocess.run([sys.executable, __file__, "--threads", str(n), "--mintime", str(ARGS.mintime)], check=True)
    sys.exit(0)
THREADS = COUNTS[0]
# Debian's torch multiplies matrices in OpenBLAS, which takes its thread
# count from the environment once, when it loads. OpenMP threads that
# spin while they wait stall every parallel region whenever another
# process holds a core (up to 100x slower on a shared 2-core machine), so
# they sleep unless OMP_WAIT_POLICY says otherwise.
os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(THREADS)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.benchmark import Timer  # noqa: E402

try:
    from torch.func import functional_call, grad, vmap
except ImportError:  # torch 1.13: functorch
    from functorch import grad, make_functional_with_buffers, vmap
    functional_call = None


def report(name, fn):
    """Warms fn up, then prints the median time of a call over ARGS.mintime seconds."""
    fn()
    fn()
    m = Timer("fn()", globals={"fn": fn}, num_threads=THREADS).blocked_autorange(min_run_time=ARGS.mintime)
    print(f"torch {name} threads={THREADS}: {m.median * 1e3:.4g} ms/iter "
          f"(median of {len(m.times)} blocks of {m.number_per_run}; torch {torch.__version__})")


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
