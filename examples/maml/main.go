// Command maml ports functorch's MAML example on sine regression
// (pytorch/functorch, examples/maml_regression/evjang_transforms.py, itself
// Eric Jang's JAX tutorial translated) to peel: model-agnostic
// meta-learning, where the loss of each task is the loss after one gradient
// step adapted to that task (Grad inside), the tasks are batched with Vmap,
// and the meta-gradient differentiates through the adaptation (Grad of
// Grad), driving an Adam optimizer (package optim).
//
// The tutorial's network, task distribution and step sizes are kept; the
// tasks are deterministic (package synth) instead of random, and there are
// 1000 meta-iterations instead of 20000, so that it runs in seconds and
// its first 300 can be checked against PyTorch (testdata/gen_reference.py).
//
// inner_optim.go adapts with an optimizer of package optim instead (SGD
// with momentum, several steps): Grad then differentiates through the
// optimizer's updates, and main_test.go checks that meta-gradient against
// central differences.
//
//	go run ./examples/maml
package main

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// net is a three-layer MLP; params holds [W1, b1, W2, b2, W3, b3], the
// weights [in, out].
func net(params []*peel.Tensor, x *peel.Tensor) *peel.Tensor {
	x = peel.ReLU(peel.Add(peel.MatMul(x, params[0]), params[1]))
	x = peel.ReLU(peel.Add(peel.MatMul(x, params[2]), params[3]))
	return peel.Add(peel.MatMul(x, params[4]), params[5])
}

func mseLoss(x, y *peel.Tensor) *peel.Tensor { return peel.Mean(peel.Square(peel.Sub(x, y))) }

const alpha = 0.1 // the inner (adaptation) step size

// sgdStep is p - alpha·g for one leaf of params and grads (tree.MapN).
func sgdStep(pg []*peel.Tensor) *peel.Tensor { return peel.Sub(pg[0], peel.Mul(pg[1], alpha)) }

// sampleTasks returns numTasks sine tasks y = A·sin(x + phase), A in
// [0.1, 0.5] and phase in [0, π], as [x1, y1, x2, y2]: k support points and
// k query points of each task, x in [-5, 5], each tensor [numTasks, k, 1].
func sampleTasks(it, numTasks, k int) []*peel.Tensor {
	s := 10 * float64(it)
	as := peel.Add(peel.Mul(peel.Add(synth.Data(s, numTasks, 1, 1), 1), 0.2), 0.1)
	phases := peel.Mul(peel.Add(synth.Data(s+1, numTasks, 1, 1), 1), math.Pi/2)
	getBatch := func(seed float64) (x, y *peel.Tensor) {
		x = peel.Mul(synth.Data(seed, numTasks, k, 1), 5)
		return x, peel.Mul(as, peel.Sin(peel.Add(x, phases)))
	}
	x1, y1 := getBatch(s + 2)
	x2, y2 := getBatch(s + 3)
	return []*peel.Tensor{x1, y1, x2, y2}
}

// getLossForTask adapts params to one task with a gradient step on its
// support points and returns the adapted network's loss on its query points.
func getLossForTask(params, task []*peel.Tensor) *peel.Tensor {
	innerLoss := func(params []*peel.Tensor, x1, y1 *peel.Tensor) *peel.Tensor { return mseLoss(net(params, x1), y1) }
	grads := transforms.Grad3(innerLoss)(params, task[0], task[1])
	newParams := tree.MapN(sgdStep, params, grads)
	return mseLoss(net(newParams, task[2]), task[3])
}

// run meta-trains for iters iterations and returns the meta-losses, the
// meta-trained params, and a test task: its 4 examples adapted to with 5 L1
// gradient steps, and the adapted network's predictions at testX.
func run(iters int) (losses []float64, params []*peel.Tensor, testX, testY, testF *peel.Tensor) {
	params = []*peel.Tensor{
		synth.Data(-1, 1, 40), peel.Zeros(peel.Float64, 40),
		peel.Mul(synth.Data(-2, 40, 40), 1/math.Sqrt(40)), peel.Zeros(peel.Float64, 40),
		peel.Mul(synth.Data(-3, 40, 1), 1/math.Sqrt(40)), peel.Zeros(peel.Float64, 1),
	}
	opt := optim.Adam[[]*peel.Tensor](1e-3) // torch.optim.Adam's defaults
	state := opt.Init(params)
	const K, numTasks = 20, 4
	metaLoss := func(params, task []*peel.Tensor) *peel.Tensor {
		return peel.Mean(transforms.Vmap2(getLossForTask, transforms.InAxes(transforms.NoAxis, 0))(params, task))
	}
	for it := 1; it <= iters; it++ {
		loss2, grads := transforms.ValueAndGrad2(metaLoss)(params, sampleTasks(it, numTasks, K))
		var updates []*peel.Tensor
		updates, state = opt.Update(grads, state, params)
		params = optim.ApplyUpdates(params, updates)
		losses = append(losses, loss2.Item())
	}

	// A new task: adapt to 4 examples with 5 gradient steps on the L1 loss.
	tA, tB := 0.35, 1.2
	tX := peel.Mul(synth.Data(99, 4, 1), 5)
	tY := peel.Mul(peel.Sin(peel.Add(tX, tB)), tA)
	tParams := params
	for range 5 {
		l1 := func(p []*peel.Tensor, x, y *peel.Tensor) *peel.Tensor {
			return peel.Mean(peel.Abs(peel.Sub(net(p, x), y)))
		}
		tParams = tree.MapN(sgdStep, tParams, transforms.Grad3(l1)(tParams, tX, tY))
	}
	testX = peel.Unsqueeze(peel.Arange(peel.Float64, -2*math.Pi, 2*math.Pi, 0.5), 1)
	testY = peel.Mul(peel.Sin(peel.Add(testX, tB)), tA)
	return losses, params, testX, testY, net(tParams, testX)
}

func main() {
	losses, _, testX, testY, testF := run(1000)
	for it := 0; it < len(losses); it += 100 {
		fmt.Printf("Iteration %d -- Outer Loss: %.4f\n", it+1, losses[it])
	}
	fmt.Printf("Iteration %d -- Outer Loss: %.4f\n", len(losses), losses[len(losses)-1])
	fmt.Println("test task after 5 adaptation steps (x, sin target, net):")
	fmt.Println(peel.Narrow(peel.Concat([]*peel.Tensor{testX, testY, testF}, 1), 0, 0, 26))
	_, params, _, _, _ := run(0)
	l, g := metaGradOptim(params, sampleTasks(1, 4, 20))
	fmt.Printf("inner loop of %d optim.SGD steps with momentum: meta-loss %.4f, meta-gradient of b3 %.4f\n", innerSteps, l.Item(), g[5].Item())
}
