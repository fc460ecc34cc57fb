package main

import (
	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
)

// MAML with the inner loop run by an optimizer from package optim: the
// adaptation is innerSteps steps of optim.SGD with momentum, its state
// initialized inside the task loss, so the meta-gradient differentiates
// through the optimizer's updates (the momentum trace included), as
// higher-order MAML libraries do. main_test.go checks it against central
// differences, and that one step of plain optim.SGD is getLossForTask.

// getLossForTaskWith adapts params to one task with steps steps of opt on
// its support points and returns the adapted network's loss on its query
// points.
func getLossForTaskWith(opt optim.Transformation[[]*peel.Tensor], steps int) func(params, task []*peel.Tensor) *peel.Tensor {
	innerLoss := func(params []*peel.Tensor, x1, y1 *peel.Tensor) *peel.Tensor { return mseLoss(net(params, x1), y1) }
	return func(params, task []*peel.Tensor) *peel.Tensor {
		p, state := params, opt.Init(params)
		for range steps {
			grads := transforms.Grad3(innerLoss)(p, task[0], task[1])
			var updates []*peel.Tensor
			updates, state = opt.Update(grads, state, p)
			p = optim.ApplyUpdates(p, updates)
		}
		return mseLoss(net(p, task[2]), task[3])
	}
}

// metaLossWith is the mean over the tasks (Vmap) of getLossForTaskWith.
func metaLossWith(opt optim.Transformation[[]*peel.Tensor], steps int) func(params, tasks []*peel.Tensor) *peel.Tensor {
	taskLoss := transforms.Vmap2(getLossForTaskWith(opt, steps), transforms.InAxes(transforms.NoAxis, 0))
	return func(params, tasks []*peel.Tensor) *peel.Tensor { return peel.Mean(taskLoss(params, tasks)) }
}

// The inner optimizer: SGD at alpha with momentum 0.5, for 3 steps.
const innerSteps = 3

var innerOpt = optim.SGD[[]*peel.Tensor](alpha, optim.Momentum(0.5))

// metaGradOptim is the meta-loss and meta-gradient through innerSteps
// steps of innerOpt.
func metaGradOptim(params, tasks []*peel.Tensor) (*peel.Tensor, []*peel.Tensor) {
	return transforms.ValueAndGrad2(metaLossWith(innerOpt, innerSteps))(params, tasks)
}
