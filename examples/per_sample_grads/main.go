// Command per_sample_grads ports the PyTorch tutorial "Per-sample-gradients"
// (pytorch/tutorials, intermediate_source/per_sample_grads.py) to peel: the
// gradient of the loss for every sample of a batch, by composing Vmap and
// Grad, next to the ordinary batch-average gradient.
//
// The tutorial's model is a small CNN on MNIST-sized images; peel has no
// convolution yet, so this port keeps the structure (a network ending in
// log_softmax, an NLL loss, a batch of images and labels) with a two-layer
// MLP on 4×4 images. Inputs are deterministic (package synth), so the
// numbers can be checked against PyTorch (testdata/gen_reference.py).
//
//	go run ./examples/per_sample_grads
package main

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// Model holds the parameters of the network.
type Model struct{ W1, B1, W2, B2 *peel.Tensor }

// model runs a batch of images x [B, 1, 4, 4] and returns log-probabilities [B, 10].
func model(p Model, x *peel.Tensor) *peel.Tensor {
	h := peel.ReLU(peel.Add(peel.MatMul(peel.Flatten(x, 1), p.W1), p.B1))
	return peel.LogSoftmax(peel.Add(peel.MatMul(h, p.W2), p.B2), 1)
}

// lossFn is the negative log-likelihood of the targets, averaged (F.nll_loss).
func lossFn(predictions, targets *peel.Tensor) *peel.Tensor {
	return peel.Neg(peel.Mean(peel.TakeAlongAxis(predictions, peel.Unsqueeze(targets, 1), 1)))
}

// computeLoss is the loss of one sample: the model wants a batch, so the
// sample and its target get a batch dimension of 1.
func computeLoss(p Model, sample, target *peel.Tensor) *peel.Tensor {
	return lossFn(model(p, peel.Unsqueeze(sample, 0)), peel.Unsqueeze(target, 0))
}

// run returns the batch-average gradient and the per-sample gradients.
func run() (avg, perSample Model) {
	const batchSize = 8
	data := synth.Data(1, batchSize, 1, 4, 4)
	targets := synth.Labels(0, batchSize, 10)
	params := Model{
		W1: peel.Mul(synth.Data(2, 16, 32), 0.25), B1: peel.Mul(synth.Data(3, 32), 0.1),
		W2: peel.Mul(synth.Data(4, 32, 10), 0.18), B2: peel.Mul(synth.Data(5, 10), 0.1),
	}
	// The usual training gradient: the loss of the whole batch, averaged.
	avg = transforms.Grad3(func(p Model, x, t *peel.Tensor) *peel.Tensor { return lossFn(model(p, x), t) })(params, data, targets)
	// Per-sample gradients: Grad differentiates computeLoss w.r.t. params;
	// Vmap maps it over the samples and targets, sharing params.
	ftComputeSampleGrad := transforms.Vmap3(transforms.Grad3(computeLoss), transforms.InAxes(transforms.NoAxis, 0, 0))
	perSample = ftComputeSampleGrad(params, data, targets)
	return avg, perSample
}

func main() {
	avg, perSample := run()
	paths := tree.Paths(perSample)
	for i, g := range tree.Leaves(perSample) {
		fmt.Printf("per-sample grad %-4s %s  (batch average %s)\n", paths[i], g.TypeString(), tree.Leaves(avg)[i].TypeString())
	}
	// The mean of the per-sample gradients is the batch-average gradient.
	fmt.Println("mean over samples of dloss/dB2:", peel.Mean(perSample.B2, 0))
	fmt.Println("batch-average dloss/dB2:      ", avg.B2)
}
