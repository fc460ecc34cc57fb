package cpu

import (
	"math/bits"
	"unsafe"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Kernels of select, convert_element_type, iota and threefry2x32.

func init() {
	register(prims.Where, true, selectKernel)
	register(prims.ConvertElementType, true, convertKernel)
	register(prims.Iota, false, iotaKernel)
	register(prims.Threefry2x32, true, threefryKernel)
}

// ---------------------------------------------------------------------------
// select

func selectKernel(_ any, in, out []backend.Array) {
	p, x, y, o := in[0], in[1], in[2], out[0]
	pb := p.Buf.(boolBuf)
	switch xb := x.Buf.(type) {
	case boolBuf:
		runSelect(bools(o), p, x, y, pb, xb, y.Buf.(boolBuf))
	case i64Buf:
		runSelect(i64s(o), p, x, y, pb, xb, y.Buf.(i64Buf))
	case f32Buf:
		// Floats are selected as their bit patterns: the compiler emits a
		// conditional move only for integer registers.
		runSelect(asBits32(f32s(o)), p, x, y, pb, asBits32(xb), asBits32(y.Buf.(f32Buf)))
	case f64Buf:
		runSelect(asBits64(f64s(o)), p, x, y, pb, asBits64(xb), asBits64(y.Buf.(f64Buf)))
	default:
		badDType(prims.Where, x.Buf.DType())
	}
}

// asBits32 and asBits64 view float slices as their bit patterns (same
// memory).
func asBits32(f []float32) []uint32 {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&f[0])), len(f))
}

func asBits64(f []float64) []uint64 {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&f[0])), len(f))
}

// selectLoops are the loops of select for one element type: both
// branches tensors, onTrue a scalar, onFalse a scalar, both scalars.
type selectLoops[T any] struct {
	vv func(d []T, p []bool, a, b []T)
	sv func(d []T, p []bool, s T, b []T)
	vs func(d []T, p []bool, a []T, s T)
	ss func(d []T, p []bool, s, t T)
}

func runSelect[T any](d []T, p, x, y backend.Array, pb []bool, xb, yb []T) {
	n := len(d)
	if n == 0 {
		return
	}
	if isSplatIn(p) {
		src, sb := y, yb
		if pb[p.Offset] {
			src, sb = x, xb
		}
		if isSplatIn(src) {
			fillSlice(d, sb[src.Offset])
		} else {
			copy(d, sb[src.Offset:src.Offset+n])
		}
		return
	}
	l := selectLoops[T]{selectVV[T], selectSV[T], selectVS[T], selectSS[T]}
	pr := pb[p.Offset : p.Offset+n]
	xs, ys := isSplatIn(x), isSplatIn(y)
	switch {
	case xs && ys:
		a, b := xb[x.Offset], yb[y.Offset]
		parallelFor(n, costCheap, func(lo, hi int) { l.ss(d[lo:hi], pr[lo:hi], a, b) })
	case xs:
		a, b := xb[x.Offset], yb[y.Offset:y.Offset+n]
		parallelFor(n, costCheap, func(lo, hi int) { l.sv(d[lo:hi], pr[lo:hi], a, b[lo:hi]) })
	case ys:
		a, b := xb[x.Offset:x.Offset+n], yb[y.Offset]
		parallelFor(n, costCheap, func(lo, hi int) { l.vs(d[lo:hi], pr[lo:hi], a[lo:hi], b) })
	default:
		a, b := xb[x.Offset:x.Offset+n], yb[y.Offset:y.Offset+n]
		parallelFor(n, costCheap, func(lo, hi int) { l.vv(d[lo:hi], pr[lo:hi], a[lo:hi], b[lo:hi]) })
	}
}

// The select loops load both candidates before choosing, so the compiler
// emits a conditional move instead of a branch (a random predicate would
// mispredict half the time). It does so only for integer registers, so
// float buffers come here as their bit patterns (selectKernel).

func selectVV[T any](d []T, p []bool, a, b []T) {
	p, a, b = p[:len(d)], a[:len(d)], b[:len(d)]
	for i := range d {
		u, v := a[i], b[i]
		if p[i] {
			v = u
		}
		d[i] = v
	}
}

func selectVS[T any](d []T, p []bool, a []T, s T) {
	p, a = p[:len(d)], a[:len(d)]
	for i := range d {
		u, v := a[i], s
		if p[i] {
			v = u
		}
		d[i] = v
	}
}

func selectSV[T any](d []T, p []bool, s T, b []T) {
	p, b = p[:len(d)], b[:len(d)]
	for i := range d {
		v := b[i]
		if p[i] {
			v = s
		}
		d[i] = v
	}
}

func selectSS[T any](d []T, p []bool, s, t T) {
	p = p[:len(d)]
	for i := range d {
		v := t
		if p[i] {
			v = s
		}
		d[i] = v
	}
}

// ---------------------------------------------------------------------------
// convert_element_type
//
// Every conversion follows the one rule of backend/convert.go (float to
// integer truncates toward zero, saturates, NaN → 0; nonzero → true), by
// calling its functions.

func convertKernel(_ any, in, out []backend.Array) {
	x, o := in[0], out[0]
	switch xb := x.Buf.(type) {
	case boolBuf:
		switch o.Buf.(type) {
		case boolBuf:
			runConvert(bools(o), x, xb, copyLoop[bool])
		case i64Buf:
			runConvert(i64s(o), x, xb, fromBoolLoop[int64])
		case f32Buf:
			runConvert(f32s(o), x, xb, fromBoolLoop[float32])
		case f64Buf:
			runConvert(f64s(o), x, xb, fromBoolLoop[float64])
		}
	case i64Buf:
		switch o.Buf.(type) {
		case boolBuf:
			runConvert(bools(o), x, xb, toBoolLoop[int64])
		case i64Buf:
			runConvert(i64s(o), x, xb, copyLoop[int64])
		case f32Buf:
			runConvert(f32s(o), x, xb, numConvLoop[int64, float32])
		case f64Buf:
			runConvert(f64s(o), x, xb, numConvLoop[int64, float64])
		}
	case f32Buf:
		switch o.Buf.(type) {
		case boolBuf:
			runConvert(bools(o), x, xb, toBoolLoop[float32])
		case i64Buf:
			runConvert(i64s(o), x, xb, floatToIntLoop[float32])
		case f32Buf:
			runConvert(f32s(o), x, xb, copyLoop[float32])
		case f64Buf:
			runConvert(f64s(o), x, xb, numConvLoop[float32, float64])
		}
	case f64Buf:
		switch o.Buf.(type) {
		case boolBuf:
			runConvert(bools(o), x, xb, toBoolLoop[float64])
		case i64Buf:
			runConvert(i64s(o), x, xb, floatToIntLoop[float64])
		case f32Buf:
			runConvert(f32s(o), x, xb, numConvLoop[float64, float32])
		case f64Buf:
			runConvert(f64s(o), x, xb, copyLoop[float64])
		}
	default:
		badDType(prims.ConvertElementType, x.Buf.DType())
	}
}

func runConvert[S, D any](d []D, x backend.Array, buf []S, f func(d []D, a []S)) {
	runUnary(prims.ConvertElementType, f, costCheap, d, buf, &x)
}

func fromBoolLoop[D elemNum](d []D, a []bool) {
	a = a[:len(d)]
	for i, x := range a {
		var v D
		if x {
			v = 1
		}
		d[i] = v
	}
}

func toBoolLoop[S elemNum](d []bool, a []S) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = x != 0
	}
}

func numConvLoop[S, D elemNum](d []D, a []S) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = D(x)
	}
}

func floatToIntLoop[S elemFloat](d []int64, a []S) {
	a = a[:len(d)]
	for i, x := range a {
		d[i] = backend.FloatToInt64(float64(x))
	}
}

// ---------------------------------------------------------------------------
// iota

func iotaKernel(params any, _, out []backend.Array) {
	p := params.(prims.IotaParams)
	o := out[0]
	if len(o.Shape) == 0 || p.Dim < 0 || p.Dim >= len(o.Shape) {
		interp.Panicf("cpu: iota dimension %d out of range for shape %v", p.Dim, o.Shape)
	}
	switch o.Buf.(type) {
	case i64Buf:
		iotaFill(i64s(o), o.Shape, p.Dim)
	case f32Buf:
		iotaFill(f32s(o), o.Shape, p.Dim)
	case f64Buf:
		iotaFill(f64s(o), o.Shape, p.Dim)
	default:
		badDType(prims.Iota, o.Buf.DType())
	}
}

// iotaFill sets d (of the given shape) to each element's index along dim.
func iotaFill[T elemNum](d []T, shape []int, dim int) {
	if len(d) == 0 {
		return
	}
	n := shape[dim]
	inner := backend.ShapeSize(shape[dim+1:])
	block := n * inner
	// The first block holds 0…n-1 repeated inner times; the others copy it.
	for k := range n {
		fillSlice(d[k*inner:(k+1)*inner], T(k))
	}
	for lo := block; lo < len(d); lo += block {
		copy(d[lo:lo+block], d[:block])
	}
}

// ---------------------------------------------------------------------------
// threefry2x32

// Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3", SC 2011): key words k0, k1 and the parity word
// k0^k1^threefryParity form the key schedule, injected every 4 rounds.
const threefryParity = 0x1BD11BDA

// threefry2x32 encrypts the counter (x0, x1) under the key (k0, k1).
func threefry2x32(k0, k1, x0, x1 uint32) (uint32, uint32) {
	y0, y1, _, _ := threefryPair(k0, k1, x0, x1, k0, k1, x0, x1)
	return y0, y1
}

// threefryPair encrypts two blocks, a under key (ka0, ka1) and b under
// (kb0, kb1), with their rounds interleaved: each round depends on the
// previous one, so two independent chains run twice as fast as one.
// Rounds use the rotations 13, 15, 26, 6 and 17, 29, 16, 24 in turn, and
// the key schedule (k0, k1, k2) is injected every 4 rounds.
func threefryPair(ka0, ka1, a0, a1, kb0, kb1, b0, b1 uint32) (uint32, uint32, uint32, uint32) {
	ka2, kb2 := ka0^ka1^threefryParity, kb0^kb1^threefryParity
	a0, a1, b0, b1 = a0+ka0, a1+ka1, b0+kb0, b1+kb1
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 13)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 15)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 26)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 6)
	a0, a1, b0, b1 = a0+ka1, a1+ka2+1, b0+kb1, b1+kb2+1
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 17)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 29)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 16)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 24)
	a0, a1, b0, b1 = a0+ka2, a1+ka0+2, b0+kb2, b1+kb0+2
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 13)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 15)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 26)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 6)
	a0, a1, b0, b1 = a0+ka0, a1+ka1+3, b0+kb0, b1+kb1+3
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 17)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 29)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 16)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 24)
	a0, a1, b0, b1 = a0+ka1, a1+ka2+4, b0+kb1, b1+kb2+4
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 13)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 15)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 26)
	a0, a1, b0, b1 = threefryMix(a0, a1, b0, b1, 6)
	return a0 + ka2, a1 + ka0 + 5, b0 + kb2, b1 + kb0 + 5
}

// threefryMix is one round on two blocks.
func threefryMix(a0, a1, b0, b1 uint32, r int) (uint32, uint32, uint32, uint32) {
	a0 += a1
	b0 += b1
	return a0, bits.RotateLeft32(a1, r) ^ a0, b0, bits.RotateLeft32(b1, r) ^ b0
}

// wordsIn is a threefry operand: a contiguous slice (step 1) or a single
// broadcast element (step 0).
type wordsIn struct {
	w    []int64
	step int
}

func threefryKernel(_ any, in, out []backend.Array) {
	y0, y1 := i64s(out[0]), i64s(out[1])
	n := len(y0)
	if n == 0 {
		return
	}
	var ops [4]wordsIn
	for k := range ops {
		a := in[k]
		buf, ok := a.Buf.(i64Buf)
		if !ok {
			badDType(prims.Threefry2x32, a.Buf.DType())
		}
		if isSplatIn(a) {
			ops[k] = wordsIn{w: buf[a.Offset : a.Offset+1]}
		} else {
			ops[k] = wordsIn{w: buf[a.Offset : a.Offset+n], step: 1}
		}
	}
	parallelFor(n, 2*costHeavy, func(lo, hi int) {
		k0, k1, c0, c1 := ops[0], ops[1], ops[2], ops[3]
		word := func(o wordsIn, i int) uint32 { return uint32(o.w[i*o.step]) }
		i := lo
		for ; i+2 <= hi; i += 2 {
			j := i + 1
			a0, a1, b0, b1 := threefryPair(word(k0, i), word(k1, i), word(c0, i), word(c1, i),
				word(k0, j), word(k1, j), word(c0, j), word(c1, j))
			y0[i], y1[i], y0[j], y1[j] = int64(a0), int64(a1), int64(b0), int64(b1)
		}
		if i < hi {
			a0, a1 := threefry2x32(word(k0, i), word(k1, i), word(c0, i), word(c1, i))
			y0[i], y1[i] = int64(a0), int64(a1)
		}
	})
}
