package bench

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// The functorch per-sample-gradients tutorial's SimpleCNN on 28×28
// single-channel images: conv 1→32 3×3, ReLU, conv 32→64 3×3, ReLU, 2×2
// max pool, a 9216→128 layer, ReLU, a 128→10 layer, log-softmax and the
// negative log-likelihood of the label; per-sample gradients of all
// eight parameters for a batch of 64 with Vmap(Grad), checked against a
// Go loop of Grad over the examples.
const (
	cnnBatch, cnnHW, cnnC1, cnnC2, cnnHidden, cnnClasses = 64, 28, 32, 64, 128, 10
	cnnFlat                                              = cnnC2 * 12 * 12
)

type cnnParams struct{ W1, B1, W2, B2, W3, B3, W4, B4 *peel.Tensor }

// cnnData returns the parameters (uniform in ±1/√fan-in, as torch's
// layers start), the images [64, 1, 28, 28] and one-hot labels [64, 10].
func cnnData() (p cnnParams, x, onehot *peel.Tensor) {
	u := func(seed uint64, fanIn int, shape ...int) *peel.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		s := 1 / math.Sqrt(float64(fanIn))
		return fromFloats(randFloats(seed, n, -s, s), peel.Float32, shape...)
	}
	p = cnnParams{
		W1: u(61, 9, cnnC1, 1, 3, 3), B1: u(62, 9, cnnC1),
		W2: u(63, cnnC1*9, cnnC2, cnnC1, 3, 3), B2: u(64, cnnC1*9, cnnC2),
		W3: u(65, cnnFlat, cnnFlat, cnnHidden), B3: u(66, cnnFlat, cnnHidden),
		W4: u(67, cnnHidden, cnnHidden, cnnClasses), B4: u(68, cnnHidden, cnnClasses),
	}
	x = fromFloats(randFloats(69, cnnBatch*cnnHW*cnnHW, 0, 1), peel.Float32, cnnBatch, 1, cnnHW, cnnHW)
	labels := make([]int64, cnnBatch)
	for i := range labels {
		labels[i] = int64(i*7) % cnnClasses
	}
	return p, x, peel.OneHot(peel.FromInt64s(labels), cnnClasses, peel.Float32)
}

// cnnLoss is the loss of one example: x [1, 28, 28], y one-hot [10].
func cnnLoss(p cnnParams, x, y *peel.Tensor) *peel.Tensor {
	h := peel.Reshape(x, 1, 1, cnnHW, cnnHW)
	h = peel.ReLU(peel.Add(peel.Conv2D(h, p.W1), peel.Reshape(p.B1, 1, cnnC1, 1, 1)))
	h = peel.ReLU(peel.Add(peel.Conv2D(h, p.W2), peel.Reshape(p.B2, 1, cnnC2, 1, 1)))
	h = peel.MaxPool2D(h, 2)
	h = peel.Reshape(h, 1, cnnFlat)
	h = peel.ReLU(peel.Add(peel.MatMul(h, p.W3), p.B3))
	logits := peel.Add(peel.MatMul(h, p.W4), p.B4)
	return peel.Neg(peel.Sum(peel.Mul(peel.LogSoftmax(logits, -1), y)))
}

// perSampleCNN is Vmap(Grad(loss)) over the batch, or with loop a Go
// loop of Grad; the result's W2 per-sample gradients are checked for two
// examples against Grad alone.
func perSampleCNN(loop bool) Workload {
	name, doc := "per_sample_grad_cnn_f32", "Vmap(Grad(loss)) of the functorch tutorial's SimpleCNN (32/64 channels, 28×28), batch 64, f32"
	if loop {
		name, doc = name+"_loop", "a Go loop of Grad(loss) over the 64 examples of the same SimpleCNN"
	}
	return Workload{
		Name: name, Impl: "peel", Doc: doc,
		Unit: "ms", Metric: func(ns float64) float64 { return ns / 1e6 },
		Setup: func() (func(), func() error) {
			p, x, onehot := cnnData()
			type ex struct{ X, Y *peel.Tensor }
			grad := func(e ex) cnnParams {
				return transforms.Grad(func(p cnnParams) *peel.Tensor { return cnnLoss(p, e.X, e.Y) })(p)
			}
			vgrad := transforms.Vmap(grad)
			var w2 *peel.Tensor
			run := func() {
				if !loop {
					w2 = vgrad(ex{X: x, Y: onehot}).W2
					return
				}
				rows := make([]*peel.Tensor, cnnBatch)
				for i := range rows {
					rows[i] = grad(ex{X: peel.Select(x, 0, i), Y: peel.Select(onehot, 0, i)}).W2
				}
				w2 = peel.Stack(rows, 0)
			}
			check := func() error {
				for _, i := range []int{0, cnnBatch - 1} {
					want := grad(ex{X: peel.Select(x, 0, i), Y: peel.Select(onehot, 0, i)}).W2
					if err := compare(hostFloats(peel.Select(w2, 0, i)), hostFloats(want), 1e-3, 1e-5); err != nil {
						return fmt.Errorf("example %d: %v", i, err)
					}
				}
				return nil
			}
			return run, check
		},
	}
}
