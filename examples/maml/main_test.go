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
	"github.com/peel-ml/peel/tree"
)

// TestAgainstTorch runs 300 meta-iterations (the compiled step) and
// checks every meta-loss, the meta-trained weights and the adapted
// predictions on the test grid against PyTorch (testdata/gen_reference.py:
// per-task autograd with create_graph, torch.optim.Adam). 300 Adam steps
// through second derivatives still agree to about 1e-12 relative.
func TestAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	losses, params, _, _, testX, _, testF := run(300)
	const rtol, atol = 1e-10, 1e-12
	reftest.Close(t, "losses", peel.FromFloat64s(losses, len(losses)), ref["losses"], rtol, atol)
	reftest.CloseTree(t, "params", params, ref, rtol, atol)
	reftest.Close(t, "test_x", testX, ref["test_x"], 0, 1e-12)
	reftest.Close(t, "test_f", testF, ref["test_f"], rtol, atol)
}

// MAML with the inner loop run by an optimizer from package optim, as
// higher-order MAML libraries do: getLossForTaskWith adapts with steps
// steps of opt, its state initialized inside the task loss, so the
// meta-gradient differentiates through the optimizer's updates (a
// momentum trace included).
func getLossForTaskWith(opt optim.Transformation[[]*peel.Tensor], steps int) func(params []*peel.Tensor, x1, y1, x2, y2 *peel.Tensor) *peel.Tensor {
	innerLoss := func(params []*peel.Tensor, x1, y1 *peel.Tensor) *peel.Tensor { return mseLoss(net(params, x1), y1) }
	return func(params []*peel.Tensor, x1, y1, x2, y2 *peel.Tensor) *peel.Tensor {
		p, state := params, opt.Init(params)
		for range steps {
			grads := transforms.Grad3(innerLoss)(p, x1, y1)
			var updates []*peel.Tensor
			updates, state = opt.Update(grads, state, p)
			p = optim.ApplyUpdates(p, updates)
		}
		return mseLoss(net(p, x2), y2)
	}
}

// metaLossWith is the mean over the tasks (Vmap5, the params shared) of
// getLossForTaskWith.
func metaLossWith(opt optim.Transformation[[]*peel.Tensor], steps int) func(params []*peel.Tensor, x1, y1, x2, y2 *peel.Tensor) *peel.Tensor {
	taskLoss := transforms.Vmap5(getLossForTaskWith(opt, steps), transforms.InAxes(transforms.NoAxis, 0, 0, 0, 0))
	return func(params []*peel.Tensor, x1, y1, x2, y2 *peel.Tensor) *peel.Tensor {
		return taskLoss(params, x1, y1, x2, y2).Mean()
	}
}

// TestOptimInnerLoopMatchesHandWritten: one step of plain optim.SGD at
// alpha is getLossForTask's hand-written step, for the meta-loss and for
// its meta-gradient; and Vmap5 with the params unmapped is the tutorial's
// Vmap4 of a closure.
func TestOptimInnerLoopMatchesHandWritten(t *testing.T) {
	_, params, _, _, _, _, _ := run(0)
	x1, y1, x2, y2 := sampleTasks(10, numTasks, K)
	hand := func(params []*peel.Tensor, x1, y1, x2, y2 *peel.Tensor) *peel.Tensor {
		taskLoss := func(x1, y1, x2, y2 *peel.Tensor) *peel.Tensor { return getLossForTask(params, x1, y1, x2, y2) }
		return transforms.Vmap4(taskLoss)(x1, y1, x2, y2).Mean()
	}
	wl, wg := transforms.ValueAndGrad5(hand)(params, x1, y1, x2, y2)
	gl, gg := transforms.ValueAndGrad5(metaLossWith(optim.SGD[[]*peel.Tensor](alpha), 1))(params, x1, y1, x2, y2)
	closeRel(t, "meta-loss", gl.Item(), wl.Item(), 1e-14)
	for i := range wg {
		g, w := gg[i].Float64s(), wg[i].Float64s()
		for j := range w {
			closeRel(t, fmt.Sprintf("meta-gradient %d[%d]", i, j), g[j], w[j], 1e-12)
		}
	}
}

// TestMetaGradThroughOptimizer checks the meta-gradient through 3 inner
// steps of optim.SGD with momentum 0.5 against central differences of
// the meta-loss in float64 (to 1e-7 relative; they agree to about 1e-8):
// along random directions and along single coordinates, at the initial
// parameters and after 30 meta-iterations.
func TestMetaGradThroughOptimizer(t *testing.T) {
	x1, y1, x2, y2 := sampleTasks(70, numTasks, K)
	metaLoss := metaLossWith(optim.SGD[[]*peel.Tensor](alpha, optim.Momentum(0.5)), 3)
	r := rand.New(rand.NewPCG(18, 1))
	for _, iters := range []int{0, 30} {
		_, params, _, _, _, _, _ := run(iters)
		loss, grads := transforms.ValueAndGrad5(metaLoss)(params, x1, y1, x2, y2)
		closeRel(t, fmt.Sprintf("after %d iterations: ValueAndGrad's value", iters), loss.Item(), metaLoss(params, x1, y1, x2, y2).Item(), 1e-14)
		// The meta-loss has kinks where an inner ReLU switches: a small
		// step keeps the differences off them.
		const eps = 1e-6
		fd := func(dirs []*peel.Tensor) float64 {
			plus, minus := make([]*peel.Tensor, len(params)), make([]*peel.Tensor, len(params))
			for i, p := range params {
				plus[i], minus[i] = p.Add(dirs[i].Mul(eps)), p.Sub(dirs[i].Mul(eps))
			}
			return (metaLoss(plus, x1, y1, x2, y2).Item() - metaLoss(minus, x1, y1, x2, y2).Item()) / (2 * eps)
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

// BenchmarkTutorial times 20 of run's meta-iterations from the initial
// params, at main's sizes, in float64: the 1→40→40→1 ReLU MLP, 4 tasks of
// K = 20 examples each (x1, y1 for the adaptation step at alpha 0.1, x2,
// y2 for the adapted loss), the compiled meta-step (Compile5 of
// ValueAndGrad5 of the Vmap5 meta-loss, as in run) and Adam's update
// (lr 1e-3, uncompiled, as in run), without reading the losses. The 20
// iterations' tasks are drawn before the timing, and the step is compiled
// before it. testdata/time_torch.py times the tutorial's 20 iterations:
// vmap of the task loss with grad inside, loss.backward() and
// torch.optim.Adam.
func BenchmarkTutorial(b *testing.B) {
	const iters = 20
	_, params0, _, _, _, _, _ := run(0)
	tasks := make([][4]*peel.Tensor, iters)
	for it := range tasks {
		x1, y1, x2, y2 := sampleTasks(float64(10*it), numTasks, K)
		tasks[it] = [4]*peel.Tensor{x1, y1, x2, y2}
	}
	metaLoss := func(params []*peel.Tensor, x1, y1, x2, y2 *peel.Tensor) *peel.Tensor {
		return transforms.Vmap5(getLossForTask, transforms.InAxes(transforms.NoAxis, 0, 0, 0, 0))(params, x1, y1, x2, y2).Mean()
	}
	step := transforms.Compile5(func(params []*peel.Tensor, x1, y1, x2, y2 *peel.Tensor) tree.Tuple2[*peel.Tensor, []*peel.Tensor] {
		return tree.Pack2(transforms.ValueAndGrad5(metaLoss)(params, x1, y1, x2, y2))
	})
	opt := optim.Adam[[]*peel.Tensor](1e-3)
	optState0 := opt.Init(params0)
	step(params0, tasks[0][0], tasks[0][1], tasks[0][2], tasks[0][3]) // compile
	for b.Loop() {
		params, optState := params0, optState0
		for _, task := range tasks {
			_, grads := step(params, task[0], task[1], task[2], task[3]).Unpack()
			var updates []*peel.Tensor
			updates, optState = opt.Update(grads, optState, params)
			params = optim.ApplyUpdates(params, updates)
		}
	}
}
