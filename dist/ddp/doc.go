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
//
// Shard and Gather are ZeRO stage 3 (torch's FullyShardedDataParallel):
// every member keeps only its shard of every parameter, so parameters,
// gradients and an optimizer's state over the shards all take 1/N of the
// memory. The loss takes the Sharded parameters and Gathers each part
// where it uses it, inside a transforms.Checkpoint so that only that part
// is whole at a time (the backward pass gathers it again):
//
//	sp := ddp.Shard(params, world) // this member's shards
//	loss := func(sp ddp.Sharded[Model], x, y *peel.Tensor) *peel.Tensor {
//		h := x
//		for i := range len(sp.Shapes) / 2 { // a Block per layer
//			h = transforms.Checkpoint(func(a tree.Tuple2[ddp.Sharded[Model], *peel.Tensor]) *peel.Tensor {
//				b := ddp.Gather(a.V0, func(m Model) Block { return m.Blocks[i] })
//				return b.Apply(a.V1)
//			}, transforms.NothingSaveable)(tree.Pack2(sp, h))
//		}
//		return nn.CrossEntropy(h, y)
//	}
//	opt := optim.Adam[Model](1e-3)
//	state := opt.Init(sp.Shards) // Adam's moments of the shards only
//	for ... {
//		g := transforms.Grad3(loss)(sp, x, y) // g.Shards: this member's shard of the mean gradient
//		u, next := opt.Update(g.Shards, state, sp.Shards)
//		sp.Shards, state = optim.ApplyUpdates(sp.Shards, u), next
//	}
//
// Gather is the all-gather of the part's shards (fsdp_all_gather, one
// collective per dtype of the part), whose transpose reduce-scatters the
// part's gradient (fsdp_mean_scatter, the mean over the members), so the
// step is eager or compiled as written. Optimizers see the shards with
// the parameters' paths, so weight-decay masks by path hold; global-norm
// clipping needs the norm of the whole gradient, which ClipByGlobalNorm
// computes across the members. Unshard gives the whole
// parameters (to evaluate or save), UnshardState and ShardState an
// optimizer's state whole and back, for checkpoints that resume on
// another number of members.
package ddp
