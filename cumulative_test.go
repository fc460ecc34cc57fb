package peel_test

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

func TestCumulative(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2, 3, 4, 0, 5}, 2, 3)
	check(t, "cumprod axis 1", peel.Cumprod(x, 1), peel.Float64, []int{2, 3}, []float64{1, 2, 6, 4, 0, 0}, 0)
	check(t, "cumprod axis 0", peel.Cumprod(x, 0), peel.Float64, []int{2, 3}, []float64{1, 2, 3, 4, 0, 15}, 0)
	check(t, "cumprod reverse", peel.Cumprod(x, -1, peel.Reverse()), peel.Float64, []int{2, 3}, []float64{6, 6, 3, 0, 0, 5}, 0)
	check(t, "cumprod bool", peel.Cumprod(peel.FromBools([]bool{true, false}, 2), 0), peel.Int64, []int{2}, []float64{1, 0}, 0)
	y := f64s(1, 3, 2, 3, nan, 7)
	check(t, "cummax", peel.Cummax(y, 0), peel.Float64, []int{6}, []float64{1, 3, 3, 3, nan, nan}, 0)
	check(t, "cummin", peel.Cummin(y, 0), peel.Float64, []int{6}, []float64{1, 1, 1, 1, nan, nan}, 0)
	check(t, "cummax reverse", peel.Cummax(f64s(1, 3, 2, 0), 0, peel.Reverse()), peel.Float64, []int{4}, []float64{3, 3, 2, 0}, 0)
	check(t, "cummax ints", peel.Cummax(peel.FromInt64s([]int64{math.MinInt64, 5, 2, math.MaxInt64}, 4), 0), peel.Int64, []int{4},
		[]float64{math.MinInt64, 5, 5, math.MaxInt64}, 0)
	check(t, "empty", peel.Cummax(peel.Zeros(peel.Float64, 0, 2), 0), peel.Float64, []int{0, 2}, nil, 0)
	inf := math.Inf(1)
	check(t, "logcumsumexp stable", peel.LogCumSumExp(f64s(-inf, -1000, 0, 1000, 1000), 0), peel.Float64, []int{5},
		[]float64{-inf, -1000, 0, 1000, 1000 + math.Ln2}, 1e-15)
	check(t, "logcumsumexp reverse", peel.LogCumSumExp(f64s(0, 0), 0, peel.Reverse()), peel.Float64, []int{2}, []float64{math.Ln2, 0}, 1e-15)
	check(t, "logcumsumexp ints", peel.LogCumSumExp(peel.FromInt64s([]int64{0, 0}, 2), 0), peel.Float64, []int{2}, []float64{0, math.Ln2}, 1e-15)
	check(t, "logcumsumexp NaN", peel.LogCumSumExp(f64s(1, nan, 2), 0), peel.Float64, []int{3}, []float64{1, nan, nan}, 0)
}

// cumprodGradRef is d/dx_k Σ_i w_i Π_{j≤i} x_j = Σ_{i≥k} w_i Π_{j≤i, j≠k} x_j,
// by direct loops (exact with zeros).
func cumprodGradRef(x, w []float64) []float64 {
	g := make([]float64, len(x))
	for k := range x {
		for i := k; i < len(x); i++ {
			p := w[i]
			for j := 0; j <= i; j++ {
				if j != k {
					p *= x[j]
				}
			}
			g[k] += p
		}
	}
	return g
}

func TestCumprodGradientWithZeros(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 9).Draw(rt, "n")
		x, w := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i] = float64(rapid.IntRange(-2, 2).Draw(rt, "x")) // zeros often, several at once
			w[i] = float64(rapid.IntRange(-3, 3).Draw(rt, "w"))
		}
		g := transforms.Grad(func(v *peel.Tensor) *peel.Tensor {
			return peel.Sum(peel.Mul(peel.Cumprod(v, 0), f64s(w...)))
		})(f64s(x...)).Float64s()
		want := cumprodGradRef(x, w)
		for k := range g {
			if math.Abs(g[k]-want[k]) > 1e-12*math.Max(1, math.Abs(want[k])) {
				rt.Fatalf("x %v w %v: grad %v, want %v", x, w, g, want)
			}
		}
	})
}

func TestCumExtremumGradient(t *testing.T) {
	// The running maximum of [1 3 3 2 5] is [1 3 3 3 5]: every 3 comes
	// from position 1, the first of the tied maxima.
	g := transforms.Grad(func(v *peel.Tensor) *peel.Tensor {
		return peel.Sum(peel.Mul(peel.Cummax(v, 0), f64s(1, 10, 100, 1000, 10000)))
	})(f64s(1, 3, 3, 2, 5))
	check(t, "cummax grad", g, peel.Float64, []int{5}, []float64{1, 1110, 0, 0, 10000}, 0)
	g = transforms.Grad(func(v *peel.Tensor) *peel.Tensor {
		return peel.Sum(peel.Mul(peel.Cummin(v, 0, peel.Reverse()), f64s(1, 10, 100, 1000)))
	})(f64s(0, 2, 1, 1))
	// Reverse running minimum of [0 2 1 1]: [0 1 1 1], the 1s from
	// position 3, the first tie in scan order (from the end).
	check(t, "cummin reverse grad", g, peel.Float64, []int{4}, []float64{1, 0, 0, 1110}, 0)
	// Under Vmap, each lane scans on its own.
	m := peel.FromFloat64s([]float64{1, 0, 2, 3, 0, 4}, 3, 2)
	v := transforms.Vmap(func(c *peel.Tensor) *peel.Tensor { return peel.Cummax(c, 0) }, transforms.InAxes(1))(m)
	check(t, "vmap", v, peel.Float64, []int{2, 3}, []float64{1, 2, 2, 0, 3, 4}, 0)
}

func TestLogCumSumExpGradient(t *testing.T) {
	// d/dx_k Σ_i w_i lcse_i = Σ_{i≥k} w_i softmax(x[:i+1])_k.
	x := []float64{-800, 0.5, -1, 800, 2}
	w := []float64{1, -2, 0.5, 3, 1}
	g := transforms.Grad(func(v *peel.Tensor) *peel.Tensor {
		return peel.Sum(peel.Mul(peel.LogCumSumExp(v, 0), f64s(w...)))
	})(f64s(x...)).Float64s()
	for k := range x {
		want := 0.0
		for i := k; i < len(x); i++ {
			m := math.Inf(-1)
			for j := 0; j <= i; j++ {
				m = math.Max(m, x[j])
			}
			s := 0.0
			for j := 0; j <= i; j++ {
				s += math.Exp(x[j] - m)
			}
			want += w[i] * math.Exp(x[k]-m) / s
		}
		if math.Abs(g[k]-want) > 1e-12 {
			t.Errorf("grad[%d] = %v, want %v", k, g[k], want)
		}
	}
	// Combining −∞ with −∞ has a finite derivative, not NaN: the
	// weights exp(−∞ − (−∞)) are taken as 1.
	g0 := transforms.Grad(func(v *peel.Tensor) *peel.Tensor { return peel.Sum(peel.LogCumSumExp(v, 0)) })(f64s(math.Inf(-1), math.Inf(-1), 0))
	check(t, "grad at -inf", g0, peel.Float64, []int{3}, []float64{2, 1, 1}, 0)
}

func TestCumulativeErrors(t *testing.T) {
	x := peel.Zeros(peel.Float64, 2, 3)
	wantError(t, "peel.Cumprod", func() { peel.Cumprod(x, 2) }, "axis 2")
	wantError(t, "peel.Cummax", func() { peel.Cummax(nil, 0) }, "nil")
	wantError(t, "peel.Cummin", func() { peel.Cummin(peel.Scalar(1.0), 0) }, "axis 0")
	wantError(t, "peel.LogCumSumExp", func() { peel.LogCumSumExp(x, -3) }, "axis -3")
	// Scan's own options are refused by the cumulative operations.
	wantError(t, "peel.Cumsum", func() { peel.Cumsum(x, 0, transforms.Length(2)) }, "transforms.Length", "transforms.Scan only")
	wantError(t, "peel.Cumprod", func() { peel.Cumprod(x, 0, peel.Reverse(), transforms.Unroll(2)) }, "transforms.Unroll")
	wantError(t, "peel.Cummax", func() { peel.Cummax(x, 0, transforms.StepRemat(transforms.NothingSaveable)) }, "transforms.StepRemat")
}

// TestReverseServesCumsumAndScan checks that one option list configures
// a cumulative operation and transforms.Scan alike: a reversed Scan that
// accumulates its xs is the reversed Cumsum.
func TestReverseServesCumsumAndScan(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	for _, opts := range [][]peel.ScanOption{nil, {peel.Reverse()}} {
		_, ys := transforms.Scan(func(c, xi *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
			c = peel.Add(c, xi)
			return c, c
		}, peel.Zeros(peel.Float64, 3), x, opts...)
		want := peel.Cumsum(x, 0, opts...)
		check(t, fmt.Sprintf("Scan %d options", len(opts)), ys, peel.Float64, []int{2, 3}, want.Float64s(), 0)
	}
}

func TestCumsum(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	check(t, "axis 1", peel.Cumsum(x, 1), peel.Float64, []int{2, 3}, []float64{1, 3, 6, 4, 9, 15}, 0)
	check(t, "axis -2", peel.Cumsum(x, -2), peel.Float64, []int{2, 3}, []float64{1, 2, 3, 5, 7, 9}, 0)
	check(t, "i64", peel.Cumsum(peel.FromInt64s([]int64{1, -2, 3}), 0), peel.Int64, []int{3}, []float64{1, -1, 2}, 0)
	check(t, "f32", peel.Cumsum(peel.FromFloat32s([]float32{0.5, 0.25}), -1), peel.Float32, []int{2}, []float64{0.5, 0.75}, 0)
	check(t, "reverse", peel.Cumsum(x, 1, peel.Reverse()), peel.Float64, []int{2, 3}, []float64{6, 5, 3, 15, 11, 6}, 0)
	check(t, "reverse axis 0, nil option", peel.Cumsum(x, 0, nil, peel.Reverse()), peel.Float64, []int{2, 3}, []float64{5, 7, 9, 4, 5, 6}, 0)
	check(t, "bool reverse", peel.Cumsum(peel.FromBools([]bool{true, false, true}), 0, peel.Reverse()), peel.Int64, []int{3}, []float64{2, 1, 1}, 0)
}
