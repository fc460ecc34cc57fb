package main

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// goNewton is the oracle: the same iteration as a Go loop on float64s.
func goNewton(a float64) (float64, int) {
	x, k := 1.0, 0
	for math.Abs(x*x*x-a) > tol*math.Abs(a) && k < maxSteps {
		x -= (x*x*x - a) / (3 * x * x)
		k++
	}
	return x, k
}

var inputs = []float64{3.375, 8, 27, 2, 0.001, 1000, -64, 12345.678, 1e9, 0.5, 1e-6, 7}

// TestLanes: every lane of the vmapped loop equals its own Go loop
// exactly (value and step count), is within 1e-12 relative of
// math.Cbrt, and the lanes take different numbers of steps.
func TestLanes(t *testing.T) {
	s := solveAll(peel.FromFloat64s(inputs))
	counts := map[int]bool{}
	for i, a := range inputs {
		x, k := goNewton(a)
		gx, gk := peel.Index(s.X, i).Item(), int(peel.Index(s.Steps, i).Item())
		if gx != x || gk != k {
			t.Errorf("a=%v: got %v in %d steps, the Go loop %v in %d", a, gx, gk, x, k)
		}
		if math.Abs(gx-math.Cbrt(a)) > 1e-12*math.Abs(math.Cbrt(a)) {
			t.Errorf("a=%v: ∛a = %v, math.Cbrt %v", a, gx, math.Cbrt(a))
		}
		counts[gk] = true
	}
	if len(counts) < 5 {
		t.Errorf("the lanes should converge after different numbers of steps: %v", counts)
	}
}

// TestDerivative: the JVP through the loop is 1/(3x²) to 1e-9 relative
// (the solver's tolerance bounds how far it is from the exact one).
func TestDerivative(t *testing.T) {
	as := peel.FromFloat64s(inputs)
	d := derivative(as)
	for i, a := range inputs {
		x := math.Cbrt(a)
		if got, want := peel.Index(d, i).Item(), 1/(3*x*x); math.Abs(got-want) > 1e-9*math.Abs(want) {
			t.Errorf("a=%v: d∛a/da = %v, want %v", a, got, want)
		}
	}
}

// TestCompiled: the compiled solver agrees with the eager one on inputs
// needing different numbers of steps, and traces once.
func TestCompiled(t *testing.T) {
	var cIns transforms.Inspector
	c := transforms.Compile(solveAll, transforms.Inspect(&cIns))
	for _, vals := range [][]float64{inputs[:4], inputs[4:8], inputs[8:]} {
		got, want := c(peel.FromFloat64s(vals)), solveAll(peel.FromFloat64s(vals))
		for i := range vals {
			if peel.Index(got.X, i).Item() != peel.Index(want.X, i).Item() || peel.Index(got.Steps, i).Item() != peel.Index(want.Steps, i).Item() {
				t.Fatalf("compiled lane %d of %v: %v (%v steps), eager %v (%v)", i, vals, peel.Index(got.X, i).Item(), peel.Index(got.Steps, i).Item(), peel.Index(want.X, i).Item(), peel.Index(want.Steps, i).Item())
			}
		}
	}
	if st := cIns.Stats(); st.Misses != 1 {
		t.Fatalf("traced %d times, want once", st.Misses)
	}
}
