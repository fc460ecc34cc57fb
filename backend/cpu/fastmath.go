package cpu

import (
	"math"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Fast float32 transcendental functions.
//
// exp, logistic, tanh, sin and cos run as AVX2+FMA assembly on CPUs that
// have it (simd_amd64.s, 8 lanes: exp, logistic and tanh evaluate in
// float32 with FMA, sin and cos in float64 like the scalar loops; all are
// within 1 ulp over every float32 input); the scalar loops below are the
// portable path, used on other CPUs and under the purego build tag.
//
// Each scalar loop converts its float32 operand to float64, evaluates a
// range reduction and a short polynomial or rational approximation in
// float64 arithmetic, and rounds once to float32. Scalar float64 arithmetic costs
// the same as float32 arithmetic, keeps the evaluation's rounding error
// far below a float32 ulp, and handles float32 subnormal results and
// overflow for free: the float64 value is normal, and the final
// conversion rounds it to a subnormal, zero or ±Inf exactly as a
// correctly rounded function would. The approximation errors are about
// 1e-9 relative (tanh 3e-8), so results are within one float32 ulp of the
// correctly rounded value; elementwise_test.go measures this against
// math.* over a dense sweep of float32 inputs.
//
// Performance notes (the Go compiler does not vectorize): coefficients
// live in package-level arrays so that each multiply-add reads its
// coefficient as a memory operand (a constant would be rematerialized
// with an extra load instruction on every use); operands are range
// checked with one integer comparison on their bits, diverting NaN,
// ±Inf and out-of-range values to a slow path that is never taken for
// ordinary data; loops are not unrolled (the register allocator then
// spills).
//
// exp, expm1 and logistic reduce x = (32k + j)·ln2/32 + r with |r| ≤
// ln2/64, so e^x = 2^k · 2^(j/32) · e^r with 2^(j/32) from a 32-entry
// table and e^r - 1 from its Taylor polynomial (degree 3 for exp, whose
// truncation error is r⁴/24 < 6e-10; degree 4 for expm1, whose result
// near 0 is e^r - 1 itself and needs relative accuracy, r⁴/120 < 1.2e-10).
//
// log writes x = 2^e · m with m in [1, 2) and m ≈ 1 + j/128 from its top
// mantissa bits; with c = 1/(1 + j/128) from a table, ln x = e·ln2 -
// ln c + log1p(m·c - 1), 0 ≤ m·c - 1 < 1/128, and log1p from its Taylor
// polynomial of degree 5 (truncation r⁶/6 < 1e-15 absolute, small enough
// even where e·ln2 and -ln c cancel for x just below 1).
//
// tanh(x) = x·P(x²)/Q(x²) on |x| ≤ 9.3 with P and Q of degree 4, a
// near-minimax fit of relative error (max 2.9e-8) computed for peel with
// mpmath at 40 digits (Lawson-reweighted linearized least squares on a
// dense grid, P(0) = Q(0) = 1 imposed so that tanh(x) = x for tiny x);
// beyond 9.3 tanh rounds to ±1 in float32. The coefficients below are
// that fit divided by Q's leading coefficient, making Q monic.
//
// sin and cos reduce |x| = j·π/2 + r with j = round(|x|·2/π) and |r| ≤
// π/4 (Cody-Waite, π/2 in three parts, exact products for |x| < 2^20;
// larger arguments, NaN and ±Inf take math.Sin and math.Cos), evaluate
// sin r = r + r³·S(r²) or cos r = 1 + r²·C(r²) by the parity of j (j + 1
// for cos) with S and C Taylor polynomials of degree 4 (truncation errors
// below 2.3e-11 and 1.6e-10 relative on |r| ≤ π/4), negate by bit 1 of
// j (j + 1), and for sin put back the sign of x, so sin(-0) = -0. The
// float32 closest to a multiple of π/2 leaves r far above the reduction's
// rounding errors, so r, and the result, keep their relative accuracy.

const (
	log2e = 1.4426950408889634 // 1/ln 2
	ln2   = 0.6931471805599453
	// roundMagic rounds a float64 of magnitude below 2^51 to an integer
	// when added and subtracted; the integer is also in the low bits of
	// the sum's representation.
	roundMagic = 0x1.8p52

	expTableBits = 5
	expTableLen  = 1 << expTableBits
	// expLimitBits is the representation of float32(104): e^±104 is finite
	// in float64 and rounds to +Inf or 0 in float32.
	expLimitBits = 0x42d00000

	logTableBits = 7
	logTableLen  = 1 << logTableBits

	// tanhLimitBits is the representation of float32(9.3).
	tanhLimitBits = 0x4114cccd
	tanhLimit     = 9.3
)

// expTable[j] holds the representation of 2^(j/32).
var expTable = func() (t [expTableLen]uint64) {
	for j := range t {
		t[j] = math.Float64bits(math.Exp2(float64(j) / expTableLen))
	}
	return t
}()

// expC holds 32/ln2, roundMagic, ln2/32 and the Taylor coefficients of
// e^r - 1: 1, 1/2, 1/6, 1/24.
var expC = [7]float64{expTableLen / ln2, roundMagic, ln2 / expTableLen, 1, 1.0 / 2, 1.0 / 6, 1.0 / 24}

// logTable[2j] = c_j = 1/(1 + j/128) and logTable[2j+1] = -ln c_j.
var logTable = func() (t [2 * logTableLen]float64) {
	for j := range logTableLen {
		c := 1 / (1 + float64(j)/logTableLen)
		t[2*j], t[2*j+1] = c, -math.Log(c)
	}
	return t
}()

// logC holds ln2, 1 and the Taylor coefficients of (log1p(r) - r)/r²:
// -1/2, 1/3, -1/4, 1/5.
var logC = [6]float64{ln2, 1, -1.0 / 2, 1.0 / 3, -1.0 / 4, 1.0 / 5}

// tanhC holds the numerator coefficients p0…p4 and the monic
// denominator's q0…q3 of tanh(x)/x ≈ P(x²)/Q(x²), Q(t) = t⁴ + q3 t³ + … .
// The fit's coefficients (with P(0) = Q(0) = 1) are in tanhFit.
var tanhC = func() (c [9]float64) {
	p, q := tanhFit[0], tanhFit[1]
	for i := range 5 {
		c[i] = p[i] / q[4]
	}
	for i := range 4 {
		c[5+i] = q[i] / q[4]
	}
	return c
}()

var tanhFit = [2][5]float64{
	{1, 0.13364419479908005976, 0.0034757708104940656055, 0.000020279793473599412616, 1.2893661005238559329e-8},
	{1, 0.46697737139745759016, 0.025801826915821797773, 0.0003253080728218206674, 7.5888065398970417594e-7},
}

// clampAbs limits x to [-lim, lim], keeping NaN.
func clampAbs(x, lim float32) float32 {
	if x > lim {
		return lim
	}
	if x < -lim {
		return -lim
	}
	return x
}

// exp32Loop sets d[i] = e^a[i], with the SIMD kernel where the CPU has one
// (simd_amd64.go) and exp32Scalar otherwise. len(a) ≥ len(d).
func exp32Loop(d, a []float32) {
	if haveSIMD {
		exp32Vec(d, a)
		return
	}
	exp32Scalar(d, a)
}

// exp32Scalar sets d[i] = e^a[i]. len(a) ≥ len(d).
func exp32Scalar(d, a []float32) {
	a = a[:len(d)]
	for i, x := range a {
		if math.Float32bits(x)&0x7fffffff > expLimitBits { // NaN, ±Inf, |x| > 104
			x = clampAbs(x, 104)
		}
		z := float64(x)
		// n = round(32 z/ln2) = 32k + j, held in t's low bits.
		t := z*expC[0] + expC[1]
		r := z - (t-expC[1])*expC[2]
		n := math.Float64bits(t)
		s := math.Float64frombits(expTable[n&(expTableLen-1)] + (n>>expTableBits)<<52)
		p := ((expC[5]*r+expC[4])*r + expC[3]) * r
		d[i] = float32(s + s*p)
	}
}

// expm1Loop32 sets d[i] = e^a[i] - 1, accurate in relative terms near 0.
func expm1Loop32(d, a []float32) {
	a = a[:len(d)]
	for i, x := range a {
		if math.Float32bits(x)&0x7fffffff > expLimitBits {
			x = clampAbs(x, 104)
		}
		z := float64(x)
		t := z*expC[0] + expC[1]
		r := z - (t-expC[1])*expC[2]
		n := math.Float64bits(t)
		s := math.Float64frombits(expTable[n&(expTableLen-1)] + (n>>expTableBits)<<52)
		p := r * (expC[3] + r*((expC[6]*r+expC[5])*r+expC[4]))
		// e^z - 1 = s(e^r - 1) - (1 - s); for n = 0 this is e^r - 1
		// itself (with the sign of a zero r, which subtracting +0 keeps).
		d[i] = float32(s*p - (expC[3] - s))
	}
}

// logistic32Loop sets d[i] = 1/(1+e^-a[i]), with the SIMD kernel where
// the CPU has one (simd_amd64.go) and logistic32Scalar otherwise.
// len(a) ≥ len(d).
func logistic32Loop(d, a []float32) {
	if haveSIMD {
		logistic32Vec(d, a)
		return
	}
	logistic32Scalar(d, a)
}

// logistic32Scalar sets d[i] = 1/(1+e^-a[i]), accurate in relative terms for
// every input (e^-x is computed directly, with no cancellation).
func logistic32Scalar(d, a []float32) {
	a = a[:len(d)]
	for i, x := range a {
		if math.Float32bits(x)&0x7fffffff > expLimitBits {
			x = clampAbs(x, 104)
		}
		z := -float64(x)
		t := z*expC[0] + expC[1]
		r := z - (t-expC[1])*expC[2]
		n := math.Float64bits(t)
		s := math.Float64frombits(expTable[n&(expTableLen-1)] + (n>>expTableBits)<<52)
		p := ((expC[5]*r+expC[4])*r + expC[3]) * r
		d[i] = float32(expC[3] / (expC[3] + (s + s*p)))
	}
}

// tanh32Loop sets d[i] = tanh(a[i]), with the SIMD kernel where the CPU
// has one (simd_amd64.go) and tanh32Scalar otherwise. len(a) ≥ len(d).
func tanh32Loop(d, a []float32) {
	if haveSIMD {
		tanh32Vec(d, a)
		return
	}
	tanh32Scalar(d, a)
}

// tanh32Scalar sets d[i] = tanh(a[i]). len(a) ≥ len(d).
func tanh32Scalar(d, a []float32) {
	a = a[:len(d)]
	for i, x := range a {
		if math.Float32bits(x)&0x7fffffff > tanhLimitBits {
			x = clampAbs(x, tanhLimit)
		}
		z := float64(x)
		t := z * z
		p := (((tanhC[4]*t+tanhC[3])*t+tanhC[2])*t+tanhC[1])*t + tanhC[0]
		q := (((t+tanhC[8])*t+tanhC[7])*t+tanhC[6])*t + tanhC[5]
		d[i] = float32(z * p / q)
	}
}

// log32Loop sets d[i] = ln a[i] (-Inf for ±0, NaN below 0).
func log32Loop(d, a []float32) {
	a = a[:len(d)]
	for i, x := range a {
		if math.Float32bits(x)-1 >= 0x7f7fffff { // not positive and finite
			d[i] = float32(math.Log(float64(x)))
			continue
		}
		// float64(x) is normal even for subnormal x.
		b := math.Float64bits(float64(x))
		e := float64(int64(b>>52) - 1023)
		j := 2 * ((b >> (52 - logTableBits)) & (logTableLen - 1))
		m := math.Float64frombits(b&(1<<52-1) | 0x3ff0000000000000)
		r := m*logTable[j] - logC[1]
		p := r + r*r*(((logC[5]*r+logC[4])*r+logC[3])*r+logC[2])
		d[i] = float32(e*logC[0] + logTable[j+1] + p)
	}
}

// sinLimitBits is the representation of float32(2^20): below it the
// reduction of sin32Scalar and the SIMD kernel is accurate; NaN, ±Inf and
// larger arguments take math.Sin and math.Cos.
const sinLimitBits = 0x49800000

// trigC holds 2/π, roundMagic and π/2 in three parts: the first two have
// 33 significant bits, so that j·pio2[0] and j·pio2[1] are exact for
// j < 2^20, and the third is the rest rounded to float64 (it leaves an
// error below 2^-119 in π/2).
var trigC = [5]float64{2 / math.Pi, roundMagic, 0x1.921fb544p0, 0x1.0b4611a6p-34, 0x1.3198a2e037073p-69}

// sinCosC[0] holds the Taylor coefficients of (sin r - r)/r³ and
// sinCosC[1] those of (cos r - 1)/r², both as polynomials in r²: -1/3!,
// 1/5!, … -1/11! and -1/2!, 1/4!, … -1/10!. On |r| ≤ π/4 their truncation
// errors are below 2.3e-11 and 1.6e-10 relative.
var sinCosC = [2][5]float64{
	{-1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800},
	{-1.0 / 2, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800},
}

// sinCosA[k] holds u and v of the polynomial's leading term u + v·r: r
// for sin (k = 0), 1 for cos (k = 1).
var sinCosA = [2][2]float64{{0, 1}, {1, 0}}

// signs[k] is (-1)^k.
var signs = [2]float64{1, -1}

// sin32Loop sets d[i] = sin a[i], with the SIMD kernel where the CPU has
// one (simd_amd64.go) and sin32Scalar otherwise. len(a) ≥ len(d).
func sin32Loop(d, a []float32) {
	if haveSIMD {
		sin32Vec(d, a)
		return
	}
	sin32Scalar(d, a)
}

// cos32Loop sets d[i] = cos a[i], like sin32Loop.
func cos32Loop(d, a []float32) {
	if haveSIMD {
		cos32Vec(d, a)
		return
	}
	cos32Scalar(d, a)
}

// sin32Scalar sets d[i] = sin a[i]. len(a) ≥ len(d).
func sin32Scalar(d, a []float32) { sinCos32(d, a, 0) }

// cos32Scalar sets d[i] = cos a[i]. len(a) ≥ len(d).
func cos32Scalar(d, a []float32) { sinCos32(d, a, 1) }

// sinCos32 sets d[i] = sin a[i] (q = 0) or cos a[i] = sin(a[i] + π/2)
// (q = 1). It reduces |x| = j·π/2 + r with j = round(|x|·2/π) and
// |r| ≤ π/4 (the sign of x is put back last for sin, so sin(-0) = -0);
// sin(|x| + q·π/2) is then ±sin r or ±cos r as j + q is even or odd,
// negated when bit 1 of j + q is set. r is exact up to one rounding:
// |x| - j·pio2[0] is exact (a multiple of 2^-32 below 1) and the
// products with the other parts are rounded far below r's ulp, even for
// the float32 closest to a multiple of π/2.
func sinCos32(d, a []float32, q uint64) {
	a = a[:len(d)]
	xs := 1 - q // whether the sign of x carries to the result
	for i, x := range a {
		b := math.Float32bits(x)
		if b&0x7fffffff >= sinLimitBits { // NaN, ±Inf, |x| ≥ 2^20
			if q == 0 {
				d[i] = float32(math.Sin(float64(x)))
			} else {
				d[i] = float32(math.Cos(float64(x)))
			}
			continue
		}
		z := float64(math.Float32frombits(b & 0x7fffffff))
		t := z*trigC[0] + trigC[1] // j in the low bits
		j := t - trigC[1]
		r := z - j*trigC[2] - j*trigC[3] - j*trigC[4]
		n := math.Float64bits(t) + q
		k := n & 1
		c := &sinCosC[k]
		s := r * r
		p := s * ((((c[4]*s+c[3])*s+c[2])*s+c[1])*s + c[0])
		u := sinCosA[k][0] + sinCosA[k][1]*r
		d[i] = float32((u + u*p) * signs[(n>>1^(uint64(b>>31)&xs))&1])
	}
}

// erf in float32 (erf32Scalar): odd, so it evaluates |x| and puts the sign
// back. Below 1/16 it is x·(c0 + c1x² + c2x⁴ + c3x⁶), the Taylor series
// (the first term left out, x⁹/216·2/√π, is below 1.5e-12 relative).
// On [1/16, erfLimit) it is a Taylor polynomial of degree 3 about the
// midpoint m of one of erfIntervals equal intervals (half-width h =
// erfLimit/(2·erfIntervals) ≈ 0.002), its coefficients erf⁽ᵏ⁾(m)/k!
// tabulated at init from erf'(x) = 2/√π·e^(-x²) and erf⁽ᵏ⁺¹⁾(x) =
// 2/√π·(-1)ᵏHₖ(x)·e^(-x²) (Hₖ the physicists' Hermite polynomials),
// evaluated by Estrin's scheme (a short dependency chain: the loop is
// bound by its latency, not its arithmetic); the truncation error
// |erf⁽⁴⁾|·h⁴/24 is below 3e-12, far under a float32 ulp of erf ≥
// 0.07. From erfLimit = 4 on, erf rounds to ±1 in float32 (erfc(4) ≈
// 1.5e-8 is below half an ulp of 1). It replaces math.Erf (about 25 ns
// an element) with a table lookup and 3 multiply-adds; on CPUs with
// AVX2 and FMA the SIMD kernel (erf32AVX2) runs instead.
const (
	erfLimit     = 4
	erfIntervals = 1024
	// erfLimitBits is the representation of float32(4).
	erfLimitBits = 0x40800000
	// erfSmallBits is the representation of float32(1/16).
	erfSmallBits = 0x3d800000
)

// erfTable[4j+k] is erf⁽ᵏ⁾(mⱼ)/k! for the midpoint mⱼ = (j + ½)·w of
// interval j (w = erfLimit/erfIntervals), k = 0…3.
var erfTable = func() (t [4 * erfIntervals]float64) {
	w := float64(erfLimit) / erfIntervals
	c := 2 / math.Sqrt(math.Pi)
	for j := range erfIntervals {
		m := (float64(j) + 0.5) * w
		e := c * math.Exp(-m*m)
		// Hermite polynomials H₀…H₂ at m; erf⁽ᵏ⁺¹⁾ = (-1)ᵏHₖ·e.
		h := [3]float64{1, 2 * m, 4*m*m - 2}
		t[4*j] = math.Erf(m)
		fact := 1.0
		for k := 1; k <= 3; k++ {
			fact *= float64(k)
			t[4*j+k] = signs[(k-1)&1] * h[k-1] * e / fact
		}
	}
	return t
}()

// erfSmallC holds the Taylor coefficients of erf(x)/x in x²: 2/√π·(1,
// -1/3, 1/10, -1/42).
var erfSmallC = [4]float64{2 / math.SqrtPi, -2 / math.SqrtPi / 3, 2 / math.SqrtPi / 10, -2 / math.SqrtPi / 42}

// erfScale is erfIntervals/erfLimit: |x|·erfScale is |x|'s interval.
const erfScale = erfIntervals / erfLimit

// erf32Loop sets d[i] = erf(a[i]), with the SIMD kernel where the CPU
// has one (simd64_amd64.s, in float64 lanes) and erf32Scalar otherwise.
// len(a) ≥ len(d).
func erf32Loop(d, a []float32) {
	if haveSIMD {
		erf32Vec(d, a)
		return
	}
	erf32Scalar(d, a)
}

// erf32Scalar sets d[i] = erf(a[i]). len(a) ≥ len(d).
func erf32Scalar(d, a []float32) {
	a = a[:len(d)]
	for i, x := range a {
		b := math.Float32bits(x)
		ab := b & 0x7fffffff
		switch {
		case ab < erfSmallBits:
			z := float64(x)
			t := z * z
			d[i] = float32(z * (((erfSmallC[3]*t+erfSmallC[2])*t+erfSmallC[1])*t + erfSmallC[0]))
		case ab < erfLimitBits:
			z := float64(math.Float32frombits(ab))
			u := z * erfScale
			j := int(u)
			c := erfTable[4*j : 4*j+4 : 4*j+4]
			r := (u - float64(j) - 0.5) * (1.0 / erfScale)
			v := (c[0] + c[1]*r) + (r*r)*(c[2]+c[3]*r)
			d[i] = math.Float32frombits(math.Float32bits(float32(v)) | b&0x80000000)
		case ab <= 0x7f800000: // up to ±Inf
			d[i] = math.Float32frombits(0x3f800000 | b&0x80000000)
		default: // NaN
			d[i] = x
		}
	}
}

// GELU and its derivative in float32 (prims.GELU, prims.GELUGrad): the
// SIMD kernels where the CPU has them (gelu32AVX2 and its AVX-512 form
// in float64 lanes, geluGrad32Vec's in float32 lanes), and otherwise the
// primitives' float64 References (math.Erfc, math.Exp) rounded to
// float32.
var (
	gelu32Scalar     = floatMap[float32](referenceF(prims.GELU))
	geluGrad32Scalar = floatMap[float32](referenceF(prims.GELUGrad))
)

// referenceF is p's prims.Reference formula.
func referenceF(p *interp.Prim) func(float64) float64 {
	r, ok := prims.ReferenceOf(p)
	if !ok {
		panic("cpu: " + p.Name + " has no prims.Reference")
	}
	return r.F
}

// gelu32Loop sets d[i] = GELU(a[i]). len(a) ≥ len(d).
func gelu32Loop(d, a []float32) {
	if haveSIMD {
		gelu32Vec(d, a)
		return
	}
	gelu32Scalar(d, a)
}

// geluGrad32Loop sets d[i] = GELU′(a[i]). len(a) ≥ len(d).
func geluGrad32Loop(d, a []float32) {
	if haveSIMD {
		geluGrad32Vec(d, a)
		return
	}
	geluGrad32Scalar(d, a)
}

// geluTanh32Loop and geluTanhGrad32Loop are GELUTanh and its derivative
// in float32: the AVX2 kernels where the CPU has them, else the block
// loops below (which the kernels compute lane by lane).
func geluTanh32Loop(d, a []float32) {
	if haveSIMD {
		geluTanh32Vec(d, a)
		return
	}
	geluTanhLoop(d, a)
}

func geluTanhGrad32Loop(d, a []float32) {
	if haveSIMD {
		geluTanhGrad32Vec(d, a)
		return
	}
	geluTanhGradLoop(d, a)
}

// geluTanhBlock is the number of elements geluTanhLoop and
// geluTanhGradLoop take at a time: their logistic arguments, computed
// into blocks on the stack, go through the logistic kernel in one call
// and are used while still in L1.
const geluTanhBlock = 256

// logisticLoopOf is the logistic kernel of T (the SIMD one where the
// CPU has it).
func logisticLoopOf[T float32 | float64]() func(d, a []T) {
	var z T
	if _, ok := any(z).(float32); ok {
		return any(logistic32Loop).(func(d, a []T))
	}
	return any(logisticLoop64).(func(d, a []T))
}

// geluTanhArgs sets u[i] to 2·k·x_c·(1 + c·x_c²), the logistic argument
// of GELUTanh at x[i] clamped to ±GELUTanhLimit (NaN stays NaN).
func geluTanhArgs[T float32 | float64](u, x []T) {
	lim, k2, c := T(prims.GELUTanhLimit), T(2*prims.GELUTanhK), T(prims.GELUTanhC)
	u = u[:len(x)]
	for i, v := range x {
		// Comparisons, not min and max, whose NaN handling costs a
		// branch or two an element; NaN fails both and stays.
		xc := v
		if xc > lim {
			xc = lim
		}
		if xc < -lim {
			xc = -lim
		}
		u[i] = xc * (xc*xc*c + 1) * k2
	}
}

// geluTanhLoop sets d[i] = GELUTanh(a[i]) = x·σ(2u) (prims.GELUTanh),
// block by block: the clamped cubic, the logistic kernel, the product;
// beyond the clamp x or x·0, as the reference has it.
// len(a) ≥ len(d); d may be a.
func geluTanhLoop[T float32 | float64](d, a []T) {
	a = a[:len(d)]
	sigma := logisticLoopOf[T]()
	lim := T(prims.GELUTanhLimit)
	var buf [geluTanhBlock]T
	for off := 0; off < len(d); off += geluTanhBlock {
		x := a[off:min(off+geluTanhBlock, len(a))]
		s := buf[:len(x)]
		geluTanhArgs(s, x)
		sigma(s, s)
		out := d[off : off+len(x)]
		for i, v := range x {
			switch {
			case v > lim:
				out[i] = v
			case v < -lim:
				out[i] = v * 0
			default:
				out[i] = v * s[i]
			}
		}
	}
}

// geluTanhGradLoop sets d[i] = GELUTanh′(a[i]) = σ(2u) + 2x·σ(2u)σ(−2u)·u′
// (prims.GELUTanhGrad) inside the clamp, the gate's constant 1 or −0
// beyond it, as geluTanhLoop computes GELUTanh.
func geluTanhGradLoop[T float32 | float64](d, a []T) {
	a = a[:len(d)]
	sigma := logisticLoopOf[T]()
	lim, k, c3 := T(prims.GELUTanhLimit), T(prims.GELUTanhK), T(3*prims.GELUTanhC)
	var bp, bm [geluTanhBlock]T
	for off := 0; off < len(d); off += geluTanhBlock {
		x := a[off:min(off+geluTanhBlock, len(a))]
		sp, sm := bp[:len(x)], bm[:len(x)]
		geluTanhArgs(sp, x)
		for i, v := range sp {
			sm[i] = -v
		}
		sigma(sp, sp)
		sigma(sm, sm)
		out := d[off : off+len(x)]
		for i, v := range x {
			switch {
			case v > lim:
				out[i] = 1
			case v < -lim:
				out[i] = T(math.Copysign(0, -1))
			default:
				out[i] = sp[i] + 2*v*sp[i]*sm[i]*(k*(1+c3*v*v))
			}
		}
	}
}
