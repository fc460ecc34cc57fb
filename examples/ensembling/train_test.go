package main

import (
	"fmt"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// Training an ensemble (beyond the tutorial, which only predicts; kept here
// as a test so that main.go stays a line-for-line port): the training step
// of one model (the cross-entropy of its minibatch, its gradient and an
// optim.Adam update) is vmapped over the stacked params AND the stacked Adam
// states (tree.Stack of the members' Init), and the vmapped step is compiled
// once, so all members train in one call per step, each on its own
// minibatches. It must equal training each member alone.

// Member is one model's training state: its parameters and Adam's state.
type Member struct {
	Params SimpleMLP
	Opt    optim.State
}

// Batch is one minibatch: images [B, 1, 8, 8] and labels [B].
type Batch struct{ X, Y *peel.Tensor }

const (
	trainSteps, trainBatch = 6, 8
	trainLR                = 1e-2
)

var adam = optim.Adam[SimpleMLP](trainLR)

// trainStep is one training step of one model: its next state and its loss.
func trainStep(m Member, b Batch) tree.Tuple2[Member, *peel.Tensor] {
	loss := func(params SimpleMLP) *peel.Tensor { return nn.CrossEntropy(fmodel(params, b.X), b.Y) }
	l, grads := transforms.ValueAndGrad(loss)(m.Params)
	updates, opt := adam.Update(grads, m.Opt, m.Params)
	return tree.Pack2(Member{optim.ApplyUpdates(m.Params, updates), opt}, l)
}

// trainBatches returns every member's minibatch at a step: images
// [numModels, 8, 1, 8, 8] and labels [numModels, 8]. The members cycle
// through two minibatches each.
func trainBatches(step int) Batch {
	x := synth.Data(float64(100+step%2), numModels, trainBatch, 1, 8, 8)
	y := synth.Labels(step%2, numModels*trainBatch, 10).Reshape(numModels, trainBatch)
	return Batch{x, y}
}

// initMembers returns the members' initial states.
func initMembers() []Member {
	models, _ := testInputs()
	ms := make([]Member, numModels)
	for i, p := range models {
		ms[i] = Member{p, adam.Init(p)}
	}
	return ms
}

// trainEnsemble trains the members at once with one compiled, vmapped step
// and returns their final states (stacked), the losses [steps, numModels]
// and the compiled step's statistics.
func trainEnsemble() (Member, *peel.Tensor, transforms.CompileStats) {
	var ins transforms.Inspector
	step := transforms.Compile2(transforms.Vmap2(trainStep), transforms.Inspect(&ins))
	ens := tree.Stack(initMembers())
	losses := make([]*peel.Tensor, trainSteps)
	for s := range trainSteps {
		ens, losses[s] = step(ens, trainBatches(s)).Unpack()
	}
	return ens, peel.Stack(losses, 0), ins.Stats()
}

// trainLoop trains each member alone, eagerly, in a Go loop over members
// and steps: the reference trainEnsemble must equal.
func trainLoop() ([]Member, *peel.Tensor) {
	ms := initMembers()
	rows := make([]*peel.Tensor, trainSteps)
	for s := range trainSteps {
		b := trainBatches(s)
		losses := make([]*peel.Tensor, numModels)
		for k := range ms {
			ms[k], losses[k] = trainStep(ms[k], Batch{peel.Index(b.X, k), peel.Index(b.Y, k)}).Unpack()
		}
		rows[s] = peel.Stack(losses, 0)
	}
	return ms, peel.Stack(rows, 0)
}

// TestTrainEnsembleEqualsLoop: the ensemble trained by one compiled,
// vmapped step over stacked params and stacked Adam states equals each
// member trained alone in a loop (params, Adam moments and counts, losses),
// to 1e-10 in float64; the step is traced once, and the losses fall.
func TestTrainEnsembleEqualsLoop(t *testing.T) {
	ens, losses, stats := trainEnsemble()
	if stats.Misses != 1 || stats.Hits != trainSteps-1 {
		t.Errorf("compiled step: %d misses, %d hits, want 1 and %d (last miss: %s)", stats.Misses, stats.Hits, trainSteps-1, stats.LastMiss)
	}
	members, wantLosses := trainLoop()
	closeTo(t, "losses", losses, wantLosses, 1e-10)
	got := tree.Unstack(ens)
	if len(got) != len(members) {
		t.Fatalf("%d members, want %d", len(got), len(members))
	}
	for k := range members {
		gl, wl, paths := tree.Leaves(got[k]), tree.Leaves(members[k]), tree.Paths(members[k])
		if len(gl) != len(wl) {
			t.Fatalf("member %d: %d leaves, want %d", k, len(gl), len(wl))
		}
		for i := range wl {
			closeTo(t, fmt.Sprintf("member %d %s", k, paths[i]), gl[i], wl[i], 1e-10)
		}
	}
	for k := range numModels {
		// Steps 0 and trainSteps-2 see the same minibatch.
		first, last := peel.Index(losses, 0, k).Item(), peel.Index(losses, trainSteps-2, k).Item()
		if !(last < first) {
			t.Errorf("member %d: loss went from %v to %v", k, first, last)
		}
	}
}
