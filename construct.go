package peel

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// fromHost returns a tensor holding a copy of data, n elements of dtype
// dt, with the given shape (1-D for nil). It panics with *Error naming op
// when the shape is invalid or too large, when the data do not fill it,
// or when the copy exceeds the allocation limit.
func fromHost(op string, dt DType, data any, n int, shape []int) *Tensor {
	if shape == nil {
		shape = []int{n}
	}
	size, err := backend.AllocSize(dt, shape)
	if err != nil {
		errorf(op, "%v", err)
	}
	if size != n {
		errorf(op, "%d data elements do not fill shape %v (%d elements)", n, shape, size)
	}
	shape = append([]int{}, shape...)
	be := interp.DefaultBackend()
	return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(data), Shape: shape})
}

// FromFloat64s returns a float64 tensor holding a copy of data with the
// given shape; with no shape it is 1-D. It panics with *Error if a
// dimension is negative, data does not fill the shape, or the shape or
// the copy is too large (its number of elements overflows int, or the
// copy exceeds the allocation limit, SetMaxAllocBytes).
func FromFloat64s(data []float64, shape ...int) *Tensor {
	return fromHost("peel.FromFloat64s", Float64, data, len(data), shapeArg(shape))
}

// FromFloat32s is FromFloat64s for float32 data.
func FromFloat32s(data []float32, shape ...int) *Tensor {
	return fromHost("peel.FromFloat32s", Float32, data, len(data), shapeArg(shape))
}

// FromInt64s is FromFloat64s for int64 data.
func FromInt64s(data []int64, shape ...int) *Tensor {
	return fromHost("peel.FromInt64s", Int64, data, len(data), shapeArg(shape))
}

// FromBools is FromFloat64s for bool data.
func FromBools(data []bool, shape ...int) *Tensor {
	return fromHost("peel.FromBools", Bool, data, len(data), shapeArg(shape))
}

// shapeArg maps a missing variadic shape to nil (1-D) and an explicit
// empty one (rank 0) to a non-nil empty slice.
func shapeArg(shape []int) []int {
	if shape == nil {
		return nil
	}
	return shape
}
