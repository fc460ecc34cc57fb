package ddp

import (
	"slices"
	"strings"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/tree"
)

// Sharded holds parameters fully sharded over the members of a
// communicator (ZeRO stage 3, torch's FSDP): every member keeps only its
// shard of every leaf, so the parameters' memory, their gradients' and
// (with an optimizer over Shards) the optimizer state's are divided by
// the number of members N. Shard makes one; Gather gives a part of the
// model back whole where it is used.
//
// A leaf of s elements is flattened and zero-padded to N·⌈s/N⌉ elements,
// and member r keeps elements [r·⌈s/N⌉, (r+1)·⌈s/N⌉). Shards has the
// parameters' type with those 1-D shards as its leaves; it is the tree
// to differentiate and to update: the gradient of a loss that Gathers
// its parameters is, in Shards, this member's shard of the gradient
// averaged over the members (Gather's derivative reduce-scatters), so an
// elementwise optimizer over Shards (optim.Adam[P], SGD, ...) steps as it
// would on one device with the mean gradient. Shapes and the
// communicator are static: Sharded passes through Grad, Checkpoint and
// Compile as a tree whose only leaves are the shards.
type Sharded[P any] struct {
	// Shards is this member's shard of every leaf.
	Shards P
	// Shapes are the leaves' whole shapes, in tree order.
	Shapes [][]int
	// comm returns the communicator, pf the prefetcher (nil when its
	// Gathers do not prefetch): functions, so that the tree walk of the transforms
	// does not look into them.
	comm func() dist.Communicator
	pf   func() *prefetcher
}

// Shard returns this member's shards of params over comm's members
// (each member passes the same params, as after Broadcast; Shard checks
// it on concrete parameters, as ZeRO.Init does). Its Gathers prefetch
// (see Gather) as opts's Prefetch says, the one option it takes. It
// panics with *peel.Error when params is not a valid tree, comm is nil,
// the members' parameters differ, or an option is not Shard's.
func Shard[P any](params P, comm dist.Communicator, opts ...Option) Sharded[P] {
	const op = "ddp.Shard"
	defer peel.Annotate(op)
	if comm == nil {
		zeroErrorf(op, "the communicator is nil")
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if cfg != (config{prefetch: cfg.prefetch}) {
		zeroErrorf(op, "an option configures ddp.ValueAndGrad, not Shard: Shard takes Prefetch only")
	}
	var sc syncCheck
	sc.check(op, comm, params)
	leaves := tree.Leaves(params)
	n, rank := comm.Size(), comm.Rank()
	shards := make([]*peel.Tensor, len(leaves))
	shapes := make([][]int, len(leaves))
	for i, x := range leaves {
		shapes[i] = slices.Clone(x.Shape())
		s := shardLen(x.Size(), n)
		shards[i] = peel.Narrow(padFlat(x, s*n), 0, rank*s, s)
	}
	sp := Sharded[P]{Shards: tree.Unflatten(params, shards), Shapes: shapes, comm: func() dist.Communicator { return comm }}
	if cfg.prefetch > 0 || cfg.prefetch == 0 && dist.Overlapping(comm) {
		pf := &prefetcher{}
		sp.pf = func() *prefetcher { return pf }
	}
	return sp
}

// Gather returns the part of the parameters that sel selects, whole: the
// members' shards of its leaves all-gathered (one collective per dtype
// of the part) and put back in their shapes. sel picks a part of the
// parameters (a field, an element: func(p Model) Block { return
// p.Blocks[i] }) and must do nothing else; Gather applies it to Shards
// and to the whole shapes.
//
// Call Gather where the part is used, inside a transforms.Checkpoint of
// the computation that uses it, and only that part is whole at a time:
// its forward all-gathers it and drops it when done, and the backward
// pass all-gathers it again to recompute (torch FSDP's schedule).
// Outside a Checkpoint the whole part is saved for the backward pass, as
// in data-parallel training.
//
// Gathers prefetch, as torch FSDP's forward and backward prefetch do:
// from a Sharded value's second step on, each Gather, eager or in a
// compiled program, starts the all-gather of the part the step asks for
// next (in the order the previous step asked for them, the backward
// pass's recomputations included) before it returns, so the
// communication runs while the caller computes, and at most one part
// beyond the current one is whole. A step ends where its first part is
// asked for with updated values; nothing is prefetched across one, and a
// prefetched part whose shards were written since it started is
// gathered again, never used stale. The overlap needs the engine to
// advance a started collective while the process computes (over MPI, a
// progress thread: dist.Overlapping), so by default Gathers prefetch
// only on such a communicator; Shard's Prefetch option says otherwise.
//
// Gather's derivative (fsdp_all_gather's transpose) reduce-scatters the
// part's cotangent and divides it by N: a member's gradient in Shards is
// its shard of the mean, over the members, of their losses' gradients,
// as ValueAndGrad averages (each member's loss is the loss of its part
// of the batch). A leaf gathered several times (tied weights) sums its
// derivatives. Gather is a collective: every member calls it, with the
// same sel, in the same order. A Vmap inside the loss sees the gathered
// part unbatched; shards batched by a Vmap (an ensemble of sharded
// models) are refused. It panics with *peel.Error when sel does not
// select leaves of the parameters as they are (a computed value, another
// structure), or a collective fails.
func Gather[P, U any](sp Sharded[P], sel func(P) U) U {
	const op = "ddp.Gather"
	defer peel.Annotate(op)
	if sp.comm == nil {
		zeroErrorf(op, "the Sharded value has no communicator: make it with ddp.Shard")
	}
	leaves := tree.Leaves(sp.Shards)
	if len(leaves) != len(sp.Shapes) {
		zeroErrorf(op, "the shards have %d leaves but the Sharded value records %d shapes", len(leaves), len(sp.Shapes))
	}
	// The whole shapes in the parameters' structure, as views of a
	// scalar (nothing allocated), so that sel finds the part's shapes.
	shapes := make([]*peel.Tensor, len(leaves))
	for i, x := range leaves {
		shapes[i] = peel.BroadcastTo(peel.Zeros(x.DType()), sp.Shapes[i]...)
	}
	whole := tree.Leaves(sel(tree.Unflatten(sp.Shards, shapes)))
	partTree := sel(sp.Shards)
	mine := tree.Leaves(partTree)
	if len(mine) != len(whole) {
		zeroErrorf(op, "sel selects %d shards but %d whole leaves: it must select a part of the parameters, not compute one", len(mine), len(whole))
	}
	comm := sp.comm()
	n := comm.Size()
	index := make(map[*peel.Tensor]int, len(leaves))
	for i, x := range leaves {
		index[x] = i
	}
	isShape := make(map[*peel.Tensor]bool, len(shapes))
	for _, x := range shapes {
		isShape[x] = true
	}
	part := make([]int, len(mine))
	avals := make([]interp.Aval, len(mine))
	for j, x := range mine {
		i, isShard := index[x]
		if w := whole[j]; !isShard || !isShape[w] || x.Size() != shardLen(w.Size(), n) {
			zeroErrorf(op, "sel returns a %s that is not a leaf of the parameters: it must select a part of them (a field, an element), not compute one", x.TypeString())
		}
		part[j] = i
		avals[j] = interp.Aval{Shape: slices.Clone(whole[j].Shape()), DType: x.DType()}
	}
	p := &partParams{gatherer: newGatherer(comm, avals), part: part, key: partKey(part)}
	if sp.pf != nil {
		p.pf = sp.pf()
	}
	return tree.Unflatten(partTree, interp.Bind(fsdpPartPrim, p, leaves...))
}

// Unshard returns the whole parameters from every member's shards (to
// evaluate or save them): every leaf all-gathered. It is a collective.
// It panics with *peel.Error as Gather does.
func Unshard[P any](sp Sharded[P]) P {
	defer peel.Annotate("ddp.Unshard")
	return Gather(sp, func(p P) P { return p })
}

// UnshardState returns the whole form of a tree of shards of sp's
// parameters, such as an optimizer's state over sp.Shards (Adam's
// moments): every leaf whose path ends with a parameter's path and that
// has its shard's shape is all-gathered into the parameter's whole
// shape, padding left out; the other leaves (step counts) are returned
// as they are, equal on every member. Saved with Unshard's parameters
// (by one member, package checkpoint), it resumes training with Shard
// and ShardState in a job of the same or another number of members. It
// is a collective. It panics with *peel.Error when state is not a valid
// tree, or a collective fails.
func UnshardState[P, S any](sp Sharded[P], state S) S {
	const op = "ddp.UnshardState"
	defer peel.Annotate(op)
	return mapShardLeaves(op, sp, state, true)
}

// ShardState returns this member's shards of a whole tree (one that
// UnshardState returned, in this job or one of another number of
// members): every leaf whose path ends with a parameter's path and that
// has its whole shape is cut to this member's shard; the other leaves
// are returned as they are. It panics with *peel.Error when state is not
// a valid tree.
func ShardState[P, S any](sp Sharded[P], whole S) S {
	const op = "ddp.ShardState"
	defer peel.Annotate(op)
	return mapShardLeaves(op, sp, whole, false)
}

// mapShardLeaves gathers (gather) or cuts the leaves of t that stand for
// a parameter: the leaf whose path has the longest parameter path as its
// suffix, and the shard's shape (gather) or the whole shape (cut).
func mapShardLeaves[P, S any](op string, sp Sharded[P], t S, gather bool) S {
	if sp.comm == nil {
		zeroErrorf(op, "the Sharded value has no communicator: make it with ddp.Shard")
	}
	comm := sp.comm()
	n, rank := comm.Size(), comm.Rank()
	params := tree.Paths(sp.Shards)
	shards := tree.Leaves(sp.Shards)
	paths := tree.Paths(t)
	leaves := tree.Leaves(t)
	out := slices.Clone(leaves)
	for i, x := range leaves {
		k := -1
		for j, q := range params {
			if strings.HasSuffix(paths[i], q) && (k < 0 || len(q) > len(params[k])) {
				k = j
			}
		}
		if k < 0 || x.DType() != shards[k].DType() {
			continue
		}
		whole := sp.Shapes[k]
		size := 1
		for _, d := range whole {
			size *= d
		}
		s := shardLen(size, n)
		switch {
		case gather && x.Rank() == 1 && x.Shape()[0] == s:
			all := peel.Reshape(fsdpGather(comm, x), -1)
			out[i] = peel.Reshape(peel.Narrow(all, 0, 0, size), whole...)
		case !gather && slices.Equal(x.Shape(), whole):
			out[i] = peel.Narrow(padFlat(x, s*n), 0, rank*s, s)
		}
	}
	return tree.Unflatten(t, out)
}

// ClipByGlobalNorm is optim.ClipByGlobalNorm for fully sharded
// gradients (the Shards of a Sharded gradient): every member scales its
// shards by maxNorm/‖g‖ when the norm of the whole mean gradient, over
// every member's shards, is at least maxNorm (the members' sums of
// squares all-gathered and added in rank order, so every member scales
// by the same factor; padding adds nothing). Chained before an optimizer
// over the shards (optim.Chain(ddp.ClipByGlobalNorm[Model](1, comm),
// optim.AdamW[Model](...))), the step equals the unsharded chain's. It
// is a collective. It panics with *peel.Error as optim.ClipByGlobalNorm
// does, and when comm is nil.
func ClipByGlobalNorm[P any](maxNorm float64, comm dist.Communicator) optim.Transformation[P] {
	if comm == nil {
		zeroErrorf("ddp.ClipByGlobalNorm", "the communicator is nil")
	}
	return optim.ClipByGlobalNormOver[P](maxNorm, func(sq *peel.Tensor) *peel.Tensor {
		return peel.Sum(fsdpGather(comm, sq))
	})
}

// gatherer all-gathers shards of leaves of the whole types whole, and
// reduce-scatters their cotangents.
type gatherer struct {
	comm   dist.Communicator
	whole  []interp.Aval
	groups [][]int // the indices of whole grouped by dtype, in the order of each dtype's first leaf
}

func newGatherer(comm dist.Communicator, whole []interp.Aval) gatherer {
	g := gatherer{comm: comm, whole: whole}
	at := map[peel.DType]int{}
	for i, w := range whole {
		k, ok := at[w.DType]
		if !ok {
			k = len(g.groups)
			at[w.DType] = k
			g.groups = append(g.groups, nil)
		}
		g.groups[k] = append(g.groups[k], i)
	}
	return g
}

// gather all-gathers the shards of each dtype together (one
// fsdp_all_gather per dtype) and cuts the leaves out.
func (g gatherer) gather(shards []*peel.Tensor) []*peel.Tensor {
	cats := g.concats(shards)
	for k, c := range cats {
		cats[k] = fsdpGather(g.comm, c)
	}
	return g.cut(cats)
}

// concats returns the concatenation of the shards of each dtype, in the
// order of each dtype's first leaf.
func (g gatherer) concats(shards []*peel.Tensor) []*peel.Tensor {
	cats := make([]*peel.Tensor, len(g.groups))
	for k, idx := range g.groups {
		parts := make([]*peel.Tensor, len(idx))
		for j, i := range idx {
			parts[j] = shards[i]
		}
		cats[k] = peel.Concat(parts, 0)
	}
	return cats
}

// cut cuts the leaves out of the all-gathered concatenations, [N, Σ s]
// for each dtype.
func (g gatherer) cut(alls []*peel.Tensor) []*peel.Tensor {
	n := g.comm.Size()
	out := make([]*peel.Tensor, len(g.whole))
	for k, idx := range g.groups {
		off := 0
		for _, i := range idx {
			w := g.whole[i]
			size := w.Size()
			s := shardLen(size, n)
			flat := peel.Reshape(peel.Narrow(alls[k], 1, off, s), -1)
			out[i] = peel.Reshape(peel.Narrow(flat, 0, 0, size), w.Shape...)
			off += s
		}
	}
	return out
}

// Gather's collectives as primitives. fsdp_all_gather is ddp_all_gather
// with derivative rules: linear, its tangent is the all-gather of the
// tangent, and its transpose is fsdp_mean_scatter, the reduce-scatter of
// the cotangent divided by the number of members (the derivative of the
// mean of the members' losses). Being primitives of the graph, not a
// custom rule, a Checkpoint recomputes an all-gather like any other
// value it does not save, so a checkpointed part is gathered again in the
// backward pass instead of being kept whole. Both are effects: no
// compiler pass folds, merges or drops them.
var (
	fsdpGatherPrim = interp.NewPrim("fsdp_all_gather", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
		return []interp.Aval{params.(collParams).aval}
	})
	fsdpScatterPrim = interp.NewPrim("fsdp_mean_scatter", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
		return []interp.Aval{params.(collParams).aval}
	})
)

func init() {
	fsdpGatherPrim.Effect = true
	fsdpGatherPrim.EvalImpl = func(params any, args []*interp.Tensor) []*interp.Tensor {
		return []*interp.Tensor{params.(collParams).comm.AllGather(args[0])}
	}
	fsdpGatherPrim.JVP = func(params any, primals, tangents []*interp.Tensor) ([]*interp.Tensor, []*interp.Tensor) {
		out := interp.Bind(fsdpGatherPrim, params, primals[0])
		if tangents[0] == nil {
			return out, []*interp.Tensor{nil}
		}
		return out, interp.Bind(fsdpGatherPrim, params, tangents[0])
	}
	fsdpGatherPrim.Linear = []bool{true}
	fsdpGatherPrim.Transpose = func(params any, cts, args []*interp.Tensor, linear []bool) []*interp.Tensor {
		p := params.(collParams)
		return []*interp.Tensor{meanScatter(p.comm, cts[0])}
	}
	fsdpScatterPrim.Effect = true
	fsdpScatterPrim.EvalImpl = func(params any, args []*interp.Tensor) []*interp.Tensor {
		c := params.(collParams).comm
		return []*interp.Tensor{c.ReduceScatter(args[0]).Div(float64(c.Size()))}
	}
	fsdpScatterPrim.JVP = func(params any, primals, tangents []*interp.Tensor) ([]*interp.Tensor, []*interp.Tensor) {
		out := interp.Bind(fsdpScatterPrim, params, primals[0])
		if tangents[0] == nil {
			return out, []*interp.Tensor{nil}
		}
		return out, interp.Bind(fsdpScatterPrim, params, tangents[0])
	}
}

// fsdpGather binds fsdp_all_gather: the members' x stacked along a new
// leading axis.
func fsdpGather(comm dist.Communicator, x *peel.Tensor) *peel.Tensor {
	a := interp.AvalOf(x)
	return interp.Bind1(fsdpGatherPrim, collParams{comm, interp.Aval{Shape: append([]int{comm.Size()}, a.Shape...), DType: a.DType}}, x)
}

// meanScatter binds fsdp_mean_scatter: x has a leading axis of
// comm.Size() blocks; the result is the mean over the members of block
// Rank.
func meanScatter(comm dist.Communicator, x *peel.Tensor) *peel.Tensor {
	a := interp.AvalOf(x)
	return interp.Bind1(fsdpScatterPrim, collParams{comm, interp.Aval{Shape: slices.Clone(a.Shape[1:]), DType: a.DType}}, x)
}

// shardLen is the elements of each member's shard of a leaf of size
// elements over n members: size/n rounded up.
func shardLen(size, n int) int { return (size + n - 1) / n }

// padFlat returns x flattened and zero-padded to total elements.
func padFlat(x *peel.Tensor, total int) *peel.Tensor {
	flat := peel.Reshape(x, -1)
	if pad := total - x.Size(); pad > 0 {
		flat = peel.Concat([]*peel.Tensor{flat, peel.Zeros(x.DType(), pad)}, 0)
	}
	return flat
}
