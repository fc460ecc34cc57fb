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
	data := func(n int, lo, hi float64) []float64 {
		d := make([]float64, n)
		for i := range d {
			d[i] = lo + (hi-lo)*rng.Float64()
		}
		return d
	}
	for _, p := range []*interp.Prim{prims.LayerNormLin, prims.RMSNormLin} {
		for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
			conv := func(x *interp.Tensor) *interp.Tensor {
				return interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: dt}, x)
			}
			for _, c := range []struct {
				shape []int
				axes  int
			}{{[]int{3, 5}, 1}, {[]int{4, 31}, 1}, {[]int{2, 32}, 1}, {[]int{300, 64}, 1}, {[]int{7, 100}, 1}, {[]int{2, 3, 4}, 2}, {[]int{6}, 1}} {
				size, rows := 1, 1
				for i, n := range c.shape {
					size *= n
					if i < len(c.shape)-c.axes {
						rows *= n
					}
				}
				params := prims.NormParams{Axes: c.axes}
				tt := conv(ewTensor(data(size, -2, 2), c.shape...))
				y := conv(ewTensor(data(size, -2, 2), c.shape...))
				r := conv(ewTensor(data(rows, 0.5, 2), c.shape[:len(c.shape)-c.axes]...))
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
					f64 := func(x *interp.Tensor) []float64 {
						return interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: backend.Float64}, x).Float64s()
					}
					g, w := f64(got), f64(want)
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
