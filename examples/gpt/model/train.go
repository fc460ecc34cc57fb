package model

import (
	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// Hyper are the training hyperparameters.
type Hyper struct {
	LR, MinLR    float64 // the peak learning rate, and the one the cosine decays to
	Warmup       int     // steps of linear warmup from 0 to LR (0: none)
	DecaySteps   int     // the step at which the cosine reaches MinLR (counting the warmup)
	WeightDecay  float64 // AdamW's decoupled weight decay, on Decayed parameters only
	Beta1, Beta2 float64
	Clip         float64 // clip the gradients to this global norm (0: no clipping)
}

// DefaultHyper is nanoGPT's shakespeare_char recipe for steps steps:
// AdamW at 1e-3, betas (0.9, 0.99), weight decay 0.1, clipping at 1,
// warmup over the first 100 steps (or a tenth of a shorter run), cosine
// decay to 1e-4.
func DefaultHyper(steps int) Hyper {
	return Hyper{LR: 1e-3, MinLR: 1e-4, Warmup: min(100, max(steps/10, 1)), DecaySteps: max(steps, 2),
		WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.99, Clip: 1}
}

// Schedule is h's learning rate as a function of the step count (optax's
// warmup_cosine_decay_schedule from 0: the first step, count 0, has
// learning rate 0 when there is a warmup).
func (h Hyper) Schedule() optim.Schedule {
	if h.Warmup > 0 && h.DecaySteps > h.Warmup {
		return optim.WarmupCosineDecay(0, h.LR, h.Warmup, h.DecaySteps, h.MinLR)
	}
	alpha := 0.0
	if h.LR != 0 {
		alpha = h.MinLR / h.LR
	}
	return optim.CosineDecay(h.LR, max(h.DecaySteps, 1), alpha)
}

// Optimizer returns h's optimizer: clipping by the global norm, then
// AdamW with the schedule and the weight decay of the Decayed
// parameters.
func Optimizer(h Hyper) optim.Transformation[Params] {
	adamw := optim.AdamW[Params](h.Schedule(), optim.Betas(h.Beta1, h.Beta2),
		optim.WeightDecay(h.WeightDecay), optim.WeightDecayMask(Decayed))
	if h.Clip <= 0 {
		return adamw
	}
	return optim.Chain(optim.ClipByGlobalNorm[Params](h.Clip), adamw)
}

// StepFunc is a training step: it takes the parameters, the optimizer
// state, a batch of inputs x and targets y [B, T] and the step's dropout
// key, and returns the new parameters, the new state and the batch's
// loss (before the update).
type StepFunc = func(p Params, s optim.State, x, y, key *peel.Tensor) tree.Tuple3[Params, optim.State, *peel.Tensor]

// NewStep returns the training step of c with optimizer opt. With remat
// not nil each block is checkpointed with that policy. The key is used
// only when c.Dropout > 0.
func NewStep(c Config, opt optim.Transformation[Params], remat *transforms.SavePolicy) StepFunc {
	return func(p Params, s optim.State, x, y, key *peel.Tensor) tree.Tuple3[Params, optim.State, *peel.Tensor] {
		o := Options{Remat: remat}
		if c.Dropout > 0 {
			o.Key = key
		}
		l, g := transforms.ValueAndGrad(func(p Params) *peel.Tensor { return Loss(c, p, x, y, o) })(p)
		u, s := opt.Update(g, s, p)
		return tree.Pack3(optim.ApplyUpdates(p, u), s, l)
	}
}

// Compiled returns step compiled (transforms.Compile5).
func Compiled(step StepFunc) StepFunc {
	return transforms.Compile5(step)
}
