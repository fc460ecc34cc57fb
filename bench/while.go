package bench

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// While loops (issue 15): Newton's method for x³ = a on 1024 lanes, a
// log-uniform in [1e-3, 1e6], from x = 1 until |x³ - a| ≤ 1e-12·|a|
// (3 to 26 steps, depending on the lane). The vmapped WhileLoop
// runs as many steps as the slowest lane, every lane stepping (finished
// lanes keep their value by a select), eager and compiled; the baseline
// is a Go loop per lane over scalar peel ops, reading each residual.

const (
	newtonLanes    = 1024
	newtonTol      = 1e-12
	newtonMaxSteps = 100
	newtonDoc      = "Newton's method for x³ = a on 1024 f64 lanes (a log-uniform in [1e-3, 1e6], 3 to 26 steps per lane)"
)

// newtonInputs are the lanes' a and, from a Go loop on float64s, their
// roots.
func newtonInputs() (as []float64, roots []float64) {
	as = randFloats(57, newtonLanes, math.Log(1e-3), math.Log(1e6))
	roots = make([]float64, len(as))
	for i, l := range as {
		as[i] = math.Exp(l)
		x := 1.0
		for k := 0; k < newtonMaxSteps && math.Abs(x*x*x-as[i]) > newtonTol*as[i]; k++ {
			x -= (x*x*x - as[i]) / (3 * x * x)
		}
		roots[i] = x
	}
	return as, roots
}

// newtonStep is one Newton step for x³ = a.
func newtonStep(x, a *peel.Tensor) *peel.Tensor {
	fx := peel.Sub(peel.Mul(peel.Mul(x, x), x), a)
	return peel.Sub(x, peel.Div(fx, peel.Mul(peel.Mul(x, x), 3.0)))
}

// newtonResidual is |x³ - a|.
func newtonResidual(x, a *peel.Tensor) *peel.Tensor {
	return peel.Abs(peel.Sub(peel.Mul(peel.Mul(x, x), x), a))
}

type newtonCarry struct{ X, K *peel.Tensor }

// newtonWhile solves one lane with WhileLoop.
func newtonWhile(a *peel.Tensor) *peel.Tensor {
	limit := peel.Mul(peel.Abs(a), newtonTol)
	return transforms.WhileLoop(func(c newtonCarry) *peel.Tensor {
		return peel.LogicalAnd(peel.Greater(newtonResidual(c.X, a), limit), peel.Less(c.K, peel.Scalar(int64(newtonMaxSteps))))
	}, func(c newtonCarry) newtonCarry {
		return newtonCarry{X: newtonStep(c.X, a), K: peel.Add(c.K, peel.Scalar(int64(1)))}
	}, newtonCarry{X: peel.OnesLike(a), K: peel.Scalar(int64(0))}).X
}

func newtonCheck(got *peel.Tensor, roots []float64) error {
	if got == nil {
		return fmt.Errorf("no result")
	}
	return compare(hostFloats(got), roots, 1e-13, 0)
}

func newtonWhileEager() Workload {
	return Workload{
		Name: "newton_while_vmap_f64", Impl: "peel", Doc: "Vmap(WhileLoop) of " + newtonDoc,
		Unit: "ms", Metric: perMs,
		Setup: func() (func(), func() error) {
			as, roots := newtonInputs()
			a := peel.FromFloat64s(as)
			solve := transforms.Vmap(newtonWhile)
			var out *peel.Tensor
			return func() { out = solve(a) }, func() error { return newtonCheck(out, roots) }
		},
	}
}

func newtonWhileCompiled() (func() (func(), func() transforms.CompileStats), func() error) {
	as, roots := newtonInputs()
	a := peel.FromFloat64s(as)
	var out *peel.Tensor
	compile := func() (func(), func() transforms.CompileStats) {
		var cIns transforms.Inspector
		c := transforms.Compile(transforms.Vmap(newtonWhile), transforms.Inspect(&cIns))
		return func() { out = c(a) }, cIns.Stats
	}
	return compile, func() error { return newtonCheck(out, roots) }
}

// newtonLoop is the baseline: each lane solved by a Go loop over scalar
// peel ops, reading the residual at every step.
func newtonLoop() Workload {
	return Workload{
		Name: "newton_loop_f64", Impl: "peel", Doc: "a Go loop per lane over scalar peel ops (the baseline) of " + newtonDoc,
		Unit: "ms", Metric: perMs,
		Setup: func() (func(), func() error) {
			as, roots := newtonInputs()
			lanes := make([]*peel.Tensor, len(as))
			for i, v := range as {
				lanes[i] = peel.Scalar(v)
			}
			var out *peel.Tensor
			run := func() {
				xs := make([]*peel.Tensor, len(lanes))
				for i, a := range lanes {
					x := peel.Scalar(1.0)
					limit := newtonTol * as[i]
					for k := 0; k < newtonMaxSteps && newtonResidual(x, a).Item() > limit; k++ {
						x = newtonStep(x, a)
					}
					xs[i] = x
				}
				out = peel.Stack(xs, 0)
			}
			return run, func() error { return newtonCheck(out, roots) }
		},
	}
}

// whileWorkloads are the workloads of this file, eager ones first (the
// compiled one is placed after its eager twin).
func whileWorkloads() []Workload {
	ws := []Workload{newtonWhileEager(), newtonLoop()}
	return append(ws, compiledWorkloads("newton_while_vmap_f64_compiled", "Compile of Vmap(WhileLoop) of "+newtonDoc,
		"ms", perMs, newtonWhileCompiled)...)
}
