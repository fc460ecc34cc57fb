package main

import (
	"testing"

	"github.com/peel-ml/peel/examples/internal/reftest"
)

// TestAgainstTorch checks both vmapped ensembles against PyTorch running the
// models one by one in a loop (testdata/gen_reference.py), to float64
// round-off.
func TestAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	diff, same := run()
	reftest.Close(t, "diff_minibatch", diff, ref["diff_minibatch"], 1e-11, 1e-13)
	reftest.Close(t, "same_minibatch", same, ref["same_minibatch"], 1e-11, 1e-13)
}
