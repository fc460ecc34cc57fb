package main

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/reftest"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/transforms"
)

// initial are the example's starting hyperparameters.
func initial() Params {
	return Params{
		Amplitude:   peel.Zeros(peel.Float64, 1, 1),
		Noise:       peel.Full(peel.Float64, -5.0, 1, 1),
		Lengthscale: peel.Zeros(peel.Float64, 1, 1),
	}
}

// TestLikelihoodAgainstTorch checks the negative log marginal likelihood
// and its gradient (compiled, as gradFun, and not) at the initial
// hyperparameters against torch.autograd's (testdata/gen_reference.py).
func TestLikelihoodAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	x, y, _ := data()
	reftest.Close(t, "nlml0", marginalLikelihood(initial(), x, y), ref["nlml0"], 1e-12, 0)
	reftest.CloseTree(t, "grad0", gradFun(initial(), x, y), ref, 1e-12, 0)
	reftest.CloseTree(t, "grad0", transforms.Grad3(marginalLikelihood)(initial(), x, y), ref, 1e-12, 0)
}

// TestGradFiniteDifferences checks the gradient against central
// differences of the likelihood, one hyperparameter at a time.
func TestGradFiniteDifferences(t *testing.T) {
	x, y, _ := data()
	for _, p := range []Params{initial(), train(200)} {
		grads := gradFun(p, x, y)
		at := func(field func(*Params) **peel.Tensor, h float64) float64 {
			q := p
			*field(&q) = (*field(&p)).Add(h)
			return marginalLikelihood(q, x, y).Item()
		}
		for name, field := range map[string]func(*Params) **peel.Tensor{
			"Amplitude":   func(q *Params) **peel.Tensor { return &q.Amplitude },
			"Noise":       func(q *Params) **peel.Tensor { return &q.Noise },
			"Lengthscale": func(q *Params) **peel.Tensor { return &q.Lengthscale },
		} {
			const h = 1e-5
			fd := (at(field, h) - at(field, -h)) / (2 * h)
			got := (*field(&grads)).Item()
			if math.Abs(got-fd) > 1e-7*(1+math.Abs(fd)) {
				t.Errorf("d nlml / d %s = %.12g, central difference %.12g", name, got, fd)
			}
		}
	}
}

// TestTrainAgainstTorch checks the hyperparameters after the example's
// 1000 Adam steps, the likelihood there, and the posterior mean and
// covariance at the test points against torch.optim.Adam's run.
func TestTrainAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	params := train(1000)
	reftest.CloseTree(t, "trained", params, ref, 1e-12, 0)
	x, y, xtest := data()
	reftest.Close(t, "nlml_trained", marginalLikelihood(params, x, y), ref["nlml_trained"], 1e-11, 0)
	mu, variance := gp(params, x, y, xtest)
	reftest.Close(t, "mu", mu, ref["mu"], 1e-10, 1e-12)
	reftest.Close(t, "var_diag", peel.Diagonal(variance), ref["var_diag"], 1e-10, 1e-12)
	var every20 []float64
	v := variance.Float64s()
	for i := 0; i < 200; i += 20 {
		for j := 0; j < 200; j += 20 {
			every20 = append(every20, v[i*200+j])
		}
	}
	reftest.Close(t, "var_every20", peel.FromFloat64s(every20, 10, 10), ref["var_every20"], 1e-10, 1e-12)
	if nlml0 := ref["nlml0"].Data[0]; !(ref["nlml_trained"].Data[0] < nlml0-5) {
		t.Errorf("the fit lowered the negative log marginal likelihood only from %g to %g", nlml0, ref["nlml_trained"].Data[0])
	}
}

// BenchmarkTutorial times the fit and the posterior as main computes them,
// without the printing: 100 steps (main runs 1000) from the initial
// hyperparameters, each the compiled gradFun of the negative log marginal
// likelihood and an optim.Adam update at 0.01, then the posterior mean and
// covariance, at main's sizes, in float64: 7 training points, 200 test
// points. gradFun is compiled before the timing starts.
// testdata/time_torch.py times 100 torch.optim.Adam steps on the same
// likelihood and the posterior.
func BenchmarkTutorial(b *testing.B) {
	const steps = 100
	x, y, xtest := data()
	gradFun(initial(), x, y) // compile
	opt := optim.Adam[Params](0.01)
	for b.Loop() {
		params := initial()
		optState := opt.Init(params)
		for range steps {
			updates, next := opt.Update(gradFun(params, x, y), optState, params)
			params, optState = optim.ApplyUpdates(params, updates), next
		}
		gp(params, x, y, xtest)
	}
}
