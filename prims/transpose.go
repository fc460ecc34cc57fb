package prims

import (
	"sort"

	"github.com/peel-ml/peel/interp"
)

// Transpose rules.
//
// Contract between the transposer (reverse mode, package transforms) and
// these rules:
//
//   - A rule is called for a primitive applied in a linear graph, with
//     linear[i] set for each operand that is a linear input. The primitive
//     must be linear in those operands jointly with the others held
//     constant (LinearIn(p, i) for each; mul and dot_general are linear in
//     one operand at a time). A rule panics with *interp.Error otherwise.
//   - For a linear operand, args[i] is a placeholder that carries the
//     operand's abstract value (interp.Placeholder: binding it panics
//     with *interp.Error). Rules read only its Shape and DType (some
//     transposes need the operand's shape: reduce_sum, broadcast_in_dim,
//     slice, pad, gather, dynamic_slice) and never Bind it. For a constant
//     operand args[i] is the real value, a concrete tensor or a tracer of a
//     lower level, used only through Bind.
//   - cts[j] is the cotangent of result j, nil for a symbolic zero. When
//     every one is nil the rule returns all nils.
//   - The rule returns one cotangent per operand: for a linear operand a
//     tensor of its shape and dtype, or nil for a zero; nil for a
//     constant. Results may share memory with the cotangents and with each
//     other (add returns ct for both operands, copy returns ct itself, some
//     zeros are zero-stride broadcasts): treat them as immutable, never as
//     destinations of in-place ops.
//
// The rules are written with Bind, so a transposed graph can itself be
// transformed (the derivative of a gradient, vmap of a gradient).

// LinearIn reports whether p can be linear in operand i (with the others
// held constant). It reads p.Linear, whose entries past its end repeat the
// last one: concatenate lists one entry for all its operands, and the
// trailing start indices of dynamic_slice and dynamic_update_slice take
// the last entry, false.
func LinearIn(p *interp.Prim, i int) bool {
	switch {
	case len(p.Linear) == 0 || i < 0:
		return false
	case i < len(p.Linear):
		return p.Linear[i]
	}
	return p.Linear[len(p.Linear)-1]
}

// transposeFn maps the cotangent of a single-result primitive (non-nil)
// to its operands' cotangents.
type transposeFn func(params any, ct *tensor, args []*tensor, linear []bool) []*tensor

// defTranspose sets p's linearity and transpose rule.
func defTranspose(p *interp.Prim, lin []bool, f transposeFn) {
	p.Linear = lin
	p.Transpose = func(params any, cts []*tensor, args []*tensor, linear []bool) []*tensor {
		if len(linear) != len(args) {
			interp.Panicf("%s transpose: %d linearity flags for %d operands", p.Name, len(linear), len(args))
		}
		for i, l := range linear {
			if l && !LinearIn(p, i) {
				interp.Panicf("%s is not linear in operand %d", p.Name, i)
			}
		}
		if len(cts) != 1 {
			interp.Panicf("%s transpose: %d cotangents for 1 result", p.Name, len(cts))
		}
		if cts[0] == nil {
			return make([]*tensor, len(args))
		}
		return f(params, cts[0], args, linear)
	}
}

// only keeps the cotangents of the linear operands.
func only(linear []bool, cts ...*tensor) []*tensor {
	for i, l := range linear {
		if !l {
			cts[i] = nil
		}
	}
	return cts
}

// oneLinear returns the index of the single linear operand of a bilinear
// primitive (mul, dot_general), panicking when both or neither are.
func oneLinear(name string, linear []bool) int {
	if linear[0] == linear[1] {
		interp.Panicf("%s transpose: exactly one operand must be linear, got %v (a product of two linear inputs is not linear)", name, linear)
	}
	if linear[0] {
		return 0
	}
	return 1
}

func init() {
	tt, t, tf := []bool{true, true}, []bool{true}, []bool{true, false}

	defTranspose(Add, tt, func(_ any, ct *tensor, _ []*tensor, linear []bool) []*tensor {
		return only(linear, ct, ct)
	})
	defTranspose(Sub, tt, func(_ any, ct *tensor, _ []*tensor, linear []bool) []*tensor {
		res := []*tensor{ct, nil}
		if linear[1] {
			res[1] = neg(ct)
		}
		return only(linear, res...)
	})
	defTranspose(Neg, t, func(_ any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		return []*tensor{neg(ct)}
	})
	defTranspose(Mul, tt, func(_ any, ct *tensor, args []*tensor, linear []bool) []*tensor {
		res := make([]*tensor, 2)
		if i := oneLinear("mul", linear); i == 0 {
			res[0] = mul(ct, args[1])
		} else {
			res[1] = mul(args[0], ct)
		}
		return res
	})
	defTranspose(Div, tf, func(_ any, ct *tensor, args []*tensor, _ []bool) []*tensor {
		return []*tensor{div(ct, args[1]), nil}
	})
	defTranspose(Where, []bool{false, true, true}, func(_ any, ct *tensor, args []*tensor, linear []bool) []*tensor {
		z := zerosLike(ct.Aval())
		res := make([]*tensor, 3)
		if linear[1] {
			res[1] = sel(args[0], ct, z)
		}
		if linear[2] {
			res[2] = sel(args[0], z, ct)
		}
		return res
	})
	defTranspose(ConvertElementType, t, func(_ any, ct *tensor, args []*tensor, _ []bool) []*tensor {
		return []*tensor{convert(ct, args[0].DType())}
	})
	defTranspose(Copy, t, func(_ any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		return []*tensor{ct}
	})
	defTranspose(Cumsum, t, func(params any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		cp := params.(CumsumParams)
		cp.Reverse = !cp.Reverse
		return []*tensor{interp.Bind1(Cumsum, cp, ct)}
	})
	defTranspose(ReduceSum, t, func(params any, ct *tensor, args []*tensor, _ []bool) []*tensor {
		return []*tensor{unreduce(ct, args[0].Shape(), params.(ReduceParams).Axes)}
	})

	defTranspose(BroadcastInDim, t, broadcastTranspose)
	defTranspose(OptimizationBarrier, t, func(_ any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		return []*tensor{interp.Bind1(OptimizationBarrier, nil, ct)}
	})
	defTranspose(Reshape, t, func(_ any, ct *tensor, args []*tensor, _ []bool) []*tensor {
		return []*tensor{reshape(ct, args[0].Shape())}
	})
	defTranspose(Transpose, t, func(params any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		perm := params.(TransposeParams).Perm
		inv := make([]int, len(perm))
		for i, q := range perm {
			inv[q] = i
		}
		return []*tensor{transpose(ct, inv)}
	})
	defTranspose(Rev, t, func(params any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		return []*tensor{interp.Bind1(Rev, params, ct)}
	})
	defTranspose(Slice, t, sliceTranspose)
	defTranspose(Pad, tt, padTranspose)
	defTranspose(Concatenate, t, concatTranspose)

	defTranspose(Gather, tf, gatherTranspose)
	defTranspose(ScatterAdd, []bool{true, false, true}, scatterAddTranspose)
	defTranspose(Scatter, []bool{true, false, true}, scatterTranspose)
	defTranspose(DynamicSlice, tf, func(_ any, ct *tensor, args []*tensor, _ []bool) []*tensor {
		res := make([]*tensor, len(args))
		dus := append([]*tensor{zerosLike(args[0].Aval()), ct}, args[1:]...)
		res[0] = interp.Bind1(DynamicUpdateSlice, nil, dus...)
		return res
	})
	defTranspose(DynamicUpdateSlice, []bool{true, true, false}, dusTranspose)
	defTranspose(DotGeneral, tt, dotTranspose)
	defTranspose(ConvGeneralDilated, tt, convTranspose)
	defTranspose(ReduceWindowSum, t, reduceWindowSumTranspose)
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

// gatherTranspose adds the cotangent's slices into zeros at the indices,
// clamped as gather clamps them.
func gatherTranspose(params any, ct *tensor, args []*tensor, _ []bool) []*tensor {
	axis := params.(AxisParams).Axis
	x, idx := args[0], args[1]
	idx = clampIndices(idx, x.Shape()[axis])
	return []*tensor{interp.Bind1(ScatterAdd, params, zerosLike(x.Aval()), idx, ct), nil}
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
		res[2] = sel(keep, g, zerosLike(g.Aval()))
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
		res[0] = interp.Bind1(Scatter, params, ct, idx, zerosLike(args[2].Aval()))
	}
	if linear[2] {
		axis := params.(AxisParams).Axis
		g := interp.Bind1(Gather, params, ct, idx)
		keep := indexMaskFor(scatterWinners(idx, ct.Shape()[axis]), g.Shape(), axis)
		res[2] = sel(keep, g, zerosLike(g.Aval()))
	}
	return res
}

// dusTranspose: the operand's cotangent is ct with the window zeroed; the
// update's is the window of ct (both clamp the starts the same way).
func dusTranspose(_ any, ct *tensor, args []*tensor, linear []bool) []*tensor {
	res := make([]*tensor, len(args))
	u, starts := args[1], args[2:]
	if linear[0] {
		res[0] = interp.Bind1(DynamicUpdateSlice, nil, append([]*tensor{ct, zerosLike(u.Aval())}, starts...)...)
	}
	if linear[1] {
		res[1] = interp.Bind1(DynamicSlice, DynamicSliceParams{Sizes: append([]int{}, u.Shape()...)}, append([]*tensor{ct}, starts...)...)
	}
	return res
}

// dotTranspose contracts the cotangent with the constant operand over the
// constant's free dimensions (batch dimensions stay batch), which leaves
// [batch, linear operand's free, constant's contracting] dimensions, and
// permutes them into the linear operand's order.
func dotTranspose(params any, ct *tensor, args []*tensor, linear []bool) []*tensor {
	dp := params.(DotParams)
	i := oneLinear("dot_general", linear)
	x, y := args[i], args[1-i]
	xc, xb, yc, yb := dp.LhsContract, dp.LhsBatch, dp.RhsContract, dp.RhsBatch
	if i == 1 {
		xc, xb, yc, yb = yc, yb, xc, xb
	}
	nb := len(xb)
	xFree := freeDims(x.Rank(), xc, xb)
	yFree := freeDims(y.Rank(), yc, yb)
	// ct's dimensions: batch, lhs free, rhs free.
	yStart := nb
	if i == 0 {
		yStart += len(xFree)
	}
	ctContract := make([]int, len(yFree))
	for k := range yFree {
		ctContract[k] = yStart + k
	}
	ctBatch := make([]int, nb)
	for k := range ctBatch {
		ctBatch[k] = k
	}
	p := DotParams{LhsContract: ctContract, RhsContract: yFree, LhsBatch: ctBatch, RhsBatch: yb}
	z := interp.Bind1(DotGeneral, p, ct, y)
	// z's dimensions: batch, x free, y contracting (increasing), which
	// pair with x's contracting dimensions.
	ycSorted := append([]int{}, yc...)
	sort.Ints(ycSorted)
	perm := make([]int, x.Rank())
	for k, d := range xb {
		perm[d] = k
	}
	for k, d := range xFree {
		perm[d] = nb + k
	}
	for k, d := range xc {
		perm[d] = nb + len(xFree) + sort.SearchInts(ycSorted, yc[k])
	}
	res := make([]*tensor, 2)
	res[i] = transpose(z, perm)
	return res
}

// freeDims returns the dimensions of a rank-r operand that are neither
// contracting nor batch, in increasing order.
func freeDims(r int, contract, batch []int) []int {
	used := make([]bool, r)
	for _, d := range contract {
		used[d] = true
	}
	for _, d := range batch {
		used[d] = true
	}
	free := make([]int, 0, r)
	for d := 0; d < r; d++ {
		if !used[d] {
			free = append(free, d)
		}
	}
	return free
}
