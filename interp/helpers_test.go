package interp_test

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Helpers of the interp tests: tensors, traces and a bit-for-bit
// comparison of results.

// Sizes around the blocked evaluation's parameters (interp.FuseBlock, interp.FuseMin).
const (
	ctBlock = 4096        // elements per block
	ctMin   = 4 * ctBlock // smallest fused size
)

// ctTensor returns a contiguous tensor holding data (a []bool, []int64,
// []float32 or []float64) with the given shape.
func ctTensor(data any, shape ...int) *interp.Tensor {
	be := cpu.New()
	return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(data), Shape: shape})
}

// ctSplat broadcasts the one-element slice v, as a rank-0 tensor, to
// shape: a zero-stride view.
func ctSplat(v any, shape ...int) *interp.Tensor {
	s := interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: shape, Dims: []int{}}, ctTensor(v))
	if a, _ := interp.ArrayOf(s); !a.IsSplat() {
		panic("ctSplat: not a splat")
	}
	return s
}

// ctHost returns t's elements in row-major order.
func ctHost(t *interp.Tensor) any {
	a, be := interp.ArrayOf(t)
	return be.ToHost(a)
}

func ctDiffSlice[T comparable](got, want []T, same func(a, b T) bool) string {
	if len(got) != len(want) {
		return fmt.Sprintf("got %d elements, want %d", len(got), len(want))
	}
	for i := range want {
		if !same(got[i], want[i]) {
			return fmt.Sprintf("element %d: got %v, want %v", i, got[i], want[i])
		}
	}
	return ""
}

// ctDiff describes the first difference between two host slices, or
// returns "" when they are equal bit for bit (any NaN equals any NaN).
func ctDiff(got, want any) string {
	eq := func(a, b int64) bool { return a == b }
	switch w := want.(type) {
	case []float64:
		if g, ok := got.([]float64); ok {
			return ctDiffSlice(g, w, func(a, b float64) bool {
				return math.Float64bits(a) == math.Float64bits(b) || (a != a && b != b)
			})
		}
	case []float32:
		if g, ok := got.([]float32); ok {
			return ctDiffSlice(g, w, func(a, b float32) bool {
				return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
			})
		}
	case []int64:
		if g, ok := got.([]int64); ok {
			return ctDiffSlice(g, w, eq)
		}
	case []bool:
		if g, ok := got.([]bool); ok {
			return ctDiffSlice(g, w, func(a, b bool) bool { return a == b })
		}
	}
	return fmt.Sprintf("got %T, want %T", got, want)
}

type ctFataler interface {
	Fatalf(format string, args ...any)
}

// ctSameResults fails unless got and want hold the same tensors' types
// and elements.
func ctSameResults(t ctFataler, what string, got, want []*interp.Tensor) {
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !got[i].IsConcrete() {
			t.Fatalf("%s: result %d is not concrete", what, i)
		}
		if got[i].TypeString() != want[i].TypeString() {
			t.Fatalf("%s: result %d is %s, want %s", what, i, got[i].TypeString(), want[i].TypeString())
		}
		if d := ctDiff(ctHost(got[i]), ctHost(want[i])); d != "" {
			t.Fatalf("%s: result %d: %s", what, i, d)
		}
	}
}

func ctBind(p *interp.Prim, args ...*interp.Tensor) *interp.Tensor {
	return interp.Bind1(p, nil, args...)
}

// ctTrace traces f on example arguments of the given types.
func ctTrace(f func(a []*interp.Tensor) []*interp.Tensor, avals ...interp.Aval) *interp.Graph {
	return interp.TraceAvals("trace", f, avals)
}

func ctAval(dt backend.DType, shape ...int) interp.Aval { return interp.Aval{Shape: shape, DType: dt} }
