package batching

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Scans (cumsum, cumprod, cumlogsumexp, cummax, cummin), softmax and
// log_softmax keep the batch dimension where it is and rewrite their
// axis for the physical operand; every result has it. layer_norm and
// rms_norm (normalizing over trailing axes) keep it too, unless it is
// one of those axes.

func init() {
	register(prims.Cumsum, cumsumRule)
	for _, p := range []*interp.Prim{prims.Cumprod, prims.Cumlogsumexp, prims.Cummax, prims.Cummin} {
		register(p, scanRule(p))
	}
	for _, p := range []*interp.Prim{prims.Softmax, prims.LogSoftmax} {
		register(p, axisRule(p))
	}
	for _, p := range []*interp.Prim{prims.LayerNorm, prims.RMSNorm} {
		register(p, normRule(p))
	}
}

// normRule is the rule of layer_norm and rms_norm, which normalize over
// trailing axes: a batch dimension among them moves to the front first;
// both results keep it where it is.
func normRule(p *interp.Prim) Rule {
	return func(size int, params any, args []*T, dims []int) ([]*T, []int) {
		x, d := args[0], dims[0]
		if d >= x.Rank()-params.(prims.NormParams).Axes {
			x, d = ToFront(x, d, size), 0
		}
		return interp.Bind(p, params, x), []int{d, d}
	}
}

// axisRule is the rule of a one-result primitive along AxisParams.Axis.
func axisRule(p *interp.Prim) Rule {
	return func(_ int, params any, args []*T, dims []int) ([]*T, []int) {
		ap := params.(prims.AxisParams)
		ap.Axis = physAxis(ap.Axis, dims[0])
		return one(interp.Bind1(p, ap, args[0]), dims[0])
	}
}

func cumsumRule(_ int, params any, args []*T, dims []int) ([]*T, []int) {
	cp := params.(prims.CumsumParams)
	cp.Axis = physAxis(cp.Axis, dims[0])
	return one(interp.Bind1(prims.Cumsum, cp, args[0]), dims[0])
}

func scanRule(p *interp.Prim) Rule {
	return func(_ int, params any, args []*T, dims []int) ([]*T, []int) {
		cp := params.(prims.CumsumParams)
		cp.Axis = physAxis(cp.Axis, dims[0])
		outs := interp.Bind(p, cp, args[0])
		od := make([]int, len(outs))
		for k := range od {
			od[k] = dims[0]
		}
		return outs, od
	}
}
