package peel_test

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/transforms"
)

// Numerical edge cases of the math API: floor division and modulo of
// floats (numpy's semantics), and activations at the ends of the float
// range (no overflow to ±Inf or NaN, in values or derivatives).

// numFloat is the element type of the float oracles.
type numFloat interface{ float32 | float64 }

// numDivMod is the oracle of FloorDiv and Mod on floats, numpy's
// floor_divide and remainder, computed in F's arithmetic: the remainder
// r = fmod(a, b) is exact, the quotient (a − r)/b is then within rounding
// of an integer, and both are moved one step when r's sign is not b's.
// A zero quotient has the sign of a/b, a zero remainder that of b;
// division by zero gives a/b and fmod's NaN.
func numDivMod[F numFloat](a, b F) (div, mod F) {
	r := F(math.Mod(float64(a), float64(b))) // exact, so exact in F too
	if b == 0 {
		return a / b, r
	}
	q := (a - r) / b
	if r != 0 && (b < 0) != (r < 0) {
		r += b
		q--
	}
	if r == 0 {
		r = F(math.Copysign(0, float64(b)))
	}
	if q == 0 {
		return F(math.Copysign(0, float64(a/b))), r
	}
	fl := F(math.Floor(float64(q)))
	if q-fl > 0.5 {
		fl++
	}
	return fl, r
}

// numSame reports whether g and w are the same float: equal with the
// same sign of zero, or both NaN.
func numSame(g, w float64) bool {
	if math.IsNaN(w) {
		return math.IsNaN(g)
	}
	return g == w && math.Signbit(g) == math.Signbit(w)
}

// numTB is what the checks need of *testing.T and *rapid.T.
type numTB interface {
	Helper()
	Errorf(format string, args ...any)
}

// numCheckDivMod compares FloorDiv and Mod of xs and ys in dtype dt with
// the oracle, bit for bit.
func numCheckDivMod(t numTB, dt peel.DType, xs, ys []float64) {
	t.Helper()
	x := peel.AsType(peel.FromFloat64s(xs), dt)
	y := peel.AsType(peel.FromFloat64s(ys), dt)
	gotDiv, gotMod := numFloats(peel.FloorDiv(x, y)), numFloats(peel.Mod(x, y))
	for i := range xs {
		var wd, wm float64
		if dt == peel.Float32 {
			d, m := numDivMod(float32(xs[i]), float32(ys[i]))
			wd, wm = float64(d), float64(m)
		} else {
			wd, wm = numDivMod(xs[i], ys[i])
		}
		a, b := numFloats(x)[i], numFloats(y)[i]
		if !numSame(gotDiv[i], wd) {
			t.Errorf("%v FloorDiv(%v, %v) = %v, want %v", dt, a, b, gotDiv[i], wd)
		}
		if !numSame(gotMod[i], wm) {
			t.Errorf("%v Mod(%v, %v) = %v, want %v", dt, a, b, gotMod[i], wm)
		}
	}
}

// numFloats returns a float tensor's elements as float64s.
func numFloats(x *peel.Tensor) []float64 {
	if x.DType() == peel.Float32 {
		v := x.Float32s()
		out := make([]float64, len(v))
		for i, f := range v {
			out[i] = float64(f)
		}
		return out
	}
	return x.Float64s()
}

// TestFloorDivRoundedQuotient: floor(1/0.1) is 10 because 1/0.1 rounds to
// 10, but 0.1 is slightly above a tenth, so ten of them exceed 1 and the
// floor division is 9 (numpy: np.floor_divide(1, 0.1) == 9.0, remainder
// 0.09999999999999995).
func TestFloorDivRoundedQuotient(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, -7, 7, 1, 0.3})
	y := peel.FromFloat64s([]float64{0.1, 0.7, -0.7, -0.1, 0.1})
	got := peel.FloorDiv(x, y).Float64s()
	want := []float64{9, -11, -11, -10, 2}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("FloorDiv(%v, %v) = %v, want %v", x.Float64s()[i], y.Float64s()[i], got[i], want[i])
		}
	}
	mod := peel.Mod(x, y).Float64s()
	for i := range want {
		if r := got[i]*y.Float64s()[i] + mod[i]; math.Abs(r-x.Float64s()[i]) > 1e-15 {
			t.Errorf("FloorDiv·y + Mod = %v, want %v", r, x.Float64s()[i])
		}
	}
	for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
		numCheckDivMod(t, dt, x.Float64s(), y.Float64s())
	}
}

// TestFloorDivModEdges: division by ±0, signed zeros, infinities and NaN,
// against numpy's results (the oracle is checked against them here).
func TestFloorDivModEdges(t *testing.T) {
	inf, nan, nz := math.Inf(1), math.NaN(), math.Copysign(0, -1)
	cases := []struct{ a, b, div, mod float64 }{
		{1, 0, inf, nan},
		{-1, 0, -inf, nan},
		{1, nz, -inf, nan},
		{0, 0, nan, nan},
		{0, 5, 0, 0},
		{nz, 5, nz, 0},
		{0, -5, nz, nz},
		{nz, -5, 0, nz},
		{-2, 1, -2, 0},
		{2, -1, -2, nz},
		{-1, -5, 0, -1},
		{1, inf, 0, 1},
		{-1, inf, -1, inf},
		{1, -inf, -1, -inf},
		{-1, -inf, 0, -1},
		{inf, 1, nan, nan},
		{-inf, 1, nan, nan},
		{inf, inf, nan, nan},
		{nan, 1, nan, nan},
		{1, nan, nan, nan},
		{-1e-300, 1, -1, 1},
		{5e-324, -1, -1, -1},
		{1e308, 1e-308, inf, math.Mod(1e308, 1e-308)},
		{-7.5, 2, -4, 0.5},
		{7.5, -2, -4, -0.5},
	}
	var xs, ys []float64
	for _, c := range cases {
		d, m := numDivMod(c.a, c.b)
		if !numSame(d, c.div) || !numSame(m, c.mod) {
			t.Fatalf("oracle(%v, %v) = %v, %v; numpy gives %v, %v", c.a, c.b, d, m, c.div, c.mod)
		}
		xs, ys = append(xs, c.a), append(ys, c.b)
	}
	for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
		numCheckDivMod(t, dt, xs, ys)
	}
}

// numOperand draws a float64 of a kind that exercises floor division: an
// integer, a short decimal fraction (whose quotients are near integers
// after rounding), any finite float, or an edge value.
func numOperand(t *rapid.T, label string) float64 {
	switch rapid.IntRange(0, 4).Draw(t, label+"_kind") {
	case 0:
		return float64(rapid.IntRange(-50, 50).Draw(t, label))
	case 1:
		return float64(rapid.IntRange(-2000, 2000).Draw(t, label)) / 10
	case 2:
		return rapid.Float64Range(-1e6, 1e6).Draw(t, label)
	case 3:
		return rapid.Float64().Draw(t, label)
	}
	return rapid.SampledFrom([]float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
		5e-324, -5e-324, 1e-310, math.MaxFloat64, -math.MaxFloat64}).Draw(t, label)
}

// TestFloorDivModProperty checks FloorDiv and Mod on random pairs
// against the oracle (bit for bit, f32 and f64) and the invariants that
// define them: FloorDiv is an integer, Mod has the divisor's sign (a
// zero too) and magnitude at most |y|, and FloorDiv(x, y)·y + Mod(x, y)
// = x up to the rounding of the product and the sum (2 ulps of the
// largest term; the product is computed exactly with an FMA).
func TestFloorDivModProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 16).Draw(rt, "n")
		xs, ys := make([]float64, n), make([]float64, n)
		for i := range xs {
			xs[i], ys[i] = numOperand(rt, "x"), numOperand(rt, "y")
		}
		for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
			numCheckDivMod(rt, dt, xs, ys)
		}
		div := peel.FloorDiv(peel.FromFloat64s(xs), peel.FromFloat64s(ys)).Float64s()
		mod := peel.Mod(peel.FromFloat64s(xs), peel.FromFloat64s(ys)).Float64s()
		for i, a := range xs {
			b, d, m := ys[i], div[i], mod[i]
			if b == 0 || math.IsInf(a, 0) || math.IsNaN(a) || math.IsNaN(b) || math.IsInf(d, 0) {
				continue
			}
			if d != math.Trunc(d) {
				rt.Fatalf("FloorDiv(%v, %v) = %v is not an integer", a, b, d)
			}
			if math.Signbit(m) != math.Signbit(b) || math.Abs(m) > math.Abs(b) {
				rt.Fatalf("Mod(%v, %v) = %v: want the sign of %v and |Mod| ≤ |y|", a, b, m, b)
			}
			if math.IsInf(b, 0) {
				continue
			}
			p := d * b
			res := math.FMA(d, b, -p) + (p + m - a)
			scale := math.Max(math.Abs(a), math.Max(math.Abs(p), math.Abs(m)))
			if math.Abs(res) > 4*0x1p-53*scale {
				rt.Fatalf("FloorDiv(%v, %v)·y + Mod = %v + %v misses x by %v", a, b, d*b, m, res)
			}
		}
	})
}

// numActivations are the activation functions checked at the ends of
// the float range, with their values at ±huge: f(x) for large positive
// x (the identity, or 1) and for large negative x.
var numActivations = []struct {
	name     string
	f        func(*peel.Tensor) *peel.Tensor
	pos, neg func(x float64) float64 // the value at large ±x
	dpos     float64                 // the derivative at large positive x
	dneg     float64                 // and at large negative x
}{
	{"GELU", peel.GELU, numIdentity, numZero, 1, 0},
	{"GELUTanh", peel.GELUTanh, numIdentity, numZero, 1, 0},
	{"Softplus", peel.Softplus, numIdentity, numZero, 1, 0},
	{"LogSigmoid", peel.LogSigmoid, numZero, numIdentity, 0, 1},
	{"Sigmoid", peel.Sigmoid, numOne, numZero, 0, 0},
	{"Tanh", peel.Tanh, numOne, func(float64) float64 { return -1 }, 0, 0},
	{"ReLU", peel.ReLU, numIdentity, numZero, 1, 0},
}

func numIdentity(x float64) float64 { return x }
func numZero(float64) float64       { return 0 }
func numOne(float64) float64        { return 1 }

// numHuge returns finite magnitudes from moderately to extremely large
// for dt, where every activation has reached its asymptote.
func numHuge(dt peel.DType) []float64 {
	if dt == peel.Float32 {
		return []float64{1e3, 1e4, 1e13, 1e30, 3e38, math.MaxFloat32}
	}
	return []float64{1e3, 1e4, 1e103, 1e154, 1e200, 1e308, math.MaxFloat64}
}

// TestActivationsHuge: every activation gives its asymptotic value,
// never ±Inf or NaN, for finite inputs of any size (GELU(1e308) is 1e308;
// the tanh approximation's x³ and the product x·(1 + erf) overflowed),
// and so do its derivatives: forward mode, reverse mode, reverse mode of
// a scaled output (a cotangent of 3, where x·ct overflows), and the
// second derivative.
func TestActivationsHuge(t *testing.T) {
	for _, c := range numActivations {
		for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
			t.Run(fmt.Sprintf("%s/%v", c.name, dt), func(t *testing.T) {
				var xs, want, dwant []float64
				for _, h := range numHuge(dt) {
					xs = append(xs, h, -h)
					want = append(want, c.pos(h), c.neg(-h))
					dwant = append(dwant, c.dpos, c.dneg)
				}
				x := peel.AsType(peel.FromFloat64s(xs), dt)
				xv := numFloats(x)
				sum := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(c.f(x)) }
				scaled := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Mul(c.f(x), 3.0)) }
				grad := transforms.Grad(sum)
				_, jvp := transforms.JVP(c.f, x, peel.OnesLike(x))
				second := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(grad(x)) })
				results := []struct {
					what  string
					got   []float64
					want  func(i int) float64
					exact bool
				}{
					{"value", numFloats(c.f(x)), func(i int) float64 { return numRound(dt, want[i]) }, false},
					{"grad", numFloats(grad(x)), func(i int) float64 { return dwant[i] }, true},
					{"jvp", numFloats(jvp), func(i int) float64 { return dwant[i] }, true},
					{"grad of 3f", numFloats(transforms.Grad(scaled)(x)), func(i int) float64 { return 3 * dwant[i] }, true},
					{"second derivative", numFloats(second(x)), func(int) float64 { return 0 }, true},
				}
				for _, r := range results {
					for i, g := range r.got {
						w := r.want(i)
						ok := g == w
						if !r.exact && w != 0 {
							ok = math.Abs(g-w) <= 1e-6*math.Abs(w)
						}
						if !ok {
							t.Errorf("%s at %v = %v, want %v", r.what, xv[i], g, w)
						}
					}
				}
			})
		}
	}
}

// numRound rounds v to dt.
func numRound(dt peel.DType, v float64) float64 {
	if dt == peel.Float32 {
		return float64(float32(v))
	}
	return v
}

// TestGELUStillAccurate checks GELU and GELUTanh on ordinary inputs
// against their float64 formulas, in f64 (1e-15 relative plus 2^-52·(1 +
// |x|) absolute) and f32 (2e-6 relative plus 2^-23·(1 + |x|)), and the
// derivatives in f64.
func TestGELUStillAccurate(t *testing.T) {
	var xs []float64
	for v := -12.0; v <= 12; v += 0.0625 {
		xs = append(xs, v)
	}
	xs = append(xs, 1e-300, -1e-300, 0, 9.99, 10.01, -9.99, -10.01)
	exact := func(x float64) float64 { return 0.5 * x * math.Erfc(-x/math.Sqrt2) }
	dexact := func(x float64) float64 {
		return 0.5*math.Erfc(-x/math.Sqrt2) + x*math.Exp(-x*x/2)/math.Sqrt(2*math.Pi)
	}
	// The tanh approximation as ½(1 + tanh(u)) = σ(2u), and 1 − tanh² =
	// 4σ(2u)σ(−2u), which do not cancel for negative x (where 1 + tanh
	// and 1 − tanh² lose all their digits: the derivative at −7 is
	// 1e−14, with an error of 5e−15 in the tanh form).
	const k, c = 0.7978845608028654, 0.044715
	sigma := func(z float64) float64 { return 1 / (1 + math.Exp(-z)) }
	tanhApprox := func(x float64) float64 { return x * sigma(2*k*(x+c*x*x*x)) }
	dtanh := func(x float64) float64 {
		u2 := 2 * k * (x + c*x*x*x)
		sp, sm := sigma(u2), sigma(-u2)
		return sp + 2*x*sp*sm*k*(1+3*c*x*x)
	}
	for _, f := range []struct {
		name    string
		f       func(*peel.Tensor) *peel.Tensor
		ref, dr func(float64) float64
		// floor·(1 + |x|) is the absolute error allowed on top of the
		// relative one: x·Φ(x) is computed as x·(½ + ½erf), which
		// cancels for negative x, so there only the absolute error is
		// small.
		floor float64
	}{
		{"GELU", peel.GELU, exact, dexact, 0x1p-52},
		{"GELUTanh", peel.GELUTanh, tanhApprox, dtanh, 0x1p-52},
	} {
		for _, dt := range []peel.DType{peel.Float64, peel.Float32} {
			rel, abs := 1e-15, f.floor
			if dt == peel.Float32 {
				rel, abs = 2e-6, 0x1p-23
			}
			x := peel.AsType(peel.FromFloat64s(xs), dt)
			xv := numFloats(x)
			got := numFloats(f.f(x))
			for i, v := range xv {
				if w := f.ref(v); math.Abs(got[i]-w) > rel*math.Abs(w)+abs*(1+math.Abs(v)) {
					t.Errorf("%s %v(%v) = %v, want %v", f.name, dt, v, got[i], w)
				}
			}
			if dt == peel.Float32 {
				continue
			}
			g := numFloats(transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(f.f(x)) })(x))
			for i, v := range xv {
				if w := f.dr(v); math.Abs(g[i]-w) > 1e-14*math.Abs(w)+1e-15 {
					t.Errorf("%s' f64(%v) = %v, want %v", f.name, v, g[i], w)
				}
			}
		}
	}
}

// Benchmarks of the composites touched here, over 1<<20 elements on one
// thread, in ns/elem:
//
//	go test -run '^$' -bench 'FloorDiv|Gelu' .
func numBench(b *testing.B, name string, f func()) {
	b.Run(name, func(b *testing.B) {
		cpu.SetThreads(1)
		b.Cleanup(func() { cpu.SetThreads(0) })
		for b.Loop() {
			f()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(numBenchN), "ns/elem")
	})
}

const numBenchN = 1 << 20

// numBenchData returns n values uniform in [lo, hi) as a dt tensor.
func numBenchData(dt peel.DType, lo, hi float64, seed uint64) *peel.Tensor {
	v := make([]float64, numBenchN)
	s := seed
	for i := range v {
		s = s*6364136223846793005 + 1442695040888963407
		v[i] = lo + (hi-lo)*float64(s>>11)/(1<<53)
	}
	return peel.AsType(peel.FromFloat64s(v), dt)
}

func BenchmarkFloorDiv(b *testing.B) {
	for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
		x, y := numBenchData(dt, -100, 100, 1), numBenchData(dt, 0.5, 10, 2)
		numBench(b, "floordiv_"+dt.String(), func() { peel.FloorDiv(x, y) })
		numBench(b, "mod_"+dt.String(), func() { peel.Mod(x, y) })
	}
}

func BenchmarkGelu(b *testing.B) {
	for _, dt := range []peel.DType{peel.Float32, peel.Float64} {
		x := numBenchData(dt, -6, 6, 3)
		numBench(b, "exact_"+dt.String(), func() { peel.GELU(x) })
		numBench(b, "tanh_"+dt.String(), func() { peel.GELUTanh(x) })
	}
}
