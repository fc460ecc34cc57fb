package peel

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// This file holds the in-place operations. Each is one mutation primitive
// (copy_, add_, …) whose destination is dst: at eval level the write goes
// into dst's buffer, so when dst is a view (Narrow, Transpose, Select, …)
// the base and every other alias see it. A destination that is a broadcast
// view (several elements sharing one memory location) cannot be written
// and panics with *Error. Under Functionalize the mutations are replaced by
// pure operations; see the package documentation.

// inplaceSource converts src (a tensor or Go scalar) to dtype d and
// broadcasts it to dst's shape, panicking with *Error naming op when it
// does not broadcast to exactly that shape.
func inplaceSource(op string, dst *Tensor, src any, d DType) *Tensor {
	var t *Tensor
	if s, ok := src.(*Tensor); ok {
		if s == nil {
			errorf(op, "the source is a nil tensor")
		}
		t = AsType(s, d)
	} else {
		if _, ok := scalarDType(src); !ok {
			errorf(op, "the source has type %T; want *peel.Tensor or a Go number or bool", src)
		}
		t = scalarOn(backendFor(dst), src, d)
	}
	return broadcastExact(op, "source", t, dst.Shape())
}

// CopyInto writes src into dst and returns dst (torch's copy_). src is a
// tensor or Go scalar; it is converted to dst's dtype (as AsType
// converts it) and broadcast to dst's shape. CopyInto panics
// with *Error when dst is nil, src is not a tensor or Go scalar, src does
// not broadcast to dst's shape, or dst is a broadcast view.
func CopyInto(dst *Tensor, src any) *Tensor {
	defer interp.Annotate("peel.CopyInto")
	const op = "peel.CopyInto"
	checkTensor(op, dst)
	interp.Bind(prims.CopyInPlace, nil, dst, inplaceSource(op, dst, src, dst.DType()))
	return dst
}

// Fill sets every element of dst to v, a Go scalar or a rank-0 tensor
// converted to dst's dtype, and returns dst. It panics with *Error when
// dst is nil, v is neither, or dst is a broadcast view.
func Fill(dst *Tensor, v any) *Tensor {
	defer interp.Annotate("peel.Fill")
	const op = "peel.Fill"
	checkTensor(op, dst)
	if t, ok := v.(*Tensor); ok && t != nil && t.Rank() != 0 {
		errorf(op, "fill value %s is not a scalar (rank 0)", t.TypeString())
	}
	interp.Bind(prims.CopyInPlace, nil, dst, inplaceSource(op, dst, v, dst.DType()))
	return dst
}

// inplaceArith binds the mutation dst ← p(dst, src) after checking that the
// promoted dtype of dst and src is dst's.
func inplaceArith(op string, p *interp.Prim, dst *Tensor, src any) *Tensor {
	checkTensor(op, dst)
	if dst.DType() == Bool {
		errorf(op, "the destination %s is bool; arithmetic needs a numeric dtype", dst.TypeString())
	}
	if d := resultDType(op, []any{dst, src}); d != dst.DType() {
		errorf(op, "result type %v can't be cast to the destination's dtype %v (destination %s)", d, dst.DType(), dst.TypeString())
	}
	interp.Bind(p, nil, dst, inplaceSource(op, dst, src, dst.DType()))
	return dst
}

// AddInPlace adds src to dst in place (dst += src, torch's add_) and
// returns dst. src is a tensor or Go scalar broadcast to dst's shape; the
// promoted dtype of dst and src must be dst's, so an integer destination
// cannot take a float source. AddInPlace panics with *Error when dst is
// nil or bool, src's dtype promotes past dst's, src does not broadcast to
// dst's shape, or dst is a broadcast view.
func AddInPlace(dst *Tensor, src any) *Tensor {
	defer interp.Annotate("peel.AddInPlace")
	return inplaceArith("peel.AddInPlace", prims.AddInPlace, dst, src)
}

// SubInPlace subtracts src from dst in place (dst -= src) and returns
// dst. It panics with *Error in the cases AddInPlace does.
func SubInPlace(dst *Tensor, src any) *Tensor {
	defer interp.Annotate("peel.SubInPlace")
	return inplaceArith("peel.SubInPlace", prims.SubInPlace, dst, src)
}

// MulInPlace multiplies dst by src in place (dst *= src) and returns dst.
// It panics with *Error in the cases AddInPlace does.
func MulInPlace(dst *Tensor, src any) *Tensor {
	defer interp.Annotate("peel.MulInPlace")
	return inplaceArith("peel.MulInPlace", prims.MulInPlace, dst, src)
}

// DivInPlace divides dst by src in place (dst /= src) and returns dst. dst
// must be floating-point: true division of integers has a float result,
// which an integer destination cannot hold. DivInPlace panics with *Error
// when dst is nil or not floating-point, and in the other cases AddInPlace
// does.
func DivInPlace(dst *Tensor, src any) *Tensor {
	defer interp.Annotate("peel.DivInPlace")
	const op = "peel.DivInPlace"
	checkTensor(op, dst)
	if !dst.DType().IsFloat() {
		errorf(op, "result type f64 can't be cast to the destination's dtype %v: true division needs a floating-point destination (destination %s)", dst.DType(), dst.TypeString())
	}
	return inplaceArith(op, prims.DivInPlace, dst, src)
}
