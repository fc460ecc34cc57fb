package peel_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/optest"
	"github.com/peel-ml/peel/transforms"
)

// Tests of the shape and index operations of issue 17 beyond the
// registry (which checks every op against a host reference under every
// transform): values numpy and torch document, piece counts, gradients
// at zeros and ties, errors, and properties over random inputs.

func smF(data []float64, shape ...int) *peel.Tensor {
	return peel.FromFloat64s(data, append([]int{}, shape...)...)
}

func smI(data []int64, shape ...int) *peel.Tensor {
	return peel.FromInt64s(data, append([]int{}, shape...)...)
}

func smSeq(shape ...int) *peel.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = float64(i)
	}
	return smF(d, shape...)
}

// smTB is what the checks need of *testing.T and *rapid.T.
type smTB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// smIs fails unless x has the given shape and values (read as float64).
func smIs(t smTB, what string, x *peel.Tensor, shape []int, want []float64) {
	t.Helper()
	h := optest.ToHost(x)
	if !slices.Equal(h.Shape, shape) {
		t.Fatalf("%s: shape %v, want %v", what, h.Shape, shape)
	}
	for i := range want {
		if h.Data[i] != want[i] && !(math.IsNaN(h.Data[i]) && math.IsNaN(want[i])) {
			t.Fatalf("%s: values %v, want %v", what, h.Data, want)
		}
	}
	if len(h.Data) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(h.Data), len(want))
	}
}

// smEqual fails unless a and b have one shape and dtype and equal values.
func smEqual(t smTB, what string, a, b *peel.Tensor) {
	t.Helper()
	if a.DType() != b.DType() {
		t.Fatalf("%s: dtypes %v and %v", what, a.DType(), b.DType())
	}
	if msg := optest.Compare(optest.ToHost(a), optest.ToHost(b), -1); msg != "" {
		t.Fatalf("%s: %s", what, msg)
	}
}

func smErr(t *testing.T, op string, f func(), wants ...string) {
	t.Helper()
	err := peel.Catch(f)
	if err == nil {
		t.Fatalf("%s: no error", op)
	}
	var pe *peel.Error
	if !errors.As(err, &pe) {
		t.Fatalf("%s: error %v is not a *peel.Error", op, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, op) {
		t.Fatalf("error %q does not name %s", msg, op)
	}
	for _, w := range wants {
		if !strings.Contains(msg, w) {
			t.Fatalf("error %q does not contain %q", msg, w)
		}
	}
}

func TestShapeMoreValues(t *testing.T) {
	m := smSeq(3, 4)
	smIs(t, "Tril", peel.Tril(m, 0), []int{3, 4}, []float64{0, 0, 0, 0, 4, 5, 0, 0, 8, 9, 10, 0})
	smIs(t, "Triu/1", peel.Triu(m, 1), []int{3, 4}, []float64{0, 1, 2, 3, 0, 0, 6, 7, 0, 0, 0, 11})
	smIs(t, "Tril/-5", peel.Tril(m, -5), []int{3, 4}, make([]float64, 12))
	smIs(t, "Triu/-9", peel.Triu(m, -9), []int{3, 4}, optest.ToHost(m).Data)
	smIs(t, "Diag/1", peel.Diag(smF([]float64{1, 2}, 2), 1), []int{3, 3}, []float64{0, 1, 0, 0, 0, 2, 0, 0, 0})
	smIs(t, "Diag/-1", peel.Diag(smF([]float64{1, 2}, 2), -1), []int{3, 3}, []float64{0, 0, 0, 1, 0, 0, 0, 2, 0})
	smIs(t, "Diag/empty", peel.Diag(smF(nil, 0), 2), []int{2, 2}, []float64{0, 0, 0, 0})
	smIs(t, "Diag/matrix", peel.Diag(m, -1), []int{2}, []float64{4, 9})
	smIs(t, "Diagonal", peel.Diagonal(smSeq(2, 3, 4), 1, 1, 2), []int{2, 3}, []float64{1, 6, 11, 13, 18, 23})
	smIs(t, "Diagonal/swapped", peel.Diagonal(smSeq(2, 3, 4), 0, 2, 0), []int{3, 2}, []float64{0, 13, 4, 17, 8, 21})
	smIs(t, "Diagonal/outside", peel.Diagonal(m, 4, 0, 1), []int{0}, nil)
	smIs(t, "Trace", peel.Trace(smSeq(3, 3), 0), []int{}, []float64{12})
	smIs(t, "Trace/1", peel.Trace(smSeq(3, 3), 1), []int{}, []float64{6})
	smIs(t, "Trace/bool", peel.Trace(peel.FromBools([]bool{true, false, false, true}, 2, 2), 0), []int{}, []float64{2})
	if d := peel.Trace(peel.FromBools([]bool{true}, 1, 1), 0).DType(); d != peel.Int64 {
		t.Fatalf("Trace of bool has dtype %v, want i64", d)
	}
	smIs(t, "Roll/flat", peel.Roll(smSeq(10), 2), []int{10}, []float64{8, 9, 0, 1, 2, 3, 4, 5, 6, 7})
	smIs(t, "Roll/flat2d", peel.Roll(smSeq(2, 5), 1), []int{2, 5}, []float64{9, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	smIs(t, "Roll/axis", peel.Roll(smSeq(2, 5), 1, 1), []int{2, 5}, []float64{4, 0, 1, 2, 3, 9, 5, 6, 7, 8})
	smIs(t, "Roll/-1,both", peel.Roll(smSeq(2, 3), -1, 0, 1), []int{2, 3}, []float64{4, 5, 3, 1, 2, 0})
	smIs(t, "Rot90", peel.Rot90(smF([]float64{1, 2, 3, 4}, 2, 2), 1, [2]int{0, 1}), []int{2, 2}, []float64{2, 4, 1, 3})
	smIs(t, "Rot90/-1", peel.Rot90(smF([]float64{1, 2, 3, 4}, 2, 2), -1, [2]int{0, 1}), []int{2, 2}, []float64{3, 1, 4, 2})
	smIs(t, "Rot90/2x3", peel.Rot90(smSeq(2, 3), 1, [2]int{0, 1}), []int{3, 2}, []float64{2, 5, 1, 4, 0, 3})
	smIs(t, "RepeatInterleave", peel.RepeatInterleave(smF([]float64{1, 2, 3}, 3), []int{2}, 0), []int{6}, []float64{1, 1, 2, 2, 3, 3})
	smIs(t, "RepeatInterleave/per", peel.RepeatInterleave(smF([]float64{1, 2, 3, 4}, 2, 2), []int{1, 2}, 0), []int{3, 2}, []float64{1, 2, 3, 4, 3, 4})
	smIs(t, "RepeatInterleave/0", peel.RepeatInterleave(smSeq(2, 2), []int{0}, 1), []int{2, 0}, nil)
	x, y := peel.Meshgrid("xy", smF([]float64{1, 2, 3}, 3), smF([]float64{4, 5}, 2))[0], peel.Meshgrid("xy", smF([]float64{1, 2, 3}, 3), smF([]float64{4, 5}, 2))[1]
	smIs(t, "Meshgrid/xy/X", x, []int{2, 3}, []float64{1, 2, 3, 1, 2, 3})
	smIs(t, "Meshgrid/xy/Y", y, []int{2, 3}, []float64{4, 4, 4, 5, 5, 5})
	g := peel.Meshgrid("ij", smF([]float64{1, 2, 3}, 3), smF([]float64{4, 5}, 2))
	smIs(t, "Meshgrid/ij/0", g[0], []int{3, 2}, []float64{1, 1, 2, 2, 3, 3})
	if len(peel.Meshgrid("ij")) != 0 {
		t.Fatal("Meshgrid of no tensors gives results")
	}
	smIs(t, "Kron", peel.Kron(smF([]float64{1, 2, 3, 4}, 2, 2), smF([]float64{0, 5, 6, 7}, 2, 2)), []int{4, 4},
		[]float64{0, 5, 0, 10, 6, 7, 12, 14, 0, 15, 0, 20, 18, 21, 24, 28})
	smIs(t, "Kron/vec", peel.Kron(smF([]float64{1, 10}, 2), smF([]float64{1, 2, 3}, 3)), []int{6}, []float64{1, 2, 3, 10, 20, 30})
	smIs(t, "Cross", peel.Cross(smF([]float64{1, 0, 0, 0, 1, 0}, 2, 3), smF([]float64{0, 1, 0}, 3), -1), []int{2, 3}, []float64{0, 0, 1, 0, 0, 0})
	smIs(t, "Cross/axis0", peel.Cross(smF([]float64{1, 2, 3}, 3, 1), smF([]float64{4, 5, 6}, 3, 1), 0), []int{3, 1}, []float64{-3, 6, -3})
	a, b := smF([]float64{0, 0, 1, 1}, 2, 2), smF([]float64{1, 0, 4, 4}, 2, 2)
	smIs(t, "Cdist/2", peel.Cdist(a, b, 2), []int{2, 2}, []float64{1, math.Sqrt(32), 1, math.Sqrt(18)})
	smIs(t, "Cdist/1", peel.Cdist(a, b, 1), []int{2, 2}, []float64{1, 8, 1, 6})
	smIs(t, "Cdist/inf", peel.Cdist(a, b, math.Inf(1)), []int{2, 2}, []float64{1, 4, 1, 3})
	smIs(t, "Cdist/0", peel.Cdist(a, b, 0), []int{2, 2}, []float64{1, 2, 1, 2})
	smIs(t, "Cdist/ints", peel.Cdist(smI([]int64{0, 3}, 1, 2), smI([]int64{4, 0}, 1, 2), 2), []int{1, 1}, []float64{5})
	mask := peel.FromBools([]bool{true, false, false, true}, 2, 2)
	smIs(t, "MaskedFill", peel.MaskedFill(smSeq(2, 2), mask, -1), []int{2, 2}, []float64{-1, 1, 2, -1})
	smIs(t, "MaskedFill/i64", peel.MaskedFill(smI([]int64{1, 2}, 2), peel.FromBools([]bool{true, false}, 2), 2.7), []int{2}, []float64{2, 2})
	smIs(t, "MaskedSelect", peel.MaskedSelect(smF([]float64{1, 2, 3, 4}, 2, 2), mask, 3, -1), []int{3}, []float64{1, 4, -1})
	smIs(t, "MaskedSelect/cut", peel.MaskedSelect(smF([]float64{1, 2, 3, 4}, 2, 2), mask, 1, -1), []int{1}, []float64{1})
	nz := peel.Nonzero(smF([]float64{0, 1, 2, 0}, 2, 2), 3, -1)
	smIs(t, "Nonzero/rows", nz[0], []int{3}, []float64{0, 1, -1})
	smIs(t, "Nonzero/cols", nz[1], []int{3}, []float64{1, 0, -1})
	nz = peel.Nonzero(smF([]float64{math.NaN(), 0, math.Copysign(0, -1)}, 3), 2, 7)
	smIs(t, "Nonzero/nan", nz[0], []int{2}, []float64{0, 7})
	dup := smI([]int64{0, 0, 2, -1}, 4)
	smIs(t, "IndexPut/replace", peel.IndexPut(peel.Zeros(peel.Float64, 4), []*peel.Tensor{dup}, smF([]float64{1, 2, 3, 4}, 4), false), []int{4}, []float64{2, 0, 3, 4})
	smIs(t, "IndexPut/accumulate", peel.IndexPut(peel.Zeros(peel.Float64, 4), []*peel.Tensor{dup}, smF([]float64{1, 2, 3, 4}, 4), true), []int{4}, []float64{3, 0, 3, 4})
	smIs(t, "IndexPut/two", peel.IndexPut(smSeq(2, 3), []*peel.Tensor{smI([]int64{1, 0}, 2), smI([]int64{2}, 1)}, 9.0, false), []int{2, 3}, []float64{0, 1, 9, 3, 4, 9})
	smIs(t, "IndexPut/rows", peel.IndexPut(smSeq(3, 2), []*peel.Tensor{smI([]int64{2}, 1)}, smF([]float64{7, 8}, 2), false), []int{3, 2}, []float64{0, 1, 2, 3, 7, 8})

	// torch's documented examples of scatter_reduce.
	src := smF([]float64{1, 2, 3, 4, 5, 6}, 6)
	idx := smI([]int64{0, 1, 0, 1, 2, 1}, 6)
	in := smF([]float64{1, 2, 3, 4}, 4)
	smIs(t, "ScatterReduce/sum", peel.ScatterReduce(in, idx, src, 0, "sum", true), []int{4}, []float64{5, 14, 8, 4})
	smIs(t, "ScatterReduce/amax/exclude", peel.ScatterReduce(in, idx, src, 0, "amax", false), []int{4}, []float64{3, 6, 5, 4})
	smIs(t, "ScatterReduce/prod", peel.ScatterReduce(in, idx, src, 0, "prod", true), []int{4}, []float64{3, 96, 15, 4})
	smIs(t, "ScatterReduce/mean", peel.ScatterReduce(in, idx, src, 0, "mean", true), []int{4}, []float64{5.0 / 3, 3.5, 4, 4})
	smIs(t, "ScatterReduce/mean/exclude", peel.ScatterReduce(in, idx, src, 0, "mean", false), []int{4}, []float64{2, 4, 5, 4})
	smIs(t, "ScatterReduce/amin", peel.ScatterReduce(in, idx, src, 0, "amin", true), []int{4}, []float64{1, 2, 3, 4})
	smIs(t, "ScatterReduce/mean/i64", peel.ScatterReduce(smI([]int64{0, 0}, 2), smI([]int64{0, 0, 1}, 3), smI([]int64{-1, -2, 3}, 3), 0, "mean", false),
		[]int{2}, []float64{-2, 3}) // floor(-3/2)
	smIs(t, "ScatterReduce/amax/nan", peel.ScatterReduce(smF([]float64{1, 1}, 2), smI([]int64{0, 0}, 2), smF([]float64{math.NaN(), 5}, 2), 0, "amax", true),
		[]int{2}, []float64{math.NaN(), 1})
	smIs(t, "ScatterReduce/amax/i64/exclude", peel.ScatterReduce(smI([]int64{7, 7}, 2), smI([]int64{1}, 1), smI([]int64{math.MinInt64}, 1), 0, "amax", false),
		[]int{2}, []float64{7, math.MinInt64})
}

func TestChunkPieces(t *testing.T) {
	for _, c := range []struct {
		size, n int
		want    []int
	}{
		{5, 4, []int{2, 2, 1}}, {6, 4, []int{2, 2, 2}}, {3, 5, []int{1, 1, 1}}, {7, 3, []int{3, 3, 1}},
		{4, 1, []int{4}}, {0, 3, []int{0, 0, 0}}, {9, 3, []int{3, 3, 3}},
	} {
		ps := peel.Chunk(smSeq(2, c.size), c.n, 1)
		got := make([]int, len(ps))
		for i, p := range ps {
			got[i] = p.Shape()[1]
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Chunk of size %d into %d: sizes %v, want %v (torch)", c.size, c.n, got, c.want)
		}
	}
	if n := len(peel.Unbind(smSeq(2, 0), 1)); n != 0 {
		t.Errorf("Unbind of an empty axis gives %d tensors", n)
	}
}

// TestShapeMoreGradients checks the derivative conventions the doc
// comments state, where finite differences do not apply.
func TestShapeMoreGradients(t *testing.T) {
	grad := func(f func(*peel.Tensor) *peel.Tensor, x *peel.Tensor) *peel.Tensor {
		return transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(f(x)) })(x)
	}
	// Cdist at a zero distance: 0, not NaN, for every p; the other row's
	// gradient is the usual one.
	x1 := smF([]float64{1, 2, 0, 0}, 2, 2)
	x2 := smF([]float64{1, 2}, 1, 2)
	for _, p := range []float64{2, 1, 3, 0.5, math.Inf(1), 0} {
		g := grad(func(x *peel.Tensor) *peel.Tensor { return peel.Cdist(x, x2, p) }, x1)
		h := optest.ToHost(g).Data
		if h[0] != 0 || h[1] != 0 {
			t.Errorf("Cdist p=%v: gradient at zero distance is %v, want 0", p, h[:2])
		}
		for _, v := range h {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("Cdist p=%v: gradient %v is not finite", p, h)
			}
		}
		if p == 2 {
			r := math.Sqrt(5)
			if math.Abs(h[2]+1/r) > 1e-12 || math.Abs(h[3]+2/r) > 1e-12 {
				t.Errorf("Cdist p=2: gradient of the second row %v, want [%v %v]", h[2:], -1/r, -2/r)
			}
		}
	}
	// Second derivative (Hessian) at a zero distance is finite too.
	h := transforms.Hessian(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Cdist(x, x2, 2)) })(x1)
	if !optest.AllFinite(h) {
		t.Errorf("Hessian of Cdist at a zero distance is not finite: %v", optest.ToHost(h).Data)
	}

	// amax ties split evenly, x's own element included with includeSelf.
	idx := smI([]int64{0, 0, 1}, 3)
	src := smF([]float64{3, 3, 2}, 3)
	x := smF([]float64{3, 5}, 2)
	gs := grad(func(s *peel.Tensor) *peel.Tensor { return peel.ScatterReduce(x, idx, s, 0, "amax", true) }, src)
	smIs(t, "amax ties: src", gs, []int{3}, []float64{1.0 / 3, 1.0 / 3, 0})
	gx := grad(func(x *peel.Tensor) *peel.Tensor { return peel.ScatterReduce(x, idx, src, 0, "amax", true) }, x)
	smIs(t, "amax ties: x", gx, []int{2}, []float64{1.0 / 3, 1})
	gs = grad(func(s *peel.Tensor) *peel.Tensor { return peel.ScatterReduce(x, idx, s, 0, "amin", false) }, src)
	smIs(t, "amin ties without self: src", gs, []int{3}, []float64{0.5, 0.5, 1})
	gx = grad(func(x *peel.Tensor) *peel.Tensor { return peel.ScatterReduce(x, idx, src, 0, "amin", false) }, x)
	smIs(t, "amin without self: x", gx, []int{2}, []float64{0, 0})

	// prod with zeros: the product of the other factors, exactly.
	one := smI([]int64{0, 0, 0}, 3)
	xp := smF([]float64{2}, 1)
	for _, c := range []struct {
		src, want []float64
		self      bool
	}{
		{[]float64{0, 3, 4}, []float64{24, 0, 0}, true},
		{[]float64{0, 0, 4}, []float64{0, 0, 0}, true},
		{[]float64{5, 3, 4}, []float64{24, 40, 30}, true},
		{[]float64{0, 3, 4}, []float64{12, 0, 0}, false},
	} {
		g := grad(func(s *peel.Tensor) *peel.Tensor { return peel.ScatterReduce(xp, one, s, 0, "prod", c.self) }, smF(c.src, 3))
		smIs(t, fmt.Sprintf("prod gradient at %v, self=%v", c.src, c.self), g, []int{3}, c.want)
	}
	gx = grad(func(x *peel.Tensor) *peel.Tensor {
		return peel.ScatterReduce(x, one, smF([]float64{0, 3, 4}, 3), 0, "prod", true)
	}, xp)
	smIs(t, "prod gradient of x with a zero src", gx, []int{1}, []float64{0})
	gx = grad(func(x *peel.Tensor) *peel.Tensor {
		return peel.ScatterReduce(x, one, smF([]float64{1, 3, 4}, 3), 0, "prod", true)
	}, smF([]float64{0}, 1))
	smIs(t, "prod gradient of a zero x", gx, []int{1}, []float64{12})
	// Second derivative of the product with two zeros: d²(x·0·0·4)/ds0 ds1 = 2·4.
	hs := transforms.Hessian(func(s *peel.Tensor) *peel.Tensor {
		return peel.Sum(peel.ScatterReduce(xp, one, s, 0, "prod", true))
	})(smF([]float64{0, 0, 4}, 3))
	smIs(t, "prod Hessian with two zeros", hs, []int{3, 3}, []float64{0, 8, 0, 8, 0, 0, 0, 0, 0})

	// IndexPut without accumulate: the gradient goes to the value that
	// was written (the last of repeated positions) and not to x there.
	dup := smI([]int64{1, 1}, 2)
	gv := grad(func(v *peel.Tensor) *peel.Tensor {
		return peel.IndexPut(peel.Zeros(peel.Float64, 3), []*peel.Tensor{dup}, v, false)
	}, smF([]float64{1, 2}, 2))
	smIs(t, "IndexPut gradient of the values", gv, []int{2}, []float64{0, 1})
	gx = grad(func(x *peel.Tensor) *peel.Tensor { return peel.IndexPut(x, []*peel.Tensor{dup}, 5.0, false) }, smF([]float64{1, 2, 3}, 3))
	smIs(t, "IndexPut gradient of x", gx, []int{3}, []float64{1, 0, 1})
}

func TestShapeMoreErrors(t *testing.T) {
	m := smSeq(3, 4)
	v := smSeq(3)
	i := smI([]int64{0, 1}, 2)
	smErr(t, "peel.Tril", func() { peel.Tril(v, 0) }, "rank 1")
	smErr(t, "peel.Triu", func() { peel.Triu(nil, 0) }, "nil")
	smErr(t, "peel.Diagonal", func() { peel.Diagonal(m, 0, 1, -1) }, "same axis")
	smErr(t, "peel.Diagonal", func() { peel.Diagonal(m, 0, 0, 2) }, "axis 2")
	smErr(t, "peel.Trace", func() { peel.Trace(v, 0) }, "rank 1")
	smErr(t, "peel.Diag", func() { peel.Diag(smSeq(2, 2, 2), 0) }, "rank 3")
	smErr(t, "peel.Diag", func() { peel.Diag(v, math.MinInt) }, "too large")
	smErr(t, "peel.Diag", func() { peel.Diag(v, math.MaxInt/2) }, "too large")
	smErr(t, "peel.Roll", func() { peel.Roll(m, 1, 0, -2) }, "repeated")
	smErr(t, "peel.Rot90", func() { peel.Rot90(m, 1, [2]int{1, -1}) }, "same axis")
	smErr(t, "peel.Rot90", func() { peel.Rot90(v, 1, [2]int{0, 1}) }, "rank 1")
	smErr(t, "peel.RepeatInterleave", func() { peel.RepeatInterleave(v, []int{1, 2}, 0) }, "2 repetition counts", "want 1 or 3")
	smErr(t, "peel.RepeatInterleave", func() { peel.RepeatInterleave(v, []int{-1}, 0) }, "negative")
	smErr(t, "peel.RepeatInterleave", func() { peel.RepeatInterleave(v, []int{math.MaxInt}, 0) }, "too large")
	smErr(t, "peel.Unbind", func() { peel.Unbind(peel.Scalar(1.0), 0) }, "axis 0")
	smErr(t, "peel.Chunk", func() { peel.Chunk(m, 0, 0) }, "at least 1")
	smErr(t, "peel.Chunk", func() { peel.Chunk(smSeq(0), math.MaxInt, 0) }, "too large")
	huge := peel.BroadcastTo(peel.Scalar(1.0), 1<<62)
	smErr(t, "peel.Chunk", func() { peel.Chunk(huge, math.MaxInt, 0) }, "too large")
	smErr(t, "peel.Unbind", func() { peel.Unbind(huge, 0) }, "too large")
	smErr(t, "peel.Meshgrid", func() { peel.Meshgrid("yx", v) }, "indexing")
	smErr(t, "peel.Meshgrid", func() { peel.Meshgrid("ij", v, m) }, "tensor 1", "rank 0 or 1")
	smErr(t, "peel.Kron", func() { peel.Kron(peel.FromBools([]bool{true}), v) }, "bool")
	smErr(t, "peel.Cross", func() { peel.Cross(m, m, 1) }, "size 4, not 3")
	smErr(t, "peel.Cross", func() { peel.Cross(smSeq(2, 3), smSeq(3, 3), -1) }, "broadcast")
	smErr(t, "peel.Cdist", func() { peel.Cdist(m, smSeq(2, 3), 2) }, "last (feature) dimension")
	smErr(t, "peel.Cdist", func() { peel.Cdist(v, v, 2) }, "rank at least 2")
	smErr(t, "peel.Cdist", func() { peel.Cdist(m, m, -1) }, "p = -1")
	smErr(t, "peel.Cdist", func() { peel.Cdist(m, m, math.NaN()) }, "p = NaN")
	smErr(t, "peel.MaskedFill", func() { peel.MaskedFill(m, smSeq(4), 1) }, "not bool")
	smErr(t, "peel.MaskedFill", func() { peel.MaskedFill(m, peel.FromBools([]bool{true, false}), 1) }, "mask", "cannot be broadcast")
	smErr(t, "peel.MaskedFill", func() { peel.MaskedFill(m, peel.FromBools([]bool{true}), v) }, "not a scalar")
	smErr(t, "peel.MaskedFill", func() { peel.MaskedFill(m, peel.FromBools([]bool{true}), "x") }, "has type string")
	smErr(t, "peel.MaskedSelect", func() { peel.MaskedSelect(m, peel.FromBools([]bool{true}), -1, 0) }, "negative size")
	smErr(t, "peel.Nonzero", func() { peel.Nonzero(peel.Scalar(1.0), 1, 0) }, "rank 0")
	smErr(t, "peel.IndexPut", func() { peel.IndexPut(m, nil, 1.0, false) }, "0 index tensors")
	smErr(t, "peel.IndexPut", func() { peel.IndexPut(m, []*peel.Tensor{smI([]int64{3}, 1)}, 1.0, false) }, "index 3", "size 3")
	smErr(t, "peel.IndexPut", func() { peel.IndexPut(m, []*peel.Tensor{i, smI([]int64{0, 1, 2}, 3)}, 1.0, false) }, "broadcast")
	smErr(t, "peel.IndexPut", func() { peel.IndexPut(m, []*peel.Tensor{i}, smSeq(2, 3), false) }, "values", "cannot be broadcast")
	smErr(t, "peel.IndexPut", func() {
		peel.IndexPut(smI([]int64{0}, 1), []*peel.Tensor{smI([]int64{0}, 1)}, smF([]float64{1.5}, 1), false)
	}, "can't be cast")
	smErr(t, "peel.IndexPut", func() { peel.IndexPut(peel.FromBools([]bool{true}), []*peel.Tensor{smI([]int64{0}, 1)}, true, true) }, "bool")
	smErr(t, "peel.ScatterReduce", func() { peel.ScatterReduce(v, smI([]int64{0}, 1), v, 0, "max", true) }, `reduce "max"`)
	smErr(t, "peel.ScatterReduce", func() { peel.ScatterReduce(v, smI([]int64{3}, 1), v, 0, "sum", true) }, "index 3")
	smErr(t, "peel.ScatterReduce", func() {
		peel.ScatterReduce(peel.FromBools([]bool{true}), smI([]int64{0}, 1), peel.FromBools([]bool{true}), 0, "amax", true)
	}, "bool")
	smErr(t, "peel.ScatterReduce", func() { peel.ScatterReduce(m, smI([]int64{0}, 1), v, 0, "sum", true) }, "same rank")
}

// TestRapidShapeMore checks algebraic identities of the new ops over
// random shapes, and the index ops against host loops with random
// indices.
func TestRapidShapeMore(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := rapid.IntRange(1, 3).Draw(rt, "rank")
		shape := make([]int, r)
		for i := range shape {
			shape[i] = rapid.IntRange(0, 4).Draw(rt, "dim")
		}
		g := optest.NewGen(uint64(rapid.Uint32().Draw(rt, "seed")))
		x := g.Tensor(peel.Float64, -5, 5, shape...)
		a := rapid.IntRange(-r, r-1).Draw(rt, "axis")
		s := rapid.IntRange(-9, 9).Draw(rt, "shift")
		smEqual(rt, "Roll back", peel.Roll(peel.Roll(x, s, a), -s, a), x)
		smEqual(rt, "Roll flat back", peel.Roll(peel.Roll(x, s), -s), x)
		if shape[(a+r)%r] > 0 {
			smEqual(rt, "Stack(Unbind)", peel.Stack(peel.Unbind(x, a), a), x)
		}
		n := rapid.IntRange(1, 5).Draw(rt, "chunks")
		smEqual(rt, "Concat(Chunk)", peel.Concat(peel.Chunk(x, n, a), a), x)
		reps := rapid.IntRange(0, 3).Draw(rt, "reps")
		per := make([]int, shape[(a+r)%r])
		for i := range per {
			per[i] = reps
		}
		smEqual(rt, "RepeatInterleave uniform vs per-slice", peel.RepeatInterleave(x, []int{reps}, a), peel.RepeatInterleave(x, per, a))
		if r >= 2 {
			k := rapid.IntRange(-5, 5).Draw(rt, "k")
			smEqual(rt, "Tril + Triu", peel.Add(peel.Tril(x, k), peel.Triu(x, k+1)), x)
			smEqual(rt, "Rot90 4 times", peel.Rot90(peel.Rot90(peel.Rot90(peel.Rot90(x, 1, [2]int{0, 1}), 1, [2]int{0, 1}), 1, [2]int{0, 1}), 1, [2]int{0, 1}), x)
			smEqual(rt, "Rot90 k then -k", peel.Rot90(peel.Rot90(x, k, [2]int{0, -1}), -k, [2]int{0, -1}), x)
			smEqual(rt, "Trace = Sum(Diagonal)", peel.Trace(x, k), peel.Sum(peel.Diagonal(x, k, 0, 1), -1))
		}
		if r == 1 {
			k := rapid.IntRange(-3, 3).Draw(rt, "k")
			smEqual(rt, "Diag(Diag)", peel.Diag(peel.Diag(x, k), k), x)
		}
		// MaskedSelect and Nonzero against a host loop.
		mask := g.Tensor(peel.Bool, 0, 1, shape...)
		size := rapid.IntRange(0, 8).Draw(rt, "size")
		hx, hm := optest.ToHost(x), optest.ToHost(mask)
		var sel []float64
		var coords [][]int
		for f, m := range hm.Data {
			if m != 0 {
				sel = append(sel, hx.Data[f])
				coords = append(coords, optest.Unravel(shape, f))
			}
		}
		want := make([]float64, size)
		for k := range want {
			want[k] = -7
			if k < len(sel) {
				want[k] = sel[k]
			}
		}
		smIs(rt, "MaskedSelect", peel.MaskedSelect(x, mask, size, -7), []int{size}, want)
		nz := peel.Nonzero(mask, size, -1)
		for d := range r {
			w := make([]float64, size)
			for k := range w {
				w[k] = -1
				if k < len(coords) {
					w[k] = float64(coords[k][d])
				}
			}
			smIs(rt, fmt.Sprintf("Nonzero axis %d", d), nz[d], []int{size}, w)
		}
	})
}

// TestRapidScatterReduce compares ScatterReduce and IndexPut with host
// loops over random indices (with repeats), shapes and reductions.
func TestRapidScatterReduce(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rows := rapid.IntRange(1, 4).Draw(rt, "rows")
		cols := rapid.IntRange(1, 3).Draw(rt, "cols")
		m := rapid.IntRange(0, 6).Draw(rt, "updates")
		g := optest.NewGen(uint64(rapid.Uint32().Draw(rt, "seed")))
		dt := rapid.SampledFrom([]peel.DType{peel.Float64, peel.Int64}).Draw(rt, "dtype")
		x := g.Tensor(dt, -4, 4, rows, cols)
		src := g.Tensor(dt, -4, 4, m, cols)
		ix := make([]int64, m*cols)
		for k := range ix {
			ix[k] = int64(rapid.IntRange(-rows, rows-1).Draw(rt, "index"))
		}
		idx := smI(ix, m, cols)
		reduce := rapid.SampledFrom([]string{"sum", "prod", "amax", "amin", "mean"}).Draw(rt, "reduce")
		self := rapid.Bool().Draw(rt, "self")
		got := peel.ScatterReduce(x, idx, src, 0, reduce, self)
		hx, hs := optest.ToHost(x), optest.ToHost(src)
		want := append([]float64{}, hx.Data...)
		for j := range cols {
			for i := range rows {
				var vals []float64
				if self {
					vals = append(vals, hx.Data[i*cols+j])
				}
				hit := false
				for u := range m {
					k := ix[u*cols+j]
					if k < 0 {
						k += int64(rows)
					}
					if int(k) == i {
						vals = append(vals, hs.Data[u*cols+j])
						hit = true
					}
				}
				if !hit {
					continue
				}
				var v float64
				switch reduce {
				case "sum", "mean":
					for _, e := range vals {
						v += e
					}
					if reduce == "mean" {
						v /= float64(len(vals))
						if dt == peel.Int64 {
							v = math.Floor(v)
						}
					}
				case "prod":
					v = 1
					for _, e := range vals {
						v *= e
					}
				case "amax":
					v = slices.Max(vals)
				case "amin":
					v = slices.Min(vals)
				}
				want[i*cols+j] = v
			}
		}
		h := optest.ToHost(got)
		for k := range want {
			if math.Abs(h.Data[k]-want[k]) > 1e-9*max(1, math.Abs(want[k])) {
				rt.Fatalf("ScatterReduce %s self=%v: %v, want %v", reduce, self, h.Data, want)
			}
		}
		// IndexPut with accumulate is ScatterAdd along rows.
		rowIdx := make([]int64, m)
		for u := range rowIdx {
			rowIdx[u] = ix[u*cols]
		}
		acc := peel.IndexPut(x, []*peel.Tensor{smI(rowIdx, m)}, src, true)
		ref := peel.IndexAdd(x, smI(rowIdx, m), src, 0)
		smEqual(rt, "IndexPut accumulate vs IndexAdd", acc, ref)
		rep := peel.IndexPut(x, []*peel.Tensor{smI(rowIdx, m)}, src, false)
		smEqual(rt, "IndexPut vs IndexCopy", rep, peel.IndexCopy(x, smI(rowIdx, m), src, 0))
	})
}

// TestInPlaceIndexOps checks that IndexPutInPlace and MaskedFillInPlace
// write through views into their base, and that under Functionalize and
// Grad they compute what the out-of-place forms do.
func TestInPlaceIndexOps(t *testing.T) {
	y := peel.Zeros(peel.Float64, 3, 4)
	peel.IndexPutInPlace(peel.Narrow(y, 0, 1, 2), []*peel.Tensor{smI([]int64{1, 0}, 2), smI([]int64{3, 0}, 2)}, smF([]float64{5, 6}, 2), false)
	smIs(t, "IndexPutInPlace through Narrow", y, []int{3, 4}, []float64{0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 5})
	peel.MaskedFillInPlace(peel.Transpose(y), peel.FromBools([]bool{true, false, false}, 3), -1)
	smIs(t, "MaskedFillInPlace through Transpose", y, []int{3, 4}, []float64{-1, -1, -1, -1, 6, 0, 0, 0, 0, 0, 0, 5})
	m := smSeq(3, 4)
	peel.CopyInto(peel.Diagonal(m, 1, 0, 1), -1)
	smIs(t, "write into Diagonal", m, []int{3, 4}, []float64{0, -1, 2, 3, 4, 5, -1, 7, 8, 9, 10, -1})
	smErr(t, "peel.MaskedFillInPlace", func() {
		peel.MaskedFillInPlace(peel.BroadcastTo(peel.Scalar(1.0), 2), peel.FromBools([]bool{true}), 0)
	}, "broadcast")

	idx := []*peel.Tensor{smI([]int64{0, 2}, 2)}
	mask := peel.FromBools([]bool{false, true, false}, 3)
	f := func(x *peel.Tensor) *peel.Tensor {
		z := peel.Clone(x)
		peel.IndexPutInPlace(peel.Select(z, 0, 1), idx, peel.Square(peel.Narrow(peel.Select(x, 0, 0), 0, 0, 2)), true)
		peel.MaskedFillInPlace(z, mask, peel.Sum(x))
		return peel.Sum(peel.Mul(z, z))
	}
	g := func(x *peel.Tensor) *peel.Tensor {
		row := peel.IndexPut(peel.Select(x, 0, 1), idx, peel.Square(peel.Narrow(peel.Select(x, 0, 0), 0, 0, 2)), true)
		z := peel.Stack([]*peel.Tensor{peel.Select(x, 0, 0), row}, 0)
		z = peel.MaskedFill(z, mask, peel.Sum(x))
		return peel.Sum(peel.Mul(z, z))
	}
	x := smF([]float64{1, -2, 0.5, 3, 1.5, -1}, 2, 3)
	want := transforms.Grad(g)(x)
	for name, got := range map[string]*peel.Tensor{
		"Grad":                transforms.Grad(f)(x),
		"Grad(Functionalize)": transforms.Grad(transforms.Functionalize(f))(x),
		"Functionalize(Grad)": transforms.Functionalize(transforms.Grad(f))(x),
	} {
		if msg := optest.Compare(optest.ToHost(got), optest.ToHost(want), 1e-12); msg != "" {
			t.Errorf("%s of the in-place program vs Grad of the out-of-place one: %s", name, msg)
		}
	}
	smEqual(t, "value", f(x), g(x))
}

// FuzzShapeMore calls the issue-17 shape and index ops with
// fuzzer-chosen shapes and integer arguments (offsets, axes, shifts,
// counts, sizes, indices): each returns a well-formed tensor or panics
// with a *peel.Error naming it, never a runtime panic.
func FuzzShapeMore(f *testing.F) {
	fuzzLimit(f)
	// op, rank, s0, s1, s2, a, b, c.
	f.Add(uint8(0), uint8(2), uint8(2), uint8(3), uint8(0), math.MinInt, 0, 0)
	f.Add(uint8(2), uint8(1), uint8(3), uint8(0), uint8(0), math.MaxInt, 0, 0)
	f.Add(uint8(2), uint8(1), uint8(3), uint8(0), uint8(0), math.MinInt, 0, 0)
	f.Add(uint8(3), uint8(2), uint8(2), uint8(3), uint8(0), math.MinInt, math.MaxInt, 1)
	f.Add(uint8(5), uint8(2), uint8(2), uint8(3), uint8(0), 1<<62, 0, 1)
	f.Add(uint8(5), uint8(2), uint8(2), uint8(3), uint8(0), math.MaxInt, 1, 0)
	f.Add(uint8(6), uint8(1), uint8(4), uint8(0), uint8(0), math.MaxInt, 0, 0)
	f.Add(uint8(9), uint8(2), uint8(2), uint8(3), uint8(0), math.MaxInt, -1, 0)
	f.Add(uint8(10), uint8(2), uint8(2), uint8(3), uint8(0), 1, math.MinInt, 0)
	f.Add(uint8(11), uint8(2), uint8(2), uint8(3), uint8(0), math.MaxInt, 0, 0)
	f.Fuzz(func(t *testing.T, op, rank, s0, s1, s2 uint8, a, b, c int) {
		x := fuzzTensor(rank, s0, s1, s2)
		idx := smI([]int64{int64(a), int64(b)}, 2)
		var name string
		var run func() *peel.Tensor
		switch op % 12 {
		case 0:
			name, run = "peel.Tril", func() *peel.Tensor { return peel.Tril(x, a) }
		case 1:
			name, run = "peel.Diagonal", func() *peel.Tensor { return peel.Diagonal(x, a, b, c) }
		case 2:
			name, run = "peel.Diag", func() *peel.Tensor { return peel.Diag(x, a) }
		case 3:
			name, run = "peel.Roll", func() *peel.Tensor { return peel.Roll(x, a, b, c) }
		case 4:
			name, run = "peel.Rot90", func() *peel.Tensor { return peel.Rot90(x, a, [2]int{b, c}) }
		case 5:
			name, run = "peel.RepeatInterleave", func() *peel.Tensor { return peel.RepeatInterleave(x, []int{a}, b) }
		case 6:
			name, run = "peel.Chunk", func() *peel.Tensor { return flatCat(peel.Chunk(x, a, b)) }
		case 7:
			name, run = "peel.Trace", func() *peel.Tensor { return peel.Trace(x, a) }
		case 8:
			name, run = "peel.MaskedSelect", func() *peel.Tensor {
				return peel.MaskedSelect(x, peel.FromBools([]bool{true}), a, 0)
			}
		case 9:
			name, run = "peel.Nonzero", func() *peel.Tensor { return flatCat(peel.Nonzero(x, a, int64(b))) }
		case 10:
			name, run = "peel.IndexPut", func() *peel.Tensor { return peel.IndexPut(x, []*peel.Tensor{idx}, 1.0, c%2 == 0) }
		default:
			name, run = "peel.ScatterReduce", func() *peel.Tensor {
				if x.Rank() == 0 {
					return peel.ScatterReduce(x, smI([]int64{int64(a)}), x, b, "amax", true)
				}
				i := peel.Reshape(idx, append([]int{2}, make([]int, x.Rank()-1)...)[:1]...)
				for range x.Rank() - 1 {
					i = peel.Unsqueeze(i, -1)
				}
				return peel.ScatterReduce(x, i, peel.Scalar(2.0), b, "prod", c%2 == 0)
			}
		}
		var y *peel.Tensor
		if fuzzCall(t, name, func() { y = run() }) {
			fuzzCheck(t, name, y)
		}
	})
}

// flatCat concatenates flattened pieces (a scalar zero for none).
func flatCat(ts []*peel.Tensor) *peel.Tensor {
	if len(ts) == 0 {
		return peel.Scalar(0.0)
	}
	f := make([]*peel.Tensor, len(ts))
	for i, t := range ts {
		f[i] = peel.AsType(peel.Flatten(t), peel.Float64)
	}
	return peel.Concat(f, 0)
}
