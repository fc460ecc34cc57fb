// Package ddp is data-parallel training over a dist.Communicator, as
// torch's DistributedDataParallel does it: every member (a process of an
// MPI job, or a device of an in-process mesh) holds the same parameters
// and its own part of each batch, and ValueAndGrad returns the gradient
// averaged over the members, all-reduced in buckets while the backward
// pass still runs:
//
//	world := dist.World() // the processes mpirun started (build tag mpi)
//	grad := ddp.ValueAndGrad3(loss, world)
//	step := transforms.Compile3(func(p Params, x, y *peel.Tensor) tree.Tuple2[Params, *peel.Tensor] {
//		l, g := grad(p, x, y)
//		return tree.Pack2(sgd(p, g), l)
//	})
//
// Each parameter leaf's gradient joins a bucket when the backward pass
// completes it (a transforms.Hook on the leaf, which the backward sweep
// runs as soon as the gradient exists), and a full bucket's all-reduce
// starts at once (Communicator.IAllReduce): the reduction of the last
// layers' gradients runs while the first layers' backward pass computes.
// The communication is primitives of the program (allreduce_start,
// allreduce_wait), so a compiled step runs the same schedule.
//
// Compared with dist.Pmean inside transforms.ShardMap (the JAX way, see
// examples/ddp), ValueAndGrad needs no mesh or specs and overlaps the
// reduction with the backward pass; both give the same numbers.
//
// ShardOptimizer is ZeRO stage 1 (DeepSpeed's ZeRO-1, torch's
// ZeroRedundancyOptimizer): every member keeps only its 1/N of the
// optimizer state. Each step takes the members' own gradients (not
// all-reduced), reduce-scatters them, so each member gets the mean
// gradient of its shard of the flattened parameters, updates that shard
// with the wrapped optimizer, and all-gathers the updated shards:
//
//	z := ddp.ShardOptimizer[Params](optim.Adam[*peel.Tensor](1e-3), world)
//	state := z.Init(params) // this member's shard of Adam's moments
//	for ... {
//		params, state = z.Step(params, transforms.Grad3(loss)(params, x, y), state)
//	}
//
// The result is the wrapped optimizer's on one device with the mean
// gradient, for optimizers that act element by element (SGD, momentum,
// Adam, AdamW, RMSProp, ...); transformations that look across elements
// or leaves (global-norm clipping, per-layer trust ratios, masks by
// path) are not equal sharded. The collectives are effect primitives
// too (ddp_reduce_scatter, ddp_all_gather), so a compiled step runs them.
package ddp
