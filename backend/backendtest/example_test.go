package backendtest_test

import (
	"sync/atomic"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/backendtest"
	"github.com/peel-ml/peel/backend/cpu"
)

// countingBackend is a backend that wraps another: it runs the CPU
// backend's kernels and counts the calls.
type countingBackend struct {
	backend.Backend
	calls atomic.Int64
}

func (b *countingBackend) Exec(op backend.Op, params any, in, out []backend.Array) {
	b.calls.Add(1)
	b.Backend.Exec(op, params, in, out)
}

// A backend implementation runs the suite from its own tests, in a test
// function of one call. The suite needs the *testing.T of a running
// test, and checks every primitive for a while, so this example is
// compiled but not run; in a backend's _test.go file it reads
//
//	func TestConformance(t *testing.T) {
//		b := &countingBackend{Backend: cpu.New()}
//		backendtest.Run(t, b)
//		t.Logf("%d kernel calls", b.calls.Load())
//	}
func Example() {
	conformance := func(t *testing.T) {
		b := &countingBackend{Backend: cpu.New()}
		backendtest.Run(t, b)
		t.Logf("%d kernel calls", b.calls.Load())
	}
	_ = conformance
}

// A backend is checked by one call from its own tests:
//
//	func TestConformance(t *testing.T) { backendtest.Run(t, cpu.New()) }
func ExampleRun() {
	conformance := func(t *testing.T) { backendtest.Run(t, cpu.New()) }
	_ = conformance
}
