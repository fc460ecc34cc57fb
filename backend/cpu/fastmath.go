package cpu

import "math"

// Fast float32 transcendental functions.
//
// Each loop below converts its float32 operand to float64, evaluates a
// range reduction and a short polynomial or rational approximation in
// float64 arithmetic, and rounds once to float32. The float64 evaluation
// costs the same as float32 arithmetic on scalar SSE code, keeps the
// evaluation's own rounding error far below a float32 ulp, and handles
// float32 subnormal results and overflow for free (the float64 value is
// normal, and the final conversion rounds it to a subnormal, zero or ±Inf
// exactly as a correctly rounded function would). The approximation
// errors are about 1e-8 relative (tanh 3e-8), so results are within one
// or two float32 ulps of the exact value; elementwise_test.go measures
// them against math.* over dense sweeps.
//
// The coefficients are near-minimax fits of relative error computed for
// peel with mpmath at 40 digits (Lawson-reweighted linearized least
// squares on a dense grid): expm1Q* for q(r) = (e^r-1-r)/r² on
// |r| ≤ ln2/2, logH* for h(z) = atanh(√z)/√z on √z ≤ (√2-1)/(√2+1),
// tanhP*/tanhQ* for tanh(x)/x = P(x²)/Q(x²) on 0 ≤ x ≤ 9.3.
//
// No loop allocates or branches unpredictably: the only branches clamp
// the operand (taken for out-of-range inputs only) or divert the rare
// special operands of log.

const (
	log2e = 1.4426950408889634 // 1/ln 2
	ln2   = 0.6931471805599453
	// roundMagic rounds a float64 of magnitude below 2^51 to an integer
	// when added and subtracted; the integer is also in the low bits of
	// the sum's representation.
	roundMagic = 0x1.8p52
	// expLimit bounds exponents: e^±104 is finite in float64 and rounds to
	// +Inf or 0 in float32.
	expLimit = 104

	// q(r) ≈ expm1Q0 + expm1Q1 r + … + expm1Q4 r⁴, max relative error 1.3e-7,
	// which is 1.2e-8 in e^r.
	expm1Q0 = 0.5
	expm1Q1 = 0.16666579311508012718
	expm1Q2 = 0.041666759895808647993
	expm1Q3 = 0.0083629483293776334954
	expm1Q4 = 0.0013905919659744429086

	// h(z) ≈ 1 + logH1 z + logH2 z² + logH3 z³, max relative error 8e-10.
	logH1 = 0.3333338808444863191
	logH2 = 0.19988781140505574981
	logH3 = 0.14935643691363241387
	// sqrtHalfBits is the representation of √½ (rounded down): mantissas
	// are reduced to [√½, √2).
	sqrtHalfBits = 0x3fe6a09e667f3bcd

	// tanh(x) ≈ x·P(x²)/Q(x²) on |x| ≤ tanhLimit, max relative error 2.9e-8;
	// beyond it tanh rounds to ±1 in float32.
	tanhLimit = 9.3
	tanhP1    = 0.13364419479908005976
	tanhP2    = 0.0034757708104940656055
	tanhP3    = 0.000020279793473599412616
	tanhP4    = 1.2893661005238559329e-8
	tanhQ1    = 0.46697737139745759016
	tanhQ2    = 0.025801826915821797773
	tanhQ3    = 0.0003253080728218206674
	tanhQ4    = 7.5888065398970417594e-7
)

// exp32Loop sets d[i] = e^a[i]. len(a) ≥ len(d).
func exp32Loop(d, a []float32) {
	a = a[:len(d)]
	for i, x := range a {
		z := float64(x)
		if z > expLimit {
			z = expLimit
		} else if z < -expLimit {
			z = -expLimit
		}
		// z = k ln2 + r with k an integer and |r| ≤ ln2/2.
		t := z*log2e + roundMagic
		k := t - roundMagic
		r := z - k*ln2
		q := (((expm1Q4*r+expm1Q3)*r+expm1Q2)*r+expm1Q1)*r + expm1Q0
		// 2^k from k's bits in t (k is in its low bits; the shift drops
		// the magic constant's).
		scale := math.Float64frombits((math.Float64bits(t) + 1023) << 52)
		d[i] = float32((1 + r*(1+r*q)) * scale)
	}
}

// expm1Loop32 sets d[i] = e^a[i] - 1, accurate in relative terms near 0.
func expm1Loop32(d, a []float32) {
	a = a[:len(d)]
	for i, x := range a {
		z := float64(x)
		if z > expLimit {
			z = expLimit
		} else if z < -expLimit {
			z = -expLimit
		}
		t := z*log2e + roundMagic
		k := t - roundMagic
		r := z - k*ln2
		q := (((expm1Q4*r+expm1Q3)*r+expm1Q2)*r+expm1Q1)*r + expm1Q0
		scale := math.Float64frombits((math.Float64bits(t) + 1023) << 52)
		// e^z - 1 = 2^k (e^r - 1) - (1 - 2^k); for k = 0 this is e^r - 1
		// itself, which r(1 + rq) gives to full relative precision (and
		// with the sign of a zero r, which subtracting +0 keeps).
		d[i] = float32(r*(1+r*q)*scale - (1 - scale))
	}
}

// logistic32Loop sets d[i] = 1/(1+e^-a[i]), accurate in relative terms for
// every input (no cancellation: e^-x is computed directly).
func logistic32Loop(d, a []float32) {
	a = a[:len(d)]
	for i, x := range a {
		z := -float64(x)
		if z > expLimit {
			z = expLimit
		} else if z < -expLimit {
			z = -expLimit
		}
		t := z*log2e + roundMagic
		k := t - roundMagic
		r := z - k*ln2
		q := (((expm1Q4*r+expm1Q3)*r+expm1Q2)*r+expm1Q1)*r + expm1Q0
		scale := math.Float64frombits((math.Float64bits(t) + 1023) << 52)
		e := (1 + r*(1+r*q)) * scale
		d[i] = float32(1 / (1 + e))
	}
}

// tanh32Loop sets d[i] = tanh(a[i]).
func tanh32Loop(d, a []float32) {
	a = a[:len(d)]
	for i, x := range a {
		z := float64(x)
		if z > tanhLimit {
			z = tanhLimit
		} else if z < -tanhLimit {
			z = -tanhLimit
		}
		t := z * z
		p := (((tanhP4*t+tanhP3)*t+tanhP2)*t+tanhP1)*t + 1
		q := (((tanhQ4*t+tanhQ3)*t+tanhQ2)*t+tanhQ1)*t + 1
		d[i] = float32(z * p / q)
	}
}

// log32Loop sets d[i] = ln a[i] (-Inf for ±0, NaN below 0).
func log32Loop(d, a []float32) {
	a = a[:len(d)]
	for i, x := range a {
		// Positive finite x (subnormals included) take the fast path.
		if math.Float32bits(x)-1 >= 0x7f7fffff {
			d[i] = float32(math.Log(float64(x)))
			continue
		}
		// x = 2^e m with m in [√½, √2); ln m = 2 atanh(s), s = (m-1)/(m+1).
		ix := math.Float64bits(float64(x))
		e := (int64(ix) - sqrtHalfBits) >> 52
		m := math.Float64frombits(ix - uint64(e)<<52)
		f := m - 1
		s := f / (2 + f)
		z := s * s
		h := ((logH3*z+logH2)*z+logH1)*z + 1
		d[i] = float32(float64(e)*ln2 + 2*s*h)
	}
}
