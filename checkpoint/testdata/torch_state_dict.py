"""Writes testdata for checkpoint's interchange test from torch's own
tensors: a small MLP's state_dict (Linear 4->8, ReLU, Linear 8->3,
float32, seeded) as torch_mlp.safetensors, written with the standard
library and numpy by the format's published layout (an 8-byte
little-endian header length, a JSON header of dtype, shape and
data_offsets per tensor, the raw little-endian bytes), and the model's
input and output as torch_mlp.json. TestTorchStateDict loads the file
into nn.LinearParams and reproduces the output.

    /usr/bin/python3 checkpoint/testdata/torch_state_dict.py [DIR]

writes them next to this script, or into DIR (CI writes them afresh
there, compares them with the recorded ones and runs the test on them:
PEEL_TORCH_DIR=DIR go test ./checkpoint -run TestTorchStateDict).
"""
import json
import os
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def write_safetensors(path, tensors, metadata):
    header, blobs, off = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        a = np.ascontiguousarray(t.detach().cpu().numpy())
        b = a.astype(a.dtype.newbyteorder("<")).tobytes()
        dt = {np.dtype("float32"): "F32", np.dtype("float64"): "F64", np.dtype("int64"): "I64"}[a.dtype]
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-(8 + len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    x = torch.linspace(-1, 1, 20).reshape(5, 4)
    with torch.no_grad():
        y = model(x)
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    write_safetensors(os.path.join(out, "torch_mlp.safetensors"), model.state_dict(), {"source": "torch " + torch.__version__})
    with open(os.path.join(out, "torch_mlp.json"), "w") as f:
        json.dump({"x": x.tolist(), "y": y.tolist(), "torch": torch.__version__}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
