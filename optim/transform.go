package optim

import (
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/treeimpl"
	"github.com/peel-ml/peel/tree"
)

// map1 applies f to every leaf of t.
func map1[P any](t P, f func(x *peel.Tensor) *peel.Tensor) P { return tree.Map(f, t) }

// map2 applies f to the corresponding leaves of a and b.
func map2[P any](a, b P, f func(x, y *peel.Tensor) *peel.Tensor) P {
	return tree.Map2(f, a, b)
}

// map3 applies f to the corresponding leaves of a, b and c.
func map3[P any](a, b, c P, f func(x, y, z *peel.Tensor) *peel.Tensor) P {
	return tree.Map3(f, a, b, c)
}

// ema is the moment update b·m + (1-b)·x.
func ema(m, x *peel.Tensor, b float64) *peel.Tensor {
	return peel.Add(peel.Mul(m, b), peel.Mul(x, 1-b))
}

// ScaleByLearningRate returns the transformation that scales updates by
// minus the learning rate lr (optax.scale_by_learning_rate): a constant
// float64 (state EmptyState) or a Schedule evaluated at the number of
// updates before this one (state CountState), cast to each leaf's dtype.
// It panics with *peel.Error if a constant lr is not finite or a
// schedule is nil.
func ScaleByLearningRate[P any, L LearningRate](lr L) Transformation[P] {
	return scaleByLR[P]("optim.ScaleByLearningRate", lr)
}

func scaleByLR[P any, L LearningRate](op string, lr L) Transformation[P] {
	switch v := any(lr).(type) {
	case float64:
		checkFinite(op, "the learning rate", v)
		return named(op,
			func(P) State { return EmptyState{} },
			func(grads P, state State, _ P) (P, State) {
				stateAs[EmptyState](op, state)
				return map1(grads, func(g *peel.Tensor) *peel.Tensor { return peel.Mul(g, -v) }), state
			})
	case Schedule:
		if v == nil {
			treeimpl.Errorf(op, "the learning-rate schedule is nil")
		}
		return named(op,
			func(P) State { return CountState{Count: zeroCount()} },
			func(grads P, state State, _ P) (P, State) {
				s := stateAs[CountState](op, state)
				checkCount(op, s.Count)
				lr := v(s.Count)
				if lr == nil || lr.Rank() != 0 {
					treeimpl.Errorf(op, "the schedule must return a scalar, not %s", describeTensor(lr))
				}
				neg := peel.Neg(lr)
				u := map1(grads, func(g *peel.Tensor) *peel.Tensor { return peel.Mul(g, peel.AsType(neg, g.DType())) })
				return u, CountState{Count: peel.Add(s.Count, 1)}
			})
	}
	panic("unreachable")
}

func describeTensor(t *peel.Tensor) string {
	if t == nil {
		return "a nil tensor"
	}
	return t.TypeString()
}

// CountState is the state of a transformation that counts its updates
// (ScaleByLearningRate with a Schedule): Count is an int64 scalar.
type CountState struct{ Count *peel.Tensor }

// ClipByGlobalNorm returns the stateless transformation that scales the
// updates by maxNorm/‖u‖ when their global norm ‖u‖ (the 2-norm of all
// leaves together) is at least maxNorm, and leaves them as they are below
// it (optax.clip_by_global_norm). The norm is computed in the leaves'
// promoted dtype; the selection is differentiable everywhere (no NaN
// from a zero norm). It panics with *peel.Error unless maxNorm is finite
// and > 0.
func ClipByGlobalNorm[P any](maxNorm float64) Transformation[P] {
	return clipByGlobalNorm[P]("optim.ClipByGlobalNorm", maxNorm, nil)
}

// ClipByGlobalNormOver is ClipByGlobalNorm for updates held in parts by
// several holders, each with its own P (the shards of fully sharded
// training, ddp.Shard): sumOver takes this holder's sum of squares, a
// scalar, and returns the sum over every holder (an all-reduce), so each
// scales its part by the norm of the whole. ClipByGlobalNorm is
// ClipByGlobalNormOver with no other holder. It panics with *peel.Error
// unless maxNorm is finite and > 0, or when sumOver is nil.
func ClipByGlobalNormOver[P any](maxNorm float64, sumOver func(sumSq *peel.Tensor) *peel.Tensor) Transformation[P] {
	const op = "optim.ClipByGlobalNormOver"
	if sumOver == nil {
		treeimpl.Errorf(op, "sumOver is nil")
	}
	return clipByGlobalNorm[P](op, maxNorm, sumOver)
}

// clipByGlobalNorm is ClipByGlobalNorm named op, with the sum of squares
// combined by sumOver when it is not nil.
func clipByGlobalNorm[P any](op string, maxNorm float64, sumOver func(*peel.Tensor) *peel.Tensor) Transformation[P] {
	if !(maxNorm > 0) || math.IsInf(maxNorm, 0) {
		treeimpl.Errorf(op, "the maximum norm is %v; it must be finite and > 0", maxNorm)
	}
	return named(op,
		func(P) State { return EmptyState{} },
		func(grads P, state State, _ P) (P, State) {
			stateAs[EmptyState](op, state)
			leaves := tree.Leaves(grads)
			if len(leaves) == 0 {
				return grads, state
			}
			dt := leaves[0].DType()
			for _, l := range leaves {
				dt = peel.PromoteTypes(dt, l.DType())
			}
			var sq *peel.Tensor
			for _, l := range leaves {
				s := peel.Sum(peel.Square(peel.AsType(l, dt)))
				if sq == nil {
					sq = s
				} else {
					sq = peel.Add(sq, s)
				}
			}
			if sumOver != nil {
				sq = sumOver(sq)
			}
			// A zero norm has an infinite derivative, which would meet a
			// zero cotangent (NaN): the root is taken of 1 there instead.
			pos := peel.Greater(sq, 0.0)
			norm := peel.Where(pos, peel.Sqrt(peel.Where(pos, sq, 1.0)), 0.0)
			// factor is 1 below maxNorm, maxNorm/norm at or above it; the
			// denominator is at least maxNorm, so neither branch (nor its
			// derivative) divides by zero.
			factor := peel.Where(peel.Less(norm, maxNorm), 1.0, peel.Div(maxNorm, peel.Maximum(norm, maxNorm)))
			u := map1(grads, func(g *peel.Tensor) *peel.Tensor { return peel.Mul(g, peel.AsType(factor, g.DType())) })
			return u, state
		})
}

// Clip returns the stateless transformation that clips every element of
// the updates to [-maxAbs, maxAbs] (optax.clip; NaN stays NaN). It panics
// with *peel.Error unless maxAbs is >= 0 and not NaN.
func Clip[P any](maxAbs float64) Transformation[P] {
	const op = "optim.Clip"
	if !(maxAbs >= 0) {
		treeimpl.Errorf(op, "the maximum absolute value is %v; it must be >= 0", maxAbs)
	}
	return named(op,
		func(P) State { return EmptyState{} },
		func(grads P, state State, _ P) (P, State) {
			stateAs[EmptyState](op, state)
			return map1(grads, func(g *peel.Tensor) *peel.Tensor { return peel.Clip(g, -maxAbs, maxAbs) }), state
		})
}

// AddDecayedWeights returns the stateless transformation that adds
// wd·params to the updates (optax.add_decayed_weights): decoupled weight
// decay when it comes after the scaling and before ScaleByLearningRate.
// Its Update needs params, of the updates' structure and shapes. Options:
// WeightDecayMask. It panics with *peel.Error if wd is not finite.
func AddDecayedWeights[P any](wd float64, opts ...Option) Transformation[P] {
	const op = "optim.AddDecayedWeights"
	c := configure(op, config{weightDecay: wd}, opts, "WeightDecayMask")
	return addDecayed[P](op, c.weightDecay, c.decayMask)
}

func addDecayed[P any](op string, wd float64, mask func(path string) bool) Transformation[P] {
	checkFinite(op, "the weight decay", wd)
	return named(op,
		func(P) State { return EmptyState{} },
		func(grads P, state State, params P) (P, State) {
			stateAs[EmptyState](op, state)
			checkMoment(op, "params", grads, params)
			gl, pl := tree.Leaves(grads), tree.Leaves(params)
			var paths []string
			if mask != nil {
				paths = tree.Paths(params)
			}
			out := make([]*peel.Tensor, len(gl))
			for i, g := range gl {
				if mask != nil && !mask(paths[i]) {
					out[i] = g
					continue
				}
				out[i] = peel.Add(g, peel.AsType(peel.Mul(pl[i], wd), g.DType()))
			}
			return tree.Unflatten(grads, out), state
		})
}

// TraceState is the state of Trace: the trace (momentum buffer) of past
// updates.
type TraceState[P any] struct{ Trace P }

// Trace returns the transformation keeping a trace of past updates,
// t ← g + decay·t, and returning t, or g + decay·t with Nesterov()
// (optax.trace; torch's momentum without dampening). Options: Nesterov.
// It panics with *peel.Error unless decay is in [0, 1].
func Trace[P any](decay float64, opts ...Option) Transformation[P] {
	const op = "optim.Trace"
	c := configure(op, config{momentum: decay, hasMomentum: true}, opts, "Nesterov")
	return trace[P](op, c.momentum, c.nesterov)
}

func trace[P any](op string, decay float64, nesterov bool) Transformation[P] {
	return named(op,
		func(params P) State { return TraceState[P]{Trace: tree.ZerosLike(params)} },
		func(grads P, state State, _ P) (P, State) {
			s := stateAs[TraceState[P]](op, state)
			checkMoment(op, "the state's Trace", grads, s.Trace)
			t := map2(grads, s.Trace, func(g, t *peel.Tensor) *peel.Tensor { return peel.Add(g, peel.Mul(t, decay)) })
			if !nesterov {
				return t, TraceState[P]{Trace: t}
			}
			u := map2(grads, t, func(g, t *peel.Tensor) *peel.Tensor { return peel.Add(g, peel.Mul(t, decay)) })
			return u, TraceState[P]{Trace: t}
		})
}

// AdamState is the state of ScaleByAdam (and of Adam, AdamW): Count is
// the number of updates so far (an int64 scalar), Mu and Nu the first and
// second moment estimates.
type AdamState[P any] struct {
	Count  *peel.Tensor
	Mu, Nu P
}

// ScaleByAdam returns the transformation that scales updates as Adam
// does, before the learning rate (optax.scale_by_adam): with
// m ← b1·m + (1-b1)·g, v ← b2·v + (1-b2)·g² and t the step (from 1), the
// update is m̂/(√(v̂ + epsRoot) + eps) with m̂ = m/(1-b1^t), v̂ =
// v/(1-b2^t). Defaults: Betas(0.9, 0.999), Eps(1e-8), EpsRoot(0).
// Options: Betas, Eps, EpsRoot. It panics with *peel.Error for invalid
// hyperparameters.
func ScaleByAdam[P any](opts ...Option) Transformation[P] {
	const op = "optim.ScaleByAdam"
	c := configure(op, adamDefaults, opts, "Betas", "Eps", "EpsRoot")
	return scaleByAdam[P](op, c)
}

var adamDefaults = config{b1: 0.9, b2: 0.999, eps: 1e-8}

func scaleByAdam[P any](op string, c config) Transformation[P] {
	b1, b2, eps, epsRoot := c.b1, c.b2, c.eps, c.epsRoot
	return named(op,
		func(params P) State {
			return AdamState[P]{Count: zeroCount(), Mu: tree.ZerosLike(params), Nu: tree.ZerosLike(params)}
		},
		func(grads P, state State, _ P) (P, State) {
			s := stateAs[AdamState[P]](op, state)
			checkCount(op, s.Count)
			checkMoment(op, "the state's Mu", grads, s.Mu)
			checkMoment(op, "the state's Nu", grads, s.Nu)
			mu := map2(s.Mu, grads, func(m, g *peel.Tensor) *peel.Tensor { return ema(m, g, b1) })
			nu := map2(s.Nu, grads, func(v, g *peel.Tensor) *peel.Tensor { return ema(v, peel.Square(g), b2) })
			count := peel.Add(s.Count, 1)
			u := map2(mu, nu, func(m, v *peel.Tensor) *peel.Tensor {
				t := peel.AsType(count, m.DType())
				mh := peel.Div(m, peel.Sub(1.0, peel.Pow(b1, t)))
				vh := peel.Div(v, peel.Sub(1.0, peel.Pow(b2, t)))
				if epsRoot != 0 {
					vh = peel.Add(vh, epsRoot)
				}
				return peel.Div(mh, peel.Add(peel.Sqrt(vh), eps))
			})
			return u, AdamState[P]{Count: count, Mu: mu, Nu: nu}
		})
}

// RMSState is the state of RMSProp: Nu is the moving average of squared
// gradients.
type RMSState[P any] struct{ Nu P }

// CenteredRMSState is the state of RMSProp with Centered: Mu and Nu are
// the moving averages of the gradients and of their squares.
type CenteredRMSState[P any] struct{ Mu, Nu P }

func scaleByRMS[P any](op string, decay, eps float64) Transformation[P] {
	return named(op,
		func(params P) State { return RMSState[P]{Nu: tree.ZerosLike(params)} },
		func(grads P, state State, _ P) (P, State) {
			s := stateAs[RMSState[P]](op, state)
			checkMoment(op, "the state's Nu", grads, s.Nu)
			nu := map2(s.Nu, grads, func(v, g *peel.Tensor) *peel.Tensor { return ema(v, peel.Square(g), decay) })
			u := map2(grads, nu, func(g, v *peel.Tensor) *peel.Tensor { return peel.Mul(g, peel.Rsqrt(peel.Add(v, eps))) })
			return u, RMSState[P]{Nu: nu}
		})
}

func scaleByStddev[P any](op string, decay, eps float64) Transformation[P] {
	return named(op,
		func(params P) State {
			return CenteredRMSState[P]{Mu: tree.ZerosLike(params), Nu: tree.ZerosLike(params)}
		},
		func(grads P, state State, _ P) (P, State) {
			s := stateAs[CenteredRMSState[P]](op, state)
			checkMoment(op, "the state's Mu", grads, s.Mu)
			checkMoment(op, "the state's Nu", grads, s.Nu)
			mu := map2(s.Mu, grads, func(m, g *peel.Tensor) *peel.Tensor { return ema(m, g, decay) })
			nu := map2(s.Nu, grads, func(v, g *peel.Tensor) *peel.Tensor { return ema(v, peel.Square(g), decay) })
			u := map3(grads, mu, nu, func(g, m, v *peel.Tensor) *peel.Tensor {
				return peel.Mul(g, peel.Rsqrt(peel.Add(peel.Sub(v, peel.Square(m)), eps)))
			})
			return u, CenteredRMSState[P]{Mu: mu, Nu: nu}
		})
}

// AdagradState is the state of Adagrad: the sum of squared gradients.
type AdagradState[P any] struct{ SumOfSquares P }

func scaleByRSS[P any](op string, initAcc, eps float64) Transformation[P] {
	return named(op,
		func(params P) State {
			return AdagradState[P]{SumOfSquares: map1(params, func(p *peel.Tensor) *peel.Tensor { return peel.FullLike(p, initAcc) })}
		},
		func(grads P, state State, _ P) (P, State) {
			s := stateAs[AdagradState[P]](op, state)
			checkMoment(op, "the state's SumOfSquares", grads, s.SumOfSquares)
			sum := map2(s.SumOfSquares, grads, func(a, g *peel.Tensor) *peel.Tensor { return peel.Add(a, peel.Square(g)) })
			u := map2(grads, sum, func(g, a *peel.Tensor) *peel.Tensor {
				// A zero sum (only with a zero initial accumulator and
				// zero gradients so far) gives a zero update, not NaN;
				// the guarded operand keeps the derivative finite too.
				pos := peel.Greater(a, 0.0)
				return peel.Where(pos, peel.Mul(g, peel.Rsqrt(peel.Add(peel.Where(pos, a, 1.0), eps))), 0.0)
			})
			return u, AdagradState[P]{SumOfSquares: sum}
		})
}

// LionState is the state of Lion: Mu is the momentum.
type LionState[P any] struct{ Mu P }

func scaleByLion[P any](op string, b1, b2 float64) Transformation[P] {
	return named(op,
		func(params P) State { return LionState[P]{Mu: tree.ZerosLike(params)} },
		func(grads P, state State, _ P) (P, State) {
			s := stateAs[LionState[P]](op, state)
			checkMoment(op, "the state's Mu", grads, s.Mu)
			u := map2(grads, s.Mu, func(g, m *peel.Tensor) *peel.Tensor { return peel.Sign(ema(m, g, b1)) })
			mu := map2(s.Mu, grads, func(m, g *peel.Tensor) *peel.Tensor { return ema(m, g, b2) })
			return u, LionState[P]{Mu: mu}
		})
}
