package peel

import (
	"math"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Scans and reductions built on existing primitives. The cumulative
// products, extrema and log-sum-exps are log-depth doubling scans
// (Hillis–Steele: ⌈log₂ n⌉ steps, each combining every element with the
// one 2ᵏ before it), so they are exact composites whose derivatives and
// batching come from the primitives they use, at the cost of O(n log n)
// work instead of a sequential loop's O(n).

// ScanOption is an option of Cumprod, Cummax, Cummin and LogCumSumExp.
type ScanOption interface{ applyScan(*scanConfig) }

type scanConfig struct{ reverse bool }

type scanOption func(*scanConfig)

func (f scanOption) applyScan(c *scanConfig) { f(c) }

// Reverse runs a scan from the end of the axis: element i combines
// elements i, i+1, …, n−1.
func Reverse() ScanOption { return scanOption(func(c *scanConfig) { c.reverse = true }) }

// scanSetup checks x and the axis and returns the normalized axis and the
// options.
func scanSetup(op string, x *Tensor, axis int, opts []ScanOption) (int, scanConfig) {
	checkTensor(op, x)
	a := normAxis(op, axis, x.Rank())
	var c scanConfig
	for _, o := range opts {
		if o != nil {
			o.applyScan(&c)
		}
	}
	return a, c
}

// reversed applies scan to x flipped along axis a and flips the result
// back when rev is set. An axis of at most one element is its own scan:
// the result is a fresh copy of x.
func reversed(x *Tensor, a int, rev bool, scan func(*Tensor) *Tensor) *Tensor {
	if x.Shape()[a] <= 1 {
		return un(prims.Copy, x)
	}
	if !rev {
		return scan(x)
	}
	flip := func(t *Tensor) *Tensor { return interp.Bind1(prims.Rev, prims.RevParams{Axes: []int{a}}, t) }
	return flip(scan(flip(x)))
}

// shiftPad shifts x by k toward higher indices along axis a, filling the
// first k positions with v.
func shiftPad(x *Tensor, a, k int, v float64) *Tensor {
	r := x.Rank()
	low, high := make([]int, r), make([]int, r)
	low[a], high[a] = k, -k
	return interp.Bind1(prims.Pad, prims.PadParams{Low: low, High: high, Interior: make([]int, r)}, x, constantOn(backendFor(x), v, x.DType()))
}

// shiftKeep is x shifted by k toward higher indices along axis a, with
// the first k positions holding x's own first k elements (so an
// idempotent combine leaves them unchanged).
func shiftKeep(x *Tensor, a, k int) *Tensor {
	n := x.Shape()[a]
	return interp.Bind1(prims.Concatenate, prims.AxisParams{Axis: a}, sliceAxis(x, a, 0, k), sliceAxis(x, a, 0, n-k))
}

// Cumprod returns the inclusive cumulative product of x along axis
// (negative counts from the end; Reverse() runs from the end); bool
// tensors multiply as i64. It is a doubling scan of multiplications, so
// its derivative is exact where x holds zeros (no division). It panics
// with *Error if x is nil or the axis is out of range.
func Cumprod(x *Tensor, axis int, opts ...ScanOption) *Tensor {
	const op = "peel.Cumprod"
	defer interp.Annotate(op)
	a, c := scanSetup(op, x, axis, opts)
	x = boolToInt(x)
	return reversed(x, a, c.reverse, func(y *Tensor) *Tensor {
		n := y.Shape()[a]
		for k := 1; k < n; k *= 2 {
			y = bin(prims.Mul, y, shiftPad(y, a, k, 1))
		}
		return y
	})
}

// cumExtremum is Cummax (p = max) or Cummin: the running extremum's
// values by a doubling scan, then the position of each one's first
// occurrence (the last position ≤ i where the running value changed),
// and the result gathered from x there, so the derivative reaches that
// element.
func cumExtremum(op string, p *interp.Prim, x *Tensor, axis int, opts []ScanOption) *Tensor {
	defer interp.Annotate(op)
	a, c := scanSetup(op, x, axis, opts)
	return reversed(x, a, c.reverse, func(y *Tensor) *Tensor {
		n := y.Shape()[a]
		m := interp.Bind1(prims.StopGradient, nil, y)
		for k := 1; k < n; k *= 2 {
			m = bin(p, m, shiftKeep(m, a, k))
		}
		// changed[i]: m[i] differs from m[i-1] (NaN equal to NaN); true
		// at i = 0.
		prev := shiftKeep(m, a, 1)
		same := bin(prims.Eq, m, prev)
		if m.DType().IsFloat() {
			same = bin(prims.Or, same, bin(prims.And, isNaN(m), isNaN(prev)))
		}
		pos := iotaLike(y, a)
		zero := fill(0, pos)
		first := sel(same, zero, pos)
		for k := 1; k < n; k *= 2 {
			first = bin(prims.Max, first, shiftPad(first, a, k, 0))
		}
		return prims.TakeAlongAxis(y, first, a)
	})
}

// Cummax returns the running maximum of x along axis (negative counts
// from the end; Reverse() runs from the end), as numpy's
// maximum.accumulate: NaN propagates from its position on. Its
// derivative reaches, at each position, the first occurrence of the
// running maximum (ties go to the earliest element, in scan order). It
// panics with *Error if x is nil or the axis is out of range.
func Cummax(x *Tensor, axis int, opts ...ScanOption) *Tensor {
	return cumExtremum("peel.Cummax", prims.Max, x, axis, opts)
}

// Cummin returns the running minimum of x along axis; it treats NaN and
// ties and panics as Cummax does.
func Cummin(x *Tensor, axis int, opts ...ScanOption) *Tensor {
	return cumExtremum("peel.Cummin", prims.Min, x, axis, opts)
}

// logAddExp returns log(exp(a) + exp(b)) computed stably as
// max(a, b) + log1p(exp(−|a − b|)). Its derivative is the softmax
// weight of each operand, from the rules of max (half each at a tie) and
// abs (0 at 0). Where a − b is NaN (both −∞, both +∞, or a NaN operand)
// the result is ±∞ or NaN.
func logAddExp(a, b *Tensor) *Tensor {
	m := bin(prims.Max, a, b)
	d := bin(prims.Sub, a, b)
	bad := isNaN(d)
	// The double select keeps the derivative finite where d is NaN.
	d = sel(bad, fill(0, d), d)
	r := bin(prims.Add, m, un(prims.Log1p, un(prims.Exp, un(prims.Neg, un(prims.Abs, d)))))
	// There the result is a (±∞, whose derivative goes to a alone, so a
	// scan's first element, combined with the −∞ padding, keeps
	// derivative 1), or b where b is NaN.
	return sel(bad, sel(isNaN(b), b, a), r)
}

// LogCumSumExp returns log(Cumsum(Exp(x), axis)) computed stably (each
// step of the doubling scan factors out the larger of the two terms, as
// a running maximum), numpy's logaddexp.accumulate and torch's
// logcumsumexp; Reverse() runs from the end. Integer and bool tensors
// give f64. Where the terms combined are all −∞ the result is −∞ with a
// finite derivative (not NaN); NaN propagates.
// It panics with *Error if x is nil or the axis is out of range.
func LogCumSumExp(x *Tensor, axis int, opts ...ScanOption) *Tensor {
	const op = "peel.LogCumSumExp"
	defer interp.Annotate(op)
	a, c := scanSetup(op, x, axis, opts)
	x = toFloat(x)
	return reversed(x, a, c.reverse, func(y *Tensor) *Tensor {
		n := y.Shape()[a]
		for k := 1; k < n; k *= 2 {
			// The first k positions combine with −∞, which leaves them
			// unchanged.
			y = logAddExp(y, shiftPad(y, a, k, math.Inf(-1)))
		}
		return y
	})
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
	ax := reduceAxes(op, axes, x.Rank())
	return correctedVariance(toFloat(x), ax, int(d))
}

// Std returns Sqrt(d.Var(x, axes...)); it panics as Sum does.
func (d Ddof) Std(x *Tensor, axes ...int) *Tensor {
	const op = "peel.Ddof.Std"
	defer interp.Annotate(op)
	checkTensor(op, x)
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
	ax := reduceAxes(op, axes, x.Rank())
	x = toFloat(x)
	y, ok := withoutNaN(x)
	s := reduceBind(prims.ReduceSum, y, ax, false)
	cnt := reduceBind(prims.ReduceSum, interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: x.DType()}, ok), ax, false)
	return bin(prims.Div, s, cnt)
}
