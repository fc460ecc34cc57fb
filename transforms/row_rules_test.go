package transforms_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
	"github.com/peel-ml/peel/transforms"
)

// TestRowRulesNegateRows checks that the backward passes of softmax,
// log-softmax and the norms negate no cotangent as large as their
// operand: their rules subtract a row's sum or mean negated before its
// broadcast (subUnreduced), so the transpose negates one element a row.
// (They negated every element of the rows: a full pass over memory per
// rule in a model's backward pass.) The backward pass of softmax or a
// norm is one primitive, its tangent map (softmax_lin, layer_norm_lin,
// rms_norm_lin), applied to the cotangent.
func TestRowRulesNegateRows(t *testing.T) {
	const rows, width = 8, 32
	x := peel.Normal(peel.Key(1), peel.Float64, rows, width)
	w := peel.Normal(peel.Key(2), peel.Float64, rows, width)
	for _, c := range []struct {
		name string
		f    func(*peel.Tensor) *peel.Tensor
		lin  *interp.Prim // the one tangent map the gradient applies
	}{
		{"softmax", func(x *peel.Tensor) *peel.Tensor { return peel.Softmax(x, -1) }, prims.SoftmaxLin},
		{"log_softmax", func(x *peel.Tensor) *peel.Tensor { return peel.LogSoftmax(x, -1) }, nil},
		{"layer_norm", func(x *peel.Tensor) *peel.Tensor { return peel.Standardize(x, 1, 1e-5) }, prims.LayerNormLin},
		{"rms_norm", func(x *peel.Tensor) *peel.Tensor { return peel.RMSNormalize(x, 1, 1e-5) }, prims.RMSNormLin},
	} {
		loss := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Mul(c.f(x), w)) }
		g := transforms.MakeGraph(transforms.Grad(loss), x)
		lins := 0
		for _, e := range g.Eqns {
			if e.Prim == prims.Neg && e.Out[0].Aval.Size() > rows {
				t.Errorf("%s: the gradient negates a %v:\n%s", c.name, e.Out[0].Aval, g)
			}
			if e.Prim == c.lin {
				lins++
			}
		}
		if c.lin != nil && lins != 1 {
			t.Errorf("%s: the gradient applies %s %d times, want once:\n%s", c.name, c.lin.Name, lins, g)
		}
	}
}

// BenchmarkNormGrad is the gradient of sum(w·layer_norm(x)) at a GPT's
// shape (2048 rows of 64, float32): the forward kernel, the backward
// pass's tangent map (layer_norm_lin) and the sum.
func BenchmarkNormGrad(b *testing.B) {
	x := peel.Normal(peel.Key(1), peel.Float32, 2048, 64)
	w := peel.Normal(peel.Key(2), peel.Float32, 2048, 64)
	g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Mul(peel.Standardize(x, 1, 1e-5), w)) })
	for b.Loop() {
		g(x)
	}
}
