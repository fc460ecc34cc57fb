package peel

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// An operand of a peel function is a *Tensor or a Go scalar (bool, int,
// int32, int64, float32, float64). Go scalars are weakly typed, as Python
// scalars are in JAX: they take the dtype of the tensors they meet when
// that dtype is of their kind or a wider one, so Add(x32, 2.0) stays
// float32. An int scalar meeting a bool tensor gives i64, a float scalar
// meeting an integer or bool tensor gives f64 (the default float), and
// scalars alone give bool, i64 or f64. So Add(xu8, 1) stays uint8 and
// Add(xf16, 0.5) stays float16, while Add(xi32, 0.5) is float64; an int
// scalar out of the range of a narrow integer dtype (Add(xu8, 300))
// panics with *Error, as in NumPy 2 and JAX.

// category orders dtype kinds: bool < int < float.
func category(d DType) int {
	switch {
	case d == Bool:
		return 0
	case d.IsInteger():
		return 1
	}
	return 2
}

// rank orders the dtypes of one kind by width: u8 < i32 < i64 and
// f16, bf16 < f32 < f64.
func rank(d DType) int {
	switch d {
	case Uint8, Float16, BFloat16:
		return 0
	case Int32, Float32:
		return 1
	}
	return 2
}

// PromoteTypes returns the dtype two tensors of dtypes a and b are
// promoted to, JAX's type lattice over peel's dtypes: bool < u8 < i32 <
// i64 for integers; bool and every integer dtype promote to any float
// dtype (i64 with f16 gives f16, as in JAX); f16 and bf16 are both below
// f32 < f64, and f16 with bf16 gives f32. It is symmetric.
func PromoteTypes(a, b DType) DType {
	if a == b {
		return a
	}
	if ca, cb := category(a), category(b); ca != cb {
		if ca > cb {
			return a
		}
		return b
	}
	ra, rb := rank(a), rank(b)
	switch {
	case ra > rb:
		return a
	case rb > ra:
		return b
	}
	return Float32 // f16 with bf16
}

// scalarDType returns the weak dtype of a Go scalar, or false.
func scalarDType(v any) (DType, bool) {
	switch v.(type) {
	case bool:
		return Bool, true
	case int, int32, int64, uint8, uint16, uint32:
		return Int64, true
	case float32, float64:
		return Float64, true
	}
	return 0, false
}

// resultDType returns the promoted dtype of a mix of tensors and scalars.
func resultDType(op string, vals []any) DType {
	strong, haveStrong := DType(0), false
	weak, haveWeak := DType(0), false
	for i, v := range vals {
		if t, ok := v.(*Tensor); ok {
			if t == nil {
				errorf(op, "operand %d is a nil tensor", i)
			}
			if !haveStrong {
				strong, haveStrong = t.DType(), true
			} else {
				strong = PromoteTypes(strong, t.DType())
			}
			continue
		}
		d, ok := scalarDType(v)
		if !ok {
			errorf(op, "operand %d has type %T; want *peel.Tensor or a Go number or bool", i, v)
		}
		if !haveWeak || d > weak {
			weak, haveWeak = d, true
		}
	}
	switch {
	case !haveStrong:
		return weak
	case !haveWeak || category(weak) <= category(strong):
		return strong
	}
	return weak
}

// scalarTensor makes a rank-0 tensor of dtype d from a Go scalar, on the
// default backend.
func scalarTensor(v any, d DType) *Tensor { return scalarOn(nil, v, d) }

// scalarOn makes a rank-0 tensor of dtype d from a Go scalar on backend
// be (the default one when be is nil), converted by the one conversion
// rule (see scalarData).
func scalarOn(be backend.Backend, v any, d DType) *Tensor {
	return hostScalar(be, scalarData(v, d))
}

// scalarData returns a one-element host slice of dtype d holding the Go
// scalar v: integers converted exactly or rounded once, floats converted
// as AsType converts them (backend.HostFill). A Go integer out of the
// range of an integer dtype d panics with *Error, as NumPy (NEP 50) and
// JAX refuse it.
func scalarData(v any, d DType) any {
	if i, ok := goInt(v); ok && d.IsInteger() {
		if lo, hi := intRange(d); i < lo || i > hi {
			interp.Panicf("the Go integer %d is out of the range of %v [%d, %d]; convert the tensor with AsType first", i, d, lo, hi)
		}
	}
	switch x := v.(type) {
	case bool:
		if x {
			return backend.HostFillInt(1, d, 1)
		}
		return backend.HostFillInt(0, d, 1)
	case int:
		return backend.HostFillInt(int64(x), d, 1)
	case int32:
		return backend.HostFillInt(int64(x), d, 1)
	case int64:
		return backend.HostFillInt(x, d, 1)
	case uint8:
		return backend.HostFillInt(int64(x), d, 1)
	case uint16:
		return backend.HostFillInt(int64(x), d, 1)
	case uint32:
		return backend.HostFillInt(int64(x), d, 1)
	case float32:
		return backend.HostFill(float64(x), d, 1)
	case float64:
		return backend.HostFill(x, d, 1)
	}
	return backend.HostFill(0, d, 1)
}

// goInt returns a Go integer scalar as an int64.
func goInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	}
	return 0, false
}

// hostScalar returns a rank-0 tensor holding the one element of data on
// backend be (the default one when be is nil); data is adopted, as in
// newConcrete.
func hostScalar(be backend.Backend, data any) *Tensor {
	if be == nil {
		be = interp.DefaultBackend()
	}
	return interp.NewConcrete(be, backend.Array{Buf: backend.FromOwnedHost(be, data), Shape: []int{}})
}

// operandBackend returns the backend of the first concrete tensor among
// vals, or nil: the backend Go scalars combined with them are put on, so
// that an operation on tensors of a backend other than the default
// (made before UseBackend switched it) stays on theirs.
func operandBackend(vals ...any) backend.Backend {
	for _, v := range vals {
		if t, ok := v.(*Tensor); ok && t != nil && t.IsConcrete() {
			_, be := t.Array()
			return be
		}
	}
	return nil
}

// AsType converts x to dtype d: float → int truncates toward zero and
// saturates to d's range (±Inf and out-of-range values to its extremes,
// NaN → 0), int → narrower int wraps around, conversions to a float dtype
// round to nearest even once (to ±Inf past the largest finite value:
// 65504 for Float16), widening is exact, and nonzero (NaN included) →
// true. This is the one conversion rule of peel (backend/convert.go):
// every constructor (Full, Ones, FullLike, Arange, Linspace, a Go scalar
// operand) and every constant a transform's rule makes converts a float
// the same way, so Full(d, v) equals AsType(Scalar(v), d). Saturation is
// XLA's rule; Go, C and numpy leave out-of-range conversions to the
// hardware (+Inf → MinInt64 on amd64). It returns x itself when it already has
// dtype d, and panics with *Error when x is nil or d is not a valid
// dtype.
func AsType(x *Tensor, d DType) *Tensor {
	defer interp.Annotate("peel.AsType")
	if x == nil {
		errorf("peel.AsType", "nil tensor")
	}
	if x.DType() == d {
		return x
	}
	return interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: d}, x)
}

// toTensor converts an operand to a tensor of dtype d; a Go scalar
// becomes a tensor on backend be (the default one when be is nil).
func toTensor(be backend.Backend, v any, d DType) *Tensor {
	if t, ok := v.(*Tensor); ok {
		return AsType(t, d)
	}
	return scalarOn(be, v, d)
}

// BroadcastShapes returns the numpy broadcast of the shapes, or panics
// with *Error naming op if they are incompatible.
func broadcastShapes(op string, shapes ...[]int) []int {
	r := 0
	for _, s := range shapes {
		r = max(r, len(s))
	}
	var out []int
	if len(shapes) > 0 && len(shapes[0]) == r {
		out = shapes[0]
	}
	for _, s := range shapes {
		if len(s) != r || (out != nil && !interp.ShapeEqual(out, s)) {
			out = nil
			break
		}
	}
	if out != nil {
		return out
	}
	out = make([]int, r)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := r - len(s)
		for i, d := range s {
			switch o := out[off+i]; {
			case o == d || d == 1:
			case o == 1:
				out[off+i] = d
			default:
				errorf(op, "shapes %v are not broadcast-compatible: dimension %d has sizes %d and %d", shapes, i-len(s), o, d)
			}
		}
	}
	return out
}

// broadcastTo broadcasts t to shape (which must be a broadcast of t's).
func broadcastTo(t *Tensor, shape []int) *Tensor {
	if interp.ShapeEqual(t.Shape(), shape) {
		return t
	}
	dims := make([]int, t.Rank())
	off := len(shape) - t.Rank()
	for i := range dims {
		dims[i] = off + i
	}
	return interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: shape, Dims: dims}, t)
}

// operands promotes vals to one dtype and broadcasts them to one shape,
// returning the tensors and the dtype.
func operands(op string, vals ...any) ([]*Tensor, DType) {
	d := resultDType(op, vals)
	return operandsAs(op, d, vals...), d
}

// operandsAs converts vals to dtype d and broadcasts them to one shape.
func operandsAs(op string, d DType, vals ...any) []*Tensor {
	ts := make([]*Tensor, len(vals))
	shapes := make([][]int, len(vals))
	be := operandBackend(vals...)
	for i, v := range vals {
		ts[i] = toTensor(be, v, d)
		shapes[i] = ts[i].Shape()
	}
	shape := broadcastShapes(op, shapes...)
	for i := range ts {
		ts[i] = broadcastTo(ts[i], shape)
	}
	return ts
}

// binary applies an elementwise binary primitive with promotion and
// broadcasting. The common case — two tensors of one dtype and shape —
// goes straight to Bind.
func binary(op string, p *interp.Prim, x, y any) *Tensor {
	if a, ok := x.(*Tensor); ok && a != nil {
		if b, ok := y.(*Tensor); ok && b != nil && a.DType() == b.DType() && interp.ShapeEqual(a.Shape(), b.Shape()) {
			return interp.Bind1(p, nil, a, b)
		}
	}
	ts, _ := operands(op, x, y)
	return interp.Bind1(p, nil, ts[0], ts[1])
}
