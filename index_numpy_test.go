package peel_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// pySlice is Python's slice(start, stop, step).indices(n), written from
// the language reference: the positions a slice takes of a sequence of n.
func pySlice(s peel.Span, n int) []int {
	step := s.Step
	var lo, hi int
	if step > 0 {
		lo, hi = 0, n
	} else {
		lo, hi = -1, n-1
	}
	norm := func(v, def int) int {
		if v == peel.Open {
			return def
		}
		if v < 0 {
			v += n
			if v < lo {
				v = lo
			}
		} else if v > hi {
			v = hi
		}
		return v
	}
	var start, stop int
	if step > 0 {
		start, stop = norm(s.Start, lo), norm(s.Stop, hi)
	} else {
		start, stop = norm(s.Start, hi), norm(s.Stop, lo)
	}
	var out []int
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		out = append(out, i)
	}
	return out
}

// atOracle computes x[index] element by element: each result element's
// position in x, with the items' own positions per axis.
func atOracle(x []float64, shape []int, index []any) ([]float64, []int) {
	named := 0
	for _, it := range index {
		switch it.(type) {
		case int, peel.Span:
			named++
		}
	}
	var items []any
	for _, it := range index {
		if it == any(peel.Ellipsis) {
			for range len(shape) - named {
				items = append(items, peel.S())
			}
			named = len(shape)
			continue
		}
		items = append(items, it)
	}
	for range len(shape) - named {
		items = append(items, peel.S())
	}
	// per is, for each input axis, the positions taken; kept says
	// whether the axis stays; out is the result's shape.
	var per [][]int
	var out []int
	a := 0
	for _, it := range items {
		switch v := it.(type) {
		case int:
			if v < 0 {
				v += shape[a]
			}
			per = append(per, []int{v})
			a++
		case peel.Span:
			p := pySlice(v, shape[a])
			per = append(per, p)
			out = append(out, len(p))
			a++
		default:
			out = append(out, 1)
		}
	}
	strides := make([]int, len(shape))
	st := 1
	for i := len(shape) - 1; i >= 0; i-- {
		strides[i] = st
		st *= shape[i]
	}
	var vals []float64
	var rec func(ax, off int)
	rec = func(ax, off int) {
		if ax == len(per) {
			vals = append(vals, x[off])
			return
		}
		for _, p := range per[ax] {
			rec(ax+1, off+p*strides[ax])
		}
	}
	rec(0, 0)
	return vals, out
}

func genIndex(t *rapid.T, shape []int) []any {
	var index []any
	a, ell := 0, false
	for a < len(shape) || rapid.IntRange(0, 4).Draw(t, "more") == 0 {
		if len(index) > 8 {
			break
		}
		switch k := rapid.IntRange(0, 4).Draw(t, "kind"); {
		case k == 0 && a < len(shape) && shape[a] > 0:
			index = append(index, rapid.IntRange(-shape[a], shape[a]-1).Draw(t, "int"))
			a++
		case k <= 2 && a < len(shape):
			b := func(name string) int {
				if rapid.Bool().Draw(t, name+"open") {
					return peel.Open
				}
				return rapid.IntRange(-shape[a]-2, shape[a]+2).Draw(t, name)
			}
			step := rapid.SampledFrom([]int{1, 1, 2, 3, -1, -2}).Draw(t, "step")
			index = append(index, peel.S(b("start"), b("stop"), step))
			a++
		case k == 3:
			index = append(index, peel.NewAxis)
		case k == 4 && !ell:
			index = append(index, peel.Ellipsis)
			ell = true
			a = len(shape) // the rest may be covered by it
		default:
			if a >= len(shape) {
				return index
			}
		}
	}
	return index
}

// TestAtMatchesNumPy: At's result equals the element-by-element NumPy
// semantics (Python's slice rules, written independently) on random
// shapes and indices, its gradient puts the cotangent back where the
// elements came from, and under Vmap it equals the loop over the batch.
func TestAtMatchesNumPy(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		shape := rapid.SliceOfN(rapid.IntRange(0, 5), 0, 4).Draw(t, "shape")
		size := 1
		for _, d := range shape {
			size *= d
		}
		vals := make([]float64, size)
		for i := range vals {
			vals[i] = float64(i) + 0.5
		}
		x := peel.FromFloat64s(vals, shape...)
		index := genIndex(t, shape)
		want, wantShape := atOracle(vals, shape, index)
		got := peel.At(x, index...)
		if !slices.Equal(got.Shape(), wantShape) || !slices.Equal(got.Float64s(), want) {
			t.Fatalf("At(%v, %s) = %v %v, want %v %v", shape, fmtIndex(index), got.Shape(), got.Float64s(), wantShape, want)
		}
		if len(want) == 0 {
			return
		}
		// The gradient of Σ c·x[index]: c where the elements were taken
		// (each element at most once: basic indexing takes no element
		// twice).
		c := make([]float64, len(want))
		for i := range c {
			c[i] = float64(i + 1)
		}
		ct := peel.FromFloat64s(c, wantShape...)
		g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Mul(peel.At(x, index...), ct)) })(x).Float64s()
		wantG := make([]float64, size)
		for i, v := range want {
			wantG[int(v)] = c[i] // vals[i] = i + 0.5: the value names its position
		}
		if !slices.Equal(g, wantG) {
			t.Fatalf("Grad of At(%v, %s) = %v, want %v", shape, fmtIndex(index), g, wantG)
		}
		// Vmap over a new leading axis of 2.
		xs := peel.Stack([]*peel.Tensor{x, peel.Neg(x)}, 0)
		vm := transforms.Vmap(func(x *peel.Tensor) *peel.Tensor { return peel.At(x, index...) })(xs)
		loop := peel.Stack([]*peel.Tensor{got, peel.At(peel.Neg(x), index...)}, 0)
		if !slices.Equal(vm.Float64s(), loop.Float64s()) || !slices.Equal(vm.Shape(), loop.Shape()) {
			t.Fatalf("Vmap of At(%v, %s) differs from the loop", shape, fmtIndex(index))
		}
	})
}

func fmtIndex(index []any) string {
	parts := make([]string, len(index))
	for i, it := range index {
		switch v := it.(type) {
		case peel.Span:
			f := func(b int) string {
				if b == peel.Open {
					return ""
				}
				return fmt.Sprint(b)
			}
			parts[i] = f(v.Start) + ":" + f(v.Stop) + ":" + fmt.Sprint(v.Step)
		default:
			if it == any(peel.NewAxis) {
				parts[i] = "None"
			} else if it == any(peel.Ellipsis) {
				parts[i] = "..."
			} else {
				parts[i] = fmt.Sprint(it)
			}
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// TestAtExamples: the forms of the NumPy tutorial, and the errors.
func TestAtExamples(t *testing.T) {
	x := peel.FromFloat64s([]float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 3, 4)
	for _, c := range []struct {
		name  string
		got   *peel.Tensor
		shape []int
		want  []float64
	}{
		{"x[1]", peel.At(x, 1), []int{4}, []float64{4, 5, 6, 7}},
		{"x[:, 0]", peel.At(x, peel.S(), 0), []int{3}, []float64{0, 4, 8}},
		{"x[-1, ::-1]", peel.At(x, -1, peel.S(peel.Open, peel.Open, -1)), []int{4}, []float64{11, 10, 9, 8}},
		{"x[:2, 1:3]", peel.At(x, peel.S(peel.Open, 2), peel.S(1, 3)), []int{2, 2}, []float64{1, 2, 5, 6}},
		{"x[..., None, 1]", peel.At(x, peel.Ellipsis, peel.NewAxis, 1), []int{3, 1}, []float64{1, 5, 9}},
		{"x[:100:2]", peel.At(x, peel.S(peel.Open, 100, 2)), []int{2, 4}, []float64{0, 1, 2, 3, 8, 9, 10, 11}},
		{"x[None]", peel.At(x, peel.NewAxis), []int{1, 3, 4}, []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
	} {
		if !slices.Equal(c.got.Shape(), c.shape) || !slices.Equal(c.got.Float64s(), c.want) {
			t.Errorf("%s = %v %v, want %v %v", c.name, c.got.Shape(), c.got.Float64s(), c.shape, c.want)
		}
	}
	for _, c := range []struct {
		name string
		f    func()
		want string
	}{
		{"int out of range", func() { peel.At(x, 3) }, "index 3 is out of range for axis 0 of size 3"},
		{"too many axes", func() { peel.At(x, 0, 0, 0) }, "names 3 axes"},
		{"two ellipses", func() { peel.At(x, peel.Ellipsis, peel.Ellipsis) }, "two ellipses"},
		{"a float", func() { peel.At(x, 1.5) }, "is a float64"},
		{"step 0", func() { peel.S(0, 1, 0) }, "step is 0"},
	} {
		err := peel.Catch(c.f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}
