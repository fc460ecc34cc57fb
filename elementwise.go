package peel

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Elementwise math. Every function here is a composition of primitives
// applied with interp.Bind: promotion, broadcasting and dtype conversion
// are done in this layer so the primitives stay strict, and no function
// reads tensor data, so all of them work under every transform.

// Add returns x + y elementwise, with numpy broadcasting and peel's dtype
// promotion (Go scalars are weakly typed). It panics with *Error if an
// operand is nil or not a tensor or Go number, if both operands are bool,
// or if their shapes do not broadcast.
func Add(x, y any) *Tensor {
	defer interp.Annotate("peel.Add")
	return arith("peel.Add", prims.Add, x, y)
}

// Sub returns x - y elementwise; it panics as Add does.
func Sub(x, y any) *Tensor {
	defer interp.Annotate("peel.Sub")
	return arith("peel.Sub", prims.Sub, x, y)
}

// Mul returns x * y elementwise; it panics as Add does.
func Mul(x, y any) *Tensor {
	defer interp.Annotate("peel.Mul")
	return arith("peel.Mul", prims.Mul, x, y)
}

// Div returns x / y elementwise as true division: integer and bool
// operands are converted to f64 first, as numpy's / does. It panics as Add
// does (bool operands are accepted).
func Div(x, y any) *Tensor {
	defer interp.Annotate("peel.Div")
	return floatBinary("peel.Div", prims.Div, x, y)
}

// FloorDiv returns floor(x / y) elementwise, the integer quotient that
// goes with Mod: x == FloorDiv(x, y)*y + Mod(x, y) (up to rounding for
// floats). For floats it is numpy's floor_divide, derived from the exact
// remainder fmod(x, y) rather than from the rounded quotient:
// FloorDiv(1, 0.1) is 9, because 0.1 is slightly more than a tenth
// (floor(1/0.1) would give 10, as 1/0.1 rounds to 10). A zero quotient
// has the sign of x/y; division by zero gives x/y (±Inf, or NaN for
// 0/0), and an infinite or NaN x gives NaN. For integers it is Python's
// floor division (rounding toward negative infinity); integer division
// by zero is left to the backend. It panics as Add does.
func FloorDiv(x, y any) *Tensor {
	const op = "peel.FloorDiv"
	defer interp.Annotate(op)
	a, b := numericOperands(op, x, y)
	if a.DType().IsFloat() {
		return bin(prims.FloorDivide, a, b)
	}
	q := bin(prims.Div, a, b)
	_, fix := floorFix(a, b)
	return sel(fix, bin(prims.Sub, q, fill(1, q)), q)
}

// floorFix returns the truncated remainder r of integers a / b and where
// truncated division differs from floor division: r is nonzero and its
// sign differs from b's.
func floorFix(a, b *Tensor) (r, fix *Tensor) {
	r = bin(prims.Rem, a, b)
	zero := fill(0, r)
	nonzero := bin(prims.Ne, r, zero)
	signs := bin(prims.Ne, bin(prims.Lt, r, zero), bin(prims.Lt, b, zero))
	return r, bin(prims.And, nonzero, signs)
}

// floatRem returns, for floats, the remainder r = fmod(a, b) (exact,
// with a's sign), sign(b), and where floor division differs from
// truncated division: r·sign(b) < 0, that is r is nonzero and of the
// other sign than b (the product with ±1 is exact, so a tiny r cannot
// underflow to a zero of either sign; a NaN r or b gives false).
func floatRem(a, b *Tensor) (r, sb, fix *Tensor) {
	r = bin(prims.Rem, a, b)
	sb = un(prims.Sign, b)
	fix = bin(prims.Lt, bin(prims.Mul, r, sb), fill(0, r))
	return r, sb, fix
}

// modFloat is Mod for floats, numpy's remainder: r = fmod(a, b), plus b
// where r's sign is not b's; a zero remainder has b's sign, and division
// by zero gives fmod's NaN. The zero is |r|·sign(b), from which the +0
// stop_gradient(r) − r is subtracted: that leaves the value and restores
// r's tangent, so the derivative with respect to a is 1 at a multiple of
// b too, as everywhere else.
func modFloat(a, b *Tensor) *Tensor {
	r, sb, fix := floatRem(a, b)
	zero := bin(prims.Sub, bin(prims.Mul, un(prims.Abs, r), sb), bin(prims.Sub, un(prims.StopGradient, r), r))
	same := sel(bin(prims.Eq, r, fill(0, r)), zero, r)
	return sel(fix, bin(prims.Add, r, b), same)
}

// Rem returns the remainder of x / y elementwise with the sign of x (C's
// fmod, Go's %). Mod is the remainder with the sign of y. Rem panics as
// Add does.
func Rem(x, y any) *Tensor {
	defer interp.Annotate("peel.Rem")
	return arith("peel.Rem", prims.Rem, x, y)
}

// Mod returns the remainder of x / y elementwise with the sign of y
// (Python's and numpy's %), so that x == FloorDiv(x, y)*y + Mod(x, y).
// For floats a zero remainder has y's sign too, and division by zero
// gives NaN. It panics as Add does.
func Mod(x, y any) *Tensor {
	const op = "peel.Mod"
	defer interp.Annotate(op)
	a, b := numericOperands(op, x, y)
	if a.DType().IsFloat() {
		return modFloat(a, b)
	}
	r, fix := floorFix(a, b)
	return sel(fix, bin(prims.Add, r, b), r)
}

// Pow returns x raised to the power y elementwise; it panics as Add does.
func Pow(x, y any) *Tensor {
	defer interp.Annotate("peel.Pow")
	return arith("peel.Pow", prims.Pow, x, y)
}

// Maximum returns the larger of x and y elementwise (NaN propagates). It
// panics with *Error if an operand is nil or not a tensor or Go scalar, or if the
// shapes do not broadcast.
func Maximum(x, y any) *Tensor {
	defer interp.Annotate("peel.Maximum")
	return binary("peel.Maximum", prims.Max, x, y)
}

// Minimum returns the smaller of x and y elementwise (NaN propagates); it
// panics as Maximum does.
func Minimum(x, y any) *Tensor {
	defer interp.Annotate("peel.Minimum")
	return binary("peel.Minimum", prims.Min, x, y)
}

// Atan2 returns the arc tangent of x/y elementwise, using the signs of
// both to choose the quadrant, as math.Atan2(x, y) and numpy's arctan2(x,
// y) do; integer and bool operands are converted to f64. It panics as
// Maximum does.
func Atan2(x, y any) *Tensor {
	defer interp.Annotate("peel.Atan2")
	return floatBinary("peel.Atan2", prims.Atan2, x, y)
}

// LogicalAnd returns x && y elementwise. Operands are bool tensors or Go
// bools; it panics with *Error on any other operand or if the shapes do
// not broadcast.
func LogicalAnd(x, y any) *Tensor {
	const op = "peel.LogicalAnd"
	defer interp.Annotate(op)
	logicalOperand(op, 0, x)
	logicalOperand(op, 1, y)
	return binary(op, prims.And, x, y)
}

// LogicalOr returns x || y elementwise; it panics as LogicalAnd does.
func LogicalOr(x, y any) *Tensor {
	const op = "peel.LogicalOr"
	defer interp.Annotate(op)
	logicalOperand(op, 0, x)
	logicalOperand(op, 1, y)
	return binary(op, prims.Or, x, y)
}

// LogicalNot returns !x elementwise. It panics with *Error if x is nil or
// not a bool tensor.
func LogicalNot(x *Tensor) *Tensor {
	const op = "peel.LogicalNot"
	defer interp.Annotate(op)
	logicalOperand(op, 0, x)
	return un(prims.Not, x)
}

// Equal returns x == y elementwise as a bool tensor, after promotion and
// broadcasting. It panics as Maximum does.
func Equal(x, y any) *Tensor {
	defer interp.Annotate("peel.Equal")
	return binary("peel.Equal", prims.Eq, x, y)
}

// NotEqual returns x != y elementwise; it panics as Equal does.
func NotEqual(x, y any) *Tensor {
	defer interp.Annotate("peel.NotEqual")
	return binary("peel.NotEqual", prims.Ne, x, y)
}

// Less returns x < y elementwise; it panics as Equal does.
func Less(x, y any) *Tensor {
	defer interp.Annotate("peel.Less")
	return binary("peel.Less", prims.Lt, x, y)
}

// LessEqual returns x <= y elementwise; it panics as Equal does.
func LessEqual(x, y any) *Tensor {
	defer interp.Annotate("peel.LessEqual")
	return binary("peel.LessEqual", prims.Le, x, y)
}

// Greater returns x > y elementwise; it panics as Equal does.
func Greater(x, y any) *Tensor {
	defer interp.Annotate("peel.Greater")
	return binary("peel.Greater", prims.Gt, x, y)
}

// GreaterEqual returns x >= y elementwise; it panics as Equal does.
func GreaterEqual(x, y any) *Tensor {
	defer interp.Annotate("peel.GreaterEqual")
	return binary("peel.GreaterEqual", prims.Ge, x, y)
}

// Neg returns -x elementwise. It panics with *Error if x is nil or bool.
func Neg(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Neg")
	return numericUnary("peel.Neg", prims.Neg, x)
}

// Abs returns |x| elementwise (a bool tensor is copied unchanged). It
// panics with *Error if x is nil.
func Abs(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Abs")
	checkTensor("peel.Abs", x)
	if x.DType() == Bool {
		return un(prims.Copy, x)
	}
	return un(prims.Abs, x)
}

// Sign returns -1, 0 or 1 elementwise by the sign of x (NaN stays NaN).
// It panics with *Error if x is nil or bool.
func Sign(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Sign")
	return numericUnary("peel.Sign", prims.Sign, x)
}

// Floor returns the largest integer not above x elementwise; an integer
// tensor is returned unchanged (as a copy), a bool one as f64. It panics
// with *Error if x is nil.
func Floor(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Floor")
	return rounding("peel.Floor", x, func(x *Tensor) *Tensor { return un(prims.Floor, x) })
}

// Ceil returns the smallest integer not below x elementwise; it treats
// dtypes and panics as Floor does.
func Ceil(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Ceil")
	return rounding("peel.Ceil", x, func(x *Tensor) *Tensor { return un(prims.Ceil, x) })
}

// Round rounds x to the nearest integer elementwise, halves to even as
// numpy, JAX's jnp.round and torch do (Round(2.5) = 2, Round(-0.5) = -0,
// Round(1.5) = 2). It treats dtypes and panics as Floor does.
func Round(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Round")
	return rounding("peel.Round", x, func(x *Tensor) *Tensor {
		// The round primitive rounds halves away from zero; halves go to
		// the even neighbour instead, 2·round(x/2), as numpy and torch do.
		away := un(prims.Round, x)
		half := bin(prims.Eq, un(prims.Abs, bin(prims.Sub, x, un(prims.Floor, x))), fill(0.5, x))
		even := bin(prims.Mul, un(prims.Round, bin(prims.Mul, x, fill(0.5, x))), fill(2, x))
		return interp.Bind1(prims.Where, nil, half, even, away)
	})
}

// Exp returns e**x elementwise (integer and bool tensors are converted to
// f64, as for every function defined on floats only). It panics with
// *Error if x is nil.
func Exp(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Exp")
	return floatUnary("peel.Exp", prims.Exp, x)
}

// Log returns the natural logarithm elementwise; it panics as Exp does.
func Log(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Log")
	return floatUnary("peel.Log", prims.Log, x)
}

// Log1p returns log(1 + x) elementwise, accurate for small x; it panics as
// Exp does.
func Log1p(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Log1p")
	return floatUnary("peel.Log1p", prims.Log1p, x)
}

// Expm1 returns e**x - 1 elementwise, accurate for small x; it panics as
// Exp does.
func Expm1(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Expm1")
	return floatUnary("peel.Expm1", prims.Expm1, x)
}

// Sqrt returns the square root elementwise; it panics as Exp does.
func Sqrt(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Sqrt")
	return floatUnary("peel.Sqrt", prims.Sqrt, x)
}

// Rsqrt returns 1/sqrt(x) elementwise; it panics as Exp does.
func Rsqrt(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Rsqrt")
	return floatUnary("peel.Rsqrt", prims.Rsqrt, x)
}

// Sin returns the sine elementwise; it panics as Exp does.
func Sin(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Sin")
	return floatUnary("peel.Sin", prims.Sin, x)
}

// Sinc returns the normalized sinc sin(πx)/(πx) elementwise, 1 at x = 0
// (numpy's sinc); it panics as Exp does.
func Sinc(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Sinc")
	return floatUnary("peel.Sinc", prims.Sinc, x)
}

// Cos returns the cosine elementwise; it panics as Exp does.
func Cos(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Cos")
	return floatUnary("peel.Cos", prims.Cos, x)
}

// Tan returns the tangent elementwise; it panics as Exp does.
func Tan(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Tan")
	return floatUnary("peel.Tan", prims.Tan, x)
}

// Tanh returns the hyperbolic tangent elementwise; it panics as Exp does.
func Tanh(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Tanh")
	return floatUnary("peel.Tanh", prims.Tanh, x)
}

// Sigmoid returns the logistic function 1/(1+e**-x) elementwise; it panics
// as Exp does.
func Sigmoid(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Sigmoid")
	return floatUnary("peel.Sigmoid", prims.Logistic, x)
}

// Erf returns the error function elementwise; it panics as Exp does.
func Erf(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Erf")
	return floatUnary("peel.Erf", prims.Erf, x)
}

// Square returns x*x elementwise. It panics with *Error if x is nil or
// bool.
func Square(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Square")
	checkTensor("peel.Square", x)
	if x.DType() == Bool {
		errorf("peel.Square", "tensor is bool; convert it with AsType(x, peel.Int64)")
	}
	return bin(prims.Mul, x, x)
}

// Reciprocal returns 1/x elementwise as true division (integer and bool
// tensors give f64). It panics with *Error if x is nil.
func Reciprocal(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Reciprocal")
	checkTensor("peel.Reciprocal", x)
	x = toFloat(x)
	return bin(prims.Div, fill(1, x), x)
}

// StopGradient returns x as a constant for differentiation: its value
// flows, its derivative is zero (the stop_gradient primitive, JAX's
// lax.stop_gradient, torch's detach). It panics with *Error if x is nil.
func StopGradient(x *Tensor) *Tensor {
	defer interp.Annotate("peel.StopGradient")
	return interp.Bind1(prims.StopGradient, nil, x)
}

// Where returns x where cond is true and y elsewhere. cond is a bool
// tensor; x and y are tensors or Go scalars, promoted together; all three
// broadcast. It panics with *Error if cond is nil or not bool, if x or y is
// not a tensor or Go scalar, or if the shapes do not broadcast.
func Where(cond *Tensor, x, y any) *Tensor {
	const op = "peel.Where"
	defer interp.Annotate(op)
	checkTensor(op, cond)
	if cond.DType() != Bool {
		errorf(op, "condition has dtype %v, not bool", cond.DType())
	}
	d := resultDType(op, []any{x, y})
	be := operandBackend(cond, x, y)
	a, b := toTensor(be, x, d), toTensor(be, y, d)
	shape := broadcastShapes(op, cond.Shape(), a.Shape(), b.Shape())
	return interp.Bind1(prims.Where, nil, broadcastTo(cond, shape), broadcastTo(a, shape), broadcastTo(b, shape))
}

// Clip limits x to the interval [lo, hi] elementwise: Minimum(Maximum(x,
// lo), hi). lo and hi are tensors or Go scalars (promoted with x and
// broadcast); a nil bound is absent. It panics with *Error if x is nil, if
// a bound is not a tensor or Go scalar, or if the shapes do not broadcast.
func Clip(x *Tensor, lo, hi any) *Tensor {
	const op = "peel.Clip"
	defer interp.Annotate(op)
	checkTensor(op, x)
	vals := []any{x}
	if lo != nil {
		vals = append(vals, lo)
	}
	if hi != nil {
		vals = append(vals, hi)
	}
	ts, _ := operands(op, vals...)
	out, i := ts[0], 1
	if lo != nil {
		out = bin(prims.Max, out, ts[i])
		i++
	}
	if hi != nil {
		out = bin(prims.Min, out, ts[i])
	}
	if lo == nil && hi == nil {
		out = un(prims.Copy, out)
	}
	return out
}

// AsType converts x to dtype d: float → int truncates toward zero and
// saturates to d's range (±Inf and out-of-range values to its extremes,
// NaN → 0), int → narrower int wraps around, conversions to a float dtype
// round to nearest even once (to ±Inf past the largest finite value:
// 65504 for Float16), widening is exact, and nonzero (NaN included) →
// true. This is the one conversion rule of peel (backend/convert.go):
// every constructor (Full, Ones, FullLike, Arange, Linspace, a Go scalar
// operand) and every constant a transform's rule makes converts a float
// the same way, so Full(d, v) equals AsType(Scalar(v), d). Saturation is
// XLA's rule; Go, C and numpy leave out-of-range conversions to the
// hardware (+Inf → MinInt64 on amd64). It returns x itself when it already has
// dtype d, and panics with *Error when x is nil or d is not a valid
// dtype.
func AsType(x *Tensor, d DType) *Tensor {
	defer interp.Annotate("peel.AsType")
	if x == nil {
		errorf("peel.AsType", "nil tensor")
	}
	if x.DType() == d {
		return x
	}
	return interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: d}, x)
}
