// Command dp_sgd ports functorch's differentially private training example
// (pytorch/functorch, examples/dp_cifar10/cifar10_transforms.py, the
// Opacus-style DP-SGD step) to peel: per-sample gradients with Vmap of
// Grad, each sample's gradient clipped to a maximal norm, the clipped
// gradients summed, Gaussian noise added and the sum averaged, then an SGD
// step with momentum.
//
// The example trains a ResNet-18 on CIFAR10; this port keeps the DP step and
// the training loop and replaces the model and data with an MLP on a small
// deterministic set of 3×4×4 "images" (package synth), so that the run
// takes milliseconds and the noise-free numbers can be checked against
// PyTorch (testdata/gen_reference.py).
//
//	go run ./examples/dp_sgd
package main

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/synth"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// Model holds the parameters of the classifier.
type Model struct{ W1, B1, W2, B2 *peel.Tensor }

// model returns the logits [B, 10] of a batch of images x [B, 3, 4, 4].
func model(p Model, x *peel.Tensor) *peel.Tensor {
	h := peel.ReLU(peel.Add(peel.MatMul(peel.Flatten(x, 1), p.W1), p.B1))
	return peel.Add(peel.MatMul(h, p.W2), p.B2)
}

// criterion is the cross-entropy of logits and targets, averaged (nn.CrossEntropyLoss).
func criterion(output, targets *peel.Tensor) *peel.Tensor {
	return peel.Neg(peel.Mean(peel.TakeAlongAxis(peel.LogSoftmax(output, 1), peel.Unsqueeze(targets, 1), 1)))
}

// computeNorms returns the L2 norm of each sample's gradient over all parameters.
func computeNorms(sampleGrads Model) *peel.Tensor {
	var norms []*peel.Tensor
	for _, g := range tree.Leaves(sampleGrads) {
		norms = append(norms, peel.Sqrt(peel.Sum(peel.Square(peel.Flatten(g, 1)), 1)))
	}
	return peel.Sqrt(peel.Sum(peel.Square(peel.Stack(norms, 0)), 0))
}

// clipAndAccumulateAndAddNoise clips each sample's gradient to norm
// maxNorm, sums them, adds N(0, (maxNorm·noiseMultiplier)²) noise drawn
// with key and divides by the batch size.
func clipAndAccumulateAndAddNoise(sampleGrads Model, maxNorm, noiseMultiplier float64, key *peel.Tensor) Model {
	sampleNorms := computeNorms(sampleGrads)
	clipFactor := peel.Clip(peel.Div(maxNorm, peel.Add(sampleNorms, 1e-6)), nil, 1.0)
	grads := tree.Map(func(g *peel.Tensor) *peel.Tensor { return peel.Einsum("i,i...", clipFactor, g) }, sampleGrads)
	stddev, i := maxNorm*noiseMultiplier, int64(0)
	return tree.Map(func(g *peel.Tensor) *peel.Tensor {
		i++
		noise := peel.NormalScaled(peel.FoldIn(key, i), g.DType(), 0, stddev, g.Shape()...)
		return peel.Div(peel.Add(g, noise), sampleNorms.Size())
	}, grads)
}

// computeLoss is the loss of one image and its target, as a batch of one.
func computeLoss(weights Model, image, target *peel.Tensor) *peel.Tensor {
	return criterion(model(weights, peel.Unsqueeze(image, 0)), peel.Unsqueeze(target, 0))
}

// train runs DP-SGD (batches of 8, SGD with momentum) for some epochs and
// returns the trained params, each step's loss, and the first step's
// per-sample gradients.
func train(epochs int, maxNorm, sigma float64, key *peel.Tensor) (params Model, losses []float64, firstSampleGrads Model) {
	data, targets := synth.Data(1, 32, 3, 4, 4), synth.Labels(0, 32, 10)
	params = Model{
		W1: peel.Mul(synth.Data(2, 48, 32), 0.15), B1: peel.Zeros(peel.Float64, 32),
		W2: peel.Mul(synth.Data(3, 32, 10), 0.18), B2: peel.Zeros(peel.Float64, 10),
	}
	const lr, momentum, batch = 0.1, 0.9, 8
	buf := tree.ZerosLike(params)
	for epoch := range epochs {
		for i := 0; i < 32; i += batch {
			images, target := peel.Narrow(data, 0, i, batch), peel.Narrow(targets, 0, i, batch)
			// Step 1: per-sample gradients, and the batch's loss.
			sampleGrads := transforms.Vmap3(transforms.Grad3(computeLoss), transforms.InAxes(transforms.NoAxis, 0, 0))(params, images, target)
			losses = append(losses, criterion(model(params, images), target).Item())
			if firstSampleGrads.W1 == nil {
				firstSampleGrads = sampleGrads
			}
			// Step 2: clip, sum, add noise; then the optimizer step.
			grads := clipAndAccumulateAndAddNoise(sampleGrads, maxNorm, sigma, peel.FoldIn(key, int64(epoch*32+i)))
			buf = tree.MapN(func(t []*peel.Tensor) *peel.Tensor { return peel.Add(peel.Mul(t[0], momentum), t[1]) }, buf, grads)
			params = tree.MapN(func(t []*peel.Tensor) *peel.Tensor { return peel.Sub(t[0], peel.Mul(t[1], lr)) }, params, buf)
		}
	}
	return params, losses, firstSampleGrads
}

func main() {
	_, losses, sampleGrads := train(5, 1.0, 0.5, peel.Key(0))
	fmt.Println("per-sample gradient norms, first batch:", computeNorms(sampleGrads))
	for i, l := range losses {
		fmt.Printf("step %2d  loss %.6f\n", i+1, l)
	}
}
