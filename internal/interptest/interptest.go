package interptest

import (
	"fmt"
	"math"
	"runtime"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Sizes around the blocked evaluation's parameters (compiler.FuseBlock, compiler.FuseMin).
const (
	Block = 4096      // elements per block
	Min   = 4 * Block // smallest fused size
)

// Tensor returns a contiguous tensor holding data (a []bool, []int64,
// []float32 or []float64) with the given shape.
func Tensor(data any, shape ...int) *interp.Tensor {
	be := cpu.New()
	return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(data), Shape: shape})
}

// Splat broadcasts the one-element slice v, as a rank-0 tensor, to
// shape: a zero-stride view.
func Splat(v any, shape ...int) *interp.Tensor {
	s := interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: shape, Dims: []int{}}, Tensor(v))
	if a, _ := interp.ArrayOf(s); !a.IsSplat() {
		panic("Splat: not a splat")
	}
	return s
}

// Host returns t's elements in row-major order.
func Host(t *interp.Tensor) any {
	a, be := interp.ArrayOf(t)
	h := be.ToHost(a)
	runtime.KeepAlive(t)
	return h
}

// diffSlice describes the first difference between got and want.
func diffSlice[T comparable](got, want []T, same func(a, b T) bool) string {
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

// Diff describes the first difference between two host slices, or
// returns "" when they are equal bit for bit (any NaN equals any NaN).
func Diff(got, want any) string {
	eq := func(a, b int64) bool { return a == b }
	switch w := want.(type) {
	case []float64:
		if g, ok := got.([]float64); ok {
			return diffSlice(g, w, func(a, b float64) bool {
				return math.Float64bits(a) == math.Float64bits(b) || (a != a && b != b)
			})
		}
	case []float32:
		if g, ok := got.([]float32); ok {
			return diffSlice(g, w, func(a, b float32) bool {
				return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
			})
		}
	case []int64:
		if g, ok := got.([]int64); ok {
			return diffSlice(g, w, eq)
		}
	case []bool:
		if g, ok := got.([]bool); ok {
			return diffSlice(g, w, func(a, b bool) bool { return a == b })
		}
	}
	return fmt.Sprintf("got %T, want %T", got, want)
}

// Fataler is what SameResults reports through (a *testing.T or a
// *rapid.T).
type Fataler interface {
	Fatalf(format string, args ...any)
}

// SameResults fails unless got and want hold the same tensors' types
// and elements.
func SameResults(t Fataler, what string, got, want []*interp.Tensor) {
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
		if d := Diff(Host(got[i]), Host(want[i])); d != "" {
			t.Fatalf("%s: result %d: %s", what, i, d)
		}
	}
}

// Bind binds p with no parameters and returns its one result.
func Bind(p *interp.Prim, args ...*interp.Tensor) *interp.Tensor {
	return interp.Bind1(p, nil, args...)
}

// Trace traces f on example arguments of the given types.
func Trace(f func(a []*interp.Tensor) []*interp.Tensor, avals ...interp.Aval) *interp.Graph {
	return interp.TraceAvals("trace", f, avals)
}

// Aval returns the abstract value of dtype dt and the shape.
func Aval(dt backend.DType, shape ...int) interp.Aval { return interp.Aval{Shape: shape, DType: dt} }

// Writes are the ways a test writes 10s into a tensor w of shape [3]
// after tracing with it: directly, through a view, and through another
// box sharing its memory.
func Writes() map[string]func(w *interp.Tensor) {
	ten := Splat([]float64{10}, 3)
	return map[string]func(w *interp.Tensor){
		"direct": func(w *interp.Tensor) { interp.Bind(prims.CopyInPlace, nil, w, ten) },
		"through a view": func(w *interp.Tensor) {
			v := interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: []int{3, 1}}, w)
			interp.Bind(prims.CopyInPlace, nil, v, Splat([]float64{10}, 3, 1))
		},
		"through another box": func(w *interp.Tensor) { interp.Bind(prims.CopyInPlace, nil, interp.NewBox(w), ten) },
	}
}

// Reencodes reports how g's exported-program encoding (graphio.Encode)
// differs from the encoding of the graph decoded from it: a parameter
// codec that reads a field into another's place writes it back there,
// whatever values the program computes. It is empty when the bytes agree,
// and otherwise names the first byte that differs (or the error).
func Reencodes(g *interp.Graph) string {
	b1, err := graphio.Encode(g, false)
	if err != nil {
		return err.Error()
	}
	g2, err := graphio.Decode(b1, cpu.New())
	if err != nil {
		return err.Error()
	}
	b2, err := graphio.Encode(g2, false)
	if err != nil {
		return err.Error()
	}
	if string(b1) != string(b2) {
		i := 0
		for i < len(b1) && i < len(b2) && b1[i] == b2[i] {
			i++
		}
		return fmt.Sprintf("%d bytes re-encode as %d, first differing at byte %d", len(b1), len(b2), i)
	}
	return ""
}
