package backend_test

import (
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"sort"
	"testing"

	"github.com/peel-ml/peel/backend"
)

// The reference here is written from the IEEE 754 definitions and shares
// nothing with the converters: a 16-bit format of e exponent and m
// fraction bits has the value (-1)^s·2^(E-bias)·(1+M/2^m) for 0 < E <
// 2^e-1 and (-1)^s·2^(1-bias)·M/2^m for E = 0; rounding picks the nearest
// of the sorted finite values, ties to the one with an even fraction,
// and a magnitude at or past max + ulp(max)/2 is ±Inf.

type format struct {
	name         string
	ebits, mbits int
}

var (
	fmtF16  = format{"f16", 5, 10}
	fmtBF16 = format{"bf16", 8, 7}
)

// value returns the value of bit pattern b, exactly (NaN for NaNs).
func (f format) value(b uint16) float64 {
	s := float64(1)
	if b>>(f.ebits+f.mbits) != 0 {
		s = -1
	}
	e := int(b>>f.mbits) & (1<<f.ebits - 1)
	m := float64(int(b) & (1<<f.mbits - 1))
	bias := 1<<(f.ebits-1) - 1
	switch e {
	case 0:
		return s * math.Ldexp(m, 1-bias-f.mbits)
	case 1<<f.ebits - 1:
		if m != 0 {
			return math.NaN()
		}
		return s * math.Inf(1)
	}
	return s * math.Ldexp(1+m/float64(int(1)<<f.mbits), e-bias)
}

// positives returns the non-negative finite bit patterns in increasing
// order of value (which is their order as integers).
func (f format) positives() []uint16 {
	if ps, ok := positivesCache[f]; ok {
		return ps
	}
	n := (1<<f.ebits - 1) << f.mbits
	out := make([]uint16, n)
	for i := range out {
		out[i] = uint16(i)
	}
	positivesCache[f] = out
	return out
}

var positivesCache = map[format][]uint16{}

// round is the reference rounding of the exact value x (a big.Float) to
// the format.
func (f format) round(x *big.Float) uint16 {
	sign := uint16(0)
	if x.Signbit() {
		sign = 1 << (f.ebits + f.mbits)
		x = new(big.Float).Neg(x)
	}
	ps := f.positives()
	maxV := big.NewFloat(f.value(ps[len(ps)-1]))
	ulp := new(big.Float).Sub(maxV, big.NewFloat(f.value(ps[len(ps)-2])))
	limit := new(big.Float).Add(maxV, new(big.Float).Quo(ulp, big.NewFloat(2)))
	if x.Cmp(limit) >= 0 {
		return sign | uint16(1<<f.ebits-1)<<f.mbits
	}
	// First pattern whose value is ≥ x.
	var k int
	if x64, acc := x.Float64(); acc == big.Exact {
		k = sort.Search(len(ps), func(i int) bool { return f.value(ps[i]) >= x64 })
	} else {
		k = sort.Search(len(ps), func(i int) bool { return big.NewFloat(f.value(ps[i])).Cmp(x) >= 0 })
	}
	if k == len(ps) {
		k--
	}
	if k == 0 {
		return sign | ps[0]
	}
	hi, lo := big.NewFloat(f.value(ps[k])), big.NewFloat(f.value(ps[k-1]))
	dHi := new(big.Float).Sub(hi, x)
	dLo := new(big.Float).Sub(x, lo)
	switch c := dLo.Cmp(dHi); {
	case c < 0:
		return sign | ps[k-1]
	case c > 0:
		return sign | ps[k]
	}
	if ps[k]&1 == 0 {
		return sign | ps[k]
	}
	return sign | ps[k-1]
}

func exact(v float64) *big.Float { return new(big.Float).SetPrec(2000).SetFloat64(v) }

func TestHalfDecodeAll(t *testing.T) {
	for b := 0; b < 1<<16; b++ {
		want := fmtF16.value(uint16(b))
		got := backend.F16(b).Float64()
		if !(got == want || (math.IsNaN(got) && math.IsNaN(want))) || math.Signbit(got) != math.Signbit(want) && !math.IsNaN(want) {
			t.Fatalf("f16 %#04x: got %v, want %v", b, got, want)
		}
		want = fmtBF16.value(uint16(b))
		got = backend.BF16(b).Float64()
		if !(got == want || (math.IsNaN(got) && math.IsNaN(want))) || math.Signbit(got) != math.Signbit(want) && !math.IsNaN(want) {
			t.Fatalf("bf16 %#04x: got %v, want %v", b, got, want)
		}
	}
}

// TestHalfRoundTrip: every pattern converts back to itself, NaNs too.
func TestHalfRoundTrip(t *testing.T) {
	for b := 0; b < 1<<16; b++ {
		h := backend.F16(b)
		if g := backend.F16FromFloat32(h.Float32()); g != h {
			t.Fatalf("f16 %#04x → f32 → %#04x", b, g)
		}
		if g := backend.F16FromFloat64(h.Float64()); g != h && !math.IsNaN(h.Float64()) {
			t.Fatalf("f16 %#04x → f64 → %#04x", b, g)
		}
		bh := backend.BF16(b)
		if g := backend.BF16FromFloat32(bh.Float32()); g != bh {
			t.Fatalf("bf16 %#04x → f32 → %#04x", b, g)
		}
	}
}

// TestHalfRoundMidpoints checks every midpoint between neighbours (ties
// to even), and points just either side of it, against the reference.
func TestHalfRoundMidpoints(t *testing.T) {
	for _, f := range []format{fmtF16, fmtBF16} {
		ps := f.positives()
		for i := 0; i+1 < len(ps); i++ {
			lo, hi := f.value(ps[i]), f.value(ps[i+1])
			mid := lo + (hi-lo)/2 // exact in float64
			for _, x := range []float64{mid, math.Nextafter(mid, 0), math.Nextafter(mid, math.Inf(1)), -mid} {
				want := f.round(exact(x))
				if got := conv64(f, x); got != want {
					t.Fatalf("%s(%v) = %#04x, want %#04x", f.name, x, got, want)
				}
				if x32 := float32(x); float64(x32) == x {
					if got := conv32(f, x32); got != want {
						t.Fatalf("%s(float32 %v) = %#04x, want %#04x", f.name, x32, got, want)
					}
				}
			}
		}
	}
}

func conv64(f format, x float64) uint16 {
	if f == fmtF16 {
		return uint16(backend.F16FromFloat64(x))
	}
	return uint16(backend.BF16FromFloat64(x))
}

func conv32(f format, x float32) uint16 {
	if f == fmtF16 {
		return uint16(backend.F16FromFloat32(x))
	}
	return uint16(backend.BF16FromFloat32(x))
}

func convInt(f format, x int64) uint16 {
	if f == fmtF16 {
		return uint16(backend.F16FromInt64(x))
	}
	return uint16(backend.BF16FromInt64(x))
}

func TestHalfRoundRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, f := range []format{fmtF16, fmtBF16} {
		for range 3000 {
			x := math.Ldexp(r.Float64()*2-1, r.IntN(300)-150)
			if want := f.round(exact(x)); conv64(f, x) != want {
				t.Fatalf("%s(%v) = %#04x, want %#04x", f.name, x, conv64(f, x), want)
			}
			x32 := float32(x)
			if want := f.round(exact(float64(x32))); conv32(f, x32) != want {
				t.Fatalf("%s(float32 %v) = %#04x, want %#04x", f.name, x32, conv32(f, x32), want)
			}
			i := r.Int64() >> r.IntN(63)
			if r.IntN(2) == 0 {
				i = -i
			}
			if want := f.round(new(big.Float).SetInt64(i)); convInt(f, i) != want {
				t.Fatalf("%s(int %d) = %#04x, want %#04x", f.name, i, convInt(f, i), want)
			}
		}
		// Integers whose float64 rounding would be a second rounding.
		for _, i := range []int64{math.MaxInt64, math.MinInt64, 1<<62 + 1<<54 + 1, 1<<60 + 1<<52 + 1, -(1<<60 + 1<<52 + 1), 65519, 65520, 65521, 257, 259, 2049, 2051} {
			if want := f.round(new(big.Float).SetInt64(i)); convInt(f, i) != want {
				t.Fatalf("%s(int %d) = %#04x, want %#04x", f.name, i, convInt(f, i), want)
			}
		}
	}
}

// TestHalfKnownPatterns checks published bit patterns.
func TestHalfKnownPatterns(t *testing.T) {
	f16 := []struct {
		x    float64
		want uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65519.99, 0x7bff}, {65520, 0x7c00}, {1e10, 0x7c00},
		{math.Inf(-1), 0xfc00}, {0x1p-14, 0x0400}, {0x1p-24, 0x0001}, {0x1p-25, 0x0000}, {0x1.0001p-25, 0x0001},
		{0x3p-25, 0x0002}, {0x1p-26, 0}, {math.Copysign(0, -1), 0x8000}, {1.0 / 3, 0x3555}, {0.1, 0x2e66},
		{1 + 0x1p-11, 0x3c00}, {1 + 0x3p-11, 0x3c02}, {-0x1p-30, 0x8000}, {5e-324, 0},
	}
	for _, c := range f16 {
		if got := backend.F16FromFloat64(c.x); uint16(got) != c.want {
			t.Errorf("F16FromFloat64(%v) = %#04x, want %#04x", c.x, uint16(got), c.want)
		}
	}
	bf16 := []struct {
		x    float64
		want uint16
	}{
		{1, 0x3f80}, {-1, 0xbf80}, {1 + 0x1p-8, 0x3f80}, {1 + 0x3p-8, 0x3f82}, {3.140625, 0x4049},
		{math.MaxFloat32, 0x7f80}, {0x1.fep127, 0x7f7f}, {0x1p-133, 0x0001}, {0x1p-134, 0}, {1e-45, 0},
	}
	for _, c := range bf16 {
		if got := backend.BF16FromFloat64(c.x); uint16(got) != c.want {
			t.Errorf("BF16FromFloat64(%v) = %#04x, want %#04x", c.x, uint16(got), c.want)
		}
	}
	for _, nan := range []float64{math.NaN(), -math.NaN()} {
		if h := backend.F16FromFloat64(nan); !math.IsNaN(h.Float64()) {
			t.Errorf("F16FromFloat64(NaN) = %#04x, not a NaN", uint16(h))
		}
		if h := backend.BF16FromFloat32(float32(nan)); !math.IsNaN(h.Float64()) {
			t.Errorf("BF16FromFloat32(NaN) = %#04x, not a NaN", uint16(h))
		}
	}
	// A float32 NaN whose payload lies only in the low bits stays a NaN.
	if h := backend.F16FromFloat32(math.Float32frombits(0x7f800001)); !math.IsNaN(h.Float64()) {
		t.Errorf("F16FromFloat32(sNaN 0x7f800001) = %#04x, not a NaN", uint16(h))
	}
	if h := backend.BF16FromFloat32(math.Float32frombits(0xff800001)); !math.IsNaN(h.Float64()) || uint16(h)>>15 != 1 {
		t.Errorf("BF16FromFloat32(-sNaN 0xff800001) = %#04x, not a negative NaN", uint16(h))
	}
}

func TestDTypeProperties(t *testing.T) {
	cases := []struct {
		d                       backend.DType
		name                    string
		size                    int
		float, integer, storage bool
		compute                 backend.DType
	}{
		{backend.Bool, "bool", 1, false, false, false, backend.Bool},
		{backend.Int64, "i64", 8, false, true, false, backend.Int64},
		{backend.Float32, "f32", 4, true, false, false, backend.Float32},
		{backend.Float64, "f64", 8, true, false, false, backend.Float64},
		{backend.Int32, "i32", 4, false, true, true, backend.Int64},
		{backend.Uint8, "u8", 1, false, true, true, backend.Int64},
		{backend.Float16, "f16", 2, true, false, true, backend.Float32},
		{backend.BFloat16, "bf16", 2, true, false, true, backend.Float32},
	}
	for _, c := range cases {
		if c.d.String() != c.name || c.d.Size() != c.size || c.d.IsFloat() != c.float || c.d.IsInteger() != c.integer ||
			c.d.IsStorage() != c.storage || c.d.Compute() != c.compute || !c.d.IsValid() {
			t.Errorf("%v: String %q Size %d IsFloat %v IsInteger %v IsStorage %v Compute %v IsValid %v", c.name,
				c.d.String(), c.d.Size(), c.d.IsFloat(), c.d.IsInteger(), c.d.IsStorage(), c.d.Compute(), c.d.IsValid())
		}
		if got := backend.HostDType(backend.HostSlice(c.d, 2)); got != c.d {
			t.Errorf("HostDType(HostSlice(%v)) = %v", c.d, got)
		}
	}
	if backend.Invalid.IsValid() || backend.DType(9).IsValid() {
		t.Error("Invalid or dtype(9) is valid")
	}
}

// TestHalfFromFloat32Agrees checks the bit-level float32 converters
// against the float64 ones (float32 widens exactly, so both round once):
// every exponent and sign with the fraction patterns around each
// rounding boundary (ties, one below, one above, carries into the
// exponent) and random fractions; with PEEL_EXHAUSTIVE=1 every one of
// the 2³² float32 bit patterns.
func TestHalfFromFloat32Agrees(t *testing.T) {
	check := func(b uint32) bool {
		x := math.Float32frombits(b)
		if g, w := backend.F16FromFloat32(x), backend.F16FromFloat64(float64(x)); g != w && !(g.Float32() != g.Float32() && w.Float32() != w.Float32()) {
			t.Errorf("F16FromFloat32(%#08x) = %#04x; F16FromFloat64 gives %#04x", b, uint16(g), uint16(w))
			return false
		}
		if g, w := backend.BF16FromFloat32(x), backend.BF16FromFloat64(float64(x)); g != w && !(g.Float32() != g.Float32() && w.Float32() != w.Float32()) {
			t.Errorf("BF16FromFloat32(%#08x) = %#04x; BF16FromFloat64 gives %#04x", b, uint16(g), uint16(w))
			return false
		}
		return true
	}
	if os.Getenv("PEEL_EXHAUSTIVE") != "" {
		for b := uint64(0); b < 1<<32; b++ {
			if !check(uint32(b)) {
				return
			}
		}
		return
	}
	var fracs []uint32
	for _, sh := range []uint{0, 1, 12, 13, 14, 15, 16, 17, 22} {
		base := uint32(1) << sh
		fracs = append(fracs, base-1, base, base+1, 0x7fffff&^(base-1), 0x7fffff&^base)
	}
	fracs = append(fracs, 0, 0x7fffff, 0x7fe000, 0x7ff000, 0x7fefff, 0x7ff001, 0x3ff000, 0x400000)
	r := rand.New(rand.NewPCG(43, 10))
	for range 64 {
		fracs = append(fracs, r.Uint32()&0x7fffff)
	}
	for sign := uint32(0); sign < 2; sign++ {
		for e := uint32(0); e < 256; e++ {
			for _, f := range fracs {
				if !check(sign<<31 | e<<23 | f&0x7fffff) {
					return
				}
			}
		}
	}
}

// TestHalfFromFloat64Agrees checks the bit-level float64 and int64
// converters against roundHalf, the general rounding they replaced for
// the normal range: every exponent and sign with the fraction patterns
// around the rounding boundaries of both formats, random fractions, and
// int64 values around every power of two; and the whole-slice
// conversions against the scalar ones.
func TestHalfFromFloat64Agrees(t *testing.T) {
	f16 := func(v float64) uint16 { return backend.RoundHalf(v, 5, 10) }
	bf16 := func(v float64) uint16 { return backend.RoundHalf(v, 8, 7) }
	var fracs []uint64
	for _, sh := range []uint{0, 1, 40, 41, 42, 43, 44, 45, 46, 51} {
		base := uint64(1) << sh
		fracs = append(fracs, base-1, base, base+1, (1<<52-1)&^(base-1), (1<<52-1)&^base)
	}
	r := rand.New(rand.NewPCG(43, 64))
	for range 48 {
		fracs = append(fracs, r.Uint64()&(1<<52-1))
	}
	var vals []float64
	for sign := uint64(0); sign < 2; sign++ {
		for e := uint64(0); e < 2048; e++ {
			for _, f := range fracs {
				vals = append(vals, math.Float64frombits(sign<<63|e<<52|f))
			}
		}
	}
	for _, v := range vals {
		if g, w := uint16(backend.F16FromFloat64(v)), f16(v); g != w {
			t.Fatalf("F16FromFloat64(%#016x) = %#04x; roundHalf gives %#04x", math.Float64bits(v), g, w)
		}
		if g, w := uint16(backend.BF16FromFloat64(v)), bf16(v); g != w {
			t.Fatalf("BF16FromFloat64(%#016x) = %#04x; roundHalf gives %#04x", math.Float64bits(v), g, w)
		}
	}
	var ints []int64
	for sh := range 63 {
		for _, d := range []int64{-1, 0, 1} {
			ints = append(ints, int64(1)<<sh+d, -(int64(1)<<sh + d), int64(1)<<sh+int64(r.Uint32()))
		}
	}
	ints = append(ints, math.MaxInt64, math.MinInt64, math.MinInt64+1, 65519, 65520, 65536, -65520)
	for range 1000 {
		ints = append(ints, int64(r.Uint64()), int64(r.Uint64()>>r.UintN(63)))
	}
	for _, v := range ints {
		if g, w := uint16(backend.F16FromInt64(v)), f16(backend.IntForHalf(v)); g != w {
			t.Fatalf("F16FromInt64(%d) = %#04x; want %#04x", v, g, w)
		}
		if g, w := uint16(backend.BF16FromInt64(v)), bf16(backend.IntForHalf(v)); g != w {
			t.Fatalf("BF16FromInt64(%d) = %#04x; want %#04x", v, g, w)
		}
	}

	// The whole-slice conversions equal the scalar ones element by
	// element (NaNs included: both keep the same payload bits).
	f32 := make([]float32, len(vals))
	for i, v := range vals {
		f32[i] = float32(v)
	}
	h := make([]backend.F16, len(vals))
	bh := make([]backend.BF16, len(vals))
	backend.F16sFromFloat64s(h, vals)
	backend.BF16sFromFloat64s(bh, vals)
	for i, v := range vals {
		if h[i] != backend.F16FromFloat64(v) || bh[i] != backend.BF16FromFloat64(v) {
			t.Fatalf("slice conversion of %v: %#04x, %#04x", v, h[i], bh[i])
		}
	}
	backend.F16sFromFloat32s(h, f32)
	backend.BF16sFromFloat32s(bh, f32)
	for i, v := range f32 {
		if h[i] != backend.F16FromFloat32(v) || bh[i] != backend.BF16FromFloat32(v) {
			t.Fatalf("slice conversion of float32 %v: %#04x, %#04x", v, h[i], bh[i])
		}
	}
	back32 := make([]float32, len(h))
	back64 := make([]float64, len(h))
	backend.F16sToFloat32s(back32, h)
	backend.F16sToFloat64s(back64, h)
	for i, x := range h {
		if math.Float32bits(back32[i]) != math.Float32bits(x.Float32()) || math.Float64bits(back64[i]) != math.Float64bits(x.Float64()) {
			t.Fatalf("slice widening of %#04x: %v, %v", x, back32[i], back64[i])
		}
	}
	hi := make([]backend.F16, len(ints))
	bhi := make([]backend.BF16, len(ints))
	backend.F16sFromInt64s(hi, ints)
	backend.BF16sFromInt64s(bhi, ints)
	for i, v := range ints {
		if hi[i] != backend.F16FromInt64(v) || bhi[i] != backend.BF16FromInt64(v) {
			t.Fatalf("slice conversion of %d: %#04x, %#04x", v, hi[i], bhi[i])
		}
	}
}
