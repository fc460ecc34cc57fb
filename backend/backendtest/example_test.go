package backendtest_test

import (
	"testing"

	"github.com/peel-ml/peel/backend/backendtest"
	"github.com/peel-ml/peel/backend/cpu"
)

// A backend is checked by one call from its own tests:
//
//	func TestConformance(t *testing.T) { backendtest.Run(t, cpu.New()) }
func ExampleRun() {
	conformance := func(t *testing.T) { backendtest.Run(t, cpu.New()) }
	_ = conformance
}
