package peel

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Scans and reductions. The cumulative products, extrema and
// log-sum-exps are primitives (prims.Cumprod, Cummax, Cummin,
// Cumlogsumexp) with sequential kernels; their derivatives are written
// with other primitives (see prims/scan.go). The NaN-aware reductions
// and the corrected variance are composites.

// ScanOption is an option of Cumprod, Cummax, Cummin and LogCumSumExp.
type ScanOption interface{ applyScan(*scanConfig) }

type scanConfig struct{ reverse bool }

type scanOption func(*scanConfig)

func (f scanOption) applyScan(c *scanConfig) { f(c) }

// Reverse runs a scan from the end of the axis: element i combines
// elements i, i+1, …, n−1.
func Reverse() ScanOption { return scanOption(func(c *scanConfig) { c.reverse = true }) }

// scanParams checks x and the axis and returns the scan's parameters.
func scanParams(op string, x *Tensor, axis int, opts []ScanOption) prims.CumsumParams {
	checkTensor(op, x)
	a := normAxis(op, axis, x.Rank())
	var c scanConfig
	for _, o := range opts {
		if o != nil {
			o.applyScan(&c)
		}
	}
	return prims.CumsumParams{Axis: a, Reverse: c.reverse}
}

// Cumprod returns the inclusive cumulative product of x along axis
// (negative counts from the end; Reverse() runs from the end); bool
// tensors multiply as i64, and integers wrap as int64 arithmetic does.
// Its derivative is exact where x holds zeros (it is computed without
// division). It panics with *Error if x is nil or the axis is out of
// range.
func Cumprod(x *Tensor, axis int, opts ...ScanOption) *Tensor {
	const op = "peel.Cumprod"
	defer interp.Annotate(op)
	p := scanParams(op, x, axis, opts)
	return interp.Bind1(prims.Cumprod, p, boolToInt(x))
}

// Cummax returns the running maximum of x along axis (negative counts
// from the end; Reverse() runs from the end), as numpy's
// maximum.accumulate: NaN propagates from its position on. Its
// derivative reaches, at each position, the first occurrence of the
// running maximum in scan order (ties go to the earliest element, or
// with Reverse() to the last). It panics with *Error if x is nil or the
// axis is out of range.
func Cummax(x *Tensor, axis int, opts ...ScanOption) *Tensor {
	const op = "peel.Cummax"
	defer interp.Annotate(op)
	p := scanParams(op, x, axis, opts)
	return interp.Bind(prims.Cummax, p, x)[0]
}

// Cummin returns the running minimum of x along axis; it treats NaN and
// ties and panics as Cummax does.
func Cummin(x *Tensor, axis int, opts ...ScanOption) *Tensor {
	const op = "peel.Cummin"
	defer interp.Annotate(op)
	p := scanParams(op, x, axis, opts)
	return interp.Bind(prims.Cummin, p, x)[0]
}

// LogCumSumExp returns log(Cumsum(Exp(x), axis)) computed stably (each
// step combines the running value a with the next element b as
// max(a, b) + log1p(exp(−|a − b|)), so nothing overflows or underflows
// needlessly), numpy's logaddexp.accumulate and torch's logcumsumexp;
// Reverse() runs from the end. Integer and bool tensors give f64. Where
// the terms combined are all −∞ (or +∞) the result is −∞ (+∞) with a
// finite derivative, not NaN; NaN propagates. It panics with *Error if x
// is nil or the axis is out of range.
func LogCumSumExp(x *Tensor, axis int, opts ...ScanOption) *Tensor {
	const op = "peel.LogCumSumExp"
	defer interp.Annotate(op)
	p := scanParams(op, x, axis, opts)
	return interp.Bind1(prims.Cumlogsumexp, p, toFloat(x))
}

// Ddof is the delta degrees of freedom of a variance: the sum of squared
// deviations is divided by n − Ddof (numpy's ddof, torch's correction).
// Ddof(1).Var(x, axes...) is the unbiased sample variance; Ddof(0).Var is
// Var. The methods compose with Keep: Keep(Ddof(1).Std, x, 0).
type Ddof int

// Var returns the variance of x over axes with d degrees of freedom
// removed: Sum((x − Mean(x))²) / max(n − d, 0), as numpy's var(ddof=d),
// so n ≤ d gives +Inf, or NaN where every deviation is zero or n is 0.
// Integer and bool tensors give f64. See Sum for axes and Keep; it panics
// as Sum does.
func (d Ddof) Var(x *Tensor, axes ...int) *Tensor {
	const op = "peel.Ddof.Var"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if h, ok := halfFloat(x); ok {
		return AsType(d.Var(AsType(x, Float32), axes...), h)
	}
	ax := reduceAxes(op, axes, x.Rank())
	return correctedVariance(toFloat(x), ax, int(d))
}

// Std returns Sqrt(d.Var(x, axes...)); it panics as Sum does.
func (d Ddof) Std(x *Tensor, axes ...int) *Tensor {
	const op = "peel.Ddof.Std"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if h, ok := halfFloat(x); ok {
		return AsType(d.Std(AsType(x, Float32), axes...), h)
	}
	ax := reduceAxes(op, axes, x.Rank())
	return un(prims.Sqrt, correctedVariance(toFloat(x), ax, int(d)))
}

// correctedVariance is variance with the divisor n − ddof (at least 0).
func correctedVariance(x *Tensor, ax []int, ddof int) *Tensor {
	if ddof == 0 {
		return variance(x, ax, false)
	}
	m := broadcastTo(mean(x, ax, true), x.Shape())
	dev := bin(prims.Sub, x, m)
	s := reduceBind(prims.ReduceSum, bin(prims.Mul, dev, dev), ax, false)
	return bin(prims.Div, s, fill(float64(max(reducedSize(x.Shape(), ax)-ddof, 0)), s))
}

// CountNonzero returns the number (i64) of nonzero (for bool, true)
// elements of x over axes, as numpy's count_nonzero; NaN is nonzero. See
// Sum for axes and Keep; it panics as Sum does.
func CountNonzero(x *Tensor, axes ...int) *Tensor {
	const op = "peel.CountNonzero"
	defer interp.Annotate(op)
	checkTensor(op, x)
	ax := reduceAxes(op, axes, x.Rank())
	return reduceBind(prims.ReduceSum, boolToInt(truth(x)), ax, false)
}

// withoutNaN returns x with its NaNs replaced by 0 and the mask of the
// others (nil for integer and bool x, which have none).
func withoutNaN(x *Tensor) (*Tensor, *Tensor) {
	if !x.DType().IsFloat() {
		return x, nil
	}
	ok := bin(prims.Eq, x, x)
	return sel(ok, x, fill(0, x)), ok
}

// NanSum returns the sum of x over axes treating NaN as zero, as numpy's
// nansum (so it is 0 where every element is NaN); ±Inf still count. Its
// derivative is zero at the NaNs. Bool tensors are summed as i64. See
// Sum for axes and Keep; it panics as Sum does.
func NanSum(x *Tensor, axes ...int) *Tensor {
	const op = "peel.NanSum"
	defer interp.Annotate(op)
	checkTensor(op, x)
	ax := reduceAxes(op, axes, x.Rank())
	y, _ := withoutNaN(boolToInt(x))
	return reduceBind(prims.ReduceSum, y, ax, false)
}

// NanMean returns the mean of the non-NaN elements of x over axes, as
// numpy's nanmean: NaN where there are none. Integer and bool tensors
// give f64. See Sum for axes and Keep; it panics as Sum does.
func NanMean(x *Tensor, axes ...int) *Tensor {
	const op = "peel.NanMean"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if h, ok := halfFloat(x); ok {
		return AsType(NanMean(AsType(x, Float32), axes...), h)
	}
	ax := reduceAxes(op, axes, x.Rank())
	x = toFloat(x)
	y, ok := withoutNaN(x)
	s := reduceBind(prims.ReduceSum, y, ax, false)
	cnt := reduceBind(prims.ReduceSum, interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: x.DType()}, ok), ax, false)
	return bin(prims.Div, s, cnt)
}
