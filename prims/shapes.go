package prims

import (
	"errors"
	"sort"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

func checkAxis(axis, rank int) {
	if axis < 0 || axis >= rank {
		interp.Panicf("axis %d out of range for rank %d", axis, rank)
	}
}

func checkAxes(axes []int, rank int) {
	seen := make([]bool, rank)
	for _, a := range axes {
		checkAxis(a, rank)
		if seen[a] {
			interp.Panicf("axis %d repeated in %v", a, axes)
		}
		seen[a] = true
	}
}

func checkLen(what string, got, rank int) {
	if got != rank {
		interp.Panicf("%s has %d entries, operand has rank %d", what, got, rank)
	}
}

// checkShape returns the number of elements of shape, panicking with
// *interp.Error when a dimension is negative or the shape is too large
// (see backend.CheckedSize). Every shape a rule takes from its parameters
// or computes from several operands passes it.
func checkShape(shape []int) int {
	n, err := backend.CheckedSize(shape)
	if err != nil {
		panic(&interp.Error{Msg: err.Error()})
	}
	return n
}

func reduction(name string, c dclass) *interp.Prim {
	return interp.NewPrim(name, interp.Pure, func(params any, in []aval) []aval {
		checkArity(in, 1)
		checkClass(c, in[0])
		axes := params.(ReduceParams).Axes
		checkAxes(axes, len(in[0].Shape))
		if !sort.IntsAreSorted(axes) {
			interp.Panicf("axes %v are not sorted", axes)
		}
		shape := make([]int, 0, len(in[0].Shape))
		j := 0
		for i, d := range in[0].Shape {
			if j < len(axes) && axes[j] == i {
				j++
				if (name == "reduce_max" || name == "reduce_min") && d == 0 {
					interp.Panicf("%s of an empty axis %d has no identity", name, i)
				}
				continue
			}
			shape = append(shape, d)
		}
		return one(aval{Shape: shape, DType: in[0].DType})
	})
}

// Reductions over ReduceParams.Axes.
var (
	ReduceSum  = reduction("reduce_sum", numeric)
	ReduceMax  = reduction("reduce_max", anyType)
	ReduceMin  = reduction("reduce_min", anyType)
	ReduceProd = reduction("reduce_prod", numeric)
)

func argReduction(name string) *interp.Prim {
	return interp.NewPrim(name, interp.Pure, func(params any, in []aval) []aval {
		checkArity(in, 1)
		axis := params.(AxisParams).Axis
		checkAxis(axis, len(in[0].Shape))
		if in[0].Shape[axis] == 0 {
			interp.Panicf("%s of an empty axis", name)
		}
		shape := append(append([]int{}, in[0].Shape[:axis]...), in[0].Shape[axis+1:]...)
		return one(aval{Shape: shape, DType: backend.Int64})
	})
}

// ArgMax and ArgMin return the index (i64) of the first maximum (minimum)
// along AxisParams.Axis, which is removed. NaN counts as the maximum
// (minimum), as in numpy.
var (
	ArgMax = argReduction("argmax")
	ArgMin = argReduction("argmin")
)

// Cumsum is the inclusive cumulative sum along CumsumParams.Axis.
var Cumsum = interp.NewPrim("cumsum", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 1)
	checkClass(numeric, in[0])
	checkAxis(params.(CumsumParams).Axis, len(in[0].Shape))
	return one(in[0])
})

// BroadcastInDim broadcasts its operand to BroadcastParams.Shape. It is a
// view: at eval level the result shares the operand's memory with zero
// strides.
var BroadcastInDim = func() *interp.Prim {
	p := interp.NewPrim("broadcast_in_dim", interp.ViewKind, func(params any, in []aval) []aval {
		checkArity(in, 1)
		bp := params.(BroadcastParams)
		checkShape(bp.Shape)
		checkLen("dims", len(bp.Dims), len(in[0].Shape))
		prev := -1
		for i, d := range bp.Dims {
			if d <= prev || d >= len(bp.Shape) {
				interp.Panicf("dims %v must be increasing and below the result rank %d", bp.Dims, len(bp.Shape))
			}
			prev = d
			if s := in[0].Shape[i]; s != 1 && s != bp.Shape[d] {
				interp.Panicf("operand dimension %d has size %d, cannot broadcast to %d", i, s, bp.Shape[d])
			}
		}
		return one(aval{Shape: bp.Shape, DType: in[0].DType})
	})
	p.ViewArray = func(params any, a backend.Array) (backend.Array, bool) {
		bp := params.(BroadcastParams)
		st := a.EffectiveStrides()
		strides := make([]int, len(bp.Shape))
		for i, d := range bp.Dims {
			if a.Shape[i] != 1 {
				strides[d] = st[i]
			}
		}
		return backend.Array{Buf: a.Buf, Shape: bp.Shape, Strides: strides, Offset: a.Offset}, true
	}
	return p
}()

// OptimizationBarrier is the identity, a view of the whole operand
// (JAX's optimization_barrier): the compiler's passes do not look through
// it, so equations on its result are not merged with equal equations on
// its operand (CSE), which is how a checkpoint's recomputation stays a
// recomputation under Compile. Eval and the compiler's executor lay it
// out as its operand, at no cost.
var OptimizationBarrier = func() *interp.Prim {
	p := interp.NewPrim("optimization_barrier", interp.ViewKind, func(params any, in []aval) []aval {
		checkArity(in, 1)
		return one(in[0])
	})
	p.ViewArray = func(_ any, a backend.Array) (backend.Array, bool) { return a, true }
	return p
}()

// Reshape gives its operand a new shape with the same size. It is a view
// when the operand's layout allows one (always for contiguous operands);
// otherwise eval copies.
var Reshape = func() *interp.Prim {
	p := interp.NewPrim("reshape", interp.ViewKind, func(params any, in []aval) []aval {
		checkArity(in, 1)
		shape := params.(ReshapeParams).Shape
		if checkShape(shape) != in[0].Size() {
			interp.Panicf("cannot reshape %d elements into shape %v", in[0].Size(), shape)
		}
		return one(aval{Shape: shape, DType: in[0].DType})
	})
	p.ViewArray = func(params any, a backend.Array) (backend.Array, bool) {
		shape := params.(ReshapeParams).Shape
		if a.IsContiguous() {
			return backend.Array{Buf: a.Buf, Shape: shape, Offset: a.Offset}, true
		}
		st, ok := reshapeStrides(a.Shape, a.Strides, shape)
		if !ok {
			return backend.Array{}, false
		}
		return backend.Array{Buf: a.Buf, Shape: shape, Strides: st, Offset: a.Offset}, true
	}
	return p
}()

// reshapeStrides finds strides that view (shape, strides) as newShape.
// Old dimensions are grouped into chunks that are contiguous among
// themselves; each chunk must be split exactly by a run of new dimensions.
func reshapeStrides(shape, strides, newShape []int) ([]int, bool) {
	out := make([]int, len(newShape))
	if backend.ShapeSize(shape) == 0 || len(shape) == 0 {
		return backend.ContiguousStrides(newShape), len(shape) != 0 || backend.ShapeSize(newShape) == 1
	}
	vd := len(newShape) - 1
	base := strides[len(strides)-1]
	oldN, newN := 1, 1
	for od := len(shape) - 1; od >= 0; od-- {
		oldN *= shape[od]
		if od == 0 || (shape[od-1] != 1 && strides[od-1] != oldN*base) {
			for vd >= 0 && (newN < oldN || newShape[vd] == 1) {
				out[vd] = newN * base
				newN *= newShape[vd]
				vd--
			}
			if newN != oldN {
				return nil, false
			}
			if od > 0 {
				base = strides[od-1]
				oldN, newN = 1, 1
			}
		}
	}
	return out, vd == -1
}

// Transpose permutes dimensions: result dimension i is operand dimension
// Perm[i]. It is a view.
var Transpose = func() *interp.Prim {
	p := interp.NewPrim("transpose", interp.ViewKind, func(params any, in []aval) []aval {
		checkArity(in, 1)
		perm := params.(TransposeParams).Perm
		checkLen("perm", len(perm), len(in[0].Shape))
		checkAxes(perm, len(in[0].Shape))
		shape := make([]int, len(perm))
		for i, q := range perm {
			shape[i] = in[0].Shape[q]
		}
		return one(aval{Shape: shape, DType: in[0].DType})
	})
	p.ViewArray = func(params any, a backend.Array) (backend.Array, bool) {
		perm := params.(TransposeParams).Perm
		st := a.EffectiveStrides()
		shape, strides := make([]int, len(perm)), make([]int, len(perm))
		for i, q := range perm {
			shape[i], strides[i] = a.Shape[q], st[q]
		}
		return backend.Array{Buf: a.Buf, Shape: shape, Strides: strides, Offset: a.Offset}, true
	}
	return p
}()

// SliceShape returns the result shape of a slice, panicking with *Error on
// bad bounds.
func SliceShape(p SliceParams, shape []int) []int {
	r := len(shape)
	checkLen("start", len(p.Start), r)
	checkLen("limit", len(p.Limit), r)
	checkLen("stride", len(p.Stride), r)
	out := make([]int, r)
	for k := range shape {
		s, l, st := p.Start[k], p.Limit[k], p.Stride[k]
		if st < 1 {
			interp.Panicf("stride %d in dimension %d must be at least 1", st, k)
		}
		if s < 0 || l > shape[k] || s > l {
			interp.Panicf("slice [%d:%d] out of range for dimension %d of size %d", s, l, k, shape[k])
		}
		out[k] = sliceLen(s, l, st)
	}
	return out
}

// sliceLen returns the number of elements start, start+stride, … below
// limit, for 0 ≤ start ≤ limit and stride ≥ 1, without overflow for any
// stride.
func sliceLen(start, limit, stride int) int {
	if limit <= start {
		return 0
	}
	return (limit-start-1)/stride + 1
}

// Slice takes elements Start ≤ i < Limit with step Stride in each
// dimension. It is a view.
var Slice = func() *interp.Prim {
	p := interp.NewPrim("slice", interp.ViewKind, func(params any, in []aval) []aval {
		checkArity(in, 1)
		return one(aval{Shape: SliceShape(params.(SliceParams), in[0].Shape), DType: in[0].DType})
	})
	p.ViewArray = func(params any, a backend.Array) (backend.Array, bool) {
		sp := params.(SliceParams)
		st := a.EffectiveStrides()
		shape, strides := make([]int, len(st)), make([]int, len(st))
		off := a.Offset
		for k := range st {
			shape[k] = sliceLen(sp.Start[k], sp.Limit[k], sp.Stride[k])
			if shape[k] > 0 {
				off += sp.Start[k] * st[k]
			}
			// A stride larger than the dimension keeps one element,
			// whose stride does not matter (and whose product with the
			// step could overflow).
			strides[k] = st[k]
			if shape[k] > 1 {
				strides[k] *= sp.Stride[k]
			}
		}
		if backend.ShapeSize(shape) == 0 {
			off = 0
		}
		return backend.Array{Buf: a.Buf, Shape: shape, Strides: strides, Offset: off}, true
	}
	return p
}()

// Pad pads operand 0 with the scalar operand 1 (same dtype, rank 0).
var Pad = interp.NewPrim("pad", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 2)
	if len(in[1].Shape) != 0 || in[1].DType != in[0].DType {
		interp.Panicf("padding value must be a scalar of the operand's dtype")
	}
	pp := params.(PadParams)
	r := len(in[0].Shape)
	checkLen("low", len(pp.Low), r)
	checkLen("high", len(pp.High), r)
	checkLen("interior", len(pp.Interior), r)
	shape := make([]int, r)
	for k, d := range in[0].Shape {
		if pp.Interior[k] < 0 {
			interp.Panicf("interior padding %d must be non-negative", pp.Interior[k])
		}
		n, err := PadLen(d, pp.Low[k], pp.High[k], pp.Interior[k])
		if err != nil {
			interp.Panicf("padding %d,%d (interior %d) of dimension %d of size %d: %v", pp.Low[k], pp.High[k], pp.Interior[k], k, d, err)
		}
		shape[k] = n
	}
	checkShape(shape)
	return one(aval{Shape: shape, DType: in[0].DType})
})

// errPadTooLarge and errPadRemoves are PadLen's errors.
var (
	errPadTooLarge = errors.New("the result is too large: its size overflows int")
	errPadRemoves  = errors.New("the padding removes more than the dimension holds")
)

// PadLen returns the size of a dimension of size d ≥ 0 after padding it
// with low elements before, high after and interior ≥ 0 between
// elements: d + (d-1)·interior + low + high, where a negative low or high
// removes elements. It returns an error saying "too large" when the size
// overflows int and one saying "removes more" when it is negative; no
// intermediate result overflows.
func PadLen(d, low, high, interior int) (int, error) {
	n := d
	if d > 0 && interior > 0 {
		in, ok := backend.MulSize(d-1, interior)
		if !ok {
			return 0, errPadTooLarge
		}
		if n, ok = backend.AddSize(n, in); !ok {
			return 0, errPadTooLarge
		}
	}
	// low+high overflows only when both have one sign: both positive
	// is too large, both negative removes more than any size holds.
	lh, ok := backend.AddSize(low, high)
	if !ok {
		if low > 0 {
			return 0, errPadTooLarge
		}
		return 0, errPadRemoves
	}
	if n, ok = backend.AddSize(n, lh); !ok {
		return 0, errPadTooLarge
	}
	if n < 0 {
		return 0, errPadRemoves
	}
	return n, nil
}

// Concatenate joins its operands along AxisParams.Axis.
var Concatenate = interp.NewPrim("concatenate", interp.Pure, func(params any, in []aval) []aval {
	if len(in) == 0 {
		interp.Panicf("needs at least one operand")
	}
	axis := params.(AxisParams).Axis
	checkAxis(axis, len(in[0].Shape))
	shape := append([]int{}, in[0].Shape...)
	for _, a := range in[1:] {
		if a.DType != in[0].DType || len(a.Shape) != len(shape) {
			interp.Panicf("operands must have one dtype and rank")
		}
		for k := range shape {
			if k != axis && a.Shape[k] != shape[k] {
				interp.Panicf("operands differ in dimension %d, which is not the concatenation axis %d", k, axis)
			}
		}
		var ok bool
		if shape[axis], ok = backend.AddSize(shape[axis], a.Shape[axis]); !ok {
			interp.Panicf("the result is too large: its dimension %d overflows int", axis)
		}
	}
	checkShape(shape)
	return one(aval{Shape: shape, DType: in[0].DType})
})

// Rev reverses the order of elements along RevParams.Axes.
var Rev = interp.NewPrim("rev", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 1)
	checkAxes(params.(RevParams).Axes, len(in[0].Shape))
	return one(in[0])
})

// Iota makes a tensor whose elements are their index along IotaParams.Dim.
// It takes no operands.
var Iota = interp.NewPrim("iota", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 0)
	ip := params.(IotaParams)
	checkShape(ip.Shape)
	checkAxis(ip.Dim, len(ip.Shape))
	if ip.DType == backend.Bool || !ip.DType.IsValid() {
		interp.Panicf("iota needs a numeric dtype, not %v", ip.DType)
	}
	return one(aval{Shape: ip.Shape, DType: ip.DType})
})

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
var Gather = interp.NewPrim("gather", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 2)
	axis := params.(AxisParams).Axis
	checkAxis(axis, len(in[0].Shape))
	checkIndices(in[1])
	return one(aval{Shape: GatherShape(in[0].Shape, in[1].Shape, axis), DType: in[0].DType})
})

func scatter(name string) *interp.Prim {
	return interp.NewPrim(name, interp.Pure, func(params any, in []aval) []aval {
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
	})
}

// ScatterAdd returns operand 0 with operand 2's slices added at the
// indices of operand 1 along AxisParams.Axis (the transpose of Gather).
// Scatter writes them instead (when an index repeats, the last write in
// row-major order of the indices wins). Out-of-range indices are dropped.
var (
	ScatterAdd = scatter("scatter_add")
	Scatter    = scatter("scatter")
)

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
var DynamicSlice = interp.NewPrim("dynamic_slice", interp.Pure, func(params any, in []aval) []aval {
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
})

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

// DotShape checks dot_general's dimensions and returns the result shape.
// It panics with *interp.Error when they do not fit or the result is too
// large (see backend.CheckedSize).
func DotShape(p DotParams, a, b []int) []int {
	if len(p.LhsContract) != len(p.RhsContract) || len(p.LhsBatch) != len(p.RhsBatch) {
		interp.Panicf("contracting and batch dimension lists must pair up")
	}
	used := func(dims []int, rank int, lists ...[]int) []bool {
		u := make([]bool, rank)
		for _, l := range lists {
			for _, d := range l {
				checkAxis(d, rank)
				if u[d] {
					interp.Panicf("dimension %d used twice", d)
				}
				u[d] = true
			}
		}
		return u
	}
	ua := used(a, len(a), p.LhsContract, p.LhsBatch)
	ub := used(b, len(b), p.RhsContract, p.RhsBatch)
	var out []int
	for i := range p.LhsBatch {
		da, db := a[p.LhsBatch[i]], b[p.RhsBatch[i]]
		if da != db {
			interp.Panicf("batch dimensions %d and %d differ: %d vs %d", p.LhsBatch[i], p.RhsBatch[i], da, db)
		}
		out = append(out, da)
	}
	for i := range p.LhsContract {
		da, db := a[p.LhsContract[i]], b[p.RhsContract[i]]
		if da != db {
			interp.Panicf("contracting dimensions %d and %d differ: %d vs %d", p.LhsContract[i], p.RhsContract[i], da, db)
		}
	}
	for k, d := range a {
		if !ua[k] {
			out = append(out, d)
		}
	}
	for k, d := range b {
		if !ub[k] {
			out = append(out, d)
		}
	}
	if out == nil {
		out = []int{}
	}
	checkShape(out)
	return out
}

// DotGeneral is a general tensor contraction (see DotParams). Operands
// have one numeric dtype.
var DotGeneral = interp.NewPrim("dot_general", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 2)
	if in[0].DType != in[1].DType {
		interp.Panicf("operands must have one dtype")
	}
	checkClass(numeric, in[0])
	return one(aval{Shape: DotShape(params.(DotParams), in[0].Shape, in[1].Shape), DType: in[0].DType})
})
