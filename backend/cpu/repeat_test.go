package cpu_test

import (
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// TestRepeatedBlockOperands checks binary kernels on operands broadcast
// along leading dimensions (read in place, block by block) and on
// operands of one element per row broadcast along trailing dimensions
// (read in place, many rows a call where the row kernels take them)
// against the same operands materialized, for every combination with
// contiguous, splat, repeated and row operands, in float32 and float64,
// rows of 64 and of widths that leave the row kernels' four-vector loop
// a remainder (24, 40) or that they refuse (20), including sizes that
// run in parallel.
func TestRepeatedBlockOperands(t *testing.T) {
	be := cpu.New()
	type size struct{ rows, w int }
	sizes := []size{{1, 64}, {4, 64}, {6, 64}, {1100, 64}, {300, 20}, {300, 24}, {7, 40}, {300, 40}}
	for _, dt := range []backend.DType{backend.Float64, backend.Float32} {
		mk := func(n int, shape ...int) *interp.Tensor {
			d := make([]float64, n)
			for i := range d {
				d[i] = float64(i%7) - 2.5
			}
			t := interp.NewConcrete(be, backend.Array{Buf: be.FromHost(d), Shape: shape})
			if dt == backend.Float32 {
				t = interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: dt}, t)
			}
			return t
		}
		bc := func(x *interp.Tensor, shape ...int) *interp.Tensor {
			dims := make([]int, x.Rank())
			for i := range dims {
				dims[i] = len(shape) - x.Rank() + i
			}
			return interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: shape, Dims: dims}, x)
		}
		for _, sz := range sizes {
			rows, w := sz.rows, sz.w
			shape := []int{rows, 3, w}
			n := rows * 3 * w
			operands := map[string]*interp.Tensor{
				"contiguous":   mk(n, shape...),
				"splat":        bc(mk(1), shape...),
				"repeat":       bc(mk(3*w, 3, w), shape...),
				"repeat-row":   bc(mk(w, 1, w), shape...),
				"small-repeat": bc(mk(2, 1, 2), rows, 3*w/2, 2),
				"row":          bc(mk(rows*3, rows, 3, 1), shape...),
				"row-2d":       bc(mk(rows, rows, 1, 1), shape...),
				"row-strided":  bc(interp.Bind1(prims.Slice, prims.SliceParams{Start: []int{0, 0, 0}, Limit: []int{rows, 3, 1}, Stride: []int{1, 1, 1}}, mk(rows*3*2, rows, 3, 2)), shape...),
			}
			small := operands["small-repeat"]
			delete(operands, "small-repeat")
			operands["small-repeat"] = interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: shape}, interp.Contiguous(small))
			for xn, x := range operands {
				for yn, y := range operands {
					for _, p := range []*interp.Prim{prims.Add, prims.Sub, prims.Mul, prims.Div, prims.Lt} {
						got := interp.Bind1(p, nil, x, y)
						want := interp.Bind1(p, nil, interp.Contiguous(x), interp.Contiguous(y))
						if p == prims.Lt {
							g, w := got.Bools(), want.Bools()
							for i := range w {
								if g[i] != w[i] {
									t.Fatalf("%s %v %s,%s %v: element %d", p.Name, dt, xn, yn, shape, i)
								}
							}
							continue
						}
						f64 := func(t *interp.Tensor) []float64 {
							return interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: backend.Float64}, t).Float64s()
						}
						g, w := f64(got), f64(want)
						for i := range w {
							if g[i] != w[i] {
								t.Fatalf("%s %v %s,%s %v: element %d is %v, want %v", p.Name, dt, xn, yn, shape, i, g[i], w[i])
							}
						}
					}
				}
			}
		}
	}
}
