// Command rnn trains a small Elman RNN written with transforms.Scan: the
// loop over the sequence is one scan, traced once, and Grad of the loss
// is a forward scan and a reverse scan of the step's transpose, however
// long the sequence.
//
// The task: read a sequence of numbers in [-1, 1] and output, at every
// step, a quarter of the running sum so far. The model is
// h_t = tanh(x_t·Wx + h_{t-1}·Wh + b), y_t = h_t·Wo + bo, trained by
// plain SGD on the mean squared error over steps and sequences.
package main

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/transforms"
)

const (
	hidden  = 16
	steps   = 12 // sequence length
	batch   = 64
	lr      = 0.1
	trainIt = 60
)

// Params are the model's weights.
type Params struct {
	Wx, Wh, B, Wo, Bo *peel.Tensor
}

// initParams returns small deterministic weights.
func initParams() Params {
	return Params{
		Wx: peel.Mul(synth.Data(1, 1, hidden), 0.5),
		Wh: peel.Mul(synth.Data(2, hidden, hidden), 0.2),
		B:  peel.Zeros(peel.Float64, hidden),
		Wo: peel.Mul(synth.Data(3, hidden, 1), 0.3),
		Bo: peel.Zeros(peel.Float64, 1),
	}
}

// data returns the inputs, [steps, batch, 1], and the targets, the
// running sums divided by 4, of the same shape.
func data() (xs, targets *peel.Tensor) {
	xs = synth.Data(7, steps, batch, 1)
	return xs, peel.Mul(peel.Cumsum(xs, 0), 0.25)
}

// cell is one step: the new hidden state and the output.
func cell(p Params, h, x *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
	h = peel.Tanh(peel.Add(peel.Add(peel.MatMul(x, p.Wx), peel.MatMul(h, p.Wh)), p.B))
	return h, peel.Add(peel.MatMul(h, p.Wo), p.Bo)
}

// loss runs the RNN over xs with Scan: the carry is h, the ys are the
// outputs, stacked to [steps, batch, 1].
func loss(p Params, xs, targets *peel.Tensor) *peel.Tensor {
	h0 := peel.Zeros(peel.Float64, batch, hidden)
	_, ys := transforms.Scan(func(h, x *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
		return cell(p, h, x)
	}, h0, xs)
	return peel.Mean(peel.Square(peel.Sub(ys, targets)))
}

// loopLoss is the same loss with a Go loop over the steps (what Scan
// replaces; under Grad it records every step).
func loopLoss(p Params, xs, targets *peel.Tensor) *peel.Tensor {
	h := peel.Zeros(peel.Float64, batch, hidden)
	ys := make([]*peel.Tensor, steps)
	for t := range steps {
		h, ys[t] = cell(p, h, peel.Index(xs, t))
	}
	return peel.Mean(peel.Square(peel.Sub(peel.Stack(ys, 0), targets)))
}

// sgd returns p - lr·g, leaf by leaf.
func sgd(p, g Params) Params {
	step := func(w, d *peel.Tensor) *peel.Tensor { return peel.Sub(w, peel.Mul(d, lr)) }
	return Params{step(p.Wx, g.Wx), step(p.Wh, g.Wh), step(p.B, g.B), step(p.Wo, g.Wo), step(p.Bo, g.Bo)}
}

// train runs iters SGD steps from initParams and returns the loss before
// each step and the final parameters.
func train(iters int) ([]float64, Params) {
	xs, targets := data()
	vg := transforms.ValueAndGrad(func(p Params) *peel.Tensor { return loss(p, xs, targets) })
	p := initParams()
	var losses []float64
	for range iters {
		l, g := vg(p)
		losses = append(losses, l.Item())
		p = sgd(p, g)
	}
	return losses, p
}

func main() {
	losses, _ := train(trainIt)
	for i, l := range losses {
		if i%10 == 0 || i == len(losses)-1 {
			fmt.Printf("step %2d  loss %.5f\n", i, l)
		}
	}
}
