package prims

import (
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

// Softmax and log-softmax along one axis (AxisParams). As composites they
// were five kernels each (a maximum, a subtraction, an exponential, a
// sum, a division or a logarithm and a subtraction), each a pass over
// memory and a buffer, and their derivatives twice that; as primitives
// they are one kernel, and their tangents linear maps of the result:
// softmax's one primitive, softmax_lin, its own transpose; log_softmax's
// three operations, whose transposes autodiff derives:
//
//	softmax:     y = e^(x−m) / Σ e^(x−m),   ẏ = y·(ẋ − Σ y·ẋ)
//	log_softmax: y = x − m − log Σ e^(x−m), ẏ = ẋ − Σ e^y·ẋ
//
// with m the maximum along the axis and the sums along the axis,
// broadcast back. A row whose maximum is +Inf, or that holds a NaN, is
// NaN throughout, as the composite's is; an empty axis gives an empty
// result.

func softmaxPrim(name string) *interp.Prim {
	return graphio.Params[AxisParams](interp.NewPrim(name, interp.Pure, func(params any, in []aval) []aval {
		checkArity(in, 1)
		checkClass(floats, in[0])
		checkAxis(params.(AxisParams).Axis, len(in[0].Shape))
		return one(in[0])
	}))
}

// Softmax is e^x normalized to sum to 1 along AxisParams.Axis, computed
// stably (shifted by the maximum along the axis).
var Softmax = softmaxPrim("softmax")

// LogSoftmax is log(Softmax(x)) along AxisParams.Axis, computed stably as
// x − m − log Σ e^(x−m).
var LogSoftmax = softmaxPrim("log_softmax")

// SoftmaxLin is softmax's tangent map at the primal point, operands
// (ẋ, y): y·(ẋ − Σ y·ẋ) along AxisParams.Axis. Linear in ẋ and its own
// transpose (diag(y) − y·yᵀ along the axis is symmetric), so softmax's
// backward pass is one softmax_lin applied to the cotangent: one kernel
// (a pass over each row for the sum, one for the result) where the
// transposed composite was four passes over memory. A composite (its
// Impl the formula) kept whole by staging, as layer_norm_lin.
var SoftmaxLin = func() *interp.Prim {
	p := graphio.Params[AxisParams](interp.NewPrim("softmax_lin", interp.Pure, func(params any, in []aval) []aval {
		checkArity(in, 2)
		checkClass(floats, in[0])
		checkAxis(params.(AxisParams).Axis, len(in[0].Shape))
		if in[1].DType != in[0].DType || !interp.ShapeEqual(in[1].Shape, in[0].Shape) {
			interp.Panicf("softmax_lin of %v needs y %v, got %v", in[0], in[0], in[1])
		}
		return one(in[0])
	}))
	// The sum is subtracted by subUnreduced, so a backward pass through
	// the decomposition negates one element a row.
	lin := func(axis int, t, y *tensor) *tensor {
		axes := []int{axis}
		return mul(y, subUnreduced(t, reduceSum(mul(y, t), axes), axes))
	}
	p.Impl = func(params any, args []*tensor) []*tensor {
		return []*tensor{lin(params.(AxisParams).Axis, args[0], args[1])}
	}
	p.Whole = true
	defSelfTranspose(p)
	// d(y·(t − Σ y·t)) = lin(ṫ) + ẏ·(t − Σ y·t) − y·Σ ẏ·t.
	defJVP(p, func(params any, primals, tangents []*tensor, _ *tensor) *tensor {
		axis := params.(AxisParams).Axis
		axes := []int{axis}
		t, y := primals[0], primals[1]
		var d *tensor
		if tangents[0] != nil {
			d = interp.Bind1(p, params, tangents[0], y)
		}
		if dy := tangents[1]; dy != nil {
			u := subUnreduced(t, reduceSum(mul(y, t), axes), axes)
			d = addNil(d, sub(mul(dy, u), mul(y, unreduce(reduceSum(mul(dy, t), axes), t.Shape(), axes))))
		}
		return d
	})
	return p
}()

func init() {
	// softmax's tangent is one primitive (SoftmaxLin); log_softmax's sum
	// is subtracted by subUnreduced, so a backward pass negates its
	// cotangents one per row rather than one per element.
	defJVP(Softmax, func(params any, _, t []*tensor, y *tensor) *tensor {
		return interp.Bind1(SoftmaxLin, params, t[0], y)
	})
	defJVP(LogSoftmax, func(params any, _, t []*tensor, y *tensor) *tensor {
		p := interp.Bind1(Exp, nil, y)
		axes := []int{params.(AxisParams).Axis}
		return subUnreduced(t[0], reduceSum(mul(p, t[0]), axes), axes)
	})
}
