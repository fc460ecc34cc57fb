package optim

import (
	"strings"

	"github.com/peel-ml/peel/internal/treeimpl"
)

// An Option sets a hyperparameter of an optimizer (SGD, Adam, AdamW,
// RMSProp, Adagrad, Lion) or of ScaleByAdam and Trace, or of
// AddDecayedWeights. Each documents the options it takes and their
// defaults; giving it another one, or the zero Option, panics with
// *peel.Error.
type Option struct {
	name  string
	apply func(*config)
}

type config struct {
	momentum    float64
	hasMomentum bool
	nesterov    bool
	b1, b2      float64
	eps         float64
	epsRoot     float64
	weightDecay float64
	decay       float64
	centered    bool
	initAcc     float64
	decayMask   func(path string) bool
}

// Momentum sets the momentum (decay of the trace of past updates) of SGD
// and RMSProp (default: none, no trace is kept). It must be in [0, 1].
func Momentum(m float64) Option {
	return Option{"Momentum", func(c *config) { c.momentum, c.hasMomentum = m, true }}
}

// Nesterov makes the momentum of SGD, RMSProp and Trace Nesterov's:
// the update is g + m·trace instead of the trace.
func Nesterov() Option { return Option{"Nesterov", func(c *config) { c.nesterov = true }} }

// Betas sets the decay rates of the first and second moment estimates of
// Adam, AdamW and ScaleByAdam (defaults 0.9 and 0.999), and Lion's b1 (the
// interpolation of momentum and gradient in the sign) and b2 (the
// momentum's decay) (defaults 0.9 and 0.99). Each must be in [0, 1).
func Betas(b1, b2 float64) Option {
	return Option{"Betas", func(c *config) { c.b1, c.b2 = b1, b2 }}
}

// Eps sets the term added to the denominator: outside the square root in
// Adam, AdamW and ScaleByAdam (default 1e-8), inside it in RMSProp
// (default 1e-8) and Adagrad (default 1e-7). It must be finite and >= 0.
func Eps(eps float64) Option { return Option{"Eps", func(c *config) { c.eps = eps }} }

// EpsRoot sets the term added to the second moment inside the square
// root in Adam, AdamW and ScaleByAdam (default 0): a positive value keeps
// the derivative of an Adam step finite where a gradient is zero, for
// meta-gradients through the step. It must be finite and >= 0.
func EpsRoot(eps float64) Option { return Option{"EpsRoot", func(c *config) { c.epsRoot = eps }} }

// WeightDecay sets the decoupled weight decay of AdamW (default 1e-4, as
// optax; torch's default is 1e-2) and Lion (default 1e-3): the update
// gains wd·param before it is scaled by the learning rate. It must be
// finite and >= 0.
func WeightDecay(wd float64) Option {
	return Option{"WeightDecay", func(c *config) { c.weightDecay = wd }}
}

// WeightDecayMask restricts the weight decay of AdamW, Lion and
// AddDecayedWeights to the parameters whose tree path (as tree.Paths
// writes it: ".Layers[0].W", `["bias"]`) keep returns true for; the
// others are not decayed (optax's mask). Without it every parameter is
// decayed. keep must not be nil.
func WeightDecayMask(keep func(path string) bool) Option {
	return Option{"WeightDecayMask", func(c *config) { c.decayMask = keep }}
}

// Decay sets the decay of RMSProp's average of squared gradients
// (default 0.9, as optax; torch's alpha is 0.99). It must be in [0, 1].
func Decay(d float64) Option { return Option{"Decay", func(c *config) { c.decay = d }} }

// Centered makes RMSProp divide by an estimate of the gradients' standard
// deviation instead of their root mean square.
func Centered() Option { return Option{"Centered", func(c *config) { c.centered = true }} }

// InitialAccumulator sets the initial value of Adagrad's sum of squared
// gradients (default 0.1, as optax; torch's is 0). It must be finite and
// >= 0.
func InitialAccumulator(v float64) Option {
	return Option{"InitialAccumulator", func(c *config) { c.initAcc = v }}
}

// configure applies opts over defaults, panicking with *peel.Error naming
// op for an option not among allowed.
func configure(op string, defaults config, opts []Option, allowed ...string) config {
	c := defaults
	for _, o := range opts {
		if o.apply == nil {
			treeimpl.Errorf(op, "the zero Option is not an option")
		}
		ok := false
		for _, a := range allowed {
			ok = ok || a == o.name
		}
		if !ok {
			takes := "no options"
			if len(allowed) > 0 {
				takes = "the options " + strings.Join(allowed, ", ")
			}
			treeimpl.Errorf(op, "option %s does not apply to %s, which takes %s", o.name, op, takes)
		}
		o.apply(&c)
		if o.name == "WeightDecayMask" && c.decayMask == nil {
			treeimpl.Errorf(op, "the weight-decay mask is nil")
		}
	}
	checkRange(op, "momentum", c.momentum, 0, 1, true)
	checkRange(op, "b1", c.b1, 0, 1, false)
	checkRange(op, "b2", c.b2, 0, 1, false)
	checkRange(op, "decay", c.decay, 0, 1, true)
	checkNonNeg(op, "eps", c.eps)
	checkNonNeg(op, "eps root", c.epsRoot)
	checkNonNeg(op, "weight decay", c.weightDecay)
	checkNonNeg(op, "initial accumulator", c.initAcc)
	return c
}
