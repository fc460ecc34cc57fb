package peel

import (
	"github.com/peel-ml/peel/backend"
	_ "github.com/peel-ml/peel/backend/cpu" // installs the default backend
	"github.com/peel-ml/peel/interp"
)

// Tensor is peel's one value type: a box whose content is a concrete
// array or a tracer of one transform level. Its methods are documented
// on interp.Tensor; the ones used most:
//
//	x.Shape() []int      x.Rank() int      x.Size() int      x.DType() DType
//	x.Float64s() / Float32s() / Int64s() / Bools()   copies of the elements
//	x.Item() float64     the one element of a size-1 tensor
//	x.String()           numpy-like printing (fmt.Println(x))
//
// The common operations are methods too, so expressions read left to
// right; each is this package's function of the same name:
//
//	x.Add(y) Sub Mul Div Pow Maximum Minimum   y a tensor or a Go number
//	x.MatMul(w)  x.T()  x.Reshape(2, -1)  x.Flatten(1)  x.Squeeze()  x.Unsqueeze(0)
//	x.Neg() Abs Exp Log Sqrt Square Tanh Sin Cos ReLU Sigmoid
//	x.Sum(axes...) Mean Max Min            over every axis by default
//
// so 0.5·(Σz² + logdet) is z.Square().Sum().Add(logdet).Mul(0.5).
//
// Reading elements panics with *Error under a transform (a traced value
// has no elements yet). Tensors are made by the constructors (Zeros,
// FromFloat64s, Arange, …) and by every operation.
type Tensor = interp.Tensor

// DType is the element type of a tensor.
type DType = backend.DType

// The dtypes.
const (
	Bool    = backend.Bool
	Int64   = backend.Int64
	Float32 = backend.Float32
	Float64 = backend.Float64
	// Storage dtypes: kept in memory at their width, computed in i64
	// (Int32, Uint8) or f32 (Float16, BFloat16) and narrowed back after
	// every operation (integers wrap around, floats round to nearest
	// even).
	Int32    = backend.Int32
	Uint8    = backend.Uint8
	Float16  = backend.Float16
	BFloat16 = backend.BFloat16
)

// Error is the error every misuse panics with. It names the user-level op,
// the operands' shapes and dtypes, the transforms it happened under
// ("in vmap ∘ grad") and the user's call site (File and Line: the
// innermost frame outside peel).
type Error = interp.Error

// Catch runs f and returns the *Error it panicked with, or nil. Panics with
// any other value propagate.
func Catch(f func()) error { return interp.Catch(f) }

// Annotate names a user-level op in errors. It is for library authors
// writing a composite op of peel's functions: deferred first thing in
// the op,
//
//	func Softsign(x *peel.Tensor) *peel.Tensor {
//		defer peel.Annotate("mylib.Softsign")
//		return peel.Div(x, peel.Add(peel.Abs(x), 1.0))
//	}
//
// it appends name to the op chain of an *Error raised below it, so the
// message reads "mylib.Softsign > peel.Div: …" and names the user's
// call site, and re-panics. Panics with any other value pass through
// unchanged. Annotate must be called directly by defer (as recover
// must); called otherwise it does nothing.
func Annotate(name string) {
	if r := recover(); r != nil {
		interp.AddOp(r, name)
		panic(r)
	}
}

// errorf panics with an *Error for the named user-level op.
func errorf(op, format string, args ...any) {
	e := interp.Errorf(format, args...)
	e.Ops = []string{op}
	panic(e)
}
