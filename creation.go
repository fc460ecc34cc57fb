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

// hostFill returns a host slice of n elements of dtype d, all equal to v
// (float → int truncates toward zero, nonzero → true).
func hostFill(v float64, d DType, n int) any {
	switch d {
	case Bool:
		s := make([]bool, n)
		if v != 0 {
			for i := range s {
				s[i] = true
			}
		}
		return s
	case Int64:
		s := make([]int64, n)
		if iv := int64(v); iv != 0 {
			for i := range s {
				s[i] = iv
			}
		}
		return s
	case Float32:
		s := make([]float32, n)
		if fv := float32(v); fv != 0 || math.Signbit(v) {
			for i := range s {
				s[i] = fv
			}
		}
		return s
	}
	s := make([]float64, n)
	if v != 0 || math.Signbit(v) {
		for i := range s {
			s[i] = v
		}
	}
	return s
}

// constantOn returns a rank-0 concrete tensor of dtype d holding v on be.
func constantOn(be backend.Backend, v float64, d DType) *Tensor {
	return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(hostFill(v, d, 1)), Shape: []int{}})
}

// checkShape panics with *Error naming op if shape has a negative
// dimension, and returns a copy of it (rank 0 for an empty shape).
func checkShape(op string, shape []int) []int {
	for _, d := range shape {
		if d < 0 {
			errorf(op, "negative dimension in shape %v", shape)
		}
	}
	return append([]int{}, shape...)
}

// checkDType panics with *Error naming op unless d is a valid dtype.
func checkDType(op string, d DType) {
	if !d.IsValid() {
		errorf(op, "invalid dtype %v", d)
	}
}

// newConcrete returns a concrete tensor of the given shape holding the host
// slice data on the default backend.
func newConcrete(data any, shape []int) *Tensor {
	be := interp.DefaultBackend()
	return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(data), Shape: shape})
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
// *Error if a dimension is negative or dt is invalid.
func Zeros(dt DType, shape ...int) *Tensor {
	defer interp.Annotate("peel.Zeros")
	checkDType("peel.Zeros", dt)
	s := checkShape("peel.Zeros", shape)
	be := interp.DefaultBackend()
	return interp.NewConcrete(be, backend.Array{Buf: be.Alloc(dt, backend.ShapeSize(s)), Shape: s})
}

// Ones returns a new tensor filled with ones (true for bool); it panics as
// Zeros does.
func Ones(dt DType, shape ...int) *Tensor {
	defer interp.Annotate("peel.Ones")
	checkDType("peel.Ones", dt)
	s := checkShape("peel.Ones", shape)
	return newConcrete(hostFill(1, dt, backend.ShapeSize(s)), s)
}

// Full returns a new tensor filled with v converted to dt (truncated
// toward zero for i64, v != 0 for bool); it panics as Zeros does.
func Full(v float64, dt DType, shape ...int) *Tensor {
	defer interp.Annotate("peel.Full")
	checkDType("peel.Full", dt)
	s := checkShape("peel.Full", shape)
	return newConcrete(hostFill(v, dt, backend.ShapeSize(s)), s)
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

// maxCreate bounds the number of elements Arange and Linspace make, so a
// mistaken argument fails with an *Error instead of exhausting memory.
const maxCreate = 1 << 40

// hostAs converts float64 values to a host slice of dtype d (float → int
// truncates toward zero).
func hostAs(vals []float64, d DType) any {
	switch d {
	case Int64:
		s := make([]int64, len(vals))
		for i, v := range vals {
			s[i] = int64(v)
		}
		return s
	case Float32:
		s := make([]float32, len(vals))
		for i, v := range vals {
			s[i] = float32(v)
		}
		return s
	}
	return vals
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
// to dt (truncated toward zero for i64). It panics with *Error if step is
// 0, an argument is not finite, dt is bool or invalid, or the result would
// be absurdly large.
func Arange(dt DType, start, stop, step float64) *Tensor {
	const op = "peel.Arange"
	defer interp.Annotate(op)
	checkNumericDType(op, dt)
	checkFinite(op, start, stop, step)
	if step == 0 {
		errorf(op, "step is 0")
	}
	fn := math.Ceil((stop - start) / step)
	if fn > maxCreate {
		errorf(op, "[%v, %v) with step %v has %v elements, too many", start, stop, step, fn)
	}
	n := max(0, int(fn))
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = start + float64(i)*step
	}
	return newConcrete(hostAs(vals, dt), []int{n})
}

// Linspace returns n evenly spaced values from start to stop, both
// included (for n = 1 just start), as numpy's linspace; for i64 the values
// are rounded down, as numpy 2 does. It panics with *Error if n is
// negative, an argument is not finite, or dt is bool or invalid.
func Linspace(start, stop float64, n int, dt DType) *Tensor {
	const op = "peel.Linspace"
	defer interp.Annotate(op)
	checkNumericDType(op, dt)
	checkFinite(op, start, stop)
	if n < 0 || n > maxCreate {
		errorf(op, "number of elements %d is negative or too large", n)
	}
	vals := make([]float64, n)
	if n > 0 {
		step := (stop - start) / float64(max(n-1, 1))
		for i := range vals {
			vals[i] = start + float64(i)*step
		}
		if n > 1 {
			vals[n-1] = stop
		}
		if dt == Int64 {
			for i, v := range vals {
				vals[i] = math.Floor(v)
			}
		}
	}
	return newConcrete(hostAs(vals, dt), []int{n})
}

// Eye returns the n×n identity matrix of dtype dt (true on the diagonal
// for bool). It panics with *Error if n is negative or dt is invalid.
func Eye(n int, dt DType) *Tensor {
	const op = "peel.Eye"
	defer interp.Annotate(op)
	checkDType(op, dt)
	if n < 0 {
		errorf(op, "negative size %d", n)
	}
	if n > 1<<20 {
		errorf(op, "size %d is too large", n)
	}
	data := hostFill(0, dt, n*n)
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
