package optim_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/optim"
)

func TestErrors(t *testing.T) {
	p := newModel(quadratic(1).x0)
	short := model{Layers: p.Layers[:1], Extra: p.Extra, Head: p.Head}
	wrongShape := newModel(quadratic(1).x0)
	wrongShape.Head.V = peel.Zeros(peel.Float64, 1) // broadcasts, so only the shape check catches it
	adam := optim.Adam[model](0.1)
	adamState := adam.Init(p)
	sgd := optim.SGD[model](0.1, optim.Momentum(0.9))
	vec := optim.Schedule(func(c *peel.Tensor) *peel.Tensor { return peel.Zeros(peel.Float64, 2) })
	cases := []struct {
		name    string
		f       func()
		op, msg string // the outermost op of the error, and a part of its message
	}{
		{"grads of another structure", func() { adam.Update(short, adamState, short) }, "optim.Adam", "differ in structure"},
		{"grads of another shape", func() { adam.Update(wrongShape, adamState, p) }, "optim.Adam", "leaf .Head.V of grads is f64[1] but the state's Mu has f64[4]"},
		{"another optimizer's state", func() { adam.Update(p, sgd.Init(p), p) }, "optim.Adam", "not the optim.AdamState[github.com/peel-ml/peel/optim_test.model]"},
		{"a chain state of another length", func() { adam.Update(p, optim.ChainState{adamState.(optim.ChainState)[0]}, p) }, "optim.Adam", "holds 1 states, but the chain has 2"},
		{"a nil state", func() { sgd.Update(p, nil, p) }, "optim.SGD", "the state is nil"},
		{"a corrupted count", func() {
			s := adamState.(optim.ChainState)
			a := s[0].(optim.AdamState[model])
			a.Count = peel.Scalar(1.0)
			adam.Update(p, optim.ChainState{a, s[1]}, p)
		}, "optim.Adam", "Count must be an i64 scalar, not f64[]"},
		{"AdamW without params", func() {
			w := optim.AdamW[model](0.1)
			w.Update(p, w.Init(p), model{})
		}, "optim.AdamW", "grads and params differ in structure"},
		{"Lion with params of another structure", func() {
			l := optim.Lion[model](0.1)
			l.Update(p, l.Init(p), short)
		}, "optim.Lion", "grads and params differ in structure"},
		{"ApplyUpdates of another structure", func() { optim.ApplyUpdates(p, short) }, "optim.ApplyUpdates", "params and updates differ in structure"},
		{"ApplyUpdates of another shape", func() { optim.ApplyUpdates(p, wrongShape) }, "optim.ApplyUpdates", "a parameter is f64[4] but its update is f64[1]"},
		{"Init of an invalid tree", func() { optim.Adam[map[int]*peel.Tensor](0.1).Init(map[int]*peel.Tensor{1: peel.Scalar(1.0)}) }, "optim.Adam", "map with int keys"},
		{"an option another optimizer takes", func() { optim.SGD[model](0.1, optim.Betas(0.9, 0.99)) }, "optim.SGD", "option Betas does not apply to optim.SGD, which takes the options Momentum, Nesterov"},
		{"a nil weight-decay mask", func() { optim.AdamW[model](0.1, optim.WeightDecayMask(nil)) }, "optim.AdamW", "mask is nil"},
		{"the zero Option", func() { optim.Adam[model](0.1, optim.Option{}) }, "optim.Adam", "zero Option"},
		{"Nesterov without momentum", func() { optim.SGD[model](0.1, optim.Nesterov()) }, "optim.SGD", "Nesterov needs a Momentum"},
		{"b1 = 1", func() { optim.Adam[model](0.1, optim.Betas(1, 0.9)) }, "optim.Adam", "b1 is 1; it must be in [0, 1)"},
		{"a NaN momentum", func() { optim.SGD[model](0.1, optim.Momentum(math.NaN())) }, "optim.SGD", "momentum is NaN"},
		{"a negative eps", func() { optim.RMSProp[model](0.1, optim.Eps(-1)) }, "optim.RMSProp", "eps is -1; it must be finite and >= 0"},
		{"a negative weight decay", func() { optim.Lion[model](0.1, optim.WeightDecay(-1)) }, "optim.Lion", "weight decay is -1"},
		{"an infinite learning rate", func() { optim.Adagrad[model](math.Inf(1)) }, "optim.Adagrad", "learning rate is +Inf"},
		{"a nil schedule", func() { optim.Adam[model](optim.Schedule(nil)) }, "optim.Adam", "schedule is nil"},
		{"a schedule of a vector", func() {
			o := optim.SGD[model](vec)
			o.Update(p, o.Init(p), p)
		}, "optim.SGD", "the schedule must return a scalar, not f64[2]"},
		{"ClipByGlobalNorm(0)", func() { optim.ClipByGlobalNorm[model](0) }, "optim.ClipByGlobalNorm", "must be finite and > 0"},
		{"Clip(-1)", func() { optim.Clip[model](-1) }, "optim.Clip", "must be >= 0"},
		{"a nil transformation in a chain", func() { optim.Chain[model](adam, nil) }, "optim.Chain", "transformation 1 is nil"},
		{"New without functions", func() { optim.New[model]("x", nil, nil) }, "optim.New", "must not be nil"},
		{"CosineDecay of no steps", func() { optim.CosineDecay(0.1, 0, 0) }, "optim.CosineDecay", "decay steps is 0"},
		{"ExponentialDecay of a zero rate", func() { optim.ExponentialDecay(1, 10, 0) }, "optim.ExponentialDecay", "decay rate is 0"},
		{"ExponentialDecay of no steps", func() { optim.ExponentialDecay(1, 0, 0.5, optim.Staircase()) }, "optim.ExponentialDecay", "transition steps is 0"},
		{"LinearDecay of a NaN", func() { optim.LinearDecay(math.NaN(), 0, 10) }, "optim.LinearDecay", "init is NaN"},
		{"PolynomialDecay of negative steps", func() { optim.PolynomialDecay(1, 0, 2, -3) }, "optim.PolynomialDecay", "steps is -3"},
		{"WarmupCosineDecay, decay within the warmup", func() { optim.WarmupCosineDecay(0, 1, 10, 10, 0) }, "optim.WarmupCosineDecay", "must exceed warmupSteps"},
		{"Join of too few boundaries", func() { optim.Join([]optim.Schedule{optim.Constant(1), optim.Constant(2)}, nil) }, "optim.Join", "2 schedules need 1 boundaries, got 0"},
		{"Join of decreasing boundaries", func() {
			optim.Join([]optim.Schedule{optim.Constant(1), optim.Constant(2), optim.Constant(3)}, []int{5, 5})
		}, "optim.Join", "not increasing"},
		{"Warmup of nothing", func() { optim.Warmup(0, 5, nil) }, "optim.Warmup", "is nil"},
		{"a schedule of a float count", func() { optim.CosineDecay(1, 10, 0)(peel.Scalar(1.5)) }, "optim.CosineDecay", "count must be an i64 tensor, not f64[]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := peel.Catch(c.f)
			var e *peel.Error
			if !errors.As(err, &e) {
				t.Fatalf("no *peel.Error: %v", err)
			}
			if len(e.Ops) == 0 || e.Ops[len(e.Ops)-1] != c.op {
				t.Errorf("the error's ops are %v, want %s outermost: %v", e.Ops, c.op, err)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("the error %q does not say %q", err, c.msg)
			}
		})
	}
}
