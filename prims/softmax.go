package prims

import (
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

// Softmax and log-softmax along one axis (AxisParams). As composites they
// were five kernels each (a maximum, a subtraction, an exponential, a
// sum, a division or a logarithm and a subtraction), each a pass over
// memory and a buffer, and their derivatives twice that; as primitives
// they are one kernel, and their tangents three linear operations on the
// result (whose transposes autodiff derives: no transpose rule here):
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

func init() {
	// The sums are subtracted by subUnreduced, so a backward pass
	// negates their cotangents, one per row, rather than one per element.
	defJVP(Softmax, func(params any, _, t []*tensor, y *tensor) *tensor {
		axes := []int{params.(AxisParams).Axis}
		return mul(y, subUnreduced(t[0], reduceSum(mul(y, t[0]), axes), axes))
	})
	defJVP(LogSoftmax, func(params any, _, t []*tensor, y *tensor) *tensor {
		p := interp.Bind1(Exp, nil, y)
		axes := []int{params.(AxisParams).Axis}
		return subUnreduced(t[0], reduceSum(mul(p, t[0]), axes), axes)
	})
}
