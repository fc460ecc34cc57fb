package main

import (
	"math"
	"slices"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/data"
	"github.com/peel-ml/peel/examples/internal/reftest"
	"github.com/peel-ml/peel/optim"
	"github.com/peel-ml/peel/tree"
)

// testArgs are the options of the checked runs: one epoch of two batches
// of 8, no noise (sigma 0), clipping at 1.
func testArgs(optim string, lr float64) Args {
	return Args{Epochs: 1, StartEpoch: 1, BatchSize: 8, PrintFreq: 10, LR: lr, Momentum: 0.9, WeightDecay: 5e-4, Sigma: 0, MaxPerSampleGradNorm: 1, Optim: optim}
}

// TestAgainstTorch checks against PyTorch's sample-by-sample DP-SGD
// (testdata/gen_reference.py, float64): the first batch's per-sample
// losses, outputs and gradients (the first sample's whole gradient, every
// sample's norm per leaf and over all the weights), then two noise-free
// steps with Adam (the tutorial's default) and with SGD with momentum and
// weight decay: the losses, the outputs and top-1 accuracy on the test
// set, and Adam's trained weights. They agree to about 1e-12 relative.
func TestAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	const rtol, atol = 1e-10, 1e-13
	trainImages, trainTargets := CIFAR10(true, 16)
	testImages, testTargets := CIFAR10(false, 16)
	model := resnet([]int{1, 1}, []int{8, 16}, 10)

	sampleGrads, lossOutput := perSampleGrads(model, peel.Narrow(trainImages, 0, 0, 8), peel.Narrow(trainTargets, 0, 0, 8)).Unpack()
	_, output := lossOutput.Unpack()
	reftest.Close(t, "outputs", output, ref["outputs"], rtol, atol)
	reftest.Close(t, "norms", computeNorms(sampleGrads), ref["norms"], rtol, atol)
	leafNorms := tree.Map(func(g *peel.Tensor) *peel.Tensor { return peel.Norm(g.Reshape(8, -1), 1) }, sampleGrads)
	reftest.CloseTree(t, "leaf_norms", leafNorms, ref, rtol, atol)
	first := tree.Map(func(g *peel.Tensor) *peel.Tensor { return peel.Select(g, 0, 0) }, sampleGrads)
	reftest.CloseTree(t, "sample_grads[0]", first, ref, rtol, atol)

	for _, c := range []struct {
		optim string
		lr    float64
	}{{"Adam", 1e-3}, {"SGD", 0.05}} {
		args := testArgs(c.optim, c.lr)
		optimizer := newOptimizer(args)
		trainLoader := data.Batches(nil, args.BatchSize, true, trainImages, trainTargets)
		trained, _, losses := train(args, model, trainLoader, optimizer, optimizer.Init(model), 1, peel.Key(0))
		reftest.Close(t, c.optim+".losses", peel.FromFloat64s(losses, len(losses)), ref[c.optim+".losses"], rtol, atol)
		reftest.Close(t, c.optim+".test_output", funcModel(trained, testImages), ref[c.optim+".test_output"], rtol, atol)
		acc := test(trained, data.Batches(nil, args.BatchSize, false, testImages, testTargets))
		reftest.Close(t, c.optim+".test_acc", peel.Scalar(acc), ref[c.optim+".test_acc"], 0, 1e-15)
		if c.optim == "Adam" {
			reftest.CloseTree(t, "Adam.params", trained, ref, rtol, atol)
		}
	}
}

// TestNoise checks the noise statistically, since peel's random numbers
// are not torch's: the noised gradient minus the noise-free one must look
// like N(0, (maxNorm·sigma)²) over all the weights (mean within 5
// standard errors, standard deviation within 5%), the same key must give
// the same noise and another key other noise.
func TestNoise(t *testing.T) {
	images, targets := CIFAR10(true, 8)
	sampleGrads, _ := perSampleGrads(resnet([]int{1, 1}, []int{8, 16}, 10), images, targets).Unpack()
	const maxNorm, sigma = 1.0, 2.0
	clean := tree.Leaves(clipAndAccumulateAndAddNoise(sampleGrads, maxNorm, 0, peel.Key(7)))
	noisy := tree.Leaves(clipAndAccumulateAndAddNoise(sampleGrads, maxNorm, sigma, peel.Key(7)))
	again := tree.Leaves(clipAndAccumulateAndAddNoise(sampleGrads, maxNorm, sigma, peel.Key(7)))
	other := tree.Leaves(clipAndAccumulateAndAddNoise(sampleGrads, maxNorm, sigma, peel.Key(8)))
	var sum, sq, n, same float64
	for i := range clean {
		c, z, a, o := clean[i].Float64s(), noisy[i].Float64s(), again[i].Float64s(), other[i].Float64s()
		for j := range c {
			if z[j] != a[j] {
				t.Fatalf("leaf %d element %d: the same key gave %v and %v", i, j, z[j], a[j])
			}
			if z[j] == o[j] {
				same++
			}
			e := z[j] - c[j]
			sum, sq, n = sum+e, sq+e*e, n+1
		}
	}
	std := sigma * maxNorm
	mean, sd := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n))
	if n < 6000 || same > 0 {
		t.Fatalf("%v noise values, %v equal under another key", n, same)
	}
	if math.Abs(mean) > 5*std/math.Sqrt(n) || math.Abs(sd/std-1) > 0.05 {
		t.Errorf("noise mean %.4f, std %.4f; want N(0, %g²)", mean, sd, std)
	}
}

// BenchmarkTutorial times one training epoch of DP-SGD at main's sizes, in
// float64: the 512 training images 3×16×16 in 8 shuffled batches of 64,
// the ResNet of main (the 7×7 stride-2 stem to 8 channels, GroupNorm with 4
// groups, 3×3 max pooling, a BasicBlock of 8 channels and a strided one of
// 16 with a 1×1 convolution shortcut, average pooling, Linear 16→10), and
// per batch what train does to the weights: the per-sample gradients (the
// compiled Vmap3 of GradAux3, perSampleGrads), clipping at norm 1 and
// noise with sigma 1 (clipAndAccumulateAndAddNoise), and Adam's step (lr
// 1e-3), without the losses, the accuracy and the printing. The batches
// are drawn and perSampleGrads compiled before the timing.
// testdata/time_torch.py times the tutorial's epoch of the same steps.
func BenchmarkTutorial(b *testing.B) {
	args := Args{BatchSize: 64, LR: 1e-3, Sigma: 1, MaxPerSampleGradNorm: 1, Optim: "Adam"}
	keys := peel.SplitKeys(peel.FoldIn(peel.Key(0), 1), 2) // epoch 1's, as in main
	trainImages, trainTargets := CIFAR10(true, 512)
	batches := slices.Collect(data.Batches(keys[0], args.BatchSize, true, trainImages, trainTargets))
	model0 := resnet([]int{1, 1}, []int{8, 16}, 10)
	optimizer := newOptimizer(args)
	optState0 := optimizer.Init(model0)
	perSampleGrads(model0, batches[0][0], batches[0][1]) // compile
	for b.Loop() {
		model, optState := model0, optState0
		for i, batch := range batches {
			sampleGrads, _ := perSampleGrads(model, batch[0], batch[1]).Unpack()
			grads := clipAndAccumulateAndAddNoise(sampleGrads, args.MaxPerSampleGradNorm, args.Sigma, peel.FoldIn(keys[1], int64(i)))
			var updates ResNet
			updates, optState = optimizer.Update(grads, optState, model)
			model = optim.ApplyUpdates(model, updates)
		}
	}
}
