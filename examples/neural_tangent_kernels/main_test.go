package main

import (
	"testing"

	"github.com/peel-ml/peel/examples/internal/reftest"
)

// TestAgainstTorch checks both NTK methods against PyTorch's kernel built from
// per-output autograd gradients (testdata/gen_reference.py), to float64
// round-off.
func TestAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	r := run()
	const rtol, atol = 1e-10, 1e-12
	for got, want := range map[string]string{
		"jc_full": "full", "jc_trace": "trace", "jc_diagonal": "diagonal",
		"jc_test": "test", "vps_test": "test", "vps_trace": "test_trace",
	} {
		reftest.Close(t, got, r[got], ref[want], rtol, atol)
	}
}
