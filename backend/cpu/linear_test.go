package cpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// TestLinearKernel checks linear's kernel (the product, then the bias
// added in the product's buffer) bit for bit against the primitive's
// decomposition (dot_general, then add of the broadcast bias): float32
// and float64; x of rank 1 to 3; k = 0 (a sum over nothing: the bias
// alone), narrow and wide n, products small enough for the plain loop
// and large enough for the packed GEMM and two threads; x and w stored
// transposed, b strided and broadcast from one element.
func TestLinearKernel(t *testing.T) {
	defer cpu.SetThreads(cpu.Threads())
	rng := rand.New(rand.NewPCG(11, 12))
	tr := func(a *interp.Tensor) *interp.Tensor { // the same values, stored transposed
		p := prims.TransposeParams{Perm: []int{1, 0}}
		return interp.Bind1(prims.Transpose, p, interp.Contiguous(interp.Bind1(prims.Transpose, p, a)))
	}
	for _, threads := range []int{1, 2} {
		cpu.SetThreads(threads)
		for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
			for _, c := range []struct{ x []int }{
				{[]int{5}}, {[]int{3, 5}}, {[]int{2, 3, 5}}, {[]int{4, 0}}, {[]int{300, 64}}, {[]int{2, 150, 64}}, {[]int{0, 5}},
			} {
				k := c.x[len(c.x)-1]
				for _, n := range []int{1, 7, 33, 192} {
					x := linData(rng, dt, -2, 2, c.x...)
					w := linData(rng, dt, -2, 2, k, n)
					b := linData(rng, dt, -2, 2, n)
					b2 := linData(rng, dt, -2, 2, 2*n)
					type ops struct {
						name    string
						x, w, b *interp.Tensor
					}
					cases := []ops{
						{"contiguous", x, w, b},
						{"b strided", x, w, interp.Bind1(prims.Slice, prims.SliceParams{Start: []int{1}, Limit: []int{2 * n}, Stride: []int{2}}, b2)},
						{"b broadcast", x, w, interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{n}, Dims: []int{}}, linData(rng, dt, -2, 2))},
					}
					if k > 0 {
						cases = append(cases, ops{"w transposed", x, tr(w), b})
						if len(c.x) == 2 && c.x[0] > 0 {
							cases = append(cases, ops{"x transposed", tr(x), w, b})
						}
					}
					for _, o := range cases {
						name := fmt.Sprintf("%d threads %v x%v n=%d %s", threads, dt, c.x, n, o.name)
						args := []*interp.Tensor{o.x, o.w, o.b}
						got := interp.Bind1(prims.Linear, nil, args...)
						want := prims.Linear.Impl(nil, args)[0]
						if !interp.ShapeEqual(got.Shape(), want.Shape()) {
							t.Fatalf("%s: shape %v, the decomposition's %v", name, got.Shape(), want.Shape())
						}
						g, wv := asFloat64s(got), asFloat64s(want)
						for i := range wv {
							if math.Float64bits(g[i]) != math.Float64bits(wv[i]) {
								t.Fatalf("%s: element %d is %v, the decomposition's %v", name, i, g[i], wv[i])
							}
						}
					}
				}
			}
		}
	}
}
