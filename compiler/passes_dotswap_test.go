package compiler_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/compiler"
	"github.com/peel-ml/peel/transforms"
)

// TestFoldTransposeOfDot: a transpose swapping a dot's lhs and rhs free
// dimensions becomes the dot with swapped operands (per-sample weight
// gradients under vmap); a transpose that is not such a swap, or of a
// dot used elsewhere too, stays.
func TestFoldTransposeOfDot(t *testing.T) {
	a := seq(4, 3)
	b := seq(4, 5)
	cases := []struct {
		name string
		f    func(xs []*T) []*T
		want int // transposes left
	}{
		{"outer product, swapped", func(xs []*T) []*T {
			return []*T{peel.Transpose(peel.Einsum("ni,nj->nij", xs[0], xs[1]), 0, 2, 1)}
		}, 0},
		{"matmul, transposed result", func(xs []*T) []*T {
			return []*T{peel.Transpose(peel.MatMul(peel.Transpose(xs[0], 1, 0), xs[1]), 1, 0)}
		}, 0},
		{"batch dim moved", func(xs []*T) []*T {
			return []*T{peel.Transpose(peel.Einsum("ni,nj->nij", xs[0], xs[1]), 1, 0, 2)}
		}, 1},
		{"dot used twice", func(xs []*T) []*T {
			d := peel.Einsum("ni,nj->nij", xs[0], xs[1])
			return []*T{peel.Transpose(d, 0, 2, 1), d}
		}, 1},
	}
	for _, c := range cases {
		g := trace(c.f, a, b)
		got := compiler.FoldTransposeIntoDot(g)
		if n := count(got, "transpose"); n != c.want {
			t.Errorf("%s: %d transposes left, want %d:\n%s", c.name, n, c.want, got)
		}
		if msg := sameResults(got, g, []*T{a, b}); msg != "" {
			t.Errorf("%s: %s", c.name, msg)
		}
	}
	// The per-sample gradient of a linear layer: no transpose remains.
	w := seq(5, 3)
	loss := func(w, x *T) *T { return peel.Sum(peel.Tanh(peel.MatMul(x, w))) }
	g := transforms.MakeGraph(func(x *T) *T {
		return transforms.Vmap(func(x *T) *T { return transforms.Grad(func(w *T) *T { return loss(w, x) })(w) })(x)
	}, seq(4, 5))
	og, _ := compiler.Optimize(g, compiler.DefaultPasses(), false)
	if n := count(og, "transpose"); n != 0 {
		t.Errorf("per-sample gradient keeps %d transposes:\n%s", n, og)
	}
}
