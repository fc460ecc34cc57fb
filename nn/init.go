package nn

import (
	"math"

	"github.com/peel-ml/peel"
)

// An Initializer returns a tensor of the given float dtype and shape
// drawn with the PRNG key (peel.Key, peel.SplitKeysStacked): the same key gives
// the same tensor. Initializers that are not random ignore the key (it
// may be nil). The random ones are pure functions of their key built
// from peel's samplers, so they also run under transforms (vmapping over
// a batch of keys initializes an ensemble), except Orthogonal, which
// computes on the host.
type Initializer func(key *peel.Tensor, dt peel.DType, shape ...int) *peel.Tensor

// checkInit panics with a *peel.Error naming op when dt is not a float
// dtype or a dimension is negative.
func checkInit(op string, dt peel.DType, shape []int) {
	if dt != peel.Float32 && dt != peel.Float64 {
		fail(op, "dtype %v is not a float dtype", dt)
	}
	for _, d := range shape {
		if d < 0 {
			fail(op, "negative dimension in shape %v", shape)
		}
	}
}

// Zeros is the Initializer of zeros; it ignores the key. It panics with
// a *peel.Error if dt is not a float dtype or a dimension is negative.
func Zeros(key *peel.Tensor, dt peel.DType, shape ...int) *peel.Tensor {
	checkInit("nn.Zeros", dt, shape)
	return peel.Zeros(dt, shape...)
}

// Ones is the Initializer of ones; it ignores the key. It panics as
// Zeros does.
func Ones(key *peel.Tensor, dt peel.DType, shape ...int) *peel.Tensor {
	checkInit("nn.Ones", dt, shape)
	return peel.Ones(dt, shape...)
}

// Constant returns the Initializer filling every element with v; it
// ignores the key. The initializer panics as Zeros does.
func Constant(v float64) Initializer {
	return func(key *peel.Tensor, dt peel.DType, shape ...int) *peel.Tensor {
		checkInit("nn.Constant", dt, shape)
		return peel.Full(dt, v, shape...)
	}
}

// Uniform returns the Initializer drawing uniformly from [lo, hi)
// (torch's uniform_(lo, hi); peel.UniformRange). The initializer panics
// with a *peel.Error as peel.UniformRange does (lo ≥ hi, infinite
// bounds, a bad key, dtype or shape).
func Uniform(lo, hi float64) Initializer {
	return func(key *peel.Tensor, dt peel.DType, shape ...int) *peel.Tensor {
		defer peel.Annotate("nn.Uniform")
		checkInit("nn.Uniform", dt, shape)
		return peel.UniformRange(key, dt, lo, hi, shape...)
	}
}

// Normal returns the Initializer drawing from the normal distribution of
// mean 0 and standard deviation std (jax.nn.initializers.normal(std)).
// The initializer panics with a *peel.Error as peel.NormalScaled does
// (std negative or not finite, a bad key, dtype or shape).
func Normal(std float64) Initializer {
	return func(key *peel.Tensor, dt peel.DType, shape ...int) *peel.Tensor {
		defer peel.Annotate("nn.Normal")
		checkInit("nn.Normal", dt, shape)
		return peel.NormalScaled(key, dt, 0, std, shape...)
	}
}

// TruncatedNormal returns the Initializer drawing from the standard
// normal truncated to [-2, 2], scaled by std (as
// jax.nn.initializers.truncated_normal: the standard deviation of the
// result is about 0.88·std). The initializer panics with a *peel.Error
// if std is negative or not finite, or as peel.TruncatedNormal does.
func TruncatedNormal(std float64) Initializer {
	return func(key *peel.Tensor, dt peel.DType, shape ...int) *peel.Tensor {
		const op = "nn.TruncatedNormal"
		defer peel.Annotate(op)
		checkInit(op, dt, shape)
		if !(std >= 0) || math.IsInf(std, 0) {
			fail(op, "standard deviation %v is negative or not finite", std)
		}
		return peel.Mul(peel.TruncatedNormal(key, dt, -2, 2, shape...), std)
	}
}

// FanMode selects the fan a variance-scaling initializer divides by.
type FanMode int

// The fan modes.
const (
	FanIn  FanMode = iota // the number of inputs of a unit
	FanOut                // the number of outputs
	FanAvg                // their mean
)

// Distribution is the distribution of a variance-scaling initializer.
type Distribution int

// The distributions of VarianceScaling, each scaled to the target
// variance.
const (
	DistNormal          Distribution = iota // normal
	DistTruncatedNormal                     // normal truncated to ±2 standard deviations (before scaling)
	DistUniform                             // uniform on [-limit, limit), limit = sqrt(3·variance)
)

// FanAxes names the input and output feature axes of a weight shape
// (negative axes count from the end); the other axes form the receptive
// field, whose size multiplies both fans.
type FanAxes struct{ In, Out int }

// The fan axes of this package's layers.
var (
	// DenseAxes is the layout of a Linear weight, [in, out] (and of
	// flax and jax's initializers, in_axis = -2, out_axis = -1). It is
	// the default.
	DenseAxes = FanAxes{In: -2, Out: -1}
	// ConvAxes is the layout of a Conv2D weight, OIHW as torch's.
	ConvAxes = FanAxes{In: 1, Out: 0}
)

// Fans returns the fan-in and fan-out of a weight of the given shape
// whose input and output feature axes are ax: shape[ax.In]·r and
// shape[ax.Out]·r, r the product of the other dimensions. A rank-1
// shape [n] has both fans n, a rank-0 shape both 1. It panics with a
// *peel.Error if an axis is out of range or the two are equal.
func Fans(shape []int, ax FanAxes) (fanIn, fanOut float64) {
	const op = "nn.Fans"
	switch len(shape) {
	case 0:
		return 1, 1
	case 1:
		return float64(shape[0]), float64(shape[0])
	}
	r := len(shape)
	in, out := ax.In, ax.Out
	if in < 0 {
		in += r
	}
	if out < 0 {
		out += r
	}
	if in < 0 || in >= r || out < 0 || out >= r || in == out {
		fail(op, "fan axes %+v do not name two distinct axes of shape %v", ax, shape)
	}
	field := 1.0
	for i, d := range shape {
		if i != in && i != out {
			field *= float64(d)
		}
	}
	return float64(shape[in]) * field, float64(shape[out]) * field
}

// truncatedStd is the standard deviation of the standard normal
// truncated to [-2, 2].
const truncatedStd = 0.87962566103423978

// VarianceScaling returns the initializer drawing from dist with
// variance scale/n, where n is the fan-in, the fan-out or their mean
// (mode) of the weight's shape read with axes (Fans; DenseAxes when
// none is given). It is jax.nn.initializers.variance_scaling; the named
// initializers below are its instances. The initializer panics with a
// *peel.Error if scale is negative or not finite, for a bad key, dtype,
// shape or axes, and if the fan is 0 while the shape is not empty.
func VarianceScaling(scale float64, mode FanMode, dist Distribution, axes ...FanAxes) Initializer {
	ax := DenseAxes
	if len(axes) > 0 {
		ax = axes[0]
	}
	return func(key *peel.Tensor, dt peel.DType, shape ...int) *peel.Tensor {
		const op = "nn.VarianceScaling"
		defer peel.Annotate(op)
		checkInit(op, dt, shape)
		if !(scale >= 0) || math.IsInf(scale, 0) {
			fail(op, "scale %v is negative or not finite", scale)
		}
		if len(axes) > 1 {
			fail(op, "%d FanAxes given; want at most 1", len(axes))
		}
		fi, fo := Fans(shape, ax)
		var n float64
		switch mode {
		case FanIn:
			n = fi
		case FanOut:
			n = fo
		case FanAvg:
			n = (fi + fo) / 2
		default:
			fail(op, "invalid fan mode %d", mode)
		}
		size := 1
		for _, d := range shape {
			size *= d
		}
		if size == 0 {
			return peel.Zeros(dt, shape...)
		}
		if n == 0 {
			fail(op, "shape %v has a zero fan", shape)
		}
		v := scale / n
		switch dist {
		case DistNormal:
			return peel.NormalScaled(key, dt, 0, math.Sqrt(v), shape...)
		case DistTruncatedNormal:
			return peel.Mul(peel.TruncatedNormal(key, dt, -2, 2, shape...), math.Sqrt(v)/truncatedStd)
		case DistUniform:
			lim := math.Sqrt(3 * v)
			if lim == 0 {
				return peel.Zeros(dt, shape...)
			}
			return peel.UniformRange(key, dt, -lim, lim, shape...)
		}
		fail(op, "invalid distribution %d", dist)
		return nil
	}
}

// GlorotUniform is Glorot's (Xavier's) uniform initializer: uniform on
// [-a, a) with a = sqrt(6/(fan_in+fan_out)), variance 2/(fan_in+fan_out)
// (torch's xavier_uniform_, jax's glorot_uniform). It panics as
// VarianceScaling does.
func GlorotUniform(axes ...FanAxes) Initializer {
	return VarianceScaling(1, FanAvg, DistUniform, axes...)
}

// GlorotNormal is Glorot's (Xavier's) normal initializer: normal with
// variance 2/(fan_in+fan_out), untruncated as torch's xavier_normal_
// (jax's glorot_normal truncates; use VarianceScaling(1, FanAvg,
// DistTruncatedNormal) for it). It panics as VarianceScaling does.
func GlorotNormal(axes ...FanAxes) Initializer {
	return VarianceScaling(1, FanAvg, DistNormal, axes...)
}

// ReLUGain is the gain sqrt(2) of torch's calculate_gain("relu"), the
// one HeUniform and HeNormal use.
var ReLUGain = math.Sqrt2

// LeakyReLUGain returns sqrt(2/(1+slope²)), torch's
// calculate_gain("leaky_relu", slope).
func LeakyReLUGain(slope float64) float64 { return math.Sqrt(2 / (1 + slope*slope)) }

// HeUniform is He's (Kaiming's) uniform initializer for ReLU layers:
// uniform with variance 2/fan, fan the fan-in or fan-out (mode), as
// torch's kaiming_uniform_(mode, nonlinearity="relu") (jax's he_uniform
// is mode FanIn). For another gain g use VarianceScaling(g², mode,
// DistUniform). It panics as VarianceScaling does.
func HeUniform(mode FanMode, axes ...FanAxes) Initializer {
	return VarianceScaling(2, mode, DistUniform, axes...)
}

// HeNormal is He's (Kaiming's) normal initializer for ReLU layers:
// normal with variance 2/fan, untruncated as torch's
// kaiming_normal_(mode, nonlinearity="relu"). It panics as
// VarianceScaling does.
func HeNormal(mode FanMode, axes ...FanAxes) Initializer {
	return VarianceScaling(2, mode, DistNormal, axes...)
}

// LecunNormal is LeCun's normal initializer: normal with variance
// 1/fan_in, untruncated (jax's lecun_normal truncates). It is the
// default weight initializer of Linear and Conv2D, as in flax. It panics
// as VarianceScaling does.
func LecunNormal(axes ...FanAxes) Initializer {
	return VarianceScaling(1, FanIn, DistNormal, axes...)
}

// LecunUniform is LeCun's uniform initializer: uniform with variance
// 1/fan_in. It panics as VarianceScaling does.
func LecunUniform(axes ...FanAxes) Initializer {
	return VarianceScaling(1, FanIn, DistUniform, axes...)
}

// Orthogonal returns the initializer of (semi-)orthogonal matrices times
// gain, as jax.nn.initializers.orthogonal: the shape, of rank ≥ 2, is
// read as a matrix of prod(shape[:-1]) rows and shape[-1] columns whose
// columns (if rows ≥ columns) or rows (otherwise) are orthonormal. It
// draws a float64 standard normal matrix with the key and takes the Q of
// its QR decomposition (Householder, on the host, in float64) with the
// signs fixed so that R has a positive diagonal, which makes Q uniformly
// (Haar) distributed. Because it reads the drawn values it cannot run
// under a transform: the key must be concrete. The initializer panics
// with a *peel.Error if the rank is below 2, or for a bad key, dtype or
// shape.
func Orthogonal(gain float64) Initializer {
	return func(key *peel.Tensor, dt peel.DType, shape ...int) *peel.Tensor {
		const op = "nn.Orthogonal"
		defer peel.Annotate(op)
		checkInit(op, dt, shape)
		if len(shape) < 2 {
			fail(op, "shape %v has rank below 2", shape)
		}
		cols := shape[len(shape)-1]
		rows := 1
		for _, d := range shape[:len(shape)-1] {
			rows *= d
		}
		if rows == 0 || cols == 0 {
			return peel.Zeros(dt, shape...)
		}
		m, n := rows, cols // the tall matrix is m×n, m ≥ n
		if m < n {
			m, n = n, m
		}
		a := peel.Normal(key, peel.Float64, m, n).Float64s()
		q := householderQ(a, m, n)
		out := make([]float64, rows*cols)
		for i := range rows {
			for j := range cols {
				if rows >= cols {
					out[i*cols+j] = gain * q[i*n+j]
				} else {
					out[i*cols+j] = gain * q[j*n+i]
				}
			}
		}
		return peel.AsType(peel.FromFloat64s(out, shape...), dt)
	}
}

// householderQ returns the m×n (m ≥ n) factor Q, row-major, of the QR
// decomposition of the row-major m×n matrix a (overwritten), with the
// column signs chosen so that R's diagonal is nonnegative.
func householderQ(a []float64, m, n int) []float64 {
	// vs[k] is the Householder vector of step k (length m-k), with
	// ‖v‖ = √2 so that H = I - v vᵀ; sgn[k] is the sign of R[k][k]
	// before the fix.
	vs := make([][]float64, n)
	sgn := make([]float64, n)
	for k := range n {
		norm := 0.0
		for i := k; i < m; i++ {
			norm += a[i*n+k] * a[i*n+k]
		}
		norm = math.Sqrt(norm)
		v := make([]float64, m-k)
		if norm == 0 {
			vs[k], sgn[k] = v, 1
			continue
		}
		// alpha = -sign(a_kk)·norm avoids cancellation; R[k][k] = alpha.
		alpha := -norm
		if a[k*n+k] < 0 {
			alpha = norm
		}
		for i := k; i < m; i++ {
			v[i-k] = a[i*n+k]
		}
		v[0] -= alpha
		vn := 0.0
		for _, x := range v {
			vn += x * x
		}
		s := math.Sqrt(2 / vn)
		for i := range v {
			v[i] *= s
		}
		// Apply H to the remaining columns.
		for j := k; j < n; j++ {
			d := 0.0
			for i := k; i < m; i++ {
				d += v[i-k] * a[i*n+j]
			}
			for i := k; i < m; i++ {
				a[i*n+j] -= d * v[i-k]
			}
		}
		vs[k] = v
		sgn[k] = 1
		if alpha < 0 {
			sgn[k] = -1
		}
	}
	// Q = H_0 H_1 … H_{n-1} applied to the first n columns of I.
	q := make([]float64, m*n)
	for j := range n {
		q[j*n+j] = 1
	}
	for k := n - 1; k >= 0; k-- {
		v := vs[k]
		for j := range n {
			d := 0.0
			for i := k; i < m; i++ {
				d += v[i-k] * q[i*n+j]
			}
			for i := k; i < m; i++ {
				q[i*n+j] -= d * v[i-k]
			}
		}
	}
	for j := range n {
		if sgn[j] < 0 {
			for i := range m {
				q[i*n+j] = -q[i*n+j]
			}
		}
	}
	return q
}
