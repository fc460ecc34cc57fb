"""The peer of peelbench's psum_<size>_2dev workloads: torch.distributed's
all_reduce (sum, gloo backend) of a float32 tensor of each size across
two processes on this machine, the median of repeated calls after a
warm-up, printed as time per call and GB/s of one process's operand.

    /usr/bin/python3 bench/peers/torch_gloo_allreduce.py [--reps 50]
"""
import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = [1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 26]


def worker(rank, reps, port):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    for size in SIZES:
        x = torch.ones(size // 4, dtype=torch.float32)
        n = max(3, min(reps, (1 << 28) // size))
        times = []
        for i in range(n + 2):
            dist.barrier()
            t = time.perf_counter()
            dist.all_reduce(x)
            if i >= 2:
                times.append(time.perf_counter() - t)
        m = statistics.median(times)
        if rank == 0:
            print(f"psum_{size >> 20}mb_2dev" if size >= 1 << 20 else f"psum_{size >> 10}kb_2dev",
                  f"torch gloo all_reduce: {m * 1e6:.1f} us, {size / m / 1e9:.3g} GB/s")
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=50)
    a = ap.parse_args()
    mp.spawn(worker, args=(a.reps, 29511), nprocs=2)
