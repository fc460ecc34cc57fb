package peel

import "github.com/peel-ml/peel/backend"

// Sizes: the checked size of a shape and the allocation limit every
// constructor and every result passes.

// shapeSize returns the number of elements of shape, panicking with
// *Error naming op when a dimension is negative or the shape is too large
// (see backend.CheckedSize).
func shapeSize(op string, shape []int) int {
	n, err := backend.CheckedSize(shape)
	if err != nil {
		errorf(op, "%v", err)
	}
	return n
}

// allocShape checks a new buffer of dtype dt and the given shape before
// anything is allocated: it panics with *Error naming op when a dimension
// is negative, the shape is too large, or the buffer exceeds the
// allocation limit (see SetMaxAllocBytes). It returns a copy of shape
// (rank 0 for an empty shape) and its number of elements.
func allocShape(op string, dt DType, shape []int) ([]int, int) {
	n, err := backend.AllocSize(dt, shape)
	if err != nil {
		errorf(op, "%v", err)
	}
	return append([]int{}, shape...), n
}

// checkResult checks the shape of an op's result of dtype dt as
// allocShape does when every input is concrete (the result will be
// allocated now), and only its size otherwise (a traced result is not
// allocated by the trace).
func checkResult(op string, dt DType, shape []int, inputs ...*Tensor) {
	for _, t := range inputs {
		if !t.IsConcrete() {
			shapeSize(op, shape)
			return
		}
	}
	allocShape(op, dt, shape)
}

// MaxAllocBytes returns the allocation limit: the largest buffer, in
// bytes, that a constructor or an operation may allocate. It is
// DefaultMaxAllocBytes unless SetMaxAllocBytes changed it.
func MaxAllocBytes() int64 { return backend.MaxAllocBytes() }

// SetMaxAllocBytes sets the allocation limit to n bytes and returns the
// previous limit. Every buffer is checked before it is allocated (by the
// constructors, and by the backends for the results of operations): one
// larger than the limit panics with an *Error saying "too large" that
// names the shape, dtype, size in bytes and limit, instead of exhausting
// memory. A negative n leaves the limit unchanged (SetMaxAllocBytes(-1)
// reports it); n = 0 restores the default. The limit is global and safe
// to change concurrently.
func SetMaxAllocBytes(n int64) int64 { return backend.SetMaxAllocBytes(n) }

// DefaultMaxAllocBytes returns the default allocation limit: the
// physical memory of the machine (the total RAM, or the cgroup memory
// limit when it is lower, on Linux; hw.memsize on macOS), or 64 GiB where
// it is not known. No single allocation above it could succeed.
func DefaultMaxAllocBytes() int64 { return backend.DefaultMaxAllocBytes() }
