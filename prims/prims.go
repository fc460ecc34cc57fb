package prims

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

type aval = interp.Aval

// dtype classes accepted by elementwise primitives.
type dclass uint8

const (
	numeric dclass = iota // integers and floats
	floats                // f16, bf16, f32, f64
	bools                 // bool
	logical               // bool and integers
	anyType               // every dtype
)

func (c dclass) accepts(d backend.DType) bool {
	switch c {
	case numeric:
		return d.IsInteger() || d.IsFloat()
	case floats:
		return d.IsFloat()
	case bools:
		return d == backend.Bool
	case logical:
		return d == backend.Bool || d.IsInteger()
	}
	return d.IsValid()
}

func (c dclass) String() string {
	return [...]string{"a numeric", "a floating-point", "a bool", "a bool or integer", "any"}[c]
}

func checkClass(c dclass, a aval) {
	if !c.accepts(a.DType) {
		interp.Panicf("operand of dtype %v is not %s dtype", a.DType, c)
	}
}

func one(a aval) []aval { return []aval{a} }

func unary(name string, c dclass) *interp.Prim {
	p := interp.NewPrim(name, interp.Pure, func(_ any, in []aval) []aval {
		checkArity(in, 1)
		checkClass(c, in[0])
		return one(in[0])
	})
	p.Elementwise = &interp.ElementwiseRule{Arity: 1, Accepts: c.accepts}
	return p
}

func checkArity(in []aval, n int) {
	if len(in) != n {
		interp.Panicf("takes %d operands, got %d", n, len(in))
	}
}

func sameAvals(in []aval) {
	for _, a := range in[1:] {
		if !a.Equal(in[0]) {
			interp.Panicf("operands must have equal shapes and dtypes (primitives do not broadcast or promote)")
		}
	}
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

// StopGradient is the identity on values whose tangent is zero: autodiff
// treats its result as a constant.
var StopGradient = unary("stop_gradient", anyType)

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

// ConvertElementType converts to ConvertParams.DType by the one
// conversion rule of backend/convert.go (float → int truncates toward
// zero and saturates, NaN → 0; nonzero → true).
var ConvertElementType = interp.NewPrim("convert_element_type", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 1)
	p := params.(ConvertParams)
	if !p.DType.IsValid() {
		interp.Panicf("invalid target dtype")
	}
	return one(aval{Shape: in[0].Shape, DType: p.DType})
})

// Threefry2x32 is the Threefry-2x32 block cipher (20 rounds), elementwise:
// (k0, k1, x0, x1) → (y0, y1). All operands are i64 with equal shapes and
// hold 32-bit unsigned values; the results do too.
var Threefry2x32 = interp.NewPrim("threefry2x32", interp.Pure, func(_ any, in []aval) []aval {
	checkArity(in, 4)
	sameAvals(in)
	if in[0].DType != backend.Int64 {
		interp.Panicf("operands must be i64 holding 32-bit words")
	}
	return []aval{in[0], in[0]}
})
