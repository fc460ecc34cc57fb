package peel

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Activation functions, composites of elementwise primitives. Integer and
// bool tensors are converted to f64. Where a function has a kink, the
// derivative there is JAX's (jax.nn), stated in each doc comment.

// activationInput checks x and converts it to a float dtype.
func activationInput(op string, x *Tensor) *Tensor {
	checkTensor(op, x)
	return toFloat(x)
}

// SiLU returns x·sigmoid(x) elementwise (the swish of jax.nn.silu). It
// is NaN at -Inf (−Inf·0), as in JAX and torch. It panics with *Error if
// x is nil.
func SiLU(x *Tensor) *Tensor {
	const op = "peel.SiLU"
	defer interp.Annotate(op)
	x = activationInput(op, x)
	return bin(prims.Mul, x, un(prims.Logistic, x))
}

// elu is x for x > 0 and alpha·expm1(x) elsewhere; the exponential is fed
// 0 where x > 0 so that it never overflows (a select would pass its
// derivative, 0·Inf, to x).
func elu(x *Tensor, alpha float64) *Tensor {
	zero := fill(0, x)
	pos := bin(prims.Gt, x, zero)
	neg := bin(prims.Mul, fill(alpha, x), un(prims.Expm1, sel(pos, zero, x)))
	return sel(pos, x, neg)
}

// ELU returns the exponential linear unit elementwise: x for x > 0 and
// alpha·(e**x − 1) elsewhere (alpha is usually 1). Its derivative at 0
// is alpha, as in JAX (the left limit); NaN stays NaN. It panics with
// *Error if x is nil.
func ELU(x *Tensor, alpha float64) *Tensor {
	const op = "peel.ELU"
	defer interp.Annotate(op)
	return elu(activationInput(op, x), alpha)
}

// The constants of SELU (Klambauer et al. 2017, as in jax.nn.selu).
const (
	seluAlpha = 1.6732632423543772848170429916717
	seluScale = 1.0507009873554804934193349852946
)

// SELU returns the scaled exponential linear unit scale·ELU(x, alpha)
// elementwise, with alpha ≈ 1.6733 and scale ≈ 1.0507 (jax.nn.selu). It
// panics with *Error if x is nil.
func SELU(x *Tensor) *Tensor {
	const op = "peel.SELU"
	defer interp.Annotate(op)
	x = activationInput(op, x)
	return bin(prims.Mul, fill(seluScale, x), elu(x, seluAlpha))
}

// LeakyReLU returns x for x ≥ 0 and slope·x elsewhere, elementwise (slope
// is usually 0.01). Its derivative at 0 is 1, as jax.nn.leaky_relu's. It
// panics with *Error if x is nil.
func LeakyReLU(x *Tensor, slope float64) *Tensor {
	const op = "peel.LeakyReLU"
	defer interp.Annotate(op)
	x = activationInput(op, x)
	return sel(bin(prims.Ge, x, fill(0, x)), x, bin(prims.Mul, fill(slope, x), x))
}

// HardTanh returns x limited to [lo, hi] elementwise (usually [-1, 1]):
// hi above hi, lo below lo. Its derivative is 1 on the closed interval
// and 0 outside, as jax.nn.hard_tanh's; NaN stays NaN. It panics with
// *Error if x is nil or lo > hi (or either is NaN).
func HardTanh(x *Tensor, lo, hi float64) *Tensor {
	const op = "peel.HardTanh"
	defer interp.Annotate(op)
	if !(lo <= hi) {
		errorf(op, "bounds [%v, %v] are not an interval", lo, hi)
	}
	x = activationInput(op, x)
	h, l := fill(hi, x), fill(lo, x)
	return sel(bin(prims.Gt, x, h), h, sel(bin(prims.Lt, x, l), l, x))
}

// HardSwish returns x·relu6(x + 3)/6 elementwise (jax.nn.hard_swish): 0
// up to -3, x from 3 on. The gate relu6 has derivative 0 at its kinks,
// as JAX's, so the derivative is 0 at -3 and 1 at 3. It panics with
// *Error if x is nil.
func HardSwish(x *Tensor) *Tensor {
	const op = "peel.HardSwish"
	defer interp.Annotate(op)
	x = activationInput(op, x)
	u := bin(prims.Add, x, fill(3, x))
	zero, six := fill(0, x), fill(6, x)
	relu6 := sel(bin(prims.Le, u, zero), zero, sel(bin(prims.Ge, u, six), six, u))
	return bin(prims.Mul, x, bin(prims.Div, relu6, six))
}

// Mish returns x·tanh(softplus(x)) elementwise (NaN at -Inf, as SiLU).
// It panics with *Error if x is nil.
func Mish(x *Tensor) *Tensor {
	const op = "peel.Mish"
	defer interp.Annotate(op)
	x = activationInput(op, x)
	return bin(prims.Mul, x, un(prims.Tanh, softplus(x)))
}

// Softsign returns x/(1 + |x|) elementwise (NaN at ±Inf, as
// jax.nn.soft_sign). It panics with *Error if x is nil.
func Softsign(x *Tensor) *Tensor {
	const op = "peel.Softsign"
	defer interp.Annotate(op)
	x = activationInput(op, x)
	return bin(prims.Div, x, bin(prims.Add, un(prims.Abs, x), fill(1, x)))
}

// Logit returns log(x/(1 − x)) elementwise, the inverse of Sigmoid,
// computed as log(x) − log1p(−x): -Inf at 0, +Inf at 1, NaN outside
// [0, 1]. Without eps (the default) x is used as it is; with eps (at most
// one, in [0, ½]) x is first limited to [eps, 1 − eps], as torch's
// logit(x, eps), and the derivative is 0 outside that interval. It panics
// with *Error if x is nil, more than one eps is given, or eps is outside
// [0, ½].
func Logit(x *Tensor, eps ...float64) *Tensor {
	const op = "peel.Logit"
	defer interp.Annotate(op)
	x = activationInput(op, x)
	switch {
	case len(eps) > 1:
		errorf(op, "%d eps values; want at most one", len(eps))
	case len(eps) == 1:
		e := eps[0]
		if !(e >= 0 && e <= 0.5) {
			errorf(op, "eps %v is outside [0, 0.5]", e)
		}
		lo, hi := fill(e, x), fill(1-e, x)
		x = sel(bin(prims.Lt, x, lo), lo, sel(bin(prims.Gt, x, hi), hi, x))
	}
	return bin(prims.Sub, un(prims.Log, x), un(prims.Log1p, un(prims.Neg, x)))
}

// GLU returns the gated linear unit a·sigmoid(b) of the two halves a
// (first) and b of x along axis (negative counts from the end; torch's
// glu uses -1), whose size halves. It panics with *Error if x is nil,
// the axis is out of range, or its size is odd.
func GLU(x *Tensor, axis int) *Tensor {
	const op = "peel.GLU"
	defer interp.Annotate(op)
	checkTensor(op, x)
	a := normAxis(op, axis, x.Rank())
	n := x.Shape()[a]
	if n%2 != 0 {
		errorf(op, "axis %d has odd size %d; GLU splits it in halves", axis, n)
	}
	x = toFloat(x)
	lo, hi := sliceAll(x.Shape()), sliceAll(x.Shape())
	lo.Limit[a] = n / 2
	hi.Start[a] = n / 2
	first := interp.Bind1(prims.Slice, lo, x)
	second := interp.Bind1(prims.Slice, hi, x)
	return bin(prims.Mul, first, un(prims.Logistic, second))
}

// ReLU returns max(x, 0) elementwise. It panics with *Error if x is nil or
// bool.
func ReLU(x *Tensor) *Tensor {
	defer interp.Annotate("peel.ReLU")
	checkTensor("peel.ReLU", x)
	if x.DType() == Bool {
		errorf("peel.ReLU", "tensor is bool")
	}
	// select(x <= 0, 0, x): NaN stays NaN, and the derivative at 0 is 0
	// as in JAX and torch (max(x, 0) would split it, giving ½).
	zero := fill(0, x)
	return interp.Bind1(prims.Where, nil, bin(prims.Le, x, zero), zero, x)
}

// GELU returns the Gaussian error linear unit in its exact form,
// x·Φ(x) = x·(½ + ½·erf(x/√2)), elementwise (integer and bool tensors
// give f64): one primitive (prims.GELU), whose derivative is another
// (prims.GELUGrad), so it costs one pass forward and one backward. It is
// finite for every finite x, x for large x and −0 for large negative x,
// and so are its derivatives. It panics with *Error if x is nil.
func GELU(x *Tensor) *Tensor {
	defer interp.Annotate("peel.GELU")
	return floatUnary("peel.GELU", prims.GELU, x)
}

// GELUTanh returns the tanh approximation of GELU,
// x·(½ + ½·tanh(√(2/π)·(x + 0.044715·x³))), elementwise (torch's gelu with
// approximate='tanh', jax.nn.gelu's default): one primitive
// (prims.GELUTanh) whose derivative is another (prims.GELUTanhGrad), one
// pass forward and one backward. It is finite for every finite x, as GELU
// is, and panics as GELU does.
func GELUTanh(x *Tensor) *Tensor {
	defer interp.Annotate("peel.GELUTanh")
	return floatUnary("peel.GELUTanh", prims.GELUTanh, x)
}

// softplus computes log(1 + e**x) for a float tensor as
// x + log1p(e**-x) where x > 0 and log1p(e**x) elsewhere, each branch fed
// only the inputs it is accurate and finite for. Unlike max(x, 0) +
// log1p(e**-|x|) it has no kink, so its derivatives of every order are
// right at 0.
func softplus(x *Tensor) *Tensor {
	zero := fill(0, x)
	pos := bin(prims.Gt, x, zero)
	xp := interp.Bind1(prims.Where, nil, pos, x, zero)
	xn := interp.Bind1(prims.Where, nil, pos, zero, x)
	big := bin(prims.Add, xp, un(prims.Log1p, un(prims.Exp, un(prims.Neg, xp))))
	small := un(prims.Log1p, un(prims.Exp, xn))
	return interp.Bind1(prims.Where, nil, pos, big, small)
}

// Softplus returns log(1 + e**x) elementwise, computed stably for every x
// (integer and bool tensors give f64). It panics with *Error if x is nil.
func Softplus(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Softplus")
	checkTensor("peel.Softplus", x)
	return softplus(toFloat(x))
}

// LogSigmoid returns log(Sigmoid(x)) elementwise, computed stably as
// -Softplus(-x). It panics as Softplus does.
func LogSigmoid(x *Tensor) *Tensor {
	defer interp.Annotate("peel.LogSigmoid")
	checkTensor("peel.LogSigmoid", x)
	x = toFloat(x)
	return un(prims.Neg, softplus(un(prims.Neg, x)))
}
