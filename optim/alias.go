package optim

import (
	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/treeimpl"
)

// Start returns the optimizer that make builds for params' type, with
// learning rate lr and opts, and its initial state: opt, state :=
// optim.Start(params, optim.Adam, 1e-3) is optim.Adam[P](1e-3) and its
// Init(params), P inferred from params (optax's adam(1e-3) and init). It
// takes any of SGD, Adam, AdamW, RMSProp, Adagrad and Lion; a Chain
// names its type where it is built. It panics as make and Init do.
func Start[P any, L LearningRate](params P, make func(lr L, opts ...Option) Transformation[P], lr L, opts ...Option) (Transformation[P], State) {
	t := make(lr, opts...)
	return t, t.Init(params)
}

// SGD returns stochastic gradient descent with learning rate lr, a
// float64 or a Schedule (optax.sgd, torch.optim.SGD without dampening):
// the update is -lr·g, or with Momentum(m) -lr·t where t ← g + m·t (with
// Nesterov(), -lr·(g + m·t)). Its state is a ChainState of the Trace's
// TraceState (with Momentum) and the learning rate's state. Default: no
// momentum. Options: Momentum, Nesterov. It panics with *peel.Error for
// Nesterov without Momentum and for invalid hyperparameters.
func SGD[P any, L LearningRate](lr L, opts ...Option) Transformation[P] {
	const op = "optim.SGD"
	defer peel.Annotate(op)
	c := configure(op, config{}, opts, "Momentum", "Nesterov")
	if c.nesterov && !c.hasMomentum {
		treeimpl.Errorf(op, "Nesterov needs a Momentum")
	}
	var ts []Transformation[P]
	if c.hasMomentum {
		ts = append(ts, trace[P]("optim.Trace", c.momentum, c.nesterov))
	}
	ts = append(ts, scaleByLR[P]("optim.ScaleByLearningRate", lr))
	return alias(op, Chain(ts...))
}

// Adam returns the Adam optimizer with learning rate lr, a float64 or a
// Schedule (optax.adam, torch.optim.Adam): Chain(ScaleByAdam(opts...),
// ScaleByLearningRate(lr)). Defaults: Betas(0.9, 0.999), Eps(1e-8),
// EpsRoot(0). Options: Betas, Eps, EpsRoot. It panics with *peel.Error
// for invalid hyperparameters.
func Adam[P any, L LearningRate](lr L, opts ...Option) Transformation[P] {
	const op = "optim.Adam"
	defer peel.Annotate(op)
	c := configure(op, adamDefaults, opts, "Betas", "Eps", "EpsRoot")
	return alias(op, Chain(scaleByAdam[P]("optim.ScaleByAdam", c), scaleByLR[P]("optim.ScaleByLearningRate", lr)))
}

// AdamW returns Adam with decoupled weight decay (optax.adamw,
// torch.optim.AdamW): the update is -lr·(adam + wd·param), so Update needs
// params. Defaults as Adam's and WeightDecay(1e-4) (optax's; torch's is
// 1e-2). Options: Betas, Eps, EpsRoot, WeightDecay, WeightDecayMask. It
// panics with *peel.Error for invalid hyperparameters.
func AdamW[P any, L LearningRate](lr L, opts ...Option) Transformation[P] {
	const op = "optim.AdamW"
	defer peel.Annotate(op)
	d := adamDefaults
	d.weightDecay = 1e-4
	c := configure(op, d, opts, "Betas", "Eps", "EpsRoot", "WeightDecay", "WeightDecayMask")
	return alias(op, Chain(
		scaleByAdam[P]("optim.ScaleByAdam", c),
		addDecayed[P]("optim.AddDecayedWeights", c.weightDecay, c.decayMask),
		scaleByLR[P]("optim.ScaleByLearningRate", lr)))
}

// RMSProp returns RMSProp with learning rate lr, a float64 or a Schedule
// (optax.rmsprop): with v ← d·v + (1-d)·g², the update is
// -lr·g/√(v + eps); with Centered(), -lr·g/√(v - m² + eps) where m ← d·m +
// (1-d)·g; with Momentum(μ), the scaled updates then go through a Trace
// of decay μ (and Nesterov()). Defaults (optax's): Decay(0.9), Eps(1e-8)
// inside the square root, no momentum; torch's are alpha 0.99 and eps
// outside the root. Options: Decay, Eps, Centered, Momentum, Nesterov. It
// panics with *peel.Error for Nesterov without Momentum and for invalid
// hyperparameters.
func RMSProp[P any, L LearningRate](lr L, opts ...Option) Transformation[P] {
	const op = "optim.RMSProp"
	defer peel.Annotate(op)
	c := configure(op, config{decay: 0.9, eps: 1e-8}, opts, "Decay", "Eps", "Centered", "Momentum", "Nesterov")
	if c.nesterov && !c.hasMomentum {
		treeimpl.Errorf(op, "Nesterov needs a Momentum")
	}
	var ts []Transformation[P]
	if c.centered {
		ts = append(ts, scaleByStddev[P]("optim.ScaleByStddev", c.decay, c.eps))
	} else {
		ts = append(ts, scaleByRMS[P]("optim.ScaleByRMS", c.decay, c.eps))
	}
	ts = append(ts, scaleByLR[P]("optim.ScaleByLearningRate", lr))
	if c.hasMomentum {
		ts = append(ts, trace[P]("optim.Trace", c.momentum, c.nesterov))
	}
	return alias(op, Chain(ts...))
}

// Adagrad returns Adagrad with learning rate lr, a float64 or a Schedule
// (optax.adagrad): with s ← s + g², the update is -lr·g/√(s + eps), and 0
// where s is 0. Defaults (optax's): InitialAccumulator(0.1), Eps(1e-7)
// inside the root; torch's are 0 and 1e-10 outside it. Options:
// InitialAccumulator, Eps. It panics with *peel.Error for invalid
// hyperparameters.
func Adagrad[P any, L LearningRate](lr L, opts ...Option) Transformation[P] {
	const op = "optim.Adagrad"
	defer peel.Annotate(op)
	c := configure(op, config{initAcc: 0.1, eps: 1e-7}, opts, "InitialAccumulator", "Eps")
	return alias(op, Chain(scaleByRSS[P]("optim.ScaleByRSS", c.initAcc, c.eps), scaleByLR[P]("optim.ScaleByLearningRate", lr)))
}

// Lion returns the Lion optimizer with learning rate lr, a float64 or a
// Schedule (optax.lion): the update is -lr·(sign(b1·m + (1-b1)·g) +
// wd·param), then m ← b2·m + (1-b2)·g; Update needs params. Defaults
// (optax's): Betas(0.9, 0.99), WeightDecay(1e-3). Options: Betas,
// WeightDecay, WeightDecayMask. It panics with *peel.Error for invalid
// hyperparameters.
func Lion[P any, L LearningRate](lr L, opts ...Option) Transformation[P] {
	const op = "optim.Lion"
	defer peel.Annotate(op)
	c := configure(op, config{b1: 0.9, b2: 0.99, weightDecay: 1e-3}, opts, "Betas", "WeightDecay", "WeightDecayMask")
	return alias(op, Chain(
		scaleByLion[P]("optim.ScaleByLion", c.b1, c.b2),
		addDecayed[P]("optim.AddDecayedWeights", c.weightDecay, c.decayMask),
		scaleByLR[P]("optim.ScaleByLearningRate", lr)))
}
