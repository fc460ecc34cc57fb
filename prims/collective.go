package prims

import (
	"fmt"
	"strings"

	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

// The collective family: reductions and exchanges over named axes (JAX's
// psum, pmax, pmin, all_gather, psum_scatter, all_to_all, ppermute).
//
// A collective is applied by every lane of a named Vmap, or every device
// of a ShardMap, to its own operand x_i (i the lane's or device's index
// along the axis, n the axis size), and means:
//
//	psum          every i gets Σ_k x_k
//	pmax, pmin    every i gets max_k x_k (min)
//	all_gather    every i gets the x_k stacked along Dim (tiled: concatenated)
//	psum_scatter  i gets block i along Dim of Σ_k x_k (the transpose of all_gather)
//	all_to_all    i gets block i along Split of every x_k, concatenated along Concat in k's order
//	ppermute      i gets x_k for each pair (k, i) of Perm, zeros when no pair ends at i
//
// The names are resolved from the operand's levels, innermost first (a
// named batching level, a ShardMap body's trace, carry their frames),
// else from the frames of the calling goroutine (LookupAxesOf). Who
// answers them: a batching level whose axis name they name reduces
// or exchanges across its batch (package batching's named rules); a
// device binding the name for its goroutine (interp.AxisFrame.Device, a
// Device) communicates with the others (Eval runs EvalImpl). A value
// that does not vary along the axis (a constant, a value of an
// enclosing transform) is first made a value of the axis's level
// (BindCollective), so a collective is never answered by a level that
// does not see the axis.
//
// Derivatives follow the per-lane (SPMD) reading of the program, in
// which every value may vary along the axis: each collective is linear,
// and its transpose is the collective that sends every cotangent back
// where its value came from: psum's is psum (each x_k contributes to
// every lane's sum, so it receives the sum of their cotangents),
// all_gather's is psum_scatter and psum_scatter's all_gather,
// all_to_all's is all_to_all with Split and Concat exchanged, and
// ppermute's is ppermute with every pair reversed. pmax and pmin are
// differentiated as reduce_max: the tangent is the mean of the tangents
// at the lanes that attain the extremum.

// CollectiveParams are the parameters of psum, pmax and pmin: the axis
// names reduced over and their sizes (resolved when the collective was
// applied, from the bindings of the names).
type CollectiveParams struct {
	Axes  []string
	Sizes []int
}

func (p CollectiveParams) String() string {
	return fmt.Sprintf("axes=%v sizes=%v", p.Axes, p.Sizes)
}

// GatherParams are the parameters of all_gather and psum_scatter: the
// axis name and its size, the array axis Dim the pieces are stacked at
// (all_gather: a new axis of size Size; psum_scatter: an axis of size
// Size, removed), or, when Tiled, concatenated along (all_gather: Dim
// grows Size times; psum_scatter: Dim shrinks Size times).
type GatherParams struct {
	Axis  string
	Size  int
	Dim   int
	Tiled bool
}

func (p GatherParams) String() string {
	return fmt.Sprintf("axis=%s size=%d dim=%d tiled=%v", p.Axis, p.Size, p.Dim, p.Tiled)
}

// AllToAllParams are the parameters of all_to_all: the axis name and its
// size, the array axis Split cut into Size blocks (block i goes to lane
// i) and the array axis Concat the received blocks are concatenated
// along.
type AllToAllParams struct {
	Axis          string
	Size          int
	Split, Concat int
}

func (p AllToAllParams) String() string {
	return fmt.Sprintf("axis=%s size=%d split=%d concat=%d", p.Axis, p.Size, p.Split, p.Concat)
}

// PermuteParams are the parameters of ppermute: the axis name and its
// size, and the (source, destination) pairs: sources distinct,
// destinations distinct, each in [0, Size).
type PermuteParams struct {
	Axis string
	Size int
	Perm [][2]int
}

func (p PermuteParams) String() string {
	return fmt.Sprintf("axis=%s size=%d perm=%v", p.Axis, p.Size, p.Perm)
}

// Inverse returns the parameters of the permutation that sends every
// value back (each pair reversed): ppermute's transpose.
func (p PermuteParams) Inverse() PermuteParams {
	inv := make([][2]int, len(p.Perm))
	for i, pr := range p.Perm {
		inv[i] = [2]int{pr[1], pr[0]}
	}
	return PermuteParams{Axis: p.Axis, Size: p.Size, Perm: inv}
}

// A Device answers the collectives over the axes it binds for its
// goroutine (interp.AxisFrame.Device): package dist's devices implement
// it over a communicator.
type Device interface {
	// Collective applies collective p over one axis (params name it) to
	// the device's operand x and returns the device's result. It panics
	// with *interp.Error when the devices disagree (shapes, dtypes) or
	// one of them failed.
	Collective(p *interp.Prim, params any, x *interp.Tensor) *interp.Tensor
}

func reduction1(name string) *interp.Prim {
	p := graphio.Params[CollectiveParams](interp.NewPrim(name, interp.Pure, func(params any, in []aval) []aval {
		checkArity(in, 1)
		checkClass(numeric, in[0])
		cp := params.(CollectiveParams)
		if len(cp.Axes) == 0 || len(cp.Axes) != len(cp.Sizes) {
			interp.Panicf("%s needs one size per axis name (axes %v, sizes %v)", name, cp.Axes, cp.Sizes)
		}
		return one(in[0])
	}))
	return p
}

// The collectives (see the family's comment).
var (
	Psum        = reduction1("psum")
	Pmax        = reduction1("pmax")
	Pmin        = reduction1("pmin")
	AllGather   = graphio.Params[GatherParams](interp.NewPrim("all_gather", interp.Pure, allGatherAbstract))
	PsumScatter = graphio.Params[GatherParams](interp.NewPrim("psum_scatter", interp.Pure, psumScatterAbstract))
	AllToAll    = graphio.Params[AllToAllParams](interp.NewPrim("all_to_all", interp.Pure, allToAllAbstract))
	Ppermute    = graphio.Params[PermuteParams](interp.NewPrim("ppermute", interp.Pure, ppermuteAbstract))
)

// Collectives lists the collective primitives.
var Collectives = []*interp.Prim{Psum, Pmax, Pmin, AllGather, PsumScatter, AllToAll, Ppermute}

func checkSize(name string, size int) {
	if size <= 0 {
		interp.Panicf("the size of axis %q is %d", name, size)
	}
}

func allGatherAbstract(params any, in []aval) []aval {
	checkArity(in, 1)
	p := params.(GatherParams)
	checkSize(p.Axis, p.Size)
	s := in[0].Shape
	if p.Tiled {
		checkAxis(p.Dim, len(s))
		out := append([]int(nil), s...)
		out[p.Dim] *= p.Size
		return one(aval{Shape: out, DType: in[0].DType})
	}
	if p.Dim < 0 || p.Dim > len(s) {
		interp.Panicf("all_gather dimension %d is out of range for rank %d (a new axis goes at 0…%d)", p.Dim, len(s), len(s))
	}
	return one(aval{Shape: insertDim(s, p.Dim, p.Size), DType: in[0].DType})
}

func psumScatterAbstract(params any, in []aval) []aval {
	checkArity(in, 1)
	checkClass(numeric, in[0])
	p := params.(GatherParams)
	checkSize(p.Axis, p.Size)
	s := in[0].Shape
	checkAxis(p.Dim, len(s))
	out := append([]int(nil), s...)
	if p.Tiled {
		if s[p.Dim]%p.Size != 0 {
			interp.Panicf("dimension %d of size %d does not split into %d blocks (the size of axis %q)", p.Dim, s[p.Dim], p.Size, p.Axis)
		}
		out[p.Dim] /= p.Size
		return one(aval{Shape: out, DType: in[0].DType})
	}
	if s[p.Dim] != p.Size {
		interp.Panicf("dimension %d has size %d, not %d (the size of axis %q; use tiled to split it into blocks)", p.Dim, s[p.Dim], p.Size, p.Axis)
	}
	return one(aval{Shape: append(out[:p.Dim:p.Dim], s[p.Dim+1:]...), DType: in[0].DType})
}

func allToAllAbstract(params any, in []aval) []aval {
	checkArity(in, 1)
	p := params.(AllToAllParams)
	checkSize(p.Axis, p.Size)
	s := in[0].Shape
	checkAxis(p.Split, len(s))
	checkAxis(p.Concat, len(s))
	if s[p.Split]%p.Size != 0 {
		interp.Panicf("split dimension %d of size %d does not split into %d blocks (the size of axis %q)", p.Split, s[p.Split], p.Size, p.Axis)
	}
	out := append([]int(nil), s...)
	out[p.Split] /= p.Size
	out[p.Concat] *= p.Size
	return one(aval{Shape: out, DType: in[0].DType})
}

func ppermuteAbstract(params any, in []aval) []aval {
	checkArity(in, 1)
	p := params.(PermuteParams)
	checkSize(p.Axis, p.Size)
	CheckPerm(p.Perm, p.Size)
	return one(in[0])
}

// CheckPerm panics with *interp.Error unless perm is a valid ppermute
// permutation over n lanes: pairs (source, destination) in [0, n), no
// source and no destination twice.
func CheckPerm(perm [][2]int, n int) {
	src, dst := make([]bool, n), make([]bool, n)
	for _, pr := range perm {
		for _, v := range pr {
			if v < 0 || v >= n {
				interp.Panicf("ppermute pair %v is out of range for an axis of size %d", pr, n)
			}
		}
		if src[pr[0]] {
			interp.Panicf("source %d appears twice in %v (not a permutation)", pr[0], perm)
		}
		if dst[pr[1]] {
			interp.Panicf("destination %d appears twice in %v (not a permutation)", pr[1], perm)
		}
		src[pr[0]], dst[pr[1]] = true, true
	}
}

func insertDim(s []int, at, v int) []int {
	out := make([]int, 0, len(s)+1)
	out = append(out, s[:at]...)
	out = append(out, v)
	return append(out, s[at:]...)
}

func init() {
	for _, p := range Collectives {
		p.EvalImpl = evalCollective(p)
	}
	for _, p := range []*interp.Prim{Psum, AllGather, PsumScatter, AllToAll, Ppermute} {
		defJVP(p, func(params any, x, t []*tensor, _ *tensor) *tensor {
			return BindCollective(p, params, t[0], x[0])
		})
	}
	defJVP(Pmax, pextremumJVP)
	defJVP(Pmin, pextremumJVP)
	lin := []bool{true}
	defTranspose(Psum, lin, func(params any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		return []*tensor{BindCollective(Psum, params, ct)}
	})
	defTranspose(AllGather, lin, func(params any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		return []*tensor{BindCollective(PsumScatter, params, ct)}
	})
	defTranspose(PsumScatter, lin, func(params any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		return []*tensor{BindCollective(AllGather, params, ct)}
	})
	defTranspose(AllToAll, lin, func(params any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		p := params.(AllToAllParams)
		p.Split, p.Concat = p.Concat, p.Split
		return []*tensor{BindCollective(AllToAll, p, ct)}
	})
	defTranspose(Ppermute, lin, func(params any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		return []*tensor{BindCollective(Ppermute, params.(PermuteParams).Inverse(), ct)}
	})
}

// pextremumJVP is pmax's and pmin's tangent: the mean of the tangents of
// the lanes whose value is the extremum (ties share it equally).
func pextremumJVP(params any, x, t []*tensor, out *tensor) *tensor {
	mask := convert(eq(x[0], out), out.DType())
	return div(BindCollective(Psum, params, mul(t[0], mask), x[0]), BindCollective(Psum, params, mask, x[0]))
}

// axesOf returns the axis names a collective's params name.
func axesOf(params any) []string {
	switch p := params.(type) {
	case CollectiveParams:
		return p.Axes
	case GatherParams:
		return []string{p.Axis}
	case AllToAllParams:
		return []string{p.Axis}
	case PermuteParams:
		return []string{p.Axis}
	}
	interp.Panicf("not a collective's parameters: %T", params)
	return nil
}

// LookupAxis returns the calling goroutine's binding of the axis name
// (interp.PushAxis), for what has no operand to find it from (AxisIndex,
// AxisSize), and panics with *interp.Error naming the names that are
// bound when there is none.
func LookupAxis(name string) interp.AxisFrame { return LookupAxesOf(nil, name)[0] }

// LookupAxesOf returns the bindings of the axis names for a collective
// on xs: from the levels of xs, innermost first, else the calling
// goroutine's (interp.LookupAxesOf). It panics with *interp.Error naming
// the names that are bound when one is not.
func LookupAxesOf(xs []*tensor, names ...string) []interp.AxisFrame {
	fs, name := interp.LookupAxesOf(xs, names...)
	if name != "" {
		bound := interp.AxesOf(xs)
		hint := "none is bound here"
		if len(bound) > 0 {
			hint = "the names bound here are " + strings.Join(quoteAll(bound), ", ")
		}
		interp.Panicf("axis name %q is not bound by any enclosing Vmap (with AxisName) or ShardMap: %s (a collective finds the name through its operand's levels, or, for a value that does not vary along the axis, through the goroutine running the Vmap or ShardMap: in a goroutine you start, run the function through dist.WithAxes)", name, hint)
	}
	return fs
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// BindCollective applies collective p to x, the axes its params name
// resolved from the levels of x and of also (the primal of a tangent),
// else the calling goroutine's (LookupAxesOf). For each axis it names
// whose binding's index is a tracer (a named Vmap's level, a ShardMap
// being traced) and x is not a value of that tracer's level, x is first
// made one (x + 0·index): a value that does not vary along the axis
// then reaches the level that sees the axis (see the family's comment)
// instead of being answered below it. The rules of the collectives and
// package dist apply collectives through it.
func BindCollective(p *interp.Prim, params any, x *tensor, also ...*tensor) *tensor {
	return BindCollectiveIn(p, params, x, LookupAxesOf(append([]*tensor{x}, also...), axesOf(params)...))
}

// BindCollectiveIn is BindCollective with the bindings of the axes the
// params name, in order, already looked up (LookupAxesOf).
func BindCollectiveIn(p *interp.Prim, params any, x *tensor, frames []interp.AxisFrame) *tensor {
	for _, f := range frames {
		x = liftToAxis(x, f)
	}
	return interp.Bind1(p, params, x)
}

// liftToAxis returns x as a value of the level of f's index, when the
// index is a tracer and x is not a value of that level.
func liftToAxis(x *tensor, f interp.AxisFrame) *tensor {
	if f.Index == nil {
		return x
	}
	it := interp.TracerOf(f.Index)
	if it == nil {
		return x
	}
	if xt := interp.TracerOf(x); xt != nil && xt.Level() == it.Level() {
		return x
	}
	if x.DType() == interp.Bool {
		// x ∨ false, the false a value of the level (index = -1 never
		// holds).
		never := eq(f.Index, scalarConst(-1, f.Index.DType()))
		if len(x.Shape()) > 0 {
			never = broadcastInDim(never, x.Shape(), []int{})
		}
		return interp.Bind1(Or, nil, x, never)
	}
	zero := mul(convert(f.Index, x.DType()), scalarConst(0, x.DType()))
	if len(x.Shape()) > 0 {
		zero = broadcastInDim(zero, x.Shape(), []int{})
	}
	return add(x, zero)
}

// evalCollective is a collective's evaluation: each axis it names is
// answered by the device that binds it for the calling goroutine.
func evalCollective(p *interp.Prim) func(params any, args []*tensor) []*tensor {
	return func(params any, args []*tensor) []*tensor {
		x := args[0]
		names := axesOf(params)
		frames := LookupAxesOf(args, names...)
		if cp, ok := params.(CollectiveParams); ok {
			// One axis at a time: a reduction over several is the
			// reduction over each in turn.
			for k, name := range cp.Axes {
				one := CollectiveParams{Axes: []string{name}, Sizes: []int{cp.Sizes[k]}}
				x = deviceOf(p, frames[k]).Collective(p, one, x)
			}
			return []*tensor{x}
		}
		return []*tensor{deviceOf(p, frames[0]).Collective(p, params, x)}
	}
}

// deviceOf returns the device that answers collective p over f's axis.
func deviceOf(p *interp.Prim, f interp.AxisFrame) Device {
	if d, ok := f.Device.(Device); ok {
		return d
	}
	interp.Panicf("%s over axis %q reached evaluation with a value its Vmap level does not see (internal: collectives are applied through BindCollective)", p.Name, f.Name)
	return nil
}
