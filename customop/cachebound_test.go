package customop_test

import (
	"slices"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/customop"
	"github.com/peel-ml/peel/transforms"
)

// TestShapeCacheBounded (issue 25, item 16): an op without a shape rule
// derives its result types from its composite and caches them by operand
// types; over ever new shapes the cache keeps at most its bound, and a
// shape evicted and met again gets the right type and value.
func TestShapeCacheBounded(t *testing.T) {
	const bound = 4
	op := customop.Define("cachetest.rowsum", 1, func(xs ...*peel.Tensor) *peel.Tensor { return peel.Sum(xs[0], -1) })
	defer customop.SetShapeCacheMax(op, bound)()
	for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1, 2, 3} {
		x := peel.Reshape(peel.Arange(peel.Float64, 0, float64(2*n), 1), 2, n)
		// Staging records the op as one equation of the derived type.
		got, want := transforms.MakeGraph(func(x *peel.Tensor) *peel.Tensor { return op.Call(x) }, x).Eval(x)[0], peel.Sum(x, -1)
		if !slices.Equal(got.Float64s(), want.Float64s()) || got.TypeString() != want.TypeString() {
			t.Fatalf("rowsum of f64[2,%d] = %v (%s), want %v", n, got, got.TypeString(), want)
		}
		if l := customop.ShapeCacheLen(op); l > bound || l == 0 {
			t.Fatalf("after f64[2,%d]: %d result types cached, want 1 to %d", n, l, bound)
		}
	}
}
