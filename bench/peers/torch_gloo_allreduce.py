"""The peer of mpibench's allreduce_<size>_<n>rank workloads (and of
peelbench's in-process psum_<size>_2dev ones): torch.distributed's
all_reduce (sum, gloo backend) of a float32 tensor of 4 KB ... 64 MB
across `world` processes on this machine. Each sample times a loop of
calls after a barrier; the record is the slowest rank's median time per
call, with GB/s of one rank's operand, one JSON record per line in
peelbench's format.

    /usr/bin/python3 bench/peers/torch_gloo_allreduce.py [--world 2 --reps 7]
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]


def name(size, world):
    s = f"{size >> 20}mb" if size >= 1 << 20 else f"{size >> 10}kb"
    return f"allreduce_{s}_{world}rank"


def worker(rank, world, reps, port, out):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    recs = []
    for size in SIZES:
        x = torch.ones(size // 4, dtype=torch.float32)
        iters = max(3, min(200, (256 << 20) // size))
        samples = []
        for s in range(reps + 1):  # the first sample warms up
            dist.barrier()
            t = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(x)
            ns = torch.tensor([(time.perf_counter() - t) * 1e9 / iters], dtype=torch.float64)
            dist.all_reduce(ns, op=dist.ReduceOp.MAX)
            if s > 0:
                samples.append(ns.item())
        samples.sort()
        med = statistics.median(samples)
        recs.append({"workload": name(size, world), "impl": "torch", "threads": 1,
                     "median_ns": med, "min_ns": samples[0], "max_ns": samples[-1],
                     "metric": size / med, "unit": "GB/s", "allocs": -1, "reps": len(samples)})
    if rank == 0:
        with open(out, "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--port", type=int, default=29511)
    ap.add_argument("--out", default="/dev/stdout")
    a = ap.parse_args()
    tmp = a.out if a.out != "/dev/stdout" else os.path.join(os.environ.get("TMPDIR", "/tmp"), f"torch_gloo_{os.getpid()}.jsonl")
    mp.spawn(worker, args=(a.world, a.reps, a.port, tmp), nprocs=a.world)
    if a.out == "/dev/stdout":
        with open(tmp) as f:
            print(f.read(), end="")
        os.remove(tmp)
