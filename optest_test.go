package peel_test

import (
	"testing"

	"github.com/peel-ml/peel/internal/optest"
)

// TestOpRegistry checks every registered op on eval against its reference
// and through Trace + Graph.Eval against eval.
func TestOpRegistry(t *testing.T) {
	for _, op := range optest.All() {
		t.Run(op.Name, func(t *testing.T) { optest.Check(t, op) })
	}
}
