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
// (read in place, row by row) against the same operands materialized,
// for every combination with contiguous, splat, repeated and row
// operands, including sizes that run in parallel.
func TestRepeatedBlockOperands(t *testing.T) {
	be := cpu.New()
	mk := func(n int, shape ...int) *interp.Tensor {
		d := make([]float64, n)
		for i := range d {
			d[i] = float64(i%7) - 2.5
		}
		return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(d), Shape: shape})
	}
	bc := func(x *interp.Tensor, shape ...int) *interp.Tensor {
		dims := make([]int, x.Rank())
		for i := range dims {
			dims[i] = len(shape) - x.Rank() + i
		}
		return interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: shape, Dims: dims}, x)
	}
	for _, rows := range []int{1, 4, 4000} {
		shape := []int{rows, 3, 64}
		n := rows * 3 * 64
		operands := map[string]*interp.Tensor{
			"contiguous":   mk(n, shape...),
			"splat":        bc(mk(1), shape...),
			"repeat":       bc(mk(3*64, 3, 64), shape...),
			"repeat-row":   bc(mk(64, 1, 64), shape...),
			"small-repeat": bc(mk(2, 1, 2), rows, 3*32, 2),
			"row":          bc(mk(rows*3, rows, 3, 1), shape...),
			"row-2d":       bc(mk(rows, rows, 1, 1), shape...),
			"row-strided":  bc(interp.Bind1(prims.Slice, prims.SliceParams{Start: []int{0, 0, 0}, Limit: []int{rows, 3, 1}, Stride: []int{1, 1, 1}}, mk(rows*3*2, rows, 3, 2)), shape...),
		}
		small := operands["small-repeat"]
		delete(operands, "small-repeat")
		operands["small-repeat"] = interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: shape}, interp.Contiguous(small))
		for xn, x := range operands {
			for yn, y := range operands {
				for _, p := range []*interp.Prim{prims.Sub, prims.Div, prims.Lt} {
					got := interp.Bind1(p, nil, x, y)
					want := interp.Bind1(p, nil, interp.Contiguous(x), interp.Contiguous(y))
					if p == prims.Lt {
						g, w := got.Bools(), want.Bools()
						for i := range w {
							if g[i] != w[i] {
								t.Fatalf("%s %s,%s rows=%d: element %d", p.Name, xn, yn, rows, i)
							}
						}
						continue
					}
					g, w := got.Float64s(), want.Float64s()
					for i := range w {
						if g[i] != w[i] {
							t.Fatalf("%s %s,%s rows=%d: element %d is %v, want %v", p.Name, xn, yn, rows, i, g[i], w[i])
						}
					}
				}
			}
		}
	}
}
