package transforms_test

import (
	"fmt"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// TestCompileEagerValuesOfCapturedTensors: a compiled function that
// computes, from tensors it captures only, values that run eagerly while
// it is traced (the graph holds them as constants) must not run with
// those values once a captured tensor is written after the trace: a
// scaled, summed, transposed-and-copied capture, a temporary written
// with a value of the capture, a view of such a temporary, a capture
// combined with another. Each call is compared with the eager function,
// after a write into a captured tensor between calls. Before, the
// compiled function kept the first trace's values (3, then 3 where
// eager gives 5).
func TestCompileEagerValuesOfCapturedTensors(t *testing.T) {
	progs := []struct {
		name string
		f    func(w, b *T) func(*T) *T
	}{
		{"scaled", func(w, _ *T) func(*T) *T {
			return func(x *T) *T { return peel.Add(x, peel.Mul(w, 2.0)) }
		}},
		{"view of the capture", func(w, _ *T) func(*T) *T {
			return func(x *T) *T {
				return peel.Mul(x, peel.Concat([]*T{peel.Exp(peel.Narrow(w, 0, 1, 2)), peel.Narrow(w, 0, 0, 1)}, 0))
			}
		}},
		{"summed", func(w, _ *T) func(*T) *T {
			return func(x *T) *T { return peel.Mul(x, peel.Sum(w)) }
		}},
		{"two captures", func(w, b *T) func(*T) *T {
			return func(x *T) *T { return peel.Add(peel.Mul(x, peel.Exp(w)), peel.Neg(b)) }
		}},
		{"chain", func(w, _ *T) func(*T) *T {
			return func(x *T) *T { return peel.Mul(x, peel.Tanh(peel.Add(peel.Sin(w), 1.0))) }
		}},
		{"temporary written", func(w, _ *T) func(*T) *T {
			return func(x *T) *T {
				y := peel.Zeros(peel.Float64, 3)
				peel.CopyInto(peel.Narrow(y, 0, 1, 2), peel.Narrow(peel.Mul(w, 3.0), 0, 0, 2))
				return peel.Add(x, y)
			}
		}},
		{"view of a temporary", func(w, _ *T) func(*T) *T {
			return func(x *T) *T {
				m := peel.Reshape(peel.Concat([]*T{w, peel.Mul(w, 2.0)}, 0), 2, 3)
				return peel.Add(x, peel.Index(m, 1))
			}
		}},
	}
	for _, p := range progs {
		t.Run(p.name, func(t *testing.T) {
			w := peel.FromFloat64s([]float64{1, 2, 3}, 3)
			b := peel.FromFloat64s([]float64{0.5, -1, 2}, 3)
			f := p.f(w, b)
			var cIns transforms.Inspector
			c := transforms.Compile(f, transforms.Inspect(&cIns))
			x := peel.FromFloat64s([]float64{0.1, 0.2, 0.3}, 3)
			for call := range 4 {
				near(t, fmt.Sprintf("call %d", call), c(x).Float64s(), f(x).Float64s(), 1e-12)
				if call%2 == 0 {
					peel.AddInPlace(w, 1.0)
				} else {
					peel.CopyInto(b, peel.Mul(b, -2.0))
				}
			}
			// Calls with nothing written in between run the program.
			before := cIns.Stats().Misses
			for range 3 {
				near(t, "unchanged", c(x).Float64s(), f(x).Float64s(), 1e-12)
			}
			if s := cIns.Stats(); s.Misses != before+1 && s.Misses != before {
				t.Fatalf("%d traces for three calls on unchanged captures (%s)", s.Misses-before, s.LastMiss)
			}
		})
	}
}

// TestCompileEagerValuesOfManyCaptures: a value computed eagerly from
// more captured tensors than provenance records is of unknown
// provenance, and the compiled function traces again rather than run
// with it stale.
func TestCompileEagerValuesOfManyCaptures(t *testing.T) {
	ws := make([]*T, 80)
	for i := range ws {
		ws[i] = peel.FromFloat64s([]float64{float64(i)}, 1)
	}
	f := func(x *T) *T {
		acc := ws[0]
		for _, w := range ws[1:] {
			acc = peel.Add(acc, w)
		}
		return peel.Mul(x, acc)
	}
	var cIns transforms.Inspector
	c := transforms.Compile(f, transforms.RecompileLimit(100), transforms.Inspect(&cIns))
	x := peel.FromFloat64s([]float64{2}, 1)
	for call := range 3 {
		near(t, fmt.Sprintf("call %d", call), c(x).Float64s(), f(x).Float64s(), 1e-12)
		peel.AddInPlace(ws[70+call], 1.0)
	}
}

// TestCompileCapturedWriteNeverRead: a compiled function that writes a
// captured tensor with values that depend on no argument (a constant,
// another captured tensor) and never reads it afterwards writes it on
// every call, as eager code does. Before, the write happened once,
// while the function was traced, and every later call skipped it.
func TestCompileCapturedWriteNeverRead(t *testing.T) {
	progs := []struct {
		name string
		f    func(w, b *T) func(*T) *T
	}{
		{"constant", func(w, _ *T) func(*T) *T {
			return func(x *T) *T { peel.AddInPlace(w, 1.0); return peel.Mul(x, 2.0) }
		}},
		{"through a view", func(w, _ *T) func(*T) *T {
			return func(x *T) *T { peel.MulInPlace(peel.Narrow(w, 0, 1, 2), 3.0); return peel.Mul(x, 2.0) }
		}},
		{"another capture", func(w, b *T) func(*T) *T {
			return func(x *T) *T { peel.AddInPlace(w, b); return peel.Sin(x) }
		}},
	}
	for _, p := range progs {
		t.Run(p.name, func(t *testing.T) {
			we, be := peel.FromFloat64s([]float64{1, 2, 3}, 3), peel.FromFloat64s([]float64{0.5, 1, -1}, 3)
			wc, bc := peel.Clone(we), peel.Clone(be)
			var cIns transforms.Inspector
			fe, c := p.f(we, be), transforms.Compile(p.f(wc, bc), transforms.Inspect(&cIns))
			x := peel.FromFloat64s([]float64{0.1, 0.2, 0.3}, 3)
			for call := range 4 {
				near(t, fmt.Sprintf("call %d", call), c(x).Float64s(), fe(x).Float64s(), 1e-12)
				near(t, fmt.Sprintf("captured after call %d", call), wc.Float64s(), we.Float64s(), 1e-12)
			}
			if s := cIns.Stats(); s.Misses > 2 {
				t.Fatalf("%d traces for 4 calls (%s)", s.Misses, s.LastMiss)
			}
		})
	}
}
