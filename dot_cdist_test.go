package peel_test

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/optest"
	"github.com/peel-ml/peel/transforms"
)

// Tests of Cdist beyond the registry: documented values, the derivative
// at a zero distance, and errors (issue 17).

func TestCdistValues(t *testing.T) {
	a, b := smF([]float64{0, 0, 1, 1}, 2, 2), smF([]float64{1, 0, 4, 4}, 2, 2)
	smIs(t, "Cdist/2", peel.Cdist(a, b, 2), []int{2, 2}, []float64{1, math.Sqrt(32), 1, math.Sqrt(18)})
	smIs(t, "Cdist/1", peel.Cdist(a, b, 1), []int{2, 2}, []float64{1, 8, 1, 6})
	smIs(t, "Cdist/inf", peel.Cdist(a, b, math.Inf(1)), []int{2, 2}, []float64{1, 4, 1, 3})
	smIs(t, "Cdist/0", peel.Cdist(a, b, 0), []int{2, 2}, []float64{1, 2, 1, 2})
	smIs(t, "Cdist/ints", peel.Cdist(smI([]int64{0, 3}, 1, 2), smI([]int64{4, 0}, 1, 2), 2), []int{1, 1}, []float64{5})
}

// TestCdistGradients checks the derivative at a zero distance, where
// finite differences do not apply.
func TestCdistGradients(t *testing.T) {
	// Cdist at a zero distance: 0, not NaN, for every p; the other row's
	// gradient is the usual one.
	x1 := smF([]float64{1, 2, 0, 0}, 2, 2)
	x2 := smF([]float64{1, 2}, 1, 2)
	for _, p := range []float64{2, 1, 3, 0.5, math.Inf(1), 0} {
		g := smGrad(func(x *peel.Tensor) *peel.Tensor { return peel.Cdist(x, x2, p) }, x1)
		h := optest.ToHost(g).Data
		if h[0] != 0 || h[1] != 0 {
			t.Errorf("Cdist p=%v: gradient at zero distance is %v, want 0", p, h[:2])
		}
		for _, v := range h {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("Cdist p=%v: gradient %v is not finite", p, h)
			}
		}
		if p == 2 {
			r := math.Sqrt(5)
			if math.Abs(h[2]+1/r) > 1e-12 || math.Abs(h[3]+2/r) > 1e-12 {
				t.Errorf("Cdist p=2: gradient of the second row %v, want [%v %v]", h[2:], -1/r, -2/r)
			}
		}
	}
	// Second derivative (Hessian) at a zero distance is finite too.
	h := transforms.Hessian(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Cdist(x, x2, 2)) })(x1)
	if !optest.AllFinite(h) {
		t.Errorf("Hessian of Cdist at a zero distance is not finite: %v", optest.ToHost(h).Data)
	}
}

func TestCdistErrors(t *testing.T) {
	m := smSeq(3, 4)
	v := smSeq(3)
	smErr(t, "peel.Cdist", func() { peel.Cdist(m, smSeq(2, 3), 2) }, "last (feature) dimension")
	smErr(t, "peel.Cdist", func() { peel.Cdist(v, v, 2) }, "rank at least 2")
	smErr(t, "peel.Cdist", func() { peel.Cdist(m, m, -1) }, "p = -1")
	smErr(t, "peel.Cdist", func() { peel.Cdist(m, m, math.NaN()) }, "p = NaN")
}
