package peel

import (
	"math"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Statistics built on the reductions: Mean, Var and Std (Ddof for the
// corrected estimators), and the counting and NaN-aware reductions
// CountNonzero, NanSum and NanMean, each a composite of the reduction
// primitives; and the normalizations Standardize and RMSNormalize, each
// a primitive of its own (one kernel pass).

// mean averages a float tensor over normalized axes (NaN over an empty
// axis, as numpy).
func mean(x *Tensor, ax []int, keepDims bool) *Tensor {
	s := reduceBind(prims.ReduceSum, x, ax, keepDims)
	return bin(prims.Div, s, fill(float64(reducedSize(x.Shape(), ax)), s))
}

// variance is the population variance of a float tensor over normalized
// axes.
func variance(x *Tensor, ax []int, keepDims bool) *Tensor {
	m := broadcastTo(mean(x, ax, true), x.Shape())
	d := bin(prims.Sub, x, m)
	return mean(bin(prims.Mul, d, d), ax, keepDims)
}

// Mean returns the arithmetic mean of x over axes; integer and bool
// tensors give f64, f16 and bf16 ones are computed in f32 and rounded
// once (as are Var, Std, Norm, LogSumExp, Softmax and LogSoftmax), and
// the mean over an empty axis is NaN. See Sum for axes and Keep; it
// panics as Sum does.
func Mean(x *Tensor, axes ...int) *Tensor {
	const op = "peel.Mean"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if h, ok := halfFloat(x); ok {
		return AsType(Mean(AsType(x, Float32), axes...), h)
	}
	ax := reduceAxes(op, axes, x.Rank())
	return mean(toFloat(x), ax, false)
}

// Var returns the population variance (ddof 0) of x over axes, the mean
// of the squared deviations from the mean; integer and bool tensors give
// f64. Ddof(1).Var is the sample variance (another divisor). It panics as
// Sum does.
func Var(x *Tensor, axes ...int) *Tensor {
	const op = "peel.Var"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if h, ok := halfFloat(x); ok {
		return AsType(Var(AsType(x, Float32), axes...), h)
	}
	ax := reduceAxes(op, axes, x.Rank())
	return variance(toFloat(x), ax, false)
}

// Std returns the population standard deviation (ddof 0), Sqrt(Var(x));
// Ddof(1).Std is the sample one. It panics as Sum does.
func Std(x *Tensor, axes ...int) *Tensor {
	const op = "peel.Std"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if h, ok := halfFloat(x); ok {
		return AsType(Std(AsType(x, Float32), axes...), h)
	}
	ax := reduceAxes(op, axes, x.Rank())
	return un(prims.Sqrt, variance(toFloat(x), ax, false))
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

// Standardize returns x standardized over its last k axes:
// (x − mean) / √(var + eps), with the mean and the population variance
// taken over those axes (torch's layer_norm without its scale and bias;
// jax.nn.standardize over trailing axes), as one kernel (prims.LayerNorm)
// whose gradient reads the kernel's inverse deviations. Integer and bool
// tensors give f64; f16 and bf16 ones are computed in f32 and rounded
// once. It panics with *Error if x is nil, k is not in [1, rank], or eps
// is negative or NaN.
func Standardize(x *Tensor, k int, eps float64) *Tensor {
	const op = "peel.Standardize"
	defer interp.Annotate(op)
	return normalize(op, prims.LayerNorm, x, k, eps)
}

// RMSNormalize returns x / √(mean(x²) + eps) over its last k axes (torch's
// rms_norm without its scale), as one kernel (prims.RMSNorm). It treats
// dtypes and panics as Standardize does.
func RMSNormalize(x *Tensor, k int, eps float64) *Tensor {
	const op = "peel.RMSNormalize"
	defer interp.Annotate(op)
	return normalize(op, prims.RMSNorm, x, k, eps)
}

func normalize(op string, p *interp.Prim, x *Tensor, k int, eps float64) *Tensor {
	checkTensor(op, x)
	if k < 1 || k > x.Rank() {
		errorf(op, "cannot normalize over the last %d axes of %s (want 1 to its rank)", k, x.TypeString())
	}
	if eps < 0 || math.IsNaN(eps) {
		errorf(op, "eps must be non-negative, got %v", eps)
	}
	if h, ok := halfFloat(x); ok {
		return AsType(normalize(op, p, AsType(x, Float32), k, eps), h)
	}
	return interp.Bind(p, prims.NormParams{Axes: k, Eps: eps}, toFloat(x))[0]
}
