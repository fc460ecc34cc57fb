package cpu

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

const (
	eulerGamma = 0.57721566490153286060651209008240243
	zeta3      = 1.20205690315959428539973816151144999
	catalan    = 0.91596559417721901505460351493238411
)

// TestPolygammaKnownValues checks ψ⁽ⁿ⁾ at points where closed forms are
// known (Abramowitz & Stegun 6.3, 6.4).
func TestPolygammaKnownValues(t *testing.T) {
	pi := math.Pi
	for _, c := range []struct {
		n       int
		x, want float64
	}{
		{0, 1, -eulerGamma},
		{0, 0.5, -eulerGamma - 2*math.Ln2},
		{0, 0.25, -eulerGamma - pi/2 - 3*math.Ln2},
		{0, 2, 1 - eulerGamma},
		{0, 10, 2.251752589066721107647456163885851537},
		{0, -0.5, 2 - eulerGamma - 2*math.Ln2},
		{0, 100, 4.600161852738087400287109},
		{1, 1, pi * pi / 6},
		{1, 0.5, pi * pi / 2},
		{1, 0.25, pi*pi + 8*catalan},
		{1, 2, pi*pi/6 - 1},
		{1, -0.5, pi*pi/2 + 4},
		{2, 1, -2 * zeta3},
		{2, 0.5, -14 * zeta3},
		{3, 1, pi * pi * pi * pi / 15},
		{3, 0.5, pi * pi * pi * pi},
		{4, 1, -24 * 1.03692775514336992633136548646},
		// Far out on the negative axis, by reflection (no recurrence
		// over 1e10 steps): ψ(x) = ψ(1−x) − π·cot(πx), cot(π/2) = 0, and
		// ψ'(x) = π²/sin²(πx) − ψ'(1−x) with ψ'(1e10 + ½) ≈ 1e-10.
		{0, -1e10 + 0.5, 23.025850929940457},
		{1, -1e10 + 0.5, pi*pi - 1.0000000000e-10},
	} {
		got := polygamma(c.n, c.x)
		if math.Abs(got-c.want) > 4e-15*math.Max(1, math.Abs(c.want)) {
			t.Errorf("ψ⁽%d⁾(%v) = %.17g, want %.17g", c.n, c.x, got, c.want)
		}
	}
	// High orders: ψ⁽ⁿ⁾(1) = (−1)ⁿ⁺¹·n!·ζ(n+1), and ψ⁽ⁿ⁾(2) = ψ⁽ⁿ⁾(1) −
	// (−1)ⁿ⁺¹·n!, up to the largest order.
	for _, n := range []int{10, 30, 100, 170} {
		fact, tail := 1.0, 0.0 // n!, ζ(n+1) − 1
		for k := 2; k <= n; k++ {
			fact *= float64(k)
		}
		for k := 60; k >= 2; k-- {
			tail += math.Pow(float64(k), -float64(n+1))
		}
		sign := -1.0
		if n%2 == 1 {
			sign = 1
		}
		for _, c := range []struct{ x, want float64 }{{1, sign * fact * (1 + tail)}, {2, sign * fact * tail}} {
			if got := polygamma(n, c.x); math.Abs(got-c.want) > 1e-14*math.Abs(c.want) {
				t.Errorf("ψ⁽%d⁾(%v) = %.17g, want %.17g", n, c.x, got, c.want)
			}
		}
	}
	for _, c := range []struct {
		n    int
		x    float64
		want float64
	}{
		{0, 0, math.Inf(-1)}, {0, math.Copysign(0, -1), math.Inf(1)}, {2, 0, math.Inf(-1)}, {0, -3, math.NaN()}, {1, 0, math.Inf(1)}, {1, -2, math.Inf(1)}, {2, -1, math.NaN()},
		{0, math.Inf(1), math.Inf(1)}, {1, math.Inf(1), 0}, {0, math.Inf(-1), math.NaN()}, {3, math.NaN(), math.NaN()},
	} {
		got := polygamma(c.n, c.x)
		if !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("ψ⁽%d⁾(%v) = %v, want %v", c.n, c.x, got, c.want)
		}
	}
}

// TestPolygammaDerivatives checks ψ = (ln Γ)' and ψ⁽ⁿ⁺¹⁾ = (ψ⁽ⁿ⁾)' by
// central differences, and the recurrence ψ⁽ⁿ⁾(x+1) = ψ⁽ⁿ⁾(x) +
// (−1)ⁿ·n!/xⁿ⁺¹, on random points away from the poles.
func TestPolygammaDerivatives(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := rapid.Float64Range(-6, 30).Draw(t, "x")
		if math.Abs(x-math.Round(x)) < 0.05 && x < 0.5 {
			t.Skip("near a pole")
		}
		n := rapid.IntRange(0, 4).Draw(t, "n")
		const h = 1e-5
		var fd float64
		if n == 0 {
			fd = (lgamma(x+h) - lgamma(x-h)) / (2 * h)
		} else {
			fd = (polygamma(n-1, x+h) - polygamma(n-1, x-h)) / (2 * h)
		}
		got := polygamma(n, x)
		if math.Abs(got-fd) > 1e-6*math.Max(1, math.Abs(got)) {
			t.Fatalf("ψ⁽%d⁾(%v) = %.15g, central difference %.15g", n, x, got, fd)
		}
		fact := 1.0
		for k := 2; k <= n; k++ {
			fact *= float64(k)
		}
		step := fact / math.Pow(x, float64(n+1))
		if n%2 == 1 {
			step = -step
		}
		want := polygamma(n, x) + step
		if d := polygamma(n, x+1) - want; math.Abs(d) > 1e-12*math.Max(1, math.Abs(want)+math.Abs(step)) {
			t.Fatalf("ψ⁽%d⁾(%v+1) − recurrence = %g", n, x, d)
		}
	})
}

// TestLog10PowersOfTen: log10 is exact at the normal powers of ten (the
// subnormal ones are not powers of ten: 1e-320 is 9.99989e-321).
func TestLog10PowersOfTen(t *testing.T) {
	for k := -307; k <= 308; k++ {
		x := powersOfTen[k+323]
		if got := log10(x); got != float64(k) {
			t.Errorf("log10(1e%d) = %v", k, got)
		}
	}
	if got, want := log10(5e-324), -323.3062153431158; math.Abs(got-want) > 1e-13 {
		t.Errorf("log10(5e-324) = %v, want %v", got, want)
	}
}

func TestShifts(t *testing.T) {
	for _, c := range []struct{ x, s, l, r int64 }{
		{1, 0, 1, 1}, {1, 63, math.MinInt64, 0}, {1, 64, 0, 0}, {-8, 1, -16, -4}, {-8, 64, 0, -1},
		{-8, -1, 0, -1}, {8, -1, 0, 0}, {5, 100, 0, 0}, {math.MinInt64, 63, 0, -1},
	} {
		if got := shiftLeft(c.x, c.s); got != c.l {
			t.Errorf("%d << %d = %d, want %d", c.x, c.s, got, c.l)
		}
		if got := shiftRight(c.x, c.s); got != c.r {
			t.Errorf("%d >> %d = %d, want %d", c.x, c.s, got, c.r)
		}
	}
}
