package cpu_test

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Subnormal operands of the logarithm and of pow, checked through the
// dispatch path against references built from exact integer arithmetic
// on the subnormal's representation.
//
// A positive subnormal float64 is x = m·2^-1074 with 1 ≤ m < 2^52, so
// ln x = ln m − 1074·ln 2 and log2 x = log2 m − 1074, where m is a
// normal float64 whose logarithm the math package computes right. The
// float32 case is x = m·2^-149.

// numLn2 is ln 2 to 70 digits.
var numLn2, _ = new(big.Float).SetPrec(256).SetString("0.6931471805599453094172321214581765680755001343602552541206800094933936")

// numRefLog returns ln(m·2^-k) for an integer m ≥ 1 below 2^53, correctly
// rounded but for ln m's error: ln m − k·ln 2 summed in 256-bit
// arithmetic, where math.Log(m) (a normal argument, |ln m| < 37) is
// within an ulp of ln m, below 0.07 ulp of the result (whose magnitude
// exceeds 100 for the subnormals of either format).
func numRefLog(m float64, k int) float64 {
	s := new(big.Float).SetPrec(256).SetFloat64(math.Log(m))
	kl := new(big.Float).SetPrec(256).Mul(numLn2, new(big.Float).SetPrec(256).SetInt64(int64(k)))
	v, _ := s.Sub(s, kl).Float64()
	return v
}

// numRefPow returns (m·2^-k)^y for an integer m ≥ 1 below 2^53 as
// 2^(y·log2 x): log2 x = (e − k) + log2 f with m = f·2^e, the product
// with y formed exactly for the integer part (an FMA gives its rounding
// error), so the only errors are log2 f's (below 2^-53 absolute, times
// |y|) and exp2's.
func numRefPow(m float64, k int, y float64) float64 {
	f, e := math.Frexp(m)
	n := float64(e - k)
	hi := n * y
	lo := math.FMA(n, y, -hi) + y*math.Log(f)/math.Ln2
	ip := math.Round(hi)
	if ip > 4000 {
		return math.Inf(1)
	}
	if ip < -4000 {
		return 0
	}
	return math.Ldexp(math.Exp2((hi-ip)+lo), int(ip))
}

// numUlps returns |got − want| in ulps of want (of dt), counting a
// subnormal want's ulp as the smallest subnormal.
func numUlps(got, want float64, dt backend.DType) float64 {
	if got == want {
		return 0
	}
	if dt == backend.Float32 {
		w := float32(want)
		u := math.Nextafter32(w, float32(math.Inf(1))) - w
		if math.IsInf(float64(u), 0) {
			u = w - math.Nextafter32(w, 0)
		}
		return math.Abs(got-want) / math.Abs(float64(u))
	}
	u := math.Nextafter(want, math.Inf(1)) - want
	if math.IsInf(u, 0) {
		u = want - math.Nextafter(want, 0)
	}
	return math.Abs(got-want) / math.Abs(u)
}

// numFails reports at most ten failures and counts the rest.
type numFails struct {
	t *testing.T
	n int
}

func (f *numFails) errorf(format string, args ...any) {
	f.t.Helper()
	if f.n++; f.n <= 10 {
		f.t.Errorf(format, args...)
	}
}

func (f *numFails) done() {
	f.t.Helper()
	if f.n > 10 {
		f.t.Errorf("… %d failures in all", f.n)
	}
}

// numEval applies the unary or binary primitive p to float64 data in
// dtype dt and returns the result as float64s.
func numEval(p *interp.Prim, dt backend.DType, args ...[]float64) []float64 {
	ts := make([]*interp.Tensor, len(args))
	for i, a := range args {
		ts[i] = ewTensor(ewFrom(a, dt), len(a))
	}
	return ewF64(interp.Bind1(p, nil, ts...))
}

// numSubnormals returns the mantissas m of subnormals m·2^-k of a
// format with p-bit significands (k = 1074, p = 53 for float64): the
// edges 1, 2, 3, 2^(p-2), 2^(p-1) − 1 and every power of two, and random
// m of every bit length.
func numSubnormals(rng *rand.Rand, p int) []float64 {
	top := uint64(1) << (p - 1)
	ms := []uint64{1, 2, 3, top / 2, top - 1, top - 2}
	for b := 1; b < p-1; b++ {
		ms = append(ms, 1<<b)
		for range 40 {
			ms = append(ms, 1<<b|rng.Uint64N(1<<b))
		}
	}
	out := make([]float64, len(ms))
	for i, m := range ms {
		out[i] = float64(m)
	}
	return out
}

// TestLogSubnormal: the logarithm of every subnormal (float64 and
// float32) is right to 1 ulp; math.Log on amd64 read a subnormal's
// exponent as if it were normal (log(5e-324) gave -709.09, not
// -744.44). log1p(x) = x for subnormal x, and the smallest normals and
// their neighbours are right too.
func TestLogSubnormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(56600, 1))
	fails := &numFails{t: t}
	defer fails.done()
	for _, c := range []struct {
		dt   backend.DType
		p, k int
	}{{backend.Float64, 53, 1074}, {backend.Float32, 24, 149}} {
		ms := numSubnormals(rng, c.p)
		xs := make([]float64, len(ms))
		for i, m := range ms {
			xs[i] = math.Ldexp(m, -c.k)
		}
		// The smallest normal and its neighbours.
		minNormal := math.Ldexp(1, -(c.k - c.p + 1))
		xs = append(xs, minNormal, math.Ldexp(minNormal, 1), minNormal*(1+math.Ldexp(1, 1-c.p)))
		ms = append(ms, math.Ldexp(1, c.p-1), math.Ldexp(1, c.p), math.Ldexp(1, c.p-1)+1)
		got := numEval(prims.Log, c.dt, xs)
		worst := 0.0
		for i, x := range xs {
			want := numRefLog(ms[i], c.k)
			if c.dt == backend.Float32 {
				want = float64(float32(want))
			}
			e := numUlps(got[i], want, c.dt)
			worst = max(worst, e)
			if e > 1 {
				fails.errorf("%v log(%v) = %v, want %v (%.2f ulps)", c.dt, x, got[i], want, e)
			}
		}
		t.Logf("%v log of %d subnormals: worst error %.3f ulp", c.dt, len(xs), worst)

		neg := make([]float64, len(xs))
		for i, x := range xs {
			neg[i] = -x
		}
		for _, in := range [][]float64{xs, neg} {
			got := numEval(prims.Log1p, c.dt, in)
			for i, x := range in {
				if want := numRound(c.dt, x); got[i] != want && numUlps(got[i], want, c.dt) > 1 {
					fails.errorf("%v log1p(%v) = %v, want %v", c.dt, x, got[i], want)
				}
			}
		}
		got = numEval(prims.Log, c.dt, neg)
		for i, g := range got {
			if !math.IsNaN(g) {
				fails.errorf("%v log(%v) = %v, want NaN", c.dt, neg[i], g)
			}
		}
	}
}

// numRound rounds v to dt.
func numRound(dt backend.DType, v float64) float64 {
	if dt == backend.Float32 {
		return float64(float32(v))
	}
	return v
}

// TestPowSubnormalBase: x^y for subnormal float64 x and fractional y
// (math.Pow takes the logarithm of x for the fractional part of y, and
// so inherited the wrong logarithm: pow(5e-324, 0.25) gave 1.03e-77, not
// 1.49e-81). Powers whose value is a float64 are checked to 1 ulp; the
// others against 2^(y·log2 x), with log2 x = (e − 1074) + log2 f for m =
// f·2^e, to 2 ulps (for m a power of two, whose log2 is exact) or 2 ulps
// plus the reference's own error, |y|·1074·2^-53·ln2 relative. Integer
// exponents and negative bases keep math.Pow's exact results.
func TestPowSubnormalBase(t *testing.T) {
	rng := rand.New(rand.NewPCG(56600, 2))
	fails := &numFails{t: t}
	defer fails.done()
	ms := numSubnormals(rng, 53)
	ys := []float64{0.25, 0.5, -0.5, 0.75, 1.0 / 3, -1.0 / 3, 0.1, -0.1, 0.9, 1.02, -0.7, 1.5, -1.25, 0.3}
	var xs, yv, want, allow []float64
	for _, m := range ms {
		for _, y := range ys {
			xs = append(xs, math.Ldexp(m, -1074))
			yv = append(yv, y)
			want = append(want, numRefPow(m, 1074, y))
			a := 2.0
			if f, _ := math.Frexp(m); f != 0.5 {
				a += math.Abs(y) * 1074 * 0x1p-53 * math.Ln2 / 0x1p-52
			}
			allow = append(allow, a)
		}
	}
	got := numEval(prims.Pow, backend.Float64, xs, yv)
	worst := 0.0
	for i := range xs {
		e := numUlps(got[i], want[i], backend.Float64)
		if want[i] == 0 || math.IsInf(want[i], 0) {
			if got[i] != want[i] {
				e = math.Inf(1)
			} else {
				e = 0
			}
		}
		if e/allow[i] > worst {
			worst = e / allow[i]
			t.Logf("pow(%v, %v) = %v, reference %v: %.2f ulps", xs[i], yv[i], got[i], want[i], e)
		}
		if e > allow[i] {
			fails.errorf("pow(%v, %v) = %v, want %v (%.2f ulps, allowed %.2f)", xs[i], yv[i], got[i], want[i], e, allow[i])
		}
	}
	t.Logf("pow of %d subnormal bases: worst error %.3f of the allowed", len(xs), worst)

	// Exact cases, independent of any logarithm: x = c⁴·2^-4t subnormal
	// and y a multiple of ¼, so that x^y = c^(4y)·2^(-4ty) is a float64
	// (for negative y only c = 1). They are right to 1 ulp.
	var ex, ey, ew []float64
	for _, c := range []float64{1, 3, 5, 7, 9, 11, 13, 15} {
		c4 := c * c * c * c
		for tq := 1023 / 4; tq <= 1074/4+4; tq++ {
			x := math.Ldexp(c4, -4*tq)
			if x >= 0x1p-1022 || x == 0 || math.Ldexp(x, 4*tq) != c4 {
				continue
			}
			for _, q := range []int{1, 3, 5, -1, -3, -5} {
				if q < 0 && c != 1 {
					continue
				}
				cq := 1.0
				for range q {
					cq *= c
				}
				ex, ey, ew = append(ex, x), append(ey, float64(q)/4), append(ew, math.Ldexp(cq, -tq*q))
			}
		}
	}
	got = numEval(prims.Pow, backend.Float64, ex, ey)
	for i := range ex {
		if e := numUlps(got[i], ew[i], backend.Float64); e > 1 {
			fails.errorf("pow(%v, %v) = %v, want %v exactly (%.2f ulps)", ex[i], ey[i], got[i], ew[i], e)
		}
	}
	t.Logf("%d exact powers of subnormals checked", len(ex))

	// Integer exponents, negative bases, special exponents.
	x := []float64{5e-324, -5e-324, 1e-310, -1e-310, 5e-324, 5e-324, 5e-324, 5e-324, -1e-310, 1e-310}
	y := []float64{1, 3, -1, 2, 0, math.Inf(1), math.Inf(-1), math.NaN(), 0.5, -2}
	got = numEval(prims.Pow, backend.Float64, x, y)
	for i := range x {
		if w := math.Pow(x[i], y[i]); !ewSameF64(got[i], w, 0) {
			fails.errorf("pow(%v, %v) = %v, want %v", x[i], y[i], got[i], w)
		}
	}
	// The float32 kernel computes in float64, where float32 subnormals
	// are normal.
	x32 := []float64{float64(math.SmallestNonzeroFloat32), 1e-40, 1e-42}
	y32 := []float64{0.25, 0.5, 0.3}
	got = numEval(prims.Pow, backend.Float32, x32, y32)
	for i, v := range x32 {
		xv, yv := float64(float32(v)), float64(float32(y32[i]))
		w := float64(float32(math.Exp(math.Log(xv) * yv)))
		if numUlps(got[i], w, backend.Float32) > 1 {
			fails.errorf("f32 pow(%v, %v) = %v, want %v", xv, yv, got[i], w)
		}
	}
}

// numRemOperands returns pairs exercising the remainder: quotients near
// integers (x = k·y moved by a few ulps, k up to 2^53), random
// magnitudes over the whole exponent range, subnormals, and the edge
// values, with every sign combination.
func numRemOperands(rng *rand.Rand) (xs, ys []float64) {
	add := func(x, y float64) {
		for _, sx := range []float64{1, -1} {
			for _, sy := range []float64{1, -1} {
				xs, ys = append(xs, sx*x), append(ys, sy*y)
			}
		}
	}
	for i := range 4000 {
		y := math.Ldexp(1+rng.Float64(), rng.IntN(200)-100)
		k := math.Floor(math.Ldexp(rng.Float64(), rng.IntN(54)))
		x := k * y
		for range rng.IntN(4) {
			x = math.Nextafter(x, math.Inf(2*rng.IntN(2)-1))
		}
		add(x, y)
		add(math.Ldexp(float64(rng.Uint64N(1<<52)), -1074), math.Ldexp(float64(1+rng.Uint64N(1<<20)), -1074))
		if i%8 == 0 { // math.Mod takes a step per bit of these quotients
			add(math.Ldexp(1+rng.Float64(), rng.IntN(2098)-1074), math.Ldexp(1+rng.Float64(), rng.IntN(2098)-1074))
		}
	}
	inf, nan := math.Inf(1), math.NaN()
	for _, x := range []float64{0, 1, 3, 0.5, 1e308, 5e-324, inf, nan, 0x1p52, 0x1p53 + 2} {
		for _, y := range []float64{0, 1, 0.1, 3, 1e-308, 5e-324, 1e308, inf, nan, 0x1p-52} {
			add(x, y)
		}
	}
	return xs, ys
}

// TestRemExact: the float remainder kernel (one FMA from the truncated
// quotient where it is below 2^52, math.Mod elsewhere) gives math.Mod's
// result bit for bit, signed zeros included, in float64 and float32,
// tensor-tensor and with a broadcast scalar on either side.
func TestRemExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(56600, 3))
	xs, ys := numRemOperands(rng)
	fails := &numFails{t: t}
	defer fails.done()
	for _, dt := range []backend.DType{backend.Float64, backend.Float32} {
		x, y := ewRound(xs, dt), ewRound(ys, dt)
		got := numEval(prims.Rem, dt, x, y)
		for i := range x {
			if w := numRound(dt, math.Mod(x[i], y[i])); !numSameBits(got[i], w) {
				fails.errorf("%v rem(%v, %v) = %v, want %v", dt, x[i], y[i], got[i], w)
			}
		}
		x = x[:4000] // moderate magnitudes: their quotients by s are cheap for math.Mod
		for _, s := range []float64{0.1, -3, 1e-300, 7} {
			s = numRound(dt, s)
			sp := ewSplat(ewFrom([]float64{s}, dt), len(x))
			vs := ewF64(interp.Bind1(prims.Rem, nil, ewTensor(ewFrom(x, dt), len(x)), sp))
			sv := ewF64(interp.Bind1(prims.Rem, nil, sp, ewTensor(ewFrom(x, dt), len(x))))
			for i, v := range x {
				if w := numRound(dt, math.Mod(v, s)); !numSameBits(vs[i], w) {
					fails.errorf("%v rem(%v, %v) = %v, want %v", dt, v, s, vs[i], w)
				}
				if w := numRound(dt, math.Mod(s, v)); !numSameBits(sv[i], w) {
					fails.errorf("%v rem(%v, %v) = %v, want %v", dt, s, v, sv[i], w)
				}
			}
		}
	}
}

// numSameBits reports whether g and w are the same float (NaN matching
// NaN, zeros by sign).
func numSameBits(g, w float64) bool {
	if math.IsNaN(w) {
		return math.IsNaN(g)
	}
	return g == w && math.Signbit(g) == math.Signbit(w)
}

// Benchmarks of the kernels touched here, through the dispatch path
// over 1<<20 elements on one thread, in ns/elem:
//
//	go test -run '^$' -bench 'Log|Pow|Rem' ./backend/cpu/
func BenchmarkLog(b *testing.B) {
	numBenchUnary(b, prims.Log, 0.01, 100)
	numBenchUnary(b, prims.Log1p, -0.5, 100)
}

func BenchmarkRem(b *testing.B) {
	ewBenchSetup(b)
	for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
		x := ewTensor(ewFrom(numBenchValues(-100, 100, 1), dt), ewBenchN)
		y := ewTensor(ewFrom(numBenchValues(0.5, 10, 2), dt), ewBenchN)
		b.Run("vv_"+dt.String(), func(b *testing.B) {
			for b.Loop() {
				interp.Bind1(prims.Rem, nil, x, y)
			}
			ewPerElem(b, ewBenchN)
		})
	}
}

func BenchmarkPow(b *testing.B) {
	ewBenchSetup(b)
	for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
		x := ewTensor(ewFrom(numBenchValues(0.01, 100, 1), dt), ewBenchN)
		y := ewTensor(ewFrom(numBenchValues(-2.5, 2.5, 2), dt), ewBenchN)
		s := interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: []int{ewBenchN}, Dims: []int{}},
			ewTensor(ewFrom([]float64{0.3}, dt)))
		b.Run("vv_"+dt.String(), func(b *testing.B) {
			for b.Loop() {
				interp.Bind1(prims.Pow, nil, x, y)
			}
			ewPerElem(b, ewBenchN)
		})
		b.Run("vs_"+dt.String(), func(b *testing.B) {
			for b.Loop() {
				interp.Bind1(prims.Pow, nil, x, s)
			}
			ewPerElem(b, ewBenchN)
		})
	}
}

func numBenchUnary(b *testing.B, p *interp.Prim, lo, hi float64) {
	ewBenchSetup(b)
	for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
		x := ewTensor(ewFrom(numBenchValues(lo, hi, 1), dt), ewBenchN)
		b.Run(fmt.Sprintf("%s_%v", p.Name, dt), func(b *testing.B) {
			for b.Loop() {
				interp.Bind1(p, nil, x)
			}
			ewPerElem(b, ewBenchN)
		})
	}
}

// numBenchValues returns ewBenchN values uniform in [lo, hi).
func numBenchValues(lo, hi float64, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	v := make([]float64, ewBenchN)
	for i := range v {
		v[i] = lo + (hi-lo)*rng.Float64()
	}
	return v
}
