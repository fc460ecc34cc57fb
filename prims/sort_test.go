package prims_test

import (
	"math/rand/v2"
	"testing"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// sortJVPCases: the tangent of the sorted key, alone and with a
// companion operand, both directions.
func sortJVPCases(r *rand.Rand) []jvpCase {
	return []jvpCase{
		{prim: prims.Sort, params: prims.SortParams{Axis: 0}, args: []*T{uniform(r, -2, 2, 5)}},
		{prim: prims.Sort, params: prims.SortParams{Axis: 1, Descending: true}, args: []*T{uniform(r, -2, 2, 3, 4)}},
		{prim: prims.Sort, params: prims.SortParams{Axis: 0}, args: []*T{uniform(r, -2, 2, 3, 2), uniform(r, -2, 2, 3, 2)}},
		{prim: prims.Sort, params: prims.SortParams{Axis: 1}, args: []*T{uniform(r, -2, 2, 2, 3), i64([]int64{0, 1, 2, 0, 1, 2}, 2, 3)}},
		{prim: prims.Cumprod, params: prims.CumsumParams{Axis: 0}, args: []*T{f64([]float64{0.5, 0, 2, -1.5, 0, 3, 1.25}, 7)}},
		{prim: prims.Cumprod, params: prims.CumsumParams{Axis: 1, Reverse: true}, args: []*T{uniform(r, -2, 2, 2, 5)}},
		{prim: prims.Cumprod, params: prims.CumsumParams{Axis: 0}, args: []*T{uniform(r, -2, 2, 3, 2)}},
		{prim: prims.Cumlogsumexp, params: prims.CumsumParams{Axis: 0}, args: []*T{f64([]float64{-30, 0.5, -1, 30, 2, 2}, 6)}},
		{prim: prims.Cumlogsumexp, params: prims.CumsumParams{Axis: 1, Reverse: true}, args: []*T{uniform(r, -2, 2, 2, 5)}},
		{prim: prims.Cummax, params: prims.CumsumParams{Axis: 1}, args: []*T{uniform(r, -2, 2, 3, 5)}},
		{prim: prims.Cummax, params: prims.CumsumParams{Axis: 0, Reverse: true}, args: []*T{uniform(r, -2, 2, 6)}},
		{prim: prims.Cummin, params: prims.CumsumParams{Axis: 0}, args: []*T{uniform(r, -2, 2, 4, 2)}},
		{prim: prims.Cummin, params: prims.CumsumParams{Axis: 0, Reverse: true}, args: []*T{uniform(r, -2, 2, 6)}},
		{prim: prims.Softmax, params: prims.AxisParams{Axis: 1}, args: []*T{uniform(r, -3, 3, 3, 5)}},
		{prim: prims.Softmax, params: prims.AxisParams{Axis: 0}, args: []*T{uniform(r, -3, 3, 4, 2)}},
		{prim: prims.Softmax, params: prims.AxisParams{Axis: 0}, args: []*T{f64([]float64{-40, 0.5, 30, 30}, 4)}},
		{prim: prims.SoftmaxLin, params: prims.AxisParams{Axis: 1}, args: []*T{uniform(r, -2, 2, 3, 5), uniform(r, 0, 1, 3, 5)}},
		{prim: prims.SoftmaxLin, params: prims.AxisParams{Axis: 0}, args: []*T{uniform(r, -2, 2, 4, 2), uniform(r, 0, 1, 4, 2)}},
		{prim: prims.LogSoftmax, params: prims.AxisParams{Axis: 1}, args: []*T{uniform(r, -3, 3, 3, 5)}},
		{prim: prims.LogSoftmax, params: prims.AxisParams{Axis: 0}, args: []*T{uniform(r, -3, 3, 4, 2)}},
		{prim: prims.LogSoftmax, params: prims.AxisParams{Axis: 0}, args: []*T{f64([]float64{-40, 0.5, 30, 30}, 4)}},
		{prim: prims.LayerNorm, params: prims.NormParams{Axes: 1, Eps: 1e-5}, args: []*T{uniform(r, -3, 3, 3, 5)}},
		{prim: prims.LayerNorm, params: prims.NormParams{Axes: 2, Eps: 0.1}, args: []*T{uniform(r, -3, 3, 2, 3, 4)}},
		{prim: prims.LayerNorm, params: prims.NormParams{Axes: 1, Eps: 0.5}, args: []*T{uniform(r, -3, 3, 6)}},
		{prim: prims.RMSNorm, params: prims.NormParams{Axes: 1, Eps: 1e-6}, args: []*T{uniform(r, -3, 3, 3, 5)}},
		{prim: prims.RMSNorm, params: prims.NormParams{Axes: 2, Eps: 0.1}, args: []*T{uniform(r, -3, 3, 2, 3, 4)}},
		// The tangent maps, in all three operands (a norm's second
		// derivatives).
		{prim: prims.LayerNormLin, params: prims.NormParams{Axes: 1, Eps: 1e-5}, args: []*T{uniform(r, -2, 2, 3, 5), uniform(r, -2, 2, 3, 5), uniform(r, 0.5, 2, 3)}},
		{prim: prims.LayerNormLin, params: prims.NormParams{Axes: 2, Eps: 1e-5}, args: []*T{uniform(r, -2, 2, 2, 3, 4), uniform(r, -2, 2, 2, 3, 4), uniform(r, 0.5, 2, 2)}},
		{prim: prims.RMSNormLin, params: prims.NormParams{Axes: 1, Eps: 1e-6}, args: []*T{uniform(r, -2, 2, 3, 5), uniform(r, -2, 2, 3, 5), uniform(r, 0.5, 2, 3)}},
		{prim: prims.RMSNormLin, params: prims.NormParams{Axes: 1, Eps: 1e-6}, args: []*T{uniform(r, -2, 2, 6), uniform(r, -2, 2, 6), uniform(r, 0.5, 2)}},
	}
}

// TestSortCompanionTangent: the tangent of a companion operand is its
// own tangent permuted by the key's order, and an integer companion has
// none.
func TestSortCompanionTangent(t *testing.T) {
	key := concrete([]float64{3, 1, 2, 0.5}, 4)
	comp := concrete([]float64{10, 20, 30, 40}, 4)
	perm := concrete([]int64{0, 1, 2, 3}, 4)
	tc := concrete([]float64{1, 2, 3, 4}, 4)
	outs, ts := prims.Sort.JVP(prims.SortParams{Axis: 0}, []*T{key, comp, perm}, []*T{nil, tc, nil})
	if ts[0] != nil || ts[2] != nil {
		t.Fatalf("tangents of the key (zero in) and the int companion must be nil")
	}
	if got, want := outs[2].Int64s(), []int64{3, 1, 2, 0}; !equalInts(got, want) {
		t.Fatalf("perm %v, want %v", got, want)
	}
	if got, want := ts[1].Float64s(), []float64{4, 2, 3, 1}; !equalFloats(got, want) {
		t.Fatalf("companion tangent %v, want %v", got, want)
	}
}

func TestTakeAlongAxis(t *testing.T) {
	x := concrete([]float64{0, 1, 2, 3, 4, 5}, 2, 3)
	idx := concrete([]int64{2, 0, 1, 1, 2, 0}, 2, 3)
	if got, want := prims.TakeAlongAxis(x, idx, 1).Float64s(), []float64{2, 0, 1, 4, 5, 3}; !equalFloats(got, want) {
		t.Fatalf("axis 1: %v, want %v", got, want)
	}
	idx0 := concrete([]int64{1, 0, 1}, 1, 3)
	if got, want := prims.TakeAlongAxis(x, idx0, 0).Float64s(), []float64{3, 1, 5}; !equalFloats(got, want) {
		t.Fatalf("axis 0: %v, want %v", got, want)
	}
	if err := interp.Catch(func() { prims.TakeAlongAxis(x, concrete([]int64{0}, 1), 0) }); err == nil {
		t.Fatalf("a rank mismatch must fail")
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
