package transforms_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/prims"
	"github.com/peel-ml/peel/transforms"
)

// TestRowRulesNegateRows checks that the backward passes of softmax,
// log-softmax and the norms negate no cotangent as large as their
// operand: their rules subtract a row's sum or mean negated before its
// broadcast (subUnreduced), so the transpose negates one element a row.
// (They negated every element of the rows: a full pass over memory per
// rule in a model's backward pass.)
func TestRowRulesNegateRows(t *testing.T) {
	const rows, width = 8, 32
	x := peel.Normal(peel.Key(1), peel.Float64, rows, width)
	w := peel.Normal(peel.Key(2), peel.Float64, rows, width)
	for _, c := range []struct {
		name string
		f    func(*peel.Tensor) *peel.Tensor
	}{
		{"softmax", func(x *peel.Tensor) *peel.Tensor { return peel.Softmax(x, -1) }},
		{"log_softmax", func(x *peel.Tensor) *peel.Tensor { return peel.LogSoftmax(x, -1) }},
		{"layer_norm", func(x *peel.Tensor) *peel.Tensor { return peel.Standardize(x, 1, 1e-5) }},
		{"rms_norm", func(x *peel.Tensor) *peel.Tensor { return peel.RMSNormalize(x, 1, 1e-5) }},
	} {
		loss := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Mul(c.f(x), w)) }
		g := transforms.MakeGraph(transforms.Grad(loss), x)
		for _, e := range g.Eqns {
			if e.Prim == prims.Neg && e.Out[0].Aval.Size() > rows {
				t.Errorf("%s: the gradient negates a %v:\n%s", c.name, e.Out[0].Aval, g)
			}
		}
	}
}
