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

// Float32 returns h's value exactly. A normal value is rebiased inline
// (so a loop converting a buffer inlines it); zeros, subnormals, ±Inf and
// NaN take float32Special.
func (h F16) Float32() float32 {
	if h.normal() {
		return h.float32Normal()
	}
	return h.float32Special()
}

// normal reports whether h's exponent is neither 0 nor all ones.
func (h F16) normal() bool { return h>>10&0x1f-1 < 30 }

// float32Normal is Float32 of a normal h: its exponent rebiased.
func (h F16) float32Normal() float32 {
	return math.Float32frombits(uint32(h>>15)<<31 | (uint32(h)&0x7fff+112<<10)<<13)
}

// float32Special is Float32 of a value with a zero or all-ones exponent.
func (h F16) float32Special() float32 {
	sign := uint32(h>>15) << 31
	mant := uint32(h) & 0x3ff
	if h>>10&0x1f == 0 { // ±0 and subnormals: mant·2⁻²⁴, exact in float32
		return math.Float32frombits(math.Float32bits(float32(mant)*0x1p-24) | sign)
	}
	return math.Float32frombits(sign | 0x7f800000 | mant<<13) // ±Inf and NaN, payload kept
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
//
// The normal range is rounded inline by one integer add on the bits (ties
// to even, the carry running into the exponent); the rest takes
// f16FromFloat64Special.
func F16FromFloat64(v float64) F16 {
	if b := math.Float64bits(v); f16Normal64(b) {
		return f16Round64(b)
	}
	return f16FromFloat64Special(math.Float64bits(v))
}

// f16Normal64 reports whether the float64 bits b round to a normal F16:
// [2⁻¹⁴, 65520) in magnitude.
func f16Normal64(b uint64) bool {
	return b&^(1<<63)-0x3f10000000000000 < 0x40effe0000000000-0x3f10000000000000
}

// f16Round64 rounds float64 bits b of f16Normal64 to F16: 42 bits
// dropped, ties to even, the exponent rebiased 1023 → 15.
func f16Round64(b uint64) F16 {
	a := b &^ (1 << 63)
	r := a + (1<<41 - 1) + (a>>42)&1
	return F16(uint16(b>>48)&0x8000 | uint16((r-0x3f00000000000000)>>42))
}

// f16FromFloat64Special is F16FromFloat64 outside the normal range
// (±Inf, NaN, subnormals, ±0): the general rounding, roundHalf.
func f16FromFloat64Special(b uint64) F16 { return F16(roundHalf(math.Float64frombits(b), 5, 10)) }

// F16FromFloat32 is F16FromFloat64 for a float32 (one rounding: float32
// widens exactly). A NaN keeps its sign and the upper bits of its payload.
// The normal range is rounded inline on the bits (so a loop converting a
// buffer inlines it); the rest takes f16FromFloat32Special.
func F16FromFloat32(v float32) F16 {
	if b := math.Float32bits(v); f16Normal32(b) {
		return f16Round32(b)
	}
	return f16FromFloat32Special(math.Float32bits(v))
}

// f16Normal32 reports whether the float32 bits b round to a normal F16:
// [2⁻¹⁴, 65520) in magnitude.
func f16Normal32(b uint32) bool { return b&^(1<<31)-0x38800000 < 0x477ff000-0x38800000 }

// f16Round32 rounds float32 bits b of f16Normal32 to F16: 13 bits
// dropped, ties to even, the exponent rebiased 127 → 15.
func f16Round32(b uint32) F16 {
	a := b &^ (1 << 31)
	r := a + 0xfff + (a>>13)&1
	return F16(uint16(b>>16)&0x8000 | uint16((r-0x38000000)>>13))
}

// f16FromFloat32Special is F16FromFloat32 outside the normal range.
func f16FromFloat32Special(b uint32) F16 {
	sign := uint16(b>>16) & 0x8000
	a := b &^ (1 << 31)
	switch {
	case a > 0x7f800000: // NaN
		return F16(nanHalf(b, 23, 5, 10))
	case a >= 0x477ff000: // ≥ 65520, the midpoint above 65504 (odd): ±Inf
		return F16(sign | 0x7c00)
	case a >= 0x33000000: // [2⁻²⁵, 2⁻¹⁴): a subnormal (or 2⁻¹⁴ after rounding), quantum 2⁻²⁴
		s := 126 - a>>23 // 14 … 24
		m := a&0x7fffff | 0x800000
		r := m + (1<<(s-1) - 1) + (m>>s)&1
		return F16(sign | uint16(r>>s))
	}
	return F16(sign) // below half the least subnormal: ±0
}

// BF16FromFloat64 returns v rounded to the nearest bfloat16 value, ties
// to even, overflow to ±Inf, NaN kept a NaN.
// Like F16FromFloat64, it rounds the normal range inline on the bits.
func BF16FromFloat64(v float64) BF16 {
	if b := math.Float64bits(v); bf16Normal64(b) {
		return bf16Round64(b)
	}
	return bf16FromFloat64Special(math.Float64bits(v))
}

// bf16Normal64 reports whether the float64 bits b round to a normal
// BF16: [2⁻¹²⁶, (2-2⁻⁸)·2¹²⁷) in magnitude.
func bf16Normal64(b uint64) bool {
	return b&^(1<<63)-0x3810000000000000 < 0x47eff00000000000-0x3810000000000000
}

// bf16Round64 rounds float64 bits b of bf16Normal64 to BF16: 45 bits
// dropped, ties to even, the exponent rebiased 1023 → 127.
func bf16Round64(b uint64) BF16 {
	a := b &^ (1 << 63)
	r := a + (1<<44 - 1) + (a>>45)&1
	return BF16(uint16(b>>48)&0x8000 | uint16((r-0x3800000000000000)>>45))
}

// bf16FromFloat64Special is BF16FromFloat64 outside the normal range
// (±Inf, NaN, subnormals, ±0): the general rounding, roundHalf.
func bf16FromFloat64Special(b uint64) BF16 { return BF16(roundHalf(math.Float64frombits(b), 8, 7)) }

// BF16FromFloat32 is BF16FromFloat64 for a float32 (one rounding): the
// upper half of its bits, rounded to nearest even by one integer add
// (which carries into the exponent, and past the largest finite value to
// ±Inf, as the rounding must).
func BF16FromFloat32(v float32) BF16 {
	if b := math.Float32bits(v); b&^(1<<31) <= 0x7f800000 {
		return bf16Round32(b)
	}
	return BF16(nanHalf(math.Float32bits(v), 23, 8, 7))
}

// bf16Round32 rounds the float32 bits b of a non-NaN to BF16.
func bf16Round32(b uint32) BF16 { return BF16((b + 0x7fff + (b>>16)&1) >> 16) }

// Whole-slice conversions, for kernels converting buffers: each loop
// rounds or widens the common case inline and calls out only for the
// rest. Each converts min(len(d), len(s)) elements.

// F16sToFloat32s sets d[i] = s[i].Float32().
func F16sToFloat32s(d []float32, s []F16) {
	for i, h := range s[:min(len(d), len(s))] {
		if h.normal() {
			d[i] = h.float32Normal()
		} else {
			d[i] = h.float32Special()
		}
	}
}

// F16sToFloat64s sets d[i] = s[i].Float64().
func F16sToFloat64s(d []float64, s []F16) {
	for i, h := range s[:min(len(d), len(s))] {
		if h.normal() {
			d[i] = float64(h.float32Normal())
		} else {
			d[i] = float64(h.float32Special())
		}
	}
}

// F16sFromFloat32s sets d[i] = F16FromFloat32(s[i]).
func F16sFromFloat32s(d []F16, s []float32) {
	for i, v := range s[:min(len(d), len(s))] {
		switch b := math.Float32bits(v); {
		case f16Normal32(b):
			d[i] = f16Round32(b)
		case b<<1 == 0: // ±0, common enough to skip the call
			d[i] = F16(b >> 16)
		default:
			d[i] = f16FromFloat32Special(b)
		}
	}
}

// F16sFromFloat64s sets d[i] = F16FromFloat64(s[i]).
func F16sFromFloat64s(d []F16, s []float64) {
	for i, v := range s[:min(len(d), len(s))] {
		if b := math.Float64bits(v); f16Normal64(b) {
			d[i] = f16Round64(b)
		} else {
			d[i] = f16FromFloat64Special(b)
		}
	}
}

// BF16sFromFloat32s sets d[i] = BF16FromFloat32(s[i]).
func BF16sFromFloat32s(d []BF16, s []float32) {
	for i, v := range s[:min(len(d), len(s))] {
		if b := math.Float32bits(v); b&^(1<<31) <= 0x7f800000 {
			d[i] = bf16Round32(b)
		} else {
			d[i] = BF16(nanHalf(b, 23, 8, 7))
		}
	}
}

// F16sFromInt64s sets d[i] = F16FromInt64(s[i]).
func F16sFromInt64s(d []F16, s []int64) {
	for i, v := range s[:min(len(d), len(s))] {
		// float64(v) is exact below 2⁵³ in magnitude, and rounds larger
		// ones to values that are ±Inf in F16 as v is.
		switch b := math.Float64bits(float64(v)); {
		case f16Normal64(b):
			d[i] = f16Round64(b)
		case v == 0:
			d[i] = 0
		default:
			d[i] = f16FromFloat64Special(b)
		}
	}
}

// BF16sFromInt64s sets d[i] = BF16FromInt64(s[i]).
func BF16sFromInt64s(d []BF16, s []int64) {
	for i, v := range s[:min(len(d), len(s))] {
		if uint64(v)+1<<53 <= 1<<54 { // |v| ≤ 2⁵³: float64(v) is exact
			if b := math.Float64bits(float64(v)); bf16Normal64(b) {
				d[i] = bf16Round64(b)
				continue
			}
			if v == 0 {
				d[i] = 0
				continue
			}
		}
		d[i] = BF16FromInt64(v)
	}
}

// BF16sFromFloat64s sets d[i] = BF16FromFloat64(s[i]).
func BF16sFromFloat64s(d []BF16, s []float64) {
	for i, v := range s[:min(len(d), len(s))] {
		switch b := math.Float64bits(v); {
		case bf16Normal64(b):
			d[i] = bf16Round64(b)
		case b<<1 == 0:
			d[i] = BF16(b >> 48)
		default:
			d[i] = bf16FromFloat64Special(b)
		}
	}
}

// F16FromInt64 returns v rounded to the nearest binary16 value (ties to
// even, ±Inf beyond 65504): one rounding, not two through float64.
func F16FromInt64(v int64) F16 { return F16FromFloat64(intForHalf(v)) }

// BF16FromInt64 returns v rounded to the nearest bfloat16 value (ties to
// even), one rounding.
func BF16FromInt64(v int64) BF16 { return BF16FromFloat64(intForHalf(v)) }

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
