package peel

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Operands: what every op does to its arguments before it binds a
// primitive. It checks them (checkTensor), converts Go scalars to
// tensors of the promoted dtype on the operands' backend (operands,
// operandsAs, scalarOn, resultDType), broadcasts them to one shape
// (broadcastShapes, broadcastTo, broadcastExact), makes constants shaped
// like them (fill, constView, constantOn), and binds the one- and
// two-operand primitives (un, bin, sel); arith, floatBinary, numericUnary,
// floatUnary, logicalOperand and rounding are the whole operand handling
// of the elementwise operations (elementwise.go, special.go). The
// primitives stay strict: promotion and broadcasting happen here, once.
//
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

// checkTensor panics with *Error naming op if x is nil.
func checkTensor(op string, x *Tensor) {
	if x == nil {
		errorf(op, "nil tensor")
	}
}

// un applies a unary primitive.
func un(p *interp.Prim, x *Tensor) *Tensor { return interp.Bind1(p, nil, x) }

// bin applies a binary primitive to operands of one shape and dtype.
func bin(p *interp.Prim, x, y *Tensor) *Tensor { return interp.Bind1(p, nil, x, y) }

// toFloat converts integer and bool tensors to f64 (numpy's rule for
// functions defined on floats only); float tensors are returned as is.
func toFloat(x *Tensor) *Tensor {
	if x.DType().IsFloat() {
		return x
	}
	return interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: Float64}, x)
}

// fill returns the constant v with like's dtype, broadcast (as a view) to
// like's shape. It is meant as an operand of pure primitives.
func fill(v float64, like *Tensor) *Tensor {
	return broadcastTo(constantOn(backendFor(like), v, like.DType()), like.Shape())
}

// sel applies select: a where cond is true, b elsewhere.
func sel(cond, a, b *Tensor) *Tensor { return interp.Bind1(prims.Where, nil, cond, a, b) }

// zerosOf returns zeros (false for bool) of x's dtype and shape as a
// broadcast view, an operand of pure primitives.
func zerosOf(x *Tensor) *Tensor { return fill(0, x) }

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
			_, be := interp.ArrayOf(t)
			return be
		}
	}
	return nil
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

// backendFor returns the backend constants combined with t should live on:
// t's own for a concrete tensor, the default one otherwise.
func backendFor(t *Tensor) backend.Backend {
	if t.IsConcrete() {
		_, be := interp.ArrayOf(t)
		return be
	}
	return interp.DefaultBackend()
}

// constantOn returns a rank-0 concrete tensor of dtype d holding v on be.
func constantOn(be backend.Backend, v float64, d DType) *Tensor {
	return interp.NewConcrete(be, backend.Array{Buf: backend.FromOwnedHost(be, hostFill(v, d, 1)), Shape: []int{}})
}

// newConcrete returns a concrete tensor of the given shape holding the host
// slice data on the default backend. data must be a slice the caller has
// just made and no one else holds: it is adopted, not copied, where the
// backend allows (backend.FromOwnedHost).
func newConcrete(data any, shape []int) *Tensor {
	be := interp.DefaultBackend()
	return interp.NewConcrete(be, backend.Array{Buf: backend.FromOwnedHost(be, data), Shape: shape})
}

// castTo converts t to dtype d, panicking with *Error naming op when the
// promoted dtype of d and t's is not d (a source that would need a wider
// destination, as torch's "result type Float can't be cast to Long").
func castTo(op, what string, t *Tensor, d DType) *Tensor {
	if r := PromoteTypes(d, t.DType()); r != d {
		errorf(op, "result type %v of the %s %s can't be cast to the destination's dtype %v", r, what, t.TypeString(), d)
	}
	return AsType(t, d)
}

// broadcastExact broadcasts t to shape, panicking with *Error naming op
// when t's shape does not broadcast to exactly shape.
func broadcastExact(op, what string, t *Tensor, shape []int) *Tensor {
	ok := t.Rank() <= len(shape)
	for i, d := range t.Shape() {
		if !ok {
			break
		}
		ok = d == 1 || d == shape[len(shape)-t.Rank()+i]
	}
	if !ok {
		errorf(op, "the %s %s cannot be broadcast to shape %v", what, t.TypeString(), shape)
	}
	return broadcastTo(t, shape)
}

// constView returns v converted to d, on backend be, broadcast (as a
// view) to shape.
func constView(be backend.Backend, v any, d DType, shape []int) *Tensor {
	return broadcastTo(scalarOn(be, v, d), shape)
}

// sameTensors returns x and y as tensors when both are non-nil tensors of
// one dtype and shape (the fast path that needs no promotion).
func sameTensors(x, y any) (*Tensor, *Tensor, bool) {
	a, ok := x.(*Tensor)
	if !ok || a == nil {
		return nil, nil, false
	}
	b, ok := y.(*Tensor)
	if !ok || b == nil || a.DType() != b.DType() || !interp.ShapeEqual(a.Shape(), b.Shape()) {
		return nil, nil, false
	}
	return a, b, true
}

// arith applies a numeric binary primitive with promotion and
// broadcasting, rejecting bool operands.
func arith(op string, p *interp.Prim, x, y any) *Tensor {
	a, b := numericOperands(op, x, y)
	return bin(p, a, b)
}

// numericOperands promotes and broadcasts x and y for an arithmetic
// function, which bool operands do not take.
func numericOperands(op string, x, y any) (*Tensor, *Tensor) {
	if a, b, ok := sameTensors(x, y); ok && a.DType() != Bool {
		return a, b
	}
	ts, d := operands(op, x, y)
	if d == Bool {
		errorf(op, "operands are bool; convert them with AsType(x, peel.Int64) or use the Logical functions")
	}
	return ts[0], ts[1]
}

// floatBinary applies a floating-point binary primitive; integer and bool
// operands are promoted to f64 first.
func floatBinary(op string, p *interp.Prim, x, y any) *Tensor {
	if a, b, ok := sameTensors(x, y); ok && a.DType().IsFloat() {
		return bin(p, a, b)
	}
	d := resultDType(op, []any{x, y})
	if !d.IsFloat() {
		d = Float64
	}
	ts := operandsAs(op, d, x, y)
	return bin(p, ts[0], ts[1])
}

// logicalOperand panics unless v is a bool tensor or a Go bool.
func logicalOperand(op string, i int, v any) {
	switch t := v.(type) {
	case bool:
		return
	case *Tensor:
		if t == nil {
			errorf(op, "operand %d is a nil tensor", i)
		}
		if t.DType() == Bool {
			return
		}
		errorf(op, "operand %d has dtype %v, not bool (compare it first, e.g. NotEqual(x, 0))", i, t.DType())
	}
	errorf(op, "operand %d has type %T; want a bool *peel.Tensor or a Go bool", i, v)
}

// numericUnary applies a numeric unary primitive, rejecting bool tensors.
func numericUnary(op string, p *interp.Prim, x *Tensor) *Tensor {
	checkTensor(op, x)
	if x.DType() == Bool {
		errorf(op, "tensor is bool; convert it with AsType(x, peel.Int64) or use LogicalNot")
	}
	return un(p, x)
}

// floatUnary applies a floating-point unary primitive; integer and bool
// tensors are converted to f64 first.
func floatUnary(op string, p *interp.Prim, x *Tensor) *Tensor {
	checkTensor(op, x)
	return un(p, toFloat(x))
}

// rounding applies floor, ceil or round: floats are rounded, integer
// tensors are copied unchanged and bool tensors are converted to f64.
func rounding(op string, x *Tensor, f func(*Tensor) *Tensor) *Tensor {
	checkTensor(op, x)
	switch x.DType() {
	case Int64, Int32, Uint8:
		return un(prims.Copy, x)
	case Bool:
		x = toFloat(x)
	}
	return f(x)
}
