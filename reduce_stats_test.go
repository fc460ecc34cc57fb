package peel_test

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

func TestVarStability(t *testing.T) {
	// A large offset must not destroy the variance (two-pass algorithm).
	x := peel.FromFloat64s([]float64{1e9 + 1, 1e9 + 2, 1e9 + 3, 1e9 + 4})
	check(t, "Var", peel.Var(x), peel.Float64, []int{}, []float64{1.25}, 1e-12)
	check(t, "Std", peel.Keep(peel.Std, x, 0), peel.Float64, []int{1}, []float64{math.Sqrt(1.25)}, 1e-12)
}

func TestCorrectedVariance(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2, 3, 4, 6, 8}, 2, 3)
	check(t, "Var keeps its call form", peel.Var(x, 1), peel.Float64, []int{2}, []float64{2.0 / 3, 8.0 / 3}, 1e-15)
	check(t, "Ddof(0) is Var", peel.Ddof(0).Var(x, 1), peel.Float64, []int{2}, []float64{2.0 / 3, 8.0 / 3}, 1e-15)
	check(t, "Ddof(1).Var", peel.Ddof(1).Var(x, 1), peel.Float64, []int{2}, []float64{1, 4}, 1e-15)
	check(t, "Ddof(1).Std", peel.Ddof(1).Std(x, -1), peel.Float64, []int{2}, []float64{1, 2}, 1e-15)
	check(t, "Keep(Ddof(1).Var)", peel.Keep(peel.Ddof(1).Var, x, 1), peel.Float64, []int{2, 1}, []float64{1, 4}, 1e-15)
	check(t, "n ≤ ddof", peel.Ddof(3).Var(x, 1), peel.Float64, []int{2}, []float64{math.Inf(1), math.Inf(1)}, 0)
	check(t, "n = ddof, no spread", peel.Ddof(1).Var(f64s(2)), peel.Float64, []int{}, []float64{nan}, 0)
	check(t, "ints", peel.Ddof(1).Var(peel.FromInt64s([]int64{1, 3}, 2)), peel.Float64, []int{}, []float64{2}, 0)
}

func TestNanReductions(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, nan, 3, nan, nan, nan}, 2, 3)
	check(t, "CountNonzero", peel.CountNonzero(peel.FromFloat64s([]float64{0, 1, nan, -2}, 2, 2), 1), peel.Int64, []int{2}, []float64{1, 2}, 0)
	check(t, "CountNonzero all", peel.CountNonzero(peel.FromBools([]bool{true, false, true}, 3)), peel.Int64, []int{}, []float64{2}, 0)
	check(t, "NanSum", peel.NanSum(x, 1), peel.Float64, []int{2}, []float64{4, 0}, 0)
	check(t, "NanSum ints", peel.NanSum(peel.FromInt64s([]int64{1, 2}, 2)), peel.Int64, []int{}, []float64{3}, 0)
	check(t, "NanMean", peel.NanMean(x, 1), peel.Float64, []int{2}, []float64{2, nan}, 0)
	check(t, "NanMean all", peel.NanMean(x), peel.Float64, []int{}, []float64{2}, 0)
	g := transforms.Grad(func(v *peel.Tensor) *peel.Tensor { return peel.NanMean(v) })(f64s(1, nan, 3))
	check(t, "NanMean grad", g, peel.Float64, []int{3}, []float64{0.5, 0, 0.5}, 0)
	// Any and All take axes too.
	b := peel.FromBools([]bool{true, false, true, true}, 2, 2)
	check(t, "Any axis", peel.AsType(peel.Any(b, 1), peel.Int64), peel.Int64, []int{2}, []float64{1, 1}, 0)
	check(t, "All axis", peel.AsType(peel.All(b, 1), peel.Int64), peel.Int64, []int{2}, []float64{0, 1}, 0)
}

func TestStatsErrors(t *testing.T) {
	x := peel.Zeros(peel.Float64, 2, 3)
	wantError(t, "peel.Ddof.Var", func() { peel.Ddof(1).Var(x, 0, 0) }, "repeated")
	wantError(t, "peel.NanSum", func() { peel.NanSum(x, 5) }, "axis 5")
}

func TestStandardize(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2, 3, 4, 2, 2, 2, 2}, 2, 4)
	// Row 1: mean 2.5, variance 1.25; row 2: constant.
	r := 1 / math.Sqrt(1.25+0.01)
	check(t, "Standardize", peel.Standardize(x, 1, 0.01), peel.Float64, []int{2, 4}, []float64{-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r, 0, 0, 0, 0}, 1e-15)
	all := peel.Standardize(x, 2, 0)
	check(t, "Standardize over both axes: mean 0", peel.Mean(all), peel.Float64, []int{}, []float64{0}, 1e-15)
	check(t, "Standardize over both axes: variance 1", peel.Var(all), peel.Float64, []int{}, []float64{1}, 1e-14)
	q := 1 / math.Sqrt(7.5+0.01)
	check(t, "RMSNormalize", peel.RMSNormalize(x, 1, 0.01), peel.Float64, []int{2, 4}, []float64{1 * q, 2 * q, 3 * q, 4 * q, 1 / math.Sqrt(4.01) * 2, 1 / math.Sqrt(4.01) * 2, 1 / math.Sqrt(4.01) * 2, 1 / math.Sqrt(4.01) * 2}, 1e-15)
	check(t, "Standardize i64", peel.Standardize(peel.FromInt64s([]int64{1, 3}), 1, 0), peel.Float64, []int{2}, []float64{-1, 1}, 0)
	h := peel.AsType(peel.FromFloat64s([]float64{1, 3}), peel.Float16)
	if s := peel.Standardize(h, 1, 0); s.DType() != peel.Float16 {
		t.Fatalf("Standardize of f16 gave %s", s.TypeString())
	} else {
		check(t, "Standardize f16 (in f32)", peel.AsType(s, peel.Float64), peel.Float64, []int{2}, []float64{-1, 1}, 0)
	}
	// The gradient: Standardize's rows sum to 0, so the gradient of the
	// sum of its outputs is 0.
	g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Standardize(x, 1, 0.01)) })(x)
	check(t, "Grad Σ Standardize", g, peel.Float64, []int{2, 4}, make([]float64, 8), 1e-15)
	for _, op := range []struct {
		name string
		f    func(*peel.Tensor, int, float64) *peel.Tensor
	}{{"Standardize", peel.Standardize}, {"RMSNormalize", peel.RMSNormalize}} {
		wantError(t, "peel."+op.name, func() { op.f(x, 0, 0) }, "last 0 axes")
		wantError(t, "peel."+op.name, func() { op.f(x, 3, 0) }, "last 3 axes")
		wantError(t, "peel."+op.name, func() { op.f(x, 1, -1) }, "eps")
		wantError(t, "peel."+op.name, func() { op.f(x, 1, math.NaN()) }, "eps")
		wantError(t, "peel."+op.name, func() { op.f(nil, 1, 0) }, "nil")
		wantError(t, "peel."+op.name, func() { op.f(peel.Scalar(1.0), 1, 0) }, "last 1 axes")
	}
}
