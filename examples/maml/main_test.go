package main

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/internal/reftest"
)

// TestAgainstTorch runs the 300 meta-iterations and checks every meta-loss,
// the meta-trained weights and the adapted predictions on the test task
// against PyTorch (testdata/gen_reference.py: per-task autograd with
// create_graph, torch.optim.Adam). 300 Adam steps through second
// derivatives still agree to about 1e-12 relative.
func TestAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	losses, params, _, _, testF := run(300)
	const rtol, atol = 1e-10, 1e-12
	reftest.Close(t, "losses", peel.FromFloat64s(losses, len(losses)), ref["losses"], rtol, atol)
	reftest.CloseTree(t, "params", params, ref, rtol, atol)
	reftest.Close(t, "test_f", testF, ref["test_f"], rtol, atol)
}
