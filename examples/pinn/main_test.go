package main

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// closedFormHessian is the Hessian in x of the one-hidden-layer tanh MLP,
// written out: Σ_k w2_k·d2(z_k)·w1_ik·w1_jk with z = x·W1 + b1 and d2 the
// second derivative of tanh, -2·tanh·(1 - tanh²).
func closedFormHessian(params Params, x []float64) [2][2]float64 {
	w1, b1, w2 := params[0].W.Float64s(), params[0].B.Float64s(), params[1].W.Float64s()
	hidden := len(b1)
	var h [2][2]float64
	for k := range hidden {
		th := math.Tanh(x[0]*w1[k] + x[1]*w1[hidden+k] + b1[k])
		d2 := w2[k] * -2 * th * (1 - th*th)
		for i := range 2 {
			for j := range 2 {
				h[i][j] += d2 * w1[i*hidden+k] * w1[j*hidden+k]
			}
		}
	}
	return h
}

// TestLaplacian checks the vmapped Laplacian (the trace of Jacfwd of
// Jacrev) at every interior point against the closed form, and the
// Hessian at a few points against the closed form and against second
// central differences of the model, for the initial and for trained params.
func TestLaplacian(t *testing.T) {
	trained, _ := train(100)
	for name, params := range map[string]Params{"initial": initParams([]int{2, 32, 1}, peel.Key(0)), "trained": trained} {
		got := transforms.Vmap2(laplace, overPoints)(params, interior).Float64s()
		points := interior.Float64s()
		for p := range got {
			h := closedFormHessian(params, points[2*p:2*p+2])
			if want := h[0][0] + h[1][1]; math.Abs(got[p]-want) > 1e-13*(1+math.Abs(want)) {
				t.Errorf("%s params: laplace at point %d = %.17g, closed form %.17g", name, p, got[p], want)
			}
		}
		u := func(x, y float64) float64 { return model(params, peel.FromFloat64s([]float64{x, y})).Item() }
		for _, p := range []int{0, 37, 195} {
			x := points[2*p : 2*p+2]
			got := hessian(params, peel.FromFloat64s(x)).Float64s()
			want := closedFormHessian(params, x)
			const step = 1e-4
			fd := [2][2]float64{
				{(u(x[0]+step, x[1]) - 2*u(x[0], x[1]) + u(x[0]-step, x[1])) / (step * step),
					(u(x[0]+step, x[1]+step) - u(x[0]+step, x[1]-step) - u(x[0]-step, x[1]+step) + u(x[0]-step, x[1]-step)) / (4 * step * step)},
				{0, (u(x[0], x[1]+step) - 2*u(x[0], x[1]) + u(x[0], x[1]-step)) / (step * step)},
			}
			fd[1][0] = fd[0][1]
			for i := range 2 {
				for j := range 2 {
					if g := got[2*i+j]; math.Abs(g-want[i][j]) > 1e-13*(1+math.Abs(want[i][j])) || math.Abs(g-fd[i][j]) > 1e-6*(1+math.Abs(g)) {
						t.Errorf("%s params, point %d: hessian[%d][%d] = %.17g, closed form %.17g, central differences %.10g",
							name, p, i, j, g, want[i][j], fd[i][j])
					}
				}
			}
		}
	}
}

// TestTrain checks that the loss falls and that the trained network is
// close to the exact solution: its L2 error over the unit square is below
// 0.015, 3% of ‖u*‖ = 0.5 (it is 0.0084 after 2000 steps, 0.46 at the
// start), and it stays below 0.1 on the boundary (max |u*| = 1; it is 0.048).
func TestTrain(t *testing.T) {
	params, losses := train(2000)
	if first, last := losses[0], losses[len(losses)-1]; !(last < first/10000) {
		t.Errorf("loss fell only from %g to %g", first, last)
	}
	if l2 := l2Norm(vError, params).Item(); !(l2 < 0.015) {
		t.Errorf("L2 error of the trained network %g, want < 0.015", l2)
	}
	if maxBoundary := vModel(params, boundary).Abs().Max().Item(); !(maxBoundary < 0.1) {
		t.Errorf("trained network reaches %g on the boundary, want < 0.1", maxBoundary)
	}
}

// TestCompiledStep checks that the compiled training step gives the
// uncompiled step's params, optimizer state and loss, step after step.
func TestCompiledStep(t *testing.T) {
	params := initParams([]int{2, 32, 1}, peel.Key(0))
	eager := tree.Pack3(params, optimizer.Init(params), peel.Scalar(0.0))
	compiled := eager
	step := transforms.Compile2(trainStep)
	for s := range 3 {
		eager = trainStep(eager.V0, eager.V1)
		compiled = step(compiled.V0, compiled.V1)
		want, got := tree.Leaves(eager), tree.Leaves(compiled)
		for i, path := range tree.Paths(eager) {
			w, g := peel.AsType(want[i], peel.Float64).Float64s(), peel.AsType(got[i], peel.Float64).Float64s()
			for k := range w {
				if math.Abs(g[k]-w[k]) > 1e-12*(1+math.Abs(w[k])) {
					t.Fatalf("step %d, %s[%d]: compiled %.17g, uncompiled %.17g", s, path, k, g[k], w[k])
				}
			}
		}
	}
}

// BenchmarkTutorial times 100 of main's compiled Adam steps (trainStep under
// Compile2, learning rate 1e-2) from initParams, without the error reports
// and without reading the losses, at main's sizes, in float64: the [2, 32,
// 1] tanh MLP, its Laplacian by Jacfwd of Jacrev vmapped over the 14×14 = 196
// interior points, and the 60 boundary points. The step is compiled before
// the timing starts. testdata/time_torch.py times 100 torch.optim.Adam steps
// on the same loss, the Laplacian by vmap(jacfwd(jacrev(u))).
func BenchmarkTutorial(b *testing.B) {
	const steps = 100
	params0 := initParams([]int{2, 32, 1}, peel.Key(0))
	optState0 := optimizer.Init(params0)
	step := transforms.Compile2(trainStep)
	step(params0, optState0) // compile
	for b.Loop() {
		params, optState := params0, optState0
		for range steps {
			params, optState, _ = step(params, optState).Unpack()
		}
	}
}
