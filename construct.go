package peel

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

func fromHost(op string, data any, n int, shape []int) *Tensor {
	if shape == nil {
		shape = []int{n}
	} else {
		for _, d := range shape {
			if d < 0 {
				errorf(op, "negative dimension in shape %v", shape)
			}
		}
		shape = append([]int(nil), shape...)
		if backend.ShapeSize(shape) != n {
			errorf(op, "%d data elements do not fill shape %v (%d elements)", n, shape, backend.ShapeSize(shape))
		}
	}
	be := interp.DefaultBackend()
	return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(data), Shape: shape})
}

// FromFloat64s returns a float64 tensor holding a copy of data with the
// given shape; with no shape it is 1-D. It panics with *Error if data does
// not fill the shape.
func FromFloat64s(data []float64, shape ...int) *Tensor {
	return fromHost("peel.FromFloat64s", data, len(data), shapeArg(shape))
}

// FromFloat32s is FromFloat64s for float32 data.
func FromFloat32s(data []float32, shape ...int) *Tensor {
	return fromHost("peel.FromFloat32s", data, len(data), shapeArg(shape))
}

// FromInt64s is FromFloat64s for int64 data.
func FromInt64s(data []int64, shape ...int) *Tensor {
	return fromHost("peel.FromInt64s", data, len(data), shapeArg(shape))
}

// FromBools is FromFloat64s for bool data.
func FromBools(data []bool, shape ...int) *Tensor {
	return fromHost("peel.FromBools", data, len(data), shapeArg(shape))
}

// shapeArg maps a missing variadic shape to nil (1-D) and an explicit
// empty one (rank 0) to a non-nil empty slice.
func shapeArg(shape []int) []int {
	if shape == nil {
		return nil
	}
	return shape
}
