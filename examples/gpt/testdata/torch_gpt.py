"""The reference run of examples/gpt/model in PyTorch (bench/peers/gpt_torch.py, the
model's twin): a small GPT trained for 50 steps on a synthetic corpus,
in float64 and in float32 from the same initial parameters, on the same
batches. Writes into OUTDIR

  torch_gpt_init.safetensors  the initial parameters, F64, under peel's
                              names and in peel's layout (Linear weights
                              [in, out]); metadata {"torch": version}
  torch_gpt.json              the corpus, configuration, hyperparameters,
                              window starts of every step, the losses of
                              both runs, the learning rates and the steps
                              whose gradients were clipped (f64 run)

so that peel can load the parameters, train on the same windows and
compare losses step by step. Before writing anything it checks its own
model against plain numbers (the initial loss is near ln(vocab), the
gradient matches central differences, the KV cache matches the full
forward pass, the schedule, clipping and AdamW step match their
formulas). The run is deterministic (one thread; every draw from a
seeded torch.Generator):

    /usr/bin/python3 examples/gpt/testdata/torch_gpt.py [OUTDIR]

(OUTDIR defaults to this script's directory, where the recorded copies
live).
"""
import os
import sys

# One thread, set before torch loads its BLAS: the run must not depend on
# how a parallel reduction splits.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["OMP_NUM_THREADS"] = "1"

import bisect  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import struct  # noqa: E402

import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# The model is bench/peers/gpt_torch.py, which peelbench's torch peer
# imports too (the repository root is three levels above this file).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "bench", "peers"))
import gpt_torch  # noqa: E402

CONFIG = {"vocab": 32, "context": 32, "layers": 2, "heads": 4, "width": 64}
HYPER = {"lr": 1e-3, "min_lr": 1e-4, "warmup": 5, "decay_steps": 50, "weight_decay": 0.1,
         "beta1": 0.9, "beta2": 0.99, "clip": 1.45}
# The clip: the gradient norms of this run lie between 1.15 and 2.2, so
# nanoGPT's 1.0 would clip every step; at 1.45 17 of the 50 steps clip
# and 33 do not (no norm within 0.01 of it), which tests both branches.
BATCH, SEQ, STEPS, TOKENS = 8, 32, 50, 6000
SEED_CORPUS, SEED_STARTS, SEED_INIT, SEED_CHECK = 1, 2, 3, 4


def corpus():
    """TOKENS tokens of a first-order Markov chain over the vocabulary whose
    transition rows are softmax(2.5·N(0, 1)): a few likely successors per
    token, so there is something to learn. Sampled by inverting each row's
    cumulative distribution at uniform draws (float64 throughout)."""
    g = torch.Generator().manual_seed(SEED_CORPUS)
    v = CONFIG["vocab"]
    trans = torch.softmax(2.5 * torch.randn(v, v, generator=g, dtype=torch.float64), -1)
    cdf = torch.cumsum(trans, -1).tolist()
    u = torch.rand(TOKENS, generator=g, dtype=torch.float64).tolist()
    state = int(torch.randint(0, v, (1,), generator=g).item())
    toks = []
    for x in u:
        toks.append(state)
        state = min(bisect.bisect_right(cdf[state], x), v - 1)
    return toks


def starts():
    """STEPS×BATCH window starts uniform in [0, TOKENS - SEQ)."""
    g = torch.Generator().manual_seed(SEED_STARTS)
    return torch.randint(0, TOKENS - SEQ, (STEPS, BATCH), generator=g, dtype=torch.int64).tolist()


def windows(toks, ss):
    x = torch.tensor([toks[s:s + SEQ] for s in ss], dtype=torch.int64)
    y = torch.tensor([toks[s + 1:s + SEQ + 1] for s in ss], dtype=torch.int64)
    return x, y


def new_model(dtype):
    return gpt_torch.GPT(dropout=0.0, dtype=dtype, **CONFIG)


def safetensors_bytes(tensors, metadata):
    """The safetensors file of tensors {name: float64 tensor}: an 8-byte
    little-endian header length, the JSON header (padded with spaces to a
    multiple of 8), the raw little-endian bytes in the given order."""
    header, blobs, off = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        if t.dtype != torch.float64:
            raise TypeError(f"{name} is {t.dtype}, not float64")
        a = t.detach().contiguous().numpy()
        b = a.astype("<f8").tobytes()
        header[name] = {"dtype": "F64", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-(8 + len(h)) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def read_safetensors(data):
    """The tensors and metadata of safetensors bytes (F64 only)."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    body = data[8 + n:]
    out = {}
    for name, e in header.items():
        if e["dtype"] != "F64":
            raise TypeError(f"{name} is {e['dtype']}")
        b, end = e["data_offsets"]
        t = torch.frombuffer(bytearray(body[b:end]), dtype=torch.float64)
        out[name] = t.reshape(e["shape"]) if e["shape"] else t.reshape(())
    return out, meta


def fail(msg):
    raise SystemExit(f"torch_gpt.py: check failed: {msg}")


def check_model(init_state, toks, all_starts):
    """The model against plain numbers, in float64."""
    h = HYPER
    # The schedule: 0 at count 0, the peak at the end of the warmup, the
    # floor at decay_steps and after, linear in between at warmup.
    lrs = [gpt_torch.schedule(h, c) for c in range(STEPS + 3)]
    if lrs[0] != 0 or lrs[h["warmup"]] != h["lr"] or abs(lrs[h["decay_steps"]] - h["min_lr"]) > 1e-18:
        fail(f"schedule {lrs[:h['warmup'] + 1]} … {lrs[h['decay_steps']]}")
    for c in range(h["warmup"]):
        if abs(lrs[c] - h["lr"] * c / h["warmup"]) > 1e-18:
            fail(f"warmup lr at {c} is {lrs[c]}")
    mid = (h["warmup"] + h["decay_steps"]) // 2
    want = h["min_lr"] + (h["lr"] - h["min_lr"]) * 0.5 * (1 + math.cos(math.pi * (mid - h["warmup"]) /
                                                                      (h["decay_steps"] - h["warmup"])))
    if abs(lrs[mid] - want) > 1e-15 or any(lrs[i + 1] > lrs[i] for i in range(h["warmup"], STEPS + 2)):
        fail(f"cosine lr at {mid} is {lrs[mid]}, want {want}")

    m = gpt_torch.load(new_model(torch.float64), init_state)
    # The init: LayerNorms one and zero, biases zero, weights of the right
    # spread.
    proj = 0.02 / math.sqrt(2 * CONFIG["layers"])
    for name, p in m.named():
        p = p.detach()
        if name.endswith(".Scale"):
            ok = bool((p == 1).all())
        elif name.endswith(".B") or name.endswith(".Bias"):
            ok = bool((p == 0).all())
        else:
            std = proj if name.endswith(".Proj.W") else 0.02
            ok = abs(p.std().item() / std - 1) < 0.1 and abs(p.mean().item()) < 0.1 * std
        if not ok:
            fail(f"initial {name}")

    x, y = windows(toks, all_starts[0])
    with torch.no_grad():
        loss = m.loss(x, y).item()
    if not (math.isfinite(loss) and abs(loss - math.log(CONFIG["vocab"])) < 0.05):
        fail(f"initial loss {loss}, want about ln {CONFIG['vocab']} = {math.log(CONFIG['vocab'])}")

    # The loss against a plain cross-entropy of the logits.
    with torch.no_grad():
        logits = m(x).reshape(-1, CONFIG["vocab"])
        rows = logits.tolist()
        plain = 0.0
        for r, t in zip(rows, y.reshape(-1).tolist()):
            mx = max(r)
            plain += mx + math.log(sum(math.exp(v - mx) for v in r)) - r[t]
        plain /= len(rows)
    if abs(plain - loss) > 1e-12:
        fail(f"loss {loss}, plain cross-entropy {plain}")

    # Causality: changing the last input token leaves the logits of the
    # positions before it as they are.
    x2 = x.clone()
    x2[:, -1] = (x2[:, -1] + 1) % CONFIG["vocab"]
    with torch.no_grad():
        a, b = m(x), m(x2)
    if not torch.equal(a[:, :-1], b[:, :-1]) or torch.equal(a[:, -1], b[:, -1]):
        fail("the attention is not causal")

    # The gradient along a random direction against central differences,
    # for every parameter.
    g = torch.Generator().manual_seed(SEED_CHECK)
    m.zero_grad(set_to_none=True)
    m.loss(x, y).backward()
    eps = 1e-5
    for name, p in m.named():
        d = torch.randn(p.shape, generator=g, dtype=torch.float64)
        dd = torch.sum(p.grad * d).item()
        with torch.no_grad():
            p.add_(d, alpha=eps)
            lp = m.loss(x, y).item()
            p.add_(d, alpha=-2 * eps)
            lm = m.loss(x, y).item()
            p.add_(d, alpha=eps)
        fd = (lp - lm) / (2 * eps)
        if not abs(fd - dd) <= 1e-6 * max(1.0, abs(dd)):
            fail(f"d loss/d {name} along a direction: autograd {dd}, central difference {fd}")

    # The KV cache: a prefill of 5 tokens, then one at a time, gives the
    # logits of the full forward pass at each position.
    with torch.no_grad():
        seq = x[:2]
        full = m(seq)
        cache = gpt_torch.empty_cache(m, 2)
        got = [m.decode(seq[:, :5], 0, cache)]
        for i in range(5, SEQ):
            got.append(m.decode(seq[:, i:i + 1], i, cache))
        err = max((full[:, 4] - got[0]).abs().max().item(),
                  max((full[:, i] - got[i - 4]).abs().max().item() for i in range(5, SEQ)))
    if err > 1e-12:
        fail(f"the KV-cache logits differ from the forward pass by {err}")

    # Clipping: a norm at or above clip is scaled to clip exactly, one
    # below it is left alone.
    grads = [p.grad.clone() for _, p in m.named()]
    norm = math.sqrt(sum(gr.pow(2).sum().item() for gr in grads))
    for c in (norm / 2, norm * 2):
        for (_, p), gr in zip(m.named(), grads):
            p.grad = gr.clone()
        got, clipped = gpt_torch.clip_by_global_norm([p for _, p in m.named()], c)
        after = math.sqrt(sum(p.grad.pow(2).sum().item() for _, p in m.named()))
        if abs(got - norm) > 1e-12 * norm or clipped != (c < norm) or abs(after - min(c, norm)) > 1e-12 * norm:
            fail(f"clipping {norm} to {c}: norm {got}, clipped {clipped}, after {after}")

    # One AdamW step at lr 1e-3 (no clipping) against the formula: from
    # zero moments the update is -lr·(g/(|g| + eps) + wd·p) for a decayed
    # parameter p, without the wd term for the others.
    lr = 1e-3
    before = {n: p.detach().clone() for n, p in m.named()}
    opt = gpt_torch.optimizer(m, h["weight_decay"], h["beta1"], h["beta2"])
    gpt_torch.train_step(m, opt, x, y, lr, 0)
    for name, p in m.named():
        gr, p0 = p.grad, before[name]
        wd = h["weight_decay"] if gpt_torch.decayed(name) else 0.0
        want = p0 - lr * (gr / (gr.abs() + 1e-8) + wd * p0)
        err = (p.detach() - want).abs().max().item()
        if err > 1e-15:
            fail(f"AdamW step of {name} is off by {err}")
    decayed = sorted(n for n, _ in m.named() if gpt_torch.decayed(n))
    want = sorted(f"Blocks[{i}].{s}" for i in range(CONFIG["layers"])
                  for s in ("Attn.QKV.W", "Attn.Proj.W", "MLP.FC.W", "MLP.Proj.W"))
    if decayed != want:
        fail(f"decayed parameters {decayed}")


def train(init_state, dtype, toks, all_starts):
    """STEPS steps from init_state in dtype: the losses, the learning
    rates, the steps whose gradients were clipped and the global norms."""
    m = gpt_torch.load(new_model(dtype), init_state)
    m.train()
    opt = gpt_torch.optimizer(m, HYPER["weight_decay"], HYPER["beta1"], HYPER["beta2"])
    losses, lrs, clipped, norms = [], [], [], []
    for step, ss in enumerate(all_starts):
        x, y = windows(toks, ss)
        lr = gpt_torch.schedule(HYPER, step)
        losses.append(gpt_torch.train_step(m, opt, x, y, lr, HYPER["clip"]))
        lrs.append(lr)
        norms.append(m.last_norm)
        if m.last_clipped:
            clipped.append(step)
    return losses, lrs, clipped, norms


def write_json(path, obj):
    """obj with one top-level key a line (each value compact)."""
    lines = [f" {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in obj.items()]
    with open(path, "w") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    torch.set_num_threads(1)
    toks, all_starts = corpus(), starts()

    m = gpt_torch.init(new_model(torch.float64), torch.Generator().manual_seed(SEED_INIT))
    init_state = gpt_torch.state(m)
    st = safetensors_bytes(init_state, {"torch": torch.__version__})
    back, meta = read_safetensors(st)
    if list(back) != list(init_state) or meta != {"torch": torch.__version__} or \
            any(not torch.equal(back[n], init_state[n]) for n in init_state):
        fail("the safetensors file does not read back")

    check_model(init_state, toks, all_starts)

    l64, lrs, clipped, norms = train(init_state, torch.float64, toks, all_starts)
    l32, lrs32, clipped32, _ = train(init_state, torch.float32, toks, all_starts)
    if clipped32 != clipped:
        fail(f"the float64 run clipped steps {clipped}, the float32 run {clipped32}")
    if min(abs(n - HYPER["clip"]) for n in norms) < 1e-3:
        fail(f"a gradient norm is within 1e-3 of the clip {HYPER['clip']}: {norms}")
    if lrs32 != lrs or not all(math.isfinite(v) for v in l64 + l32):
        fail("the runs are not finite")
    if not sum(l64[-5:]) < sum(l64[:5]) - 0.1:
        fail(f"the loss did not fall: {l64[:5]} … {l64[-5:]}")
    if len(clipped) < 3 or len(clipped) > STEPS - 3:
        fail(f"only steps {clipped} were clipped (norms {norms})")
    if max(abs(a - b) for a, b in zip(l64, l32)) > 1e-4:
        fail("the float32 and float64 losses part")

    with open(os.path.join(out, "torch_gpt_init.safetensors"), "wb") as f:
        f.write(st)
    write_json(os.path.join(out, "torch_gpt.json"), {
        "torch": torch.__version__,
        "config": CONFIG,
        "hyper": HYPER,
        "batch": BATCH,
        "seq": SEQ,
        "steps": STEPS,
        "tokens": toks,
        "starts": all_starts,
        "losses_f64": l64,
        "losses_f32": l32,
        "clipped": clipped,
        "lrs": lrs,
    })
    print(f"torch {torch.__version__}: loss {l64[0]:.6f} → {l64[-1]:.6f} (f32 {l32[-1]:.6f}); "
          f"clipped at steps {clipped}; wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
