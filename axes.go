package peel

import (
	"sort"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Axes: the checks and normalizations of the axes, indices and
// permutations a user passes (negative values count from the end), and
// the shapes of reductions over them.

// normAxis normalizes a possibly negative axis of a tensor of rank rank to
// 0 ≤ axis < rank, panicking with *Error naming op when it is out of
// range.
func normAxis(op string, axis, rank int) int {
	if axis < -rank || axis >= rank {
		errorf(op, "axis %d is out of range for a tensor of rank %d", axis, rank)
	}
	if axis < 0 {
		axis += rank
	}
	return axis
}

// normAxes normalizes possibly negative axes of a tensor of rank rank,
// keeping their order, and panics with *Error naming op when one is out of
// range or repeated. The result is a new slice (empty, not nil, for no
// axes).
func normAxes(op string, axes []int, rank int) []int {
	out := make([]int, len(axes))
	seen := make([]bool, rank)
	for i, a := range axes {
		n := normAxis(op, a, rank)
		if seen[n] {
			errorf(op, "axis %d is repeated in %v", a, axes)
		}
		seen[n] = true
		out[i] = n
	}
	return out
}

// keepReshape reshapes x (a fresh result) to shape, a reshape that only
// inserts or removes size-1 dimensions; it binds nothing when the shape is
// unchanged.
func keepReshape(x *Tensor, shape []int) *Tensor {
	if interp.ShapeEqual(x.Shape(), shape) {
		return x
	}
	return interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: shape}, x)
}

// reduceAxes returns the axes a reduction of a rank-rank tensor runs over,
// non-negative, sorted and distinct, as ReduceParams needs them. No axes
// means all axes. It panics with *Error naming op on an axis out of range
// or repeated.
func reduceAxes(op string, axes []int, rank int) []int {
	if len(axes) == 0 {
		all := make([]int, rank)
		for i := range all {
			all[i] = i
		}
		return all
	}
	out := normAxes(op, axes, rank)
	sort.Ints(out)
	return out
}

// keptShape returns shape with the (sorted) reduced axes set to 1.
func keptShape(shape, axes []int) []int {
	out := append([]int{}, shape...)
	for _, a := range axes {
		out[a] = 1
	}
	return out
}

// reducedSize returns the number of elements each reduction combines.
func reducedSize(shape, axes []int) int {
	n := 1
	for _, a := range axes {
		n *= shape[a]
	}
	return n
}

// indexArg normalizes a possibly negative index into a dimension of size
// n, panicking with *Error naming op when it is out of range.
func indexArg(op string, index, n, axis int) int {
	if index < -n || index >= n {
		errorf(op, "index %d is out of range for axis %d of size %d", index, axis, n)
	}
	if index < 0 {
		index += n
	}
	return index
}

// permArg normalizes a permutation of rank axes, panicking with *Error
// naming op when it is not one.
func permArg(op string, perm []int, rank int) []int {
	if len(perm) != rank {
		errorf(op, "permutation %v has %d entries, tensor has rank %d", perm, len(perm), rank)
	}
	return normAxes(op, perm, rank)
}
