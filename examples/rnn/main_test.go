package main

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// TestLossDecreases: training cuts the loss by more than ten times.
func TestLossDecreases(t *testing.T) {
	losses, _ := train(trainIt)
	if first, last := losses[0], losses[len(losses)-1]; !(last < first/10) {
		t.Fatalf("loss went from %v to %v, want a tenth or less", first, last)
	}
}

// TestGradMatchesLoop: Scan's loss and gradient are the Go loop's (the
// same float64 ops per step; the weights' cotangents are summed over
// the steps in another order), at the initial and at trained weights.
func TestGradMatchesLoop(t *testing.T) {
	xs, targets := data()
	_, trained := train(10)
	for _, p := range []Params{initParams(), trained} {
		l, g := transforms.ValueAndGrad(func(p Params) *peel.Tensor { return loss(p, xs, targets) })(p)
		wl, wg := transforms.ValueAndGrad(func(p Params) *peel.Tensor { return loopLoss(p, xs, targets) })(p)
		close(t, "loss", l, wl)
		for _, c := range []struct {
			name      string
			got, want *peel.Tensor
		}{{"Wx", g.Wx, wg.Wx}, {"Wh", g.Wh, wg.Wh}, {"B", g.B, wg.B}, {"Wo", g.Wo, wg.Wo}, {"Bo", g.Bo, wg.Bo}} {
			close(t, "gradient of "+c.name, c.got, c.want)
		}
	}
}

func close(t *testing.T, what string, got, want *peel.Tensor) {
	t.Helper()
	g, w := got.Float64s(), want.Float64s()
	if len(g) != len(w) {
		t.Fatalf("%s: %d values, want %d", what, len(g), len(w))
	}
	for i := range g {
		if math.Abs(g[i]-w[i]) > 1e-10*math.Max(1, math.Abs(w[i])) {
			t.Fatalf("%s: element %d is %v, want %v", what, i, g[i], w[i])
		}
	}
}
