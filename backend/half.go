package backend

import (
	"math"
	"math/bits"
)

// F16 is the bit pattern of an IEEE 754 binary16 value: the host element
// type of Float16 buffers (FromHost takes and ToHost returns []F16).
type F16 uint16

// BF16 is the bit pattern of a bfloat16 value (the upper half of a
// float32): the host element type of BFloat16 buffers.
type BF16 uint16

// Float32 returns h's value exactly.
func (h F16) Float32() float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch exp {
	case 0: // ±0 and subnormals: mant·2⁻²⁴, exact in float32
		return math.Float32frombits(math.Float32bits(float32(mant)*0x1p-24) | sign)
	case 0x1f: // ±Inf and NaN, payload kept
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// Float64 returns h's value exactly.
func (h F16) Float64() float64 { return float64(h.Float32()) }

// Float32 returns h's value exactly.
func (h BF16) Float32() float32 { return math.Float32frombits(uint32(h) << 16) }

// Float64 returns h's value exactly.
func (h BF16) Float64() float64 { return float64(h.Float32()) }

// F16FromFloat64 returns v rounded to the nearest binary16 value, ties to
// even; values beyond the largest finite one (65504) round to ±Inf as
// IEEE 754 says, and a NaN stays a NaN (its sign and the upper bits of
// its payload kept).
func F16FromFloat64(v float64) F16 { return F16(roundHalf(v, 5, 10)) }

// F16FromFloat32 is F16FromFloat64 for a float32 (one rounding: float32
// widens exactly). A NaN keeps its sign and the upper bits of its payload.
func F16FromFloat32(v float32) F16 {
	if v != v {
		return F16(nanHalf(math.Float32bits(v), 23, 5, 10))
	}
	return F16(roundHalf(float64(v), 5, 10))
}

// BF16FromFloat64 returns v rounded to the nearest bfloat16 value, ties
// to even, overflow to ±Inf, NaN kept a NaN.
func BF16FromFloat64(v float64) BF16 { return BF16(roundHalf(v, 8, 7)) }

// BF16FromFloat32 is BF16FromFloat64 for a float32 (one rounding).
func BF16FromFloat32(v float32) BF16 {
	if v != v {
		return BF16(nanHalf(math.Float32bits(v), 23, 8, 7))
	}
	return BF16(roundHalf(float64(v), 8, 7))
}

// F16FromInt64 returns v rounded to the nearest binary16 value (ties to
// even, ±Inf beyond 65504): one rounding, not two through float64.
func F16FromInt64(v int64) F16 { return F16(roundHalf(intForHalf(v), 5, 10)) }

// BF16FromInt64 returns v rounded to the nearest bfloat16 value (ties to
// even), one rounding.
func BF16FromInt64(v int64) BF16 { return BF16(roundHalf(intForHalf(v), 8, 7)) }

// intForHalf returns a float64 that rounds to the same 16-bit float as
// v: v itself when exact, else v rounded to odd at 53 bits (the sticky
// bit kept), which a second rounding to at most 11 bits cannot tell from
// v.
func intForHalf(v int64) float64 {
	neg := v < 0
	m := uint64(v)
	if neg {
		m = -m
	}
	if s := bits.Len64(m) - 53; s > 0 {
		sticky := uint64(0)
		if m&(1<<s-1) != 0 {
			sticky = 1
		}
		f := math.Ldexp(float64(m>>s|sticky), s)
		if neg {
			f = -f
		}
		return f
	}
	f := float64(m)
	if neg {
		f = -f
	}
	return f
}

// nanHalf returns the 16-bit NaN of a NaN's bits b with fb fraction
// bits: sign and upper payload bits kept, the quiet bit set if no payload
// bit survives.
func nanHalf(b uint32, fb, ebits, mbits uint) uint16 {
	sign := uint16(b>>(fb+8)) & 1
	m := uint16((b & (1<<fb - 1)) >> (fb - mbits))
	if m == 0 {
		m = 1 << (mbits - 1)
	}
	return sign<<(ebits+mbits) | (1<<ebits-1)<<mbits | m
}

// roundHalf rounds v to a binary format of ebits exponent bits and mbits
// fraction bits (at most 16 bits in all), ties to even.
func roundHalf(v float64, ebits, mbits uint) uint16 {
	b := math.Float64bits(v)
	sign := uint16(b>>63) << (ebits + mbits)
	exp := int(b>>52) & 0x7ff
	mant := b & (1<<52 - 1)
	expMask := uint16(1<<ebits-1) << mbits
	if exp == 0x7ff {
		if mant != 0 {
			m := uint16(mant >> (52 - mbits))
			if m == 0 {
				m = 1 << (mbits - 1)
			}
			return sign | expMask | m
		}
		return sign | expMask
	}
	if exp == 0 { // zero or a float64 subnormal: below half the least 16-bit subnormal
		return sign
	}
	bias := 1<<(ebits-1) - 1
	e := exp - 1023
	if e+bias >= 1<<ebits-1 {
		return sign | expMask
	}
	sig := mant | 1<<52
	shift := 52 - int(mbits)
	if e+bias < 1 { // subnormal result: quantum 2^(1-bias-mbits)
		shift += 1 - bias - e
	}
	if shift > 63 {
		return sign
	}
	r := sig >> shift
	rem := sig & (1<<shift - 1)
	half := uint64(1) << (shift - 1)
	if rem > half || (rem == half && r&1 == 1) {
		r++
	}
	var out uint64
	if e+bias >= 1 {
		out = uint64(e+bias-1)<<mbits + r // r holds the implicit bit, which carries into the exponent
	} else {
		out = r
	}
	if out >= uint64(expMask) {
		return sign | expMask
	}
	return sign | uint16(out)
}

// HostSlice returns a new zeroed host slice of n elements of dtype d, of
// the type FromHost takes for d, or nil for an invalid dtype.
func HostSlice(d DType, n int) any {
	switch d {
	case Bool:
		return make([]bool, n)
	case Int64:
		return make([]int64, n)
	case Float32:
		return make([]float32, n)
	case Float64:
		return make([]float64, n)
	case Int32:
		return make([]int32, n)
	case Uint8:
		return make([]uint8, n)
	case Float16:
		return make([]F16, n)
	case BFloat16:
		return make([]BF16, n)
	}
	return nil
}

// HostDType returns the dtype of a host slice FromHost takes, or Invalid.
func HostDType(data any) DType {
	switch data.(type) {
	case []bool:
		return Bool
	case []int64:
		return Int64
	case []float32:
		return Float32
	case []float64:
		return Float64
	case []int32:
		return Int32
	case []uint8:
		return Uint8
	case []F16:
		return Float16
	case []BF16:
		return BFloat16
	}
	return Invalid
}
