package main

import (
	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// Training an ensemble (beyond the tutorial, which only predicts): the
// training step of one model — the cross-entropy of its minibatch, its
// gradient and an optim.Adam update — is vmapped over the stacked params
// AND the stacked Adam states (tree.Stack of the members' Init), and the
// vmapped step is compiled once, so all members train in one call per
// step, each on its own minibatches.

// Member is one model's training state: its parameters and Adam's state
// (moments and step count).
type Member struct {
	Params MLP
	Opt    optim.State
}

// Batch is one minibatch: images [B, 1, 6, 6] and labels [B].
type Batch struct{ X, Y *peel.Tensor }

// StepOut is a step's result: the member's next state and its loss.
type StepOut struct {
	Member Member
	Loss   *peel.Tensor
}

const (
	trainSteps, trainBatch, trainMembers = 6, 8, 4
	trainLR                              = 1e-2
)

var adam = optim.Adam[MLP](trainLR)

// trainStep is one training step of one model.
func trainStep(m Member, b Batch) StepOut {
	loss := func(p MLP) *peel.Tensor { return nn.CrossEntropy(fmodel(p, b.X), b.Y) }
	l, grads := transforms.ValueAndGrad(loss)(m.Params)
	updates, opt := adam.Update(grads, m.Opt, m.Params)
	return StepOut{Member{optim.ApplyUpdates(m.Params, updates), opt}, l}
}

// trainBatches returns the minibatch of every member at a step: images
// [members, 8, 1, 6, 6] and labels [members, 8]. The members cycle
// through two minibatches each.
func trainBatches(step int) Batch {
	x := synth.Data(float64(100+step%2), trainMembers, trainBatch, 1, 6, 6)
	y := peel.Reshape(synth.Labels(step%2, trainMembers*trainBatch, 10), trainMembers, trainBatch)
	return Batch{x, y}
}

// initMembers returns the members' initial states.
func initMembers() []Member {
	ms := make([]Member, trainMembers)
	for i := range ms {
		p := newMLP(float64(10 * i))
		ms[i] = Member{p, adam.Init(p)}
	}
	return ms
}

// trainEnsemble trains the members at once with one compiled, vmapped step
// and returns their final states (stacked), the losses [steps, members]
// and the compiled step's statistics.
func trainEnsemble() (Member, *peel.Tensor, transforms.CompileStats) {
	var stepIns transforms.Inspector
	step := transforms.Compile2(transforms.Vmap2(trainStep), transforms.Inspect(&stepIns))
	ens := tree.Stack(initMembers())
	var losses []*peel.Tensor
	for s := range trainSteps {
		out := step(ens, trainBatches(s))
		ens = out.Member
		losses = append(losses, out.Loss)
	}
	return ens, peel.Stack(losses, 0), stepIns.Stats()
}

// trainLoop trains each member alone, eagerly, in a Go loop over members
// and steps: the reference trainEnsemble must equal.
func trainLoop() ([]Member, *peel.Tensor) {
	ms := initMembers()
	losses := make([][]*peel.Tensor, trainSteps)
	for s := range trainSteps {
		b := trainBatches(s)
		for k := range ms {
			out := trainStep(ms[k], Batch{peel.Select(b.X, 0, k), peel.Select(b.Y, 0, k)})
			ms[k] = out.Member
			losses[s] = append(losses[s], out.Loss)
		}
	}
	rows := make([]*peel.Tensor, trainSteps)
	for s, ls := range losses {
		rows[s] = peel.Stack(ls, 0)
	}
	return ms, peel.Stack(rows, 0)
}
