package backend

import "math"

// The one conversion rule. Every value peel converts from a float to
// another dtype — a constructor filling a buffer (Full, Ones, Arange,
// Linspace, a Go scalar operand), a constant a rule makes, and the
// convert_element_type kernel of every backend — converts with the
// functions of this file, so that Full(dt, v) and AsType(Scalar(v), dt)
// hold the same element for every dtype and every v:
//
//   - float → integer truncates toward zero and saturates to the
//     integer's range: +Inf and values above the range give its maximum,
//     -Inf and values below give its minimum, NaN gives 0;
//   - float → float rounds to nearest even once (to ±Inf past the
//     largest finite value), NaN stays NaN;
//   - anything → bool is v != 0 (NaN is true);
//   - integer → integer is exact when it fits and wraps around when it
//     narrows, as Go's conversions and C's do.
//
// Why saturation: Go (like C, numpy and torch on the host) leaves an
// out-of-range float → integer conversion to the hardware, which on
// amd64 gives MinInt64 for +Inf and 1e30 — a silently wrong value that
// differs between int64 and narrower types and between machines. XLA
// (and so JAX on CPU and GPU) defines the conversion as saturating with
// NaN → 0; it is the only rule that is defined on every input, keeps
// the order of values (x ≤ y ⇒ conv(x) ≤ conv(y)) and gives the same
// result on every backend.

// HostFill returns a new host slice of n elements of dtype d all equal to
// v converted by the rule above. It returns nil for an invalid dtype.
func HostFill(v float64, d DType, n int) any {
	s := HostSlice(d, n)
	switch s := s.(type) {
	case []bool:
		fill(s, v != 0)
	case []int64:
		fill(s, FloatToInt64(v))
	case []float32:
		fillFloat(s, float32(v))
	case []float64:
		fillFloat(s, v)
	case []int32:
		fill(s, FloatToInt32(v))
	case []uint8:
		fill(s, FloatToUint8(v))
	case []F16:
		fill(s, F16FromFloat64(v))
	case []BF16:
		fill(s, BF16FromFloat64(v))
	}
	return s
}

// HostConvert returns a new host slice of dtype d holding the elements of
// f converted by the rule above, or nil for an invalid dtype.
func HostConvert(f []float64, d DType) any {
	s := HostSlice(d, len(f))
	switch s := s.(type) {
	case []bool:
		for i, x := range f {
			s[i] = x != 0
		}
	case []int64:
		for i, x := range f {
			s[i] = FloatToInt64(x)
		}
	case []float32:
		for i, x := range f {
			s[i] = float32(x)
		}
	case []float64:
		copy(s, f)
	case []int32:
		for i, x := range f {
			s[i] = FloatToInt32(x)
		}
	case []uint8:
		for i, x := range f {
			s[i] = FloatToUint8(x)
		}
	case []F16:
		for i, x := range f {
			s[i] = F16FromFloat64(x)
		}
	case []BF16:
		for i, x := range f {
			s[i] = BF16FromFloat64(x)
		}
	}
	return s
}

// HostFillInt is HostFill for an int64 value: exact for integer dtypes
// (narrowed by wraparound), rounded once for floats.
func HostFillInt(v int64, d DType, n int) any {
	s := HostSlice(d, n)
	switch s := s.(type) {
	case []bool:
		fill(s, v != 0)
	case []int64:
		fill(s, v)
	case []float32:
		fill(s, float32(v))
	case []float64:
		fill(s, float64(v))
	case []int32:
		fill(s, int32(v))
	case []uint8:
		fill(s, uint8(v))
	case []F16:
		fill(s, F16FromInt64(v))
	case []BF16:
		fill(s, BF16FromInt64(v))
	}
	return s
}

// fill sets every element of the zeroed slice s to v.
func fill[T comparable](s []T, v T) {
	var zero T
	if v == zero {
		return
	}
	for i := range s {
		s[i] = v
	}
}

// fillFloat is fill for a float element type, where -0 == 0 but must
// still be written.
func fillFloat[T float32 | float64](s []T, v T) {
	if v == 0 && !math.Signbit(float64(v)) {
		return
	}
	for i := range s {
		s[i] = v
	}
}

// FloatToInt64 converts v to int64 by the rule above: truncation toward
// zero, NaN → 0, out of range saturated to [MinInt64, MaxInt64].
func FloatToInt64(v float64) int64 {
	if v > -0x1p63 && v < 0x1p63 { // in range (false for NaN)
		return int64(v)
	}
	switch {
	case v > 0:
		return math.MaxInt64
	case v < 0:
		return math.MinInt64
	}
	return 0
}

// saturate truncates v toward zero and clamps it to [lo, hi] (NaN → 0).
func saturate(v float64, lo, hi int64) int64 {
	switch {
	case v != v:
		return 0
	case v <= float64(lo):
		return lo
	case v >= float64(hi):
		return hi
	}
	return int64(v)
}

// FloatToInt32 converts v to int32 by the rule above: truncation toward
// zero, NaN → 0, out of range saturated to [MinInt32, MaxInt32].
func FloatToInt32(v float64) int32 { return int32(saturate(v, math.MinInt32, math.MaxInt32)) }

// FloatToUint8 converts v to uint8 by the rule above: truncation toward
// zero, NaN → 0, out of range saturated to [0, 255].
func FloatToUint8(v float64) uint8 { return uint8(saturate(v, 0, math.MaxUint8)) }
