package backendtest

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Conformance cases of the primitives of prims/special.go.

var specialUnaryOps = []unaryOp{
	{prim: prims.Asin, kind: transcOp, f: math.Asin, cond: func(x, _ float64) float64 { return x / math.Sqrt((1-x)*(1+x)) }, vals: unitValues},
	{prim: prims.Acos, kind: transcOp, f: math.Acos, cond: func(x, _ float64) float64 { return x / math.Sqrt((1-x)*(1+x)) }, vals: unitValues},
	{prim: prims.Atan, kind: transcOp, f: math.Atan, cond: func(x, _ float64) float64 { return x / (1 + x*x) }, vals: saturatingValues},
	{prim: prims.Sinh, kind: transcOp, f: math.Sinh, cond: func(x, _ float64) float64 { return x * math.Cosh(x) }, vals: hyperbolicValues},
	{prim: prims.Cosh, kind: transcOp, f: math.Cosh, cond: func(x, _ float64) float64 { return x * math.Sinh(x) }, vals: hyperbolicValues},
	{prim: prims.Asinh, kind: transcOp, f: math.Asinh, cond: func(x, _ float64) float64 { return x / math.Hypot(x, 1) }, vals: saturatingValues},
	{prim: prims.Acosh, kind: transcOp, f: math.Acosh, cond: func(x, _ float64) float64 { return x / (math.Sqrt(x-1) * math.Sqrt(x+1)) }, vals: acoshValues},
	{prim: prims.Atanh, kind: transcOp, f: math.Atanh, cond: func(x, _ float64) float64 { return x / ((1 - x) * (1 + x)) }, vals: unitValues},
	{prim: prims.Log2, kind: transcOp, f: func(x float64) float64 { return refLog(x) / math.Ln2 }, cond: func(x, y float64) float64 { return 1 / math.Ln2 }, vals: logValues},
	{prim: prims.Log10, kind: transcOp, f: func(x float64) float64 { return refLog(x) / math.Ln10 }, cond: func(x, y float64) float64 { return 1 / math.Ln10 }, vals: log10Values},
	{prim: prims.Exp2, kind: transcOp, f: math.Exp2, cond: func(x, y float64) float64 { return x * y * math.Ln2 }, vals: exp2Values},
	{prim: prims.Erfc, kind: transcOp, f: math.Erfc, cond: func(x, _ float64) float64 { return x * 2 / math.SqrtPi * math.Exp(-x*x) }, vals: saturatingValues},
	{prim: prims.ErfInv, kind: transcOp, f: refErfInv, cond: func(x, y float64) float64 { return x * math.SqrtPi / 2 * math.Exp(y*y) }, vals: unitValues},
	{prim: prims.Lgamma, kind: transcOp, f: refLgamma, cond: func(x, _ float64) float64 { return x * refPolygamma(0, x) }, vals: gammaValues},
}

var specialBinaryOps = []binaryOp{
	{prim: prims.Hypot, kind: transcOp, f: math.Hypot, cond: func(x, y, z float64) float64 { return z }, vals: hypotValues},
	{prim: prims.Copysign, f: math.Copysign, vals: cmpValues},
	{prim: prims.ShiftLeft, i: func(x, s int64) int64 {
		if s < 0 || s > 63 {
			return 0
		}
		return x << s
	}, vals: shiftValues},
	{prim: prims.ShiftRightArithmetic, i: func(x, s int64) int64 {
		if s < 0 || s > 63 {
			if x < 0 {
				return -1
			}
			return 0
		}
		return x >> s
	}, vals: shiftValues},
}

var (
	unitValues = values{lo: -1, hi: 1, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, 1, -1, 0.5, -0.5, 0.999, -0.999, 1 - 0x1p-24, -1 + 0x1p-24, 1.5, -2, inf, -inf, nan, tiny(dt), -tiny(dt)}
	}}
	hyperbolicValues = values{lo: -10, hi: 10, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, tiny(dt), -tiny(dt), inf, -inf, nan, 1e-8, -1e-8, 88, -88, 89, 710, -710, 711, large(dt), -large(dt)}
	}}
	acoshValues = values{lo: 1, hi: 30, special: func(dt backend.DType) []float64 {
		return []float64{1, 1 + 0x1p-23, 0.5, 0, -1, inf, -inf, nan, large(dt), 2, 1e10}
	}}
	log10Values = values{lo: 0, hi: 50, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, -1, -inf, inf, nan, tiny(dt), large(dt), 1, 10, 100, 1000, 1e15, 1e-3, 1e-30, 0.5,
			denormal(dt), -denormal(dt)}
	}}
	exp2Values = values{lo: -20, hi: 20, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, 1, -1, 3, 10, -10, 0.5, inf, -inf, nan, 127, 128, -149, -150, 1023, 1024, -1074, -1075, 1e30, -1e30}
	}}
	gammaValues = values{lo: -6, hi: 12, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, 1, 2, 3, -1, -2, 0.5, -0.5, -2.5, 1e-8, tiny(dt), inf, -inf, nan, 1e10, large(dt), 171, 172}
	}}
	hypotValues = values{lo: -5, hi: 5, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, 1, -1, 3, 4, inf, -inf, nan, tiny(dt), -tiny(dt), large(dt), -large(dt), denormal(dt)}
	}}
	shiftValues = values{ilo: -70, ihi: 70, ispecial: []int64{0, 1, -1, 63, 64, -64, 100, math.MaxInt64, math.MinInt64}}
)

// addSpecial adds the cases of this file to the registry m.
func addSpecial(m map[*interp.Prim]func(*suite)) {
	for _, u := range specialUnaryOps {
		m[u.prim] = u.run
	}
	for _, o := range specialBinaryOps {
		m[o.prim] = o.run
	}
	m[prims.Polygamma] = runPolygamma
}

// refErfInv is math.Erfinv refined by one Newton step on math.Erf.
func refErfInv(x float64) float64 {
	y := math.Erfinv(x)
	if math.IsInf(y, 0) || math.IsNaN(y) || y == 0 {
		return y
	}
	return y - (math.Erf(y)-x)/(2/math.SqrtPi*math.Exp(-y*y))
}

// refLgamma is log|Γ(x)|, +Inf at -Inf.
func refLgamma(x float64) float64 {
	if math.IsInf(x, -1) {
		return inf
	}
	v, _ := math.Lgamma(x)
	return v
}

// refPolygamma is ψ⁽ⁿ⁾(x), computed apart from the kernel's: ψ by the
// reflection π·cos(πr)/sin(πr) for x < 0 and ψ(x) = ψ(x+N) − Σ 1/(x+j)
// with N taking x past 20; ψ⁽ⁿ⁾, n ≥ 1, as (−1)ⁿ⁺¹·n!·ζ(n+1, x) by
// Euler–Maclaurin summation from q = x + N ≥ 20 + n with 12 Bernoulli
// terms.
func refPolygamma(n int, x float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsInf(x, -1):
		return nan
	case math.IsInf(x, 1):
		if n == 0 {
			return inf
		}
		return 0
	case x <= 0 && x == math.Floor(x):
		switch {
		case n%2 == 1:
			return inf
		case x == 0:
			return -math.Copysign(inf, x)
		}
		return nan
	}
	// B₂ₖ for k = 1, …, 12.
	b := []float64{1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6, -3617.0 / 510,
		43867.0 / 798, -174611.0 / 330, 854513.0 / 138, -236364091.0 / 2730}
	if n == 0 {
		refl := 0.0
		if x < 0 {
			r := x - math.Floor(x)
			refl = math.Pi * math.Cos(math.Pi*r) / math.Sin(math.Pi*r)
			x = 1 - x
		}
		s := 0.0
		for x < 20 {
			s += 1 / x
			x++
		}
		a := math.Log(x) - 1/(2*x)
		for k := 1; k <= len(b); k++ {
			a -= b[k-1] / float64(2*k) * math.Pow(x, -float64(2*k))
		}
		return a - s - refl
	}
	sArg := float64(n + 1)
	sum := 0.0
	q := x
	for q < 20+float64(n) {
		sum += math.Pow(q, -sArg)
		q++
	}
	// ζ(s, q) tail: q^(1−s)/(s−1) + q^(−s)/2 + Σ B₂ₖ/(2k)!·s(s+1)…(s+2k−2)·q^(−s−2k+1).
	tail := math.Pow(q, 1-sArg)/(sArg-1) + math.Pow(q, -sArg)/2
	rising, fact := sArg, 2.0 // s(s+1)…(s+2k−2), (2k)!
	for k := 1; k <= len(b); k++ {
		tail += b[k-1] / fact * rising * math.Pow(q, -sArg-float64(2*k)+1)
		rising *= (sArg + float64(2*k) - 1) * (sArg + float64(2*k))
		fact *= float64((2*k + 1) * (2*k + 2))
	}
	nfact := 1.0
	for k := 2; k <= n; k++ {
		nfact *= float64(k)
	}
	sign := -1.0
	if n%2 == 1 {
		sign = 1
	}
	return sign * nfact * (sum + tail)
}

// polygammaValues are away from the poles by more than 1e-3 (within it
// the allowed error is the condition term, which the reference's own
// cancellation at the poles would dominate).
var polygammaValues = values{lo: -4.5, hi: 15, special: func(dt backend.DType) []float64 {
	return []float64{0, negZero, -1, -3, 1, 2, 0.5, -0.5, -2.5, 1.4616321449683622, 1e-3, 30, 1e6, 1e15, inf, -inf, nan, large(dt)}
}}

// runPolygamma checks polygamma of orders 0 to 4 on both float dtypes
// (the conformance of unaryOp, with the order as a parameter), and that
// it rejects the other dtypes and a negative order.
func runPolygamma(s *suite) {
	name := prims.Polygamma.Name
	for _, dt := range allDTypes {
		if !dt.IsFloat() {
			s.expectError(describe(name, dt, []int{2}, "(a dtype the rule rejects)"), func() {
				interp.Bind1(prims.Polygamma, prims.PolygammaParams{}, s.operand(dt, []int{2}, contiguous, defaultValues).t)
			})
			continue
		}
		for _, n := range []int{-1, prims.MaxPolygammaOrder + 1} {
			s.expectError(describe(name, dt, []int{2}, fmt.Sprintf("(order %d)", n)), func() {
				interp.Bind1(prims.Polygamma, prims.PolygammaParams{N: n}, s.operand(dt, []int{2}, contiguous, defaultValues).t)
			})
		}
		for n := range 5 {
			p := prims.PolygammaParams{N: n}
			tol := tolFor(transcOp, dt)
			one := func(x operand) {
				desc := describe(name, dt, x.a.shape, fmt.Sprintf("n=%d x=%s", n, x.l))
				s.try(desc, func() {
					got := interp.Bind1(prims.Polygamma, p, x.t)
					want := newArray(dt, x.a.shape)
					allow := make([]float64, x.a.size())
					for k := range x.a.size() {
						v := x.a.f[k]
						y := fround(dt, refPolygamma(n, v))
						want.f[k] = y
						// The condition |x·ψ⁽ⁿ⁺¹⁽(x)|, plus, near a pole
						// (the reference cancels there too), its size.
						c := v * refPolygamma(n+1, v)
						if r := v - math.Round(v); v < 0.5 && math.Abs(r) < 1e-3 {
							c = math.Abs(c) + math.Abs(y)
						}
						if n == 0 {
							// ψ is a difference of terms up to ln(x+N) ≈ 3
							// in both implementations: a few of their ulps
							// absolute, seen near its zero at 1.4616….
							c = math.Abs(c) + 4
						}
						allow[k] = tol.bound(y, c)
					}
					s.expect(check{desc: desc, allow: allow,
						explain: func(k int) string { return fmt.Sprintf("%s_%d(%s)", name, n, x.a.str(k)) }}, got, want)
				})
			}
			for _, shape := range elemShapes {
				for _, l := range layoutsFor(shape) {
					one(s.operand(dt, shape, l, polygammaValues))
				}
			}
			if edges := edgeArray(dt, polygammaValues); edges.size() > 0 {
				one(s.place(edges, contiguous))
			}
			one(s.operand(dt, bigShape, strided, polygammaValues))
		}
	}
}
