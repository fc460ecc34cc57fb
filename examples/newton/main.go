// Command newton solves x³ = a for many a at once by Newton's method,
// with transforms.WhileLoop under transforms.Vmap: each lane iterates
// x ← x - (x³ - a)/(3x²) until its residual |x³ - a| is below
// tol·|a|, and lanes converge after different numbers of steps.
// The vmapped loop runs until every lane has converged; a lane that has
// converged keeps its value (and its step count) while the others go on,
// so each lane's result is that of its own loop. The same solver is then
// compiled (one while equation, run again on new values without
// retracing) and differentiated in forward mode (JVP through the loop:
// d∛a/da = 1/(3x²)).
//
//	go run ./examples/newton
package main

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

const (
	tol      = 1e-12
	maxSteps = 100
)

// state is the loop carry: the iterate and the number of steps taken
// (an int64 scalar per lane).
type state struct {
	X, Steps *peel.Tensor
}

// residual is |x³ - a|.
func residual(x, a *peel.Tensor) *peel.Tensor {
	return peel.Abs(peel.Sub(peel.Mul(peel.Mul(x, x), x), a))
}

// cubeRoot solves x³ = a (a scalar) from x = 1.
func cubeRoot(a *peel.Tensor) state {
	limit := peel.Mul(peel.Abs(a), tol)
	notDone := func(s state) *peel.Tensor {
		return peel.LogicalAnd(peel.Greater(residual(s.X, a), limit), peel.Less(s.Steps, peel.Scalar(int64(maxSteps))))
	}
	step := func(s state) state {
		x := s.X
		fx := peel.Sub(peel.Mul(peel.Mul(x, x), x), a)
		dfx := peel.Mul(peel.Mul(x, x), 3.0)
		return state{X: peel.Sub(x, peel.Div(fx, dfx)), Steps: peel.Add(s.Steps, peel.Scalar(int64(1)))}
	}
	return transforms.WhileLoop(notDone, step, state{X: peel.OnesLike(a), Steps: peel.Scalar(int64(0))})
}

// solveAll is cubeRoot on every element of as, vectorized.
var solveAll = transforms.Vmap(cubeRoot)

// derivative is d∛a/da for every element of as, by forward mode through
// the loop.
func derivative(as *peel.Tensor) *peel.Tensor {
	_, d := transforms.JVP(func(as *peel.Tensor) *peel.Tensor { return solveAll(as).X }, as, peel.OnesLike(as))
	return d
}

func main() {
	as := peel.FromFloat64s([]float64{3.375, 8, 27, 2, 0.001, 1000, -64, 12345.678, 1e9, 0.5})
	s := solveAll(as)
	d := derivative(as)
	fmt.Println("      a            ∛a (Newton)          steps   ∛a (math.Cbrt)    d∛a/da (JVP)   1/(3x²)")
	for i, a := range as.Float64s() {
		x := peel.Index(s.X, i).Item()
		fmt.Printf("%14.6g  %22.16g  %5d  %22.16g  %12.6g  %12.6g\n", a, x, int(peel.Index(s.Steps, i).Item()), math.Cbrt(a), peel.Index(d, i).Item(), 1/(3*x*x))
	}

	// Compiled: one program, whose while loop runs as many steps as each
	// call needs.
	var cIns transforms.Inspector
	c := transforms.Compile(solveAll, transforms.Inspect(&cIns))
	for _, vals := range [][]float64{{2, 3, 4}, {1e-6, 1e6, 1e12}} {
		r := c(peel.FromFloat64s(vals))
		fmt.Printf("compiled %v: ∛ %v, steps %v\n", vals, r.X.Float64s(), peel.AsType(r.Steps, peel.Float64).Float64s())
	}
	st := cIns.Stats()
	fmt.Printf("compiled calls %d, traces %d\n", st.Calls, st.Misses)
}
