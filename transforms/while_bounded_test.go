package transforms_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// growUntil is a loop whose number of steps depends on its argument:
// v ← 1.3·v + sin(v) + w·v until Σ|v| passes 10.
func growUntil(w *T, opts ...transforms.WhileOption) func(x *T) *T {
	return func(x *T) *T {
		return transforms.WhileLoop(func(v *T) *T { return peel.Less(peel.Sum(peel.Abs(v)), 10.0) },
			func(v *T) *T { return peel.Add(peel.Add(peel.Mul(v, 1.3), peel.Sin(v)), peel.Mul(w, v)) }, x, opts...)
	}
}

// trips counts growUntil's steps from x, eagerly.
func trips(w, x *T) int {
	n := 0
	v := x
	for peel.Sum(peel.Abs(v)).Item() < 10 {
		v = peel.Add(peel.Add(peel.Mul(v, 1.3), peel.Sin(v)), peel.Mul(w, v))
		n++
	}
	return n
}

// TestWhileMaxTripsGrad differentiates a bounded WhileLoop in reverse
// mode: against the same steps as a ForiLoop of the trips the loop made
// (to 1e-12), against central differences, under Compile, Jacrev against
// Jacfwd, and Vmap(Grad) against a loop over lanes that stop after
// different numbers of steps; and at bounds below, at and above the
// trips it needs (a bound below stops it early, as if cond turned false).
func TestWhileMaxTripsGrad(t *testing.T) {
	w := f64(0.1, -0.2, 0.05)
	x := f64(0.3, -0.2, 0.5)
	n := trips(w, x)
	if n < 3 {
		t.Fatalf("the loop takes %d steps", n)
	}
	loss := func(f func(*T) *T) func(*T) *T { return func(x *T) *T { return peel.Sum(peel.Square(f(x))) } }
	for _, bound := range []int{1, n - 1, n, n + 1, 4 * n, 1000} {
		f := growUntil(w, transforms.MaxTrips(bound))
		steps := min(n, bound)
		fixed := func(x *T) *T {
			return transforms.ForiLoop(0, steps, func(_ *T, v *T) *T {
				return peel.Add(peel.Add(peel.Mul(v, 1.3), peel.Sin(v)), peel.Mul(w, v))
			}, x)
		}
		near(t, "value", f(x).Float64s(), fixed(x).Float64s(), 0)
		g := transforms.Grad(loss(f))(x).Float64s()
		near(t, "gradient against the fixed loop", g, transforms.Grad(loss(fixed))(x).Float64s(), 1e-12)
		near(t, "compiled gradient", transforms.Compile(transforms.Grad(loss(f)))(x).Float64s(), g, 1e-12)
		if bound >= n {
			// Away from a change of the number of steps, the loss is
			// smooth in x.
			near(t, "gradient against differences", g, fdGrad(loss(f), x.Float64s(), 3), 1e-6)
		}
		near(t, "Jacrev against Jacfwd", transforms.Jacrev(f)(x).Float64s(), transforms.Jacfwd(f)(x).Float64s(), 1e-12)
	}
	// Lanes that stop after different numbers of steps.
	xs := []*T{x, f64(2, 1, -1), f64(0.01, 0.02, 0.01)}
	f := growUntil(w, transforms.MaxTrips(1000))
	batched := transforms.Vmap(transforms.Grad(loss(f)))(peel.Stack(xs, 0))
	for b, xb := range xs {
		near(t, "Vmap(Grad) lane", peel.Index(batched, b).Float64s(), transforms.Grad(loss(f))(xb).Float64s(), 1e-12)
	}
	if trips(w, xs[1]) == trips(w, xs[2]) {
		t.Fatalf("the lanes take the same number of steps")
	}
	// Grad of the vmapped loop: the batched while keeps the bound.
	gv := transforms.Grad(func(xs *T) *T { return peel.Sum(peel.Square(transforms.Vmap(f)(xs))) })(peel.Stack(xs, 0))
	near(t, "Grad(Vmap)", gv.Float64s(), batched.Float64s(), 1e-12)
	// Without a bound, reverse mode is refused.
	wantError(t, func() { transforms.Grad(loss(growUntil(w)))(x) }, "MaxTrips")
	wantError(t, func() { transforms.MaxTrips(0) }, "at least 1")
}

// TestWhileMaxTripsStops: a loop whose predicate never turns false stops
// after the bound, eagerly, compiled and vmapped.
func TestWhileMaxTripsStops(t *testing.T) {
	f := func(x *T) *T {
		return transforms.WhileLoop(func(*T) *T { return peel.Scalar(true) }, func(v *T) *T { return peel.Add(v, 1.0) }, x, transforms.MaxTrips(7))
	}
	near(t, "eager", f(f64(1)).Float64s(), []float64{8}, 0)
	near(t, "compiled", transforms.Compile(f)(f64(1)).Float64s(), []float64{8}, 0)
	near(t, "vmapped", transforms.Vmap(f)(f64(1, 2)).Float64s(), []float64{8, 9}, 0)
	near(t, "gradient", transforms.Grad(func(x *T) *T { return peel.Sum(peel.Square(f(x))) })(f64(1)).Float64s(), []float64{16}, 0)
}

// TestWhileMaxTripsExported: a bounded loop keeps its bound through an
// exported program: the loaded program stops at it and differentiates
// in reverse mode.
func TestWhileMaxTripsExported(t *testing.T) {
	w := f64(0.1, -0.2, 0.05)
	x := f64(0.3, -0.2, 0.5)
	f := func(x *T) *T { return peel.Sum(peel.Square(growUntil(w, transforms.MaxTrips(3))(x))) }
	e := reload(t, transforms.Export(f, x))
	near(t, "loaded value", e.Call(x)[0].Float64s(), f(x).Float64s(), 0)
	g := transforms.Grad(func(x *T) *T { return e.Call(x)[0] })(x)
	near(t, "loaded gradient", g.Float64s(), transforms.Grad(f)(x).Float64s(), 1e-12)
}
