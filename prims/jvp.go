package prims

import (
	"math"

	"github.com/peel-ml/peel/interp"
)

// JVP rules. Each rule receives the primals (concrete tensors or tracers of
// lower levels, used only through Bind) and their tangents (nil for a
// symbolic zero; integer and bool operands never have one), computes the
// primal results with Bind and returns one tangent per result, nil where
// it is zero. Tangents have their primal's dtype; results of integer or
// bool dtype have nil tangents. A rule is written with Bind, so it can be
// transformed again (second derivatives, vmap of a derivative), and the
// tangent is computed by operations linear in the tangents whose other
// operands depend only on primals, so linearize can stage it and
// transpose it.
//
// Zeros are materialized only where a primitive needs a whole operand
// (select, pad, concatenate, scatter and dynamic_update_slice with one
// tangent missing).

// tangentFn computes the tangent of a primitive's single result from the
// primals x, their tangents t (at least one non-nil) and the primal
// result out.
type tangentFn func(params any, x, t []*tensor, out *tensor) *tensor

// defJVP sets p's JVP rule: the primal by Bind, the tangent by f unless
// every tangent is zero or the result is not a float.
func defJVP(p *interp.Prim, f tangentFn) {
	p.JVP = func(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
		outs := interp.Bind(p, params, primals...)
		if allNil(tangents) || !outs[0].DType().IsFloat() {
			return outs, []*tensor{nil}
		}
		return outs, []*tensor{f(params, primals, tangents, outs[0])}
	}
}

// defScaleJVP defines the JVP of a unary primitive whose derivative is
// coef(x, out): the tangent is t·coef.
func defScaleJVP(p *interp.Prim, coef func(x, out *tensor) *tensor) {
	defJVP(p, func(_ any, x, t []*tensor, out *tensor) *tensor {
		return mul(t[0], coef(x[0], out))
	})
}

// defSameJVP defines the JVP of a primitive linear in its first operand
// alone (the others, if any, are integer operands such as indices): the
// tangent is the primitive applied to the tangent.
func defSameJVP(p *interp.Prim) {
	defJVP(p, func(params any, x, t []*tensor, _ *tensor) *tensor {
		args := append([]*tensor{t[0]}, x[1:]...)
		return interp.Bind1(p, params, args...)
	})
}

// zeroJVP is the rule of a primitive whose result has a zero tangent but
// whose primal still flows (stop_gradient, sign).
func zeroJVP(p *interp.Prim) interp.JVPRule {
	return func(params any, primals, _ []*tensor) ([]*tensor, []*tensor) {
		outs := interp.Bind(p, params, primals...)
		return outs, make([]*tensor, len(outs))
	}
}

func init() {
	for _, p := range []*interp.Prim{
		Floor, Ceil, Round, FloorDivide, Not, And, Or, Eq, Ne, Lt, Le, Gt, Ge,
		ArgMax, ArgMin, Iota, Threefry2x32,
	} {
		p.NonDifferentiable = true
	}
	Sign.JVP = zeroJVP(Sign)
	StopGradient.JVP = zeroJVP(StopGradient)

	// Unary elementwise.
	defJVP(Neg, func(_ any, _, t []*tensor, _ *tensor) *tensor { return neg(t[0]) })
	defScaleJVP(Abs, func(x, _ *tensor) *tensor { return interp.Bind1(Sign, nil, x) })
	defScaleJVP(Exp, func(_, y *tensor) *tensor { return y })
	defJVP(Log, func(_ any, x, t []*tensor, _ *tensor) *tensor { return div(t[0], x[0]) })
	defJVP(Log1p, func(_ any, x, t []*tensor, _ *tensor) *tensor {
		return div(t[0], add(x[0], constLike(1, x[0])))
	})
	defScaleJVP(Expm1, func(_, y *tensor) *tensor { return add(y, constLike(1, y)) })
	defJVP(Sqrt, func(_ any, _, t []*tensor, y *tensor) *tensor { return div(t[0], add(y, y)) })
	defScaleJVP(Rsqrt, func(x, y *tensor) *tensor { return div(mul(constLike(-0.5, y), y), x) })
	defScaleJVP(Sin, func(x, _ *tensor) *tensor { return interp.Bind1(Cos, nil, x) })
	defScaleJVP(Cos, func(x, _ *tensor) *tensor { return neg(interp.Bind1(Sin, nil, x)) })
	defScaleJVP(Tan, func(_, y *tensor) *tensor { return add(constLike(1, y), mul(y, y)) })
	defScaleJVP(Tanh, func(_, y *tensor) *tensor { return sub(constLike(1, y), mul(y, y)) })
	defScaleJVP(Logistic, func(_, y *tensor) *tensor { return mul(y, sub(constLike(1, y), y)) })
	defScaleJVP(Erf, func(x, _ *tensor) *tensor {
		e := interp.Bind1(Exp, nil, neg(mul(x, x)))
		return mul(constLike(2/math.Sqrt(math.Pi), x), e)
	})
	defSameJVP(Copy)

	// Binary elementwise.
	defJVP(Add, func(_ any, _, t []*tensor, _ *tensor) *tensor { return addNil(t[0], t[1]) })
	defJVP(Sub, func(_ any, _, t []*tensor, _ *tensor) *tensor {
		switch {
		case t[0] == nil:
			return neg(t[1])
		case t[1] == nil:
			return t[0]
		}
		return sub(t[0], t[1])
	})
	defJVP(Mul, func(_ any, x, t []*tensor, _ *tensor) *tensor {
		var a, b *tensor
		if t[0] != nil {
			a = mul(t[0], x[1])
		}
		if t[1] != nil {
			b = mul(x[0], t[1])
		}
		return addNil(a, b)
	})
	defJVP(Div, divJVP)
	defJVP(Pow, powJVP)
	defJVP(Max, maxMinJVP)
	defJVP(Min, maxMinJVP)
	defJVP(Rem, remJVP)
	defJVP(Atan2, atan2JVP)

	defJVP(Where, func(_ any, x, t []*tensor, _ *tensor) *tensor {
		return sel(x[0], orZeros(t[1], x[1].Aval()), orZeros(t[2], x[2].Aval()))
	})
	defJVP(ConvertElementType, func(params any, x, t []*tensor, _ *tensor) *tensor {
		return convert(t[0], params.(ConvertParams).DType)
	})

	// Reductions and scans.
	defSameJVP(ReduceSum)
	defJVP(ReduceMax, reduceMaxMinJVP)
	defJVP(ReduceMin, reduceMaxMinJVP)
	defJVP(ReduceProd, reduceProdJVP)
	defSameJVP(Cumsum)

	// Shape primitives.
	for _, p := range []*interp.Prim{BroadcastInDim, Reshape, Transpose, Slice, Rev, OptimizationBarrier} {
		defSameJVP(p)
	}
	defJVP(Pad, func(params any, x, t []*tensor, _ *tensor) *tensor {
		return interp.Bind1(Pad, params, orZeros(t[0], x[0].Aval()), orZeros(t[1], x[1].Aval()))
	})
	defJVP(Concatenate, func(params any, x, t []*tensor, _ *tensor) *tensor {
		ts := make([]*tensor, len(x))
		for i := range x {
			ts[i] = orZeros(t[i], x[i].Aval())
		}
		return interp.Bind1(Concatenate, params, ts...)
	})

	// Indexing.
	defSameJVP(Gather)
	defSameJVP(DynamicSlice)
	defJVP(ScatterAdd, func(params any, x, t []*tensor, _ *tensor) *tensor {
		if t[2] == nil {
			return t[0]
		}
		return interp.Bind1(ScatterAdd, params, orZeros(t[0], x[0].Aval()), x[1], t[2])
	})
	defJVP(Scatter, func(params any, x, t []*tensor, _ *tensor) *tensor {
		return interp.Bind1(Scatter, params, orZeros(t[0], x[0].Aval()), x[1], orZeros(t[2], x[2].Aval()))
	})
	defJVP(DynamicUpdateSlice, func(params any, x, t []*tensor, _ *tensor) *tensor {
		args := append([]*tensor{orZeros(t[0], x[0].Aval()), orZeros(t[1], x[1].Aval())}, x[2:]...)
		return interp.Bind1(DynamicUpdateSlice, params, args...)
	})

	defJVP(DotGeneral, func(params any, x, t []*tensor, _ *tensor) *tensor {
		var a, b *tensor
		if t[0] != nil {
			a = interp.Bind1(DotGeneral, params, t[0], x[1])
		}
		if t[1] != nil {
			b = interp.Bind1(DotGeneral, params, x[0], t[1])
		}
		return addNil(a, b)
	})
	defSameJVP(ReduceWindowSum)
	defJVP(ReduceWindowMax, reduceWindowMaxJVP)
	defJVP(ConvGeneralDilated, func(params any, x, t []*tensor, _ *tensor) *tensor {
		// Bilinear: conv(dlhs, rhs) + conv(lhs, drhs).
		var a, b *tensor
		if t[0] != nil {
			a = interp.Bind1(ConvGeneralDilated, params, t[0], x[1])
		}
		if t[1] != nil {
			b = interp.Bind1(ConvGeneralDilated, params, x[0], t[1])
		}
		return addNil(a, b)
	})
}

// divJVP: d(x/y) = tx/y − ty·(x/y)/y.
func divJVP(_ any, x, t []*tensor, out *tensor) *tensor {
	switch {
	case t[1] == nil:
		return div(t[0], x[1])
	case t[0] == nil:
		return mul(t[1], neg(div(out, x[1])))
	}
	return div(sub(t[0], mul(t[1], out)), x[1])
}

// powJVP: d(x^y) = tx·y·x^(y−1) + ty·x^y·log x, where the first
// coefficient is 0 where y = 0 and the second is 0 where x = 0 (their
// limits, which avoid 0·inf = NaN).
func powJVP(_ any, x, t []*tensor, out *tensor) *tensor {
	var a, b *tensor
	if t[0] != nil {
		y := x[1]
		c := mul(y, interp.Bind1(Pow, nil, x[0], sub(y, constLike(1, y))))
		a = mul(t[0], sel(eq(y, constLike(0, y)), constLike(0, y), c))
	}
	if t[1] != nil {
		c := mul(out, interp.Bind1(Log, nil, x[0]))
		b = mul(t[1], sel(eq(x[0], constLike(0, x[0])), constLike(0, out), c))
	}
	return addNil(a, b)
}

// maxMinJVP: the tangent of the chosen operand; where the operands tie,
// each contributes half (as JAX does), and where the result is NaN
// neither does.
func maxMinJVP(_ any, x, t []*tensor, out *tensor) *tensor {
	ex, ey := eq(x[0], out), eq(x[1], out)
	weight := func(mine, other *tensor) *tensor {
		return sel(mine, sel(other, constLike(0.5, out), constLike(1, out)), constLike(0, out))
	}
	var a, b *tensor
	if t[0] != nil {
		a = mul(t[0], weight(ex, ey))
	}
	if t[1] != nil {
		b = mul(t[1], weight(ey, ex))
	}
	return addNil(a, b)
}

// remJVP: rem(x, y) = x − y·q with q = trunc(x/y) the integer quotient,
// so d = tx − ty·q. q is recovered as round((x − rem)/y), which is exact
// and agrees with the kernel's quotient.
func remJVP(_ any, x, t []*tensor, out *tensor) *tensor {
	if t[1] == nil {
		return t[0]
	}
	q := interp.Bind1(Round, nil, div(sub(x[0], out), x[1]))
	if t[0] == nil {
		return mul(t[1], neg(q))
	}
	return sub(t[0], mul(t[1], q))
}

// atan2JVP: d atan2(x, y) = (tx·y − ty·x)/(x² + y²).
func atan2JVP(_ any, x, t []*tensor, _ *tensor) *tensor {
	d := add(mul(x[0], x[0]), mul(x[1], x[1]))
	var a, b *tensor
	if t[0] != nil {
		a = mul(t[0], div(x[1], d))
	}
	if t[1] != nil {
		b = mul(t[1], neg(div(x[0], d)))
	}
	return addNil(a, b)
}

// reduceMaxMinJVP: the mean of the tangents at the positions equal to the
// extremum (ties share it equally; a NaN extremum gives a NaN tangent).
func reduceMaxMinJVP(params any, x, t []*tensor, out *tensor) *tensor {
	axes := params.(ReduceParams).Axes
	shape := x[0].Shape()
	mask := convert(eq(x[0], unreduce(out, shape, axes)), out.DType())
	return div(reduceSum(mul(t[0], mask), axes), reduceSum(mask, axes))
}

// reduceProdJVP: Σᵢ tᵢ·Πⱼ≠ᵢ xⱼ, with the products of the other elements
// computed without division (exclusive prefix and suffix products over
// the reduced axes flattened into one), so it is exact for any number of
// zeros, and differentiable again.
func reduceProdJVP(params any, x, t []*tensor, out *tensor) *tensor {
	axes := params.(ReduceParams).Axes
	if len(axes) == 0 {
		return t[0]
	}
	shape := x[0].Shape()
	kept := keptAxes(len(shape), axes)
	perm := append(append([]int{}, kept...), axes...)
	flat := make([]int, 0, len(kept)+1)
	n := 1
	for _, a := range kept {
		flat = append(flat, shape[a])
	}
	for _, a := range axes {
		n *= shape[a]
	}
	flat = append(flat, n)
	last := len(kept)
	xs := reshape(transpose(x[0], perm), flat)
	ts := reshape(transpose(t[0], perm), flat)
	return reduceSum(mul(ts, productOfOthers(xs, last)), []int{last})
}
