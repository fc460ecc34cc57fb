package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/peel-ml/peel/internal/testsize"
)

// Tests of the SIMD kernels (simd_amd64.s) and, side by side, of the
// portable float32 loops of fastmath.go they replace. Where the CPU lacks
// AVX2+FMA, or under the purego tag, the *Vec functions are the portable
// loops and these tests check those.
//
// Accuracy is measured in float32 ulps against math.* evaluated in
// float64 and rounded once to float32, over every 97th float32 bit
// pattern (44M values: all binades, both signs, subnormals, ±Inf, NaN)
// plus a fine sweep of each function's interesting range when PEEL_FULL
// is set; by default every 997th bit pattern and a coarser fine sweep,
// with -short fewer still. Setting
// PEEL_EXHAUSTIVE=1 runs TestSIMDExhaustive, which checks all 2^32 inputs
// (about a minute per function). Maximum errors measured on all 2^32
// inputs (AMD EPYC, AVX2+FMA):
//
//	           SIMD   portable
//	exp        1      1
//	logistic   1      1
//	tanh       1      1
//	sin        1      1
//	cos        1      1
//	erf        1      1   (Intel Xeon, AVX-512 machine, AVX2+FMA kernel)
//
// (sin and cos: about 29k of the 2.5G inputs below 2^20 in magnitude are
// 1 ulp off, the rest correctly rounded; larger ones, NaN and ±Inf are
// math.Sin and math.Cos rounded, exact.)
//
// The assertions allow simdULPs of error for the SIMD kernels and
// scalarULPs for the portable loops.

const (
	simdULPs   = 1
	scalarULPs = 1
)

// ulps32 is the distance between float32 values in units in the last
// place: 0 when both are NaN or equal (±0 included), +Inf when only one
// is NaN.
func ulps32(a, b float32) float64 {
	if a != a || b != b {
		if a != a && b != b {
			return 0
		}
		return math.Inf(1)
	}
	key := func(x float32) int64 {
		u := int64(math.Float32bits(x))
		if u&(1<<31) != 0 {
			return -(u &^ (1 << 31))
		}
		return u
	}
	return math.Abs(float64(key(a) - key(b)))
}

func logisticRef(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

type mathCase struct {
	name   string
	vec    func(d, a []float32) // the dispatched kernel's SIMD path
	scalar func(d, a []float32) // the portable loop
	ref    func(float64) float64
	lim    float32 // the fine sweep covers [-lim, lim]
}

var mathCases = []mathCase{
	{"exp", exp32Vec, exp32Scalar, math.Exp, 105},
	{"logistic", logistic32Vec, logistic32Scalar, logisticRef, 105},
	{"tanh", tanh32Vec, tanh32Scalar, math.Tanh, 10},
	{"sin", sin32Vec, sin32Scalar, math.Sin, 40},
	{"cos", cos32Vec, cos32Scalar, math.Cos, 40},
	{"erf", erf32Vec, erf32Scalar, math.Erf, 7},
}

// specials32 are inputs every float32 function test includes.
var specials32 = []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
	float32(math.NaN()), -float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32,
	math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 0x1p-126, -0x1p-126, 1e-30, -1e-30,
	0.55, -0.55, math.Nextafter32(0.55, 0), math.Nextafter32(-0.55, 0), 9.02, 9.1, 10, 88.72283, 88.72284,
	-87.33654, -87.33655, -103.97, -103.98, -104, 104, -105, 105, 1, -1}

// sweep32 returns every stride-th float32 bit pattern, n evenly spaced
// values in [-lim, lim] and specials32.
func sweep32(stride uint32, lim float32, n int) []float32 {
	v := make([]float32, 0, int(1<<32/uint64(stride))+n+len(specials32))
	for u := uint64(0); u < 1<<32; u += uint64(stride) {
		v = append(v, math.Float32frombits(uint32(u)))
	}
	for i := range n {
		v = append(v, -lim+2*lim*float32(i)/float32(n))
	}
	return append(v, specials32...)
}

// worstULPs runs f over in (in parallel chunks) and returns the largest
// error against ref and an input where it occurs.
func worstULPs(f func(d, a []float32), ref func(float64) float64, in []float32) (worst float64, at float32) {
	out := make([]float32, len(in))
	workers := runtime.GOMAXPROCS(0)
	chunk := (len(in) + workers - 1) / workers
	var mu sync.Mutex
	var wg sync.WaitGroup
	for lo := 0; lo < len(in); lo += chunk {
		hi := min(lo+chunk, len(in))
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(out[lo:hi], in[lo:hi])
			var w float64
			var wx float32
			for i := lo; i < hi; i++ {
				want := float32(ref(float64(in[i])))
				if d := ulps32(out[i], want); d > w {
					w, wx = d, in[i]
				}
			}
			mu.Lock()
			if w > worst {
				worst, at = w, wx
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return worst, at
}

// TestSIMDMathAccuracy measures the float32 kernels, SIMD and portable,
// over a dense sweep of inputs.
func TestSIMDMathAccuracy(t *testing.T) {
	stride, fine := testsize.Pick(uint32(997), uint32(97)), testsize.Pick(1<<18, 1<<20)
	if testing.Short() {
		stride, fine = 9973, 1<<14
	}
	for _, c := range mathCases {
		in := sweep32(stride, c.lim, fine)
		for _, impl := range []struct {
			name  string
			f     func(d, a []float32)
			bound float64
		}{{"simd", c.vec, simdULPs}, {"portable", c.scalar, scalarULPs}} {
			worst, at := worstULPs(impl.f, c.ref, in)
			t.Logf("%s %s: max error %.0f ulp (at %v) over %d inputs", c.name, impl.name, worst, at, len(in))
			if worst > impl.bound {
				d := []float32{0}
				impl.f(d, []float32{at})
				t.Errorf("%s %s: %.0f ulps at %v: got %v, want %v", c.name, impl.name, worst, at,
					d[0], float32(c.ref(float64(at))))
			}
		}
	}
}

// TestSIMDExhaustive checks every float32 input when PEEL_EXHAUSTIVE is
// set.
func TestSIMDExhaustive(t *testing.T) {
	if os.Getenv("PEEL_EXHAUSTIVE") == "" {
		t.Skip("set PEEL_EXHAUSTIVE=1 to check all 2^32 inputs")
	}
	for _, c := range mathCases {
		for _, impl := range []struct {
			name  string
			f     func(d, a []float32)
			bound float64
		}{{"simd", c.vec, simdULPs}, {"portable", c.scalar, scalarULPs}} {
			var worst float64
			var at float32
			in := make([]float32, 1<<24)
			for base := uint64(0); base < 1<<32; base += uint64(len(in)) {
				for i := range in {
					in[i] = math.Float32frombits(uint32(base + uint64(i)))
				}
				if w, x := worstULPs(impl.f, c.ref, in); w > worst {
					worst, at = w, x
				}
			}
			t.Logf("%s %s: max error %.0f ulp (at %v) over all float32", c.name, impl.name, worst, at)
			if worst > impl.bound {
				t.Errorf("%s %s: %.0f ulps at %v", c.name, impl.name, worst, at)
			}
		}
	}
}

// TestSIMDMathSpecial checks exact results: NaN, infinities, signed
// zeros, tiny arguments, overflow and underflow.
func TestSIMDMathSpecial(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	big := float32(1e30)
	cases := []struct {
		name string
		f    func(d, a []float32)
		x    float32
		want float32
	}{
		{"tanh", tanh32Vec, nan, nan},
		{"tanh", tanh32Vec, -nan, nan},
		{"tanh", tanh32Vec, inf, 1},
		{"tanh", tanh32Vec, -inf, -1},
		{"tanh", tanh32Vec, 0, 0},
		{"tanh", tanh32Vec, negZero, negZero},
		{"tanh", tanh32Vec, 1e-30, 1e-30},
		{"tanh", tanh32Vec, -1e-30, -1e-30},
		{"tanh", tanh32Vec, math.SmallestNonzeroFloat32, math.SmallestNonzeroFloat32},
		{"tanh", tanh32Vec, 1e-4, 1e-4},
		{"tanh", tanh32Vec, 9.5, 1},
		{"tanh", tanh32Vec, -50, -1},
		{"tanh", tanh32Vec, math.MaxFloat32, 1},
		{"exp", exp32Vec, nan, nan},
		{"exp", exp32Vec, inf, inf},
		{"exp", exp32Vec, -inf, 0},
		{"exp", exp32Vec, 0, 1},
		{"exp", exp32Vec, negZero, 1},
		{"exp", exp32Vec, 1e-30, 1},
		{"exp", exp32Vec, 88.72284, inf},
		{"exp", exp32Vec, 89, inf},
		{"exp", exp32Vec, math.MaxFloat32, inf},
		{"exp", exp32Vec, -104, 0},
		{"exp", exp32Vec, -math.MaxFloat32, 0},
		{"exp", exp32Vec, -103.2789, math.SmallestNonzeroFloat32}, // e^x ≈ 1.5·2^-149
		{"logistic", logistic32Vec, nan, nan},
		{"logistic", logistic32Vec, inf, 1},
		{"logistic", logistic32Vec, -inf, 0},
		{"logistic", logistic32Vec, 0, 0.5},
		{"logistic", logistic32Vec, negZero, 0.5},
		{"logistic", logistic32Vec, 20, 1},
		{"logistic", logistic32Vec, -200, 0},
		{"logistic", logistic32Vec, -103.2789, math.SmallestNonzeroFloat32},
		{"sin", sin32Vec, nan, nan},
		{"sin", sin32Vec, -nan, nan},
		{"sin", sin32Vec, inf, nan},
		{"sin", sin32Vec, -inf, nan},
		{"sin", sin32Vec, 0, 0},
		{"sin", sin32Vec, negZero, negZero},
		{"sin", sin32Vec, 1e-30, 1e-30},
		{"sin", sin32Vec, -1e-30, -1e-30},
		{"sin", sin32Vec, math.SmallestNonzeroFloat32, math.SmallestNonzeroFloat32},
		{"sin", sin32Vec, -math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32},
		{"sin", sin32Vec, math.MaxFloat32, float32(math.Sin(math.MaxFloat32))},
		{"sin", sin32Vec, 0x1p20, float32(math.Sin(0x1p20))},
		{"sin", sin32Vec, -big, float32(math.Sin(-float64(big)))},
		{"cos", cos32Vec, nan, nan},
		{"cos", cos32Vec, -nan, nan},
		{"cos", cos32Vec, inf, nan},
		{"cos", cos32Vec, -inf, nan},
		{"cos", cos32Vec, 0, 1},
		{"cos", cos32Vec, negZero, 1},
		{"cos", cos32Vec, 1e-30, 1},
		{"cos", cos32Vec, -math.MaxFloat32, float32(math.Cos(math.MaxFloat32))},
		{"cos", cos32Vec, -0x1p20, float32(math.Cos(0x1p20))},
		{"cos", cos32Vec, big, float32(math.Cos(float64(big)))},
	}
	for _, c := range cases {
		d := []float32{42}
		c.f(d, []float32{c.x})
		got := d[0]
		ok := got == c.want && math.Signbit(float64(got)) == math.Signbit(float64(c.want))
		if c.want != c.want {
			ok = got != got
		}
		if !ok {
			t.Errorf("%s(%v) = %v, want %v", c.name, c.x, got, c.want)
		}
	}
	// erf's kernel works on groups of four (a shorter slice takes the
	// portable loop): each special value four times.
	for _, c := range []struct{ x, want float32 }{
		{nan, nan}, {-nan, nan}, {inf, 1}, {-inf, -1}, {0, 0}, {negZero, negZero},
		{1e-30, float32(1e-30 * 2 / math.SqrtPi)}, {-1e-30, float32(-1e-30 * 2 / math.SqrtPi)},
		{math.SmallestNonzeroFloat32, math.SmallestNonzeroFloat32}, {6, 1}, {-7, -1},
		{math.MaxFloat32, 1}, {-math.MaxFloat32, -1}, {1, float32(math.Erf(1))}, {-1, float32(math.Erf(-1))},
	} {
		d := make([]float32, 4)
		erf32Vec(d, []float32{c.x, c.x, c.x, c.x})
		for _, got := range d {
			ok := got == c.want && math.Signbit(float64(got)) == math.Signbit(float64(c.want))
			if c.want != c.want {
				ok = got != got
			}
			if !ok {
				t.Errorf("erf(%v) = %v, want %v", c.x, got, c.want)
			}
		}
	}
	// GELU and its derivative, in groups of four likewise.
	for _, c := range []struct {
		name    string
		f       func(d, a []float32)
		x, want float32
	}{
		{"gelu", gelu32Vec, nan, nan}, {"gelu", gelu32Vec, inf, inf}, {"gelu", gelu32Vec, -inf, negZero},
		{"gelu", gelu32Vec, 0, 0}, {"gelu", gelu32Vec, negZero, negZero}, {"gelu", gelu32Vec, math.MaxFloat32, math.MaxFloat32},
		{"gelu", gelu32Vec, -math.MaxFloat32, negZero}, {"gelu", gelu32Vec, 1e-30, 0.5e-30}, {"gelu", gelu32Vec, 20, 20},
		{"gelu_grad", geluGrad32Vec, nan, nan}, {"gelu_grad", geluGrad32Vec, inf, 1}, {"gelu_grad", geluGrad32Vec, -inf, negZero},
		{"gelu_grad", geluGrad32Vec, 0, 0.5}, {"gelu_grad", geluGrad32Vec, math.MaxFloat32, 1}, {"gelu_grad", geluGrad32Vec, -math.MaxFloat32, negZero},
		// The tanh approximation: x and x·0 beyond the clamp (−Inf·0 is
		// NaN, as torch's formula gives), its derivative 1 and −0.
		{"gelu_tanh", geluTanh32Vec, nan, nan}, {"gelu_tanh", geluTanh32Vec, inf, inf}, {"gelu_tanh", geluTanh32Vec, -inf, nan},
		{"gelu_tanh", geluTanh32Vec, 0, 0}, {"gelu_tanh", geluTanh32Vec, negZero, negZero}, {"gelu_tanh", geluTanh32Vec, math.MaxFloat32, math.MaxFloat32},
		{"gelu_tanh", geluTanh32Vec, -math.MaxFloat32, negZero}, {"gelu_tanh", geluTanh32Vec, -20, negZero}, {"gelu_tanh", geluTanh32Vec, 20, 20},
		{"gelu_tanh", geluTanh32Vec, 1e-30, 0.5e-30},
		{"gelu_tanh_grad", geluTanhGrad32Vec, nan, nan}, {"gelu_tanh_grad", geluTanhGrad32Vec, inf, 1}, {"gelu_tanh_grad", geluTanhGrad32Vec, -inf, negZero},
		{"gelu_tanh_grad", geluTanhGrad32Vec, 0, 0.5}, {"gelu_tanh_grad", geluTanhGrad32Vec, 20, 1}, {"gelu_tanh_grad", geluTanhGrad32Vec, -20, negZero},
		{"gelu_tanh_grad", geluTanhGrad32Vec, math.MaxFloat32, 1}, {"gelu_tanh_grad", geluTanhGrad32Vec, -math.MaxFloat32, negZero},
	} {
		d := make([]float32, 4)
		c.f(d, []float32{c.x, c.x, c.x, c.x})
		for _, got := range d {
			ok := got == c.want && math.Signbit(float64(got)) == math.Signbit(float64(c.want))
			if c.want != c.want {
				ok = got != got
			}
			if !ok {
				t.Errorf("%s(%v) = %v, want %v", c.name, c.x, got, c.want)
			}
		}
	}
	// Subnormal results of exp and logistic, checked against the
	// reference within the bound.
	for x := float32(-103.9); x < -87; x += 0.0625 {
		for _, c := range mathCases[:2] {
			d := []float32{0}
			c.vec(d, []float32{x})
			if want := float32(c.ref(float64(x))); ulps32(d[0], want) > simdULPs {
				t.Errorf("%s(%v) = %v, want %v", c.name, x, d[0], want)
			}
		}
	}
}

// TestSIMDMathLengths checks every length up to a few blocks (full
// blocks and masked tails), that nothing past len(d) is written, that the
// result does not depend on an element's position, and in-place use.
func TestSIMDMathLengths(t *testing.T) {
	const guard = float32(-12345)
	for _, c := range mathCases {
		src := make([]float32, 70)
		for i := range src {
			src[i] = float32(i)*0.37 - 11
		}
		// Reference: each element alone.
		want := make([]float32, len(src))
		for i := range src {
			c.vec(want[i:i+1], src[i:i+1])
		}
		for n := range len(src) - 5 {
			for off := range 3 {
				buf := slices.Repeat([]float32{guard}, n+off+9)
				d := buf[off : off+n]
				c.vec(d, src[:n+5]) // a may be longer than d
				for i := range d {
					if d[i] != want[i] {
						t.Fatalf("%s n=%d off=%d: d[%d] = %v, want %v", c.name, n, off, i, d[i], want[i])
					}
				}
				for i, g := range buf {
					if (i < off || i >= off+n) && g != guard {
						t.Fatalf("%s n=%d off=%d: wrote buf[%d] outside d", c.name, n, off, i)
					}
				}
			}
			inPlace := slices.Clone(src[:n])
			c.vec(inPlace, inPlace)
			if !slices.Equal(inPlace, want[:n]) {
				t.Fatalf("%s n=%d in place: %v, want %v", c.name, n, inPlace, want[:n])
			}
		}
	}
}

// TestSinCosBlocks checks the SIMD sin and cos against the portable loops
// for every length up to 40, with and without an argument the kernel
// leaves to the portable loop (NaN, ±Inf, |x| ≥ 2^20) at each position:
// the results agree within the bound (exactly for those arguments),
// nothing past len(d) is written, and in-place use gives the same.
func TestSinCosBlocks(t *testing.T) {
	const guard = float32(-12345)
	slow := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0x1p20, -0x1p20,
		math.Nextafter32(0x1p20, 0), 3e9, -math.MaxFloat32}
	for _, c := range mathCases {
		if c.name != "sin" && c.name != "cos" {
			continue
		}
		for n := range 41 {
			for pos := -1; pos < n; pos++ {
				src := make([]float32, n)
				for i := range src {
					src[i] = float32(i)*0.73 - 13
				}
				if pos >= 0 {
					src[pos] = slow[pos%len(slow)]
				}
				want := make([]float32, n)
				c.scalar(want, src)
				buf := slices.Repeat([]float32{guard}, n+8)
				d := buf[4 : 4+n]
				c.vec(d, src)
				for i := range d {
					bound := float64(simdULPs)
					if i == pos {
						bound = 0
					}
					if ulps32(d[i], want[i]) > bound {
						t.Fatalf("%s n=%d slow at %d: d[%d] = %v, want %v (x = %v)", c.name, n, pos, i, d[i], want[i], src[i])
					}
				}
				for i, g := range buf {
					if (i < 4 || i >= 4+n) && g != guard {
						t.Fatalf("%s n=%d: wrote buf[%d] outside d", c.name, n, i)
					}
				}
				inPlace := slices.Clone(src)
				c.vec(inPlace, inPlace)
				if !slices.EqualFunc(inPlace, d, sameBits[float32]) {
					t.Fatalf("%s n=%d slow at %d in place: %v, want %v", c.name, n, pos, inPlace, d)
				}
			}
		}
	}
}

// arithValues64 are operands for the arithmetic tests: ordinary values,
// signed zeros, infinities, NaN, extremes and subnormals.
var arithValues64 = []float64{1.5, -2.25, 0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
	3, 1e-300, 5e-324, math.MaxFloat64, -7.125, 1e30, 0.1, -0.3, 2}

var arithValues32 = []float32{1.5, -2.25, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)),
	float32(math.Inf(-1)), float32(math.NaN()), 3, 1e-40, math.SmallestNonzeroFloat32, math.MaxFloat32,
	-7.125, 1e30, 0.1, -0.3, 2}

// sameBits reports whether x and y are equal or both NaN.
func sameBits[T float32 | float64](x, y T) bool {
	if x != x || y != y {
		return x != x && y != y
	}
	return x == y && math.Signbit(float64(x)) == math.Signbit(float64(y))
}

type arithKernels[T float32 | float64] struct {
	name     string
	vv, vvGo func(d, a, b []T)
	vs, vsGo func(d, a []T, s T)
	sv, svGo func(d []T, s T, b []T)
}

func arith32() []arithKernels[float32] {
	return []arithKernels[float32]{
		{"add", addVV32Vec, addVV[float32], addVS32Vec, addVS[float32], nil, nil},
		{"sub", subVV32Vec, subVV[float32], subVS32Vec, subVS[float32], subSV32Vec, subSV[float32]},
		{"mul", mulVV32Vec, mulVV[float32], mulVS32Vec, mulVS[float32], nil, nil},
		{"div", divVV32Vec, divVV[float32], divVS32Vec, divVS[float32], divSV32Vec, divSV[float32]},
	}
}

func arith64() []arithKernels[float64] {
	return []arithKernels[float64]{
		{"add", addVV64Vec, addVV[float64], addVS64Vec, addVS[float64], nil, nil},
		{"sub", subVV64Vec, subVV[float64], subVS64Vec, subVS[float64], subSV64Vec, subSV[float64]},
		{"mul", mulVV64Vec, mulVV[float64], mulVS64Vec, mulVS[float64], nil, nil},
		{"div", divVV64Vec, divVV[float64], divVS64Vec, divVS[float64], divSV64Vec, divSV[float64]},
	}
}

// TestSIMDArith checks the arithmetic kernels bit for bit against the Go
// loops, for every length up to several unrolled blocks, with guards
// around the destination, on special values and in place.
func TestSIMDArith(t *testing.T) {
	t.Run("float32", func(t *testing.T) { testArith(t, arith32(), arithValues32) })
	t.Run("float64", func(t *testing.T) { testArith(t, arith64(), arithValues64) })
}

func testArith[T float32 | float64](t *testing.T, ks []arithKernels[T], vals []T) {
	const maxN = 100
	a := make([]T, maxN)
	b := make([]T, maxN)
	for i := range a {
		a[i] = vals[i%len(vals)]
		b[i] = vals[(i*7+3)%len(vals)]
	}
	check := func(what string, n int, run, ref func(d []T)) {
		t.Helper()
		const guard = -12345
		buf := slices.Repeat([]T{guard}, n+8)
		d := buf[4 : 4+n]
		run(d)
		want := make([]T, n)
		ref(want)
		for i := range d {
			if !sameBits(d[i], want[i]) {
				t.Fatalf("%s n=%d: d[%d] = %v, want %v", what, n, i, d[i], want[i])
			}
		}
		for i, g := range buf {
			if (i < 4 || i >= 4+n) && g != guard {
				t.Fatalf("%s n=%d: wrote outside d at %d", what, n, i-4)
			}
		}
	}
	for _, k := range ks {
		for n := range maxN {
			an, bn := a[:n], b[:n]
			check(k.name+" vv", n, func(d []T) { k.vv(d, an, bn) }, func(d []T) { k.vvGo(d, an, bn) })
			for _, s := range vals {
				what := fmt.Sprintf("%s vs %v", k.name, s)
				check(what, n, func(d []T) { k.vs(d, an, s) }, func(d []T) { k.vsGo(d, an, s) })
				if k.sv != nil {
					what := fmt.Sprintf("%s sv %v", k.name, s)
					check(what, n, func(d []T) { k.sv(d, s, bn) }, func(d []T) { k.svGo(d, s, bn) })
				}
			}
			// In place, d aliasing a.
			check(k.name+" vv in place", n, func(d []T) { copy(d, an); k.vv(d, d, bn) },
				func(d []T) { k.vvGo(d, an, bn) })
		}
	}
}

// BenchmarkSIMDLoops times the kernels alone (no dispatch, no allocation)
// over 1<<20 float32 elements (4 MiB, as in the elementwise benchmarks)
// and over 1<<12 (L1-resident), SIMD against portable, in ns/elem.
func BenchmarkSIMDLoops(b *testing.B) {
	for _, n := range []int{1 << 12, 1 << 20} {
		x := make([]float32, n)
		y := make([]float32, n)
		for i := range x {
			x[i] = float32(i%8000)/1000 - 4
			y[i] = 1 + float32(i%1000)/1000
		}
		d := make([]float32, n)
		loops := []struct {
			name string
			f    func()
		}{
			{"tanh/simd", func() { tanh32Vec(d, x) }},
			{"tanh/portable", func() { tanh32Scalar(d, x) }},
			{"exp/simd", func() { exp32Vec(d, x) }},
			{"exp/portable", func() { exp32Scalar(d, x) }},
			{"logistic/simd", func() { logistic32Vec(d, x) }},
			{"logistic/portable", func() { logistic32Scalar(d, x) }},
			{"sin/simd", func() { sin32Vec(d, x) }},
			{"sin/portable", func() { sin32Scalar(d, x) }},
			{"sin/math", func() { sinLoop(d, x) }},
			{"cos/simd", func() { cos32Vec(d, x) }},
			{"cos/portable", func() { cos32Scalar(d, x) }},
			{"add/simd", func() { addVV32Vec(d, x, y) }},
			{"add/portable", func() { addVV(d, x, y) }},
			{"mul_scalar/simd", func() { mulVS32Vec(d, x, 2) }},
			{"mul_scalar/portable", func() { mulVS(d, x, 2) }},
			{"div/simd", func() { divVV32Vec(d, x, y) }},
			{"div/portable", func() { divVV(d, x, y) }},
			{"copy", func() { copy(d, x) }},
		}
		for _, l := range loops {
			b.Run(fmt.Sprintf("%s/n=%d", l.name, n), func(b *testing.B) {
				for b.Loop() {
					l.f()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/elem")
			})
		}
	}
}

// TestSumWiden32 checks the float32 sum kernel (float64 accumulators)
// against a sequential float64 sum at lengths around its blocks of 16
// and its chunks, within the bound of float64 summation in any order.
func TestSumWiden32(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 15, 16, 17, 31, 33, 4095, 4096, 4097, 10000, 1 << 16} {
		s := make([]float32, n)
		want, mag := 0.0, 0.0
		for i := range s {
			s[i] = float32(r.NormFloat64() * math.Exp(4*r.NormFloat64()))
			want += float64(s[i])
			mag += math.Abs(float64(s[i]))
		}
		got := sumWiden32(0.5, s)
		if d := math.Abs(got - (want + 0.5)); d > float64(n+1)*0x1p-52*(mag+0.5) {
			t.Errorf("n=%d: sum %v, want %v (difference %v)", n, got, want+0.5, d)
		}
	}
}

// TestGELUGroupsIndependent checks that GELU's and GELU′'s float32
// kernels give each element the same bits whatever the other lanes of
// its group (four or eight for GELU, eight or sixteen for GELU′) are: a
// GELU group whose lanes are all small (|x| < 2√2, or NaN) skips the
// erfc half, which a group with one large lane computes and blends away
// (simd64_amd64.s, GELUSMALL/GELULARGE); a GELU′ group with a lane past
// |x| = 4 has that lane replaced (gelugrad_amd64.go).
func TestGELUGroupsIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 1.41, 1.4142135, 1.4142137, -1.4142137, 3, -3, 20, -20, 1e-30,
		2.828427, 2.8284273, -2.8284273, -2.828427, 2.9, -2.9,
		4, -4, 3.9999998, -3.9999998, 4.0000005, -4.0000005, 2.9999998, 1.0000001,
		float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	for range 2000 {
		vals = append(vals, float32(r.NormFloat64()*1.5))
	}
	const group = 16
	for _, k := range []struct {
		name string
		f    func(d, a []float32)
	}{{"gelu", gelu32Vec}, {"gelu_grad", geluGrad32Vec}} {
		alone := make([]float32, group*len(vals))
		for i, v := range vals {
			for j := range group {
				alone[group*i+j] = v
			}
		}
		want := make([]float32, len(alone))
		k.f(want, alone)
		// Each value beside others drawn at random from the list.
		mixed := make([]float32, len(alone))
		at := make([]int, len(alone))
		for i := range mixed {
			at[i] = r.IntN(len(vals))
			mixed[i] = vals[at[i]]
		}
		got := make([]float32, len(mixed))
		k.f(got, mixed)
		for i, x := range mixed {
			w := want[group*at[i]]
			if math.Float32bits(got[i]) != math.Float32bits(w) && !(got[i] != got[i] && w != w) {
				t.Fatalf("%s(%v) = %v beside %v, %v alone", k.name, x, got[i], mixed[i&^(group-1):i&^(group-1)+group], w)
			}
		}
	}
}

// TestSIMDNeg checks negation's kernels bit for bit against negLoop (the
// sign bit flipped, NaNs' too) for every length up to several unrolled
// blocks, with guards around the destination, and in place.
func TestSIMDNeg(t *testing.T) {
	t.Run("float32", func(t *testing.T) { testNeg(t, neg32Vec, arithValues32) })
	t.Run("float64", func(t *testing.T) { testNeg(t, neg64Vec, arithValues64) })
}

func testNeg[T float32 | float64](t *testing.T, neg func(d, a []T), vals []T) {
	const maxN = 100
	a := make([]T, maxN)
	for i := range a {
		a[i] = vals[i%len(vals)]
	}
	for n := range maxN {
		for _, inPlace := range []bool{false, true} {
			const guard = -12345
			buf := slices.Repeat([]T{guard}, n+8)
			d := buf[4 : 4+n]
			if inPlace {
				copy(d, a[:n])
				neg(d, d)
			} else {
				neg(d, a[:n])
			}
			want := make([]T, n)
			negLoop(want, a[:n])
			for i := range d {
				if math.Float64bits(float64(d[i])) != math.Float64bits(float64(want[i])) { // NaNs' signs too
					t.Fatalf("n=%d in place %v: -%v = %v, want %v", n, inPlace, a[i], d[i], want[i])
				}
			}
			for i, g := range buf {
				if (i < 4 || i >= 4+n) && g != guard {
					t.Fatalf("n=%d: wrote outside d at %d", n, i-4)
				}
			}
		}
	}
}

// TestMaxSeg32 compares maxSeg32 (the AVX2 kernel where the CPU has it)
// with the Go loop maxSeg bit for bit: runs of every length to 100 and
// across the kernel's chunks, of values among which are both zeros,
// infinities, subnormals and NaNs of either sign and several payloads,
// from several starting values (the row's first element, -Inf, zeros,
// a NaN).
func TestMaxSeg32(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 92))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(1), math.Float32frombits(0x80000001), math.MaxFloat32, -math.MaxFloat32,
		math.Float32frombits(0x7fc00000), math.Float32frombits(0xffc00000), math.Float32frombits(0x7f800001), math.Float32frombits(0xff812345)}
	draw := func(n int, nanRate, specialRate float64) []float32 {
		s := make([]float32, n)
		for i := range s {
			switch r := rng.Float64(); {
			case r < nanRate:
				s[i] = special[8+rng.IntN(4)]
			case r < nanRate+specialRate:
				s[i] = special[rng.IntN(8)]
			default:
				s[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(10)-5)))
			}
		}
		return s
	}
	lengths := []int{}
	for n := range 101 {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, 4095, 4096, 4113, 12293) // across the kernel's chunks (simdChunk)
	for _, n := range lengths {
		for _, rates := range [][2]float64{{0, 0}, {0, 0.3}, {0.01, 0.2}, {0, 1}} {
			for range 4 {
				s := draw(n, rates[0], rates[1])
				if rates[0] > 0 && n > 20 && rng.IntN(2) == 0 {
					s[n-1-rng.IntN(8)] = special[8+rng.IntN(4)] // a NaN in the tail
				}
				accs := []float32{float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), math.Float32frombits(0xffc00000)}
				if n > 0 {
					accs = append(accs, s[0])
				}
				for _, acc := range accs {
					got, want := maxSeg32(acc, s), maxSeg(acc, s)
					if math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("n=%d acc=%v: maxSeg32 = %v (%#x), the Go loop %v (%#x)", n, acc, got, math.Float32bits(got), want, math.Float32bits(want))
					}
				}
			}
		}
	}
}
