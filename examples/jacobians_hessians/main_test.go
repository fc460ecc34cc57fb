package main

import (
	"testing"

	"github.com/peel-ml/peel/examples/internal/reftest"
)

// TestAgainstTorch checks every Jacobian, Hessian and HVP, however peel
// computed it, against PyTorch's plain-autograd loops
// (testdata/gen_reference.py), to float64 round-off.
func TestAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	r := run()
	const rtol, atol = 1e-10, 1e-13
	for got, want := range map[string]string{
		"jac_vjp": "jac_x", "jac_x": "jac_x", "jacfwd_x": "jac_x",
		"jac_weight": "jac_weight", "jac_bias": "jac_bias",
		"hess_api": "hess", "hess_fwdfwd": "hess", "hess_revrev": "hess",
		"batch_jac0": "batch_jac", "batch_jac1": "batch_jac", "batch_hess": "batch_hess",
		"hvp": "hvp", "hvp_revrev": "hvp", "hvp_api": "hvp",
	} {
		reftest.Close(t, got, r[got], ref[want], rtol, atol)
	}
}
