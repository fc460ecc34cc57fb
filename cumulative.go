package peel

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Cumulative operations along one axis: Cumsum, Cumprod, Cummax, Cummin
// and LogCumSumExp. Each is one primitive (prims.Cumsum, Cumprod,
// Cummax, Cummin, Cumlogsumexp) with a sequential kernel; their
// derivatives are written with other primitives (see prims/scan.go).

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

// Cumsum returns the inclusive cumulative sum of x along axis (negative
// counts from the end); bool tensors are summed as i64. It panics with
// *Error if x is nil or the axis is out of range.
func Cumsum(x *Tensor, axis int) *Tensor {
	const op = "peel.Cumsum"
	defer interp.Annotate(op)
	checkTensor(op, x)
	a := normAxis(op, axis, x.Rank())
	return interp.Bind1(prims.Cumsum, prims.CumsumParams{Axis: a}, boolToInt(x))
}
