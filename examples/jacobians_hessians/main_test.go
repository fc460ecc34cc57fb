package main

import (
	"testing"

	"github.com/peel-ml/peel/examples/internal/reftest"
)

// TestAgainstTorch checks every Jacobian, Hessian and HVP, however peel
// computed it (loop of VJPs, Vmap of a VJP, Jacrev, Jacfwd, their
// compositions, the sum trick), against PyTorch's plain-autograd loops over
// the output elements (testdata/gen_reference.py), to float64 round-off.
func TestAgainstTorch(t *testing.T) {
	ref := reftest.Load(t, "testdata/reference.json")
	r := run()
	const rtol, atol = 1e-10, 1e-13
	for got, want := range map[string]string{
		"jacobian": "jac_x", "ft_jacobian": "jac_x", "ft_jacobian_jacrev": "jac_x",
		"ft_jac_weight": "jac_weight", "ft_jac_bias": "jac_bias",
		"jacfwd_taller": "jac_taller", "jacrev_taller": "jac_taller",
		"jacfwd_wider": "jac_wider", "jacrev_wider": "jac_wider",
		"hess_api": "hess", "hess_fwdfwd": "hess", "hess_revrev": "hess",
		"batch_jacobian0": "batch_jac", "batch_jacobian1": "batch_jac", "batch_hess": "batch_hess",
		"result": "hvp", "result_hvp_revrev": "hvp",
	} {
		reftest.Close(t, got, r[got], ref[want], rtol, atol)
	}
	if len(r) != 17 {
		t.Errorf("run returned %d quantities, the test checks 17", len(r))
	}
}
