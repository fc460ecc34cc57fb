// Command maml ports functorch's MAML example on sine regression
// (pytorch/functorch, examples/maml_regression/evjang_transforms.py at
// commit f2e17106d6d50a9a0db766eb6396ce6c1a7a3466, itself Eric Jang's JAX
// tutorial translated) to peel: model-agnostic meta-learning, where the
// loss of each task is the loss after one gradient step adapted to that
// task (Grad inside), the tasks are batched with Vmap5 (the params
// shared), and the meta-gradient differentiates through the adaptation
// (Grad of Grad), driving Adam (package optim). The meta-step is compiled
// (Compile5), which makes the tutorial's 20000 meta-iterations take
// seconds.
//
// The tutorial's network (1→40→40→1), task distribution, step sizes,
// iteration count and test adaptation (5 L1 steps on 4 examples) are
// kept. What differs: the weights are [in, out] (y = x·W + b, peel's
// layout; torch's F.linear stores the transpose); the initial weights, the
// tasks and the test task are deterministic (package synth) instead of
// random, so that the run can be checked against PyTorch
// (testdata/gen_reference.py); and it prints instead of plotting. The
// tutorial's test adaptation calls net(t_x, t_params), its arguments
// swapped; here it is net(tParams, tX), as functorch later fixed it.
//
//	go run ./examples/maml
package main

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// net is a three-layer MLP 1→40→40→1; params holds [W1, b1, W2, b2, W3, b3].
func net(params []*peel.Tensor, x *peel.Tensor) *peel.Tensor {
	x = x.MatMul(params[0]).Add(params[1]).ReLU()
	x = x.MatMul(params[2]).Add(params[3]).ReLU()
	x = x.MatMul(params[4]).Add(params[5])
	return x
}

func mseLoss(x, y *peel.Tensor) *peel.Tensor {
	return x.Sub(y).Square().Mean()
}

const (
	alpha    = 0.1 // the inner (adaptation) step size
	K        = 20  // examples per task and batch
	numTasks = 4
)

// sgdStep is one leaf of params - alpha·grads.
func sgdStep(p, g *peel.Tensor) *peel.Tensor { return p.Sub(g.Mul(alpha)) }

// sampleTasks returns outerBatchSize sine tasks y = A·sin(x + phase), A in
// [0.1, 0.5] and phase in [0, π], as two batches of innerBatchSize
// examples each, x in [-5, 5]: [outerBatchSize, innerBatchSize, 1]. The
// seed stands for the tutorial's random draws (package synth).
func sampleTasks(seed float64, outerBatchSize, innerBatchSize int) (x1, y1, x2, y2 *peel.Tensor) {
	As := synth.Data(seed, outerBatchSize, 1, 1).Add(1).Mul(0.2).Add(0.1)
	phases := synth.Data(seed+1, outerBatchSize, 1, 1).Add(1).Mul(math.Pi / 2)
	getBatch := func(seed float64) (x, y *peel.Tensor) {
		x = synth.Data(seed, outerBatchSize, innerBatchSize, 1).Mul(5)
		y = As.Mul(x.Add(phases).Sin())
		return x, y
	}
	x1, y1 = getBatch(seed + 2)
	x2, y2 = getBatch(seed + 3)
	return x1, y1, x2, y2
}

// getLossForTask adapts params to one task with a gradient step on x1, y1
// and returns the adapted network's loss on x2, y2.
func getLossForTask(params []*peel.Tensor, x1, y1, x2, y2 *peel.Tensor) *peel.Tensor {
	innerLoss := func(params []*peel.Tensor, x1, y1 *peel.Tensor) *peel.Tensor {
		f := net(params, x1)
		loss := mseLoss(f, y1)
		return loss
	}
	grads := transforms.Grad3(innerLoss)(params, x1, y1)
	newParams := tree.Map2(sgdStep, params, grads)
	vF := net(newParams, x2)
	return mseLoss(vF, y2)
}

// run meta-trains for iters iterations and returns the meta-losses, the
// meta-trained params, and the test task: tX, tY its 4 examples, testX,
// testY the sine on a grid and testF the network adapted to the examples.
func run(iters int) (losses []float64, params []*peel.Tensor, tX, tY, testX, testY, testF *peel.Tensor) {
	params = []*peel.Tensor{
		synth.Data(-1, 1, 40),
		peel.Zeros(peel.Float64, 40),
		synth.Data(-2, 40, 40).Div(math.Sqrt(40)),
		peel.Zeros(peel.Float64, 40),
		synth.Data(-3, 40, 1).Div(math.Sqrt(40)),
		peel.Zeros(peel.Float64, 1),
	}
	opt := optim.Adam[[]*peel.Tensor](1e-3)
	optState := opt.Init(params)
	metaLoss := func(params []*peel.Tensor, x1, y1, x2, y2 *peel.Tensor) *peel.Tensor {
		// vmap over the tasks, sharing the params (NoAxis).
		innerLosses := transforms.Vmap5(getLossForTask, transforms.InAxes(transforms.NoAxis, 0, 0, 0, 0))(params, x1, y1, x2, y2)
		return innerLosses.Mean()
	}
	// The meta-loss and its gradient (loss2.backward()), compiled.
	step := transforms.Compile5(func(params []*peel.Tensor, x1, y1, x2, y2 *peel.Tensor) tree.Tuple2[*peel.Tensor, []*peel.Tensor] {
		return tree.Pack2(transforms.ValueAndGrad5(metaLoss)(params, x1, y1, x2, y2))
	})
	for it := range iters {
		x1, y1, x2, y2 := sampleTasks(float64(10*it), numTasks, K)
		loss2, grads := step(params, x1, y1, x2, y2).Unpack()
		var updates []*peel.Tensor
		updates, optState = opt.Update(grads, optState, params)
		params = optim.ApplyUpdates(params, updates)
		if it%100 == 0 {
			fmt.Printf("Iteration %d -- Outer Loss: %.4f\n", it, loss2.Item())
		}
		losses = append(losses, loss2.Item())
	}

	tA, tB := 0.35, 1.2
	tX = synth.Data(12, 4, 1).Mul(5)
	tY = tX.Add(tB).Sin().Mul(tA)
	tParams := params
	for range 5 {
		tLoss := func(tParams []*peel.Tensor) *peel.Tensor {
			tF := net(tParams, tX)
			return nn.L1(tF, tY)
		}
		grads := transforms.Grad(tLoss)(tParams)
		tParams = tree.Map2(sgdStep, tParams, grads)
	}
	testX = peel.Unsqueeze(peel.Arange(peel.Float64, -2*math.Pi, 2*math.Pi, 0.01), 1)
	testY = testX.Add(tB).Sin().Mul(tA)
	testF = net(tParams, testX)
	return losses, params, tX, tY, testX, testY, testF
}

func main() {
	losses, _, tX, tY, testX, testY, testF := run(20000)
	fmt.Printf("Iteration %d -- Outer Loss: %.4f\n", len(losses)-1, losses[len(losses)-1])
	fmt.Println("test task, 4 examples (x, y):")
	fmt.Println(peel.Concat([]*peel.Tensor{tX, tY}, 1))
	fmt.Println("after 5 adaptation steps, every 100th point of the grid (x, sin target, net):")
	fmt.Println(peel.Take(peel.Concat([]*peel.Tensor{testX, testY, testF}, 1), peel.Arange(peel.Int64, 0, float64(testX.Shape()[0]), 100), 0))
}
