package mylib_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/transforms"
)

type T = peel.Tensor

// Tolerances: the fused kernel and the composite run the same float64
// tanh and differ only in the order of a few roundings (1e-14 relative);
// in float32 they differ by a few ulp. Finite differences are central
// with step 1e-6 (error about 1e-9 here), checked at 1e-6.
const (
	tol64 = 1e-14
	tol32 = 4e-7
	tolFD = 1e-6
)

// fataler is what near needs of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

func near(t fataler, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !(math.Abs(got[i]-want[i]) <= tol*math.Max(1, math.Abs(want[i]))) {
			t.Fatalf("%s: element %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

func floats(x *T) []float64 { return peel.AsType(x, peel.Float64).Float64s() }

func gelu(x *T) *T { return mylib.Gelu.Call(x) }

func sum(f func(*T) *T) func(*T) *T {
	return func(x *T) *T { return peel.Sum(f(x)) }
}

func composite(x *T) *T { return mylib.GeluComposite(x) }

// drawInput draws a tensor of rank 0–3 with values in [-5, 5].
func drawInput(t *rapid.T, dt peel.DType) (*T, []int) {
	shape := rapid.SliceOfN(rapid.IntRange(1, 7), 0, 3).Draw(t, "shape")
	n := 1
	for _, d := range shape {
		n *= d
	}
	xs := rapid.SliceOfN(rapid.Float64Range(-5, 5), n, n).Draw(t, "x")
	return peel.AsType(peel.FromFloat64s(xs, shape...), dt), shape
}

func TestRapidKernelMatchesComposite(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dt := rapid.SampledFrom([]peel.DType{peel.Float32, peel.Float64}).Draw(t, "dtype")
		x, _ := drawInput(t, dt)
		tol := tol64
		if dt == peel.Float32 {
			tol = tol32
		}
		got := gelu(x)
		if got.DType() != dt {
			t.Fatalf("dtype %v, want %v", got.DType(), dt)
		}
		near(t, "kernel vs composite", floats(got), floats(composite(x)), tol)
		var want []float64
		for _, v := range floats(x) {
			want = append(want, mylib.GeluFloat64(v))
		}
		near(t, "kernel vs float64 reference", floats(got), want, 10*tol)
	})
}

// TestKernelOnLargeStridedInput runs the kernel on a transposed input
// (the backend hands it a contiguous copy) large enough to be split
// across threads.
func TestKernelOnLargeStridedInput(t *testing.T) {
	xs := make([]float64, 300*257)
	for i := range xs {
		xs[i] = -6 + 12*float64(i)/float64(len(xs))
	}
	for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
		x := peel.Transpose(peel.AsType(peel.FromFloat64s(xs, 300, 257), dt), 1, 0)
		tol := tol64
		if dt == peel.Float32 {
			tol = tol32
		}
		near(t, "large "+dt.String(), floats(gelu(x)), floats(composite(x)), tol)
	}
}

func fdGrad(f func(*T) *T, xs []float64, shape []int) []float64 {
	const h = 1e-6
	g := make([]float64, len(xs))
	for i := range xs {
		p := append([]float64(nil), xs...)
		m := append([]float64(nil), xs...)
		p[i] += h
		m[i] -= h
		g[i] = (f(peel.FromFloat64s(p, shape...)).Item() - f(peel.FromFloat64s(m, shape...)).Item()) / (2 * h)
	}
	return g
}

func TestRapidGrad(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x, shape := drawInput(t, peel.Float64)
		// A loss that uses the op twice and mixes it with other ops.
		loss := func(x *T) *T {
			return peel.Sum(peel.Mul(gelu(peel.Mul(x, 0.7)), peel.Add(gelu(x), 1.0)))
		}
		lossC := func(x *T) *T {
			return peel.Sum(peel.Mul(composite(peel.Mul(x, 0.7)), peel.Add(composite(x), 1.0)))
		}
		g := transforms.Grad(loss)(x).Float64s()
		near(t, "Grad(op) vs Grad(composite)", g, transforms.Grad(lossC)(x).Float64s(), 1e-13)
		near(t, "Grad(op) vs FD", g, fdGrad(loss, x.Float64s(), shape), tolFD)
	})
}

func TestGradGradAndHessian(t *testing.T) {
	xs := []float64{-3, -1.5, -0.2, 0, 0.3, 1.1, 2.5}
	x := peel.FromFloat64s(xs)
	// Grad(Grad): the second derivative of Σ gelu, elementwise.
	d2 := transforms.Grad(sum(transforms.Grad(sum(gelu))))(x).Float64s()
	d1 := func(x *T) *T { return peel.Sum(transforms.Grad(sum(gelu))(x)) }
	near(t, "Grad(Grad) vs FD of Grad", d2, fdGrad(d1, xs, []int{len(xs)}), tolFD)
	near(t, "Grad(Grad) op vs composite", d2, transforms.Grad(sum(transforms.Grad(sum(composite))))(x).Float64s(), 1e-12)
	// A Hessian with off-diagonal terms: Σ gelu(W x).
	w := peel.Reshape(peel.Linspace(peel.Float64, -1, 1, 21), 3, 7)
	f := func(x *T) *T { return peel.Sum(gelu(peel.MatMul(w, x))) }
	fc := func(x *T) *T { return peel.Sum(composite(peel.MatMul(w, x))) }
	h := transforms.Hessian(f)(x)
	near(t, "Hessian op vs composite", h.Float64s(), transforms.Hessian(fc)(x).Float64s(), 1e-12)
	near(t, "Hessian symmetric", h.Float64s(), peel.Transpose(h, 1, 0).Float64s(), 1e-14)
	// Third order through the op.
	third := transforms.Grad(sum(transforms.Grad(sum(transforms.Grad(sum(gelu))))))(x).Float64s()
	thirdC := transforms.Grad(sum(transforms.Grad(sum(transforms.Grad(sum(composite))))))(x).Float64s()
	near(t, "third derivative", third, thirdC, 1e-11)
}

func TestRapidVmapMatchesLoop(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dt := rapid.SampledFrom([]peel.DType{peel.Float32, peel.Float64}).Draw(t, "dtype")
		x, shape := drawInput(t, dt)
		if len(shape) == 0 {
			return
		}
		axis := rapid.IntRange(0, len(shape)-1).Draw(t, "axis")
		got := transforms.Vmap(gelu, transforms.InAxes(axis))(x)
		// Vmap(Grad): per-example gradients.
		gg := transforms.Vmap(transforms.Grad(sum(gelu)), transforms.InAxes(axis))(x)
		tol := tol64
		if dt == peel.Float32 {
			tol = tol32
		}
		for i := range shape[axis] {
			lane := peel.Select(x, axis, i)
			near(t, "Vmap(op) lane", floats(peel.Select(got, 0, i)), floats(gelu(lane)), 0)
			near(t, "Vmap(Grad(op)) lane", floats(peel.Select(gg, 0, i)), floats(transforms.Grad(sum(composite))(lane)), 100*tol)
		}
	})
}

func interleaveLoop(a, b *T) []float64 {
	var out []float64
	for i := range a.Shape()[0] {
		out = append(out, mylib.Interleave.Call(peel.Select(a, 0, i), peel.Select(b, 0, i)).Float64s()...)
	}
	return out
}

func TestInterleave(t *testing.T) {
	a := peel.Reshape(peel.Arange(peel.Float64, 0, 24, 1), 2, 3, 4)
	b := peel.Neg(a)
	// Eager: a's rows at even positions, b's at odd ones.
	got := mylib.Interleave.Call(peel.Select(a, 0, 0), peel.Select(b, 0, 0))
	for r := range 6 {
		src := peel.Select(peel.Select(a, 0, 0), 0, r/2)
		if r%2 == 1 {
			src = peel.Select(peel.Select(b, 0, 0), 0, r/2)
		}
		near(t, "row", peel.Select(got, 0, r).Float64s(), src.Float64s(), 0)
	}
	pair := func(x []*T) *T { return mylib.Interleave.Call(x[0], x[1]) }
	near(t, "Vmap(Functionalize)", transforms.Vmap(transforms.Functionalize(pair))([]*T{a, b}).Float64s(), interleaveLoop(a, b), 0)
	// Plain Vmap cannot batch the in-place decomposition: the error
	// names the user's op, the transform and the level.
	err := peel.Catch(func() { transforms.Vmap(pair)([]*T{a, b}) })
	var e *peel.Error
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "while decomposing mylib.interleave") || !strings.Contains(err.Error(), "[in vmap]") {
		t.Fatalf("plain Vmap: %v", err)
	}
	// Grad through the mutating decomposition = finite differences.
	w := peel.Reshape(peel.Linspace(peel.Float64, -1, 2, 24), 6, 4)
	loss := func(x *T) *T {
		return peel.Sum(peel.Mul(peel.Tanh(mylib.Interleave.Call(x, peel.Mul(x, x))), w))
	}
	x0 := peel.Select(a, 0, 1)
	xs := peel.Mul(x0, 0.05).Float64s()
	g := transforms.Grad(loss)(peel.FromFloat64s(xs, 3, 4)).Float64s()
	near(t, "Grad(interleave) vs FD", g, fdGrad(loss, xs, []int{3, 4}), tolFD)
}
