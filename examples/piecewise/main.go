// Command piecewise computes per-sample gradients of a piecewise loss
// with transforms.Switch under transforms.Vmap(transforms.Grad(...)).
//
// The model is linear, r = x·w - y, and the loss of one sample is a
// Huber-like function of the residual r with three pieces:
//
//	r < -δ:       δ·(-r - δ/2)          (linear: outliers below)
//	-δ ≤ r ≤ δ:   r²/2                  (quadratic)
//	r > δ:        δ·log(1 + r - δ) + δ²/2 (logarithmic: outliers above)
//
// A Go if cannot choose the piece here: under Grad and Vmap, r is a
// traced value, one per lane. Switch traces the three pieces once and
// picks one per sample; under Vmap each lane takes its own branch.
package main

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/transforms"
)

const (
	delta    = 0.5
	nSamples = 8
	nIn      = 3
)

// piece returns which piece r falls in: 0 below -δ, 1 in [-δ, δ], 2
// above δ (an int64 scalar, as Switch takes).
func piece(r *peel.Tensor) *peel.Tensor {
	above := peel.AsType(peel.Greater(r, delta), peel.Int64)
	inside := peel.AsType(peel.GreaterEqual(r, -delta), peel.Int64)
	return peel.Add(above, inside)
}

// branches are the three pieces of the loss, as functions of r.
var branches = []func(r *peel.Tensor) *peel.Tensor{
	func(r *peel.Tensor) *peel.Tensor { return peel.Mul(peel.Sub(peel.Neg(r), delta/2), delta) },
	func(r *peel.Tensor) *peel.Tensor { return peel.Mul(peel.Square(r), 0.5) },
	func(r *peel.Tensor) *peel.Tensor {
		return peel.Add(peel.Mul(peel.Log(peel.Add(peel.Sub(r, delta), 1.0)), delta), delta*delta/2)
	},
}

// Sample is one example.
type Sample struct {
	X *peel.Tensor // [nIn]
	Y *peel.Tensor // scalar
}

// loss is one sample's loss at weights w.
func loss(w *peel.Tensor, s Sample) *peel.Tensor {
	r := peel.Sub(peel.Sum(peel.Mul(s.X, w)), s.Y)
	return transforms.Switch(piece(r), branches, r)
}

// perSampleGrads is Vmap over the samples of Grad with respect to w.
func perSampleGrads(w *peel.Tensor, batch Sample) *peel.Tensor {
	grad := func(s Sample) *peel.Tensor {
		return transforms.Grad(func(w *peel.Tensor) *peel.Tensor { return loss(w, s) })(w)
	}
	return transforms.Vmap(grad)(batch)
}

// data returns the weights and a batch whose residuals fall in all
// three pieces.
func data() (*peel.Tensor, Sample) {
	w := synth.Data(1, nIn)
	x := synth.Data(2, nSamples, nIn)
	y := peel.Mul(synth.Data(3, nSamples), 2.0)
	return w, Sample{X: x, Y: y}
}

func main() {
	w, batch := data()
	g := perSampleGrads(w, batch)
	r := peel.Sub(peel.Sum(peel.Mul(batch.X, w), 1), batch.Y)
	for i := range nSamples {
		ri := peel.Index(r, i)
		fmt.Printf("sample %d  r = %+.4f  piece %d  grad %+.4f\n", i, ri.Item(), int(piece(ri).Item()), peel.Index(g, i).Float64s())
	}
}
