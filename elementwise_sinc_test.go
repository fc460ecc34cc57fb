package peel_test

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// TestSincValues checks the normalized sinc against closed forms
// (sin(πx)/(πx) at points where sin(πx) is known exactly), independent
// of the primitive's own reference function.
func TestSincValues(t *testing.T) {
	xs := []float64{0, 0.5, 0.25, 1, -2.5, 1.0 / 6, -0.5}
	want := []float64{1, 2 / math.Pi, 2 * math.Sqrt2 / math.Pi, 0, 0.4 / math.Pi, 3 / math.Pi, 2 / math.Pi}
	for _, dt := range []peel.DType{peel.Float64, peel.Float32} {
		got := peel.AsType(peel.Sinc(peel.AsType(peel.FromFloat64s(xs), dt)), peel.Float64).Float64s()
		tol := 1e-15
		if dt == peel.Float32 {
			tol = 1e-6
		}
		for i := range xs {
			if math.Abs(got[i]-want[i]) > tol {
				t.Errorf("%v: sinc(%g) = %.17g, want %.17g", dt, xs[i], got[i], want[i])
			}
		}
	}
	// Integers and bools compute in f64, like every float-only unary op.
	if got := peel.Sinc(peel.FromInt64s([]int64{0, 2})).Float64s(); got[0] != 1 || math.Abs(got[1]) > 1e-16 {
		t.Errorf("sinc of i64 [0 2] = %v, want [1 0]", got)
	}
}

// TestSincDerivativesAtZero: nested Grad of Sinc at 0, where the rule
// uses its Maclaurin polynomial, gives the exact derivatives up to the
// sixth: sinc⁽ᵏ⁾(0) = (−1)^(k/2)·π^k/(k+1) for even k, 0 for odd k
// (from sinc(x) = Σ (−1)ʲ(πx)²ʲ/(2j+1)!).
func TestSincDerivativesAtZero(t *testing.T) {
	f := func(x *peel.Tensor) *peel.Tensor { return peel.Sinc(x) }
	for k := 1; k <= 6; k++ {
		f = transforms.Grad(f)
		got := f(peel.Scalar(0.0)).Item()
		want := 0.0
		if k%2 == 0 {
			want = math.Pow(math.Pi, float64(k)) / float64(k+1)
			if k%4 == 2 {
				want = -want
			}
		}
		if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("sinc's derivative %d at 0 = %.17g, want %.17g", k, got, want)
		}
	}
}
