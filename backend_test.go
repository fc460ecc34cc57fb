package peel_test

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
)

// countingBackend is the CPU backend under another name, counting the
// kernels it runs.
type countingBackend struct {
	*cpu.Backend
	execs atomic.Int64
}

func (b *countingBackend) Name() string { return "counting" }

func (b *countingBackend) Exec(op backend.Op, params any, in, out []backend.Array) {
	b.execs.Add(1)
	b.Backend.Exec(op, params, in, out)
}

// backendOf returns the backend a concrete tensor lives on.
func backendOf(x *peel.Tensor) backend.Backend {
	_, be := interp.ArrayOf(x)
	return be
}

// TestUseBackend checks that the CPU backend is the default with no
// setup, that UseBackend replaces it for new tensors (constructors,
// operations, the constants of a transform), that tensors made before
// the switch keep their backend and mixing the two is *Error, and that a
// nil backend is refused.
func TestUseBackend(t *testing.T) {
	if got := peel.DefaultBackend(); got != backend.Backend(cpu.New()) {
		t.Fatalf("default backend with no setup: %s, want cpu", got.Name())
	}
	old := peel.FromFloat64s([]float64{1, 2, 3})
	b := &countingBackend{Backend: cpu.New()}
	prev := peel.DefaultBackend()
	peel.UseBackend(b)
	t.Cleanup(func() { peel.UseBackend(prev) })
	if peel.DefaultBackend() != backend.Backend(b) {
		t.Fatalf("DefaultBackend after UseBackend: %s", peel.DefaultBackend().Name())
	}

	x := peel.FromFloat64s([]float64{1, 2, 3})
	y := peel.Add(peel.Mul(x, x), 1.0)
	if backendOf(x) != backend.Backend(b) || backendOf(y) != backend.Backend(b) {
		t.Errorf("new tensors on %s and %s, want counting", backendOf(x).Name(), backendOf(y).Name())
	}
	if got := y.Float64s(); !slices.Equal(got, []float64{2, 5, 10}) {
		t.Errorf("x*x+1 on the new backend = %v", got)
	}
	if b.execs.Load() == 0 {
		t.Error("the new backend ran no kernel")
	}
	z := peel.Zeros(peel.Float32, 2)
	if backendOf(z) != backend.Backend(b) {
		t.Errorf("Zeros on %s, want counting", backendOf(z).Name())
	}
	// A transform's own constants follow the choice too.
	g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Tanh(x)) })(x)
	if backendOf(g) != backend.Backend(b) {
		t.Errorf("Grad's result on %s, want counting", backendOf(g).Name())
	}

	// A tensor made before the switch stays where it was, and so do
	// results computed from it alone.
	if backendOf(old) != backend.Backend(cpu.New()) {
		t.Errorf("tensor made before the switch moved to %s", backendOf(old).Name())
	}
	execs := b.execs.Load()
	w := peel.Mul(peel.Add(old, 1.0), old)
	if backendOf(w) != backend.Backend(cpu.New()) || b.execs.Load() != execs {
		t.Errorf("an op on old tensors ran on %s (new backend kernels: %d)", backendOf(w).Name(), b.execs.Load()-execs)
	}
	if got := w.Float64s(); !slices.Equal(got, []float64{2, 6, 12}) {
		t.Errorf("(old+1)*old = %v", got)
	}
	// Go scalars follow the tensors they meet: in promotion, Where, Pad
	// and in-place sources.
	for name, f := range map[string]func() *peel.Tensor{
		"Where": func() *peel.Tensor { return peel.Where(peel.Greater(old, 1.5), old, 0.0) },
		"Pad":   func() *peel.Tensor { return peel.Pad(old, [][2]int{{1, 0}}, 7) },
		"CopyInto": func() *peel.Tensor {
			return peel.CopyInto(peel.Add(old, 0.0), 4)
		},
	} {
		r := f()
		if backendOf(r) != backend.Backend(cpu.New()) || b.execs.Load() != execs {
			t.Errorf("%s on old tensors ran on %s (new backend kernels: %d)", name, backendOf(r).Name(), b.execs.Load()-execs)
		}
	}
	// Mixing the two is refused, never copied.
	err := peel.Catch(func() { peel.Add(old, x) })
	if err == nil || !strings.Contains(err.Error(), "different backends") {
		t.Errorf("old + new: %v, want an *Error about different backends", err)
	}

	var typedNil *countingBackend
	for _, nb := range []backend.Backend{nil, typedNil} {
		err := peel.Catch(func() { peel.UseBackend(nb) })
		if err == nil || !strings.Contains(err.Error(), "peel.UseBackend") || !strings.Contains(err.Error(), "nil backend") {
			t.Errorf("UseBackend(%#v): %v, want *Error naming peel.UseBackend", nb, err)
		}
	}
	if peel.DefaultBackend() != backend.Backend(b) {
		t.Errorf("a refused UseBackend changed the default to %s", peel.DefaultBackend().Name())
	}
}

// loggingBackend is the CPU backend, printing each kernel it runs.
type loggingBackend struct{ *cpu.Backend }

func (loggingBackend) Name() string { return "logging" }

func (b loggingBackend) Exec(op backend.Op, params any, in, out []backend.Array) {
	fmt.Println("kernel", op.Name)
	b.Backend.Exec(op, params, in, out)
}

// UseBackend replaces the default backend (the CPU backend) for the
// tensors made afterwards; a tensor made before keeps its backend, and
// mixing the two is an error.
func ExampleUseBackend() {
	before := peel.FromFloat64s([]float64{1, 2})
	fmt.Println(peel.DefaultBackend().Name())

	peel.UseBackend(loggingBackend{cpu.New()})
	x := peel.FromFloat64s([]float64{1, 2})
	fmt.Println(peel.Exp(x))
	fmt.Println(peel.Catch(func() { peel.Add(before, x) }))

	peel.UseBackend(cpu.New()) // back to the default
	fmt.Println(peel.DefaultBackend().Name())
	// Output:
	// cpu
	// kernel exp
	// [2.7182818 7.3890561]
	// peel.Add: add: operands live on different backends (cpu, logging) at backend_test.go:141
	// cpu
}
