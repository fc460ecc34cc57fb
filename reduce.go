package peel

import (
	"math"

	"github.com/peel-ml/peel/backend"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Reductions, arg-reductions and the normalizing functions built on them
// (Softmax, LogSoftmax); the statistics are in reduce_stats.go. Axes may
// be negative (counted from the end) and given in any order; nil axes
// means every axis, an empty non-nil slice none.

// reduceBind applies reduction primitive p over the normalized axes and
// re-inserts them as size-1 dimensions when keepDims is set.
func reduceBind(p *interp.Prim, x *Tensor, axes []int, keepDims bool) *Tensor {
	out := interp.Bind1(p, prims.ReduceParams{Axes: axes}, x)
	if keepDims {
		out = keepReshape(out, keptShape(x.Shape(), axes))
	}
	return out
}

// boolToInt converts a bool or uint8 tensor to i64 (numpy sums and
// multiplies booleans as integers, and torch sums uint8 as int64, so a
// sum of bytes does not wrap at 256).
func boolToInt(x *Tensor) *Tensor {
	if x.DType() != Bool && x.DType() != Uint8 {
		return x
	}
	return interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: Int64}, x)
}

// Sum returns the sum of x's elements over the given axes, or over all
// of them when none is given: Sum(x) is a scalar, Sum(x, 1) sums axis 1,
// Sum(x, 0, 2) axes 0 and 2; negative axes count from the end. Keep(Sum,
// x, axes...) keeps the reduced axes as size-1 dimensions; every
// reduction has this shape. Bool and uint8 tensors are summed as i64
// (int32 ones in int32, wrapping around as JAX's do). It panics
// with *Error if x is nil or an axis is out of range or repeated.
func Sum(x *Tensor, axes ...int) *Tensor {
	const op = "peel.Sum"
	defer interp.Annotate(op)
	checkTensor(op, x)
	ax := reduceAxes(op, axes, x.Rank())
	return reduceBind(prims.ReduceSum, boolToInt(x), ax, false)
}

// Keep applies reduce (Sum, Mean, Max, ArgMax, …) to x over axes and
// keeps the reduced axes as size-1 dimensions (numpy's keepdims), so the
// result broadcasts against x: Keep(Max, x, -1), Keep(Sum, x). With no
// axes every axis is reduced and kept. It panics as reduce does, and
// with *Error if reduce's result does not have the size of the kept
// shape (reduce is not a reduction over those axes).
func Keep(reduce func(x *Tensor, axes ...int) *Tensor, x *Tensor, axes ...int) *Tensor {
	const op = "peel.Keep"
	checkTensor(op, x)
	r := reduce(x, axes...)
	defer interp.Annotate(op)
	kept := keptShape(x.Shape(), reduceAxes(op, axes, x.Rank()))
	if r.Size() != backend.ShapeSize(kept) {
		errorf(op, "the reduction's result %s does not fit the kept shape %v of %s over axes %v", r.TypeString(), kept, x.TypeString(), axes)
	}
	return keepReshape(r, kept)
}

// Prod returns the product of x's elements over axes; it treats axes and
// dtypes and panics as Sum does.
func Prod(x *Tensor, axes ...int) *Tensor {
	const op = "peel.Prod"
	defer interp.Annotate(op)
	checkTensor(op, x)
	ax := reduceAxes(op, axes, x.Rank())
	return reduceBind(prims.ReduceProd, boolToInt(x), ax, false)
}

// extremum is Max or Min: the reduction has no identity, so an empty axis
// is an error.
func extremum(op string, p *interp.Prim, x *Tensor, axes []int, keepDims bool) *Tensor {
	checkTensor(op, x)
	ax := reduceAxes(op, axes, x.Rank())
	for _, a := range ax {
		if x.Shape()[a] == 0 {
			errorf(op, "axis %d of shape %v is empty and the reduction has no identity", a, x.Shape())
		}
	}
	return reduceBind(p, x, ax, keepDims)
}

// Max returns the largest element of x over axes (NaN propagates); see Sum
// for axes and Keep. It panics with *Error if x is nil, an axis is out of
// range or repeated, or a reduced axis is empty.
func Max(x *Tensor, axes ...int) *Tensor {
	defer interp.Annotate("peel.Max")
	return extremum("peel.Max", prims.ReduceMax, x, axes, false)
}

// Min returns the smallest element of x over axes; it panics as Max does.
func Min(x *Tensor, axes ...int) *Tensor {
	defer interp.Annotate("peel.Min")
	return extremum("peel.Min", prims.ReduceMin, x, axes, false)
}

// finiteOr0 replaces the non-finite elements of m by 0.
func finiteOr0(m *Tensor) *Tensor {
	finite := bin(prims.Lt, un(prims.Abs, m), fill(math.Inf(1), m))
	return interp.Bind1(prims.Where, nil, finite, m, fill(0, m))
}

// LogSumExp returns log(Sum(Exp(x), axes...)) computed stably: the
// maximum m over the axes is subtracted before exponentiating and added
// back after the log (m is replaced by 0 where it is infinite, so an axis
// of -Inf gives -Inf, not NaN; an empty axis gives -Inf). Integer and bool
// tensors give f64. It panics as Sum does.
func LogSumExp(x *Tensor, axes ...int) *Tensor {
	const keepDims = false
	const op = "peel.LogSumExp"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if h, ok := halfFloat(x); ok {
		return AsType(LogSumExp(AsType(x, Float32), axes...), h)
	}
	ax := reduceAxes(op, axes, x.Rank())
	x = toFloat(x)
	kept := keptShape(x.Shape(), ax)
	var m *Tensor
	if reducedSize(x.Shape(), ax) == 0 {
		m = broadcastTo(constantOn(backendFor(x), 0, x.DType()), kept)
	} else {
		// The shift cancels in exact arithmetic, so its derivative is zero
		// and only its value matters.
		m = finiteOr0(reduceBind(prims.ReduceMax, x, ax, true))
	}
	e := un(prims.Exp, bin(prims.Sub, x, broadcastTo(m, x.Shape())))
	s := reduceBind(prims.ReduceSum, e, ax, keepDims)
	return bin(prims.Add, un(prims.Log, s), keepReshape(m, s.Shape()))
}

// argReduce is ArgMax or ArgMin: along one axis, or over the flattened
// tensor when none is given.
func argReduce(op string, p *interp.Prim, x *Tensor, axes []int) *Tensor {
	checkTensor(op, x)
	if len(axes) > 1 {
		errorf(op, "takes at most one axis, got %v", axes)
	}
	if len(axes) == 0 {
		x = keepReshape(x, []int{x.Size()})
		axes = []int{0}
	}
	a := normAxis(op, axes[0], x.Rank())
	if x.Shape()[a] == 0 {
		errorf(op, "axis %d of shape %v is empty", axes[0], x.Shape())
	}
	return interp.Bind1(p, prims.AxisParams{Axis: a}, x)
}

// ArgMax returns the index (i64) of the first largest element along the
// given axis (negative counts from the end; NaN counts as the largest, as
// numpy), or the flat index of the first largest element when no axis is
// given; Keep(ArgMax, x, axis) keeps the axis with size 1. It panics with
// *Error if x is nil, more than one axis is given, the axis is out of
// range, or it is empty.
func ArgMax(x *Tensor, axis ...int) *Tensor {
	defer interp.Annotate("peel.ArgMax")
	return argReduce("peel.ArgMax", prims.ArgMax, x, axis)
}

// ArgMin returns the index (i64) of the first smallest element along the
// axis, or the flat index over the whole tensor; it panics as ArgMax
// does.
func ArgMin(x *Tensor, axis ...int) *Tensor {
	defer interp.Annotate("peel.ArgMin")
	return argReduce("peel.ArgMin", prims.ArgMin, x, axis)
}

// Softmax returns Exp(x) normalized to sum to 1 along axis, computed
// stably by subtracting the maximum first. Integer and bool tensors give
// f64. It panics with *Error if x is nil or the axis is out of range.
func Softmax(x *Tensor, axis int) *Tensor {
	const op = "peel.Softmax"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if h, ok := halfFloat(x); ok {
		return AsType(Softmax(AsType(x, Float32), axis), h)
	}
	a := normAxis(op, axis, x.Rank())
	return interp.Bind1(prims.Softmax, prims.AxisParams{Axis: a}, toFloat(x))
}

// LogSoftmax returns Log(Softmax(x, axis)) computed stably as
// (x - m) - log(Sum(Exp(x - m))) with m the maximum along axis. It treats
// dtypes and panics as Softmax does.
func LogSoftmax(x *Tensor, axis int) *Tensor {
	const op = "peel.LogSoftmax"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if h, ok := halfFloat(x); ok {
		return AsType(LogSoftmax(AsType(x, Float32), axis), h)
	}
	a := normAxis(op, axis, x.Rank())
	return interp.Bind1(prims.LogSoftmax, prims.AxisParams{Axis: a}, toFloat(x))
}

// truth returns x != 0 as a bool tensor (x itself when it is bool).
func truth(x *Tensor) *Tensor {
	if x.DType() == Bool {
		return x
	}
	return bin(prims.Ne, x, fill(0, x))
}

// Any reports, as a bool tensor, whether any element of x over axes is
// true (nonzero, for numbers); over an empty axis it is false. See Sum
// for axes and Keep; it panics as Sum does.
func Any(x *Tensor, axes ...int) *Tensor { return countReduce("peel.Any", x, axes, true) }

// All reports, as a bool tensor, whether every element of x over axes is
// true (nonzero, for numbers); over an empty axis it is true. See Sum for
// axes and Keep; it panics as Sum does.
func All(x *Tensor, axes ...int) *Tensor { return countReduce("peel.All", x, axes, false) }

// countReduce is Any (any) or All: it counts the true (for All, the
// false) elements over axes and compares the count with 0, so an empty
// axis gives the reduction's identity.
func countReduce(op string, x *Tensor, axes []int, any bool) *Tensor {
	defer interp.Annotate(op)
	checkTensor(op, x)
	ax := reduceAxes(op, axes, x.Rank())
	t := boolToInt(truth(x))
	if !any {
		t = boolToInt(bin(prims.Eq, t, fill(0, t)))
	}
	n := reduceBind(prims.ReduceSum, t, ax, false)
	if any {
		return bin(prims.Gt, n, fill(0, n))
	}
	return bin(prims.Eq, n, fill(0, n))
}

// Norm returns the Euclidean norm of x over axes: the vector 2-norm over
// one axis, the Frobenius norm over several, Sqrt(Sum(Square(x), axes...))
// (integer and bool tensors give f64). Its derivative at a zero norm is 0
// (the subgradient torch uses), not NaN. See Sum for axes and Keep; it
// panics as Sum does.
func Norm(x *Tensor, axes ...int) *Tensor {
	const op = "peel.Norm"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if h, ok := halfFloat(x); ok {
		return AsType(Norm(AsType(x, Float32), axes...), h)
	}
	ax := reduceAxes(op, axes, x.Rank())
	xf := toFloat(x)
	s := reduceBind(prims.ReduceSum, bin(prims.Mul, xf, xf), ax, false)
	// The double select keeps the derivative finite at s = 0: the
	// square root only ever sees positive values.
	pos := bin(prims.Gt, s, fill(0, s))
	safe := interp.Bind1(prims.Where, nil, pos, s, fill(1, s))
	return interp.Bind1(prims.Where, nil, pos, un(prims.Sqrt, safe), fill(0, s))
}
