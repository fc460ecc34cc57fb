"""Reference numbers for examples/ensembling, computed with PyTorch by running
each model of the ensemble in a plain Python loop (no vmap, no torch.func).
The MLP is written on explicit tensors (peel's [in, out] weight layout);
inputs and weights come from synth.py, the twin of the Go synth package
(main_test.go builds the same ones).

    /usr/bin/python3 examples/ensembling/testdata/gen_reference.py
"""
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "internal", "synth"))
import synth  # noqa: E402

NUM_MODELS = 4


def make_model(seed):
    """Three (weight [in, out], bias [out]) pairs scaled by 1/sqrt(in)."""
    layers = []
    for k, (n_in, n_out) in enumerate([(64, 16), (16, 16), (16, 10)]):
        s = 1 / math.sqrt(n_in)
        layers.append((synth.data(seed + 2 * k, n_in, n_out) * s, synth.data(seed + 2 * k + 1, n_out) * s))
    return layers


def run_model(layers, x):
    x = x.reshape(x.shape[0], -1)
    for i, (w, b) in enumerate(layers):
        x = x @ w + b
        if i < len(layers) - 1:
            x = torch.relu(x)
    return x


data = synth.data(1, 10, 8, 1, 8, 8)
models = [make_model(10.0 * i) for i in range(NUM_MODELS)]
diff = torch.stack([run_model(m, data[i]) for i, m in enumerate(models)])
same = torch.stack([run_model(m, data[0]) for m in models])
synth.write(os.path.join(HERE, "reference.json"), {"diff_minibatch": diff, "same_minibatch": same})
