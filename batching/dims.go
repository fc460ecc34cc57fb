package batching

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Helpers that move and insert batch dimensions, shared by every rule.

// MoveDim moves dimension from of x to position to.
func MoveDim(x *T, from, to int) *T {
	if from == to {
		return x
	}
	r := x.Rank()
	perm := make([]int, 0, r)
	for i := 0; i < r; i++ {
		if i != from {
			perm = append(perm, i)
		}
	}
	perm = append(perm[:to], append([]int{from}, perm[to:]...)...)
	return interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: perm}, x)
}

// BroadcastBatch inserts a batch dimension of size size at position at,
// as a broadcast (a zero-stride view at eval level).
func BroadcastBatch(x *T, size, at int) *T {
	r := x.Rank()
	shape := make([]int, 0, r+1)
	shape = append(shape, x.Shape()[:at]...)
	shape = append(shape, size)
	shape = append(shape, x.Shape()[at:]...)
	dims := make([]int, r)
	for i := range dims {
		if i < at {
			dims[i] = i
		} else {
			dims[i] = i + 1
		}
	}
	return interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: shape, Dims: dims}, x)
}

// ToFront returns x with its batch dimension first, broadcasting an
// unbatched x to size.
func ToFront(x *T, dim, size int) *T {
	if dim == NotMapped {
		return BroadcastBatch(x, size, 0)
	}
	return MoveDim(x, dim, 0)
}

// Lane returns lane i of x along its batch dimension dim (the dimension
// removed).
func Lane(x *T, dim, i int) *T {
	r := x.Rank()
	start, limit, stride := make([]int, r), append([]int{}, x.Shape()...), make([]int, r)
	for k := range stride {
		stride[k] = 1
	}
	start[dim], limit[dim] = i, i+1
	s := interp.Bind1(prims.Slice, prims.SliceParams{Start: start, Limit: limit, Stride: stride}, x)
	shape := append(append([]int{}, x.Shape()[:dim]...), x.Shape()[dim+1:]...)
	return interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: shape}, s)
}

// FirstBatched returns the batch dimension shared by every batched
// operand, or false if they differ.
func FirstBatched(dims []int) (int, bool) {
	d := NotMapped
	for _, x := range dims {
		if x == NotMapped {
			continue
		}
		if d != NotMapped && x != d {
			return 0, false
		}
		d = x
	}
	return d, true
}

// AllToFront moves every operand's batch dimension to 0, broadcasting
// unbatched operands.
func AllToFront(args []*T, dims []int, size int) []*T {
	out := make([]*T, len(args))
	for i, a := range args {
		out[i] = ToFront(a, dims[i], size)
	}
	return out
}

// ShiftAxes returns axes (of the logical operand) as axes of the physical
// operand whose batch dimension is 0.
func ShiftAxes(axes []int) []int {
	out := make([]int, len(axes))
	for i, a := range axes {
		out[i] = a + 1
	}
	return out
}
