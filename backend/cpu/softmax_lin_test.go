package cpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// TestSoftmaxLinKernel checks softmax_lin's kernel bit for bit against
// the primitive's decomposition along the last axis (float32 and
// float64, rows shorter than the SIMD loops, around them and longer,
// rows enough for blocks and threads), and along an inner axis against
// the kernel on the same lines laid out contiguously (the kernel copies
// such lines into a row first).
func TestSoftmaxLinKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	data := func(n int, lo, hi float64) []float64 {
		d := make([]float64, n)
		for i := range d {
			d[i] = lo + (hi-lo)*rng.Float64()
		}
		return d
	}
	p := prims.SoftmaxLin
	bits := func(x *interp.Tensor) []float64 {
		return interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: backend.Float64}, x).Float64s()
	}
	for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
		conv := func(x *interp.Tensor) *interp.Tensor {
			return interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: dt}, x)
		}
		for _, shape := range [][]int{{3, 5}, {4, 31}, {2, 32}, {300, 64}, {7, 100}, {2, 3, 4}, {6}} {
			size := 1
			for _, n := range shape {
				size *= n
			}
			tt := conv(ewTensor(data(size, -2, 2), shape...))
			y := conv(ewTensor(data(size, 0, 1), shape...))
			params := prims.AxisParams{Axis: len(shape) - 1}
			got, want := bits(interp.Bind1(p, params, tt, y)), bits(p.Impl(params, []*interp.Tensor{tt, y})[0])
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("softmax_lin %v %v: element %d is %v, the decomposition's %v", dt, shape, i, got[i], want[i])
				}
			}
			if len(shape) < 2 {
				continue
			}
			// Along axis 0: the same lines, moved last and made contiguous.
			perm := make([]int, len(shape))
			for i := range perm {
				perm[i] = (i + 1) % len(shape)
			}
			last := func(x *interp.Tensor) *interp.Tensor {
				return interp.Contiguous(interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: perm}, x))
			}
			inner := interp.Bind1(p, prims.AxisParams{Axis: 0}, tt, y)
			ref := interp.Bind1(p, prims.AxisParams{Axis: len(shape) - 1}, last(tt), last(y))
			g, w := bits(last(inner)), bits(ref)
			for i := range w {
				if math.Float64bits(g[i]) != math.Float64bits(w[i]) {
					t.Fatalf("softmax_lin %v %v along axis 0: element %d is %v, %v along the last axis", dt, shape, i, g[i], w[i])
				}
			}
		}
	}
}
