package peel_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/optest"
	"github.com/peel-ml/peel/transforms"
)

// Tests of the matrix-structure operations (shape_matrix.go) beyond the
// registry (which checks every op against a host reference under every
// transform): values numpy and torch document, errors, and properties
// over random inputs. The sm helpers below are shared with the tests of
// shape.go, shape_rearrange.go, index_mask.go, scatter_reduce.go and
// Cdist (dot_test.go), written with them (issue 17).

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

func TestShapeMatrixValues(t *testing.T) {
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
	smIs(t, "Diagonal/default", peel.Diagonal(smSeq(3, 4)), []int{3}, []float64{0, 5, 10})
	smIs(t, "Diagonal/offset", peel.Diagonal(smSeq(3, 4), 1), []int{3}, []float64{1, 6, 11})
	smIs(t, "Diagonal/batch", peel.Diagonal(smSeq(2, 2, 2), 0, -2, -1), []int{2, 2}, []float64{0, 3, 4, 7})
	smIs(t, "Trace/default", peel.Trace(smSeq(3, 3)), []int{}, []float64{12})
	smIs(t, "Trace/axes", peel.Trace(smSeq(2, 2, 2), 0, 1, 2), []int{2}, []float64{3, 11})
	smIs(t, "Trace", peel.Trace(smSeq(3, 3), 0), []int{}, []float64{12})
	smIs(t, "Trace/1", peel.Trace(smSeq(3, 3), 1), []int{}, []float64{6})
	smIs(t, "Trace/bool", peel.Trace(peel.FromBools([]bool{true, false, false, true}, 2, 2), 0), []int{}, []float64{2})
	if d := peel.Trace(peel.FromBools([]bool{true}, 1, 1), 0).DType(); d != peel.Int64 {
		t.Fatalf("Trace of bool has dtype %v, want i64", d)
	}
	smIs(t, "Kron", peel.Kron(smF([]float64{1, 2, 3, 4}, 2, 2), smF([]float64{0, 5, 6, 7}, 2, 2)), []int{4, 4},
		[]float64{0, 5, 0, 10, 6, 7, 12, 14, 0, 15, 0, 20, 18, 21, 24, 28})
	smIs(t, "Kron/vec", peel.Kron(smF([]float64{1, 10}, 2), smF([]float64{1, 2, 3}, 3)), []int{6}, []float64{1, 2, 3, 10, 20, 30})
	smIs(t, "Cross", peel.Cross(smF([]float64{1, 0, 0, 0, 1, 0}, 2, 3), smF([]float64{0, 1, 0}, 3), -1), []int{2, 3}, []float64{0, 0, 1, 0, 0, 0})
	smIs(t, "Cross/axis0", peel.Cross(smF([]float64{1, 2, 3}, 3, 1), smF([]float64{4, 5, 6}, 3, 1), 0), []int{3, 1}, []float64{-3, 6, -3})
}

func TestShapeMatrixErrors(t *testing.T) {
	m := smSeq(3, 4)
	v := smSeq(3)
	smErr(t, "peel.Tril", func() { peel.Tril(v, 0) }, "rank 1")
	smErr(t, "peel.Triu", func() { peel.Triu(nil, 0) }, "nil")
	smErr(t, "peel.Diagonal", func() { peel.Diagonal(m, 0, 1, -1) }, "same axis")
	smErr(t, "peel.Diagonal", func() { peel.Diagonal(m, 0, 0, 2) }, "axis 2")
	smErr(t, "peel.Trace", func() { peel.Trace(v, 0) }, "rank 1")
	smErr(t, "peel.Diagonal", func() { peel.Diagonal(m, 0, 1) }, "give both axes")
	smErr(t, "peel.Diagonal", func() { peel.Diagonal(m, 0, 0, 1, 2) }, "at most 3")
	smErr(t, "peel.Trace", func() { peel.Trace(m, 0, 1, 1) }, "same axis")
	smErr(t, "peel.Diag", func() { peel.Diag(smSeq(2, 2, 2), 0) }, "rank 3")
	smErr(t, "peel.Diag", func() { peel.Diag(v, math.MinInt) }, "too large")
	smErr(t, "peel.Diag", func() { peel.Diag(v, math.MaxInt/2) }, "too large")
	smErr(t, "peel.Kron", func() { peel.Kron(peel.FromBools([]bool{true}), v) }, "bool")
	smErr(t, "peel.Cross", func() { peel.Cross(m, m, 1) }, "size 4, not 3")
	smErr(t, "peel.Cross", func() { peel.Cross(smSeq(2, 3), smSeq(3, 3), -1) }, "broadcast")
}

// smGrad returns the gradient of Sum(f(x)) at x.
func smGrad(f func(*peel.Tensor) *peel.Tensor, x *peel.Tensor) *peel.Tensor {
	return transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(f(x)) })(x)
}

// smDraw draws the rank (1 to 3), the shape (dimensions up to 4), a
// generator and an f64 tensor of that shape for a rapid property.
func smDraw(rt *rapid.T) (int, []int, *optest.Gen, *peel.Tensor) {
	r := rapid.IntRange(1, 3).Draw(rt, "rank")
	shape := make([]int, r)
	for i := range shape {
		shape[i] = rapid.IntRange(0, 4).Draw(rt, "dim")
	}
	g := optest.NewGen(uint64(rapid.Uint32().Draw(rt, "seed")))
	return r, shape, g, g.Tensor(peel.Float64, -5, 5, shape...)
}

// TestRapidShapeMatrix checks algebraic identities of the triangles and
// diagonals over random shapes.
func TestRapidShapeMatrix(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r, _, _, x := smDraw(rt)
		if r >= 2 {
			k := rapid.IntRange(-5, 5).Draw(rt, "k")
			smEqual(rt, "Tril + Triu", peel.Add(peel.Tril(x, k), peel.Triu(x, k+1)), x)
			smEqual(rt, "Trace = Sum(Diagonal)", peel.Trace(x, k), peel.Sum(peel.Diagonal(x, k, 0, 1), -1))
		}
		if r == 1 {
			k := rapid.IntRange(-3, 3).Draw(rt, "k")
			smEqual(rt, "Diag(Diag)", peel.Diag(peel.Diag(x, k), k), x)
		}
	})
}
