package main

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/reftest"
	"github.com/peel-ml/peel/tree"
)

// TestAgainstTorch trains two epochs without noise and checks the first
// batch's per-sample gradients and norms, every step's loss and the trained
// weights against PyTorch's sample-by-sample DP-SGD
// (testdata/gen_reference.py), to float64 round-off.
func TestAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	params, losses, sampleGrads := train(2, 1.0, 0, peel.Key(0))
	const rtol, atol = 1e-10, 1e-13
	reftest.CloseTree(t, "sample_grads", sampleGrads, ref, rtol, atol)
	reftest.Close(t, "norms", computeNorms(sampleGrads), ref["norms"], rtol, atol)
	reftest.Close(t, "losses", peel.FromFloat64s(losses, len(losses)), ref["losses"], rtol, atol)
	reftest.CloseTree(t, "params", params, ref, rtol, atol)
}

// TestNoise checks the noise statistically, since peel's random numbers
// are not torch's: the noised averaged gradient minus the noise-free one,
// times the batch size, must look like N(0, (maxNorm·sigma)²) over all
// 1898 parameters (mean within 5 standard errors, standard deviation within
// 10%), and the same key must give the same noise.
func TestNoise(t *testing.T) {
	_, _, sampleGrads := train(1, 1.0, 0, peel.Key(0))
	const maxNorm, sigma, batch = 1.0, 2.0, 8
	clean := tree.Leaves(clipAndAccumulateAndAddNoise(sampleGrads, maxNorm, 0, peel.Key(7)))
	noisy := tree.Leaves(clipAndAccumulateAndAddNoise(sampleGrads, maxNorm, sigma, peel.Key(7)))
	again := tree.Leaves(clipAndAccumulateAndAddNoise(sampleGrads, maxNorm, sigma, peel.Key(7)))
	var sum, sq, n float64
	for i := range clean {
		c, z, a := clean[i].Float64s(), noisy[i].Float64s(), again[i].Float64s()
		for j := range c {
			if z[j] != a[j] {
				t.Fatalf("leaf %d element %d: the same key gave %v and %v", i, j, z[j], a[j])
			}
			e := (z[j] - c[j]) * batch
			sum, sq, n = sum+e, sq+e*e, n+1
		}
	}
	std := sigma * maxNorm
	mean, sd := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n))
	if n != 48*32+32+32*10+10 {
		t.Fatalf("%v noise values", n)
	}
	if math.Abs(mean) > 5*std/math.Sqrt(n) || math.Abs(sd/std-1) > 0.1 {
		t.Errorf("noise mean %.4f, std %.4f; want N(0, %g²)", mean, sd, std)
	}
}
