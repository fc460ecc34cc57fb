"""The peer of mpibench's ddp_mlp_step workloads: one data-parallel
training step (forward, backward, SGD) of a 784-1024-1024-10 ReLU MLP
in float32, batch 256 per rank, under torch's DistributedDataParallel
with the gloo backend (default buckets: 25 MB, and a first bucket of
1 MB), each rank on one intra-op thread, as `world` processes on this
machine. Prints one JSON record per line (peelbench's format), the
slowest rank's median time per step over samples of `steps` steps.

    /usr/bin/python3 bench/peers/torch_ddp_step.py --world 2 [--reps 7 --steps 10]
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world, reps, steps, port, out):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 10))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(rank)
    x = torch.rand(256, 784, generator=g)
    y = torch.arange(256) % 10
    loss_fn = torch.nn.CrossEntropyLoss()
    samples = []
    for s in range(reps + 1):  # the first sample warms up
        dist.barrier()
        t = time.perf_counter()
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            loss_fn(ddp(x), y).backward()
            opt.step()
        ns = torch.tensor([(time.perf_counter() - t) * 1e9 / steps], dtype=torch.float64)
        dist.all_reduce(ns, op=dist.ReduceOp.MAX)
        if s > 0:
            samples.append(ns.item())
    if rank == 0:
        samples.sort()
        med = statistics.median(samples)
        rec = {"workload": f"ddp_mlp_step_{world}rank", "impl": "torch", "threads": 1,
               "median_ns": med, "min_ns": samples[0], "max_ns": samples[-1],
               "metric": med / 1e6, "unit": "ms/step", "allocs": -1, "reps": len(samples)}
        with open(out, "w") as f:
            f.write(json.dumps(rec) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--port", type=int, default=29512)
    ap.add_argument("--out", default="/dev/stdout")
    a = ap.parse_args()
    tmp = a.out if a.out != "/dev/stdout" else os.path.join(os.environ.get("TMPDIR", "/tmp"), f"torch_ddp_{os.getpid()}.jsonl")
    mp.spawn(worker, args=(a.world, a.reps, a.steps, a.port, tmp), nprocs=a.world)
    if a.out == "/dev/stdout":
        with open(tmp) as f:
            print(f.read(), end="")
        os.remove(tmp)
