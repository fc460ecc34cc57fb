package prims

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

// The cumulative family: cumsum, cumprod, cummax, cummin and
// cumlogsumexp along one axis.

// CumsumParams are the parameters of cumsum: the axis, and whether the sum
// runs from the end.
type CumsumParams struct {
	Axis    int
	Reverse bool
}

func (p CumsumParams) String() string {
	return fmt.Sprintf("axis=%d reverse=%v", p.Axis, p.Reverse)
}

// Cumsum is the inclusive cumulative sum along CumsumParams.Axis.
var Cumsum = graphio.Params[CumsumParams](interp.NewPrim("cumsum", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 1)
	checkClass(numeric, in[0])
	checkAxis(params.(CumsumParams).Axis, len(in[0].Shape))
	return one(in[0])
}))

func init() {
	defSameJVP(Cumsum)
	defTranspose(Cumsum, linear1, func(params any, ct *tensor, _ []*tensor, _ []bool) []*tensor {
		cp := params.(CumsumParams)
		cp.Reverse = !cp.Reverse
		return []*tensor{interp.Bind1(Cumsum, cp, ct)}
	})
}

// Cumulative scans beyond cumsum (lax.cumprod, cummax, cummin,
// cumlogsumexp), all with CumsumParams (the axis, and whether the scan
// runs from the end). Their kernels are sequential loops; their
// derivatives are written with other primitives:
//
//   - cumprod and cumlogsumexp: the tangent obeys a first-order linear
//     recurrence h_i = a_i·h_{i−1} + b_i, a_i depending on the primals
//     only and b_i linear in the tangent, solved by a log-depth doubling
//     scan of multiplications, additions and pads (linearRecurrence), so
//     it is exact (cumprod: a_i = x_i, b_i = y_{i−1}·t_i, no division,
//     exact with zeros; cumlogsumexp: a_i = exp(y_{i−1} − y_i) ≤ 1,
//     b_i = exp(x_i − y_i)·t_i, stable) and transposable;
//   - cummax and cummin have a second result, the position (i64) of each
//     running extremum's first occurrence, and their tangent is the
//     input's tangent gathered there.

func scanPrim(name string, c dclass, withIndex bool) *interp.Prim {
	return graphio.Params[CumsumParams](interp.NewPrim(name, interp.Pure, func(params any, in []aval) []aval {
		checkArity(in, 1)
		checkClass(c, in[0])
		checkAxis(params.(CumsumParams).Axis, len(in[0].Shape))
		if withIndex {
			return []aval{in[0], {Shape: in[0].Shape, DType: backend.Int64}}
		}
		return one(in[0])
	}))
}

// Cumprod is the inclusive cumulative product along CumsumParams.Axis.
var Cumprod = scanPrim("cumprod", numeric, false)

// Cumlogsumexp is the inclusive cumulative log(Σ exp) of floats along
// CumsumParams.Axis, computed stably (each step combines the running
// value a with the next element b as max + log1p(exp(−|a − b|))).
var Cumlogsumexp = scanPrim("cumlogsumexp", floats, false)

// Cummax and Cummin are the running maximum (minimum) along
// CumsumParams.Axis (NaN propagates from its position on), and the
// position (i64, along the axis) of the first occurrence of each
// running value in scan order.
var (
	Cummax = scanPrim("cummax", anyType, true)
	Cummin = scanPrim("cummin", anyType, true)
)

func init() {
	defJVP(Cumprod, cumprodJVP)
	defJVP(Cumlogsumexp, cumlogsumexpJVP)
	for _, p := range []*interp.Prim{Cummax, Cummin} {
		p.JVP = func(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
			outs := interp.Bind(p, params, primals...)
			if tangents[0] == nil || !outs[0].DType().IsFloat() {
				return outs, []*tensor{nil, nil}
			}
			return outs, []*tensor{TakeAlongAxis(tangents[0], outs[1], params.(CumsumParams).Axis), nil}
		}
	}
}

// forward runs f on x, t and the result out flipped along the axis when
// the scan runs from the end, and flips f's tangent back.
func forward(cp CumsumParams, x, t, out *tensor, f func(x, t, out *tensor, axis int) *tensor) *tensor {
	if !cp.Reverse {
		return f(x, t, out, cp.Axis)
	}
	ax := []int{cp.Axis}
	return rev(f(rev(x, ax), rev(t, ax), rev(out, ax), cp.Axis), ax)
}

// linearRecurrence solves h_i = a_i·h_{i−1} + b_i (h_{−1} = 0) along axis
// by doubling: after the step of span k, (a_i, b_i) describe the
// composition of the recurrence's steps i−2k+1 … i.
func linearRecurrence(a, b *tensor, axis int) *tensor {
	n := a.Shape()[axis]
	for k := 1; k < n; k *= 2 {
		b = add(b, mul(a, shiftAlong(b, k, axis, 0)))
		if 2*k < n {
			a = mul(a, shiftAlong(a, k, axis, 1))
		}
	}
	return b
}

// cumprodJVP: y_i = x_i·y_{i−1}, so dy_i = x_i·dy_{i−1} + y_{i−1}·t_i.
func cumprodJVP(params any, x, t []*tensor, out *tensor) *tensor {
	return forward(params.(CumsumParams), x[0], t[0], out, func(x, t, y *tensor, axis int) *tensor {
		return linearRecurrence(x, mul(shiftAlong(y, 1, axis, 1), t), axis)
	})
}

// cumlogsumexpJVP: dy_i = Σ_{j≤i} exp(x_j − y_i)·t_j, so dy_i =
// exp(y_{i−1} − y_i)·dy_{i−1} + exp(x_i − y_i)·t_i. The weights are
// finite: a NaN weight (from ∞ − ∞, where the running value and the term
// are both infinite) is taken as 1.
func cumlogsumexpJVP(params any, x, t []*tensor, out *tensor) *tensor {
	return forward(params.(CumsumParams), x[0], t[0], out, func(x, t, y *tensor, axis int) *tensor {
		weight := func(d *tensor) *tensor {
			e := interp.Bind1(Exp, nil, d)
			return sel(interp.Bind1(Ne, nil, e, e), constLike(1, e), e)
		}
		a := weight(sub(shiftAlong(y, 1, axis, math.Inf(-1)), y))
		b := mul(weight(sub(x, y)), t)
		return linearRecurrence(a, b, axis)
	})
}
