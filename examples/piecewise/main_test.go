package main

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// goLoss and goSlope are the oracle: the loss and its derivative in r,
// the piece chosen by a Go if on the concrete residual.
func goLoss(r float64) float64 {
	switch {
	case r < -delta:
		return delta * (-r - delta/2)
	case r <= delta:
		return r * r / 2
	default:
		return delta*math.Log(1+r-delta) + delta*delta/2
	}
}

func goSlope(r float64) float64 {
	switch {
	case r < -delta:
		return -delta
	case r <= delta:
		return r
	default:
		return delta / (1 + r - delta)
	}
}

// residuals computes each sample's r in Go.
func residuals(w *peel.Tensor, b Sample) []float64 {
	wv, xv, yv := w.Float64s(), b.X.Float64s(), b.Y.Float64s()
	r := make([]float64, len(yv))
	for i := range r {
		for j, wj := range wv {
			r[i] += xv[i*len(wv)+j] * wj
		}
		r[i] -= yv[i]
	}
	return r
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
}

// check compares the per-sample losses and gradients (eager and
// compiled) with the oracle, lane by lane.
func check(t *testing.T, w *peel.Tensor, b Sample) map[int]int {
	t.Helper()
	losses := transforms.Vmap(func(s Sample) *peel.Tensor { return loss(w, s) })(b).Float64s()
	grads := perSampleGrads(w, b)
	compiled := transforms.Compile(func(b Sample) *peel.Tensor { return perSampleGrads(w, b) })(b)
	xv, n := b.X.Float64s(), w.Shape()[0]
	pieces := map[int]int{}
	for i, r := range residuals(w, b) {
		pieces[int(piece(peel.Scalar(r)).Item())]++
		near(t, "loss", losses[i], goLoss(r))
		for j := range n {
			want := goSlope(r) * xv[i*n+j]
			near(t, "gradient", peel.Index(grads, i, j).Item(), want)
			near(t, "compiled gradient", peel.Index(compiled, i, j).Item(), want)
		}
	}
	return pieces
}

// TestAgainstGoIf: the example's batch takes all three pieces, and each
// lane's loss and gradient are the Go if's.
func TestAgainstGoIf(t *testing.T) {
	w, b := data()
	pieces := check(t, w, b)
	for k := range branches {
		if pieces[k] == 0 {
			t.Fatalf("no sample takes piece %d (%v): the batch does not test it", k, pieces)
		}
	}
}

// TestBoundaries: residuals exactly at ±δ take the quadratic piece, as
// the Go if does, and just past them the outer pieces.
func TestBoundaries(t *testing.T) {
	w := peel.FromFloat64s([]float64{1, 0, 0})
	rs := []float64{-delta, delta, -delta - 1e-9, delta + 1e-9, 0}
	x := make([]float64, 0, 3*len(rs))
	y := make([]float64, len(rs))
	for i := range rs {
		x = append(x, 0.25, 1, -1)
		y[i] = 0.25 - rs[i] // r = x·w - y
	}
	b := Sample{X: peel.FromFloat64s(x, len(rs), 3), Y: peel.FromFloat64s(y)}
	check(t, w, b)
}
