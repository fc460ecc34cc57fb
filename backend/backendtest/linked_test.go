package backendtest_test

import (
	"testing"

	"github.com/peel-ml/peel/backend/backendtest"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/internal/testsize"
	"github.com/peel-ml/peel/interp"
	_ "github.com/peel-ml/peel/transforms"
)

// TestRunLinked runs the suite on the CPU backend in a binary that links
// package transforms, which registers composites (composite_lin,
// custom_jvp_call, custom_vjp_call) and a linear primitive that is never
// evaluated (custom_vjp_lin), and user-defined ops (mylib.gelu with a
// fused CPU kernel, mylib.interleave without one). The suite must ask for
// cases only for the primitives that need a kernel, and check the fused
// kernel against its decomposition (subtest mylib.gelu). It used to fail
// with "no conformance case for primitive composite_lin" in any binary
// linking transforms. The suite itself, which backend/cpu's
// TestConformance runs too, runs here only with PEEL_FULL set.
func TestRunLinked(t *testing.T) {
	be := cpu.New()
	// The binary holds every kind of primitive the suite tells apart.
	kinds := []struct {
		name string
		ok   func(p *interp.Prim) bool
		what string
	}{
		{"composite_lin", func(p *interp.Prim) bool { return p.Impl != nil }, "a composite"},
		{"custom_jvp_call", func(p *interp.Prim) bool { return p.Impl != nil }, "a composite"},
		{"custom_vjp_lin", func(p *interp.Prim) bool { return p.NoEval != "" }, "never evaluated"},
		{mylib.Gelu.Name(), func(p *interp.Prim) bool { return p.Impl != nil && p.Whole && be.Has(p.Op) }, "a composite with a fused kernel"},
		{mylib.Interleave.Name(), func(p *interp.Prim) bool { return p.Impl != nil && !be.Has(p.Op) }, "a composite without a kernel"},
	}
	for _, k := range kinds {
		if p := interp.PrimByName(k.name); p == nil || !k.ok(p) {
			t.Fatalf("primitive %s is not registered as %s", k.name, k.what)
		}
	}
	if !testsize.Full() {
		t.Skip("the conformance suite in a binary linking transforms runs with PEEL_FULL=1")
	}
	backendtest.Run(t, be)
}
