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
// (means over the row, broadcast back). ẏ is one primitive,
// layer_norm_lin or rms_norm_lin (below), its own transpose, so the
// backward pass is one kernel too. A row holding a NaN or an infinity
// is NaN throughout.

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

// LayerNormLin and RMSNormLin are the tangent maps of layer_norm's and
// rms_norm's first result at the primal point, operands (ẋ, y, r):
//
//	layer_norm_lin: r·(ẋ − mean(ẋ) − y·mean(y·ẋ))
//	rms_norm_lin:   r·(ẋ − y·mean(y·ẋ))
//
// over the last NormParams.Axes axes. Each is linear in ẋ and its own
// transpose (per row, r times the symmetric I − 11ᵀ/N − yyᵀ/N, or
// I − yyᵀ/N), so a norm's backward pass is one of them applied to the
// cotangent: one kernel where the backend has one (two passes over a
// row), where the composite's transpose was eight passes over memory.
// They are composites (their Impl the formulas above), kept whole by
// staging; their JVP rule is the formula's derivative.
var (
	LayerNormLin = normLinPrim("layer_norm_lin", true)
	RMSNormLin   = normLinPrim("rms_norm_lin", false)
)

// normAxes returns the last k axes of a rank-r shape.
func normAxes(r, k int) []int {
	axes := make([]int, k)
	for i := range axes {
		axes[i] = r - k + i
	}
	return axes
}

// normPieces returns, for a tensor of dtype dt and the given shape
// normalized over its last k axes, the row mean (reduced) and the
// broadcast back to the shape.
func normPieces(shape []int, k int, dt backend.DType) (mean, back func(*tensor) *tensor) {
	r := len(shape)
	axes := normAxes(r, k)
	n := full(float64(backend.ShapeSize(shape[r-k:])), aval{Shape: shape[:r-k], DType: dt})
	mean = func(v *tensor) *tensor { return div(reduceSum(v, axes), n) }
	back = func(v *tensor) *tensor { return unreduce(v, shape, axes) }
	return mean, back
}

func normLinPrim(name string, center bool) *interp.Prim {
	p := graphio.Params[NormParams](interp.NewPrim(name, interp.Pure, func(params any, in []aval) []aval {
		checkArity(in, 3)
		checkClass(floats, in[0])
		k, r := params.(NormParams).Axes, len(in[0].Shape)
		if k < 1 || k > r {
			interp.Panicf("%s over the last %d axes of a rank-%d operand (want 1 to the rank)", name, k, r)
		}
		if in[1].DType != in[0].DType || !interp.ShapeEqual(in[1].Shape, in[0].Shape) ||
			in[2].DType != in[0].DType || !interp.ShapeEqual(in[2].Shape, in[0].Shape[:r-k]) {
			interp.Panicf("%s of %v needs y %v and r %v, got %v and %v", name, in[0], in[0], aval{Shape: in[0].Shape[:r-k], DType: in[0].DType}, in[1], in[2])
		}
		return one(in[0])
	}))
	// g returns t − mean(t) − y·mean(y·t) (without mean(t) for rms) and
	// mean(y·t).
	g := func(params any, t, y *tensor) (*tensor, *tensor) {
		mean, back := normPieces(t.Shape(), params.(NormParams).Axes, t.DType())
		myt := mean(mul(y, t))
		u := t
		if center {
			u = subUnreduced(u, mean(t), normAxes(t.Rank(), params.(NormParams).Axes))
		}
		return add(u, mul(y, back(neg(myt)))), myt
	}
	p.Impl = func(params any, args []*tensor) []*tensor {
		t, y, r := args[0], args[1], args[2]
		_, back := normPieces(t.Shape(), params.(NormParams).Axes, t.DType())
		v, _ := g(params, t, y)
		return []*tensor{mul(back(r), v)}
	}
	p.Whole = true
	defSelfTranspose(p)
	// d(r·g(t, y)) = ṙ·g + r·g(ṫ, y) − r·(ẏ·mean(y·t) + y·mean(ẏ·t)).
	defJVP(p, func(params any, primals, tangents []*tensor, _ *tensor) *tensor {
		t, y, r := primals[0], primals[1], primals[2]
		dt, dy, dr := tangents[0], tangents[1], tangents[2]
		mean, back := normPieces(t.Shape(), params.(NormParams).Axes, t.DType())
		var d *tensor
		if dt != nil {
			d = interp.Bind1(p, params, dt, y, r)
		}
		if dy != nil {
			_, myt := g(params, t, y)
			e := add(mul(dy, back(myt)), mul(y, back(mean(mul(dy, t)))))
			d = addNil(d, neg(mul(back(r), e)))
		}
		if dr != nil {
			v, _ := g(params, t, y)
			d = addNil(d, mul(back(dr), v))
		}
		return d
	})
	return p
}

func init() {
	for _, p := range []*interp.Prim{LayerNorm, RMSNorm} {
		lin := RMSNormLin
		if p == LayerNorm {
			lin = LayerNormLin
		}
		p.JVP = func(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
			outs := interp.Bind(p, params, primals...)
			t := tangents[0]
			if t == nil {
				return outs, []*tensor{nil, nil}
			}
			y, r := outs[0], outs[1]
			mean, _ := normPieces(y.Shape(), params.(NormParams).Axes, r.DType())
			ty := interp.Bind1(lin, params, t, y, r)
			tr := interp.Bind1(Neg, nil, mul(mul(r, r), mean(mul(y, t))))
			return outs, []*tensor{ty, tr}
		}
	}
}
