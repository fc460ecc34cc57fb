package peel

import (
	"math"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Inverse trigonometric, hyperbolic, logarithmic and special functions,
// and the floating-point predicates and manipulations of numpy. Like the
// functions of elementwise.go they convert integer and bool tensors to f64
// where they are defined on floats only, and work under every transform.

// Asin returns the arc sine elementwise, in [-π/2, π/2]; NaN outside
// [-1, 1]. Integer and bool tensors are converted to f64 (as for every
// function defined on floats only). It panics with *Error if x is nil.
func Asin(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Asin")
	return floatUnary("peel.Asin", prims.Asin, x)
}

// Acos returns the arc cosine elementwise, in [0, π]; NaN outside
// [-1, 1]. It panics as Asin does.
func Acos(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Acos")
	return floatUnary("peel.Acos", prims.Acos, x)
}

// Atan returns the arc tangent elementwise, in [-π/2, π/2]. It panics as
// Asin does.
func Atan(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Atan")
	return floatUnary("peel.Atan", prims.Atan, x)
}

// Sinh returns the hyperbolic sine elementwise (±Inf beyond about
// ±710.5 in f64). It panics as Asin does.
func Sinh(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Sinh")
	return floatUnary("peel.Sinh", prims.Sinh, x)
}

// Cosh returns the hyperbolic cosine elementwise. It panics as Asin does.
func Cosh(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Cosh")
	return floatUnary("peel.Cosh", prims.Cosh, x)
}

// Asinh returns the inverse hyperbolic sine elementwise. It panics as
// Asin does.
func Asinh(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Asinh")
	return floatUnary("peel.Asinh", prims.Asinh, x)
}

// Acosh returns the inverse hyperbolic cosine elementwise, NaN below 1.
// It panics as Asin does.
func Acosh(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Acosh")
	return floatUnary("peel.Acosh", prims.Acosh, x)
}

// Atanh returns the inverse hyperbolic tangent elementwise: ±Inf at ±1,
// NaN outside [-1, 1]. It panics as Asin does.
func Atanh(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Atanh")
	return floatUnary("peel.Atanh", prims.Atanh, x)
}

// Log2 returns the base-2 logarithm elementwise, exact at powers of two.
// It panics as Asin does.
func Log2(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Log2")
	return floatUnary("peel.Log2", prims.Log2, x)
}

// Log10 returns the base-10 logarithm elementwise, exact at the powers of
// ten (as f64 holds them). It panics as Asin does.
func Log10(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Log10")
	return floatUnary("peel.Log10", prims.Log10, x)
}

// Exp2 returns 2**x elementwise, exact at integers. It panics as Asin
// does.
func Exp2(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Exp2")
	return floatUnary("peel.Exp2", prims.Exp2, x)
}

// Erfc returns the complementary error function 1 − erf(x) elementwise,
// accurate where erf(x) is near 1. It panics as Asin does.
func Erfc(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Erfc")
	return floatUnary("peel.Erfc", prims.Erfc, x)
}

// Erfinv returns the inverse error function elementwise: ±Inf at ±1, NaN
// outside [-1, 1]. It panics as Asin does.
func Erfinv(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Erfinv")
	return floatUnary("peel.Erfinv", prims.ErfInv, x)
}

// Lgamma returns log|Γ(x)| elementwise (scipy's gammaln, JAX's lgamma):
// +Inf at the poles 0, -1, -2, … and at ±Inf. Its derivative is Digamma.
// It panics as Asin does.
func Lgamma(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Lgamma")
	return floatUnary("peel.Lgamma", prims.Lgamma, x)
}

// Digamma returns ψ(x) = Γ'(x)/Γ(x) elementwise. At the pole 0 it is the
// limit from the side of the zero's sign, -Inf at +0 and +Inf at -0 (as
// scipy's digamma; JAX gives NaN); at the negative integers, where the
// limits from the two sides differ, NaN; NaN at -Inf and +Inf at +Inf.
// Its derivative is Polygamma(1, x). It panics as Asin does.
func Digamma(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Digamma")
	checkTensor("peel.Digamma", x)
	return interp.Bind1(prims.Polygamma, prims.PolygammaParams{N: 0}, toFloat(x))
}

// Polygamma returns ψ⁽ⁿ⁾(x), the n-th derivative of Digamma, elementwise
// (Polygamma(0, x) is Digamma(x)). At the poles 0, -1, -2, … it is +Inf
// for odd n (both sides tend to +Inf); for even n it is treated as
// Digamma's: ∓Inf at ±0, NaN at the negative integers. At +Inf it is 0
// for n ≥ 1; at -Inf NaN. Negative x is reflected to 1 − x, so the cost
// does not grow with |x|. Unlike scipy's and JAX's, n is a Go int, the
// same for every element, at most 170 (n! must be a float64). It panics
// with *Error if x is nil or n is outside [0, 170].
func Polygamma(n int, x *Tensor) *Tensor {
	const op = "peel.Polygamma"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if n < 0 || n > prims.MaxPolygammaOrder {
		errorf(op, "order n = %d is outside [0, %d]", n, prims.MaxPolygammaOrder)
	}
	return interp.Bind1(prims.Polygamma, prims.PolygammaParams{N: n}, toFloat(x))
}

// Trunc rounds x toward zero elementwise (Trunc(-1.5) = -1, Trunc(-0.5)
// = -0); integer tensors are copied unchanged and bool tensors become
// f64. Its derivative is 0 everywhere, as JAX's (floor and ceil are
// piecewise constant). It panics with *Error if x is nil.
func Trunc(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Trunc")
	return rounding("peel.Trunc", x, trunc)
}

func trunc(x *Tensor) *Tensor {
	return sel(bin(prims.Lt, x, fill(0, x)), un(prims.Ceil, x), un(prims.Floor, x))
}

// Frac returns the fractional part x − Trunc(x) elementwise, with x's
// sign (torch's frac): Frac(-1.25) = -0.25; NaN for ±Inf and NaN.
// Integer tensors give zeros and bool tensors f64 zeros. Its derivative
// is 1 (Trunc's is 0). It panics with *Error if x is nil.
func Frac(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Frac")
	checkTensor("peel.Frac", x)
	if x.DType() == Bool {
		x = toFloat(x)
	}
	if !x.DType().IsFloat() {
		return bin(prims.Sub, x, x)
	}
	return bin(prims.Sub, x, trunc(x))
}

// floatOperands promotes and broadcasts vals for a function defined on
// floats: integer and bool results of promotion become f64.
func floatOperands(op string, vals ...any) []*Tensor {
	d := resultDType(op, vals)
	if !d.IsFloat() {
		d = Float64
	}
	return operandsAs(op, d, vals...)
}

// Xlogy returns x·log(y) elementwise, 0 where x = 0 whatever y is (JAX's
// and scipy's xlogy, but 0 also for a NaN y, as JAX). Where x = 0 and y
// is positive and finite the derivative is JAX's, log(y) with respect to
// x and 0 with respect to y; where x = 0 and y is not, both are 0.
// Operands are promoted as Atan2's. It panics with *Error if an operand
// is nil or not a tensor or Go number, or if the shapes do not broadcast.
func Xlogy(x, y any) *Tensor {
	const op = "peel.Xlogy"
	defer interp.Annotate(op)
	ts := floatOperands(op, x, y)
	a, b := ts[0], ts[1]
	// y where the result is x·log(y); 1 where x = 0 and log(y) is not
	// finite (so x·log(y) would be NaN), giving 0 with a zero tangent.
	zero := fill(0, a)
	bad := bin(prims.And, bin(prims.Eq, a, zero),
		un(prims.Not, bin(prims.And, bin(prims.Gt, b, zero), bin(prims.Lt, b, fill(math.Inf(1), b)))))
	return bin(prims.Mul, a, un(prims.Log, sel(bad, fill(1, b), b)))
}

// Hypot returns √(x² + y²) elementwise without overflow or underflow:
// +Inf if either operand is infinite, even if the other is NaN (C's and
// numpy's hypot). At the origin its derivative is 0. Operands are
// promoted as Atan2's; it panics as Xlogy does.
func Hypot(x, y any) *Tensor {
	defer interp.Annotate("peel.Hypot")
	return floatBinary("peel.Hypot", prims.Hypot, x, y)
}

// Copysign returns |x| with the sign of y elementwise, by y's sign bit
// (so -0 and NaNs with the sign bit set count as negative), as numpy's
// copysign. Its derivatives are JAX's: with respect to x, ±1 by the sign
// bit of y times 1 for x ≥ 0 (both zeros included) and -1 for x < 0;
// with respect to y, 0. Operands are promoted as Atan2's; it panics as
// Xlogy does.
func Copysign(x, y any) *Tensor {
	defer interp.Annotate("peel.Copysign")
	return floatBinary("peel.Copysign", prims.Copysign, x, y)
}

// Lerp returns the linear interpolation start + weight·(end − start)
// elementwise, computed as end − (end − start)·(1 − weight) for
// weight ≥ ½ so that weight = 1 gives end exactly (torch's lerp). The
// three operands are promoted together (integers and bools to f64) and
// broadcast. It panics with *Error if an operand is nil or not a tensor
// or Go number, or if the shapes do not broadcast.
func Lerp(start, end, weight any) *Tensor {
	const op = "peel.Lerp"
	defer interp.Annotate(op)
	ts := floatOperands(op, start, end, weight)
	s, e, w := ts[0], ts[1], ts[2]
	d := bin(prims.Sub, e, s)
	lo := bin(prims.Add, s, bin(prims.Mul, w, d))
	hi := bin(prims.Sub, e, bin(prims.Mul, d, bin(prims.Sub, fill(1, w), w)))
	return sel(bin(prims.Lt, w, fill(0.5, w)), lo, hi)
}

// LogAddExp returns log(e**x + e**y) elementwise without overflow, as
// numpy's logaddexp: max + log1p(e**−|x−y|), with LogAddExp(-Inf, -Inf)
// = -Inf, LogAddExp(Inf, Inf) = Inf and NaN for a NaN operand. Its
// derivatives are the softmax weights e**(x−r), e**(y−r) (½ each at
// ties), and smooth across ties. Operands are promoted as Atan2's; it
// panics as Xlogy does.
func LogAddExp(x, y any) *Tensor {
	const op = "peel.LogAddExp"
	defer interp.Annotate(op)
	ts := floatOperands(op, x, y)
	a, b := ts[0], ts[1]
	// hi + log1p(exp(lo − hi)) with hi the larger operand (y at ties):
	// each operand's derivative is exact on both sides of a tie. Where
	// a − b is NaN (equal infinities, or a NaN) the result is a + b, and
	// the logarithm is fed 0 so that its derivative stays finite there.
	gt := bin(prims.Gt, a, b)
	hi, lo := sel(gt, a, b), sel(gt, b, a)
	diff := bin(prims.Sub, a, b)
	undefined := bin(prims.Ne, diff, diff)
	zero := fill(0, a)
	delta := sel(undefined, zero, bin(prims.Sub, lo, hi))
	r := bin(prims.Add, hi, un(prims.Log1p, un(prims.Exp, delta)))
	return sel(undefined, bin(prims.Add, a, b), r)
}

// fmaxMin is JAX's fmax (cmp Gt) or fmin (cmp Lt): x where cmp(x, y)
// holds or y is NaN, else y. Ties therefore pick y, and so does its
// derivative.
func fmaxMin(cmp *interp.Prim, a, b *Tensor) *Tensor {
	return sel(bin(prims.Or, bin(cmp, a, b), bin(prims.Ne, b, b)), a, b)
}

// Fmax returns the larger of x and y elementwise ignoring NaNs, as
// numpy's fmax: a NaN operand gives the other one, and NaN only when both
// are NaN. It is JAX's where(x > y | isnan(y), x, y), so at ties (and
// for fmax(±0, ∓0)) the result and all of the derivative come from y —
// unlike Maximum, whose ties split the derivative. Integer and bool
// operands are promoted as Maximum's. It panics as Maximum does.
func Fmax(x, y any) *Tensor {
	const op = "peel.Fmax"
	defer interp.Annotate(op)
	ts, _ := operands(op, x, y)
	return fmaxMin(prims.Gt, ts[0], ts[1])
}

// Fmin returns the smaller of x and y elementwise ignoring NaNs (numpy's
// fmin, JAX's where(x < y | isnan(y), x, y)); it treats NaNs, ties and
// dtypes and panics as Fmax does.
func Fmin(x, y any) *Tensor {
	const op = "peel.Fmin"
	defer interp.Annotate(op)
	ts, _ := operands(op, x, y)
	return fmaxMin(prims.Lt, ts[0], ts[1])
}

// IsNaN reports elementwise whether x is NaN, as a bool tensor (false
// for integer and bool tensors). It panics with *Error if x is nil.
func IsNaN(x *Tensor) *Tensor {
	defer interp.Annotate("peel.IsNaN")
	checkTensor("peel.IsNaN", x)
	return bin(prims.Ne, x, x)
}

// IsInf reports elementwise whether x is +Inf or -Inf, as a bool tensor
// (false for integer and bool tensors). It panics with *Error if x is
// nil.
func IsInf(x *Tensor) *Tensor {
	defer interp.Annotate("peel.IsInf")
	checkTensor("peel.IsInf", x)
	if !x.DType().IsFloat() {
		return bin(prims.Ne, x, x)
	}
	return bin(prims.Eq, un(prims.Abs, x), fill(math.Inf(1), x))
}

// IsFinite reports elementwise whether x is neither infinite nor NaN, as
// a bool tensor (true for integer and bool tensors). It panics with
// *Error if x is nil.
func IsFinite(x *Tensor) *Tensor {
	defer interp.Annotate("peel.IsFinite")
	checkTensor("peel.IsFinite", x)
	if !x.DType().IsFloat() {
		return bin(prims.Eq, x, x)
	}
	return bin(prims.Lt, un(prims.Abs, x), fill(math.Inf(1), x))
}

// NanToNumOption sets a replacement value of NanToNum.
type NanToNumOption func(*nanToNum)

type nanToNum struct {
	nan, posinf, neginf float64
	hasPos, hasNeg      bool
}

// NanTo sets the value NanToNum puts in place of NaN (default 0).
func NanTo(v float64) NanToNumOption { return func(c *nanToNum) { c.nan = v } }

// PosInfTo sets the value NanToNum puts in place of +Inf (default the
// largest finite value of x's dtype).
func PosInfTo(v float64) NanToNumOption {
	return func(c *nanToNum) { c.posinf, c.hasPos = v, true }
}

// NegInfTo sets the value NanToNum puts in place of -Inf (default the
// most negative finite value of x's dtype).
func NegInfTo(v float64) NanToNumOption {
	return func(c *nanToNum) { c.neginf, c.hasNeg = v, true }
}

// NanToNum returns x with NaN replaced by 0, +Inf by the largest finite
// value of x's dtype and -Inf by the most negative one, or by the values
// set with NanTo, PosInfTo and NegInfTo (numpy's nan_to_num; the values
// are rounded to x's dtype, so a value beyond float32's range gives an
// infinity in f32). Integer and bool tensors are returned as copies. The
// derivative is 1 at finite elements and 0 at replaced ones. It panics
// with *Error if x is nil.
func NanToNum(x *Tensor, opts ...NanToNumOption) *Tensor {
	const op = "peel.NanToNum"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if !x.DType().IsFloat() {
		return un(prims.Copy, x)
	}
	big := math.MaxFloat64
	switch x.DType() {
	case Float32:
		big = math.MaxFloat32
	case Float16:
		big = 65504
	case BFloat16:
		big = 0x1.fep127
	}
	c := nanToNum{posinf: big, neginf: -big}
	for _, o := range opts {
		if o == nil {
			errorf(op, "nil option")
		}
		o(&c)
	}
	inf := fill(math.Inf(1), x)
	out := sel(bin(prims.Eq, x, inf), fill(c.posinf, x), x)
	out = sel(bin(prims.Eq, x, un(prims.Neg, inf)), fill(c.neginf, x), out)
	return sel(bin(prims.Ne, x, x), fill(c.nan, x), out)
}

// LogicalXor returns x != y elementwise for bools; it panics as
// LogicalAnd does.
func LogicalXor(x, y any) *Tensor {
	const op = "peel.LogicalXor"
	defer interp.Annotate(op)
	logicalOperand(op, 0, x)
	logicalOperand(op, 1, y)
	return binary(op, prims.Ne, x, y)
}

// bitwiseOperands promotes and broadcasts x and y for a bitwise
// function: the result of promotion must be Int64 or Bool.
func bitwiseOperands(op string, x, y any) ([]*Tensor, DType) {
	ts, d := operands(op, x, y)
	if d.IsFloat() {
		errorf(op, "operands promote to %v; bitwise operations take integer and bool operands", d)
	}
	return ts, d
}

// BitwiseAnd returns x & y elementwise on Int64 and Bool operands
// (promoted together; logical and for bools), as numpy's bitwise_and. It
// panics with *Error if an operand is nil or not a tensor or Go integer
// or bool, if the operands promote to a float dtype, or if the shapes do
// not broadcast.
func BitwiseAnd(x, y any) *Tensor {
	const op = "peel.BitwiseAnd"
	defer interp.Annotate(op)
	ts, _ := bitwiseOperands(op, x, y)
	return bin(prims.And, ts[0], ts[1])
}

// BitwiseOr returns x | y elementwise; it panics as BitwiseAnd does.
func BitwiseOr(x, y any) *Tensor {
	const op = "peel.BitwiseOr"
	defer interp.Annotate(op)
	ts, _ := bitwiseOperands(op, x, y)
	return bin(prims.Or, ts[0], ts[1])
}

// BitwiseXor returns x ^ y elementwise (x != y for bools); it panics as
// BitwiseAnd does.
func BitwiseXor(x, y any) *Tensor {
	const op = "peel.BitwiseXor"
	defer interp.Annotate(op)
	ts, d := bitwiseOperands(op, x, y)
	a, b := ts[0], ts[1]
	if d == Bool {
		return bin(prims.Ne, a, b)
	}
	return bin(prims.And, bin(prims.Or, a, b), un(prims.Not, bin(prims.And, a, b)))
}

// BitwiseNot returns ^x elementwise for Int64 tensors and !x for bool
// ones, as numpy's invert. It panics with *Error if x is nil or float.
func BitwiseNot(x *Tensor) *Tensor {
	const op = "peel.BitwiseNot"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if x.DType().IsFloat() {
		errorf(op, "tensor has dtype %v; bitwise operations take integer and bool tensors", x.DType())
	}
	return un(prims.Not, x)
}

// shiftOperands promotes x and y for a shift: Int64 (bools become Int64,
// as in numpy).
func shiftOperands(op string, x, y any) (*Tensor, *Tensor) {
	ts, d := bitwiseOperands(op, x, y)
	if d == Bool {
		cv := prims.ConvertParams{DType: Int64}
		return interp.Bind1(prims.ConvertElementType, cv, ts[0]), interp.Bind1(prims.ConvertElementType, cv, ts[1])
	}
	return ts[0], ts[1]
}

// LeftShift returns x << y elementwise on Int64 (bool operands are
// converted to Int64, as numpy does). Bits shifted out are lost
// (two's-complement wraparound) and a shift count outside [0, 63] gives
// 0, as JAX's shift_left (numpy leaves it to C, where it is undefined).
// It panics as BitwiseAnd does.
func LeftShift(x, y any) *Tensor {
	const op = "peel.LeftShift"
	defer interp.Annotate(op)
	a, b := shiftOperands(op, x, y)
	return bin(prims.ShiftLeft, a, b)
}

// RightShift returns x >> y elementwise on Int64, arithmetic (the sign
// bit is copied in; bool operands are converted to Int64). A shift count
// outside [0, 63] gives 0 for x ≥ 0 and -1 for x < 0, as JAX's
// shift_right_arithmetic. It panics as BitwiseAnd does.
func RightShift(x, y any) *Tensor {
	const op = "peel.RightShift"
	defer interp.Annotate(op)
	a, b := shiftOperands(op, x, y)
	return bin(prims.ShiftRightArithmetic, a, b)
}
