package peel

import (
	"math"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// ScatterReduce returns a copy of x with the elements of src combined
// into it at the i64 indices idx along axis, as torch's scatter_reduce:
// for every position u of idx, src[u] goes to out[…, idx[u], …] (idx has
// x's rank, its other dimensions are 1 or x's, and src broadcasts to
// idx's shape after idx's size-1 dimensions are broadcast to x's, as for
// ScatterAdd). reduce is "sum", "prod", "amax", "amin" or "mean". With
// includeSelf x's own element takes part in its position's reduction;
// without it a position that receives at least one element gets the
// reduction of those alone, and a position that receives none keeps x's
// element either way. "mean" divides by the number of elements reduced
// (floor division for i64, as torch). src is converted to x's dtype.
//
// NaN: amax and amin propagate NaN. Derivatives: sum and mean are
// linear; prod's derivative with respect to each factor is the product
// of the other factors, exact when some are zero (no division by zero);
// amax and amin send the gradient to the elements equal to the result,
// split evenly between ties (x's own element counts when includeSelf;
// without includeSelf the reduction starts from -Inf (amax) or +Inf
// (amin), or the i64 extremes, which share a tie only with updates equal
// to them), as torch does; a NaN result has gradient 0.
//
// ScatterReduce panics with *Error when an operand is nil, x is bool, idx
// is not an integer tensor or has another rank, the shapes do not fit,
// src's dtype promotes past x's, reduce is not one of the five, or a
// concrete index lies outside [-n, n); traced indices outside that range
// are dropped.
func ScatterReduce(x, idx, src *Tensor, axis int, reduce string, includeSelf bool) *Tensor {
	const op = "peel.ScatterReduce"
	defer interp.Annotate(op)
	switch reduce {
	case "sum", "prod", "amax", "amin", "mean":
	default:
		errorf(op, "reduce %q is not one of \"sum\", \"prod\", \"amax\", \"amin\", \"mean\"", reduce)
	}
	sc := scatterOperands(op, "scatter_reduce", x, idx, src, axis)
	lin, s3, flat := sc.lin, sc.src, sc.flat
	scat := func(p *interp.Prim, base, upd *Tensor) *Tensor {
		return reshapeView(interp.Bind1(p, prims.AxisParams{Axis: 0}, reshapeView(base, flat), lin, upd), x.Shape())
	}
	be := backendFor(x)
	d := x.DType()
	// count is the number of src elements each position receives (i64).
	count := func() *Tensor {
		return scat(prims.ScatterAdd, constView(be, int64(0), Int64, x.Shape()), constView(be, int64(1), Int64, s3.Shape()))
	}
	// fromIdentity reduces src alone, starting from the identity v, and
	// keeps x where nothing was received.
	fromIdentity := func(p *interp.Prim, v float64) *Tensor {
		var id *Tensor
		if d.IsInteger() {
			lo, hi := intRange(d)
			iv := int64(0)
			switch {
			case math.IsInf(v, -1):
				iv = lo
			case math.IsInf(v, 1):
				iv = hi
			default:
				iv = int64(v)
			}
			id = constView(be, iv, d, x.Shape())
		} else {
			id = constView(be, v, d, x.Shape())
		}
		c := count()
		return sel(bin(prims.Gt, c, zerosOf(c)), scat(p, id, s3), x)
	}
	switch reduce {
	case "sum":
		if includeSelf {
			return scat(prims.ScatterAdd, x, s3)
		}
		return fromIdentity(prims.ScatterAdd, 0)
	case "prod":
		if includeSelf {
			return scat(prims.ScatterMul, x, s3)
		}
		return fromIdentity(prims.ScatterMul, 1)
	case "amax":
		if includeSelf {
			return scat(prims.ScatterMax, x, s3)
		}
		return fromIdentity(prims.ScatterMax, math.Inf(-1))
	case "amin":
		if includeSelf {
			return scat(prims.ScatterMin, x, s3)
		}
		return fromIdentity(prims.ScatterMin, math.Inf(1))
	}
	// mean
	c := count()
	var total *Tensor
	if includeSelf {
		total = scat(prims.ScatterAdd, x, s3)
		c = bin(prims.Add, c, constView(be, int64(1), Int64, c.Shape()))
	} else {
		total = scat(prims.ScatterAdd, zerosOf(x), s3)
	}
	hit := bin(prims.Gt, c, zerosOf(c))
	safe := sel(hit, c, constView(be, int64(1), Int64, c.Shape()))
	var mean *Tensor
	if d.IsInteger() {
		mean = FloorDiv(total, safe)
	} else {
		mean = bin(prims.Div, total, AsType(safe, d))
	}
	if includeSelf {
		return mean
	}
	return sel(hit, mean, x)
}
