package transforms_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// lapMLP is a small tanh network at a point x, as the PINN example's.
func lapMLP(ws []*T) func(x *T) *T {
	return func(x *T) *T {
		h := peel.Reshape(x, 1, x.Size())
		for i, w := range ws {
			h = peel.MatMul(h, w)
			if i < len(ws)-1 {
				h = peel.Tanh(h)
			}
		}
		return peel.Reshape(h)
	}
}

// traceHessian is the oracle: the trace of Jacfwd(Jacrev(f)) at x.
func traceHessian(f func(*T) *T, x *T) *T {
	h := transforms.Hessian(f)(x)
	d := x.Size()
	return peel.Trace(peel.Reshape(h, d, d))
}

// TestLaplacianRapid checks the Laplacian against the trace of the
// Hessian on random networks and inputs of one to three dimensions, and
// on elementwise functions, products, reductions and shape ops, in
// float64 to 1e-10.
func TestLaplacianRapid(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d := rapid.IntRange(1, 5).Draw(rt, "d")
		x := drawTensor(rt, "x", []int{d})
		var f func(*T) *T
		switch rapid.IntRange(0, 3).Draw(rt, "kind") {
		case 0:
			ws := []*T{drawTensor(rt, "w1", []int{d, 4}), drawTensor(rt, "w2", []int{4, 3}), drawTensor(rt, "w3", []int{3, 1})}
			f = lapMLP(ws)
		case 1:
			f = func(x *T) *T { return peel.Sum(peel.Mul(peel.Sin(x), peel.Exp(peel.Mul(x, 0.5)))) }
		case 2:
			f = func(x *T) *T { return peel.Mul(peel.Sum(peel.Square(x)), peel.Prod(peel.Cos(x))) }
		default:
			c := drawTensor(rt, "c", []int{d})
			f = func(x *T) *T {
				y := peel.Concat([]*T{x, peel.Flip(x, 0)}, 0)
				return peel.Max(peel.Log(peel.Add(peel.Square(peel.Mul(y, peel.Concat([]*T{c, c}, 0))), 1.0)))
			}
		}
		got := transforms.Laplacian(f)(x).Float64s()
		want := traceHessian(f, x).Float64s()
		if len(got) != 1 || len(want) != 1 || abs(got[0]-want[0]) > 1e-10*max(1, abs(want[0])) {
			rt.Fatalf("Laplacian %v, trace of the Hessian %v", got, want)
		}
	})
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// TestLaplacianShapes: a vector value's Laplacian is taken element by
// element; a matrix argument's coordinates are all its elements; a
// function writing in place is traced through Functionalize.
func TestLaplacianShapes(t *testing.T) {
	x := f64(0.3, -0.7, 1.1, 0.2)
	f := func(x *T) *T { return peel.Mul(peel.Sin(x), peel.Sum(peel.Square(x))) }
	got := transforms.Laplacian(f)(x).Float64s()
	for k := range 4 {
		fk := func(x *T) *T { return peel.Index(f(x), k) }
		near(t, "component", got[k:k+1], traceHessian(fk, x).Float64s(), 1e-10)
	}
	m := peel.Reshape(x, 2, 2)
	g := func(m *T) *T { return peel.Sum(peel.Exp(peel.MatMul(m, m))) }
	near(t, "matrix argument", transforms.Laplacian(g)(m).Float64s(), traceHessian(g, m).Float64s(), 1e-10)
	inPlace := func(x *T) *T {
		y := peel.Clone(x)
		peel.MulInPlace(y, y)
		return peel.Sum(peel.Sin(y))
	}
	near(t, "in place", transforms.Laplacian(inPlace)(x).Float64s(), traceHessian(inPlace, x).Float64s(), 1e-10)
	// A linear function has none.
	near(t, "linear", transforms.Laplacian(func(x *T) *T { return peel.Sum(peel.Mul(x, 3.0)) })(x).Float64s(), []float64{0}, 0)
	wantError(t, func() { transforms.Laplacian(f)(peel.FromInt64s([]int64{1, 2})) }, "float")
	wantError(t, func() { transforms.Laplacian(nil) }, "nil")
}

// TestLaplacianComposes: Vmap of the Laplacian over points is a loop
// over them, Compile of it the same, and its gradient in the network's weights (a PINN's loss)
// is the gradient of the trace of the Hessian, within 1e-9.
func TestLaplacianComposes(t *testing.T) {
	w1 := peel.Normal(peel.Key(1), peel.Float64, 2, 8)
	w2 := peel.Normal(peel.Key(2), peel.Float64, 8, 1)
	pts := peel.Normal(peel.Key(3), peel.Float64, 5, 2)
	lap := transforms.Vmap(transforms.Laplacian(lapMLP([]*T{w1, w2})))(pts).Float64s()
	for p := range 5 {
		near(t, "Vmap lane", lap[p:p+1], traceHessian(lapMLP([]*T{w1, w2}), peel.Index(pts, p)).Float64s(), 1e-10)
	}
	loss := func(lapf func(func(*T) *T, *T) *T) func(*T) *T {
		return func(w1 *T) *T { return peel.Square(lapf(lapMLP([]*T{w1, w2}), peel.Index(pts, 0))) }
	}
	comp := transforms.Compile(transforms.Laplacian(lapMLP([]*T{w1, w2})))
	near(t, "compiled", comp(peel.Index(pts, 1)).Float64s(), lap[1:2], 1e-12)
	g := transforms.Grad(loss(func(f func(*T) *T, x *T) *T { return transforms.Laplacian(f)(x) }))(w1)
	want := transforms.Grad(loss(traceHessian))(w1)
	near(t, "gradient of the Laplacian", g.Float64s(), want.Float64s(), 1e-9)
}
