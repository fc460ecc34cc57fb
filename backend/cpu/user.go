package cpu

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// Access for kernels written outside this package (fused kernels of
// customop.Define ops, registered with RegisterKernel).

// Float64s returns the elements of a, a contiguous float64 array of this
// backend, as a slice sharing its buffer. It panics with *interp.Error if
// a is of another dtype or backend, or not contiguous.
func Float64s(a backend.Array) []float64 { return elems[float64](a, "Float64s") }

// Float32s is Float64s for float32 arrays.
func Float32s(a backend.Array) []float32 { return elems[float32](a, "Float32s") }

// Int64s is Float64s for int64 arrays.
func Int64s(a backend.Array) []int64 { return elems[int64](a, "Int64s") }

// Bools is Float64s for bool arrays.
func Bools(a backend.Array) []bool { return elems[bool](a, "Bools") }

func elems[E elem](a backend.Array, name string) []E {
	b, ok := a.Buf.(*hostBuf[E])
	if !ok {
		want := (*hostBuf[E])(nil).DType()
		panic(interp.Errorf("cpu.%s: array of dtype %v on another backend or of another dtype (want %v)", name, dtypeOf(a.Buf), want))
	}
	if !a.IsContiguous() {
		panic(interp.Errorf("cpu.%s: array is not contiguous (shape %v, strides %v)", name, a.Shape, a.Strides))
	}
	n := a.Size()
	if n == 0 {
		return b.s[:0:0]
	}
	return b.s[a.Offset : a.Offset+n : a.Offset+n]
}

func dtypeOf(b backend.Buffer) backend.DType {
	if b == nil {
		return backend.Invalid
	}
	return b.DType()
}

// ParallelFor runs body over [0, n) split into contiguous chunks across
// the backend's threads (SetThreads) when n is large enough to pay for
// the goroutines, else on the calling goroutine. cost is the relative
// work per element (1 for an add, about 10 for a transcendental
// function; below 1 counts as 1): it scales down the size from which the
// work is split.
func ParallelFor(n, cost int, body func(lo, hi int)) { parallelFor(n, cost, body) }

// Vectorized math for fused kernels: the loops the backend's own tanh,
// exp and logistic kernels run (AVX2 where the CPU has it, ≤ 1 ulp in
// float32; see the package documentation). Each sets d[i] = f(a[i]) for
// i < len(d); a must be at least as long as d, and may be d itself.

// Tanh32 sets d[i] = tanh(a[i]).
func Tanh32(d, a []float32) { tanh32Loop(d, a[:len(d)]) }

// Tanh64 sets d[i] = tanh(a[i]).
func Tanh64(d, a []float64) { tanh64Loop(d, a[:len(d)]) }

// Exp32 sets d[i] = exp(a[i]).
func Exp32(d, a []float32) { exp32Loop(d, a[:len(d)]) }

// Exp64 sets d[i] = exp(a[i]).
func Exp64(d, a []float64) { exp64Loop(d, a[:len(d)]) }

// Logistic32 sets d[i] = 1/(1+exp(-a[i])).
func Logistic32(d, a []float32) { logistic32Loop(d, a[:len(d)]) }
