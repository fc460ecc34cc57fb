package peel

import "math"

// DTypes: the promotion lattice (PromoteTypes) and the facts about
// dtypes that the ops consult (integer ranges, the wide dtype a storage
// dtype is computed in, dtype checks).

// category orders dtype kinds: bool < int < float.
func category(d DType) int {
	switch {
	case d == Bool:
		return 0
	case d.IsInteger():
		return 1
	}
	return 2
}

// rank orders the dtypes of one kind by width: u8 < i32 < i64 and
// f16, bf16 < f32 < f64.
func rank(d DType) int {
	switch d {
	case Uint8, Float16, BFloat16:
		return 0
	case Int32, Float32:
		return 1
	}
	return 2
}

// PromoteTypes returns the dtype two tensors of dtypes a and b are
// promoted to, JAX's type lattice over peel's dtypes: bool < u8 < i32 <
// i64 for integers; bool and every integer dtype promote to any float
// dtype (i64 with f16 gives f16, as in JAX); f16 and bf16 are both below
// f32 < f64, and f16 with bf16 gives f32. It is symmetric.
func PromoteTypes(a, b DType) DType {
	if a == b {
		return a
	}
	if ca, cb := category(a), category(b); ca != cb {
		if ca > cb {
			return a
		}
		return b
	}
	ra, rb := rank(a), rank(b)
	switch {
	case ra > rb:
		return a
	case rb > ra:
		return b
	}
	return Float32 // f16 with bf16
}

// intRange returns the least and greatest values of the integer dtype d.
func intRange(d DType) (lo, hi int64) {
	switch d {
	case Int32:
		return math.MinInt32, math.MaxInt32
	case Uint8:
		return 0, math.MaxUint8
	}
	return math.MinInt64, math.MaxInt64
}

// storageWide is the dtype constructors of a storage dtype d fill in
// before converting to d once: i64 for integers, f64 for floats (so a
// float is rounded once, not through f32).
func storageWide(d DType) DType {
	if d.IsFloat() {
		return Float64
	}
	return Int64
}

// halfFloat reports whether x is f16 or bf16, returning its dtype. The
// composite reductions and normalizations (Mean, Var, Std, Norm,
// LogSumExp, Softmax, LogSoftmax, NanMean) compute those in f32 and round
// the result once, as torch's CPU kernels do, so that a sum on the way
// (of 60000s, say) does not overflow f16 and the result is not rounded at
// every step.
func halfFloat(x *Tensor) (DType, bool) {
	d := x.DType()
	return d, d == Float16 || d == BFloat16
}

// checkDType panics with *Error naming op unless d is a valid dtype.
func checkDType(op string, d DType) {
	if !d.IsValid() {
		errorf(op, "invalid dtype %v", d)
	}
}

func checkNumericDType(op string, dt DType) {
	checkDType(op, dt)
	if dt == Bool {
		errorf(op, "dtype bool is not numeric")
	}
}
