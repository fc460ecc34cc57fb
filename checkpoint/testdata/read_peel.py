"""Reads a safetensors file that peel wrote, with the standard library
and numpy only, and checks it against the values TestPythonReadsPeel
wrote beside it (a JSON file of name -> dtype, shape and the values as
float64 lists): the header's layout (length, JSON, data offsets that
tile the data), every dtype peel has, and every value. Prints "ok" and
exits 0, or prints what differs and exits 1.

    python3 checkpoint/testdata/read_peel.py FILE.safetensors FILE.json
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "U8": "u1", "BOOL": "?"}


def bf16(raw):
    u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
    return u.view(np.float32)


def main(path, want_path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    want = json.load(open(want_path))
    bad = []
    spans = sorted(v["data_offsets"] for k, v in header.items() if k != "__metadata__")
    at = 0
    for s, e in spans:
        if s != at:
            bad.append(f"data gap or overlap at byte {s}")
        at = e
    if at != len(body):
        bad.append(f"the tensors cover {at} of {len(body)} bytes")
    if header.get("__metadata__", {}).get("format") != "peel":
        bad.append(f"metadata {header.get('__metadata__')}")
    for name, w in want.items():
        if name not in header:
            bad.append(f"{name}: missing")
            continue
        h = header[name]
        s, e = h["data_offsets"]
        raw = body[s:e]
        a = bf16(raw) if h["dtype"] == "BF16" else np.frombuffer(raw, dtype=DTYPES[h["dtype"]])
        a = a.reshape(h["shape"]).astype(np.float64)
        if h["dtype"] != w["dtype"] or list(h["shape"]) != w["shape"]:
            bad.append(f"{name}: {h['dtype']}{h['shape']}, want {w['dtype']}{w['shape']}")
        elif not np.array_equal(a.reshape(-1), np.array(w["values"], dtype=np.float64)):
            bad.append(f"{name}: values differ")
    if bad:
        print("\n".join(bad))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
