package optim

import (
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/treeimpl"
)

// A Schedule maps a step count (an int64 tensor, a scalar, or one count
// per member under Vmap) to a value of the count's shape, such as a
// learning rate: float64, computed with tensor ops so that it traces,
// vmaps and compiles. ScaleByLearningRate evaluates it at the number of
// updates done before the current one (0 at the first).
type Schedule func(count *peel.Tensor) *peel.Tensor

// LearningRate is a learning rate: a constant float64 or a Schedule.
type LearningRate interface{ float64 | Schedule }

// steps returns count as float64, panicking with *peel.Error naming op if
// it is not an integer tensor.
func steps(op string, count *peel.Tensor) *peel.Tensor {
	if count == nil {
		treeimpl.Errorf(op, "the count is a nil tensor")
	}
	if count.DType() != peel.Int64 {
		treeimpl.Errorf(op, "the count must be an i64 tensor, not %s", count.TypeString())
	}
	return peel.AsType(count, peel.Float64)
}

// Constant returns the schedule whose value is v at every step. It panics
// with *peel.Error if v is not finite.
func Constant(v float64) Schedule {
	const op = "optim.Constant"
	checkFinite(op, "the value", v)
	return func(count *peel.Tensor) *peel.Tensor {
		defer peel.Annotate(op)
		return peel.FullLike(steps(op, count), v)
	}
}

// PolynomialDecay returns the schedule going from init to end over
// transitionSteps steps as (init-end)·(1 - t/transitionSteps)^power + end
// at step t, and end from then on (optax.polynomial_schedule; negative
// counts give init). It panics with *peel.Error if transitionSteps <= 0
// or a value is not finite.
func PolynomialDecay(init, end, power float64, transitionSteps int) Schedule {
	const op = "optim.PolynomialDecay"
	return polynomial(op, init, end, power, transitionSteps)
}

func polynomial(op string, init, end, power float64, n int) Schedule {
	checkFinite(op, "init", init)
	checkFinite(op, "end", end)
	checkFinite(op, "power", power)
	if n <= 0 {
		treeimpl.Errorf(op, "the number of steps is %d; it must be positive", n)
	}
	return func(count *peel.Tensor) *peel.Tensor {
		defer peel.Annotate(op)
		t := peel.Clip(steps(op, count), 0.0, float64(n))
		frac := peel.Sub(1.0, peel.Div(t, float64(n)))
		return peel.Add(peel.Mul(peel.Pow(frac, power), init-end), end)
	}
}

// LinearDecay returns the schedule going linearly from init to end over
// transitionSteps steps, end from then on: PolynomialDecay of power 1
// (optax.linear_schedule). It panics as PolynomialDecay does.
func LinearDecay(init, end float64, transitionSteps int) Schedule {
	return polynomial("optim.LinearDecay", init, end, 1, transitionSteps)
}

// CosineDecay returns the schedule init·((1-alpha)·½(1 + cos(π·t/decaySteps))
// + alpha) at step t <= decaySteps, and init·alpha from then on
// (optax.cosine_decay_schedule with exponent 1). It panics with
// *peel.Error if decaySteps <= 0 or a value is not finite.
func CosineDecay(init float64, decaySteps int, alpha float64) Schedule {
	const op = "optim.CosineDecay"
	return cosine(op, init, decaySteps, alpha)
}

func cosine(op string, init float64, n int, alpha float64) Schedule {
	checkFinite(op, "init", init)
	checkFinite(op, "alpha", alpha)
	if n <= 0 {
		treeimpl.Errorf(op, "the number of decay steps is %d; it must be positive", n)
	}
	return func(count *peel.Tensor) *peel.Tensor {
		defer peel.Annotate(op)
		t := peel.Minimum(steps(op, count), float64(n))
		c := peel.Mul(peel.Add(peel.Cos(peel.Mul(t, math.Pi/float64(n))), 1.0), 0.5)
		return peel.Mul(peel.Add(peel.Mul(c, 1-alpha), alpha), init)
	}
}

// DecayOption configures ExponentialDecay.
type DecayOption func(*decayConfig)

type decayConfig struct {
	staircase bool
	begin     int
	end       float64
	endSet    bool
}

// Staircase floors ExponentialDecay's exponent, so the value drops by
// rate every transitionSteps steps (optax's staircase=True). By default
// the decay is continuous.
func Staircase() DecayOption { return func(c *decayConfig) { c.staircase = true } }

// TransitionBegin holds ExponentialDecay at init for the first n steps
// and starts the decay at step n (optax's transition_begin). The default
// is 0.
func TransitionBegin(n int) DecayOption { return func(c *decayConfig) { c.begin = n } }

// EndValue bounds ExponentialDecay by v: below it when the schedule
// decays (rate < 1), above it when it grows (optax's end_value). By
// default the schedule is unbounded.
func EndValue(v float64) DecayOption { return func(c *decayConfig) { c.end, c.endSet = v, true } }

// ExponentialDecay returns the schedule init·rate^((t-begin)/transitionSteps)
// at step t >= begin, and init before (optax.exponential_decay), begin
// being TransitionBegin's (0 by default). Options: Staircase,
// TransitionBegin, EndValue. It panics with *peel.Error if
// transitionSteps <= 0, rate <= 0, TransitionBegin is negative or a value
// is not finite.
func ExponentialDecay(init float64, transitionSteps int, rate float64, opts ...DecayOption) Schedule {
	const op = "optim.ExponentialDecay"
	var c decayConfig
	for _, o := range opts {
		o(&c)
	}
	checkFinite(op, "init", init)
	if c.endSet {
		checkFinite(op, "end value", c.end)
	}
	if !(rate > 0) || math.IsInf(rate, 0) {
		treeimpl.Errorf(op, "the decay rate is %v; it must be finite and > 0", rate)
	}
	if transitionSteps <= 0 {
		treeimpl.Errorf(op, "the number of transition steps is %d; it must be positive", transitionSteps)
	}
	if c.begin < 0 {
		treeimpl.Errorf(op, "TransitionBegin is %d; it must be >= 0", c.begin)
	}
	return func(count *peel.Tensor) *peel.Tensor {
		defer peel.Annotate(op)
		t := peel.Maximum(peel.Sub(steps(op, count), float64(c.begin)), 0.0)
		e := peel.Div(t, float64(transitionSteps))
		if c.staircase {
			e = peel.Floor(e)
		}
		v := peel.Mul(peel.Pow(rate, e), init)
		switch {
		case c.endSet && rate < 1:
			v = peel.Maximum(v, c.end)
		case c.endSet && rate > 1:
			v = peel.Minimum(v, c.end)
		}
		return v
	}
}

// WarmupCosineDecay returns the schedule rising linearly from init to
// peak over warmupSteps steps, then decaying as a cosine from peak to end
// over the decaySteps-warmupSteps steps left, and end from then on
// (optax.warmup_cosine_decay_schedule: decaySteps counts the warmup). It
// panics with *peel.Error if warmupSteps <= 0, decaySteps <= warmupSteps
// or a value is not finite.
func WarmupCosineDecay(init, peak float64, warmupSteps, decaySteps int, end float64) Schedule {
	const op = "optim.WarmupCosineDecay"
	checkFinite(op, "peak", peak)
	checkFinite(op, "end", end)
	if decaySteps <= warmupSteps {
		treeimpl.Errorf(op, "decaySteps (%d) must exceed warmupSteps (%d): it counts the warmup", decaySteps, warmupSteps)
	}
	alpha := 0.0
	if peak != 0 {
		alpha = end / peak
	}
	return join(op, []Schedule{
		polynomial(op, init, peak, 1, warmupSteps),
		cosine(op, peak, decaySteps-warmupSteps, alpha),
	}, []int{warmupSteps})
}

// Join returns the schedule that follows schedules[0] up to boundaries[0],
// then schedules[1], and so on: from boundaries[i-1] on, schedules[i] is
// evaluated at the count minus boundaries[i-1] (optax.join_schedules). It
// panics with *peel.Error if there is not one boundary fewer than
// schedules, a schedule is nil, or the boundaries are not increasing.
func Join(schedules []Schedule, boundaries []int) Schedule {
	return join("optim.Join", schedules, boundaries)
}

func join(op string, schedules []Schedule, boundaries []int) Schedule {
	if len(schedules) == 0 || len(boundaries) != len(schedules)-1 {
		treeimpl.Errorf(op, "%d schedules need %d boundaries, got %d", len(schedules), max(len(schedules)-1, 0), len(boundaries))
	}
	for i, s := range schedules {
		if s == nil {
			treeimpl.Errorf(op, "schedule %d is nil", i)
		}
	}
	for i := 1; i < len(boundaries); i++ {
		if boundaries[i] <= boundaries[i-1] {
			treeimpl.Errorf(op, "the boundaries %v are not increasing", boundaries)
		}
	}
	schedules = append([]Schedule(nil), schedules...)
	boundaries = append([]int(nil), boundaries...)
	return func(count *peel.Tensor) *peel.Tensor {
		defer peel.Annotate(op)
		steps(op, count)
		out := schedules[0](count)
		for i, b := range boundaries {
			out = peel.Where(peel.Less(count, b), out, schedules[i+1](peel.Sub(count, b)))
		}
		return out
	}
}

// Warmup returns the schedule rising linearly from init to then's first
// value over steps steps, then following then shifted by steps
// (then(count - steps)): Join(LinearDecay(init, then(0), steps), then). It
// panics with *peel.Error if steps <= 0, init is not finite or then is
// nil.
func Warmup(init float64, steps int, then Schedule) Schedule {
	const op = "optim.Warmup"
	checkFinite(op, "init", init)
	if steps <= 0 {
		treeimpl.Errorf(op, "the number of warmup steps is %d; it must be positive", steps)
	}
	if then == nil {
		treeimpl.Errorf(op, "the schedule after the warmup is nil")
	}
	rise := func(count *peel.Tensor) *peel.Tensor {
		peak := then(peel.ZerosLike(count))
		t := peel.Div(peel.Clip(peel.AsType(count, peel.Float64), 0.0, float64(steps)), float64(steps))
		return peel.Add(init, peel.Mul(t, peel.Sub(peak, init)))
	}
	return join(op, []Schedule{rise, then}, []int{steps})
}
