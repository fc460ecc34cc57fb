"""Python twin of synth.go: the deterministic inputs shared by the peel
examples and their torch reference generators (float64, no RNG)."""
import json
import math

import torch


def data(seed, *shape):
    n = 1
    for d in shape:
        n *= d
    v = [math.sin(0.37 * k + 0.011 * k * k + seed) for k in range(n)]
    return torch.tensor(v, dtype=torch.float64).reshape(shape)


def labels(seed, n, classes):
    return torch.tensor([(k * k + 3 * k + seed) % classes for k in range(n)], dtype=torch.int64)


def _enc(v):
    if isinstance(v, torch.Tensor):
        v = v.detach().to(torch.float64)
        return {"shape": list(v.shape), "data": v.reshape(-1).tolist()}
    if isinstance(v, dict):
        return {k: _enc(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_enc(x) for x in v]
    return v


def write(path, values):
    """Writes a dict of tensors (or nested dicts/lists of them, or numbers) as
    JSON: each tensor is {"shape": [...], "data": [row-major float64s]}."""
    with open(path, "w") as f:
        json.dump(_enc(values), f, indent=None, separators=(",", ":"))
        f.write("\n")
