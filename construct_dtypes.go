package peel

import (
	"math"

	"github.com/peel-ml/peel/backend"
)

// FromInt32s is FromFloat64s for int32 data: an Int32 tensor.
func FromInt32s(data []int32, shape ...int) *Tensor {
	return fromHost("peel.FromInt32s", Int32, data, len(data), shapeArg(shape))
}

// FromUint8s is FromFloat64s for uint8 data: a Uint8 tensor.
func FromUint8s(data []uint8, shape ...int) *Tensor {
	return fromHost("peel.FromUint8s", Uint8, data, len(data), shapeArg(shape))
}

// FromFloat16s returns a Float16 tensor of data rounded to binary16
// (to nearest even, ±Inf past 65504, NaN kept), with the given shape;
// it panics as FromFloat64s does.
func FromFloat16s(data []float32, shape ...int) *Tensor {
	h := make([]backend.F16, len(data))
	for i, v := range data {
		h[i] = backend.F16FromFloat32(v)
	}
	return fromHost("peel.FromFloat16s", Float16, h, len(h), shapeArg(shape))
}

// FromBFloat16s returns a BFloat16 tensor of data rounded to bfloat16
// (to nearest even, NaN kept), with the given shape; it panics as
// FromFloat64s does.
func FromBFloat16s(data []float32, shape ...int) *Tensor {
	h := make([]backend.BF16, len(data))
	for i, v := range data {
		h[i] = backend.BF16FromFloat32(v)
	}
	return fromHost("peel.FromBFloat16s", BFloat16, h, len(h), shapeArg(shape))
}

// intRange returns the least and greatest values of the integer dtype d.
func intRange(d DType) (lo, hi int64) {
	switch d {
	case Int32:
		return math.MinInt32, math.MaxInt32
	case Uint8:
		return 0, math.MaxUint8
	}
	return math.MinInt64, math.MaxInt64
}

// storageWide is the dtype constructors of a storage dtype d fill in
// before converting to d once: i64 for integers, f64 for floats (so a
// float is rounded once, not through f32).
func storageWide(d DType) DType {
	if d.IsFloat() {
		return Float64
	}
	return Int64
}

// halfFloat reports whether x is f16 or bf16, returning its dtype. The
// composite reductions and normalizations (Mean, Var, Std, Norm,
// LogSumExp, Softmax, LogSoftmax, NanMean) compute those in f32 and round
// the result once, as torch's CPU kernels do, so that a sum on the way
// (of 60000s, say) does not overflow f16 and the result is not rounded at
// every step.
func halfFloat(x *Tensor) (DType, bool) {
	d := x.DType()
	return d, d == Float16 || d == BFloat16
}
