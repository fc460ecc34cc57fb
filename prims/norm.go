package prims

import (
	"fmt"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

// Normalizations over the trailing axes: layer_norm standardizes each
// row (the last K axes flattened, N elements) to mean 0 and variance 1,
// rms_norm scales it to a mean square of 1:
//
//	layer_norm: d = x − mean(x), r = 1/√(mean(d²) + ε), y = d·r
//	rms_norm:   r = 1/√(mean(x²) + ε),                  y = x·r
//
// Each has two results: y, and r per row (x's shape without the last K
// axes), which the tangent rule reads, as torch's kernels save their
// inverse deviation. As composites they were nine and six kernels (and
// buffers) forward, more backward; as primitives one kernel forward, and
// tangents that are a few linear operations on the results:
//
//	layer_norm: ẏ = r·(ẋ − mean(ẋ) − y·mean(y·ẋ)),  ṙ = −r²·mean(y·ẋ)
//	rms_norm:   ẏ = r·(ẋ − y·mean(y·ẋ)),            ṙ = −r²·mean(y·ẋ)
//
// (means over the row, broadcast back), which autodiff transposes. A row
// holding a NaN or an infinity is NaN throughout.

// NormParams are the parameters of layer_norm and rms_norm: the number
// of trailing axes normalized over (at least 1) and ε, added to the
// variance (mean square), in the operand's dtype.
type NormParams struct {
	Axes int
	Eps  float64
}

func (p NormParams) String() string { return fmt.Sprintf("axes=%d eps=%g", p.Axes, p.Eps) }

func normPrim(name string) *interp.Prim {
	return graphio.Params[NormParams](interp.NewPrim(name, interp.Pure, func(params any, in []aval) []aval {
		checkArity(in, 1)
		checkClass(floats, in[0])
		k, r := params.(NormParams).Axes, len(in[0].Shape)
		if k < 1 || k > r {
			interp.Panicf("%s over the last %d axes of a rank-%d operand (want 1 to the rank)", name, k, r)
		}
		return []aval{in[0], {Shape: append([]int{}, in[0].Shape[:r-k]...), DType: in[0].DType}}
	}))
}

// LayerNorm standardizes x over its last NormParams.Axes axes; its
// results are y and the rows' inverse deviations r.
var LayerNorm = normPrim("layer_norm")

// RMSNorm scales x over its last NormParams.Axes axes to a mean square
// of 1; its results are y and the rows' inverse root mean squares r.
var RMSNorm = normPrim("rms_norm")

func init() {
	for _, p := range []*interp.Prim{LayerNorm, RMSNorm} {
		center := p == LayerNorm
		p.JVP = func(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
			outs := interp.Bind(p, params, primals...)
			t := tangents[0]
			if t == nil {
				return outs, []*tensor{nil, nil}
			}
			y, r := outs[0], outs[1]
			k := params.(NormParams).Axes
			shape := y.Shape()
			axes := make([]int, k)
			for i := range axes {
				axes[i] = len(shape) - k + i
			}
			n := constLike(float64(backend.ShapeSize(shape[len(shape)-k:])), r)
			mean := func(v *tensor) *tensor { return div(reduceSum(v, axes), n) }
			back := func(v *tensor) *tensor { return unreduce(v, shape, axes) }
			myt := mean(mul(y, t))
			// The means are subtracted negated before their broadcast
			// (subUnreduced; −(y·m) is y·(−m) exactly), so a backward
			// pass negates row-sized cotangents, not full ones.
			u := t
			if center {
				u = subUnreduced(u, mean(t), axes)
			}
			ty := mul(back(r), add(u, mul(y, back(neg(myt)))))
			tr := interp.Bind1(Neg, nil, mul(mul(r, r), myt))
			return outs, []*tensor{ty, tr}
		}
	}
}
