package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/reftest"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
)

// TestAgainstTorch runs the 300 meta-iterations and checks every meta-loss,
// the meta-trained weights and the adapted predictions on the test task
// against PyTorch (testdata/gen_reference.py: per-task autograd with
// create_graph, torch.optim.Adam). 300 Adam steps through second
// derivatives still agree to about 1e-12 relative.
func TestAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	losses, params, _, _, testF := run(300)
	const rtol, atol = 1e-10, 1e-12
	reftest.Close(t, "losses", peel.FromFloat64s(losses, len(losses)), ref["losses"], rtol, atol)
	reftest.CloseTree(t, "params", params, ref, rtol, atol)
	reftest.Close(t, "test_f", testF, ref["test_f"], rtol, atol)
}

// TestOptimInnerLoopMatchesHandWritten: one step of plain optim.SGD at
// alpha is the hand-written tree.MapN step of getLossForTask, for the
// meta-loss and for its meta-gradient.
func TestOptimInnerLoopMatchesHandWritten(t *testing.T) {
	_, params, _, _, _ := run(0)
	tasks := sampleTasks(1, 4, 20)
	hand := func(params, tasks []*peel.Tensor) *peel.Tensor {
		return peel.Mean(transforms.Vmap2(getLossForTask, transforms.InAxes(transforms.NoAxis, 0))(params, tasks))
	}
	wl, wg := transforms.ValueAndGrad2(hand)(params, tasks)
	gl, gg := transforms.ValueAndGrad2(metaLossWith(optim.SGD[[]*peel.Tensor](alpha), 1))(params, tasks)
	closeRel(t, "meta-loss", gl.Item(), wl.Item(), 1e-14)
	for i := range wg {
		g, w := gg[i].Float64s(), wg[i].Float64s()
		for j := range w {
			closeRel(t, fmt.Sprintf("meta-gradient %d[%d]", i, j), g[j], w[j], 1e-12)
		}
	}
}

// TestMetaGradThroughOptimizer checks the meta-gradient through 3 inner
// steps of optim.SGD with momentum against central differences of the
// meta-loss in float64 (to 1e-7 relative; they agree to about 1e-8):
// along random directions and along single coordinates, at the initial parameters and after 30 meta-iterations.
func TestMetaGradThroughOptimizer(t *testing.T) {
	tasks := sampleTasks(7, 4, 20)
	metaLoss := metaLossWith(innerOpt, innerSteps)
	r := rand.New(rand.NewPCG(18, 1))
	for _, iters := range []int{0, 30} {
		_, params, _, _, _ := run(iters)
		loss, grads := metaGradOptim(params, tasks)
		closeRel(t, fmt.Sprintf("after %d iterations: ValueAndGrad's value", iters), loss.Item(), metaLoss(params, tasks).Item(), 1e-14)
		// The meta-loss has kinks where an inner ReLU switches: a small
		// step keeps the differences off them.
		const eps = 1e-6
		fd := func(dirs []*peel.Tensor) float64 {
			plus, minus := make([]*peel.Tensor, len(params)), make([]*peel.Tensor, len(params))
			for i, p := range params {
				plus[i], minus[i] = peel.Add(p, peel.Mul(dirs[i], eps)), peel.Sub(p, peel.Mul(dirs[i], eps))
			}
			return (metaLoss(plus, tasks).Item() - metaLoss(minus, tasks).Item()) / (2 * eps)
		}
		check := func(what string, dirs []*peel.Tensor) {
			t.Helper()
			dot := 0.0
			for i, d := range dirs {
				g, dv := grads[i].Float64s(), d.Float64s()
				for j := range dv {
					dot += dv[j] * g[j]
				}
			}
			if want := fd(dirs); math.Abs(dot-want) > 1e-7*(math.Abs(want)+1e-4) {
				t.Errorf("after %d iterations, %s: meta-gradient %.12g, central differences %.12g", iters, what, dot, want)
			}
		}
		for k := range 3 {
			dirs := make([]*peel.Tensor, len(params))
			for i, p := range params {
				v := make([]float64, p.Size())
				for j := range v {
					v[j] = 2*r.Float64() - 1
				}
				dirs[i] = peel.FromFloat64s(v, p.Shape()...)
			}
			check(fmt.Sprintf("random direction %d", k), dirs)
		}
		for i := range params {
			// The coordinate of the largest partial derivative (many are
			// 0, at units the ReLUs switch off).
			j, g := 0, grads[i].Float64s()
			for m := range g {
				if math.Abs(g[m]) > math.Abs(g[j]) {
					j = m
				}
			}
			dirs := make([]*peel.Tensor, len(params))
			for m, q := range params {
				v := make([]float64, q.Size())
				if m == i {
					v[j] = 1
				}
				dirs[m] = peel.FromFloat64s(v, q.Shape()...)
			}
			check(fmt.Sprintf("coordinate %d of leaf %d", j, i), dirs)
		}
	}
}

func closeRel(t *testing.T, what string, got, want, rtol float64) {
	t.Helper()
	if d := math.Abs(got - want); !(d <= rtol*(math.Abs(want)+1e-12)) {
		t.Errorf("%s = %.17g, want %.17g", what, got, want)
	}
}
