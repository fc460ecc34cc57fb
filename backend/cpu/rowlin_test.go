package cpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// TestNormLinKernels checks the kernels of layer_norm_lin and
// rms_norm_lin bit for bit against the primitives' decompositions (the
// operations whose loops they run, in their order): float32 and float64,
// rows shorter than the SIMD loops take (5), around them (31, 32) and
// longer, one axis or two, rows enough to run in parallel, a transposed
// operand.
func TestNormLinKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, p := range []*interp.Prim{prims.LayerNormLin, prims.RMSNormLin} {
		for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
			for _, c := range []struct {
				shape []int
				axes  int
			}{{[]int{3, 5}, 1}, {[]int{4, 31}, 1}, {[]int{2, 32}, 1}, {[]int{300, 64}, 1}, {[]int{7, 100}, 1}, {[]int{2, 3, 4}, 2}, {[]int{6}, 1}} {
				params := prims.NormParams{Axes: c.axes}
				tt := linData(rng, dt, -2, 2, c.shape...)
				y := linData(rng, dt, -2, 2, c.shape...)
				r := linData(rng, dt, 0.5, 2, c.shape[:len(c.shape)-c.axes]...)
				ts := []*interp.Tensor{tt}
				if len(c.shape) == 2 {
					// The same values, stored transposed.
					m, n := c.shape[0], c.shape[1]
					tr := interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: []int{1, 0}}, interp.Contiguous(interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: []int{1, 0}}, tt)))
					if tr.Shape()[0] != m || tr.Shape()[1] != n {
						t.Fatalf("bad transposed operand %v", tr.Shape())
					}
					ts = append(ts, tr)
				}
				for _, t0 := range ts {
					got := interp.Bind1(p, params, t0, y, r)
					want := p.Impl(params, []*interp.Tensor{t0, y, r})[0]
					g, w := asFloat64s(got), asFloat64s(want)
					for i := range w {
						if math.Float64bits(g[i]) != math.Float64bits(w[i]) {
							t.Fatalf("%s %v %v: element %d is %v, the decomposition's %v", p.Name, dt, c.shape, i, g[i], w[i])
						}
					}
				}
			}
		}
	}
}

// TestSoftmaxLinKernel checks softmax_lin's kernel bit for bit against
// the primitive's decomposition along the last axis (float32 and
// float64, rows shorter than the SIMD loops, around them and longer,
// rows enough for blocks and threads), and along an inner axis against
// the kernel on the same lines laid out contiguously (the kernel copies
// such lines into a row first).
func TestSoftmaxLinKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	p := prims.SoftmaxLin
	bits := asFloat64s
	for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
		for _, shape := range [][]int{{3, 5}, {4, 31}, {2, 32}, {300, 64}, {7, 100}, {2, 3, 4}, {6}} {
			tt := linData(rng, dt, -2, 2, shape...)
			y := linData(rng, dt, 0, 1, shape...)
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

// linData returns n values uniform in [lo, hi) as a tensor of dtype dt
// and the given shape.
func linData(rng *rand.Rand, dt backend.DType, lo, hi float64, shape ...int) *interp.Tensor {
	n := 1
	for _, m := range shape {
		n *= m
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = lo + (hi-lo)*rng.Float64()
	}
	return interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: dt}, ewTensor(d, shape...))
}

// asFloat64s returns x's elements converted to float64 (exactly).
func asFloat64s(x *interp.Tensor) []float64 {
	return interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: backend.Float64}, x).Float64s()
}
