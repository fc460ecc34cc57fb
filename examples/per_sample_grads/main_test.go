package main

import (
	"testing"

	"github.com/peel-ml/peel/examples/internal/reftest"
)

// TestAgainstTorch checks the batch-average and per-sample gradients against
// PyTorch's, computed with one autograd call per sample
// (testdata/gen_reference.py), to float64 round-off.
func TestAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	avg, perSample := run()
	reftest.CloseTree(t, "avg", avg, ref, 1e-10, 1e-13)
	reftest.CloseTree(t, "per_sample", perSample, ref, 1e-10, 1e-13)
}
