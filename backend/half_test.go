package backend_test

import (
	"math"
	"math/big"
	"math/rand/v2"
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
