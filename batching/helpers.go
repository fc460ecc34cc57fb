package batching

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Generic helpers shared by the rules: axis bookkeeping between logical
// and physical operands, aligning operands on one batch dimension, and
// small index computations built from primitives. Every tensor helper is a
// Bind of primitives (or a concrete constant), so rules built on them stay
// transformable.

// physAxis returns logical axis a as an axis of the physical operand
// whose batch dimension is bdim (which is not NotMapped).
func physAxis(a, bdim int) int {
	if a < bdim {
		return a
	}
	return a + 1
}

// physAxes maps every logical axis with physAxis. It keeps the order (the
// map is increasing), so sorted axes stay sorted.
func physAxes(axes []int, bdim int) []int {
	out := make([]int, len(axes))
	for i, a := range axes {
		out[i] = physAxis(a, bdim)
	}
	return out
}

// insertAt returns a copy of s with v inserted at index at.
func insertAt(s []int, at, v int) []int {
	out := make([]int, 0, len(s)+1)
	out = append(out, s[:at]...)
	out = append(out, v)
	return append(out, s[at:]...)
}

// toDim returns x with its batch dimension at position at: moved if x is
// batched at dim, broadcast to size if it is not.
func toDim(x *T, dim, at, size int) *T {
	if dim == NotMapped {
		return BroadcastBatch(x, size, at)
	}
	return MoveDim(x, dim, at)
}

// align returns the operands with one common batch dimension: the shared
// one when every batched operand has it (unbatched operands are broadcast
// there, so no batched operand moves), otherwise 0. The operands must
// have one logical rank.
func align(args []*T, dims []int, size int) ([]*T, int) {
	d, ok := FirstBatched(dims)
	if !ok {
		d = 0
	}
	out := make([]*T, len(args))
	for i, a := range args {
		out[i] = toDim(a, dims[i], d, size)
	}
	return out, d
}

// logicalShape returns the shape of x without its batch dimension bdim.
func logicalShape(x *T, bdim int) []int {
	s := x.Shape()
	if bdim == NotMapped {
		return append([]int{}, s...)
	}
	out := make([]int, 0, len(s)-1)
	out = append(out, s[:bdim]...)
	return append(out, s[bdim+1:]...)
}

// broadcastTo broadcasts x to shape, operand dimension i going to result
// dimension dims[i].
func broadcastTo(x *T, shape, dims []int) *T {
	if len(dims) == len(shape) && interp.ShapeEqual(x.Shape(), shape) {
		return x
	}
	return interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: shape, Dims: dims}, x)
}

// fullI64 returns an i64 tensor of the given shape filled with v.
func fullI64(v int, shape []int) *T {
	return prims.Full(float64(v), interp.Aval{Shape: shape, DType: backend.Int64})
}

// scalar returns a rank-0 tensor of dtype dt holding v.
func scalar(v float64, dt backend.DType) *T {
	return prims.Full(v, interp.Aval{Shape: []int{}, DType: dt})
}

// iotaI64 returns the i64 vector 0, 1, …, n-1.
func iotaI64(n int) *T {
	return interp.Bind1(prims.Iota, prims.IotaParams{DType: backend.Int64, Shape: []int{n}, Dim: 0})
}

func bin(p *interp.Prim, a, b *T) *T { return interp.Bind1(p, nil, a, b) }

// clampI64 clamps the i64 tensor x into [lo, hi] elementwise (to lo when
// hi < lo).
func clampI64(x *T, lo, hi int) *T {
	x = bin(prims.Min, x, fullI64(hi, x.Shape()))
	return bin(prims.Max, x, fullI64(lo, x.Shape()))
}

// inRange returns the bool tensor lo ≤ x < hi for an i64 x.
func inRange(x *T, lo, hi int) *T {
	return bin(prims.And,
		bin(prims.Ge, x, fullI64(lo, x.Shape())),
		bin(prims.Lt, x, fullI64(hi, x.Shape())))
}

// laneOffsets returns the i64 tensor of the given shape whose elements are
// their lane index along dimension at (of size size) times n: the offset
// of each lane's block in an axis that merges the batch (major) with an
// axis of size n.
func laneOffsets(size, n int, shape []int, at int) *T {
	lanes := iotaI64(size)
	if n != 1 {
		lanes = bin(prims.Mul, lanes, fullI64(n, []int{size}))
	}
	return broadcastTo(lanes, shape, []int{at})
}

// mergeBatch moves x's batch dimension bdim (broadcasting an unbatched x
// to size) in front of logical axis axis and merges the two into one axis
// of size size·n, lane-major.
func mergeBatch(x *T, bdim, axis, size int) *T {
	x = toDim(x, bdim, axis, size)
	s := x.Shape()
	shape := make([]int, 0, len(s)-1)
	shape = append(shape, s[:axis]...)
	shape = append(shape, s[axis]*s[axis+1])
	shape = append(shape, s[axis+2:]...)
	return interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: shape}, x)
}

// splitBatch undoes mergeBatch: it splits axis of x (of size size·n) into
// the batch dimension (at axis) and the logical axis of size n.
func splitBatch(x *T, axis, size, n int) *T {
	s := x.Shape()
	shape := make([]int, 0, len(s)+1)
	shape = append(shape, s[:axis]...)
	shape = append(shape, size, n)
	shape = append(shape, s[axis+1:]...)
	return interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: shape}, x)
}

// register sets p's rule, checked first against p's shape and dtype rule.
// register sets p's rule. The interpreter checks the logical operands
// with p's shape rule before calling it (see Interp.Process).
func register(p *interp.Prim, r Rule) { Register(p, r) }

// one returns the single result x with batch dimension d.
func one(x *T, d int) ([]*T, []int) { return []*T{x}, []int{d} }
