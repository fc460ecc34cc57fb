package cpu

import (
	"math"
	"runtime"

	xcpu "golang.org/x/sys/cpu"
)

// Fast float64 exp, tanh and logistic.
//
// They run as AVX2+FMA assembly, four lanes at a time, on CPUs that have
// it (simd64_amd64.s). The scalar loops below perform the same IEEE
// operations in the same order, with math.FMA where the assembly fuses
// (and explicit conversions where it does not, so that no compiler fuses
// them), so the two paths give bit-identical results; the scalar loops
// run on other CPUs and under the purego build tag where math.FMA is a
// hardware instruction, and the math package's functions (expLoop64,
// tanhLoop64, logisticLoop64 in elementwise.go) where it is not.
// simd64_test.go measures the error against a double-double reference:
// below 0.6 ulp for normal results, below 0.77 ulp for subnormal ones
// (see there for the figures).
//
// exp. x is clamped to [-746, 710] (e^-746 rounds to 0, e^710
// overflows), NaN kept, and split as x = n·ln2 + r + rl with n =
// round(x/ln2): r = x - n·ln2hi is exact (one FMA; ln2hi has 53 bits and
// |r| ≤ ln2/2), rl = -n·ln2lo, |rl| < 2^-45. Then e^(r+rl) ≈ e^r·(1 +
// rl), and e^r = 1 + r + r²·Q(r), Q a degree-9 minimax fit of (e^r - 1 -
// r)/r² on |r| ≤ ln2/2 (relative error 3.7e-18 in e^r, coefficients in
// exp64C). Q = c0 + r·Q1(r) with Q1 by Estrin's scheme (shorter
// dependency chains than Horner's, and taking c0 out keeps Q1's rounding
// errors small). 1 + r is split exactly as s + e1 (s = 1 + r rounded),
// and lo = r²·Q + c collects the rest, c = rl·(1 + r) + m·Qa + e1, where
// m = r²·rl + (r·r - r²) makes up for rl in the quadratic term and for
// the rounding of r², and Qa = c0 + r·(Q1's first terms) stands in for Q
// (they differ by O(r⁵), negligible against m). So e^(r+rl) ≈ s + lo to
// about 2^-59. exp rounds s + lo once and scales it by 2^n in two exact
// factors 2^⌊n/2⌋ and 2^(n-⌊n/2⌋), so that overflow gives +Inf and
// results below 2^-1022 round once more, to subnormals or 0 (this double
// rounding is why subnormal results can be off by up to, but always
// less than, 1 ulp).
//
// tanh. For |x| < 0.3, tanh|x| = |x| + |x|³·P(x²), P a degree-7 minimax
// fit of (tanh x - x)/x³ (relative error 2.5e-18 in tanh, coefficients
// in tanh64C), by Horner's scheme. Above, tanh|x| = 1 - 2/(E + 1), E =
// e^(2 min(|x|, 20)) = 2^n(s + lo) as for exp (beyond 19.1 tanh rounds
// to 1). E + 1 is formed as a double-double Dh + Dl from two exact
// sums; q0 = 2/Dh is refined by the exact remainder ρ = 2 - q0·Dh -
// q0·Dl to q0 + ρ·q0/2, and 1 - q0 is split exactly, so that the final
// sum rounds once. The sign of x is put back last (tanh(-0) = -0); NaN
// takes the polynomial branch.
//
// logistic. With u = e^-|x| = 2^n(s + lo) (|x| clamped to 746, where u
// rounds to 0), logistic(x) = 1/(1 + u) for x ≥ 0 and 2^n(s + lo)/(1 +
// u) for x < 0, the power of two applied after the division so that
// tiny results round once more, to subnormals. 1 + u is a double-double
// Dh + Dl as in tanh; with c = 1/Dh, the quotient q0 = nh·c of the
// numerator nh + nl is refined by its remainder, q = q0 + ρ·c, ρ = (nh -
// q0·Dh) + (nl - q0·Dl).
//
// The coefficients are minimax fits computed for peel with mpmath at 60
// digits (Remez exchange on a dense grid), each coefficient rounded to
// float64 in turn from the lowest degree and the rest refitted.

const (
	// exp64Min and exp64Max bound exp's argument: e^-746 rounds to 0 and
	// e^710 overflows.
	exp64Min = -746
	exp64Max = 710
	// logistic64Max bounds |x| in logistic: e^-746 rounds to 0 and
	// 1/(1 + e^-746) to 1.
	logistic64Max = 746
	// tanh64Cut is where tanh switches from its polynomial to the
	// exponential form, tanh64Max where the exponential form's argument is
	// clamped (tanh rounds to ±1 beyond 19.1).
	tanh64Cut = 0.3
	tanh64Max = 20

	magic64Bits = 0x4338000000000000 // the representation of roundMagic = 1.5·2^52
	// exp64Bias and tanh64Bias turn the representation of n + roundMagic
	// into n + 2·1023 and n + 1023 (mod 2^64).
	exp64Bias  = 2046 - magic64Bits + 1<<64
	tanh64Bias = 1023 - magic64Bits + 1<<64
)

// exp64R holds log2e, roundMagic, ln2hi and -ln2lo (ln2hi = ln2 rounded
// to float64, ln2lo = ln2 - ln2hi rounded).
var exp64R = [4]float64{log2e, roundMagic, 0x1.62e42fefa39efp-1, -0x1.abc9e3b39803fp-56}

// exp64C holds c0…c9 of Q(r) = Σ c_k r^k ≈ (e^r - 1 - r)/r², fitted on
// |r| ≤ ln2/2.
var exp64C = [10]float64{
	0x1.000000000000ap-1,
	0x1.5555555555503p-3,
	0x1.5555555550605p-5,
	0x1.1111111124d26p-7,
	0x1.6c16c184b5d16p-10,
	0x1.a01a013d63f07p-13,
	0x1.a019988af2852p-16,
	0x1.71def3bbf3e8cp-19,
	0x1.28aedd7fc48a1p-22,
	0x1.add8d8a19494fp-26,
}

// tanh64C holds p0…p7 of P(t) = Σ p_k t^k ≈ (tanh x - x)/x³, t = x²,
// fitted on |x| < 0.3.
var tanh64C = [8]float64{
	-0x1.5555555555555p-2,
	0x1.1111111110c2fp-3,
	-0x1.ba1ba1b8ef8dap-5,
	0x1.664f47ad09593p-6,
	-0x1.226deb2e41bacp-7,
	0x1.d6b7e1d5d4a32p-9,
	-0x1.7ab6f08d508cbp-10,
	0x1.0c0469c9ce6b3p-11,
}

// fmaFast reports whether math.FMA is a hardware instruction, which the
// scalar float64 loops need to be fast.
var fmaFast = func() bool {
	switch runtime.GOARCH {
	case "arm64", "loong64", "ppc64", "ppc64le", "riscv64", "s390x":
		return true
	case "amd64":
		return xcpu.X86.HasFMA
	case "arm":
		return xcpu.ARM.HasVFPv4
	}
	return false
}()

// exp64Core returns s, lo and the representation tb of t = n +
// roundMagic, with e^z ≈ 2^n(s + lo) as described above, for z in [-746,
// 710] or NaN and t = math.FMA(z, exp64R[0], exp64R[1]) (z/ln2 +
// roundMagic, computed by the caller so that tanh can compute it from
// z/2 without waiting for z).
func exp64Core(z, t float64) (s, lo float64, tb uint64) {
	nf := t - exp64R[1]
	r := math.FMA(-nf, exp64R[2], z)
	rl := float64(nf * exp64R[3])
	// Q(r) = c0 + r·Q1(r), Q1 by Estrin's scheme: b0 + r⁴(b1 + c9·r⁴).
	// Taking c0 out keeps the rounding errors of Q1 small in Q.
	r2 := float64(r * r)
	b0 := math.FMA(math.FMA(exp64C[4], r, exp64C[3]), r2, math.FMA(exp64C[2], r, exp64C[1]))
	b1 := math.FMA(math.FMA(exp64C[8], r, exp64C[7]), r2, math.FMA(exp64C[6], r, exp64C[5]))
	r4 := float64(r2 * r2)
	q := math.FMA(r, math.FMA(math.FMA(exp64C[9], r4, b1), r4, b0), exp64C[0])
	// lo = r²Q + c: m = r²·rl + (r·r - r2) and c = rl(1 + r) + m·Qa + e1
	// make up for rl and the rounding of r², Qa = c0 + r·b0 standing in
	// for Q.
	m := math.FMA(r2, rl, math.FMA(r, r, -r2))
	c := math.FMA(m, math.FMA(r, b0, exp64C[0]), math.FMA(rl, r, rl))
	s = 1 + r
	e1 := (1 - s) + r
	return s, math.FMA(r2, q, c+e1), math.Float64bits(t)
}

// exp64Loop sets d[i] = e^a[i], with the SIMD kernel where the CPU has
// one (simd64_amd64.go), exp64Scalar where math.FMA is fast and math.Exp
// otherwise. len(a) ≥ len(d).
func exp64Loop(d, a []float64) {
	switch {
	case haveSIMD:
		exp64Vec(d, a)
	case fmaFast:
		exp64Scalar(d, a)
	default:
		expLoop64(d, a)
	}
}

// exp64Scalar sets d[i] = e^a[i]. len(a) ≥ len(d).
func exp64Scalar(d, a []float64) {
	a = a[:len(d)]
	for i, x := range a {
		if x < exp64Min {
			x = exp64Min
		} else if x > exp64Max {
			x = exp64Max
		}
		s, lo, tb := exp64Core(x, math.FMA(x, exp64R[0], exp64R[1]))
		k := tb + exp64Bias // n + 2046 > 0
		e1 := k >> 1        // ⌊n/2⌋ + 1023
		e2 := k - e1
		y := float64(float64(s+lo) * math.Float64frombits(e1<<52))
		d[i] = float64(y * math.Float64frombits(e2<<52))
	}
}

// tanh64Loop sets d[i] = tanh(a[i]), with the SIMD kernel where the CPU
// has one (simd64_amd64.go), tanh64Scalar where math.FMA is fast and
// math.Tanh otherwise. len(a) ≥ len(d).
func tanh64Loop(d, a []float64) {
	switch {
	case haveSIMD:
		tanh64Vec(d, a)
	case fmaFast:
		tanh64Scalar(d, a)
	default:
		tanhLoop64(d, a)
	}
}

// tanh64Scalar sets d[i] = tanh(a[i]). len(a) ≥ len(d).
func tanh64Scalar(d, a []float64) {
	a = a[:len(d)]
	for i, x := range a {
		ax := math.Abs(x)
		var y float64
		if !(ax >= tanh64Cut) { // small or NaN
			t := float64(ax * ax)
			p := tanh64C[7]
			for k := 6; k >= 0; k-- {
				p = math.FMA(p, t, tanh64C[k])
			}
			y = math.FMA(float64(t*ax), p, ax)
		} else {
			m := min(ax, tanh64Max) // z = 2m
			s, lo, tb := exp64Core(2*m, math.FMA(m, 2*exp64R[0], exp64R[1]))
			f := math.Float64frombits((tb + tanh64Bias) << 52) // 2^n
			// Dh + Dl = 1 + f·s + f·lo, from two exact sums.
			a1 := math.FMA(f, s, 1)
			dh := math.FMA(f, lo, a1)
			dl := (1 - (a1 - float64(f*s))) + (float64(f*lo) - (dh - a1))
			q0 := 2 / dh
			rho := math.FMA(-q0, dh, 2) - float64(q0*dl)
			h := 1 - q0
			e := (1 - h) - q0
			y = h + math.FMA(-rho, float64(q0*0.5), e)
		}
		d[i] = math.Float64frombits(math.Float64bits(y) ^ math.Float64bits(x)&(1<<63))
	}
}

// logistic64Loop sets d[i] = 1/(1+e^-a[i]), with the SIMD kernel where
// the CPU has one (simd64_amd64.go), logistic64Scalar where math.FMA is
// fast and math.Exp otherwise. len(a) ≥ len(d).
func logistic64Loop(d, a []float64) {
	switch {
	case haveSIMD:
		logistic64Vec(d, a)
	case fmaFast:
		logistic64Scalar(d, a)
	default:
		logisticLoop64(d, a)
	}
}

// logistic64Scalar sets d[i] = 1/(1+e^-a[i]), accurate in relative terms
// for every input. len(a) ≥ len(d).
func logistic64Scalar(d, a []float64) {
	a = a[:len(d)]
	for i, x := range a {
		ax := math.Abs(x)
		if ax > logistic64Max {
			ax = logistic64Max
		}
		s, lo, tb := exp64Core(-ax, math.FMA(ax, -exp64R[0], exp64R[1]))
		k := tb + exp64Bias
		f1 := math.Float64frombits((k >> 1) << 52)
		f2 := math.Float64frombits((k - k>>1) << 52)
		f := float64(f1 * f2) // 2^n, 0 below 2^-1075
		// Dh + Dl = 1 + f·s + f·lo, from two exact sums.
		a1 := math.FMA(f, s, 1)
		dh := math.FMA(f, lo, a1)
		dl := (float64(f*s) - (a1 - 1)) + (float64(f*lo) - (dh - a1))
		nh, nl := 1.0, 0.0
		if math.Signbit(x) {
			nh = s + lo
			nl = (s - nh) + lo
		} else {
			f1, f2 = 1, 1
		}
		c := 1 / dh
		q0 := float64(nh * c)
		rho := math.FMA(-q0, dh, nh) + math.FMA(-q0, dl, nl)
		q := math.FMA(rho, c, q0)
		d[i] = float64(float64(q*f1) * f2)
	}
}
