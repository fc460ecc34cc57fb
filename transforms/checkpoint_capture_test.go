package transforms_test

import (
	"fmt"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// TestCheckpointCapturedWrite: a checkpointed function that writes into
// a tensor it captures (whole, through a view, with a value computed
// from its argument or a constant) leaves the captured tensor as the
// eager function does after every call, and its result and gradient
// equal the function's without the checkpoint. Before, the captured
// tensor was left holding the checkpoint trace's dead tracer.
func TestCheckpointCapturedWrite(t *testing.T) {
	progs := []struct {
		name string
		f    func(w *T) func(*T) *T
	}{
		{"whole, traced", func(w *T) func(*T) *T {
			return func(x *T) *T { peel.AddInPlace(w, peel.Sin(x)); return peel.Mul(x, w) }
		}},
		{"view, traced", func(w *T) func(*T) *T {
			return func(x *T) *T {
				peel.CopyInto(peel.Narrow(w, 0, 1, 2), peel.Narrow(peel.Exp(x), 0, 0, 2))
				return peel.Mul(x, w)
			}
		}},
		{"whole, constant", func(w *T) func(*T) *T {
			return func(x *T) *T { peel.AddInPlace(w, 1.0); return peel.Mul(x, w) }
		}},
	}
	x := peel.FromFloat64s([]float64{0.3, -1.2, 0.7}, 3)
	for _, p := range progs {
		for _, pol := range []struct {
			name string
			p    transforms.SavePolicy
		}{{"nothing", transforms.NothingSaveable}, {"everything", transforms.EverythingSaveable}, {"mincut", transforms.MinCut}} {
			t.Run(fmt.Sprintf("%s/%s", p.name, pol.name), func(t *testing.T) {
				wEager := peel.FromFloat64s([]float64{1, 2, 3}, 3)
				wCk := peel.Clone(wEager)
				fe, fc := p.f(wEager), transforms.Checkpoint(p.f(wCk), pol.p)
				for call := range 3 {
					want, got := fe(x), fc(x)
					near(t, fmt.Sprintf("call %d result", call), got.Float64s(), want.Float64s(), 1e-12)
					near(t, fmt.Sprintf("call %d captured", call), wCk.Float64s(), wEager.Float64s(), 1e-12)
				}
				// Gradients: the captured tensor receives the primal,
				// the derivative flows through the write.
				ge := transforms.Grad(func(x *T) *T { return peel.Sum(fe(x)) })(x)
				gc := transforms.Grad(func(x *T) *T { return peel.Sum(fc(x)) })(x)
				near(t, "grad", gc.Float64s(), ge.Float64s(), 1e-12)
				near(t, "captured after grad", wCk.Float64s(), wEager.Float64s(), 1e-12)
			})
		}
	}
}

// TestCompileWriteIntoTensorMadeInside: a compiled function that writes,
// through a view, a value computed from its argument into a tensor it
// makes itself is one program traced once, equal to eager on every
// call. The tensor is no captured tensor (it is made afresh at every
// call); taking it for one made Compile refuse the function.
func TestCompileWriteIntoTensorMadeInside(t *testing.T) {
	f := func(x *T) *T {
		y := peel.Zeros(peel.Float64, 3)
		peel.CopyInto(peel.Narrow(y, 0, 0, 2), peel.Narrow(peel.Sin(x), 0, 0, 2))
		peel.AddInPlace(y, x)
		return peel.Mul(y, x)
	}
	var cIns transforms.Inspector
	c := transforms.Compile(f, transforms.Inspect(&cIns))
	ck := transforms.Checkpoint(f, transforms.NothingSaveable)
	for call := range 3 {
		x := peel.FromFloat64s([]float64{1, 2, float64(call)}, 3)
		want := f(x).Float64s()
		near(t, fmt.Sprintf("compiled call %d", call), c(x).Float64s(), want, 1e-12)
		near(t, fmt.Sprintf("checkpointed call %d", call), ck(x).Float64s(), want, 1e-12)
	}
	if s := cIns.Stats(); s.Misses != 1 {
		t.Fatalf("%d traces, want 1 (%s)", s.Misses, s.LastMiss)
	}
}
