"""The timing harness of the examples' testdata/time_torch.py scripts,
shared: each script calls setup(__file__) before it imports torch, then
report(name, fn) for what it times.

    --threads 1,2   comma-separated thread counts (default 1,2); with
                    several, the script runs again once per count, each
                    in a process of its own, since the BLAS reads its
                    thread count when torch loads
    --mintime 2     timed seconds per thread count

Debian's torch multiplies matrices in OpenBLAS, which takes its thread
count from the environment once, when it loads. OpenMP threads that spin
while they wait stall every parallel region whenever another process
holds a core (up to 100x slower on a shared 2-core machine), so they
sleep unless OMP_WAIT_POLICY says otherwise.
"""
import argparse
import os
import subprocess
import sys

THREADS = None
ARGS = None


def setup(script):
    """Parses the options; with several thread counts runs script once per
    count and exits; else sets the environment for the one count (before
    torch loads) and returns it."""
    global THREADS, ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--mintime", type=float, default=2.0, help="timed seconds per thread count")
    ARGS = ap.parse_args()
    counts = [int(n) for n in ARGS.threads.split(",")]
    if len(counts) > 1:
        for n in counts:
            subprocess.run([sys.executable, script, "--threads", str(n), "--mintime", str(ARGS.mintime)], check=True)
        sys.exit(0)
    THREADS = counts[0]
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(THREADS)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return THREADS


def report(name, fn):
    """Warms fn up, then prints the median time of a call over --mintime seconds."""
    import torch
    from torch.utils.benchmark import Timer
    fn()
    fn()
    m = Timer("fn()", globals={"fn": fn}, num_threads=THREADS).blocked_autorange(min_run_time=ARGS.mintime)
    print(f"torch {name} threads={THREADS}: {m.median * 1e3:.4g} ms/iter "
          f"(median of {len(m.times)} blocks of {m.number_per_run}; torch {torch.__version__})")
