package peel

import (
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Random numbers in peel are explicit and counter-based, as in JAX: a key
// is an i64 tensor of shape [2] holding two unsigned 32-bit words, and
// every sampler is a pure function of its key and the shape asked for.
// Element i of a sample (in row-major order) is made from the 64 random
// bits Threefry2x32(key, (i/2^32, i mod 2^32)), so samples are identical
// across runs and platforms. Reusing a key gives the same numbers again;
// derive fresh keys with SplitKeysStacked or FoldIn. A key used for splitting or
// folding should not also be used for sampling: SplitKeysStacked(key, n)[i] and
// FoldIn(key, i) are the same 64 bits as element i of a sample drawn with
// key.
//
// The samplers only apply primitives (they never read a tensor's data),
// so they work under every transform: vmapping a sampler over a batch of
// keys of shape [B, 2] gives B independent samples.

// rngWord is 2^32, the range of a key word.
const rngWord = 1 << 32

// Key returns a PRNG key made from seed: the high and low 32 bits of seed
// as the two words.
func Key(seed int64) *Tensor {
	u := uint64(seed)
	return FromInt64s([]int64{int64(u >> 32), int64(u & (rngWord - 1))})
}

// SplitKeysStacked returns the n keys of SplitKeys stacked into one i64
// tensor of shape [n, 2] (JAX's random.split), to map over with Vmap or
// index: key i is Threefry2x32(key, (i/2^32, i mod 2^32)). It panics
// with *Error if key is not an i64 tensor of shape [2], n is negative, or
// the keys are too large (they exceed the allocation limit).
func SplitKeysStacked(key *Tensor, n int) *Tensor {
	const op = "peel.SplitKeysStacked"
	defer interp.Annotate(op)
	y0, y1 := splitWords(op, key, n)
	col := func(y *Tensor) *Tensor {
		return interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: []int{n, 1}}, y)
	}
	return interp.Bind1(prims.Concatenate, prims.AxisParams{Axis: 1}, col(y0), col(y1))
}

// splitWords checks SplitKeysStacked's arguments and returns the two words of
// the n derived keys, each an i64 [n] tensor.
func splitWords(op string, key *Tensor, n int) (y0, y1 *Tensor) {
	rngCheckKey(op, key)
	if n < 0 {
		errorf(op, "negative number of keys %d", n)
	}
	checkResult(op, Int64, []int{n, 2}, key)
	k0, k1 := rngKeyWords(key)
	return rngBlocks(k0, k1, n)
}

// FoldIn returns a new key derived from key and data: Threefry2x32(key,
// (hi, lo)) where hi and lo are the high and low 32 bits of data. Folding
// in distinct data (a step number, a layer index) gives independent keys.
// It panics with *Error if key is not an i64 tensor of shape [2].
func FoldIn(key *Tensor, data int64) *Tensor {
	const op = "peel.FoldIn"
	rngCheckKey(op, key)
	defer interp.Annotate(op)
	k0, k1 := rngKeyWords(key)
	u := uint64(data)
	hi, lo := rngI64(int64(u>>32)), rngI64(int64(u&(rngWord-1)))
	ys := interp.Bind(prims.Threefry2x32, nil, k0, k1, hi, lo)
	one := func(y *Tensor) *Tensor {
		return interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: []int{1}}, y)
	}
	return interp.Bind1(prims.Concatenate, prims.AxisParams{Axis: 0}, one(ys[0]), one(ys[1]))
}

// Uniform returns a tensor of the given shape (rank 0 when none is given)
// and floating-point dtype whose elements are uniformly distributed in
// [0, 1): multiples of 2^-23 for Float32 (23 random bits), of 2^-53 for
// Float64 (53 random bits from the two words). It panics with *Error if
// key is not a key, dt is not a float dtype, a dimension is negative, or
// the sample is too large (its number of elements overflows int, or it
// exceeds the allocation limit).
func Uniform(key *Tensor, dt DType, shape ...int) *Tensor {
	const op = "peel.Uniform"
	rngCheckSample(op, key, dt, shape)
	defer interp.Annotate(op)
	k0, k1 := rngKeyWords(key)
	n := rngSize(shape)
	y0, y1 := rngBlocks(k0, k1, n)
	return rngReshape(rngUniform(dt, y0, y1), shape)
}

// Normal returns a tensor of the given shape (rank 0 when none is given)
// and floating-point dtype of standard normal samples (mean 0, variance
// 1), by the Box–Muller transform of two uniform samples. It panics with
// *Error in the cases Uniform does.
func Normal(key *Tensor, dt DType, shape ...int) *Tensor {
	const op = "peel.Normal"
	rngCheckSample(op, key, dt, shape)
	defer interp.Annotate(op)
	n := rngSize(shape)
	var u1, u2 *Tensor
	if dt == Float32 {
		// One block gives 64 bits: 23 for each uniform.
		k0, k1 := rngKeyWords(key)
		y0, y1 := rngBlocks(k0, k1, n)
		u1, u2 = rngUniform(dt, y0, nil), rngUniform(dt, y1, nil)
	} else {
		// Float64 uniforms use a whole block each: draw them with the
		// two keys of SplitKeysStacked(key, 2).
		k0, k1 := rngKeyWords(key)
		w0, w1 := rngBlocks(k0, k1, 2)
		ka0, ka1 := rngElem(w0, 0), rngElem(w1, 0)
		kb0, kb1 := rngElem(w0, 1), rngElem(w1, 1)
		a0, a1 := rngBlocks(ka0, ka1, n)
		b0, b1 := rngBlocks(kb0, kb1, n)
		u1, u2 = rngUniform(dt, a0, a1), rngUniform(dt, b0, b1)
	}
	// z = sqrt(-2 log(1-u1)) cos(2π u2); 1-u1 lies in (0, 1], so the
	// logarithm is finite.
	s := []int{n}
	bind := func(p *interp.Prim, args ...*Tensor) *Tensor { return interp.Bind1(p, nil, args...) }
	r := bind(prims.Log, bind(prims.Sub, rngFill(1, dt, s), u1))
	r = bind(prims.Sqrt, bind(prims.Mul, rngFill(-2, dt, s), r))
	c := bind(prims.Cos, bind(prims.Mul, rngFill(2*math.Pi, dt, s), u2))
	return rngReshape(bind(prims.Mul, r, c), shape)
}

// Bernoulli returns a bool tensor of the given shape (rank 0 when none is
// given) whose elements are true with probability p, independently. p is
// resolved to multiples of 2^-32: an element is true when a random 32-bit
// word is below round(p·2^32), so p = 0 never and p = 1 always gives
// true. It panics with *Error if key is not a key, p is outside [0, 1], a
// dimension is negative, or the sample is too large (its number of
// elements overflows int, or it exceeds the allocation limit).
func Bernoulli(key *Tensor, p float64, shape ...int) *Tensor {
	const op = "peel.Bernoulli"
	rngCheckKey(op, key)
	checkResult(op, Bool, shape, key)
	if !(p >= 0 && p <= 1) {
		errorf(op, "probability %v is outside [0, 1]", p)
	}
	defer interp.Annotate(op)
	k0, k1 := rngKeyWords(key)
	n := rngSize(shape)
	y0, _ := rngBlocks(k0, k1, n)
	thr := rngFill(math.Round(p*rngWord), Int64, []int{n})
	return rngReshape(interp.Bind1(prims.Lt, nil, y0, thr), shape)
}

// rngCheckKey panics with *Error naming op unless key is an i64 tensor of
// shape [2].
func rngCheckKey(op string, key *Tensor) {
	if key == nil {
		errorf(op, "nil key")
	}
	if key.DType() != Int64 || key.Rank() != 1 || key.Shape()[0] != 2 {
		e := interp.Errorf("a key is an i64 tensor of shape [2] (made by peel.Key, SplitKeysStacked or FoldIn)")
		e.Ops = []string{op}
		panic(e.WithOperands(key))
	}
}

// rngCheckSample validates the arguments common to the samplers.
func rngCheckSample(op string, key *Tensor, dt DType, shape []int) {
	rngCheckKey(op, key)
	if !dt.IsFloat() {
		errorf(op, "dtype %v is not a floating-point dtype", dt)
	}
	if dt.IsStorage() {
		errorf(op, "dtype %v cannot be sampled directly: sample Float32 and convert with AsType", dt)
	}
	checkResult(op, dt, shape, key)
}

// rngSize returns the number of elements of shape, which the sampler
// has checked (rngCheckSample, checkResult).
func rngSize(shape []int) int { return backend.ShapeSize(shape) }

// rngKeyWords returns the two words of a [2] key as rank-0 i64 tensors.
func rngKeyWords(key *Tensor) (k0, k1 *Tensor) {
	return rngElem(key, 0), rngElem(key, 1)
}

// rngElem returns element i of a 1-D tensor as a rank-0 tensor.
func rngElem(x *Tensor, i int) *Tensor {
	w := interp.Bind1(prims.Slice, prims.SliceParams{Start: []int{i}, Limit: []int{i + 1}, Stride: []int{1}}, x)
	return interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: []int{}}, w)
}

// rngI64 returns a rank-0 i64 constant.
func rngI64(v int64) *Tensor { return FromInt64s([]int64{v}, []int{}...) }

// rngFill returns a tensor of shape filled with v: a rank-0 constant
// broadcast (a view, so no buffer of the full size is made).
func rngFill(v float64, dt DType, shape []int) *Tensor {
	var c *Tensor
	switch dt {
	case Int64:
		c = rngI64(int64(v))
	case Float32:
		c = FromFloat32s([]float32{float32(v)}, []int{}...)
	default:
		c = FromFloat64s([]float64{v}, []int{}...)
	}
	return rngBroadcast(c, shape)
}

func rngBroadcast(c *Tensor, shape []int) *Tensor {
	return interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: shape, Dims: []int{}}, c)
}

// rngBlocks returns the two output words of Threefry2x32(k0, k1,
// hi(i), lo(i)) for i = 0 … n-1, as i64 tensors of shape [n]. k0 and k1
// are rank-0.
func rngBlocks(k0, k1 *Tensor, n int) (y0, y1 *Tensor) {
	s := []int{n}
	i := interp.Bind1(prims.Iota, prims.IotaParams{DType: Int64, Shape: s, Dim: 0})
	var hi, lo *Tensor
	if n <= rngWord {
		hi, lo = rngFill(0, Int64, s), i
	} else {
		w := rngFill(rngWord, Int64, s)
		hi, lo = interp.Bind1(prims.Div, nil, i, w), interp.Bind1(prims.Rem, nil, i, w)
	}
	ys := interp.Bind(prims.Threefry2x32, nil, rngBroadcast(k0, s), rngBroadcast(k1, s), hi, lo)
	return ys[0], ys[1]
}

// rngUniform turns 32-bit words (i64 tensors of shape [n]) into uniform
// floats in [0, 1). Float32 uses the top 23 bits of y0; Float64 the top 27
// bits of y0 and the top 26 of y1 (y1 must then be non-nil).
func rngUniform(dt DType, y0, y1 *Tensor) *Tensor {
	s := y0.Shape()
	bind := func(p *interp.Prim, args ...*Tensor) *Tensor { return interp.Bind1(p, nil, args...) }
	var m *Tensor
	var scale float64
	if dt == Float32 {
		m = bind(prims.Div, y0, rngFill(1<<9, Int64, s))
		scale = 1.0 / (1 << 23)
	} else {
		hi := bind(prims.Div, y0, rngFill(1<<5, Int64, s))
		lo := bind(prims.Div, y1, rngFill(1<<6, Int64, s))
		m = bind(prims.Add, bind(prims.Mul, hi, rngFill(1<<26, Int64, s)), lo)
		scale = 1.0 / (1 << 53)
	}
	f := interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: dt}, m)
	return bind(prims.Mul, f, rngFill(scale, dt, s))
}

// rngReshape gives a flat sample its requested shape.
func rngReshape(x *Tensor, shape []int) *Tensor {
	if len(shape) == 1 {
		return x
	}
	return interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: append([]int{}, shape...)}, x)
}

// SplitKeys returns n new keys derived from key as a Go slice: element i
// is an i64 tensor of shape [2], row i of SplitKeysStacked(key, n). Under
// a transform the elements are tracers. It panics with *Error if key is
// not an i64 tensor of shape [2], n is negative, or the keys are too
// large (they exceed the allocation limit).
func SplitKeys(key *Tensor, n int) []*Tensor {
	const op = "peel.SplitKeys"
	defer interp.Annotate(op)
	y0, y1 := splitWords(op, key, n)
	out := make([]*Tensor, n)
	for i := range out {
		one := func(y *Tensor) *Tensor {
			return interp.Bind1(prims.Slice, prims.SliceParams{Start: []int{i}, Limit: []int{i + 1}, Stride: []int{1}}, y)
		}
		out[i] = interp.Bind1(prims.Concatenate, prims.AxisParams{Axis: 0}, one(y0), one(y1))
	}
	return out
}

// UniformRange returns a tensor of the given shape (rank 0 when none is
// given) and floating-point dtype whose elements are uniformly
// distributed in [lo, hi): lo + (hi-lo)·u for u = Uniform(key, dt,
// shape...), computed in dt and clamped to the dt values in [lo, hi) (so
// rounding never gives hi). It panics with *Error in the cases Uniform
// does, and if lo or hi is not finite, lo ≥ hi, hi-lo overflows dt, or no
// value of dt lies in [lo, hi).
func UniformRange(key *Tensor, dt DType, lo, hi float64, shape ...int) *Tensor {
	const op = "peel.UniformRange"
	rngCheckSample(op, key, dt, shape)
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || !(lo < hi) {
		errorf(op, "bounds [%v, %v) are not a finite nonempty interval", lo, hi)
	}
	width := hi - lo
	if math.IsInf(width, 0) || (dt == Float32 && math.IsInf(float64(float32(width)), 0)) {
		errorf(op, "the width of [%v, %v) overflows %v", lo, hi, dt)
	}
	lod, hid := rngCeil(dt, lo), rngBelow(dt, hi)
	if lod > hid {
		errorf(op, "no %v value lies in [%v, %v)", dt, lo, hi)
	}
	defer interp.Annotate(op)
	k0, k1 := rngKeyWords(key)
	n := rngSize(shape)
	s := []int{n}
	y0, y1 := rngBlocks(k0, k1, n)
	u := rngUniform(dt, y0, y1)
	bind := func(p *interp.Prim, args ...*Tensor) *Tensor { return interp.Bind1(p, nil, args...) }
	x := bind(prims.Add, rngFill(lo, dt, s), bind(prims.Mul, rngFill(width, dt, s), u))
	x = bind(prims.Min, bind(prims.Max, x, rngFill(lod, dt, s)), rngFill(hid, dt, s))
	return rngReshape(x, shape)
}

// NormalScaled returns a tensor of the given shape (rank 0 when none is
// given) and floating-point dtype of normal samples with the given mean
// and standard deviation: mean + std·Normal(key, dt, shape...), computed
// in dt. It panics with *Error in the cases Normal does, and if mean or
// std is not finite or std is negative.
func NormalScaled(key *Tensor, dt DType, mean, std float64, shape ...int) *Tensor {
	const op = "peel.NormalScaled"
	rngCheckSample(op, key, dt, shape)
	if math.IsInf(mean, 0) || math.IsNaN(mean) || math.IsInf(std, 0) || !(std >= 0) {
		errorf(op, "mean %v and standard deviation %v must be finite, std ≥ 0", mean, std)
	}
	defer interp.Annotate(op)
	z := Normal(key, dt, shape...)
	s := z.Shape()
	bind := func(p *interp.Prim, args ...*Tensor) *Tensor { return interp.Bind1(p, nil, args...) }
	return bind(prims.Add, rngFill(mean, dt, s), bind(prims.Mul, rngFill(std, dt, s), z))
}

// RandInt returns an i64 tensor of the given shape (rank 0 when none is
// given) whose elements are uniformly distributed integers in [lo, hi).
// Element i is lo + floor(R·(hi-lo) / 2^64), where R is the 64 random
// bits of element i (the two words of its Threefry block; multiply-shift,
// computed exactly in 16-bit limbs), so each value has probability within
// 2^-64 of 1/(hi-lo): a relative bias below (hi-lo)·2^-64, at most 2^-32
// for ranges up to 2^32. Any range of int64 is allowed, [MinInt64,
// MaxInt64) included. It panics with *Error if key is not a key, hi ≤ lo,
// a dimension is negative, or the sample is too large (its number of
// elements overflows int, or it exceeds the allocation limit).
func RandInt(key *Tensor, lo, hi int64, shape ...int) *Tensor {
	const op = "peel.RandInt"
	rngCheckKey(op, key)
	if hi <= lo {
		errorf(op, "empty range [%d, %d)", lo, hi)
	}
	checkResult(op, Int64, shape, key)
	defer interp.Annotate(op)
	k0, k1 := rngKeyWords(key)
	n := rngSize(shape)
	y0, y1 := rngBlocks(k0, k1, n)
	return rngReshape(rngRandInt(y0, y1, lo, uint64(hi)-uint64(lo)), shape)
}

// rngRandInt returns lo + floor(R·r / 2^64) for R = y0·2^32 + y1 (i64
// tensors of shape [n] holding 32-bit words), r ≥ 1. The 128-bit product
// is formed from 16-bit limbs, so no partial product overflows; the final
// additions wrap modulo 2^64, which gives the right int64.
func rngRandInt(y0, y1 *Tensor, lo int64, r uint64) *Tensor {
	s := y0.Shape()
	bind := func(p *interp.Prim, args ...*Tensor) *Tensor { return interp.Bind1(p, nil, args...) }
	c := func(v int64) *Tensor { return rngBroadcast(rngI64(v), s) }
	const limb = 1 << 16
	x := [4]*Tensor{
		bind(prims.Rem, y1, c(limb)), bind(prims.Div, y1, c(limb)),
		bind(prims.Rem, y0, c(limb)), bind(prims.Div, y0, c(limb)),
	}
	var cols [8]*Tensor
	for j := 0; j < 4; j++ {
		rj := int64((r >> (16 * j)) & (limb - 1))
		if rj == 0 {
			continue
		}
		for i := 0; i < 4; i++ {
			term := bind(prims.Mul, x[i], c(rj))
			if cols[i+j] == nil {
				cols[i+j] = term
			} else {
				cols[i+j] = bind(prims.Add, cols[i+j], term)
			}
		}
	}
	var carry *Tensor
	var high *Tensor
	for k := 0; k < 8; k++ {
		t := cols[k]
		if carry != nil {
			if t == nil {
				t = carry
			} else {
				t = bind(prims.Add, t, carry)
			}
		}
		if t == nil {
			continue
		}
		if k >= 4 {
			d := bind(prims.Rem, t, c(limb))
			if k > 4 {
				d = bind(prims.Mul, d, c(1<<(16*(k-4))))
			}
			if high == nil {
				high = d
			} else {
				high = bind(prims.Add, high, d)
			}
		}
		carry = bind(prims.Div, t, c(limb))
	}
	if high == nil {
		high = c(0)
	}
	return bind(prims.Add, high, c(lo))
}

// Permutation returns a uniformly random permutation of 0 … n-1 as an
// i64 tensor of shape [n]: the argsort of n random 64-bit keys (ties, of
// probability below n²·2^-65, broken by position), sorted by a bitonic
// network of gathers and selects, so it works under every transform. It
// panics with *Error if key is not a key, n is negative, or the result
// is too large (it exceeds the allocation limit).
func Permutation(key *Tensor, n int) *Tensor {
	const op = "peel.Permutation"
	rngCheckKey(op, key)
	if n < 0 {
		errorf(op, "negative length %d", n)
	}
	checkResult(op, Int64, []int{n}, key)
	defer interp.Annotate(op)
	k0, k1 := rngKeyWords(key)
	y0, y1 := rngBlocks(k0, k1, n)
	return rngArgsort(rngSortKey(y0, y1), n)
}

// Shuffle returns x with its slices along axis (negative counts from the
// end) in a uniformly random order: Take(x, Permutation(key, m), axis)
// for m the size of that axis. It panics with *Error if key is not a key,
// x is nil or the axis is out of range.
func Shuffle(key *Tensor, x *Tensor, axis int) *Tensor {
	const op = "peel.Shuffle"
	rngCheckKey(op, key)
	checkTensor(op, x)
	a := normAxis(op, axis, x.Rank())
	defer interp.Annotate(op)
	return Take(x, Permutation(key, x.Shape()[a]), a)
}

// rngSortKey combines two 32-bit words into one int64 with every bit
// random: (y0 - 2^31)·2^32 + y1, which cannot overflow.
func rngSortKey(y0, y1 *Tensor) *Tensor {
	s := y0.Shape()
	bind := func(p *interp.Prim, args ...*Tensor) *Tensor { return interp.Bind1(p, nil, args...) }
	h := bind(prims.Sub, y0, rngBroadcast(rngI64(1<<31), s))
	return bind(prims.Add, bind(prims.Mul, h, rngBroadcast(rngI64(rngWord), s)), y1)
}

// rngArgsort returns the indices that sort the i64 tensor k of shape [n]
// in ascending order of (k[i], i): a bitonic sorting network over the
// next power of two, padded with (MaxInt64, i ≥ n), which sort last.
func rngArgsort(k *Tensor, n int) *Tensor {
	if n <= 1 {
		return interp.Bind1(prims.Iota, prims.IotaParams{DType: Int64, Shape: []int{n}, Dim: 0})
	}
	m := 1
	for m < n {
		m *= 2
	}
	if m > n {
		pad := rngBroadcast(rngI64(math.MaxInt64), []int{m - n})
		k = interp.Bind1(prims.Concatenate, prims.AxisParams{Axis: 0}, k, pad)
	}
	idx := interp.Bind1(prims.Iota, prims.IotaParams{DType: Int64, Shape: []int{m}, Dim: 0})
	bind := func(p *interp.Prim, args ...*Tensor) *Tensor { return interp.Bind1(p, nil, args...) }
	partner := make([]int64, m)
	takeMin := make([]bool, m)
	for size := 2; size <= m; size *= 2 {
		for j := size / 2; j > 0; j /= 2 {
			for i := range partner {
				p := i ^ j
				partner[i] = int64(p)
				takeMin[i] = (i&size == 0) == (i < p)
			}
			pt, tm := FromInt64s(partner, m), FromBools(takeMin, m)
			kp := interp.Bind1(prims.Gather, prims.AxisParams{Axis: 0}, k, pt)
			ip := interp.Bind1(prims.Gather, prims.AxisParams{Axis: 0}, idx, pt)
			lt := bind(prims.Or, bind(prims.Lt, k, kp), bind(prims.And, bind(prims.Eq, k, kp), bind(prims.Lt, idx, ip)))
			self := bind(prims.Eq, lt, tm)
			k = bind(prims.Where, self, k, kp)
			idx = bind(prims.Where, self, idx, ip)
		}
	}
	if m > n {
		idx = interp.Bind1(prims.Slice, prims.SliceParams{Start: []int{0}, Limit: []int{n}, Stride: []int{1}}, idx)
	}
	return idx
}

// Categorical returns samples of indices along axis of logits (negative
// counts from the end) drawn from softmax(logits) along that axis, by the
// Gumbel-max trick: argmax(logits + G) for independent standard Gumbel
// noise G = -log(-log(u)), u uniform in the logits' dtype (floored at the
// smallest normal, so G is finite). With no shape the result has the
// shape of logits without axis (one sample per distribution); a shape
// must end in dimensions to which that batch shape broadcasts, and its
// leading dimensions draw independent samples. The result is i64. It
// panics with *Error if key is not a key, logits is nil or not floating
// point, the axis is out of range or empty, the shape does not fit the
// batch shape or has a negative dimension, or the noise is too large.
func Categorical(key *Tensor, logits *Tensor, axis int, shape ...int) *Tensor {
	const op = "peel.Categorical"
	rngCheckKey(op, key)
	checkTensor(op, logits)
	dt := logits.DType()
	if !dt.IsFloat() {
		errorf(op, "logits dtype %v is not a floating-point dtype", dt)
	}
	if dt.IsStorage() {
		logits, dt = AsType(logits, Float32), Float32
	}
	ls := logits.Shape()
	a := normAxis(op, axis, len(ls))
	kdim := ls[a]
	if kdim == 0 {
		errorf(op, "axis %d of logits shape %v is empty", axis, ls)
	}
	batch := append(append([]int{}, ls[:a]...), ls[a+1:]...)
	if len(shape) == 0 {
		shape = batch
	}
	for _, d := range shape {
		if d < 0 {
			errorf(op, "negative dimension in shape %v", shape)
		}
	}
	if len(shape) < len(batch) {
		errorf(op, "shape %v does not end in the logits batch shape %v", shape, batch)
	}
	pre := len(shape) - len(batch)
	for i, d := range batch {
		if d != 1 && d != shape[pre+i] {
			errorf(op, "shape %v does not end in the logits batch shape %v", shape, batch)
		}
	}
	suffix := shape[pre:]
	ns := append(append(append(append([]int{}, shape[:pre]...), suffix[:a]...), kdim), suffix[a:]...)
	checkResult(op, dt, ns, key, logits)
	defer interp.Annotate(op)
	k0, k1 := rngKeyWords(key)
	n := rngSize(ns)
	s := []int{n}
	y0, y1 := rngBlocks(k0, k1, n)
	bind := func(p *interp.Prim, args ...*Tensor) *Tensor { return interp.Bind1(p, nil, args...) }
	tiny := 0x1p-1022 // the smallest normal float64
	if dt == Float32 {
		tiny = 0x1p-126
	}
	u := bind(prims.Max, rngUniform(dt, y0, y1), rngFill(tiny, dt, s))
	g := bind(prims.Neg, bind(prims.Log, bind(prims.Neg, bind(prims.Log, u))))
	return ArgMax(Add(logits, rngReshape(g, ns)), pre+a)
}

// Choice returns an i64 tensor of the given shape (rank 0 when none is
// given) of indices in [0, n): uniform (RandInt(key, 0, n, shape...))
// when p is nil, else drawn with probabilities proportional to p, a
// floating-point tensor of shape [n] of nonnegative weights that need not
// sum to 1 (Categorical(key, log p, 0, shape...); a zero weight is never
// drawn, and negative or NaN weights give unspecified indices). Samples
// are independent (with replacement). It panics with *Error if key is not
// a key, n < 1, p is not a float tensor of shape [n], a dimension is
// negative, or the sample is too large.
func Choice(key *Tensor, n int, p *Tensor, shape ...int) *Tensor {
	const op = "peel.Choice"
	rngCheckKey(op, key)
	if n < 1 {
		errorf(op, "number of choices %d is below 1", n)
	}
	checkResult(op, Int64, shape, key)
	if p != nil && (!p.DType().IsFloat() || p.Rank() != 1 || p.Shape()[0] != n) {
		errorf(op, "probabilities must be a float tensor of shape [%d], not %v %v", n, p.DType(), p.Shape())
	}
	defer interp.Annotate(op)
	if p == nil {
		return RandInt(key, 0, int64(n), shape...)
	}
	if len(shape) == 0 {
		// Categorical's empty shape means the batch shape, which is [].
		shape = []int{}
	}
	return Categorical(key, Log(p), 0, shape...)
}

// TruncatedNormal returns a tensor of the given shape (rank 0 when none
// is given) and floating-point dtype of standard normal samples truncated
// to [lo, hi] (infinite bounds allowed): Φ⁻¹(u) for u uniform in [Φ(lo),
// Φ(hi)], computed in float64 (an interval above 0 is mirrored below it,
// where Φ keeps its relative precision) and clamped to the dt values in
// [lo, hi], so every element lies in [lo, hi]. Φ⁻¹ is Acklam's rational
// approximation of the normal quantile (relative error below 1.15·10⁻⁹).
// Where the interval's probability underflows float64 (bounds beyond
// about ±37) the samples pile up at the bound nearer 0. It panics with
// *Error in the cases Uniform does, and if lo or hi is NaN, lo ≥ hi, or
// no value of dt lies in [lo, hi].
func TruncatedNormal(key *Tensor, dt DType, lo, hi float64, shape ...int) *Tensor {
	const op = "peel.TruncatedNormal"
	rngCheckSample(op, key, dt, shape)
	if !(lo < hi) {
		errorf(op, "bounds [%v, %v] are not a nonempty interval", lo, hi)
	}
	lod, hid := rngCeil(dt, lo), rngFloor(dt, hi)
	if lod > hid {
		errorf(op, "no %v value lies in [%v, %v]", dt, lo, hi)
	}
	defer interp.Annotate(op)
	a, b, flip := lo, hi, lo > 0
	if flip {
		a, b = -hi, -lo
	}
	cdf := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	pa, pb := cdf(a), cdf(b)
	k0, k1 := rngKeyWords(key)
	n := rngSize(shape)
	s := []int{n}
	y0, y1 := rngBlocks(k0, k1, n)
	bind := func(p *interp.Prim, args ...*Tensor) *Tensor { return interp.Bind1(p, nil, args...) }
	f := func(v float64) *Tensor { return rngFill(v, Float64, s) }
	u := rngUniform(Float64, y0, y1)
	p := bind(prims.Add, f(pa), bind(prims.Mul, f(pb-pa), u))
	p = bind(prims.Min, bind(prims.Max, p, f(0x1p-1022)), f(1-0x1p-53))
	x := rngNormalQuantile(p)
	if flip {
		x = bind(prims.Neg, x)
	}
	if dt != Float64 {
		x = interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: dt}, x)
	}
	x = bind(prims.Min, bind(prims.Max, x, rngFill(lod, dt, s)), rngFill(hid, dt, s))
	return rngReshape(x, shape)
}

// rngNormalQuantile is Acklam's approximation of the standard normal
// quantile Φ⁻¹(p) for a float64 tensor p with elements in (0, 1): a
// rational function of p-1/2 in the central region [0.02425, 0.97575]
// and of sqrt(-2 log(min(p, 1-p))) in the tails. Its relative error is
// below 1.15·10⁻⁹ (P. J. Acklam, "An algorithm for computing the inverse
// normal cumulative distribution function", 2003).
func rngNormalQuantile(p *Tensor) *Tensor {
	s := p.Shape()
	bind := func(pr *interp.Prim, args ...*Tensor) *Tensor { return interp.Bind1(pr, nil, args...) }
	f := func(v float64) *Tensor { return rngFill(v, Float64, s) }
	// poly evaluates c[0]·x^(k-1) + … + c[k-1] by Horner's rule.
	poly := func(x *Tensor, c ...float64) *Tensor {
		r := f(c[0])
		for _, ci := range c[1:] {
			r = bind(prims.Add, bind(prims.Mul, r, x), f(ci))
		}
		return r
	}
	const plow = 0.02425
	q := bind(prims.Sub, p, f(0.5))
	r := bind(prims.Mul, q, q)
	num := bind(prims.Mul, poly(r, -3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
		1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00), q)
	den := poly(r, -5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
		6.680131188771972e+01, -1.328068155288572e+01, 1)
	central := bind(prims.Div, num, den)
	pt := bind(prims.Min, p, bind(prims.Sub, f(1), p))
	t := bind(prims.Sqrt, bind(prims.Mul, f(-2), bind(prims.Log, pt)))
	tail := bind(prims.Div,
		poly(t, -7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
			-2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00),
		poly(t, 7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
			3.754408661907416e+00, 1))
	tail = bind(prims.Where, bind(prims.Gt, q, f(0)), bind(prims.Neg, tail), tail)
	inCentral := bind(prims.Le, bind(prims.Abs, q), f(0.5-plow))
	return bind(prims.Where, inCentral, central, tail)
}

// rngCeil returns the smallest value of dt (Float32 or Float64) ≥ v.
func rngCeil(dt DType, v float64) float64 {
	if dt == Float32 {
		f := float32(v)
		if float64(f) < v {
			f = math.Nextafter32(f, float32(math.Inf(1)))
		}
		return float64(f)
	}
	return v
}

// rngFloor returns the largest value of dt (Float32 or Float64) ≤ v.
func rngFloor(dt DType, v float64) float64 {
	if dt == Float32 {
		f := float32(v)
		if float64(f) > v {
			f = math.Nextafter32(f, float32(math.Inf(-1)))
		}
		return float64(f)
	}
	return v
}

// rngBelow returns the largest value of dt (Float32 or Float64) < v.
func rngBelow(dt DType, v float64) float64 {
	if dt == Float32 {
		f := float32(v)
		if float64(f) >= v {
			f = math.Nextafter32(f, float32(math.Inf(-1)))
		}
		return float64(f)
	}
	return math.Nextafter(v, math.Inf(-1))
}
