package prims

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

// Elementwise primitives of inverse trigonometric, hyperbolic,
// logarithmic and special functions, and integer shifts. Each computes in
// float64 and rounds once for float32 operands.
var (
	Asin   = unary("asin", floats)
	Acos   = unary("acos", floats)
	Atan   = unary("atan", floats)
	Sinh   = unary("sinh", floats)
	Cosh   = unary("cosh", floats)
	Asinh  = unary("asinh", floats)
	Acosh  = unary("acosh", floats)
	Atanh  = unary("atanh", floats)
	Log2   = unary("log2", floats)
	Log10  = unary("log10", floats)
	Exp2   = unary("exp2", floats)
	Erfc   = unary("erfc", floats)
	ErfInv = unary("erf_inv", floats) // NaN outside [-1, 1], ±Inf at ±1
	Lgamma = unary("lgamma", floats)  // log|Γ(x)|; +Inf at the poles

	// Hypot is √(x² + y²) without overflow or underflow (C's hypot:
	// ±Inf in either operand gives +Inf, even with a NaN in the other).
	Hypot = binary("hypot", floats, sameType)
	// Copysign is |x| with the sign bit of y (C's copysign; NaNs and
	// zeros carry signs too).
	Copysign = binary("copysign", floats, sameType)

	// ShiftLeft is x << y on i64; a shift count outside [0, 63] gives 0
	// (lax.shift_left).
	ShiftLeft = intBinary("shift_left")
	// ShiftRightArithmetic is x >> y on i64 with sign extension; a shift
	// count outside [0, 63] gives 0 for x ≥ 0 and -1 for x < 0
	// (lax.shift_right_arithmetic).
	ShiftRightArithmetic = intBinary("shift_right_arithmetic")
)

// MaxPolygammaOrder is the largest order polygamma accepts: n! must be
// a float64 (171! is not).
const MaxPolygammaOrder = 170

// PolygammaParams are the parameters of polygamma: the order N ≥ 0 of
// the derivative of the digamma function (N = 0 is digamma itself).
type PolygammaParams struct{ N int }

func (p PolygammaParams) String() string { return fmt.Sprintf("n=%d", p.N) }

// Polygamma is ψ⁽ⁿ⁾(x), the n-th derivative of the digamma function
// ψ = Γ'/Γ, on floats, with n = PolygammaParams.N (a parameter, not an
// operand, so that the JVP of order n is the primitive of order n+1). At
// the poles x = 0, -1, -2, … it is +Inf for odd n; for even n, -Inf at
// +0 and +Inf at -0 (the limits from those sides) and NaN at the
// negative integers (the two sides differ in sign); ψ⁽ⁿ⁾(+Inf) is +Inf
// for n = 0 and 0 otherwise; ψ⁽ⁿ⁾(-Inf) is NaN.
//
// It is not an Elementwise-rule primitive (its rule carries a
// parameter); its batching rule is the elementwise one all the same.
var Polygamma = graphio.Params[PolygammaParams](interp.NewPrim("polygamma", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 1)
	p, ok := params.(PolygammaParams)
	if !ok || p.N < 0 || p.N > MaxPolygammaOrder {
		interp.Panicf("order must be a PolygammaParams with 0 ≤ N ≤ %d, got %v", MaxPolygammaOrder, params)
	}
	checkClass(floats, in[0])
	return one(in[0])
}))

// intBinary registers an elementwise binary primitive on i64 operands.
func intBinary(name string) *interp.Prim {
	isInt := func(d backend.DType) bool { return d.IsInteger() }
	p := interp.NewPrim(name, interp.Pure, func(_ any, in []aval) []aval {
		checkArity(in, 2)
		sameAvals(in)
		if !isInt(in[0].DType) {
			interp.Panicf("operand of dtype %v is not an integer dtype", in[0].DType)
		}
		return one(in[0])
	})
	p.Elementwise = &interp.ElementwiseRule{Arity: 2, Accepts: isInt}
	return p
}

func un1(p *interp.Prim, x *tensor) *tensor { return interp.Bind1(p, nil, x) }

func polygamma(n int, x *tensor) *tensor {
	return interp.Bind1(Polygamma, PolygammaParams{N: n}, x)
}

func init() {
	ShiftLeft.NonDifferentiable = true
	ShiftRightArithmetic.NonDifferentiable = true

	ones := func(x *tensor) *tensor { return constLike(1, x) }
	// 1 − x², as (1 − x)(1 + x): exact near |x| = 1, where 1 − x·x loses
	// the low bits of x².
	oneMinusSq := func(x *tensor) *tensor { return mul(sub(ones(x), x), add(ones(x), x)) }
	defJVP(Asin, func(_ any, x, t []*tensor, _ *tensor) *tensor {
		return div(t[0], un1(Sqrt, oneMinusSq(x[0])))
	})
	defJVP(Acos, func(_ any, x, t []*tensor, _ *tensor) *tensor {
		return neg(div(t[0], un1(Sqrt, oneMinusSq(x[0]))))
	})
	defJVP(Atan, func(_ any, x, t []*tensor, _ *tensor) *tensor {
		return div(t[0], add(ones(x[0]), mul(x[0], x[0])))
	})
	defScaleJVP(Sinh, func(x, _ *tensor) *tensor { return un1(Cosh, x) })
	defScaleJVP(Cosh, func(x, _ *tensor) *tensor { return un1(Sinh, x) })
	// asinh' = 1/√(x² + 1) = 1/hypot(x, 1), which does not overflow.
	defJVP(Asinh, func(_ any, x, t []*tensor, _ *tensor) *tensor {
		return div(t[0], interp.Bind1(Hypot, nil, x[0], ones(x[0])))
	})
	// acosh' = 1/(√(x − 1)·√(x + 1)), which does not overflow.
	defJVP(Acosh, func(_ any, x, t []*tensor, _ *tensor) *tensor {
		d := mul(un1(Sqrt, sub(x[0], ones(x[0]))), un1(Sqrt, add(x[0], ones(x[0]))))
		return div(t[0], d)
	})
	defJVP(Atanh, func(_ any, x, t []*tensor, _ *tensor) *tensor {
		return div(t[0], oneMinusSq(x[0]))
	})
	defJVP(Log2, func(_ any, x, t []*tensor, _ *tensor) *tensor {
		return div(t[0], mul(x[0], constLike(math.Ln2, x[0])))
	})
	defJVP(Log10, func(_ any, x, t []*tensor, _ *tensor) *tensor {
		return div(t[0], mul(x[0], constLike(math.Ln10, x[0])))
	})
	defScaleJVP(Exp2, func(_, y *tensor) *tensor { return mul(y, constLike(math.Ln2, y)) })
	defScaleJVP(Erfc, func(x, _ *tensor) *tensor {
		e := un1(Exp, neg(mul(x, x)))
		return mul(constLike(-2/math.Sqrt(math.Pi), x), e)
	})
	// erfinv' = √π/2·exp(erfinv(x)²).
	defScaleJVP(ErfInv, func(_, y *tensor) *tensor {
		return mul(constLike(math.Sqrt(math.Pi)/2, y), un1(Exp, mul(y, y)))
	})
	defScaleJVP(Lgamma, func(x, _ *tensor) *tensor { return polygamma(0, x) })
	defJVP(Polygamma, func(params any, x, t []*tensor, _ *tensor) *tensor {
		return mul(t[0], polygamma(params.(PolygammaParams).N+1, x[0]))
	})
	defJVP(Hypot, hypotJVP)
	defJVP(Copysign, copysignJVP)
}

// hypotJVP: d hypot(x, y) = (x·tx + y·ty)/h, with the coefficients 0 at
// the origin (a subgradient: h is not differentiable there).
func hypotJVP(_ any, x, t []*tensor, out *tensor) *tensor {
	zero := constLike(0, out)
	atZero := eq(out, zero)
	safe := sel(atZero, constLike(1, out), out)
	coef := func(v *tensor) *tensor { return sel(atZero, zero, div(v, safe)) }
	var a, b *tensor
	if t[0] != nil {
		a = mul(t[0], coef(x[0]))
	}
	if t[1] != nil {
		b = mul(t[1], coef(x[1]))
	}
	return addNil(a, b)
}

// copysignJVP follows JAX, where copysign(x, y) is |x| or −|x| by the
// sign bit of y and the derivative of |x| is 1 for x ≥ 0 (zeros of both
// signs included) and −1 below: the tangent is tx·(x ≥ 0 ? 1 : −1)·
// copysign(1, y), and y has none.
func copysignJVP(_ any, x, t []*tensor, _ *tensor) *tensor {
	if t[0] == nil {
		return nil
	}
	ones := constLike(1, x[0])
	s := interp.Bind1(Copysign, nil, ones, x[1])
	abs := sel(interp.Bind1(Ge, nil, x[0], constLike(0, x[0])), ones, constLike(-1, x[0]))
	return mul(t[0], mul(abs, s))
}
