package prims

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// Helpers shared by the JVP and transpose rules. Every one of them is a
// Bind of primitives (or makes a concrete constant), so the rules built on
// them are transformable in turn.

type tensor = interp.Tensor

// scalarConst returns a new concrete rank-0 tensor of dtype dt on the
// default backend holding v, converted by the one conversion rule
// (backend.HostFill: saturating for integers, nonzero is true for bool).
// It panics with *interp.Error for an invalid dtype.
func scalarConst(v float64, dt interp.DType) *tensor {
	be := interp.DefaultBackend()
	data := backend.HostFill(v, dt, 1)
	if data == nil {
		interp.Panicf("cannot make a constant of dtype %v", dt)
	}
	return interp.NewConcrete(be, backend.Array{Buf: backend.FromOwnedHost(be, data), Shape: []int{}})
}

// full returns a tensor of aval a filled with v: a fresh rank-0 constant
// broadcast (a zero-stride view at eval level) to a's shape. The result
// must not be the destination of an in-place op.
func full(v float64, a interp.Aval) *tensor {
	s := scalarConst(v, a.DType)
	if len(a.Shape) == 0 {
		return s
	}
	return interp.Bind1(BroadcastInDim, BroadcastParams{Shape: a.Shape, Dims: []int{}}, s)
}

// zerosLike returns zeros of aval a (see full).
func zerosLike(a interp.Aval) *tensor { return full(0, a) }

// constLike returns a tensor of like's shape and dtype filled with v (see
// full).
func constLike(v float64, like *tensor) *tensor { return full(v, like.Aval()) }

// Zeros returns a tensor of zeros of aval a, built with primitives (a
// concrete rank-0 zero broadcast with broadcast_in_dim), for interpreters
// that must materialize a symbolic zero tangent or cotangent. The result
// is a zero-stride view at eval level: never use it as the destination of
// an in-place op. It panics with *interp.Error for an invalid dtype or
// when no backend is installed.
func Zeros(a interp.Aval) *interp.Tensor { return zerosLike(a) }

// Full is Zeros with every element equal to v (converted to a's dtype).
func Full(v float64, a interp.Aval) *interp.Tensor { return full(v, a) }

func allNil(ts []*tensor) bool {
	for _, t := range ts {
		if t != nil {
			return false
		}
	}
	return true
}

// Elementwise shorthands.

func add(a, b *tensor) *tensor { return interp.Bind1(Add, nil, a, b) }
func sub(a, b *tensor) *tensor { return interp.Bind1(Sub, nil, a, b) }
func mul(a, b *tensor) *tensor { return interp.Bind1(Mul, nil, a, b) }
func div(a, b *tensor) *tensor { return interp.Bind1(Div, nil, a, b) }
func neg(a *tensor) *tensor    { return interp.Bind1(Neg, nil, a) }
func eq(a, b *tensor) *tensor  { return interp.Bind1(Eq, nil, a, b) }
func sel(p, a, b *tensor) *tensor {
	return interp.Bind1(Where, nil, p, a, b)
}

// addNil adds two tangents where nil is a symbolic zero.
func addNil(a, b *tensor) *tensor {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return add(a, b)
}

// scale returns c*t for the constant float c.
func scale(c float64, t *tensor) *tensor { return mul(constLike(c, t), t) }

// orZeros returns t, or zeros of aval a when t is nil.
func orZeros(t *tensor, a interp.Aval) *tensor {
	if t == nil {
		return zerosLike(a)
	}
	return t
}

func convert(x *tensor, dt interp.DType) *tensor {
	return interp.Bind1(ConvertElementType, ConvertParams{DType: dt}, x)
}

func reduceSum(x *tensor, axes []int) *tensor {
	return interp.Bind1(ReduceSum, ReduceParams{Axes: axes}, x)
}

func broadcastInDim(x *tensor, shape, dims []int) *tensor {
	return interp.Bind1(BroadcastInDim, BroadcastParams{Shape: shape, Dims: dims}, x)
}

func reshape(x *tensor, shape []int) *tensor {
	if interp.ShapeEqual(x.Shape(), shape) {
		return x
	}
	return interp.Bind1(Reshape, ReshapeParams{Shape: shape}, x)
}

func transpose(x *tensor, perm []int) *tensor {
	if isIdentityPerm(perm) {
		return x
	}
	return interp.Bind1(Transpose, TransposeParams{Perm: perm}, x)
}

func isIdentityPerm(perm []int) bool {
	for i, p := range perm {
		if p != i {
			return false
		}
	}
	return true
}

func rev(x *tensor, axes []int) *tensor {
	return interp.Bind1(Rev, RevParams{Axes: axes}, x)
}

// keptAxes returns the axes of a rank-r tensor that are not in the sorted
// list axes.
func keptAxes(r int, axes []int) []int {
	kept := make([]int, 0, r)
	j := 0
	for i := 0; i < r; i++ {
		if j < len(axes) && axes[j] == i {
			j++
			continue
		}
		kept = append(kept, i)
	}
	return kept
}

// unreduce broadcasts y, the result of reducing a tensor of shape shape
// over axes, back to shape.
func unreduce(y *tensor, shape, axes []int) *tensor {
	return broadcastInDim(y, shape, keptAxes(len(shape), axes))
}

// shiftAlong shifts x by k ≥ 0 positions toward higher indices along axis,
// filling with v: out[i] = x[i-k], v where i < k.
func shiftAlong(x *tensor, k, axis int, v float64) *tensor {
	r := x.Rank()
	low, high := make([]int, r), make([]int, r)
	low[axis], high[axis] = k, -k
	if n := x.Shape()[axis]; k > n {
		low[axis], high[axis] = n, -n
	}
	return interp.Bind1(Pad, PadParams{Low: low, High: high, Interior: make([]int, r)}, x, scalarConst(v, x.DType()))
}

// cumprod is the inclusive cumulative product along axis, by log-depth
// doubling (Hillis–Steele) with pad and mul: exact with zeros, no
// division, and differentiable in turn.
func cumprod(x *tensor, axis int) *tensor {
	n := x.Shape()[axis]
	for k := 1; k < n; k *= 2 {
		x = mul(x, shiftAlong(x, k, axis, 1))
	}
	return x
}

// productOfOthers returns, at each position i along axis, the product of
// the elements at every other position: exclusive prefix products times
// exclusive suffix products.
func productOfOthers(x *tensor, axis int) *tensor {
	ax := []int{axis}
	prefix := shiftAlong(cumprod(x, axis), 1, axis, 1)
	suffix := rev(shiftAlong(cumprod(rev(x, ax), axis), 1, axis, 1), ax)
	return mul(prefix, suffix)
}

// inRange returns the bool mask 0 ≤ idx < n of the i64 tensor idx.
func inRange(idx *tensor, n int) *tensor {
	lo := interp.Bind1(Ge, nil, idx, constLike(0, idx))
	hi := interp.Bind1(Lt, nil, idx, constLike(float64(n), idx))
	return interp.Bind1(And, nil, lo, hi)
}

// clampIndices clamps the i64 tensor idx into [0, n-1] (gather's rule).
func clampIndices(idx *tensor, n int) *tensor {
	if n == 0 {
		return idx
	}
	lo := interp.Bind1(Max, nil, idx, constLike(0, idx))
	return interp.Bind1(Min, nil, lo, constLike(float64(n-1), idx))
}

// indexMaskFor broadcasts m, a mask over the indices of a gather along
// axis (shape idx.shape), to the shape of the gathered result (or of
// scatter's updates), shape.
func indexMaskFor(m *tensor, shape []int, axis int) *tensor {
	dims := make([]int, m.Rank())
	for i := range dims {
		dims[i] = axis + i
	}
	return broadcastInDim(m, shape, dims)
}

// scatterWinners returns the bool mask over idx (shape idx.shape) of the
// index positions whose update scatter along an axis of size n keeps:
// in range, and the last (in row-major order) of the positions holding
// the same index.
func scatterWinners(idx *tensor, n int) *tensor {
	if n == 0 {
		return full(0, interp.Aval{Shape: idx.Shape(), DType: backend.Bool})
	}
	size := idx.Size()
	ids := interp.Bind1(Iota, IotaParams{DType: backend.Int64, Shape: []int{size}, Dim: 0})
	ids = reshape(ids, idx.Shape())
	none := full(-1, interp.Aval{Shape: []int{n}, DType: backend.Int64})
	owner := interp.Bind1(Scatter, AxisParams{Axis: 0}, none, idx, ids)
	return eq(interp.Bind1(Gather, AxisParams{Axis: 0}, owner, idx), ids)
}
