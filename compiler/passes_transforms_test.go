package compiler_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/compiler"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
	"github.com/peel-ml/peel/transforms"
)

// mlpLoss is a small two-layer perceptron's loss; p holds w1 [4,3], w2
// [2,4] and the input batch [5,3].
func mlpLoss(p []*T) *T {
	h := peel.Tanh(peel.MatMul(p[2], peel.Transpose(p[0])))
	y := peel.MatMul(h, peel.Transpose(p[1]))
	return peel.Mean(peel.Square(y))
}

// TestPipelineOnTransformedGraphs optimizes the graphs transforms make
// (a gradient, a per-example gradient under vmap, a Hessian-vector
// product, gelu written by hand under grad) and checks that the results
// are unchanged bit for bit (the products are small: the kernel's plain
// loop) with fewer equations.
func TestPipelineOnTransformedGraphs(t *testing.T) {
	w1, w2, x := peel.Sin(seq(4, 3)), peel.Cos(seq(2, 4)), seq(5, 3)
	grad := transforms.Grad(func(p []*T) *T { return mlpLoss(p) })
	passes := append([]compiler.Pass{compiler.ReplaceComposites(mylib.Gelu)}, compiler.DefaultPasses()...)
	cases := []struct {
		name string
		f    func(xs []*T) []*T
		args []*T
	}{
		{"grad", func(xs []*T) []*T { return grad(xs) }, []*T{w1, w2, x}},
		{"vmap of grad", func(xs []*T) []*T {
			per := transforms.Vmap(func(xi *T) []*T {
				return grad([]*T{xs[0], xs[1], peel.Reshape(xi, 1, 3)})[:2]
			})
			return per(xs[2])
		}, []*T{w1, w2, x}},
		{"hvp", func(xs []*T) []*T {
			f := func(w *T) *T { return mlpLoss([]*T{w, xs[1], xs[2]}) }
			return []*T{transforms.Grad(func(w *T) *T { return peel.Sum(peel.Mul(transforms.Grad(f)(w), xs[0])) })(xs[0])}
		}, []*T{w1, w2, x}},
		{"grad of gelu by hand", func(xs []*T) []*T {
			return []*T{transforms.Grad(func(x *T) *T { return peel.Sum(geluByHand(x, geluC)) })(xs[0])}
		}, []*T{x}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := interp.Trace(c.f, c.args)
			opt, stages := compiler.Optimize(g, passes, true)
			if msg := sameResults(opt, g, c.args); msg != "" {
				t.Fatalf("%s\nbefore:\n%v\nafter:\n%v", msg, g, opt)
			}
			for _, s := range stages {
				if msg := sameResults(s.Graph, g, c.args); msg != "" {
					t.Errorf("after %s: %s", s.Pass, msg)
				}
			}
			// Broadcasts of one value (SplatConstants's, of constants
			// that were whole arrays) are views: they do not count.
			if n := len(opt.Eqns) - splats(opt); n > len(g.Eqns) {
				t.Errorf("%d equations after (besides broadcasts of one value), %d before", n, len(g.Eqns))
			}
			t.Logf("%d equations, %d after the pipeline", len(g.Eqns), len(opt.Eqns))
		})
	}
}

// splats counts g's broadcasts of one-element values.
func splats(g *interp.Graph) int {
	n := 0
	for _, e := range g.Eqns {
		if e.Prim == prims.BroadcastInDim && e.In[0].Aval.Size() == 1 {
			n++
		}
	}
	return n
}
