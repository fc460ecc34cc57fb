package peel

import (
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Creation functions. Their results are concrete tensors with buffers of
// their own (never zero-stride broadcasts), so users may write into them.

// hostFill returns a host slice of n elements of dtype d, all equal to
// v converted by the one conversion rule (backend.HostFill; see AsType).
func hostFill(v float64, d DType, n int) any { return backend.HostFill(v, d, n) }

// Scalar returns a rank-0 tensor holding v: a float64 gives f64, a float32
// f32, a Go integer (int, int8…int64, uint8…uint32) i64 and a bool bool. It
// panics with *Error for any other type.
func Scalar(v any) *Tensor {
	defer interp.Annotate("peel.Scalar")
	switch x := v.(type) {
	case float64:
		return newConcrete([]float64{x}, []int{})
	case float32:
		return newConcrete([]float32{x}, []int{})
	case bool:
		return newConcrete([]bool{x}, []int{})
	case int:
		return newConcrete([]int64{int64(x)}, []int{})
	case int8:
		return newConcrete([]int64{int64(x)}, []int{})
	case int16:
		return newConcrete([]int64{int64(x)}, []int{})
	case int32:
		return newConcrete([]int64{int64(x)}, []int{})
	case int64:
		return newConcrete([]int64{x}, []int{})
	case uint8:
		return newConcrete([]int64{int64(x)}, []int{})
	case uint16:
		return newConcrete([]int64{int64(x)}, []int{})
	case uint32:
		return newConcrete([]int64{int64(x)}, []int{})
	}
	errorf("peel.Scalar", "value has type %T; want a Go number or bool", v)
	return nil
}

// Zeros returns a new tensor of dtype dt and the given shape (rank 0 when
// no shape is given) filled with zeros (false for bool). It panics with
// *Error if a dimension is negative, dt is invalid, the number of
// elements overflows int or the buffer exceeds the allocation limit
// (SetMaxAllocBytes); the last two say "too large".
func Zeros(dt DType, shape ...int) *Tensor {
	defer interp.Annotate("peel.Zeros")
	checkDType("peel.Zeros", dt)
	s, n := allocShape("peel.Zeros", dt, shape)
	be := interp.DefaultBackend()
	return interp.NewConcrete(be, backend.Array{Buf: be.Alloc(dt, n), Shape: s})
}

// Ones returns a new tensor filled with ones (true for bool), of rank 0
// when no shape is given; it panics as Zeros does.
func Ones(dt DType, shape ...int) *Tensor {
	defer interp.Annotate("peel.Ones")
	checkDType("peel.Ones", dt)
	s, n := allocShape("peel.Ones", dt, shape)
	return filled(dt, 1, s, n)
}

// fillKernelMin is the element count from which filled fills on the
// backend (in parallel, at the memory's bandwidth) rather than on the
// host.
const fillKernelMin = 1 << 16

// filled returns a new concrete tensor of shape s (n elements) holding v
// converted to dt. A large one is allocated by the backend, from its
// buffer cache when it has one (not zeroed, so each page is written once,
// by the fill), and filled by the backend's copy of a broadcast scalar,
// which splits the stores across its threads.
func filled(dt DType, v float64, s []int, n int) *Tensor {
	if n < fillKernelMin {
		return newConcrete(hostFill(v, dt, n), s)
	}
	be := interp.DefaultBackend()
	buf, cached := interp.AllocResult(be, dt, n)
	arr := backend.Array{Buf: buf, Shape: s}
	if cached || v != 0 || math.Signbit(v) {
		// +0 converts to all-zero bits in every dtype, which a fresh
		// buffer already holds.
		one := backend.FromOwnedHost(be, hostFill(v, dt, 1))
		be.Copy(arr, backend.Array{Buf: one, Shape: s, Strides: make([]int, len(s))})
	}
	if cached {
		return interp.NewResult(be, arr)
	}
	return interp.NewConcrete(be, arr)
}

// Full returns a new tensor filled with v converted to dt as AsType
// converts it (so Full(dt, v) equals AsType(Scalar(v), dt) broadcast):
// to an integer dtype truncated toward zero and saturated to its range
// (±Inf to its extremes, NaN to 0), to a float dtype rounded to nearest
// even once, to bool v != 0. With no shape the result has rank 0. It
// panics as Zeros does.
func Full(dt DType, v float64, shape ...int) *Tensor {
	defer interp.Annotate("peel.Full")
	checkDType("peel.Full", dt)
	s, n := allocShape("peel.Full", dt, shape)
	return filled(dt, v, s, n)
}

// fullLike broadcasts the constant v to x's shape and copies it into a
// fresh buffer. Only x's shape and dtype are used, so x may be a tracer.
func fullLike(op string, x *Tensor, v float64) *Tensor {
	checkTensor(op, x)
	c := broadcastTo(constantOn(backendFor(x), v, x.DType()), x.Shape())
	return un(prims.Copy, c)
}

// ZerosLike returns a new tensor of zeros with x's shape and dtype, on x's
// backend. x may be a tracer (only its shape and dtype are used); the
// result is a constant of every transform. It panics with *Error if x is
// nil.
func ZerosLike(x *Tensor) *Tensor {
	defer interp.Annotate("peel.ZerosLike")
	return fullLike("peel.ZerosLike", x, 0)
}

// OnesLike returns a new tensor of ones with x's shape and dtype; see
// ZerosLike. It panics with *Error if x is nil.
func OnesLike(x *Tensor) *Tensor {
	defer interp.Annotate("peel.OnesLike")
	return fullLike("peel.OnesLike", x, 1)
}

// FullLike returns a new tensor with x's shape and dtype filled with v
// (converted as Full converts it); see ZerosLike. It panics with *Error if
// x is nil.
func FullLike(x *Tensor, v float64) *Tensor {
	defer interp.Annotate("peel.FullLike")
	return fullLike("peel.FullLike", x, v)
}

// hostFloats returns the float64 values f converted to dtype d by the one
// conversion rule: f itself for Float64 (it is adopted), a new slice
// otherwise.
func hostFloats(f []float64, d DType) any {
	if d == Float64 {
		return f
	}
	return backend.HostConvert(f, d)
}

func checkFinite(op string, vals ...float64) {
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			errorf(op, "argument %v is not finite", v)
		}
	}
}

// Arange returns the 1-D tensor start, start+step, … up to but excluding
// stop, as numpy's arange: it has max(0, ceil((stop-start)/step))
// elements, element i is start + i·step computed in float64 and converted
// to dt as AsType converts it (for an integer dtype truncated toward zero
// and saturated to its range). It panics with *Error if step is
// 0, an argument is not finite, dt is bool or invalid, or the result has
// more elements than an int holds or exceeds the allocation limit
// (SetMaxAllocBytes); the last two say "too large".
func Arange(dt DType, start, stop, step float64) *Tensor {
	const op = "peel.Arange"
	defer interp.Annotate(op)
	checkNumericDType(op, dt)
	checkFinite(op, start, stop, step)
	if step == 0 {
		errorf(op, "step is 0")
	}
	fn := math.Ceil((stop - start) / step)
	// 2^63 is the first float64 above MaxInt; NaN (∞/∞) cannot occur
	// with finite arguments.
	if fn >= 1<<63 {
		errorf(op, "[%v, %v) with step %v has %v elements: too large (too many for an int)", start, stop, step, fn)
	}
	n := 0
	if fn > 0 {
		n = int(fn)
	}
	s, _ := allocShape(op, dt, []int{n})
	f := make([]float64, n)
	for i := range f {
		f[i] = start + float64(i)*step
	}
	return newConcrete(hostFloats(f, dt), s)
}

// Linspace returns n evenly spaced values from start to stop, both
// included (for n = 1 just start), as numpy's linspace, computed in
// float64 and converted to dt as AsType converts it; for an integer dtype
// the values are rounded down first, as numpy 2 does. It panics with *Error if n is
// negative, an argument is not finite, dt is bool or invalid, or the
// result exceeds the allocation limit (SetMaxAllocBytes; the message says
// "too large").
func Linspace(dt DType, start, stop float64, n int) *Tensor {
	const op = "peel.Linspace"
	defer interp.Annotate(op)
	checkNumericDType(op, dt)
	checkFinite(op, start, stop)
	if n < 0 {
		errorf(op, "negative number of elements %d", n)
	}
	s, _ := allocShape(op, dt, []int{n})
	f := make([]float64, n)
	step := (stop - start) / float64(max(n-1, 1))
	for i := range f {
		v := start + float64(i)*step
		if i == n-1 && n > 1 {
			v = stop
		}
		if dt.IsInteger() {
			v = math.Floor(v)
		}
		f[i] = v
	}
	return newConcrete(hostFloats(f, dt), s)
}

// Eye returns the n×n identity matrix of dtype dt (true on the diagonal
// for bool). It panics with *Error if n is negative, dt is invalid, or
// the matrix has more elements than an int holds or exceeds the
// allocation limit (SetMaxAllocBytes); the last two say "too large".
func Eye(dt DType, n int) *Tensor {
	const op = "peel.Eye"
	if dt.IsStorage() {
		return AsType(Eye(storageWide(dt), n), dt)
	}
	defer interp.Annotate(op)
	checkDType(op, dt)
	if n < 0 {
		errorf(op, "negative size %d", n)
	}
	_, nn := allocShape(op, dt, []int{n, n})
	data := hostFill(0, dt, nn)
	switch s := data.(type) {
	case []bool:
		for i := 0; i < n; i++ {
			s[i*n+i] = true
		}
	case []int64:
		for i := 0; i < n; i++ {
			s[i*n+i] = 1
		}
	case []float32:
		for i := 0; i < n; i++ {
			s[i*n+i] = 1
		}
	case []float64:
		for i := 0; i < n; i++ {
			s[i*n+i] = 1
		}
	}
	return newConcrete(data, []int{n, n})
}

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

// iotaI64 returns the i64 tensor of the given shape whose elements are
// their index along dim.
func iotaI64(shape []int, dim int) *Tensor {
	return interp.Bind1(prims.Iota, prims.IotaParams{DType: Int64, Shape: shape, Dim: dim})
}

// hostIndices returns the i64 constant data of the given shape on be.
func hostIndices(be backend.Backend, data []int64, shape []int) *Tensor {
	return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(data), Shape: append([]int{}, shape...)})
}

// fillI64 returns the i64 constant v broadcast to [n] on backend be.
func fillI64(be backend.Backend, v int64, n int) *Tensor {
	return broadcastTo(constantOn(be, float64(v), Int64), []int{n})
}
