package peel

import (
	"github.com/peel-ml/peel/internal/scanopt"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Cumulative operations along one axis: Cumsum, Cumprod, Cummax, Cummin
// and LogCumSumExp. Each is one primitive (prims.Cumsum, Cumprod,
// Cummax, Cummin, Cumlogsumexp) with a sequential kernel; their
// derivatives are written with other primitives (see prims/cumulative.go).

// ScanOption configures a scan along an axis. One option type serves
// every scan: the cumulative operations (Cumsum, Cumprod, Cummax, Cummin,
// LogCumSumExp) and transforms.Scan take the same options, as JAX's
// reverse=True serves both cumsum and lax.scan. Reverse is the option of
// both; transforms.Length, transforms.Unroll and transforms.StepRemat are
// read by transforms.Scan only, and a cumulative operation given one
// panics with *Error. Only peel's own packages implement ScanOption (its
// method's argument is internal).
type ScanOption interface{ ApplyScan(*scanopt.Config) }

// scanOption is a ScanOption of this package.
type scanOption func(*scanopt.Config)

// ApplyScan sets what the option sets in c.
func (f scanOption) ApplyScan(c *scanopt.Config) { f(c) }

// Reverse runs a scan from the end: for a cumulative operation, element
// i combines elements i, i+1, …, n−1 of the axis; for transforms.Scan,
// the steps run from the last slice of xs to the first, and the ys are
// still stacked in the order of xs (ys[i] is the y of the step on xs[i]).
func Reverse() ScanOption { return scanOption(func(c *scanopt.Config) { c.Reverse = true }) }

// scanParams checks x, the axis and the options (nil ones are skipped)
// and returns the scan's parameters.
func scanParams(op string, x *Tensor, axis int, opts []ScanOption) prims.CumsumParams {
	checkTensor(op, x)
	a := normAxis(op, axis, x.Rank())
	c := scanopt.New()
	for _, o := range opts {
		if o != nil {
			o.ApplyScan(&c)
		}
	}
	if c.ScanOnly != "" {
		errorf(op, "%s is an option of transforms.Scan only", c.ScanOnly)
	}
	return prims.CumsumParams{Axis: a, Reverse: c.Reverse}
}

// Cumsum returns the inclusive cumulative sum of x along axis (negative
// counts from the end; Reverse() runs from the end); bool tensors are
// summed as i64. It panics with *Error if x is nil, the axis is out of
// range or an option is transforms.Scan's only.
func Cumsum(x *Tensor, axis int, opts ...ScanOption) *Tensor {
	const op = "peel.Cumsum"
	defer interp.Annotate(op)
	p := scanParams(op, x, axis, opts)
	return interp.Bind1(prims.Cumsum, p, boolToInt(x))
}

// Cumprod returns the inclusive cumulative product of x along axis
// (negative counts from the end; Reverse() runs from the end); bool
// tensors multiply as i64, and integers wrap as int64 arithmetic does.
// Its derivative is exact where x holds zeros (it is computed without
// division). It panics with *Error as Cumsum does.
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
// with Reverse() to the last). It panics with *Error as Cumsum does.
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
// finite derivative, not NaN; NaN propagates. It panics with *Error as
// Cumsum does.
func LogCumSumExp(x *Tensor, axis int, opts ...ScanOption) *Tensor {
	const op = "peel.LogCumSumExp"
	defer interp.Annotate(op)
	p := scanParams(op, x, axis, opts)
	return interp.Bind1(prims.Cumlogsumexp, p, toFloat(x))
}
