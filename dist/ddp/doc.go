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
package ddp
