package ddp

import (
	"slices"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/tree"
)

// ZeRO is a ZeRO stage 1 optimizer over the members of a
// dist.Communicator (DeepSpeed's ZeRO-1, torch's
// ZeroRedundancyOptimizer): every member holds the whole parameters but
// only its 1/N of the optimizer state (N members), so the state's memory
// per member is divided by N. ShardOptimizer makes one.
//
// The parameters of each dtype are flattened, in tree order, into one
// vector, padded with zeros to a multiple of N and cut into N equal
// shards; member r owns shard r and keeps the wrapped optimizer's state
// for it only. Step reduce-scatters the members' gradients (each member
// receives the mean over the members of its shard), updates its shard of
// the parameters with the wrapped optimizer and its shard of the state,
// and all-gathers the updated shards, so every member ends the step with
// the same whole parameters: those the wrapped optimizer gives on one
// device with the mean gradient. The communication is one reduce-scatter
// and one all-gather per dtype and step, the same volume as the
// all-reduce of data-parallel training.
//
// The wrapped optimizer sees one flat tensor per dtype, the shard, so it
// must be elementwise: each element's update depends only on that
// element's gradient, parameter and state (SGD with or without
// momentum, Adam, AdamW without a weight-decay mask, RMSProp, Adagrad,
// Lion, Clip, schedules of the step count). Transformations that look
// across elements or leaves are not equal sharded: ClipByGlobalNorm
// would clip by the norm of this member's shard, and per-layer trust
// ratios, or masks and options chosen by a leaf's path (WeightDecayMask),
// have no leaves to see. Clip such gradients before Step (the global
// norm of the mean gradient needs its all-reduce).
//
// A ZeRO holds only its optimizer and communicator; members must call
// Init and Step in the same order with parameters of the same structure.
type ZeRO[P any] struct {
	opt  optim.Transformation[*peel.Tensor]
	comm dist.Communicator
}

// ZeROState is a ZeRO optimizer's state on one member: for each dtype of
// the parameters, in the order of its first leaf, the wrapped
// optimizer's state for this member's shard of that dtype's flattened
// parameters (tensors of ShardSize elements, and the optimizer's step
// counts). It is a tree of tensors, so a compiled step takes and returns
// it.
type ZeROState []optim.State

// ShardOptimizer returns the ZeRO stage 1 optimizer that runs opt, an
// elementwise optimizer over one flat tensor (such as
// optim.Adam[*peel.Tensor](1e-3)), on this member's shard of the
// parameters, over the members of comm:
//
//	z := ddp.ShardOptimizer[Params](optim.Adam[*peel.Tensor](1e-3), comm)
//	state := z.Init(params) // this member's shard of the state
//	for ... {
//		grads := transforms.Grad3(loss)(params, x, y) // this member's part of the batch
//		params, state = z.Step(params, grads, state)
//	}
//
// It panics with *peel.Error when opt or comm is nil.
func ShardOptimizer[P any](opt optim.Transformation[*peel.Tensor], comm dist.Communicator) *ZeRO[P] {
	const op = "ddp.ShardOptimizer"
	if opt == nil {
		interp.Panicf("%s: the optimizer is nil", op)
	}
	if comm == nil {
		interp.Panicf("%s: the communicator is nil", op)
	}
	return &ZeRO[P]{opt: opt, comm: comm}
}

// Init returns this member's state for params: the wrapped optimizer's
// Init of this member's shard of each dtype's flattened parameters. On
// concrete parameters it checks, with one all-gather of a fingerprint
// per leaf, that every member passes the same ones: each member keeps
// the shard of its own copy, so copies that differ would be mixed
// silently. It panics with *peel.Error when params is not a valid tree,
// when the members' parameters differ (naming the leaf; Broadcast puts
// one member's on every member), and as the wrapped optimizer's Init
// does.
func (z *ZeRO[P]) Init(params P) ZeROState {
	const op = "ddp.ZeRO.Init"
	defer peel.Annotate(op)
	var sc syncCheck
	sc.check(op, z.comm, params)
	leaves := tree.Leaves(params)
	n, rank := z.comm.Size(), z.comm.Rank()
	groups := shardLayout(leaves, n)
	state := make(ZeROState, len(groups))
	for k, g := range groups {
		state[k] = z.opt.Init(g.shardOf(leaves, n, rank))
	}
	return state
}

// Step returns the parameters after one step of the wrapped optimizer
// with the gradient averaged over the members, and this member's next
// state. grads is this member's own gradient (of its part of the batch,
// not all-reduced: Step reduces it), of params' structure, shapes and
// dtypes; state is the one Init or the previous Step returned.
//
// The reduce-scatter and the all-gather are effect primitives
// (ddp_reduce_scatter, ddp_all_gather), so Step runs eagerly and under
// transforms.Compile, where they are equations of the program run in
// the order traced. It is not differentiable or vmappable. It panics with
// *peel.Error when grads differs from params in structure, shape or
// dtype, when state does not have a state per dtype of params, as the
// wrapped optimizer's Update does, and when a collective fails.
func (z *ZeRO[P]) Step(params, grads P, state ZeROState) (P, ZeROState) {
	const op = "ddp.ZeRO.Step"
	defer peel.Annotate(op)
	if ok, diff := tree.SameStructure(params, grads); !ok {
		zeroErrorf(op, "the gradients differ from the parameters in structure: %s", diff)
	}
	pl, gl := tree.Leaves(params), tree.Leaves(grads)
	paths := tree.Paths(params)
	for i, p := range pl {
		if g := gl[i]; g.DType() != p.DType() || !slices.Equal(g.Shape(), p.Shape()) {
			zeroErrorf(op, "parameter %s is %s but its gradient is %s", paths[i], p.TypeString(), g.TypeString())
		}
	}
	n, rank := z.comm.Size(), z.comm.Rank()
	groups := shardLayout(pl, n)
	if len(state) != len(groups) {
		zeroErrorf(op, "the state holds %d shard states, but the parameters have %d dtypes (%s): not the state Init returned for them", len(state), len(groups), dtypesOf(groups))
	}
	out := slices.Clone(pl)
	next := make(ZeROState, len(groups))
	for k, g := range groups {
		mean := reduceScatter(z.comm, g.flat(gl, n).Reshape(n, g.shard)).Div(float64(n))
		p := g.shardOf(pl, n, rank)
		u, st := z.opt.Update(mean, state[k], p)
		next[k] = st
		if !slices.Equal(u.Shape(), p.Shape()) {
			zeroErrorf(op, "the optimizer's update of a %s shard is %s (it must be elementwise)", p.TypeString(), u.TypeString())
		}
		whole := allGather(z.comm, optim.ApplyUpdates(p, u)).Reshape(-1)
		off := 0
		for _, i := range g.leaves {
			size := pl[i].Size()
			out[i] = peel.Narrow(whole, 0, off, size).Reshape(pl[i].Shape()...)
			off += size
		}
	}
	return tree.Unflatten(params, out), next
}

// ShardSize returns the number of elements of each dtype's shard that
// every member holds (in ZeROState's order): the dtype's parameter count
// divided by the number of members, rounded up. It panics with
// *peel.Error when params is not a valid tree.
func (z *ZeRO[P]) ShardSize(params P) []int {
	groups := shardLayout(tree.Leaves(params), z.comm.Size())
	sizes := make([]int, len(groups))
	for k, g := range groups {
		sizes[k] = g.shard
	}
	return sizes
}

// shardGroup is the parameters of one dtype, flattened together.
type shardGroup struct {
	dt     peel.DType
	leaves []int // indices of the leaves, in tree order
	size   int   // their elements
	shard  int   // elements per member: size/n rounded up
}

// shardLayout groups leaves by dtype, in the order of each dtype's first
// leaf. A dtype with no elements (only empty leaves) has no group: its
// leaves are returned as they are.
func shardLayout(leaves []*peel.Tensor, n int) []shardGroup {
	var groups []shardGroup
	at := map[peel.DType]int{}
	for i, x := range leaves {
		if x.Size() == 0 {
			continue
		}
		k, ok := at[x.DType()]
		if !ok {
			k = len(groups)
			at[x.DType()] = k
			groups = append(groups, shardGroup{dt: x.DType()})
		}
		groups[k].leaves = append(groups[k].leaves, i)
		groups[k].size += x.Size()
	}
	for k := range groups {
		groups[k].shard = shardLen(groups[k].size, n)
	}
	return groups
}

// flat returns g's leaves of ls flattened into one vector, padded with
// zeros to n shards.
func (g shardGroup) flat(ls []*peel.Tensor, n int) *peel.Tensor {
	parts := make([]*peel.Tensor, len(g.leaves))
	for j, i := range g.leaves {
		parts[j] = ls[i].Reshape(-1)
	}
	return padFlat(peel.Concat(parts, 0), g.shard*n)
}

// shardOf returns shard rank of g's leaves of ls.
func (g shardGroup) shardOf(ls []*peel.Tensor, n, rank int) *peel.Tensor {
	return peel.Narrow(g.flat(ls, n), 0, rank*g.shard, g.shard)
}

// zeroErrorf panics with an *peel.Error of the ZeRO operation op.
func zeroErrorf(op, format string, args ...any) {
	e := interp.Errorf(format, args...)
	e.Ops = []string{op}
	panic(e)
}

func dtypesOf(groups []shardGroup) string {
	s := ""
	for k, g := range groups {
		if k > 0 {
			s += ", "
		}
		s += g.dt.String()
	}
	return s
}

// The blocking collectives of a ZeRO step as effect primitives, as
// allreduce_start and allreduce_wait are (prims.go): eagerly each is
// answered by its communicator when bound, under transforms.Compile it
// is an equation of the program, never folded, merged or dropped. They
// have no derivative or batching rule.

// collParams are a ZeRO collective's parameters: its communicator, and
// the result's type.
type collParams struct {
	comm dist.Communicator
	aval interp.Aval
}

func (p collParams) String() string { return p.aval.String() }

// reduceScatterPrim takes a leading axis of Size blocks and returns the
// sum over the members of block Rank (Communicator.ReduceScatter).
var reduceScatterPrim = interp.NewPrim("ddp_reduce_scatter", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
	return []interp.Aval{params.(collParams).aval}
})

// allGatherPrim returns the members' operands stacked along a new
// leading axis (Communicator.AllGather).
var allGatherPrim = interp.NewPrim("ddp_all_gather", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
	return []interp.Aval{params.(collParams).aval}
})

// The operand is the communicator's to keep: the in-process engine's
// members read each other's operands after the rendezvous. A compiled
// program hands an effect copies of its arena buffers (see
// compiler.Program), and an eager operand is an immutable tensor.
func init() {
	reduceScatterPrim.Effect = true
	reduceScatterPrim.EvalImpl = func(params any, args []*interp.Tensor) []*interp.Tensor {
		return []*interp.Tensor{params.(collParams).comm.ReduceScatter(args[0])}
	}
	allGatherPrim.Effect = true
	allGatherPrim.EvalImpl = func(params any, args []*interp.Tensor) []*interp.Tensor {
		return []*interp.Tensor{params.(collParams).comm.AllGather(args[0])}
	}
}

// reduceScatter binds ddp_reduce_scatter: x has a leading axis of
// comm.Size() blocks.
func reduceScatter(comm dist.Communicator, x *peel.Tensor) *peel.Tensor {
	a := interp.AvalOf(x)
	if len(a.Shape) == 0 || a.Shape[0] != comm.Size() {
		interp.Panicf("ddp_reduce_scatter: the operand %s needs a leading axis of %d blocks (rank %d of %d)", a, comm.Size(), comm.Rank(), comm.Size())
	}
	return interp.Bind1(reduceScatterPrim, collParams{comm, interp.Aval{Shape: slices.Clone(a.Shape[1:]), DType: a.DType}}, x)
}

// allGather binds ddp_all_gather.
func allGather(comm dist.Communicator, x *peel.Tensor) *peel.Tensor {
	a := interp.AvalOf(x)
	return interp.Bind1(allGatherPrim, collParams{comm, interp.Aval{Shape: append([]int{comm.Size()}, a.Shape...), DType: a.DType}}, x)
}

// GatherState returns the whole optimizer state from every member's
// shard: for each dtype of the parameters, the wrapped optimizer's state
// as it would be over that dtype's whole flattened parameters (each
// leaf of a shard's ShardSize elements all-gathered, its padding left
// out; the other leaves, the step counts, as they are: equal on every
// member). Every member gets it; one (rank 0) saves it with the
// parameters (package checkpoint), and ScatterState resumes from it, in
// a job of the same or another number of members. Every member calls it
// with the same parameters structure. It panics with *peel.Error when
// state is not a state of these parameters, or a collective fails.
func (z *ZeRO[P]) GatherState(params P, state ZeROState) ZeROState {
	const op = "ddp.ZeRO.GatherState"
	defer peel.Annotate(op)
	n := z.comm.Size()
	groups := z.layoutFor(op, params, state)
	whole := make(ZeROState, len(groups))
	for k, g := range groups {
		whole[k] = tree.Map(func(x *peel.Tensor) *peel.Tensor {
			if x.Rank() != 1 || x.Shape()[0] != g.shard {
				return x
			}
			all := x
			if n > 1 {
				all = peel.Reshape(z.comm.AllGather(x), -1)
			}
			return peel.Narrow(all, 0, 0, g.size)
		}, state[k])
	}
	return whole
}

// ScatterState returns this member's shard of a whole state (the one
// GatherState returned, in this job or one of another number of
// members, read back from a checkpoint): each leaf of a dtype's whole
// flattened size cut to this member's shard, padding included, the
// others as they are. It communicates nothing. It panics with
// *peel.Error when whole is not a whole state of these parameters.
func (z *ZeRO[P]) ScatterState(params P, whole ZeROState) ZeROState {
	const op = "ddp.ZeRO.ScatterState"
	defer peel.Annotate(op)
	n, rank := z.comm.Size(), z.comm.Rank()
	groups := shardLayout(tree.Leaves(params), n)
	if len(whole) != len(groups) {
		zeroErrorf(op, "the state holds %d dtypes' states, but the parameters have %d dtypes (%s)", len(whole), len(groups), dtypesOf(groups))
	}
	state := make(ZeROState, len(groups))
	for k, g := range groups {
		state[k] = tree.Map(func(x *peel.Tensor) *peel.Tensor {
			if x.Rank() != 1 || x.Shape()[0] != g.size {
				return x
			}
			if pad := g.shard*n - g.size; pad > 0 {
				x = peel.Concat([]*peel.Tensor{x, peel.Zeros(x.DType(), pad)}, 0)
			}
			return peel.Clone(peel.Narrow(x, 0, rank*g.shard, g.shard))
		}, whole[k])
	}
	return state
}

// layoutFor returns params' shard layout, checking that state has a
// state per dtype.
func (z *ZeRO[P]) layoutFor(op string, params P, state ZeROState) []shardGroup {
	groups := shardLayout(tree.Leaves(params), z.comm.Size())
	if len(state) != len(groups) {
		zeroErrorf(op, "the state holds %d shard states, but the parameters have %d dtypes (%s): not the state Init returned for them", len(state), len(groups), dtypesOf(groups))
	}
	return groups
}
