package cpu

import (
	"math"
	"strconv"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/prims"
)

// Kernels of the inverse trigonometric, hyperbolic, logarithmic and
// special functions (prims/special.go): each evaluates the float64
// function and rounds once for float32, and the integer shifts.

// floatMap returns the unary loop d[i] = f(a[i]) for T.
func floatMap[T elemFloat](f func(float64) float64) func(d, a []T) {
	return func(d, a []T) {
		a = a[:len(d)]
		for i, x := range a {
			d[i] = T(f(float64(x)))
		}
	}
}

// floatMapLoops returns the unary loops of f for both float dtypes.
func floatMapLoops(f func(float64) float64) unaryLoops {
	return unaryLoops{f32: floatMap[float32](f), f64: floatMap[float64](f)}
}

// floatMap2 returns the binary loops of d[i] = f(a[i], b[i]) for T.
func floatMap2[T elemFloat](f func(x, y float64) float64) binLoops[T, T] {
	vv := func(d, a, b []T) {
		a, b = a[:len(d)], b[:len(d)]
		for i := range d {
			d[i] = T(f(float64(a[i]), float64(b[i])))
		}
	}
	vs := func(d, a []T, s T) {
		a = a[:len(d)]
		y := float64(s)
		for i, x := range a {
			d[i] = T(f(float64(x), y))
		}
	}
	sv := func(d []T, s T, b []T) {
		b = b[:len(d)]
		x := float64(s)
		for i, y := range b {
			d[i] = T(f(x, float64(y)))
		}
	}
	return binLoops[T, T]{vv: vv, vs: vs, sv: sv}
}

func floatMap2Op(f func(x, y float64) float64) binOp[bool, int64, float32, float64] {
	return binOp[bool, int64, float32, float64]{f32: floatMap2[float32](f), f64: floatMap2[float64](f)}
}

// shiftLeft is lax.shift_left: counts outside [0, 63] give 0.
func shiftLeft(x, s int64) int64 {
	if uint64(s) > 63 {
		return 0
	}
	return x << uint(s)
}

// shiftRight is lax.shift_right_arithmetic: counts outside [0, 63] fill
// with the sign bit.
func shiftRight(x, s int64) int64 {
	if uint64(s) > 63 {
		return x >> 63
	}
	return x >> uint(s)
}

// intMap2 returns the binary loops of d[i] = f(a[i], b[i]) on i64.
func intMap2(f func(x, y int64) int64) binLoops[int64, int64] {
	return binLoops[int64, int64]{
		vv: func(d, a, b []int64) {
			a, b = a[:len(d)], b[:len(d)]
			for i := range d {
				d[i] = f(a[i], b[i])
			}
		},
		vs: func(d, a []int64, s int64) {
			a = a[:len(d)]
			for i, x := range a {
				d[i] = f(x, s)
			}
		},
		sv: func(d []int64, s int64, b []int64) {
			b = b[:len(d)]
			for i, y := range b {
				d[i] = f(s, y)
			}
		},
	}
}

// lgamma is log|Γ(x)|: math.Lgamma without the sign, and +Inf at -Inf
// (|Γ| is unbounded there; math.Lgamma gives -Inf) as in scipy and JAX.
func lgamma(x float64) float64 {
	if math.IsInf(x, -1) {
		return math.Inf(1)
	}
	v, _ := math.Lgamma(x)
	return v
}

// powersOfTen[k+323] is 10^k rounded to float64, for k in [-323, 308].
var powersOfTen = func() []float64 {
	t := make([]float64, 308+323+1)
	for k := range t {
		t[k], _ = strconv.ParseFloat("1e"+strconv.Itoa(k-323), 64)
	}
	return t
}()

// log10 is math.Log10, made exact at the powers of ten: math.Log10 is
// log2(x)·(ln 2/ln 10), which misses 78 of them by an ulp (log10(1e15)
// = 14.999999999999998). The rounded result decides: when it is within
// 1e-13 of an integer k and x is 10^k rounded, the result is k.
func log10(x float64) float64 {
	if x < minNormal64 && x > 0 {
		// math.Log10 takes a subnormal's exponent field as if it were
		// normal on amd64 (see logLoop64); Frexp normalizes it.
		f, e := math.Frexp(x)
		return math.Log10(f) + float64(e)*(math.Ln2/math.Ln10)
	}
	y := math.Log10(x)
	k := math.Round(y)
	if math.Abs(y-k) < 1e-13 && k >= -323 && k <= 308 && powersOfTen[int(k)+323] == x {
		return k
	}
	return y
}

// Bernoulli numbers over factorials, B₂ₖ/(2k)! for k = 1, …, 10: the
// coefficients of the asymptotic expansions of ψ⁽ⁿ⁾.
var bernoulliOverFact = [...]float64{
	1.0 / 12,
	-1.0 / 720,
	1.0 / 30240,
	-1.0 / 1209600,
	1.0 / 47900160,
	-691.0 / 1307674368000,
	1.0 / 74724249600,
	-3617.0 / 10670622842880000,
	43867.0 / 5109094217170944000,
	-174611.0 / 802857662698291200000,
}

// digamma returns ψ(x) = Γ'(x)/Γ(x): for x < 0 by the reflection
// ψ(x) = ψ(1 − x) − π/tan(πx) (the argument of tan reduced exactly to
// x − round(x)), for 0 < x < 10 by the recurrence ψ(x) = ψ(x+1) −
// 1/x, and from 10 on by the asymptotic series
// ln x − 1/(2x) − Σ B₂ₖ/(2k·x²ᵏ). At the poles see poleValue.
func digamma(x float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsInf(x, -1):
		return math.NaN()
	case math.IsInf(x, 1):
		return x
	case x <= 0 && x == math.Floor(x):
		return poleValue(0, x)
	}
	refl := 0.0
	if x < 0 {
		// π/tan(πx) has period 1; x − round(x) is exact and keeps the
		// distance to the nearest pole to full precision.
		refl = math.Pi / math.Tan(math.Pi*(x-math.Round(x)))
		x = 1 - x
	}
	acc := 0.0
	for x < 10 {
		acc -= 1 / x
		x++
	}
	inv2 := 1 / (x * x)
	// Σ B₂ₖ/(2k)·x⁻²ᵏ, B₂ₖ/(2k) = B₂ₖ/(2k)!·(2k−1)!.
	s, p, f := 0.0, inv2, 1.0
	for k := 1; k <= 8; k++ {
		s += bernoulliOverFact[k-1] * f * p
		p *= inv2
		f *= float64((2*k + 1) * (2 * k))
	}
	return acc + math.Log(x) - 0.5/x - s - refl
}

// polygammaN returns ψ⁽ⁿ⁾(x) for n ≥ 1 and x > 0: ψ⁽ⁿ⁾(x) =
// (−1)ⁿ⁺¹·n!·ζ(n+1, x), with the Hurwitz zeta function summed directly up
// to x + k ≥ 10 + n (the recurrence ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁾(x+1) +
// (−1)ⁿ⁺¹·n!/xⁿ⁺¹, whose terms all have one sign) and by the asymptotic
// series from there: ψ⁽ⁿ⁾(x) ≈ (−1)ⁿ⁺¹·(n−1)!/xⁿ·[1 + n/(2x) +
// Σₖ B₂ₖ/(2k)!·n(n+1)…(n+2k−1)/x²ᵏ].
func polygammaN(n int, x float64) float64 {
	nf := float64(n)
	sign := 1.0 // (−1)ⁿ⁺¹
	if n%2 == 0 {
		sign = -1
	}
	if math.IsInf(x, 1) {
		return sign * 0
	}
	fact := 1.0
	for k := 2; k <= n; k++ {
		fact *= float64(k)
	}
	xmin := 10 + nf
	direct := 0.0
	for x < xmin {
		direct += fact * math.Pow(x, -(nf+1))
		x++
	}
	inv := 1 / x
	inv2 := inv * inv
	// (n−1)!/xⁿ
	base := fact / nf * math.Pow(x, -nf)
	s := 1 + nf*inv/2
	r := 1.0
	for k := 1; k <= len(bernoulliOverFact); k++ {
		m := nf + float64(2*k) - 2
		r *= m * (m + 1) * inv2
		t := bernoulliOverFact[k-1] * r
		s += t
		if math.Abs(t) < 1e-17*math.Abs(s) {
			break
		}
	}
	return sign * (direct + base*s)
}

// cotDerivative returns the coefficients (constant first) of the
// polynomial Pₙ with dⁿ/dzⁿ cot z = Pₙ(cot z): P₀(c) = c and Pₖ₊₁(c) =
// −(1 + c²)·Pₖ'(c). Pₙ has degree n+1, and its nonzero coefficients all
// have the sign (−1)ⁿ, so evaluating it does not cancel.
func cotDerivative(n int) []float64 {
	p := make([]float64, n+2)
	q := make([]float64, n+2)
	p[1] = 1
	for k := 0; k < n; k++ {
		clear(q)
		for j := 1; j <= k+1; j++ {
			d := -float64(j) * p[j]
			q[j-1] += d
			q[j+1] += d
		}
		p, q = q, p
	}
	return p
}

// poleValue is ψ⁽ⁿ⁾ at a pole x = 0, −1, −2, …: +Inf for odd n, where
// both sides tend to +Inf; for even n the limit from the side the zero's
// sign names at x = ±0 (−Inf at +0, +Inf at −0, as scipy's digamma), and
// NaN at the negative integers, where the two sides differ.
func poleValue(n int, x float64) float64 {
	switch {
	case n%2 == 1:
		return math.Inf(1)
	case x == 0:
		return -math.Copysign(math.Inf(1), x)
	}
	return math.NaN()
}

// polygammaWith returns ψ⁽ⁿ⁾(x) for n ≥ 0, given cot = cotDerivative(n)
// (used for x < 0 only). Negative x is reflected: (−1)ⁿ·ψ⁽ⁿ⁾(1−x) −
// ψ⁽ⁿ⁾(x) = π·dⁿ/dxⁿ cot(πx) = πⁿ⁺¹·Pₙ(cot(πx)), with x reduced
// exactly to x − round(x), so the cost does not grow with |x|. At
// the poles see poleValue.
func polygammaWith(n int, x float64, cot []float64) float64 {
	if n == 0 {
		return digamma(x)
	}
	switch {
	case math.IsNaN(x) || math.IsInf(x, -1):
		return math.NaN()
	case x <= 0 && x == math.Floor(x):
		return poleValue(n, x)
	case x > 0:
		return polygammaN(n, x)
	}
	// cot has period π: x − round(x), in [−½, ½], is exact and keeps
	// the distance to the nearest pole to full precision.
	c := 1 / math.Tan(math.Pi*(x-math.Round(x)))
	pc := 0.0
	for j := len(cot) - 1; j >= 0; j-- {
		pc = pc*c + cot[j]
	}
	refl := math.Pow(math.Pi, float64(n+1)) * pc
	y := polygammaN(n, 1-x)
	if n%2 == 1 {
		y = -y
	}
	return y - refl
}

// polygamma is ψ⁽ⁿ⁾(x) for n ≥ 0 (polygammaWith computing its own
// polynomial; the kernel computes it once per call).
func polygamma(n int, x float64) float64 {
	return polygammaWith(n, x, cotDerivative(n))
}

func init() {
	registerUnary(prims.Asin, costHeavy, floatMapLoops(math.Asin))
	registerUnary(prims.Acos, costHeavy, floatMapLoops(math.Acos))
	registerUnary(prims.Atan, costHeavy, floatMapLoops(math.Atan))
	registerUnary(prims.Sinh, costHeavy, floatMapLoops(math.Sinh))
	registerUnary(prims.Cosh, costHeavy, floatMapLoops(math.Cosh))
	registerUnary(prims.Asinh, costHeavy, floatMapLoops(math.Asinh))
	registerUnary(prims.Acosh, costHeavy, floatMapLoops(math.Acosh))
	registerUnary(prims.Atanh, costHeavy, floatMapLoops(math.Atanh))
	registerUnary(prims.Log2, costHeavy, floatMapLoops(math.Log2))
	registerUnary(prims.Log10, costHeavy, floatMapLoops(log10))
	registerUnary(prims.Exp2, costHeavy, floatMapLoops(math.Exp2))
	registerUnary(prims.Erfc, costHeavy, floatMapLoops(math.Erfc))
	registerUnary(prims.ErfInv, costHeavy, floatMapLoops(math.Erfinv))
	registerUnary(prims.Lgamma, costHeavy, floatMapLoops(lgamma))
	registerArith(prims.Hypot, costMath, floatMap2Op(math.Hypot))
	registerArith(prims.Copysign, costCheap, floatMap2Op(math.Copysign))
	registerArith(prims.ShiftLeft, costCheap, binOp[bool, int64, float32, float64]{i: intMap2(shiftLeft)})
	registerArith(prims.ShiftRightArithmetic, costCheap, binOp[bool, int64, float32, float64]{i: intMap2(shiftRight)})

	register(prims.Polygamma, true, func(params any, in, out []backend.Array) {
		n := params.(prims.PolygammaParams).N
		cot := cotDerivative(n)
		f := func(v float64) float64 { return polygammaWith(n, v, cot) }
		x, o := &in[0], out[0]
		switch buf := x.Buf.(type) {
		case *f32Buf:
			runUnary(prims.Polygamma, floatMap[float32](f), costHeavy, f32s(o), buf.s, x)
		case *f64Buf:
			runUnary(prims.Polygamma, floatMap[float64](f), costHeavy, f64s(o), buf.s, x)
		default:
			badDType(prims.Polygamma, x.Buf.DType())
		}
	})
}
