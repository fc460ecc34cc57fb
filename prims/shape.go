package prims

import (
	"errors"
	"fmt"
	"sort"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

// The shape family: broadcast_in_dim, reshape, transpose, slice, pad,
// concatenate, rev, iota and optimization_barrier, each followed by the
// init that sets its rules.

// BroadcastParams are the parameters of broadcast_in_dim: the result shape,
// and for each operand dimension the result dimension it maps to
// (increasing). An operand dimension has size 1 or the size of its result
// dimension.
type BroadcastParams struct {
	Shape []int
	Dims  []int
}

func (p BroadcastParams) String() string {
	return fmt.Sprintf("shape=%v dims=%v", p.Shape, p.Dims)
}

// BroadcastInDim broadcasts its operand to BroadcastParams.Shape. It is a
// view: at eval level the result shares the operand's memory with zero
// strides.
var BroadcastInDim = func() *interp.Prim {
	p := graphio.Params[BroadcastParams](interp.NewPrim("broadcast_in_dim", interp.ViewKind, func(params any, in []aval) []aval {
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
	}))
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

func init() {
	defSameJVP(BroadcastInDim)
	defTranspose(BroadcastInDim, linear1, broadcastTranspose)
}

// broadcastTranspose sums the cotangent over the dimensions the operand was
// broadcast along (new dimensions, and size-1 dimensions that grew), then
// restores the operand's size-1 dimensions.
func broadcastTranspose(params any, ct *tensor, args []*tensor, _ []bool) []*tensor {
	bp := params.(BroadcastParams)
	shape := args[0].Shape()
	mapped := make([]bool, len(bp.Shape))
	var sum []int
	for i, d := range bp.Dims {
		mapped[d] = true
		if shape[i] == 1 && bp.Shape[d] != 1 {
			sum = append(sum, d)
		}
	}
	for d := range bp.Shape {
		if !mapped[d] {
			sum = append(sum, d)
		}
	}
	if len(sum) > 0 {
		sort.Ints(sum)
		ct = reduceSum(ct, sum)
	}
	return []*tensor{reshape(ct, shape)}
}

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

func init() {
	defSameJVP(OptimizationBarrier)
	defTranspose(OptimizationBarrier, linear1, func(_ any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		return []*tensor{interp.Bind1(OptimizationBarrier, nil, ct)}
	})
}

// ReshapeParams are the parameters of reshape: the new shape (no -1).
type ReshapeParams struct{ Shape []int }

func (p ReshapeParams) String() string { return fmt.Sprintf("shape=%v", p.Shape) }

// Reshape gives its operand a new shape with the same size. It is a view
// when the operand's layout allows one (always for contiguous operands);
// otherwise eval copies.
var Reshape = func() *interp.Prim {
	p := graphio.Params[ReshapeParams](interp.NewPrim("reshape", interp.ViewKind, func(params any, in []aval) []aval {
		checkArity(in, 1)
		shape := params.(ReshapeParams).Shape
		if checkShape(shape) != in[0].Size() {
			interp.Panicf("cannot reshape %d elements into shape %v", in[0].Size(), shape)
		}
		return one(aval{Shape: shape, DType: in[0].DType})
	}))
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

func init() {
	defSameJVP(Reshape)
	defTranspose(Reshape, linear1, func(_ any, ct *tensor, args []*tensor, _ []bool) []*tensor {
		return []*tensor{reshape(ct, args[0].Shape())}
	})
}

// TransposeParams are the parameters of transpose: result dimension i is
// operand dimension Perm[i].
type TransposeParams struct{ Perm []int }

func (p TransposeParams) String() string { return fmt.Sprintf("perm=%v", p.Perm) }

// Transpose permutes dimensions: result dimension i is operand dimension
// Perm[i]. It is a view.
var Transpose = func() *interp.Prim {
	p := graphio.Params[TransposeParams](interp.NewPrim("transpose", interp.ViewKind, func(params any, in []aval) []aval {
		checkArity(in, 1)
		perm := params.(TransposeParams).Perm
		checkLen("perm", len(perm), len(in[0].Shape))
		checkAxes(perm, len(in[0].Shape))
		shape := make([]int, len(perm))
		for i, q := range perm {
			shape[i] = in[0].Shape[q]
		}
		return one(aval{Shape: shape, DType: in[0].DType})
	}))
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

func init() {
	defSameJVP(Transpose)
	defTranspose(Transpose, linear1, func(params any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		perm := params.(TransposeParams).Perm
		inv := make([]int, len(perm))
		for i, q := range perm {
			inv[q] = i
		}
		return []*tensor{transpose(ct, inv)}
	})
}

// SliceParams are the parameters of slice: per dimension the start, the
// limit (exclusive) and the stride (≥ 1), with 0 ≤ start ≤ limit ≤ size.
type SliceParams struct {
	Start, Limit, Stride []int
}

func (p SliceParams) String() string {
	return fmt.Sprintf("start=%v limit=%v stride=%v", p.Start, p.Limit, p.Stride)
}

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
	p := graphio.Params[SliceParams](interp.NewPrim("slice", interp.ViewKind, func(params any, in []aval) []aval {
		checkArity(in, 1)
		return one(aval{Shape: SliceShape(params.(SliceParams), in[0].Shape), DType: in[0].DType})
	}))
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

func init() {
	defSameJVP(Slice)
	defTranspose(Slice, linear1, sliceTranspose)
}

// EmbedRegion reports whether p's transpose places its cotangent, as it
// is, into the region [start, limit) of zeros shaped like its operand (a
// slice with unit strides, whose transpose pads), and that region. A
// backward pass gathers such cotangents of one value into one tensor (a
// concatenation, autodiff.TransposeGraph) where summing their padded
// copies wrote the whole value once per slice: the query, key and value
// split from one projection in a transformer wrote three of it and added
// them twice.
func EmbedRegion(p *interp.Prim, params any) (start, limit []int, ok bool) {
	if p != Slice {
		return nil, nil, false
	}
	sp := params.(SliceParams)
	for _, s := range sp.Stride {
		if s != 1 {
			return nil, nil, false
		}
	}
	return sp.Start, sp.Limit, true
}

// sliceTranspose scatters the cotangent back into zeros of the operand's
// shape with pad: low = start, interior = stride − 1, high = the rest.
func sliceTranspose(params any, ct *tensor, args []*tensor, _ []bool) []*tensor {
	sp := params.(SliceParams)
	shape, m := args[0].Shape(), ct.Shape()
	r := len(shape)
	pp := PadParams{Low: make([]int, r), High: make([]int, r), Interior: make([]int, r)}
	for k := range shape {
		pp.Low[k] = sp.Start[k]
		pp.Interior[k] = sp.Stride[k] - 1
		end := sp.Start[k]
		if m[k] > 0 {
			end += (m[k]-1)*sp.Stride[k] + 1
		}
		pp.High[k] = shape[k] - end
	}
	return []*tensor{interp.Bind1(Pad, pp, ct, scalarConst(0, ct.DType()))}
}

// PadParams are the parameters of pad: per dimension the padding before
// the first element, after the last and between elements. Low and High may
// be negative (they then remove elements); Interior is ≥ 0.
type PadParams struct {
	Low, High, Interior []int
}

func (p PadParams) String() string {
	return fmt.Sprintf("low=%v high=%v interior=%v", p.Low, p.High, p.Interior)
}

// Pad pads operand 0 with the scalar operand 1 (same dtype, rank 0).
var Pad = graphio.Params[PadParams](interp.NewPrim("pad", interp.Pure, func(params any, in []aval) []aval {
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
}))

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

func init() {
	defJVP(Pad, func(params any, x, t []*tensor, _ *tensor) *tensor {
		return interp.Bind1(Pad, params, orZeros(t[0], interp.AvalOf(x[0])), orZeros(t[1], interp.AvalOf(x[1])))
	})
	defTranspose(Pad, linear2, padTranspose)
}

// padTranspose: the operand's cotangent is the strided slice of the
// cotangent at the operand's positions (after padding back with zeros
// what a negative low or high cut); the padding value's is the sum of the
// cotangent at the padding positions, computed exactly as
// sum(ct − pad(ct_operand, 0)).
func padTranspose(params any, ct *tensor, args []*tensor, linear []bool) []*tensor {
	pp := params.(PadParams)
	shape := args[0].Shape()
	r := len(shape)
	zero := scalarConst(0, ct.DType())
	grow := PadParams{Low: make([]int, r), High: make([]int, r), Interior: make([]int, r)}
	regrow := false
	sp := SliceParams{Start: make([]int, r), Limit: make([]int, r), Stride: make([]int, r)}
	for k, d := range shape {
		grow.Low[k], grow.High[k] = max(-pp.Low[k], 0), max(-pp.High[k], 0)
		regrow = regrow || grow.Low[k] > 0 || grow.High[k] > 0
		step := pp.Interior[k] + 1
		sp.Start[k], sp.Stride[k] = max(pp.Low[k], 0), step
		sp.Limit[k] = sp.Start[k]
		if d > 0 {
			sp.Limit[k] += (d-1)*step + 1
		}
	}
	padded := ct
	if regrow {
		padded = interp.Bind1(Pad, grow, ct, zero)
	}
	ctx := interp.Bind1(Slice, sp, padded)
	res := []*tensor{ctx, nil}
	if linear[1] {
		rest := sub(ct, interp.Bind1(Pad, pp, ctx, zero))
		all := make([]int, ct.Rank())
		for i := range all {
			all[i] = i
		}
		res[1] = reduceSum(rest, all)
	}
	return only(linear, res...)
}

// Concatenate joins its operands along AxisParams.Axis.
var Concatenate = graphio.Params[AxisParams](interp.NewPrim("concatenate", interp.Pure, func(params any, in []aval) []aval {
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
}))

func init() {
	defJVP(Concatenate, func(params any, x, t []*tensor, _ *tensor) *tensor {
		ts := make([]*tensor, len(x))
		for i := range x {
			ts[i] = orZeros(t[i], interp.AvalOf(x[i]))
		}
		return interp.Bind1(Concatenate, params, ts...)
	})
	defTranspose(Concatenate, linear1, concatTranspose)
}

// concatTranspose slices each linear operand's block out of the cotangent.
func concatTranspose(params any, ct *tensor, args []*tensor, linear []bool) []*tensor {
	axis := params.(AxisParams).Axis
	shape := ct.Shape()
	r := len(shape)
	res := make([]*tensor, len(args))
	off := 0
	for i, a := range args {
		n := a.Shape()[axis]
		if linear[i] {
			sp := SliceParams{Start: make([]int, r), Limit: append([]int{}, shape...), Stride: make([]int, r)}
			for k := range sp.Stride {
				sp.Stride[k] = 1
			}
			sp.Start[axis], sp.Limit[axis] = off, off+n
			res[i] = interp.Bind1(Slice, sp, ct)
		}
		off += n
	}
	return res
}

// RevParams are the parameters of rev: the axes reversed.
type RevParams struct{ Axes []int }

func (p RevParams) String() string { return fmt.Sprintf("axes=%v", p.Axes) }

// Rev reverses the order of elements along RevParams.Axes.
var Rev = graphio.Params[RevParams](interp.NewPrim("rev", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 1)
	checkAxes(params.(RevParams).Axes, len(in[0].Shape))
	return one(in[0])
}))

func init() {
	defSameJVP(Rev)
	defTranspose(Rev, linear1, func(params any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		return []*tensor{interp.Bind1(Rev, params, ct)}
	})
}

// IotaParams are the parameters of iota: a tensor of the given shape and
// dtype whose elements are their index along Dim.
type IotaParams struct {
	DType backend.DType
	Shape []int
	Dim   int
}

func (p IotaParams) String() string {
	return fmt.Sprintf("dtype=%v shape=%v dim=%d", p.DType, p.Shape, p.Dim)
}

// Iota makes a tensor whose elements are their index along IotaParams.Dim.
// It takes no operands.
var Iota = graphio.Params[IotaParams](interp.NewPrim("iota", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 0)
	ip := params.(IotaParams)
	checkShape(ip.Shape)
	checkAxis(ip.Dim, len(ip.Shape))
	if ip.DType == backend.Bool || !ip.DType.IsValid() {
		interp.Panicf("iota needs a numeric dtype, not %v", ip.DType)
	}
	return one(aval{Shape: ip.Shape, DType: ip.DType})
}))

func init() {
	Iota.NonDifferentiable = true
}
