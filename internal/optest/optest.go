// Package optest is peel's op registry, in the spirit of PyTorch's OpInfo:
// every public op of package peel is listed once with sample inputs
// (shapes including rank 0 and size-0 dimensions, every dtype it accepts,
// edge values) and a plain-Go reference. Generic tests sweep the registry
// — eval against the reference, Trace + Graph.Eval against eval — and later
// transforms (Grad, Vmap, Functionalize) sweep the same entries, so a new
// op is covered by adding one entry.
package optest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
)

// Host is a tensor's value on the host in float64 (bools as 0 and 1,
// integers exactly up to 2⁵³), the currency of reference implementations.
type Host struct {
	Shape []int
	DType peel.DType
	Data  []float64
}

// Size returns the number of elements.
func (h Host) Size() int { return backend.ShapeSize(h.Shape) }

// ToHost reads a concrete tensor.
func ToHost(t *peel.Tensor) Host {
	h := Host{Shape: append([]int{}, t.Shape()...), DType: t.DType()}
	switch t.DType() {
	case peel.Float64:
		h.Data = t.Float64s()
	case peel.Float32:
		for _, v := range t.Float32s() {
			h.Data = append(h.Data, float64(v))
		}
	case peel.Int64:
		for _, v := range t.Int64s() {
			h.Data = append(h.Data, float64(v))
		}
	case peel.Bool:
		for _, v := range t.Bools() {
			h.Data = append(h.Data, b2f(v))
		}
	default:
		h.Data = storageHost(t)
	}
	return h
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Tensor makes a tensor of h's dtype and shape.
func (h Host) Tensor() *peel.Tensor {
	switch h.DType {
	case peel.Float32:
		d := make([]float32, len(h.Data))
		for i, v := range h.Data {
			d[i] = float32(v)
		}
		return peel.FromFloat32s(d, h.Shape...)
	case peel.Int64:
		d := make([]int64, len(h.Data))
		for i, v := range h.Data {
			d[i] = int64(v)
		}
		return peel.FromInt64s(d, h.Shape...)
	case peel.Bool:
		d := make([]bool, len(h.Data))
		for i, v := range h.Data {
			d[i] = v != 0
		}
		return peel.FromBools(d, h.Shape...)
	}
	if h.DType.IsStorage() {
		return storageTensor(h)
	}
	return peel.FromFloat64s(append([]float64{}, h.Data...), h.Shape...)
}

// Sample is one input to an op.
type Sample struct {
	Name string
	Args []*peel.Tensor
}

// Op is one registry entry.
type Op struct {
	// Name is the public function, such as "peel.Add" or "peel.Sum/axes=[1]".
	Name string
	// F applies the op; non-tensor parameters are fixed in the closure.
	F func(args []*peel.Tensor) *peel.Tensor
	// Samples returns the inputs to check.
	Samples func() []Sample
	// Ref computes the expected result on the host.
	Ref func(args []Host) Host
	// Tol is the relative tolerance for float results (0: 1e-12 for f64,
	// 2e-6 for f32).
	Tol float64
	// Differentiable marks ops whose float inputs have derivatives, for
	// the autodiff sweeps.
	Differentiable bool
}

// Compare reports how got differs from want, or "" if they agree within
// tol (relative, with an absolute floor of tol near zero; NaN equals NaN;
// infinities must match exactly). tol 0 means DefaultTol, negative means
// exact.
func Compare(got, want Host, tol float64) string {
	if got.DType != want.DType {
		return fmt.Sprintf("dtype %v, want %v", got.DType, want.DType)
	}
	if fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) {
		return fmt.Sprintf("shape %v, want %v", got.Shape, want.Shape)
	}
	if len(got.Data) != len(want.Data) {
		return fmt.Sprintf("%d elements, want %d", len(got.Data), len(want.Data))
	}
	if tol == 0 || got.DType.IsStorage() && tol > 0 {
		tol = max(tol, DefaultTol(got.DType))
	}
	if tol < 0 { // exact
		tol = 0
	}
	for i, w := range want.Data {
		g := got.Data[i]
		switch {
		case math.IsNaN(w) || math.IsNaN(g):
			if math.IsNaN(w) != math.IsNaN(g) {
				return fmt.Sprintf("element %d is %v, want %v", i, g, w)
			}
		case math.IsInf(w, 0) || math.IsInf(g, 0):
			if g != w {
				return fmt.Sprintf("element %d is %v, want %v", i, g, w)
			}
		case !got.DType.IsFloat():
			if g != w {
				return fmt.Sprintf("element %d is %v, want %v", i, g, w)
			}
		case math.Abs(g-w) > tol*math.Max(1, math.Abs(w)):
			return fmt.Sprintf("element %d is %v, want %v (tolerance %g)", i, g, w, tol)
		}
	}
	return ""
}

// DefaultTol is the relative tolerance for results of dtype d.
func DefaultTol(d peel.DType) float64 {
	switch d {
	case peel.Float32:
		return 2e-6
	case peel.Float64:
		return 1e-12
	case peel.Float16:
		return Float16Tol
	case peel.BFloat16:
		return BFloat16Tol
	}
	return 0
}

// Gen makes deterministic sample data.
type Gen struct{ r *rand.Rand }

// NewGen returns a generator with a fixed seed.
func NewGen(seed uint64) *Gen { return &Gen{rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))} }

// Tensor returns a tensor of dtype d and shape with values in a range that
// suits d: floats in [lo, hi), integers in [lo, hi), bools half true.
func (g *Gen) Tensor(d peel.DType, lo, hi float64, shape ...int) *peel.Tensor {
	h := Host{Shape: shape, DType: d, Data: make([]float64, backend.ShapeSize(shape))}
	for i := range h.Data {
		v := lo + (hi-lo)*g.r.Float64()
		switch d {
		case peel.Int64:
			v = math.Floor(v)
		case peel.Bool:
			v = float64(g.r.IntN(2))
		case peel.Float32:
			v = float64(float32(v))
		case peel.Int32, peel.Uint8:
			v = Round(d, math.Floor(v))
		case peel.Float16, peel.BFloat16:
			v = Round(d, v)
		}
		h.Data[i] = v
	}
	return h.Tensor()
}

// Shapes are the shapes every op is sampled over where it accepts them:
// rank 0, a size-0 dimension, and ranks 1 to 3.
var Shapes = [][]int{{}, {0}, {1}, {5}, {2, 3}, {2, 0, 3}, {2, 3, 4}}

// FloatEdges are values floats are checked at.
var FloatEdges = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -2.5, 1e-30, 1e30, math.Inf(1), math.Inf(-1), math.NaN()}

// Index returns the flat row-major index of idx in shape.
func Index(shape, idx []int) int {
	f := 0
	for k, i := range idx {
		f = f*shape[k] + i
	}
	return f
}

// Unravel returns the multi-index of flat index f in shape.
func Unravel(shape []int, f int) []int {
	idx := make([]int, len(shape))
	for k := len(shape) - 1; k >= 0; k-- {
		if shape[k] > 0 {
			idx[k] = f % shape[k]
			f /= shape[k]
		}
	}
	return idx
}

// BroadcastShape returns the numpy broadcast of shapes (no checks).
func BroadcastShape(shapes ...[]int) []int {
	r := 0
	for _, s := range shapes {
		r = max(r, len(s))
	}
	out := make([]int, r)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		for i, d := range s {
			k := r - len(s) + i
			if d != 1 {
				out[k] = d
			}
		}
	}
	return out
}

// At reads h at a multi-index of a (possibly larger) broadcast shape.
func (h Host) At(idx []int) float64 {
	off := len(idx) - len(h.Shape)
	f := 0
	for k, d := range h.Shape {
		i := idx[off+k]
		if d == 1 {
			i = 0
		}
		f = f*d + i
	}
	return h.Data[f]
}

// Map applies f elementwise over the broadcast of args, giving dtype d.
func Map(d peel.DType, args []Host, f func(x []float64) float64) Host {
	shapes := make([][]int, len(args))
	for i, a := range args {
		shapes[i] = a.Shape
	}
	shape := BroadcastShape(shapes...)
	out := Host{Shape: shape, DType: d, Data: make([]float64, backend.ShapeSize(shape))}
	x := make([]float64, len(args))
	for i := range out.Data {
		idx := Unravel(shape, i)
		for j, a := range args {
			x[j] = a.At(idx)
		}
		out.Data[i] = Round(d, f(x))
	}
	return out
}

// Round rounds v to dtype d as the tensor would store it.
func Round(d peel.DType, v float64) float64 {
	switch d {
	case peel.Float32:
		return float64(float32(v))
	case peel.Bool:
		return b2f(v != 0)
	case peel.Int32, peel.Uint8, peel.Float16, peel.BFloat16:
		return roundStorage(d, v)
	}
	return v
}
