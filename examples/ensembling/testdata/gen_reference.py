"""Reference numbers for examples/ensembling, computed with PyTorch by running
each model of the ensemble in a plain Python loop (no vmap). Inputs and
weights come from synth.py, the twin of the Go synth package.

    /usr/bin/python3 examples/ensembling/testdata/gen_reference.py
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "internal", "synth"))
import synth  # noqa: E402

NUM_MODELS = 4


def make_model(seed):
    d = synth.data
    return [
        (d(seed, 36, 16) * 0.17, d(seed + 1, 16) * 0.1),
        (d(seed + 2, 16, 16) * 0.25, d(seed + 3, 16) * 0.1),
        (d(seed + 4, 16, 10) * 0.25, d(seed + 5, 10) * 0.1),
    ]


def run_model(layers, x):
    x = x.reshape(x.shape[0], -1)
    for i, (w, b) in enumerate(layers):
        x = x @ w + b
        if i < len(layers) - 1:
            x = torch.relu(x)
    return x


data = synth.data(1, 10, 8, 1, 6, 6)
models = [make_model(10.0 * i) for i in range(NUM_MODELS)]
diff = torch.stack([run_model(m, data[i]) for i, m in enumerate(models)])
same = torch.stack([run_model(m, data[0]) for m in models])
synth.write(os.path.join(HERE, "reference.json"), {"diff_minibatch": diff, "same_minibatch": same})
