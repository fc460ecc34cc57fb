package compiler_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// TestTransformedGraphs: graphs of transformed functions (the backward
// pass of an MLP loss, per-example gradients with Vmap, a mutating
// function under Functionalize, a Jacobian) run by a Program equal
// Graph.Eval bit for bit.
func TestTransformedGraphs(t *testing.T) {
	type params = []*peel.Tensor
	w1 := peel.FromFloat64s(seqValues(12*16, 0.05), 12, 16)
	b1 := peel.FromFloat64s(seqValues(16, 0.1), 16)
	w2 := peel.FromFloat64s(seqValues(16*4, 0.07), 16, 4)
	x := peel.FromFloat64s(seqValues(32*12, 0.3), 32, 12)
	mlp := func(p params, x *peel.Tensor) *peel.Tensor {
		h := peel.Tanh(peel.Add(peel.MatMul(x, p[0]), p[1]))
		return peel.Mean(peel.Square(peel.MatMul(h, p[2])))
	}
	p := params{w1, b1, w2}
	cases := []struct {
		name string
		g    *transforms.Graph
		args []*peel.Tensor
	}{
		{"grad", transforms.MakeGraph(transforms.Grad(func(p params) *peel.Tensor { return mlp(p, x) }), p), p},
		{"value_and_grad", transforms.MakeGraph(func(p params) []*peel.Tensor {
			v, g := transforms.ValueAndGrad(func(p params) *peel.Tensor { return mlp(p, x) })(p)
			return append([]*peel.Tensor{v}, g...)
		}, p), p},
		{"vmap_grad", transforms.MakeGraph(transforms.Vmap(func(xi *peel.Tensor) []*peel.Tensor {
			return transforms.Grad(func(p params) *peel.Tensor { return mlp(p, peel.Reshape(xi, 1, 12)) })(p)
		}), x), []*peel.Tensor{x}},
		{"functionalize", transforms.MakeGraph(transforms.Functionalize(func(x *peel.Tensor) *peel.Tensor {
			y := peel.Clone(x)
			peel.AddInPlace(peel.Narrow(y, 1, 2, 3), 1.0)
			return peel.Exp(y)
		}), x), []*peel.Tensor{x}},
		{"jacrev", transforms.MakeGraph(transforms.Jacrev(func(v *peel.Tensor) *peel.Tensor {
			return peel.Sum(peel.Sin(peel.Mul(v, v)))
		}), b1), []*peel.Tensor{b1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := checkProgram(t, c.g, c.args)
			t.Logf("%d equations: %+v", len(c.g.Eqns), p.Stats())
		})
	}
}
