package transforms_test

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// A write program (issue 25, items 2 and 3): a function of two argument
// leaves that writes into captured tensors and into its arguments,
// directly, through views, and with aliased arguments. make builds a
// fresh state (the tensors f captures and those passed to it) from
// values vals and returns f, the tensors whose values are compared after
// every call, and the argument of call k.
type writeProgram struct {
	name string
	make func(vals []float64) (f func([2]*T) *T, state []*T, arg func(k int) [2]*T)
}

func wvec(vals []float64, off int) *T { return peel.FromFloat64s(slices.Clone(vals[off:off+3]), 3) }

// writePrograms are the programs of the compiled differential test. Each
// is called several times: a compiled function must replay every write
// on every call, never return what the trace computed.
var writePrograms = []writeProgram{
	{"captured += traced value", func(v []float64) (func([2]*T) *T, []*T, func(int) [2]*T) {
		W := wvec(v, 0)
		x, y := wvec(v, 3), wvec(v, 6)
		f := func(p [2]*T) *T { peel.AddInPlace(W, p[0]); return peel.Mul(p[1], W) }
		return f, []*T{W, x, y}, func(int) [2]*T { return [2]*T{x, y} }
	}},
	{"captured overwritten, then read", func(v []float64) (func([2]*T) *T, []*T, func(int) [2]*T) {
		W := wvec(v, 0)
		x, y := wvec(v, 3), wvec(v, 6)
		f := func(p [2]*T) *T {
			peel.CopyInto(W, peel.Add(W, peel.Mul(p[0], p[1])))
			return peel.Sum(peel.Mul(W, W))
		}
		return f, []*T{W, x, y}, func(int) [2]*T { return [2]*T{x, y} }
	}},
	{"captured written through a view made inside", func(v []float64) (func([2]*T) *T, []*T, func(int) [2]*T) {
		W := wvec(v, 0)
		x, y := wvec(v, 3), wvec(v, 6)
		f := func(p [2]*T) *T {
			peel.AddInPlace(peel.Narrow(W, 0, 1, 2), peel.Narrow(p[0], 0, 0, 2))
			return peel.Add(W, p[1])
		}
		return f, []*T{W, x, y}, func(int) [2]*T { return [2]*T{x, y} }
	}},
	{"captured written through a captured view", func(v []float64) (func([2]*T) *T, []*T, func(int) [2]*T) {
		W := wvec(v, 0)
		row := peel.Narrow(W, 0, 0, 2)
		x, y := wvec(v, 3), wvec(v, 6)
		f := func(p [2]*T) *T {
			peel.MulInPlace(row, peel.Narrow(p[0], 0, 1, 2))
			return peel.Mul(W, p[1])
		}
		return f, []*T{W, x, y}, func(int) [2]*T { return [2]*T{x, y} }
	}},
	{"captured += constant, then read", func(v []float64) (func([2]*T) *T, []*T, func(int) [2]*T) {
		W := wvec(v, 0)
		x, y := wvec(v, 3), wvec(v, 6)
		f := func(p [2]*T) *T { peel.AddInPlace(W, 1.0); return peel.Add(peel.Mul(p[0], W), p[1]) }
		return f, []*T{W, x, y}, func(int) [2]*T { return [2]*T{x, y} }
	}},
	{"captured read, then written through a view with a constant", func(v []float64) (func([2]*T) *T, []*T, func(int) [2]*T) {
		W := wvec(v, 0)
		x, y := wvec(v, 3), wvec(v, 6)
		f := func(p [2]*T) *T {
			r := peel.Mul(p[0], W)
			peel.MulInPlace(peel.Narrow(W, 0, 1, 2), 2.0)
			return peel.Add(r, peel.Mul(p[1], W))
		}
		return f, []*T{W, x, y}, func(int) [2]*T { return [2]*T{x, y} }
	}},
	{"captured written with a constant and with a traced value", func(v []float64) (func([2]*T) *T, []*T, func(int) [2]*T) {
		W, U := wvec(v, 0), wvec(v, 3)
		y := wvec(v, 6)
		f := func(p [2]*T) *T {
			peel.SubInPlace(W, 0.5)
			peel.AddInPlace(U, p[1])
			return peel.Mul(W, U)
		}
		return f, []*T{W, U, y}, func(int) [2]*T { return [2]*T{y, y} }
	}},
	{"argument is the captured tensor", func(v []float64) (func([2]*T) *T, []*T, func(int) [2]*T) {
		W := wvec(v, 0)
		y := wvec(v, 6)
		f := func(p [2]*T) *T { peel.AddInPlace(p[0], 1.0); return peel.Add(peel.Mul(W, 1.0), p[1]) }
		return f, []*T{W, y}, func(int) [2]*T { return [2]*T{W, y} }
	}},
	{"argument written through a view, captured read", func(v []float64) (func([2]*T) *T, []*T, func(int) [2]*T) {
		W := wvec(v, 0)
		y := wvec(v, 6)
		f := func(p [2]*T) *T {
			peel.SubInPlace(peel.Narrow(p[0], 0, 1, 2), peel.Narrow(p[1], 0, 0, 2))
			return peel.Mul(W, p[1])
		}
		return f, []*T{W, y}, func(int) [2]*T { return [2]*T{W, y} }
	}},
	{"tied arguments", func(v []float64) (func([2]*T) *T, []*T, func(int) [2]*T) {
		x := wvec(v, 3)
		f := func(p [2]*T) *T { peel.AddInPlace(p[0], 1.0); return peel.Mul(p[1], 2.0) }
		return f, []*T{x}, func(int) [2]*T { return [2]*T{x, x} }
	}},
	{"an argument a view of the other", func(v []float64) (func([2]*T) *T, []*T, func(int) [2]*T) {
		x := wvec(v, 3)
		f := func(p [2]*T) *T { peel.AddInPlace(p[0], p[0]); return peel.Mul(p[1], 10.0) }
		return f, []*T{x}, func(int) [2]*T { return [2]*T{x, peel.Narrow(x, 0, 1, 2)} }
	}},
	{"two views of one captured base", func(v []float64) (func([2]*T) *T, []*T, func(int) [2]*T) {
		x := wvec(v, 3)
		f := func(p [2]*T) *T { peel.CopyInto(p[0], peel.Add(p[1], 1.0)); return peel.Sum(p[1]) }
		return f, []*T{x}, func(int) [2]*T { return [2]*T{peel.Narrow(x, 0, 0, 2), peel.Narrow(x, 0, 1, 2)} }
	}},
	{"aliased arguments and a captured write", func(v []float64) (func([2]*T) *T, []*T, func(int) [2]*T) {
		W := wvec(v, 0)
		x := wvec(v, 3)
		f := func(p [2]*T) *T {
			peel.AddInPlace(W, p[1])
			peel.MulInPlace(p[0], 0.5)
			return peel.Add(W, p[1])
		}
		return f, []*T{W, x}, func(int) [2]*T { return [2]*T{x, x} }
	}},
	{"arguments alternately aliased", func(v []float64) (func([2]*T) *T, []*T, func(int) [2]*T) {
		x, y := wvec(v, 3), wvec(v, 6)
		f := func(p [2]*T) *T { peel.AddInPlace(p[0], p[1]); return peel.Mul(p[0], p[1]) }
		return f, []*T{x, y}, func(k int) [2]*T {
			if k%2 == 0 {
				return [2]*T{x, x}
			}
			return [2]*T{x, y}
		}
	}},
}

// runWrites calls g n times on a fresh state of p and records, per call,
// the result and the state's values after it.
func runWrites(p writeProgram, vals []float64, n int, wrap func(func([2]*T) *T) func([2]*T) *T) [][]float64 {
	f, state, arg := p.make(vals)
	g := wrap(f)
	var rec [][]float64
	for k := 0; k < n; k++ {
		rec = append(rec, g(arg(k)).Float64s())
		for _, s := range state {
			rec = append(rec, s.Float64s())
		}
	}
	return rec
}

// TestCompileWritesDifferential: a compiled function called N ≥ 3 times
// on programs that write captured tensors and arguments (through views
// too, and with aliased arguments) gives, call after call, the results
// and the tensors' values eager calls give; so does Functionalize.
func TestCompileWritesDifferential(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := rapid.SampledFrom(writePrograms).Draw(rt, "program")
		vals := rapid.SliceOfN(rapid.Float64Range(-2, 2), 9, 9).Draw(rt, "values")
		n := rapid.IntRange(3, 5).Draw(rt, "calls")
		want := runWrites(p, vals, n, func(f func([2]*T) *T) func([2]*T) *T { return f })
		for name, wrap := range map[string]func(func([2]*T) *T) func([2]*T) *T{
			"Compile":       func(f func([2]*T) *T) func([2]*T) *T { return transforms.Compile(f) },
			"Functionalize": func(f func([2]*T) *T) func([2]*T) *T { return transforms.Functionalize(f) },
		} {
			got := runWrites(p, vals, n, wrap)
			if d := diffRecords(got, want); d != "" {
				rt.Fatalf("%s of %q: %s", name, p.name, d)
			}
		}
	})
}

// diffRecords compares records exactly (the programs add and multiply
// the same values in the same order).
func diffRecords(got, want [][]float64) string {
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			return fmt.Sprintf("record %d: %v, eager %v", i, got[i], want[i])
		}
	}
	return ""
}
