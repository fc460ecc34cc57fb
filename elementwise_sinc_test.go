package peel_test

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
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
