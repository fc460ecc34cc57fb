package nn

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// randn returns n pseudo-random standard normal float64 values.
func randn(seed uint64, n int) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]float64, n)
	for i := range out {
		out[i] = r.NormFloat64()
	}
	return out
}

// floatDTypes are the dtypes nn's layers accept: a test of a special
// value (a masked row, a tail, a kink, a zero target) runs in each.
var floatDTypes = []peel.DType{peel.Float32, peel.Float64}

// epsOf is a relative tolerance of one computation in dt: a few units in
// the last place.
func epsOf(dt peel.DType) float64 {
	if dt == peel.Float32 {
		return 1e-6
	}
	return 1e-12
}

// tensor returns a float64 tensor of random normal values.
func tensor(seed uint64, shape ...int) *peel.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return peel.FromFloat64s(randn(seed, n), shape...)
}

// labels returns n pseudo-random class indices in [0, c).
func labels(seed uint64, c int, shape ...int) *peel.Tensor {
	r := rand.New(rand.NewPCG(seed, 2))
	n := 1
	for _, d := range shape {
		n *= d
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(r.IntN(c))
	}
	return peel.FromInt64s(out, shape...)
}

// closeTo reports whether got is within atol + rtol·|want| of want,
// NaN matching NaN.
func closeTo(got, want, rtol, atol float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	if math.IsInf(want, 0) {
		return got == want
	}
	return math.Abs(got-want) <= atol+rtol*math.Abs(want)
}

// assertClose fails t unless got has the given shape and its elements
// are close to want.
func assertClose(t *testing.T, what string, got *peel.Tensor, want []float64, shape []int, rtol, atol float64) {
	t.Helper()
	if shape != nil && !slices.Equal(got.Shape(), shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), shape)
	}
	g := peel.AsType(got, peel.Float64).Float64s()
	if len(g) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(g), len(want))
	}
	for i := range g {
		if !closeTo(g[i], want[i], rtol, atol) {
			t.Fatalf("%s: element %d = %v, want %v (rtol %g, atol %g)", what, i, g[i], want[i], rtol, atol)
		}
	}
}

// assertSame fails t unless a and b have equal shapes and close elements.
func assertSame(t *testing.T, what string, a, b *peel.Tensor, rtol, atol float64) {
	t.Helper()
	assertClose(t, what, a, peel.AsType(b, peel.Float64).Float64s(), b.Shape(), rtol, atol)
}

// checkGradFD compares transforms.Grad of the scalar function f at the
// float64 tensor x with central finite differences (step 1e-6).
func checkGradFD(t *testing.T, what string, f func(*peel.Tensor) *peel.Tensor, x *peel.Tensor, rtol, atol float64) {
	t.Helper()
	g := transforms.Grad(f)(x)
	xs := x.Float64s()
	want := make([]float64, len(xs))
	const h = 1e-6
	for i := range xs {
		p := append([]float64{}, xs...)
		m := append([]float64{}, xs...)
		p[i] += h
		m[i] -= h
		fp := f(peel.FromFloat64s(p, x.Shape()...)).Item()
		fm := f(peel.FromFloat64s(m, x.Shape()...)).Item()
		want[i] = (fp - fm) / (2 * h)
	}
	assertClose(t, what+" grad vs finite differences", g, want, x.Shape(), rtol, atol)
}

// checkVmap compares transforms.Vmap of f over axis 0 of xb with f
// applied to each slice, stacked.
func checkVmap(t *testing.T, what string, f func(*peel.Tensor) *peel.Tensor, xb *peel.Tensor) {
	t.Helper()
	got := transforms.Vmap(f)(xb)
	n := xb.Shape()[0]
	outs := make([]*peel.Tensor, n)
	for i := range n {
		outs[i] = f(peel.Select(xb, 0, i))
	}
	assertSame(t, what+" vmap vs loop", got, peel.Stack(outs, 0), 1e-12, 1e-12)
}

// checkCompile compares transforms.Compile of f with f, twice (the
// second call hits the cache).
func checkCompile(t *testing.T, what string, f func(*peel.Tensor) *peel.Tensor, x *peel.Tensor) {
	t.Helper()
	c := transforms.Compile(f)
	want := f(x)
	for range 2 {
		assertSame(t, what+" compile vs eager", c(x), want, 1e-12, 1e-12)
	}
}

// mustPanic fails t unless f panics with a *peel.Error whose message
// contains op.
func mustPanic(t *testing.T, op string, f func()) {
	t.Helper()
	err := peel.Catch(f)
	if err == nil {
		t.Fatalf("%s: no *peel.Error", op)
	}
	if !strings.Contains(err.Error(), op) {
		t.Fatalf("error %q does not name %s", err, op)
	}
}
