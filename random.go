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
// derive fresh keys with SplitKey or FoldIn. A key used for splitting or
// folding should not also be used for sampling: SplitKey(key, n)[i] and
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

// SplitKey returns n new keys derived from key, as an i64 tensor of shape
// [n, 2]: key i is Threefry2x32(key, (i/2^32, i mod 2^32)). It panics with
// *Error if key is not an i64 tensor of shape [2], n is negative, or the
// keys are too large (they exceed the allocation limit).
func SplitKey(key *Tensor, n int) *Tensor {
	const op = "peel.SplitKey"
	rngCheckKey(op, key)
	if n < 0 {
		errorf(op, "negative number of keys %d", n)
	}
	checkResult(op, Int64, []int{n, 2}, key)
	defer interp.Annotate(op)
	k0, k1 := rngKeyWords(key)
	y0, y1 := rngBlocks(k0, k1, n)
	col := func(y *Tensor) *Tensor {
		return interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: []int{n, 1}}, y)
	}
	return interp.Bind1(prims.Concatenate, prims.AxisParams{Axis: 1}, col(y0), col(y1))
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

// Uniform returns a tensor of the given shape and floating-point dtype
// whose elements are uniformly distributed in [0, 1): multiples of 2^-23
// for Float32 (23 random bits), of 2^-53 for Float64 (53 random bits from
// the two words). It panics with *Error if key is not a key, dt is not a
// float dtype, a dimension is negative, or the sample is too large (its
// number of elements overflows int, or it exceeds the allocation limit).
func Uniform(key *Tensor, dt DType, shape ...int) *Tensor {
	const op = "peel.Uniform"
	rngCheckSample(op, key, dt, shape)
	defer interp.Annotate(op)
	k0, k1 := rngKeyWords(key)
	n := rngSize(shape)
	y0, y1 := rngBlocks(k0, k1, n)
	return rngReshape(rngUniform(dt, y0, y1), shape)
}

// Normal returns a tensor of the given shape and floating-point dtype of
// standard normal samples (mean 0, variance 1), by the Box–Muller
// transform of two uniform samples. It panics with *Error in the cases
// Uniform does.
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
		// two keys of SplitKey(key, 2).
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

// Bernoulli returns a bool tensor of the given shape whose elements are
// true with probability p, independently. p is resolved to multiples of
// 2^-32: an element is true when a random 32-bit word is below
// round(p·2^32), so p = 0 never and p = 1 always gives true. It panics
// with *Error if key is not a key, p is outside [0, 1], a dimension is
// negative, or the sample is too large (its number of elements overflows
// int, or it exceeds the allocation limit).
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
		e := interp.Errorf("a key is an i64 tensor of shape [2] (made by peel.Key, SplitKey or FoldIn)")
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
