package peel

import (
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Creation functions. Their results are concrete tensors with buffers of
// their own (never zero-stride broadcasts), so users may write into them.

// backendFor returns the backend constants combined with t should live on:
// t's own for a concrete tensor, the default one otherwise.
func backendFor(t *Tensor) backend.Backend {
	if t.IsConcrete() {
		_, be := t.Array()
		return be
	}
	return interp.DefaultBackend()
}

// hostFill returns a host slice of n elements of dtype d, all equal to
// v converted by the one conversion rule (backend.HostFill; see AsType).
func hostFill(v float64, d DType, n int) any { return backend.HostFill(v, d, n) }

// constantOn returns a rank-0 concrete tensor of dtype d holding v on be.
func constantOn(be backend.Backend, v float64, d DType) *Tensor {
	return interp.NewConcrete(be, backend.Array{Buf: backend.FromOwnedHost(be, hostFill(v, d, 1)), Shape: []int{}})
}

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

// checkDType panics with *Error naming op unless d is a valid dtype.
func checkDType(op string, d DType) {
	if !d.IsValid() {
		errorf(op, "invalid dtype %v", d)
	}
}

// newConcrete returns a concrete tensor of the given shape holding the host
// slice data on the default backend. data must be a slice the caller has
// just made and no one else holds: it is adopted, not copied, where the
// backend allows (backend.FromOwnedHost).
func newConcrete(data any, shape []int) *Tensor {
	be := interp.DefaultBackend()
	return interp.NewConcrete(be, backend.Array{Buf: backend.FromOwnedHost(be, data), Shape: shape})
}

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

// Ones returns a new tensor filled with ones (true for bool); it panics as
// Zeros does.
func Ones(dt DType, shape ...int) *Tensor {
	defer interp.Annotate("peel.Ones")
	checkDType("peel.Ones", dt)
	s, n := allocShape("peel.Ones", dt, shape)
	return newConcrete(hostFill(1, dt, n), s)
}

// Full returns a new tensor filled with v converted to dt as AsType
// converts it (so Full(dt, v) equals AsType(Scalar(v), dt) broadcast):
// to an integer dtype truncated toward zero and saturated to its range
// (±Inf to its extremes, NaN to 0), to a float dtype rounded to nearest
// even once, to bool v != 0. It panics as Zeros does.
func Full(dt DType, v float64, shape ...int) *Tensor {
	defer interp.Annotate("peel.Full")
	checkDType("peel.Full", dt)
	s, n := allocShape("peel.Full", dt, shape)
	return newConcrete(hostFill(v, dt, n), s)
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

func checkNumericDType(op string, dt DType) {
	checkDType(op, dt)
	if dt == Bool {
		errorf(op, "dtype bool is not numeric")
	}
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
