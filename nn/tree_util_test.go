package nn

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// checkTreeGrad compares transforms.Grad of f with respect to the whole
// params tree p with central finite differences over every leaf.
func checkTreeGrad[A any](t *testing.T, what string, f func(A) *peel.Tensor, p A, rtol, atol float64) {
	t.Helper()
	g := transforms.Grad(f)(p)
	gflat, _ := tree.Ravel(g)
	flat, unravel := tree.Ravel(p)
	xs := flat.Float64s()
	want := make([]float64, len(xs))
	const h = 1e-6
	for i := range xs {
		pv := append([]float64{}, xs...)
		mv := append([]float64{}, xs...)
		pv[i] += h
		mv[i] -= h
		fp := f(unravel(peel.FromFloat64s(pv))).Item()
		fm := f(unravel(peel.FromFloat64s(mv))).Item()
		want[i] = (fp - fm) / (2 * h)
	}
	assertClose(t, what+" tree grad vs finite differences", gflat, want, nil, rtol, atol)
}

// checkCompileTree compares transforms.Compile of f with f on a tree
// argument, twice.
func checkCompileTree[A any](t *testing.T, what string, f func(A) *peel.Tensor, p A) {
	t.Helper()
	c := transforms.Compile(f)
	want := f(p)
	for range 2 {
		assertSame(t, what+" compile vs eager", c(p), want, 1e-12, 1e-12)
	}
}

// checkEnsemble compares Vmap of f over a stack of params trees with f
// applied to each, stacked.
func checkEnsemble[A any](t *testing.T, what string, f func(A) *peel.Tensor, ps []A) {
	t.Helper()
	got := transforms.Vmap(f)(tree.Stack(ps))
	outs := make([]*peel.Tensor, len(ps))
	for i, p := range ps {
		outs[i] = f(p)
	}
	assertSame(t, what+" vmap over params vs loop", got, peel.Stack(outs, 0), 1e-12, 1e-12)
}
