package prims

import (
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

// The elementwise family: unary and binary math, comparisons, logic,
// select, convert_element_type, copy, stop_gradient and the in-place
// arithmetic. Each group of primitives is followed by the init that sets
// its rules (JVP, transpose, NonDifferentiable).

func unary(name string, c dclass) *interp.Prim {
	p := interp.NewPrim(name, interp.Pure, func(_ any, in []aval) []aval {
		checkArity(in, 1)
		checkClass(c, in[0])
		return one(in[0])
	})
	p.Elementwise = &interp.ElementwiseRule{Arity: 1, Accepts: c.accepts}
	return p
}

// binary registers an elementwise binary primitive whose result has the
// operands' dtype, or result when it is valid.
func binary(name string, c dclass, result backend.DType) *interp.Prim {
	p := interp.NewPrim(name, interp.Pure, func(_ any, in []aval) []aval {
		checkArity(in, 2)
		sameAvals(in)
		checkClass(c, in[0])
		if result.IsValid() {
			return one(aval{Shape: in[0].Shape, DType: result})
		}
		return one(in[0])
	})
	p.Elementwise = &interp.ElementwiseRule{Arity: 2, Accepts: c.accepts, Result: result}
	return p
}

const (
	sameType = backend.Invalid
	toBool   = backend.Bool
)

// inplace registers the mutation primitive dst ← pure(dst, src).
func inplace(pure *interp.Prim) *interp.Prim {
	p := interp.NewPrim(pure.Name+"_", interp.Mutation, func(params any, in []aval) []aval {
		checkArity(in, 2)
		sameAvals(in)
		out := pure.Abstract(params, in)
		if !out[0].Equal(in[0]) {
			interp.Panicf("result dtype %v differs from the destination's", out[0].DType)
		}
		return one(in[0])
	})
	p.Pure = pure
	return p
}

// Reference is the meaning of an elementwise unary float primitive in
// float64 arithmetic, kept as data next to the primitive's definition
// (withReference). It is the one description every other package derives
// from: the CPU backend runs F as the primitive's kernel unless a faster
// one is registered, and the conformance suite (backend/backendtest)
// checks every backend's kernel against F, within the error F's
// condition number allows.
type Reference struct {
	// F is the primitive's value at x.
	F func(x float64) float64
	// D is F's derivative at x, which bounds the error a kernel may make
	// (the condition number x·D(x)).
	D func(x float64) float64
	// Lo and Hi bound the random arguments tests draw (edge values such
	// as 0, ±Inf and NaN are drawn besides).
	Lo, Hi float64
	// Known are points {x, F(x)} whose values come from outside F
	// (closed forms, published tables): F is the oracle of the default
	// kernel and of the op registry, so these are what checks F itself
	// (TestReferencesKnownValues). Each Reference needs at least two.
	Known [][2]float64
}

var (
	references   = map[*interp.Prim]Reference{}
	referenceOrd []*interp.Prim
)

// withReference records r as p's float64 meaning and returns p; it is
// called while package variables are initialized.
func withReference(p *interp.Prim, r Reference) *interp.Prim {
	references[p] = r
	referenceOrd = append(referenceOrd, p)
	return p
}

// ReferenceOf returns the float64 meaning of the elementwise primitive p,
// and false when p has none.
func ReferenceOf(p *interp.Prim) (Reference, bool) {
	r, ok := references[p]
	return r, ok
}

// References returns the primitives that have a Reference, in the order
// they are defined.
func References() []*interp.Prim { return append([]*interp.Prim(nil), referenceOrd...) }

// Elementwise unary primitives.
var (
	Neg      = unary("neg", numeric)
	Abs      = unary("abs", numeric)
	Sign     = unary("sign", numeric)
	Floor    = unary("floor", floats)
	Ceil     = unary("ceil", floats)
	Round    = unary("round", floats) // half away from zero, like C's round
	Exp      = unary("exp", floats)
	Log      = unary("log", floats)
	Log1p    = unary("log1p", floats)
	Expm1    = unary("expm1", floats)
	Sqrt     = unary("sqrt", floats)
	Rsqrt    = unary("rsqrt", floats)
	Sin      = unary("sin", floats)
	Cos      = unary("cos", floats)
	Tan      = unary("tan", floats)
	Tanh     = unary("tanh", floats)
	Logistic = unary("logistic", floats)
	Erf      = unary("erf", floats)
	Not      = unary("not", logical) // logical not for bool, bitwise for i64
)

func init() {
	Sign.JVP = zeroJVP(Sign)
	for _, p := range []*interp.Prim{Floor, Ceil, Round, Not} {
		p.NonDifferentiable = true
	}
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
	defTranspose(Neg, linear1, func(_ any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		return []*tensor{neg(ct)}
	})
}

// Sinc is the normalized sinc, sin(πx)/(πx), and 1 at x = 0 (numpy's
// sinc). Its kernel is its Reference unless a backend registers one.
var Sinc = withReference(unary("sinc", floats), Reference{F: sinc, D: sincDerivative, Lo: -5, Hi: 5,
	// sin(πx) is exact at these x: sinc(½) = 2/π, sinc(¼) = 2√2/π,
	// sinc(1/6) = 3/π, sinc(−5/2) = 2/(5π), sinc(1) = sinc(−3) = 0.
	Known: [][2]float64{{0, 1}, {0.5, 2 / math.Pi}, {0.25, 2 * math.Sqrt2 / math.Pi}, {1.0 / 6, 3 / math.Pi}, {-2.5, 0.4 / math.Pi}, {1, 0}, {-3, 0}}})

func init() {
	// sinc′(x) = (cos(πx) − sinc(x))/x, and 0 at x = 0. The quotient is
	// taken at x = 1 where x = 0, so no NaN reaches a derivative of it.
	// At x = 0 the tangent is sinc′'s Maclaurin polynomial
	// −π²x/3 + π⁴x³/30 − π⁶x⁵/840 (value 0), so derivatives of the rule
	// itself are right there too: sinc″(0) = −π²/3, up to the sixth
	// derivative.
	defScaleJVP(Sinc, func(x, y *tensor) *tensor {
		zero := eq(x, constLike(0, x))
		xs := sel(zero, constLike(1, x), x)
		c := interp.Bind1(Cos, nil, mul(constLike(math.Pi, xs), xs))
		x2 := mul(x, x)
		pi2 := math.Pi * math.Pi
		poly := mul(x, add(constLike(-pi2/3, x), mul(x2, add(constLike(pi2*pi2/30, x), mul(x2, constLike(-pi2*pi2*pi2/840, x))))))
		return sel(zero, poly, div(sub(c, y), xs))
	})
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	p := math.Pi * x
	return math.Sin(p) / p
}

func sincDerivative(x float64) float64 {
	if x == 0 {
		return 0
	}
	return (math.Cos(math.Pi*x) - sinc(x)) / x
}

// GELU is the exact Gaussian error linear unit, x·Φ(x) with Φ the
// standard normal distribution function (torch's gelu, jax.nn.gelu with
// approximate=False): one primitive, so that a model's GELU is one
// kernel forward and one multiplication backward (by GELUGrad, computed
// with the forward) instead of a chain of elementwise operations and
// their transposes, each a pass over memory in eager code.
var GELU = withReference(unary("gelu", floats), Reference{F: gelu, D: geluDerivative, Lo: -6, Hi: 6,
	// Φ(1) = 0.8413447460685429, Φ(2) = 0.9772498680518208 and
	// Φ(−3) = 0.0013498980316301 (normal tables); GELU(0) = 0.
	Known: [][2]float64{{0, 0}, {1, 0.8413447460685429}, {-1, -(1 - 0.8413447460685429)}, {2, 2 * 0.9772498680518208}, {-3, -3 * 0.0013498980316301}}})

// GELUGrad is GELU's derivative, Φ(x) + x·φ(x) with φ the standard
// normal density.
var GELUGrad = withReference(unary("gelu_grad", floats), Reference{F: geluDerivative, D: geluSecond, Lo: -6, Hi: 6,
	// φ(1) = e^(−½)/√(2π) = 0.24197072451914337.
	Known: [][2]float64{{0, 0.5}, {1, 0.8413447460685429 + 0.24197072451914337}, {-1, 1 - 0.8413447460685429 - 0.24197072451914337}}})

func init() {
	defScaleJVP(GELU, func(x, _ *tensor) *tensor { return interp.Bind1(GELUGrad, nil, x) })
	// GELU″(x) = φ(x)·(2 − x²), with x clamped to ±40 first: φ is 0
	// there in float64, and the clamp keeps x² finite, so the product is
	// 0 for every finite x (φ(x)·x² was 0·∞ past 1e154), at every order.
	// The clamp selects (as peel's geluClamp does), so beyond it x gets
	// no cotangent at all rather than a zero weight times a huge one.
	defScaleJVP(GELUGrad, func(x, _ *tensor) *tensor {
		hi, lo := constLike(40, x), constLike(-40, x)
		xc := sel(interp.Bind1(Gt, nil, x, hi), hi, x)
		xc = sel(interp.Bind1(Lt, nil, xc, lo), lo, xc)
		x2 := mul(xc, xc)
		phi := scale(1/math.Sqrt(2*math.Pi), interp.Bind1(Exp, nil, scale(-0.5, x2)))
		return mul(phi, sub(constLike(2, x), x2))
	})
}

// GELUTanh is the tanh approximation of GELU,
// x·(½ + ½·tanh(u)) with u = √(2/π)·(x_c + 0.044715·x_c³) and x_c = x
// clamped to ±GELUTanhLimit (torch's gelu with approximate='tanh',
// jax.nn.gelu's default): one primitive, forward and backward (by
// GELUTanhGrad), as GELU is, where the composite was eleven elementwise
// passes forward. The gate ½ + ½·tanh(u) is computed as the logistic
// σ(2u), which has no cancellation where the gate is small (x below −3).
// Beyond the clamp the gate has reached 0 or 1 in float32 and float64,
// so the value is x or −0 and the gate's argument has no derivative.
var GELUTanh = withReference(unary("gelu_tanh", floats), Reference{F: geluTanh, D: geluTanhDerivative, Lo: -6, Hi: 6,
	// torch.nn.functional.gelu(x, approximate='tanh') in float64.
	Known: [][2]float64{{0, 0}, {1, 0.8411919906082768}, {-1, -0.15880800939172324}, {2, 1.954597694087775}, {-3, -0.0036373920817729943}}})

// GELUTanhGrad is GELUTanh's derivative, σ(2u) + x·2σ(2u)σ(−2u)·u′
// inside the clamp, the gate's constant 1 or 0 beyond it.
var GELUTanhGrad = withReference(unary("gelu_tanh_grad", floats), Reference{F: geluTanhDerivative, D: geluTanhSecond, Lo: -6, Hi: 6,
	// torch's autograd of the same, in float64.
	Known: [][2]float64{{0, 0.5}, {1, 1.0829640838457826}, {-1, -0.08296408384578252}, {2, 1.0860992566236183}, {-3, -0.011584166630969648}}})

// GELUTanhLimit is where GELUTanh has reached its asymptotes in float32
// and float64 alike: tanh(√(2/π)·(10 + 0.044715·10³)) = tanh(43.6)
// rounds to 1, so beyond ±10 the function is x and −0.
const GELUTanhLimit = 10

// The constants of GELUTanh: √(2/π) and the cubic's coefficient.
const (
	GELUTanhK = 0.7978845608028654
	GELUTanhC = 0.044715
)

func init() {
	defScaleJVP(GELUTanh, func(x, _ *tensor) *tensor { return interp.Bind1(GELUTanhGrad, nil, x) })
	// GELUTanh″ inside the clamp, 0 beyond it (where the first
	// derivative is the constant 1 or 0): with u as above, q = u′ =
	// k·(1 + 3c·x²), t = tanh(u) = σ(2u) − σ(−2u) and s = 1 − t² =
	// 4σ(2u)σ(−2u), GELUTanh″ = s·(q + x·(3kc·x − t·q²)). x is clamped
	// first (select, so that beyond the clamp it gets no cotangent at
	// all), which keeps x³ finite.
	defScaleJVP(GELUTanhGrad, func(x, _ *tensor) *tensor {
		hi, lo := constLike(GELUTanhLimit, x), constLike(-GELUTanhLimit, x)
		out := interp.Bind1(Or, nil, interp.Bind1(Gt, nil, x, hi), interp.Bind1(Lt, nil, x, lo))
		xc := sel(interp.Bind1(Gt, nil, x, hi), hi, x)
		xc = sel(interp.Bind1(Lt, nil, xc, lo), lo, xc)
		x2 := mul(xc, xc)
		u2 := scale(2*GELUTanhK, mul(xc, add(constLike(1, x), scale(GELUTanhC, x2))))
		sp := interp.Bind1(Logistic, nil, u2)
		sm := interp.Bind1(Logistic, nil, interp.Bind1(Neg, nil, u2))
		t := sub(sp, sm)
		s := scale(4, mul(sp, sm))
		q := scale(GELUTanhK, add(constLike(1, x), scale(3*GELUTanhC, x2)))
		in := mul(s, add(q, mul(xc, sub(scale(3*GELUTanhK*GELUTanhC, xc), mul(t, mul(q, q))))))
		return sel(out, constLike(0, x), in)
	})
}

// sigmoid is the logistic function in float64, without cancellation.
func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// geluTanhU returns 2u, twice GELUTanh's tanh argument, at x_c, and
// u′ = k·(1 + 3c·x_c²).
func geluTanhU(xc float64) (u2, du float64) {
	return 2 * GELUTanhK * xc * (1 + GELUTanhC*xc*xc), GELUTanhK * (1 + 3*GELUTanhC*xc*xc)
}

// geluTanh is GELUTanh in float64: x beyond +10 and x·0 beyond −10 (the
// gate's values there in float32 and float64 as ½ + ½·tanh(u), which σ(2u)
// approaches but does not reach: σ(−87) is 1e−38, and huge x times it
// would not be 0).
func geluTanh(x float64) float64 {
	switch {
	case x > GELUTanhLimit:
		return x
	case x < -GELUTanhLimit:
		return x * 0
	}
	u2, _ := geluTanhU(x) // NaN stays NaN
	return x * sigmoid(u2)
}

// geluTanhDerivative is GELUTanh′ in float64: 1 beyond +10, −0 beyond −10
// (the gate's constant values there; GELUTanh′ is negative below −0.75).
func geluTanhDerivative(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return x
	case x > GELUTanhLimit:
		return 1
	case x < -GELUTanhLimit:
		return math.Copysign(0, -1)
	}
	u2, q := geluTanhU(x)
	sp, sm := sigmoid(u2), sigmoid(-u2)
	return sp + 2*x*sp*sm*q
}

// geluTanhSecond is GELUTanh″ in float64 (0 beyond the clamp).
func geluTanhSecond(x float64) float64 {
	if x > GELUTanhLimit || x < -GELUTanhLimit {
		return 0
	}
	u2, q := geluTanhU(x)
	sp, sm := sigmoid(u2), sigmoid(-u2)
	t, s := sp-sm, 4*sp*sm
	return s * (q + x*(3*GELUTanhK*GELUTanhC*x-t*q*q))
}

// gelu is GELU, −0 up to x = −40 (its limit, which it has reached in
// float64 there; the formula's −∞·0 would be NaN at −∞).
func gelu(x float64) float64 {
	if x <= -40 {
		return math.Copysign(0, -1)
	}
	return 0.5 * x * math.Erfc(-x/math.Sqrt2)
}

// geluDerivative is GELU′, 1 from x = 40 on and −0 up to x = −40 (its
// limits, which it has reached in float64 there, GELU′ being negative
// below −0.75), so ±Inf give them too (the formula's ±∞·0 would be NaN).
func geluDerivative(x float64) float64 {
	switch {
	case x >= 40:
		return 1
	case x <= -40:
		return math.Copysign(0, -1)
	}
	return 0.5*math.Erfc(-x/math.Sqrt2) + x*math.Exp(-x*x/2)/math.Sqrt(2*math.Pi)
}

func geluSecond(x float64) float64 {
	x = math.Max(-40, math.Min(40, x))
	return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) * (2 - x*x)
}

// Elementwise binary primitives. Operands have equal shapes and dtypes.
var (
	Add   = binary("add", numeric, sameType)
	Sub   = binary("sub", numeric, sameType)
	Mul   = binary("mul", numeric, sameType)
	Div   = binary("div", numeric, sameType) // integer division truncates toward zero
	Pow   = binary("pow", numeric, sameType)
	Max   = binary("max", anyType, sameType) // NaN propagates
	Min   = binary("min", anyType, sameType)
	Rem   = binary("rem", numeric, sameType) // sign of the dividend, like C's fmod
	Atan2 = binary("atan2", floats, sameType)
	And   = binary("and", logical, sameType)
	Or    = binary("or", logical, sameType)
	Eq    = binary("eq", anyType, toBool)
	Ne    = binary("ne", anyType, toBool)
	Lt    = binary("lt", anyType, toBool)
	Le    = binary("le", anyType, toBool)
	Gt    = binary("gt", anyType, toBool)
	Ge    = binary("ge", anyType, toBool)
)

// FloorDivide is numpy's floor_divide of floats: the floor of the exact
// quotient (not of the rounded one), from the exact remainder fmod(x, y),
// in the operands' arithmetic; ±Inf or NaN for y = 0.
var FloorDivide = binary("floor_divide", floats, sameType)

func init() {
	for _, p := range []*interp.Prim{FloorDivide, And, Or, Eq, Ne, Lt, Le, Gt, Ge} {
		p.NonDifferentiable = true
	}
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
	defTranspose(Add, linear2, func(_ any, ct *tensor, _ []*tensor, linear []bool) []*tensor {
		return only(linear, ct, ct)
	})
	defTranspose(Sub, linear2, func(_ any, ct *tensor, _ []*tensor, linear []bool) []*tensor {
		res := []*tensor{ct, nil}
		if linear[1] {
			res[1] = neg(ct)
		}
		return only(linear, res...)
	})
	defTranspose(Mul, linear2, func(_ any, ct *tensor, args []*tensor, linear []bool) []*tensor {
		res := make([]*tensor, 2)
		if i := oneLinear("mul", linear); i == 0 {
			res[0] = mul(ct, args[1])
		} else {
			res[1] = mul(args[0], ct)
		}
		return res
	})
	defTranspose(Div, linearFirst, func(_ any, ct *tensor, args []*tensor, _ []bool) []*tensor {
		return []*tensor{div(ct, args[1]), nil}
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

// In-place (mutation) forms of the binary arithmetic primitives:
// dst ← op(dst, src).
var (
	AddInPlace   = inplace(Add)
	SubInPlace   = inplace(Sub)
	MulInPlace   = inplace(Mul)
	DivInPlace   = inplace(Div)
	PowInPlace   = inplace(Pow)
	MaxInPlace   = inplace(Max)
	MinInPlace   = inplace(Min)
	RemInPlace   = inplace(Rem)
	Atan2InPlace = inplace(Atan2)
	AndInPlace   = inplace(And)
	OrInPlace    = inplace(Or)
)

// Copy returns a fresh copy of its operand (materializing views).
var Copy = unary("copy", anyType)

func init() {
	defSameJVP(Copy)
	defTranspose(Copy, linear1, func(_ any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		return []*tensor{ct}
	})
}

// StopGradient is the identity on values whose tangent is zero: autodiff
// treats its result as a constant.
var StopGradient = unary("stop_gradient", anyType)

func init() {
	StopGradient.JVP = zeroJVP(StopGradient)
}

// CopyInPlace is the mutation dst ← src (copy_). src has dst's shape and
// dtype.
var CopyInPlace = func() *interp.Prim {
	p := interp.NewPrim("copy_", interp.Mutation, func(_ any, in []aval) []aval {
		checkArity(in, 2)
		sameAvals(in)
		return one(in[0])
	})
	p.Pure, p.DropsDst = Copy, true
	return p
}()

// Where is the primitive printed "select" (lax.select, StableHLO's
// select; peel.Where lowers to it): select(pred, onTrue, onFalse), where
// pred is bool and the branches have pred's shape and one dtype.
var Where = interp.NewPrim("select", interp.Pure, func(_ any, in []aval) []aval {
	checkArity(in, 3)
	if in[0].DType != backend.Bool {
		interp.Panicf("predicate has dtype %v, not bool", in[0].DType)
	}
	if !interp.ShapeEqual(in[0].Shape, in[1].Shape) {
		interp.Panicf("predicate and branches must have equal shapes")
	}
	sameAvals(in[1:])
	return one(in[1])
})

func init() {
	defJVP(Where, func(_ any, x, t []*tensor, _ *tensor) *tensor {
		return sel(x[0], orZeros(t[1], interp.AvalOf(x[1])), orZeros(t[2], interp.AvalOf(x[2])))
	})
	defTranspose(Where, []bool{false, true, true}, func(_ any, ct *tensor, args []*tensor, linear []bool) []*tensor {
		z := zerosLike(interp.AvalOf(ct))
		res := make([]*tensor, 3)
		if linear[1] {
			res[1] = sel(args[0], ct, z)
		}
		if linear[2] {
			res[2] = sel(args[0], z, ct)
		}
		return res
	})
}

// ConvertParams are the parameters of convert_element_type.
type ConvertParams struct{ DType backend.DType }

func (p ConvertParams) String() string { return "dtype=" + p.DType.String() }

// ConvertElementType converts to ConvertParams.DType by the one
// conversion rule of backend/convert.go (float → int truncates toward
// zero and saturates, NaN → 0; nonzero → true).
var ConvertElementType = graphio.Params[ConvertParams](interp.NewPrim("convert_element_type", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 1)
	p := params.(ConvertParams)
	if !p.DType.IsValid() {
		interp.Panicf("invalid target dtype")
	}
	return one(aval{Shape: in[0].Shape, DType: p.DType})
}))

func init() {
	defJVP(ConvertElementType, func(params any, x, t []*tensor, _ *tensor) *tensor {
		return convert(t[0], params.(ConvertParams).DType)
	})
	defTranspose(ConvertElementType, linear1, func(_ any, ct *tensor, args []*tensor, _ []bool) []*tensor {
		return []*tensor{convert(ct, args[0].DType())}
	})
}
