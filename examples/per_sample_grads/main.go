// Command per_sample_grads ports the PyTorch tutorial "Per-sample-gradients"
// (pytorch/tutorials, intermediate_source/per_sample_grads.py, read at commit
// 0bb46a4a7c3e4a4d185372221fecb5754f68fcca) to peel: the gradient of the loss
// for every sample of a batch, by hand in a loop (compute_sample_grads) and by
// composing Grad and Vmap (ft_compute_sample_grad), next to the ordinary
// batch-average gradient.
//
// The model is the tutorial's SimpleCNN (two 3×3 convolutions with ReLU,
// max-pooling by 2, flatten, two linear layers, log_softmax, NLL loss), with
// torch's default initialization (nn.TorchInit), shrunk so that it runs in
// milliseconds: 1→4→8 channels instead of 1→32→64, 10×10 images instead of
// 28×28 (so fc1 is 72→16 instead of 9216→128), a batch of 8 instead of 64,
// on the CPU in float64. peel's model is a function of its params (a
// SimpleCNN struct), so functional_call and the buffers (the CNN has none)
// are not needed. The tutorial's float64 re-check of mismatches and its
// timings are left out; main_test.go checks all three gradients against
// PyTorch (testdata/gen_reference.py) and the two per-sample ones against
// each other.
//
//	go run ./examples/per_sample_grads
package main

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/nn"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// SimpleCNN holds the parameters of the tutorial's CNN.
type SimpleCNN struct {
	Conv1, Conv2 nn.Conv2DParams
	FC1, FC2     nn.LinearParams
}

// newSimpleCNN initializes the layers as torch's nn.Conv2d and nn.Linear do,
// each with a key of its own.
func newSimpleCNN(key *peel.Tensor) SimpleCNN {
	return SimpleCNN{
		Conv1: nn.InitConv2D(peel.FoldIn(key, 1), peel.Float64, 1, 4, 3, nn.TorchInit()),
		Conv2: nn.InitConv2D(peel.FoldIn(key, 2), peel.Float64, 4, 8, 3, nn.TorchInit()),
		FC1:   nn.InitLinear(peel.FoldIn(key, 3), peel.Float64, 72, 16, nn.TorchInit()),
		FC2:   nn.InitLinear(peel.FoldIn(key, 4), peel.Float64, 16, 10, nn.TorchInit()),
	}
}

// model is SimpleCNN's forward: images x [B, 1, 10, 10] to log-probabilities [B, 10].
func model(params SimpleCNN, x *peel.Tensor) *peel.Tensor {
	x = nn.Conv2D(params.Conv1, x).ReLU()
	x = nn.Conv2D(params.Conv2, x).ReLU()
	x = peel.MaxPool2D(x, 2).Flatten(1)
	x = nn.Linear(params.FC1, x).ReLU()
	x = nn.Linear(params.FC2, x)
	return peel.LogSoftmax(x, 1)
}

// lossFn is F.nll_loss: the mean negative log-likelihood of the targets.
var lossFn = nn.NLL

const batchSize = 8

// computeGrad is one sample's gradient, by an ordinary Grad of its loss.
func computeGrad(params SimpleCNN, sample, target *peel.Tensor) SimpleCNN {
	sample = peel.Unsqueeze(sample, 0) // prepend the batch dimension
	target = peel.Unsqueeze(target, 0)
	loss := func(params SimpleCNN) *peel.Tensor { return lossFn(model(params, sample), target) }
	return transforms.Grad(loss)(params)
}

// computeSampleGrads processes the samples one by one in a Go loop.
func computeSampleGrads(params SimpleCNN, data, targets *peel.Tensor) SimpleCNN {
	sampleGrads := make([]SimpleCNN, batchSize)
	for i := range sampleGrads {
		sampleGrads[i] = computeGrad(params, peel.Index(data, i), peel.Index(targets, i))
	}
	return tree.Stack(sampleGrads)
}

// computeLoss is the loss of one sample: the model wants a batch, so the
// sample and its target get a batch dimension of 1.
func computeLoss(params SimpleCNN, sample, target *peel.Tensor) *peel.Tensor {
	batch := peel.Unsqueeze(sample, 0)
	targets := peel.Unsqueeze(target, 0)
	predictions := model(params, batch)
	return lossFn(predictions, targets)
}

// run returns the batch-average gradient, the per-sample gradients by the
// loop and the per-sample gradients by Vmap(Grad(computeLoss)).
func run(params SimpleCNN, data, targets *peel.Tensor) (grads, perSampleGrads, ftPerSampleGrads SimpleCNN) {
	// The usual training gradient: the loss of the whole batch, averaged.
	loss := func(params SimpleCNN) *peel.Tensor { return lossFn(model(params, data), targets) }
	grads = transforms.Grad(loss)(params)
	perSampleGrads = computeSampleGrads(params, data, targets)
	// Grad differentiates computeLoss w.r.t. params; Vmap maps it over the
	// samples and targets, sharing params.
	ftComputeGrad := transforms.Grad3(computeLoss)
	ftComputeSampleGrad := transforms.Vmap3(ftComputeGrad, transforms.InAxes(transforms.NoAxis, 0, 0))
	ftPerSampleGrads = ftComputeSampleGrad(params, data, targets)
	return grads, perSampleGrads, ftPerSampleGrads
}

func main() {
	keys := peel.SplitKeys(peel.Key(0), 3) // torch.manual_seed(0)
	data := peel.Normal(keys[0], peel.Float64, batchSize, 1, 10, 10)
	targets := peel.RandInt(keys[1], 0, 10, batchSize)
	params := newSimpleCNN(keys[2])
	grads, perSampleGrads, ftPerSampleGrads := run(params, data, targets)
	fmt.Println("per-sample grad of conv1.weight:", perSampleGrads.Conv1.W.TypeString())
	paths := tree.Paths(ftPerSampleGrads)
	for i, g := range tree.Leaves(ftPerSampleGrads) {
		fmt.Printf("ft per-sample grad %-9s %s  (batch average %s)\n", paths[i], g.TypeString(), tree.Leaves(grads)[i].TypeString())
	}
}
