package prims

import "github.com/peel-ml/peel/interp"

// ScatterMul, ScatterMax and ScatterMin return operand 0 with operand 2's
// slices combined into it at the i64 indices of operand 1 along
// AxisParams.Axis, as ScatterAdd adds them: by product, maximum and
// minimum. Max and min propagate NaN (a NaN in the operand or in an
// update lands as NaN). Out-of-range indices are dropped. The operand is
// numeric (not bool).
var (
	ScatterMul = scatter("scatter_mul")
	ScatterMax = scatter("scatter_max")
	ScatterMin = scatter("scatter_min")
)

func init() {
	defJVP(ScatterMul, scatterMulJVP)
	defJVP(ScatterMax, scatterExtremumJVP)
	defJVP(ScatterMin, scatterExtremumJVP)
}

// scatterMulJVP: each factor f of a position's product (its operand
// element and the updates scattered there) contributes its tangent times
// the product of the other factors, computed without dividing by a zero
// and so that its own derivative is exact too (second derivatives at
// zeros). With NZ the product of a position's nonzero factors, Z that of
// its zero factors (0, or 1 when there are none, carrying the zero
// factors' tangents), c their number and SZ their sum (0, carrying their
// tangents), the product of the factors other than f is (NZ/f)·Z for a
// nonzero f, and NZ·W for a zero f, where W is the product of the other
// zero factors: 1 when c = 1, SZ - f (the other zero) when c = 2, and 0
// when c > 2 (a product of two or more zeros, whose derivative is 0 too).
func scatterMulJVP(params any, x, t []*tensor, _ *tensor) *tensor {
	axis := params.(AxisParams).Axis
	op, idx, upd := x[0], x[1], x[2]
	dt := op.DType()
	zop, zupd := eq(op, constLike(0, op)), eq(upd, constLike(0, upd))
	nonzero := func(z, v *tensor) *tensor { return sel(z, constLike(1, v), v) }
	zeroPart := func(z, v *tensor) *tensor { return sel(z, v, constLike(1, v)) }
	zeroSum := func(z, v *tensor) *tensor { return sel(z, v, constLike(0, v)) }
	cnt := interp.Bind1(ScatterAdd, params, convert(zop, dt), idx, convert(zupd, dt))
	nzp := interp.Bind1(ScatterMul, params, nonzero(zop, op), idx, nonzero(zupd, upd))
	zp := interp.Bind1(ScatterMul, params, zeroPart(zop, op), idx, zeroPart(zupd, upd))
	zs := interp.Bind1(ScatterAdd, params, zeroSum(zop, op), idx, zeroSum(zupd, upd))
	others := func(f, z, c, nzp, zp, zs *tensor) *tensor {
		w := sel(eq(c, constLike(1, c)), constLike(1, f),
			sel(eq(c, constLike(2, c)), sub(zs, f), constLike(0, f)))
		return sel(z, mul(nzp, w), mul(div(nzp, nonzero(z, f)), zp))
	}
	var a *tensor
	if t[0] != nil {
		a = mul(t[0], others(op, zop, cnt, nzp, zp, zs))
	}
	if t[2] != nil {
		g := func(v *tensor) *tensor { return interp.Bind1(Gather, AxisParams{Axis: axis}, v, idx) }
		d := mul(t[2], others(upd, zupd, g(cnt), g(nzp), g(zp), g(zs)))
		base := a
		if base == nil {
			base = zerosLike(interp.AvalOf(op))
		}
		return interp.Bind1(ScatterAdd, params, base, idx, d)
	}
	return a
}

// scatterExtremumJVP: the tangent of the chosen element; where several
// elements (the operand's and updates') tie for the extremum, each gets
// an equal share of it (as reduce_max's rule and torch's scatter_reduce
// do). Where the result is NaN no element equals it and the tangent is 0.
func scatterExtremumJVP(params any, x, t []*tensor, out *tensor) *tensor {
	axis := params.(AxisParams).Axis
	op, idx, upd := x[0], x[1], x[2]
	dt := op.DType()
	mop := eq(op, out)
	mupd := eq(upd, interp.Bind1(Gather, AxisParams{Axis: axis}, out, idx))
	cnt := interp.Bind1(ScatterAdd, params, convert(mop, dt), idx, convert(mupd, dt))
	cnt = interp.Bind1(Max, nil, cnt, constLike(1, cnt))
	var num *tensor
	if t[0] != nil {
		num = sel(mop, t[0], constLike(0, out))
	}
	if t[2] != nil {
		base := num
		if base == nil {
			base = zerosLike(interp.AvalOf(op))
		}
		num = interp.Bind1(ScatterAdd, params, base, idx, sel(mupd, t[2], constLike(0, upd)))
	}
	return div(num, cnt)
}
