package prims

import (
	"fmt"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

// The index family: gather, scatter_add, scatter, dynamic_slice and
// dynamic_update_slice, each followed by the init that sets its rules.

// GatherShape is the result shape of gather along axis: x.shape[:axis] +
// idx.shape + x.shape[axis+1:]. It panics with *interp.Error when that
// shape is too large (see backend.CheckedSize).
func GatherShape(x, idx []int, axis int) []int {
	out := make([]int, 0, len(x)-1+len(idx))
	out = append(out, x[:axis]...)
	out = append(out, idx...)
	out = append(out, x[axis+1:]...)
	checkShape(out)
	return out
}

func checkIndices(a aval) {
	if a.DType != backend.Int64 {
		interp.Panicf("indices have dtype %v, not i64", a.DType)
	}
}

// Gather takes slices of operand 0 along AxisParams.Axis at the i64
// indices of operand 1: out[p…, j…, s…] = x[p…, idx[j…], s…]. Indices
// outside [0, n) are clamped (as XLA does); the array API normalizes
// negative indices and checks ranges eagerly where it can.
var Gather = graphio.Params[AxisParams](interp.NewPrim("gather", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 2)
	axis := params.(AxisParams).Axis
	checkAxis(axis, len(in[0].Shape))
	checkIndices(in[1])
	return one(aval{Shape: GatherShape(in[0].Shape, in[1].Shape, axis), DType: in[0].DType})
}))

func init() {
	defSameJVP(Gather)
	defTranspose(Gather, linearFirst, gatherTranspose)
}

// gatherTranspose adds the cotangent's slices into zeros at the indices,
// clamped as gather clamps them.
func gatherTranspose(params any, ct *tensor, args []*tensor, _ []bool) []*tensor {
	axis := params.(AxisParams).Axis
	x, idx := args[0], args[1]
	idx = clampIndices(idx, x.Shape()[axis])
	return []*tensor{interp.Bind1(ScatterAdd, params, zerosLike(interp.AvalOf(x)), idx, ct), nil}
}

func scatter(name string) *interp.Prim {
	return graphio.Params[AxisParams](interp.NewPrim(name, interp.Pure, func(params any, in []aval) []aval {
		checkArity(in, 3)
		axis := params.(AxisParams).Axis
		checkAxis(axis, len(in[0].Shape))
		checkIndices(in[1])
		want := aval{Shape: GatherShape(in[0].Shape, in[1].Shape, axis), DType: in[0].DType}
		if !in[2].Equal(want) {
			interp.Panicf("updates must be %v", want)
		}
		if name != "scatter" {
			checkClass(numeric, in[0])
		}
		return one(in[0])
	}))
}

// ScatterAdd returns operand 0 with operand 2's slices added at the
// indices of operand 1 along AxisParams.Axis (the transpose of Gather).
// Scatter writes them instead (when an index repeats, the last write in
// row-major order of the indices wins). Out-of-range indices are dropped.
var (
	ScatterAdd = scatter("scatter_add")
	Scatter    = scatter("scatter")
)

func init() {
	defJVP(ScatterAdd, func(params any, x, t []*tensor, _ *tensor) *tensor {
		if t[2] == nil {
			return t[0]
		}
		return interp.Bind1(ScatterAdd, params, orZeros(t[0], interp.AvalOf(x[0])), x[1], t[2])
	})
	defJVP(Scatter, func(params any, x, t []*tensor, _ *tensor) *tensor {
		return interp.Bind1(Scatter, params, orZeros(t[0], interp.AvalOf(x[0])), x[1], orZeros(t[2], interp.AvalOf(x[2])))
	})
	defTranspose(ScatterAdd, []bool{true, false, true}, scatterAddTranspose)
	defTranspose(Scatter, []bool{true, false, true}, scatterTranspose)
}

// scatterAddTranspose: the operand's cotangent is ct; the updates' is ct
// gathered at the indices, zero where scatter_add dropped an out-of-range
// index.
func scatterAddTranspose(params any, ct *tensor, args []*tensor, linear []bool) []*tensor {
	res := []*tensor{ct, nil, nil}
	if linear[2] {
		axis := params.(AxisParams).Axis
		idx := args[1]
		g := interp.Bind1(Gather, params, ct, idx)
		keep := indexMaskFor(inRange(idx, ct.Shape()[axis]), g.Shape(), axis)
		res[2] = sel(keep, g, zerosLike(interp.AvalOf(g)))
	}
	return only(linear, res...)
}

// scatterTranspose: the operand's cotangent is ct with the overwritten
// positions zeroed; the updates' is ct gathered at the indices, kept only
// for the updates scatter actually wrote (in range, last of repeated
// indices).
func scatterTranspose(params any, ct *tensor, args []*tensor, linear []bool) []*tensor {
	res := make([]*tensor, 3)
	idx := args[1]
	if linear[0] {
		res[0] = interp.Bind1(Scatter, params, ct, idx, zerosLike(interp.AvalOf(args[2])))
	}
	if linear[2] {
		axis := params.(AxisParams).Axis
		g := interp.Bind1(Gather, params, ct, idx)
		keep := indexMaskFor(scatterWinners(idx, ct.Shape()[axis]), g.Shape(), axis)
		res[2] = sel(keep, g, zerosLike(interp.AvalOf(g)))
	}
	return res
}

// DynamicSliceParams are the parameters of dynamic_slice: the slice sizes.
type DynamicSliceParams struct{ Sizes []int }

func (p DynamicSliceParams) String() string { return fmt.Sprintf("sizes=%v", p.Sizes) }

func checkStarts(in []aval, rank int) {
	checkLen("start indices", len(in), rank)
	for _, a := range in {
		if len(a.Shape) != 0 || a.DType != backend.Int64 {
			interp.Panicf("start indices must be i64 scalars")
		}
	}
}

// DynamicSlice takes a slice of sizes DynamicSliceParams.Sizes of operand
// 0 starting at the i64 scalar operands 1… (one per dimension). Starts are
// clamped so the slice fits, as in XLA.
var DynamicSlice = graphio.Params[DynamicSliceParams](interp.NewPrim("dynamic_slice", interp.Pure, func(params any, in []aval) []aval {
	if len(in) < 1 {
		interp.Panicf("needs an operand")
	}
	sizes := params.(DynamicSliceParams).Sizes
	r := len(in[0].Shape)
	checkLen("sizes", len(sizes), r)
	checkStarts(in[1:], r)
	for k, s := range sizes {
		if s < 0 || s > in[0].Shape[k] {
			interp.Panicf("slice size %d out of range for dimension %d of size %d", s, k, in[0].Shape[k])
		}
	}
	return one(aval{Shape: append([]int{}, sizes...), DType: in[0].DType})
}))

func init() {
	defSameJVP(DynamicSlice)
	defTranspose(DynamicSlice, linearFirst, func(_ any, ct *tensor, args []*tensor, _ []bool) []*tensor {
		res := make([]*tensor, len(args))
		dus := append([]*tensor{zerosLike(interp.AvalOf(args[0])), ct}, args[1:]...)
		res[0] = interp.Bind1(DynamicUpdateSlice, nil, dus...)
		return res
	})
}

// DynamicUpdateSlice returns operand 0 with operand 1 written at the i64
// scalar starts 2… (clamped so the update fits).
var DynamicUpdateSlice = interp.NewPrim("dynamic_update_slice", interp.Pure, func(_ any, in []aval) []aval {
	if len(in) < 2 {
		interp.Panicf("needs an operand and an update")
	}
	r := len(in[0].Shape)
	if len(in[1].Shape) != r || in[1].DType != in[0].DType {
		interp.Panicf("update must have the operand's rank and dtype")
	}
	checkStarts(in[2:], r)
	for k, s := range in[1].Shape {
		if s > in[0].Shape[k] {
			interp.Panicf("update dimension %d of size %d exceeds the operand's %d", k, s, in[0].Shape[k])
		}
	}
	return one(in[0])
})

func init() {
	defJVP(DynamicUpdateSlice, func(params any, x, t []*tensor, _ *tensor) *tensor {
		args := append([]*tensor{orZeros(t[0], interp.AvalOf(x[0])), orZeros(t[1], interp.AvalOf(x[1]))}, x[2:]...)
		return interp.Bind1(DynamicUpdateSlice, params, args...)
	})
	defTranspose(DynamicUpdateSlice, []bool{true, true, false}, dusTranspose)
}

// dusTranspose: the operand's cotangent is ct with the window zeroed; the
// update's is the window of ct (both clamp the starts the same way).
func dusTranspose(_ any, ct *tensor, args []*tensor, linear []bool) []*tensor {
	res := make([]*tensor, len(args))
	u, starts := args[1], args[2:]
	if linear[0] {
		res[0] = interp.Bind1(DynamicUpdateSlice, nil, append([]*tensor{ct, zerosLike(interp.AvalOf(u))}, starts...)...)
	}
	if linear[1] {
		res[1] = interp.Bind1(DynamicSlice, DynamicSliceParams{Sizes: append([]int{}, u.Shape()...)}, append([]*tensor{ct}, starts...)...)
	}
	return res
}
