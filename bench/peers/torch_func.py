#!/usr/bin/env python3
"""PyTorch peer of peel's benchmark workloads (see bench/workloads.go).

Runs the workloads that have a PyTorch counterpart, each checked against a
float64 reference first, then warmed up and timed in repeated samples the
way bench.Measure does, and prints one JSON record per line on stdout:

  {"workload": ..., "impl": "torch", "threads": N, "median_ns": ...,
   "min_ns": ..., "max_ns": ..., "metric": ..., "unit": ..., "allocs": -1, ...}

"allocs" is -1: PyTorch's allocations are not measured. A workload whose
result does not match the reference gets a record with "error" set (and no
times), and the exit status is 1. A summary goes to stderr. Usage (Debian's
python3-torch is /usr/bin/python3's package):

  /usr/bin/python3 bench/peers/torch_func.py --threads 1 [--run REGEX]
      [--reps 10] [--mintime 1.0] [--json FILE]

With --serve (how peelbench -peer torch runs it, interleaving peel's and
torch's measurements) it first prints a hello line,

  {"peer": "torch", "version": V, "threads": N, "workloads": [names]}

then reads one request per line on stdin,

  {"workload": name, "threads": N, "reps": R, "mintime": S, "warmup": S}

and answers each with one record line, until stdin closes. The thread
count is fixed for the life of the process (--threads).
"""

import argparse
import json
import math
import os
import re
import sys
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads and the BLAS threads")
    ap.add_argument("--run", default="", help="only workloads whose name matches this regex")
    ap.add_argument("--reps", type=int, default=10, help="timed samples per workload")
    ap.add_argument("--mintime", type=float, default=1.0, help="total timed seconds per workload")
    ap.add_argument("--warmup", type=float, default=0.1, help="untimed warm-up seconds per workload")
    ap.add_argument("--json", default="", help="also write the records to this file")
    ap.add_argument("--serve", action="store_true",
                    help="answer measurement requests on stdin, one JSON object per line (see above)")
    return ap.parse_args()


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    # Debian's torch does its matrix products in the system BLAS
    # (OpenBLAS, pthread build), which ignores torch.set_num_threads and
    # reads its thread count from the environment once, when loaded: set
    # it before importing torch.
    os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.threads)
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)

import torch  # noqa: E402  (after the thread environment is set)

TINY_OPS = 100
CHAIN_N = 1 << 20
CHAIN_OPS = 4
MAT_N = 512


def chain_params():
    """The tiny chain's x0, a, b, c (seeded like the Go side's shapes)."""
    g = torch.Generator().manual_seed(1)
    x0 = torch.rand(8, generator=g, dtype=torch.float64) * 2 - 1
    a = torch.rand(8, generator=g, dtype=torch.float64) + 0.5
    b = torch.rand(8, generator=g, dtype=torch.float64) - 0.5
    c = torch.rand(8, generator=g, dtype=torch.float64) - 0.5
    return g, x0, a, b, c


def make_chain(a, b, c):
    """The 100-op chain cycling x*a, x+b, tanh(x), x-c."""
    def chain(x):
        for i in range(TINY_OPS):
            k = i % 4
            if k == 0:
                x = torch.mul(x, a)
            elif k == 1:
                x = torch.add(x, b)
            elif k == 2:
                x = torch.tanh(x)
            else:
                x = torch.sub(x, c)
        return x
    return chain


def tiny_chain():
    _, x0, a, b, c = chain_params()
    chain = make_chain(a, b, c)
    out = [None]

    def run():
        out[0] = chain(x0)

    def check():
        want = x0.tolist()
        av, bv, cv = a.tolist(), b.tolist(), c.tolist()
        for i in range(TINY_OPS):
            k = i % 4
            for j in range(8):
                if k == 0:
                    want[j] *= av[j]
                elif k == 1:
                    want[j] += bv[j]
                elif k == 2:
                    want[j] = math.tanh(want[j])
                else:
                    want[j] -= cv[j]
        compare(out[0].tolist(), want, 1e-12, 1e-12)

    return run, check


def chain_1m(dtype):
    def setup():
        g = torch.Generator().manual_seed(5)
        x = (torch.rand(CHAIN_N, generator=g, dtype=torch.float64) * 4 - 2).to(dtype)
        out = [None]

        def run():
            out[0] = torch.mul(torch.tanh(torch.add(torch.mul(x, 2.0), 1.0)), x)

        def check():
            x64 = x.to(torch.float64)
            want = torch.tanh(2 * x64 + 1) * x64
            tol = 1e-12 if dtype == torch.float64 else 1e-5
            err = (out[0].to(torch.float64) - want).abs() - (tol + tol * want.abs())
            if err.max().item() > 0:
                raise AssertionError("chain result differs from the float64 reference")

        return run, check

    return setup


def coscos_grad():
    """The gradient of sum(cos(cos(a+b+c+d))) on four f32[1024, 2048]
    inputs, with loss.backward() (autograd saves what it saves)."""
    def setup():
        g = torch.Generator().manual_seed(41)
        xs = [(torch.rand(1024, 2048, generator=g, dtype=torch.float64) - 0.5).float().requires_grad_()
              for _ in range(4)]

        def run():
            for x in xs:
                x.grad = None
            torch.cos(torch.cos(xs[0] + xs[1] + xs[2] + xs[3])).sum().backward()

        def check():
            s = sum(x.detach().to(torch.float64) for x in xs)
            want = torch.sin(torch.cos(s)) * torch.sin(s)
            for x in xs:
                err = (x.grad.to(torch.float64) - want).abs() - (1e-6 + 1e-4 * want.abs())
                if err.max().item() > 0:
                    raise AssertionError("coscos gradient differs from the float64 reference")

        return run, check

    return setup


def transformer_grad():
    """The gradient of a 2-block transformer (single-head attention and a
    GELU MLP, each with a residual and a layer norm without affine
    parameters), sequence 128, width 128, hidden 512, f32: loss.backward()."""
    import math
    import torch.nn.functional as F

    def setup():
        g = torch.Generator().manual_seed(100)

        def w(rows, cols):
            s = rows ** -0.5
            return ((torch.rand(rows, cols, generator=g, dtype=torch.float64) * 2 - 1) * s).float().requires_grad_()

        layers = []
        for _ in range(2):
            layers.append([w(128, 128), w(128, 128), w(128, 128), w(128, 128), w(128, 512),
                           (torch.rand(512, generator=g) * 0.2 - 0.1).requires_grad_(), w(512, 128),
                           (torch.rand(128, generator=g) * 0.2 - 0.1).requires_grad_()])
        x = (torch.rand(128, 128, generator=g) * 2 - 1).requires_grad_()
        params = [p for l in layers for p in l] + [x]

        def ln(t):
            return F.layer_norm(t, (t.shape[-1],), eps=1e-5)

        def run():
            for p in params:
                p.grad = None
            h = x
            for wq, wk, wv, wo, w1, b1, w2, b2 in layers:
                q, k, v = h @ wq, h @ wk, h @ wv
                a = torch.softmax((q @ k.T) / math.sqrt(128), dim=-1)
                h = ln(h + (a @ v) @ wo)
                h = ln(h + F.gelu(h @ w1 + b1, approximate="tanh") @ w2 + b2)
            (h * h).mean().backward()

        def check():
            if not torch.isfinite(x.grad).all():
                raise AssertionError("transformer gradient is not finite")

        return run, check

    return setup


def copy_1m():
    g = torch.Generator().manual_seed(6)
    src = (torch.rand(CHAIN_N, generator=g, dtype=torch.float64) * 2 - 1).to(torch.float32)
    dst = torch.empty_like(src)

    def run():
        dst.copy_(src)

    def check():
        if not torch.equal(dst, src):
            raise AssertionError("copy differs")

    return run, check


def fill_1m():
    dst = torch.zeros(CHAIN_N, dtype=torch.float32)

    def run():
        dst.fill_(0.5)

    def check():
        if not bool((dst == 0.5).all()):
            raise AssertionError("fill differs")

    return run, check


def add_1m():
    g = torch.Generator().manual_seed(61)
    a = (torch.rand(CHAIN_N, generator=g, dtype=torch.float64) * 2 - 1).to(torch.float32)
    b = (torch.rand(CHAIN_N, generator=g, dtype=torch.float64) * 2 - 1).to(torch.float32)
    out = [None]

    def run():
        out[0] = torch.add(a, b)

    def check():
        if not torch.equal(out[0], a + b):
            raise AssertionError("add differs")

    return run, check


def sum_1m():
    g = torch.Generator().manual_seed(63)
    x = (torch.rand(CHAIN_N, generator=g, dtype=torch.float64) * 2 - 1).to(torch.float32)
    out = [None]

    def run():
        out[0] = torch.sum(x)

    def check():
        x64 = x.to(torch.float64)
        if abs(float(out[0]) - float(x64.sum())) > 1e-6 * float(x64.abs().sum()):
            raise AssertionError("sum differs")

    return run, check


TRANS_N = 1 << 10


def transpose_1024():
    g = torch.Generator().manual_seed(64)
    x = (torch.rand(TRANS_N, TRANS_N, generator=g, dtype=torch.float64) * 2 - 1).to(torch.float32)
    dst = torch.zeros(TRANS_N, TRANS_N, dtype=torch.float32)

    def run():
        dst.copy_(x.t())

    def check():
        if not torch.equal(dst, x.t().contiguous()):
            raise AssertionError("transpose differs")

    return run, check


def matmul(dtype):
    """peel's matmul512_<dtype>: a 512x512 product (matmul_shape)."""
    return matmul_shape(1, MAT_N, MAT_N, MAT_N, dtype)


def tiny_chain_grad():
    from functorch import grad
    _, x0, a, b, c = chain_params()
    chain = make_chain(a, b, c)
    out = [None]
    gf = grad(lambda x: chain(x).sum())

    def run():
        out[0] = gf(x0)

    def check():
        av, bv, cv = a.tolist(), b.tolist(), c.tolist()
        want = []
        for j, v in enumerate(x0.tolist()):
            d = 1.0
            for i in range(TINY_OPS):
                k = i % 4
                if k == 0:
                    v *= av[j]
                    d *= av[j]
                elif k == 1:
                    v += bv[j]
                elif k == 2:
                    v = math.tanh(v)
                    d *= 1 - v * v
                else:
                    v -= cv[j]
            want.append(d)
        compare(out[0].tolist(), want, 1e-10, 1e-12)

    return run, check


JAC_N = 32


def tanh_wv():
    g = torch.Generator().manual_seed(7)
    w = (torch.rand(JAC_N, JAC_N, generator=g, dtype=torch.float64) - 0.5) * 0.6
    v = torch.rand(JAC_N, generator=g, dtype=torch.float64) * 2 - 1
    return w, v


def jacobian(kind):
    def setup():
        import functorch
        w, v = tanh_wv()
        jf = getattr(functorch, kind)(lambda v: torch.tanh(w @ v))
        out = [None]

        def run():
            out[0] = jf(v)

        def check():
            t = torch.tanh(w @ v)
            want = ((1 - t * t)[:, None] * w).flatten().tolist()
            compare(out[0].flatten().tolist(), want, 1e-10, 1e-12)

        return run, check
    return setup


def hessian():
    import functorch
    w, v = tanh_wv()
    hf = functorch.hessian(lambda v: (torch.tanh(w @ v) ** 2).sum())
    out = [None]

    def run():
        out[0] = hf(v)

    def check():
        t = torch.tanh(w @ v)
        t2 = t * t
        want = (w.T @ torch.diag(2 * (1 - t2) * (1 - 3 * t2)) @ w).flatten().tolist()
        compare(out[0].flatten().tolist(), want, 1e-9, 1e-11)

    return run, check


TINY_BATCH = 16


def tiny_chain_vmap(grad):
    def setup():
        from functorch import vmap
        from functorch import grad as fgrad
        g, _, a, b, c = chain_params()
        x = torch.rand(TINY_BATCH, 8, generator=g, dtype=torch.float64) * 2 - 1
        chain = make_chain(a, b, c)

        f = fgrad(lambda r: chain(r).sum()) if grad else chain
        vf = vmap(f)
        out = [None]

        def run():
            out[0] = vf(x)

        def check():
            for i in range(TINY_BATCH):
                compare(out[0][i].tolist(), f(x[i]).tolist(), 1e-12, 1e-12)

        return run, check
    return setup


MLP_IN, MLP_HIDDEN, MLP_OUT, MLP_BATCH = 784, 128, 10, 64


def per_sample_grads(dtype, loop):
    def setup():
        from functorch import vmap, grad
        g = torch.Generator().manual_seed(11)
        w1 = ((torch.rand(MLP_IN, MLP_HIDDEN, generator=g, dtype=torch.float64) - 0.5) * 0.1).to(dtype)
        b1 = ((torch.rand(MLP_HIDDEN, generator=g, dtype=torch.float64) - 0.5) * 0.2).to(dtype)
        w2 = ((torch.rand(MLP_HIDDEN, MLP_OUT, generator=g, dtype=torch.float64) - 0.5) * 0.4).to(dtype)
        b2 = ((torch.rand(MLP_OUT, generator=g, dtype=torch.float64) - 0.5) * 0.2).to(dtype)
        x = torch.rand(MLP_BATCH, MLP_IN, generator=g, dtype=torch.float64).to(dtype)
        onehot = torch.nn.functional.one_hot(torch.arange(MLP_BATCH) % MLP_OUT, MLP_OUT).to(dtype)
        params = (w1, b1, w2, b2)

        def loss(p, xi, yi):
            h = torch.tanh(xi @ p[0] + p[1])
            logits = h @ p[2] + p[3]
            return -(torch.log_softmax(logits, -1) * yi).sum()

        gl = grad(loss)
        vg = vmap(gl, in_dims=(None, 0, 0))
        out = [None]

        def run():
            if loop:
                out[0] = torch.stack([gl(params, x[i], onehot[i])[0] for i in range(MLP_BATCH)])
            else:
                out[0] = vg(params, x, onehot)[0]

        def check():
            for i in (0, MLP_BATCH - 1):
                want = gl(params, x[i], onehot[i])[0]
                compare(out[0][i].flatten().tolist(), want.flatten().tolist(), 1e-4, 1e-6)

        return run, check
    return setup


def per_sample_cnn(loop):
    """peel's per_sample_grad_cnn_f32 (and _loop): the functorch
    per-sample-gradients tutorial's SimpleCNN, vmap(grad) of the loss of
    one example over a batch of 64 28x28 images (or a loop of grad).
    Checked for two examples against grad alone."""
    def setup():
        from functorch import vmap, grad
        import torch.nn.functional as F
        g = torch.Generator().manual_seed(61)

        def u(fan_in, *shape):
            s = fan_in ** -0.5
            return ((torch.rand(*shape, generator=g, dtype=torch.float64) * 2 - 1) * s).float()

        params = (u(9, 32, 1, 3, 3), u(9, 32), u(288, 64, 32, 3, 3), u(288, 64),
                  u(9216, 9216, 128), u(9216, 128), u(128, 128, 10), u(128, 10))
        x = torch.rand(64, 1, 28, 28, generator=g, dtype=torch.float64).float()
        onehot = F.one_hot(torch.arange(64) * 7 % 10, 10).float()

        def loss(p, xi, yi):
            h = xi.reshape(1, 1, 28, 28)
            h = F.relu(F.conv2d(h, p[0], p[1]))
            h = F.relu(F.conv2d(h, p[2], p[3]))
            h = F.max_pool2d(h, 2).reshape(1, 9216)
            h = F.relu(h @ p[4] + p[5])
            logits = h @ p[6] + p[7]
            return -(torch.log_softmax(logits, -1) * yi).sum()

        gl = grad(loss)
        vg = vmap(gl, in_dims=(None, 0, 0))
        out = [None]

        def run():
            if loop:
                out[0] = torch.stack([gl(params, x[i], onehot[i])[2] for i in range(64)])
            else:
                out[0] = vg(params, x, onehot)[2]

        def check():
            for i in (0, 63):
                want = gl(params, x[i], onehot[i])[2]
                compare(out[0][i].flatten().tolist(), want.flatten().tolist(), 1e-3, 1e-5)

        return run, check
    return setup


def vmap_functionalize():
    from functorch import vmap, functionalize
    g = torch.Generator().manual_seed(21)
    x = torch.rand(256, 128, generator=g, dtype=torch.float64) * 2 - 1

    def f(x):
        n = x.shape[0]
        y = torch.zeros(n + 2, dtype=x.dtype)
        y.narrow(0, 1, n).copy_(x)
        y.mul_(2.0)
        return y

    vf = vmap(functionalize(f))
    out = [None]

    def run():
        out[0] = vf(x)

    def check():
        for i in (0, 255):
            compare(out[0][i].tolist(), f(x[i]).tolist(), 0, 0)

    return run, check


GELU_ROWS, GELU_COLS = 4096, 256
GELU_K, GELU_C = 0.7978845608028654, 0.044715


NEWTON_LANES = 1024
NEWTON_TOL = 1e-12
NEWTON_MAX_STEPS = 100


def newton(loop):
    """Newton's method for x^3 = a on 1024 f64 lanes (a log-uniform in
    [1e-3, 1e6]) from x = 1 until |x^3 - a| <= 1e-12*|a|: peel's
    Vmap(WhileLoop) as a masked loop on the batch (every lane steps until
    all are done, finished lanes keep their value by torch.where), or with
    loop a Python loop per lane over 0-d tensors reading each residual."""
    def setup():
        g = torch.Generator().manual_seed(57)
        lo, hi = math.log(1e-3), math.log(1e6)
        a = torch.exp(lo + (hi - lo) * torch.rand(NEWTON_LANES, generator=g, dtype=torch.float64))
        want = []
        for v in a.tolist():
            x, k = 1.0, 0
            while k < NEWTON_MAX_STEPS and abs(x * x * x - v) > NEWTON_TOL * v:
                x -= (x * x * x - v) / (3 * x * x)
                k += 1
            want.append(x)
        out = [None]

        def step(x, a):
            return x - (x * x * x - a) / (3 * x * x)

        if loop:
            lanes = [a[i] for i in range(NEWTON_LANES)]

            def run():
                xs = []
                for ai in lanes:
                    x = torch.ones((), dtype=torch.float64)
                    limit = NEWTON_TOL * ai.item()
                    k = 0
                    while k < NEWTON_MAX_STEPS and (x * x * x - ai).abs().item() > limit:
                        x = step(x, ai)
                        k += 1
                    xs.append(x)
                out[0] = torch.stack(xs)
        else:
            limit = NEWTON_TOL * a.abs()

            def run():
                x = torch.ones_like(a)
                k = torch.zeros(NEWTON_LANES, dtype=torch.int64)
                while True:
                    m = ((x * x * x - a).abs() > limit) & (k < NEWTON_MAX_STEPS)
                    if not m.any():
                        break
                    x = torch.where(m, step(x, a), x)
                    k = k + m.long()
                out[0] = x

        def check():
            compare(out[0].tolist(), want, 1e-13, 0)

        return run, check

    return setup


def gelu_composite(x):
    """The composite of mylib.gelu (examples/customop/mylib), op by op."""
    x3 = torch.mul(x, torch.mul(x, x))
    inner = torch.mul(torch.add(x, torch.mul(x3, GELU_C)), GELU_K)
    return torch.mul(torch.mul(x, 0.5), torch.add(torch.tanh(inner), 1.0))


def gelu_fused(x):
    """torch's own fused GELU (tanh approximation): kernel forward and
    hand-written backward."""
    return torch.nn.functional.gelu(x, approximate="tanh")


def gelu(dtype, how, grad):
    f = gelu_fused if how == "fused" else gelu_composite

    def setup():
        g = torch.Generator().manual_seed(11)
        x = (torch.rand(GELU_ROWS, GELU_COLS, generator=g, dtype=torch.float64) * 8 - 4).to(dtype)
        out = [None]
        if grad:
            import functorch
            gf = functorch.grad(lambda x: f(x).sum())

            def run():
                out[0] = gf(x)
        else:
            def run():
                out[0] = f(x)

        def check():
            x64 = x.to(torch.float64)
            t = torch.tanh(GELU_K * (x64 + GELU_C * x64 ** 3))
            if grad:
                want = 0.5 * (1 + t) + 0.5 * x64 * (1 - t * t) * GELU_K * (1 + 3 * GELU_C * x64 * x64)
            else:
                want = 0.5 * x64 * (1 + t)
            tol = 1e-12 if dtype == torch.float64 else 1e-5
            err = (out[0].to(torch.float64) - want).abs() - (tol + tol * want.abs())
            if err.max().item() > 0:
                raise AssertionError("gelu result differs from the float64 reference")

        return run, check

    return setup


STEP_IN, STEP_HIDDEN, STEP_OUT, STEP_BATCH, STEP_LR = 784, 256, 10, 128, 0.1


def mlp_step():
    """One training step of an MLP 784-256-10 (tanh), batch 128, f32:
    forward, mean softmax cross-entropy, loss.backward(), and an SGD step
    under no_grad. Like peel's step it leaves the parameters as they are
    and returns the updated ones, so that every run computes the same
    step."""
    import torch.nn.functional as F
    g = torch.Generator().manual_seed(31)
    s1, s2 = STEP_IN ** -0.5, STEP_HIDDEN ** -0.5
    w1 = ((torch.rand(STEP_IN, STEP_HIDDEN, generator=g, dtype=torch.float64) * 2 - 1) * s1).float()
    b1 = ((torch.rand(STEP_HIDDEN, generator=g, dtype=torch.float64) * 2 - 1) * 0.1).float()
    w2 = ((torch.rand(STEP_HIDDEN, STEP_OUT, generator=g, dtype=torch.float64) * 2 - 1) * s2).float()
    b2 = ((torch.rand(STEP_OUT, generator=g, dtype=torch.float64) * 2 - 1) * 0.1).float()
    x = torch.rand(STEP_BATCH, STEP_IN, generator=g, dtype=torch.float64).float()
    labels = torch.arange(STEP_BATCH) % STEP_OUT
    params = [p.requires_grad_() for p in (w1, b1, w2, b2)]

    def step(ps, x):
        for p in ps:
            p.grad = None
        h = torch.tanh(x @ ps[0] + ps[1])
        loss = F.cross_entropy(h @ ps[2] + ps[3], labels)
        loss.backward()
        with torch.no_grad():
            return [p - STEP_LR * p.grad for p in ps], loss.detach()

    out = [None]

    def run():
        out[0] = step(params, x)

    def check():
        ref = [p.detach().double().requires_grad_() for p in params]
        want, want_loss = step(ref, x.double())
        got, loss = out[0]
        for gp, wp in zip(got, want):
            compare(gp.flatten().tolist(), wp.flatten().tolist(), 1e-5, 1e-7)
        compare([loss.item()], [want_loss.item()], 1e-5, 0)

    return run, check


MAML_TASKS, MAML_K, MAML_HIDDEN, MAML_ALPHA = 4, 20, 40, 0.1


def maml_step():
    """The MAML step of peel's maml_step: value and functorch.grad of the
    mean over 4 tasks (vmap) of the query loss after one inner SGD step
    (grad inside) of an MLP 1-40-40-1 (ReLU, f64), checked against central
    differences of the meta-loss."""
    from functorch import grad, vmap, grad_and_value
    g = torch.Generator().manual_seed(41)
    s = MAML_HIDDEN ** -0.5

    def u(*shape, lo, hi):
        return torch.rand(*shape, generator=g, dtype=torch.float64) * (hi - lo) + lo

    params = (u(1, MAML_HIDDEN, lo=-1, hi=1), u(MAML_HIDDEN, lo=-0.1, hi=0.1),
              u(MAML_HIDDEN, MAML_HIDDEN, lo=-s, hi=s), u(MAML_HIDDEN, lo=-0.1, hi=0.1),
              u(MAML_HIDDEN, 1, lo=-s, hi=s), u(1, lo=-0.1, hi=0.1))
    amp, phase = u(MAML_TASKS, 1, 1, lo=0.1, hi=0.5), u(MAML_TASKS, 1, 1, lo=0, hi=math.pi)
    x1, x2 = u(MAML_TASKS, MAML_K, 1, lo=-5, hi=5), u(MAML_TASKS, MAML_K, 1, lo=-5, hi=5)
    tasks = (x1, amp * torch.sin(x1 + phase), x2, amp * torch.sin(x2 + phase))

    def net(p, x):
        x = torch.relu(x @ p[0] + p[1])
        x = torch.relu(x @ p[2] + p[3])
        return x @ p[4] + p[5]

    def mse(a, b):
        return ((a - b) ** 2).mean()

    def task_loss(p, t):
        gs = grad(lambda p, x, y: mse(net(p, x), y))(p, t[0], t[1])
        adapted = tuple(pi - MAML_ALPHA * gi for pi, gi in zip(p, gs))
        return mse(net(adapted, t[2]), t[3])

    def meta_loss(p, ts):
        return vmap(task_loss, in_dims=(None, 0))(p, ts).mean()

    gv = grad_and_value(meta_loss)
    out = [None]

    def run():
        out[0] = gv(params, tasks)

    def check():
        grads, _ = out[0]
        eps = 1e-7  # the meta-loss jumps where an inner ReLU switches
        for seed in (60, 61):
            gd = torch.Generator().manual_seed(seed)
            dirs = [torch.rand(p.shape, generator=gd, dtype=torch.float64) * 2 - 1 for p in params]
            dot = sum((d * gi).sum().item() for d, gi in zip(dirs, grads))
            plus = tuple(p + eps * d for p, d in zip(params, dirs))
            minus = tuple(p - eps * d for p, d in zip(params, dirs))
            fd = (meta_loss(plus, tasks).item() - meta_loss(minus, tasks).item()) / (2 * eps)
            if not abs(fd - dot) <= 1e-6 * (abs(fd) + 1e-3):
                raise AssertionError(f"meta-gradient {dot}, central differences {fd}")

    return run, check


def matmul_shape(batch, m, k, n, dtype, ta=False, tb=False):
    """peel's matmul_<shape>: batch products of m×k by k×n; with ta the
    left operand is stored k×m and multiplied as its transposed view
    (a.mT), with tb the right one stored n×k (b.mT), as a backward pass
    and attention's Q·Kᵀ have them."""
    def setup():
        g = torch.Generator().manual_seed(17)
        lead = (batch,) if batch > 1 else ()
        ash, bsh = ((k, m) if ta else (m, k)), ((n, k) if tb else (k, n))
        a = (torch.rand(*lead, *ash, generator=g, dtype=torch.float64) * 2 - 1).to(dtype)
        b = (torch.rand(*lead, *bsh, generator=g, dtype=torch.float64) * 2 - 1).to(dtype)
        if ta:
            a = a.transpose(-1, -2)
        if tb:
            b = b.transpose(-1, -2)
        out = [None]

        def run():
            out[0] = torch.matmul(a, b)

        def check():
            a64, b64 = a.to(torch.float64), b.to(torch.float64)
            want = a64 @ b64
            mag = a64.abs() @ b64.abs()
            tol = 1e-13 if dtype == torch.float64 else 1e-5
            if ((out[0].to(torch.float64) - want).abs() > tol * mag).any():
                raise AssertionError("matmul differs from the float64 reference")

        return run, check

    return setup


# The MLP-shaped products (bench/matmul_shapes.go): batch, m, k, n.
MAT_SHAPES = [(1, 64, 784, 128), (1, 128, 256, 10), (8, 64, 784, 128), (8, 128, 256, 10)]


# The skinny products (bench/matmul_shapes.go): batch, m, k, n, ta, tb.
SKINNY_SHAPES = [(1, 8, 512, 512, False, False), (1, 512, 16, 512, False, False),
                 (32, 128, 64, 128, False, True), (32, 128, 128, 64, False, False),
                 (1, 784, 64, 128, True, False), (1, 64, 128, 784, False, True)]


def mat_shape_name(batch, m, k, n, dt, ta=False, tb=False):
    t = ("_" + ("t" if ta else "n") + ("t" if tb else "n")) if ta or tb else ""
    return "matmul_" + (f"b{batch}_" if batch > 1 else "") + f"{m}x{k}x{n}{t}_{dt}"


RNN_HIDDEN, RNN_IN, RNN_BATCH, RNN_STEPS = 128, 128, 32, 100


def rnn_grad():
    """The gradient (Wh, Wx, b) of sum(h_T ** 2) for an Elman RNN
    h' = tanh(h @ Wh + x_t @ Wx + b), hidden 128, input 128, batch 32,
    100 steps, f32: a Python loop over the steps and loss.backward()
    (torch 1.13 has no scan). Checked against the same in float64."""
    def setup():
        g = torch.Generator().manual_seed(71)
        s = RNN_HIDDEN ** -0.5

        def u(*shape, lo, hi):
            return (torch.rand(*shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).float()

        params = [u(RNN_HIDDEN, RNN_HIDDEN, lo=-s, hi=s).requires_grad_(),
                  u(RNN_IN, RNN_HIDDEN, lo=-s, hi=s).requires_grad_(),
                  u(RNN_HIDDEN, lo=-0.1, hi=0.1).requires_grad_()]
        xs = u(RNN_STEPS, RNN_BATCH, RNN_IN, lo=-1, hi=1)

        def grads(ps, xs):
            for p in ps:
                p.grad = None
            wh, wx, b = ps
            h = torch.zeros(RNN_BATCH, RNN_HIDDEN, dtype=xs.dtype)
            for t in range(xs.shape[0]):
                h = torch.tanh(h @ wh + xs[t] @ wx + b)
            (h * h).sum().backward()
            return [p.grad for p in ps]

        out = [None]

        def run():
            out[0] = grads(params, xs)

        def check():
            ref = grads([p.detach().double().requires_grad_() for p in params], xs.double())
            for got, want in zip(out[0], ref):
                compare(got.flatten().tolist(), want.flatten().tolist(), 2e-3, 1e-4)

        return run, check

    return setup


GPT_VOCAB, GPT_CONTEXT, GPT_LAYERS, GPT_HEADS, GPT_WIDTH = 96, 64, 2, 4, 64
GPT_BATCH, GPT_SEQ, GPT_NEW, GPT_TOPK = 32, 64, 63, 10
GPT_LR, GPT_WD, GPT_BETAS, GPT_CLIP = 1e-3, 0.1, (0.9, 0.99), 1.0


def gpt_torch():
    """gpt_torch.py beside this file (peelbench writes both into one
    directory), the PyTorch twin of examples/gpt/model."""
    d = os.path.dirname(os.path.abspath(__file__))
    if d not in sys.path:
        sys.path.insert(0, d)
    import gpt_torch as gt
    return gt


def gpt_model(gt):
    """The GPT of peel's gpt_* workloads (vocabulary 96, context 64, 2
    layers, 4 heads, width 64, no dropout), f32, initialized as
    model.Init draws (from a seeded generator)."""
    m = gt.GPT(GPT_VOCAB, GPT_CONTEXT, GPT_LAYERS, GPT_HEADS, GPT_WIDTH, dropout=0.0, dtype=torch.float32)
    return gt.init(m, torch.Generator().manual_seed(91))


def gpt_step():
    """peel's gpt_step_f32: one training step of the GPT on a batch of 32
    windows of 64 fixed random tokens: forward, mean cross-entropy,
    loss.backward(), clipping to global norm 1 (by hand, as
    optim.ClipByGlobalNorm: no epsilon), torch.optim.AdamW at 1e-3 with
    betas (0.9, 0.99) and weight decay 0.1 on the Linear weights only.
    The parameters and the optimizer state carry over from run to run."""
    gt = gpt_torch()
    model = gpt_model(gt)
    model.train()
    g = torch.Generator().manual_seed(92)
    x = torch.randint(0, GPT_VOCAB, (GPT_BATCH, GPT_SEQ), generator=g)
    y = torch.randint(0, GPT_VOCAB, (GPT_BATCH, GPT_SEQ), generator=g)
    opt = gt.optimizer(model, GPT_WD, *GPT_BETAS)
    out = [None]

    def run():
        out[0] = gt.train_step(model, opt, x, y, GPT_LR, GPT_CLIP)

    def check():
        if not math.isfinite(out[0]):
            raise AssertionError(f"the GPT step's loss is {out[0]}")
        if not all(torch.isfinite(p).all() for p in model.parameters()):
            raise AssertionError("the GPT's parameters are not finite after the step")

    return run, check


def gpt_sample():
    """peel's gpt_sample_token: 63 tokens after a 1-token prompt, batch 1,
    temperature 1, top-k 10, with the KV cache (a prefill, then one token
    a step attending to the cached positions), eval mode under
    torch.no_grad(), drawn with torch.multinomial."""
    gt = gpt_torch()
    model = gpt_model(gt)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    prompt = torch.ones(1, 1, dtype=torch.int64)  # token 1, as bench/gpt.go's prompt
    g = torch.Generator().manual_seed(93)
    out = [None]

    def run():
        out[0] = gt.generate(model, prompt, GPT_NEW, temperature=1.0, top_k=GPT_TOPK, generator=g)

    def check():
        t = out[0]
        if tuple(t.shape) != (1, GPT_NEW) or t.dtype != torch.int64:
            raise AssertionError(f"sampled {t.dtype}{list(t.shape)}, want int64[1, {GPT_NEW}]")
        if not ((t >= 0) & (t < GPT_VOCAB)).all():
            raise AssertionError(f"a sampled token is outside [0, {GPT_VOCAB})")

    return run, check


def compare(got, want, rtol, atol):
    for i, (g, w) in enumerate(zip(got, want)):
        if not abs(g - w) <= atol + rtol * abs(w):
            raise AssertionError(f"element {i} = {g}, want {w}")


# name, unit, metric(ns per run), setup

CONV_BATCH, CONV_CH, CONV_HW, CONV_K = 32, 64, 32, 3
CONV_FLOPS = 2.0 * CONV_BATCH * CONV_CH * CONV_CH * CONV_HW * CONV_HW * CONV_K * CONV_K


def conv2d(grad):
    """peel's conv2d_3x3_64_f32 (and _grad_f32): torch.nn.functional.conv2d
    of x [32, 64, 32, 32] by w [64, 64, 3, 3], f32, padding 1 (SAME); with
    grad also torch.autograd.grad of the result in x and w for a fixed
    cotangent. Checked against the float64 computation."""
    import torch.nn.functional as F

    def setup():
        g = torch.Generator().manual_seed(51)
        s = (CONV_CH * CONV_K * CONV_K) ** -0.5
        x = (torch.rand(CONV_BATCH, CONV_CH, CONV_HW, CONV_HW, generator=g, dtype=torch.float64) * 2 - 1).float()
        w = ((torch.rand(CONV_CH, CONV_CH, CONV_K, CONV_K, generator=g, dtype=torch.float64) * 2 - 1) * s).float()
        u = (torch.rand(CONV_BATCH, CONV_CH, CONV_HW, CONV_HW, generator=g, dtype=torch.float64) * 2 - 1).float()
        if grad:
            x.requires_grad_()
            w.requires_grad_()
        out = [None]

        def run():
            y = F.conv2d(x, w, padding=1)
            if grad:
                out[0] = (y.detach(),) + torch.autograd.grad(y, (x, w), u)
            else:
                out[0] = (y,)

        def check():
            x64 = x.detach().double().requires_grad_()
            w64 = w.detach().double().requires_grad_()
            y64 = F.conv2d(x64, w64, padding=1)
            want = [y64.detach()]
            mags = [F.conv2d(x64.detach().abs(), w64.detach().abs(), padding=1)]
            if grad:
                want += list(torch.autograd.grad(y64, (x64, w64), u.double()))
                mags += [None, None]
            for got, wt, mag in zip(out[0], want, mags):
                if mag is None:
                    mag = wt.abs().mean() * 100
                if ((got.double() - wt).abs() > 1e-4 * mag + 1e-5).any():
                    raise AssertionError("conv2d differs from the float64 reference")

        return run, check

    return setup


DIGITS_ROWS, DIGITS_PIXELS, DIGITS_HIDDEN, DIGITS_CLASSES = 1437, 64, 64, 10
DIGITS_BATCH, DIGITS_LR = 64, 1e-2


def digits_epoch():
    """A training epoch of peel's digits_mlp_epoch_f32: an MLP 64-64-10
    (torch.nn.Linear layers, ReLU, f32) on 1437 synthetic rows (row i of
    class i mod 10: the class's prototype, uniform in 0..16, plus uniform
    noise in +-8, clipped to 0..16, over 16), minibatches of 64 in a
    shuffled order (torch.randperm; the last batch 29 rows, 23 steps),
    F.cross_entropy, backward and torch.optim.Adam at 1e-2 each step. Like
    peel's, every run starts from the same parameters and a fresh Adam
    state (the copy of the initial parameters is part of the run)."""
    import torch.nn.functional as F
    g = torch.Generator().manual_seed(81)
    protos = torch.rand(DIGITS_CLASSES, DIGITS_PIXELS, generator=g, dtype=torch.float64) * 16
    labels = torch.arange(DIGITS_ROWS) % DIGITS_CLASSES
    noise = torch.rand(DIGITS_ROWS, DIGITS_PIXELS, generator=g, dtype=torch.float64) * 16 - 8
    x = ((protos[labels] + noise).clamp(0, 16) / 16).float()
    model = torch.nn.Sequential(torch.nn.Linear(DIGITS_PIXELS, DIGITS_HIDDEN), torch.nn.ReLU(),
                                torch.nn.Linear(DIGITS_HIDDEN, DIGITS_CLASSES))
    with torch.no_grad():
        for layer in (model[0], model[2]):
            s = layer.in_features ** -0.5
            for p in (layer.weight, layer.bias):
                p.copy_(torch.rand(p.shape, generator=g, dtype=torch.float64) * 2 * s - s)
    init = [p.detach().clone() for p in model.parameters()]
    out = [None]

    def epoch(m, xs, p0s, steps=None):
        with torch.no_grad():
            for p, p0 in zip(m.parameters(), p0s):
                p.copy_(p0)
        opt = torch.optim.Adam(m.parameters(), lr=DIGITS_LR)
        perm = torch.randperm(DIGITS_ROWS, generator=torch.Generator().manual_seed(87))
        losses = []
        for i in range(0, DIGITS_ROWS, DIGITS_BATCH):
            if steps is not None and len(losses) == steps:
                break
            idx = perm[i:i + DIGITS_BATCH]
            opt.zero_grad()
            loss = F.cross_entropy(m(xs.index_select(0, idx)), labels.index_select(0, idx))
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        return losses

    def run():
        out[0] = epoch(model, x, init)

    def check():
        losses = out[0]
        if len(losses) != (DIGITS_ROWS + DIGITS_BATCH - 1) // DIGITS_BATCH:
            raise AssertionError(f"{len(losses)} steps")
        first, tail = losses[0].item(), sum(l.item() for l in losses[-5:]) / 5
        if not tail < first:
            raise AssertionError(f"loss did not decrease: first step {first}, last five {tail}")
        if not all(torch.isfinite(p).all() for p in model.parameters()):
            raise AssertionError("parameters not finite after the epoch")
        # The first step against the same step in float64.
        ref = torch.nn.Sequential(torch.nn.Linear(DIGITS_PIXELS, DIGITS_HIDDEN), torch.nn.ReLU(),
                                  torch.nn.Linear(DIGITS_HIDDEN, DIGITS_CLASSES)).double()
        loss32 = epoch(model, x, init, steps=1)[0].item()
        loss64 = epoch(ref, x.double(), [p.double() for p in init], steps=1)[0].item()
        compare([loss32], [loss64], 1e-5, 0)
        got = [p.detach().clone() for p in model.parameters()]
        for gp, wp in zip(got, ref.parameters()):
            compare(gp.flatten().tolist(), wp.detach().flatten().tolist(), 1e-5, 1e-6)

    return run, check


WORKLOADS = [
    ("tiny_chain_100", "ns/op", lambda ns: ns / TINY_OPS, tiny_chain),
    ("chain_1m_f32", "ns/elem/op", lambda ns: ns / (CHAIN_N * CHAIN_OPS), chain_1m(torch.float32)),
    ("chain_1m_f64", "ns/elem/op", lambda ns: ns / (CHAIN_N * CHAIN_OPS), chain_1m(torch.float64)),
    ("copy_1m_f32", "ns/elem", lambda ns: ns / CHAIN_N, copy_1m),
    ("copyinto_1m_f32", "ns/elem", lambda ns: ns / CHAIN_N, copy_1m),
    ("fill_1m_f32", "ns/elem", lambda ns: ns / CHAIN_N, fill_1m),
    ("add_1m_f32", "ns/elem", lambda ns: ns / CHAIN_N, add_1m),
    ("sum_1m_f32", "ns/elem", lambda ns: ns / CHAIN_N, sum_1m),
    ("transpose_1024_f32", "ns/elem", lambda ns: ns / (TRANS_N * TRANS_N), transpose_1024),
    ("matmul512_f32", "GFLOPS", lambda ns: 2 * MAT_N**3 / ns, matmul(torch.float32)),
    ("matmul512_f64", "GFLOPS", lambda ns: 2 * MAT_N**3 / ns, matmul(torch.float64)),
    ("tiny_chain_100_grad", "ns/op", lambda ns: ns / TINY_OPS, tiny_chain_grad),
    ("jacrev_32", "µs", lambda ns: ns / 1e3, jacobian("jacrev")),
    ("jacfwd_32", "µs", lambda ns: ns / 1e3, jacobian("jacfwd")),
    ("hessian_32", "µs", lambda ns: ns / 1e3, hessian),
    ("tiny_chain_100_vmap", "ns/op", lambda ns: ns / TINY_OPS, tiny_chain_vmap(False)),
    ("tiny_chain_100_vmap_grad", "ns/op", lambda ns: ns / TINY_OPS, tiny_chain_vmap(True)),
    ("per_sample_grad_mlp_f32", "ms", lambda ns: ns / 1e6, per_sample_grads(torch.float32, False)),
    ("per_sample_grad_mlp_f32_loop", "ms", lambda ns: ns / 1e6, per_sample_grads(torch.float32, True)),
    ("per_sample_grad_mlp_f64", "ms", lambda ns: ns / 1e6, per_sample_grads(torch.float64, False)),
    ("per_sample_grad_mlp_f64_loop", "ms", lambda ns: ns / 1e6, per_sample_grads(torch.float64, True)),
    ("vmap_functionalize_256x128", "µs", lambda ns: ns / 1e3, vmap_functionalize),
] + [
    (mat_shape_name(b, m, k, n, dt), "GFLOPS", (lambda f: lambda ns: f / ns)(2 * b * m * k * n),
     matmul_shape(b, m, k, n, dtype))
    for dt, dtype in (("f32", torch.float32), ("f64", torch.float64))
    for b, m, k, n in MAT_SHAPES
] + [
    (mat_shape_name(b, m, k, n, "f32", ta, tb), "GFLOPS", (lambda f: lambda ns: f / ns)(2 * b * m * k * n),
     matmul_shape(b, m, k, n, torch.float32, ta, tb))
    for b, m, k, n, ta, tb in SKINNY_SHAPES
] + [
    ("gelu_" + ("grad_" if grad else "") + how + "_1m_" + name, "ns/elem",
     lambda ns: ns / (GELU_ROWS * GELU_COLS), gelu(dtype, how, grad))
    for name, dtype in (("f32", torch.float32), ("f64", torch.float64))
    for grad in (False, True)
    for how in ("fused", "composite")
] + [
    ("mlp_step_f32", "ms", lambda ns: ns / 1e6, mlp_step),
    ("coscos_grad_f32", "ms", lambda ns: ns / 1e6, coscos_grad()),
    ("transformer_grad_f32", "ms", lambda ns: ns / 1e6, transformer_grad()),
    ("maml_step", "ms", lambda ns: ns / 1e6, maml_step),
    ("newton_while_vmap_f64", "ms", lambda ns: ns / 1e6, newton(False)),
    ("newton_loop_f64", "ms", lambda ns: ns / 1e6, newton(True)),
    ("conv2d_3x3_64_f32", "GFLOPS", lambda ns: CONV_FLOPS / ns, conv2d(False)),
    ("conv2d_3x3_64_grad_f32", "GFLOPS", lambda ns: 3 * CONV_FLOPS / ns, conv2d(True)),
    ("rnn_unrolled_grad_f32", "ms", lambda ns: ns / 1e6, rnn_grad()),
    ("per_sample_grad_cnn_f32", "ms", lambda ns: ns / 1e6, per_sample_cnn(False)),
    ("per_sample_grad_cnn_f32_loop", "ms", lambda ns: ns / 1e6, per_sample_cnn(True)),
    ("digits_mlp_epoch_f32", "ms", lambda ns: ns / 1e6, digits_epoch),
    ("gpt_step_f32", "ms", lambda ns: ns / 1e6, gpt_step),
    ("gpt_sample_token", "µs/token", lambda ns: ns / 1e3 / GPT_NEW, gpt_sample),
]

# peel's compiled workloads are compared with torch eager (Debian's torch
# 1.13 has no torch.compile): each <name>_compiled is answered by the
# eager workload <name>.
COMPILED = ["tiny_chain_100", "chain_1m_f32", "chain_1m_f64", "gelu_composite_1m_f32",
            "gelu_grad_composite_1m_f32", "mlp_step_f32", "per_sample_grad_mlp_f32", "maml_step",
            "newton_while_vmap_f64"]
WORKLOADS += [(name + "_compiled",) + w[1:] for name in COMPILED for w in WORKLOADS if w[0] == name]
# Remat and compiled-backward variants, answered by torch's eager
# autograd of the same function.
VARIANTS = {"mlp_step_f32_compile_backward": "mlp_step_f32", "coscos_grad_f32_mincut": "coscos_grad_f32",
            "coscos_grad_f32_compiled": "coscos_grad_f32", "coscos_grad_f32_compiled_mincut": "coscos_grad_f32",
            "transformer_grad_f32_compiled": "transformer_grad_f32",
            "transformer_grad_f32_ckpt_dots": "transformer_grad_f32",
            "transformer_grad_f32_ckpt_mincut": "transformer_grad_f32",
            "transformer_grad_f32_ckpt_nothing": "transformer_grad_f32",
            # The RNN: torch's Python loop answers the Scan and the Go loop,
            # eager and compiled.
            "rnn_scan_grad_f32": "rnn_unrolled_grad_f32", "rnn_scan_grad_f32_compiled": "rnn_unrolled_grad_f32",
            "rnn_unrolled_grad_f32_compiled": "rnn_unrolled_grad_f32",
            "rnn_scan_grad_f32_compiled_unroll4": "rnn_unrolled_grad_f32",
            "rnn_scan_grad_f32_compiled_unroll10": "rnn_unrolled_grad_f32",
            # The GPT step: torch eager answers peel's compiled step and
            # its checkpointed (remat) steps.
            "gpt_step_f32_compiled": "gpt_step_f32", "gpt_step_f32_remat_dots": "gpt_step_f32",
            "gpt_step_f32_remat_mincut": "gpt_step_f32", "gpt_step_f32_remat_nothing": "gpt_step_f32"}
WORKLOADS += [(name,) + w[1:] for name, base in VARIANTS.items() for w in WORKLOADS if w[0] == base]


def time_runs(run, n):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        run()
    return time.perf_counter_ns() - t0


def quantile(xs, q):
    pos = q * (len(xs) - 1)
    i = int(pos)
    if i + 1 >= len(xs):
        return xs[-1]
    f = pos - i
    return xs[i] * (1 - f) + xs[i + 1] * f


def measure(name, unit, metric, setup, threads, reps, mintime, warmup):
    run, check = setup()
    run()
    check()
    # Warm up, doubling the batch until enough time has passed.
    k, warm = 1, 0
    while True:
        d = time_runs(run, k)
        warm += d
        per = d / k
        if warm >= warmup * 1e9 and k >= 2:
            break
        k *= 2
    target = mintime * 1e9 / reps
    n = max(1, int(target / per)) if per > 0 else 1
    samples = sorted(time_runs(run, n) / n for _ in range(reps))
    run()
    check()
    med = quantile(samples, 0.5)
    return {
        "workload": name,
        "impl": "torch",
        "threads": threads,
        "median_ns": med,
        "min_ns": samples[0],
        "max_ns": samples[-1],
        "metric": metric(med),
        "unit": unit,
        "allocs": -1,
        "q1_ns": quantile(samples, 0.25),
        "q3_ns": quantile(samples, 0.75),
        "reps": reps,
        "runs_per_sample": n,
    }


def failed_record(name, threads, err):
    """The record of a workload that was not timed: err says why."""
    if isinstance(err, AssertionError):
        msg = f"wrong result: {err}"
    else:
        msg = f"failed: {type(err).__name__}: {err}"
    return {"workload": name, "impl": "torch", "threads": threads, "median_ns": 0,
            "min_ns": 0, "max_ns": 0, "metric": 0, "allocs": -1, "error": msg}


def serve(threads):
    """Answers measurement requests on stdin (see the module doc)."""
    by_name = {w[0]: w for w in WORKLOADS}
    hello = {"peer": "torch", "version": torch.__version__, "threads": threads,
             "workloads": list(by_name)}
    print(json.dumps(hello), flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        name = req.get("workload", "")
        try:
            if name not in by_name:
                raise KeyError(f"no workload {name!r}")
            if req.get("threads", threads) != threads:
                raise ValueError(f"this peer runs with {threads} threads, asked for {req['threads']}")
            _, unit, metric, setup = by_name[name]
            rec = measure(name, unit, metric, setup, threads, int(req.get("reps", 10)),
                          float(req.get("mintime", 1.0)), float(req.get("warmup", 0.1)))
        except Exception as e:  # noqa: BLE001  (every failure is reported, not fatal)
            rec = failed_record(name, threads, e)
        print(json.dumps(rec), flush=True)


def main():
    args = ARGS
    torch.set_num_threads(args.threads)
    if args.serve:
        serve(args.threads)
        return
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads", file=sys.stderr)
    pat = re.compile(args.run)
    recs, failed = [], 0
    for name, unit, metric, setup in WORKLOADS:
        if not pat.search(name):
            continue
        try:
            rec = measure(name, unit, metric, setup, args.threads, args.reps, args.mintime, args.warmup)
        except AssertionError as e:
            print(f"FAIL {name}: {e}", file=sys.stderr)
            failed += 1
            rec = failed_record(name, args.threads, e)
            recs.append(rec)
            print(json.dumps(rec), flush=True)
            continue
        recs.append(rec)
        print(json.dumps(rec), flush=True)
        print(f"{name:<22} threads={args.threads} median {rec['median_ns']:.0f}ns  "
              f"{rec['metric']:.4g} {unit}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
