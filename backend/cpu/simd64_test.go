package cpu

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/peel-ml/peel/internal/testsize"
)

// Tests of the float64 exp, tanh and logistic loops (fastmath64.go): the
// SIMD kernels (simd64_amd64.s) and the scalar loops, which must agree
// bit for bit, and their accuracy against a double-double reference
// (about 2^-95 relative, far below the errors measured).
//
// Errors are measured in ulps of the exact value, as fractions: 0.5 is
// the worst case of a correctly rounded result, and any error below 1
// ulp means the result is one of the two floats around the exact value,
// so within 1 ulp of the correctly rounded one. Maximum errors measured
// with PEEL_EXHAUSTIVE=1 (AMD EPYC, AVX2+FMA; SIMD and scalar identical)
// over 20M evenly spaced inputs on [-750, 750] (exp, logistic) and as
// many on [-20, 20] (tanh, logistic), 1M bit patterns spread over all
// float64 (every binade, NaN, infinities, subnormals) and fine sweeps
// around 0, ±0.5, 19.06, 36.7 and the overflow and underflow thresholds;
// the run with PEEL_FULL set uses 2M evenly spaced inputs per range
// (and 2^20 bit patterns), the default run 200k (and 2^17):
//
//	           normal results   subnormal results
//	exp        0.588 ulp        0.762 ulp
//	tanh       0.580 ulp        0 (tanh x = x there)
//	logistic   0.588 ulp        0.762 ulp
//
// Subnormal results are rounded twice (to 53 bits, then to the
// subnormal's precision), which keeps their error below 1 ulp but not
// near 0.5. The assertions allow m64ULPs and m64SubnormalULPs. For
// comparison, the loops these replace measure 1.33 ulp (math.Tanh) and
// 2.27 ulp (logisticLoop64, e^x/(1 + e^x) for x < 0), and math.Exp
// returns +Inf above about 709.44 (Go 1.26, amd64), short of 709.78.
const (
	m64ULPs          = 0.65
	m64SubnormalULPs = 1
)

// m64DD is an unevaluated sum hi + lo of float64, |lo| ≤ ulp(hi)/2.
type m64DD struct{ hi, lo float64 }

func m64TwoSum(a, b float64) m64DD {
	s := a + b
	bb := s - a
	return m64DD{s, (a - (s - bb)) + (b - bb)}
}

func m64Norm(hi, lo float64) m64DD {
	s := hi + lo
	return m64DD{s, lo - (s - hi)}
}

func (a m64DD) add(b m64DD) m64DD {
	s := m64TwoSum(a.hi, b.hi)
	t := m64TwoSum(a.lo, b.lo)
	s.lo += t.hi
	s = m64Norm(s.hi, s.lo)
	return m64Norm(s.hi, s.lo+t.lo)
}

func (a m64DD) neg() m64DD { return m64DD{-a.hi, -a.lo} }

func (a m64DD) mul(b m64DD) m64DD {
	// The conversions round each product on its own: Go may fuse an
	// unconverted product into the addition that follows (arm64 does),
	// which breaks the error-free transformations.
	p := float64(a.hi * b.hi)
	e := math.FMA(a.hi, b.hi, -p)
	e += float64(a.hi*b.lo) + float64(a.lo*b.hi)
	return m64Norm(p, e)
}

func (a m64DD) div(b m64DD) m64DD {
	q1 := a.hi / b.hi
	r := a.add(b.mul(m64DD{q1, 0}).neg())
	q2 := r.hi / b.hi
	r = r.add(b.mul(m64DD{q2, 0}).neg())
	q3 := r.hi / b.hi
	q := m64Norm(q1, q2)
	return q.add(m64DD{q3, 0})
}

func (a m64DD) ldexp(n int) m64DD { return m64DD{math.Ldexp(a.hi, n), math.Ldexp(a.lo, n)} }

var (
	// m64Ln2 is ln2 as a sum of three float64.
	m64Ln2 = [3]float64{0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56, 0x1.7b57a079a1934p-111}
	// m64InvFact[k] is 1/k! as a double-double.
	m64InvFact = func() (f [14]m64DD) {
		f[0] = m64DD{1, 0}
		for k := 1; k < len(f); k++ {
			f[k] = f[k-1].div(m64DD{float64(k), 0})
		}
		return f
	}()
)

// m64RefExp returns n and m with e^x = 2^n·m, m in [0.7, 1.42], for
// finite x in [-800, 800].
func m64RefExp(x float64) (int, m64DD) {
	nf := math.Round(x / m64Ln2[0])
	p1 := m64DD{float64(nf * m64Ln2[0]), math.FMA(nf, m64Ln2[0], -float64(nf*m64Ln2[0]))}
	p2 := m64DD{float64(nf * m64Ln2[1]), math.FMA(nf, m64Ln2[1], -float64(nf*m64Ln2[1]))}
	r := m64DD{x, 0}.add(p1.neg()).add(p2.neg()).add(m64DD{float64(-nf * m64Ln2[2]), 0})
	// e^r = (e^(r/64))^64, e^(r/64) from its Taylor series to degree 12.
	r = r.ldexp(-6)
	acc := m64InvFact[12]
	for k := 11; k >= 0; k-- {
		acc = acc.mul(r).add(m64InvFact[k])
	}
	for range 6 {
		acc = acc.mul(acc)
	}
	return int(nf), acc
}

// m64RefTanh returns tanh x, for x not NaN.
func m64RefTanh(x float64) m64DD {
	ax := math.Abs(x)
	var v m64DD
	switch {
	case ax < 0x1p-20:
		t := ax * ax
		v = m64DD{ax, 0}.add(m64DD{ax * t * (-1.0/3 + 2*t/15), 0})
	case ax > 40:
		v = m64DD{1, 0}
	default:
		n, m := m64RefExp(2 * ax)
		e := m.ldexp(n)
		v = e.add(m64DD{-1, 0}).div(e.add(m64DD{1, 0}))
	}
	if x < 0 {
		v = v.neg()
	}
	return v
}

// m64RefLogistic returns n and v with 1/(1+e^-x) = 2^n·v, for x not NaN.
func m64RefLogistic(x float64) (int, m64DD) {
	n, m := m64RefExp(-min(math.Abs(x), 800))
	d := m64DD{1, 0}
	if n > -300 {
		d = d.add(m.ldexp(n))
	}
	if x >= 0 {
		return 0, m64DD{1, 0}.div(d)
	}
	return n, m.div(d)
}

// m64ULPErr returns |y - 2^n·v| in ulps of the exact value 2^n·v (the
// subnormal spacing below 2^-1022); +Inf is taken as 2^1024 for a value
// that is finite, and is the only acceptable result above 2^1024.
func m64ULPErr(y float64, n int, v m64DD) float64 {
	if v.hi == 0 {
		if y == 0 {
			return 0
		}
		return math.Inf(1)
	}
	f, ev := math.Frexp(math.Abs(v.hi))
	if f == 0.5 && v.lo != 0 && (v.lo < 0) != (v.hi < 0) {
		ev-- // just below a power of two
	}
	e := n + ev - 1 // 2^e ≤ |2^n·v| < 2^(e+1)
	if e >= 1024 {
		if math.IsInf(y, 0) && (y < 0) == (v.hi < 0) {
			return 0
		}
		return math.Inf(1)
	}
	var ys float64
	if math.IsInf(y, 0) {
		ys = math.Copysign(math.Ldexp(1, 1024-n), y)
	} else {
		ys = math.Ldexp(y, -n)
	}
	d := (ys - v.hi) - v.lo
	return math.Ldexp(math.Abs(d), n-(max(e, -1022)-52))
}

type m64Case struct {
	name   string
	vec    func(d, a []float64) // the SIMD path (the scalar loop where there is none)
	scalar func(d, a []float64)
	// err returns the error of y = f(x) in ulps, for x not NaN.
	err func(x, y float64) float64
	// lims: the even sweeps cover [-lim, lim] for each; edges: points
	// around which a fine sweep runs.
	lims  []float64
	edges []float64
}

var m64Cases = []m64Case{
	{"exp", exp64Vec, exp64Scalar,
		func(x, y float64) float64 {
			n, m := m64RefExp(max(min(x, 800), -800))
			return m64ULPErr(y, n, m)
		},
		[]float64{750}, []float64{709.782712893384, -708.3964185322641, -744.4400719213812, -745.1332191019412, 0}},
	{"tanh", tanh64Vec, tanh64Scalar,
		func(x, y float64) float64 { return m64ULPErr(y, 0, m64RefTanh(x)) },
		[]float64{20}, []float64{0.5, -0.5, 0.3, -0.3, 19.06, 0}},
	{"logistic", logistic64Vec, logistic64Scalar,
		func(x, y float64) float64 {
			n, v := m64RefLogistic(x)
			return m64ULPErr(y, n, v)
		},
		[]float64{750, 20}, []float64{-708.3964185322641, -744.4400719213812, -745.1332191019412, 0, 36.7}},
}

// m64Specials are inputs every test includes.
var m64Specials = []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), -math.NaN(),
	math.MaxFloat64, -math.MaxFloat64, 5e-324, -5e-324, 0x1p-1022, -0x1p-1022, 1e-300, -1e-300,
	1e-17, -1e-17, 0x1p-27, -0x1p-27, 0.5, -0.5, math.Nextafter(0.5, 0), math.Nextafter(-0.5, 0),
	709.782712893384, math.Nextafter(709.782712893384, 1000), 710, 745.1332191019412, 746, 1000,
	-708.3964185322641, -744.4400719213812, -745.1332191019412, math.Nextafter(-745.1332191019412, 0),
	-746, -1000, 19.06, 20, 36.7, 37, 40, -40, 1, -1, 0.1, -0.1}

// m64Inputs returns n evenly spaced values in [-lim, lim] for each of
// c.lims, bits patterns spread over all float64 (NaN, infinities and
// subnormals included), fine sweeps around the edges and m64Specials.
func m64Inputs(c m64Case, n, bits int) []float64 {
	v := make([]float64, 0, n*len(c.lims)+bits+len(c.edges)*2*4096+len(m64Specials))
	for _, lim := range c.lims {
		for i := range n {
			v = append(v, -lim+2*lim*(float64(i)+0.5)/float64(n))
		}
	}
	stride := uint64(math.MaxUint64)/uint64(bits) | 1
	for i := range bits {
		v = append(v, math.Float64frombits(uint64(i)*stride))
	}
	for _, e := range c.edges {
		for i := -4096; i < 4096; i++ {
			v = append(v, e+float64(i)*0x1p-16)
		}
	}
	return append(v, m64Specials...)
}

// m64Worst is the largest error found and an input where it occurs.
type m64Worst struct{ err, at float64 }

func (w *m64Worst) add(e, x float64) {
	if e > w.err || e != e {
		w.err, w.at = e, x
	}
}

// m64Check runs c over in (in parallel chunks) through both paths and
// returns the largest errors for results of normal magnitude (or 0, or
// infinite) and for subnormal results, and the first input where the
// paths differ (ok false).
func m64Check(c m64Case, in []float64) (normal, subnormal m64Worst, diffAt float64, ok bool) {
	vec, sca := make([]float64, len(in)), make([]float64, len(in))
	workers := runtime.GOMAXPROCS(0)
	chunk := (len(in) + workers - 1) / workers
	var mu sync.Mutex
	var wg sync.WaitGroup
	ok = true
	for lo := 0; lo < len(in); lo += chunk {
		hi := min(lo+chunk, len(in))
		wg.Go(func() {
			c.vec(vec[lo:hi], in[lo:hi])
			c.scalar(sca[lo:hi], in[lo:hi])
			var wn, ws m64Worst
			var dx float64
			same := true
			for i := lo; i < hi; i++ {
				x, y := in[i], vec[i]
				if same && !sameBits(y, sca[i]) {
					same, dx = false, x
				}
				var e float64
				if x != x {
					if y == y {
						e = math.Inf(1)
					}
				} else {
					e = c.err(x, y)
				}
				if y != 0 && math.Abs(y) < 0x1p-1022 {
					ws.add(e, x)
				} else {
					wn.add(e, x)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			normal.add(wn.err, wn.at)
			subnormal.add(ws.err, ws.at)
			if !same && ok {
				ok, diffAt = false, dx
			}
		})
	}
	wg.Wait()
	return normal, subnormal, diffAt, ok
}

// TestMath64Accuracy measures the float64 loops against the
// double-double reference and checks that the SIMD and scalar paths
// agree bit for bit.
func TestMath64Accuracy(t *testing.T) {
	n, bits := testsize.Pick(200_000, 2_000_000), testsize.Pick(1<<17, 1<<20)
	switch {
	case os.Getenv("PEEL_EXHAUSTIVE") != "":
		n, bits = 20_000_000, 1<<20
	case testing.Short():
		n, bits = 50_000, 1<<14
	}
	for _, c := range m64Cases {
		in := m64Inputs(c, n, bits)
		normal, sub, diffAt, ok := m64Check(c, in)
		t.Logf("%s: max error %.3f ulp (at %v), subnormal results %.3f ulp (at %v), over %d inputs",
			c.name, normal.err, normal.at, sub.err, sub.at, len(in))
		for _, w := range []struct {
			m64Worst
			bound float64
		}{{normal, m64ULPs}, {sub, m64SubnormalULPs}} {
			if !(w.err <= w.bound) {
				d := []float64{0}
				c.vec(d, []float64{w.at})
				t.Errorf("%s: %.3f ulps at %v: got %v", c.name, w.err, w.at, d[0])
			}
		}
		if !ok {
			d, s := []float64{0}, []float64{0}
			c.vec(d, []float64{diffAt})
			c.scalar(s, []float64{diffAt})
			t.Errorf("%s(%v): SIMD %v, scalar %v", c.name, diffAt, d[0], s[0])
		}
	}
}

// TestMath64Special checks exact results: NaN, infinities, signed zeros,
// tiny arguments, saturation, overflow and underflow.
func TestMath64Special(t *testing.T) {
	nan, inf, negZero := math.NaN(), math.Inf(1), math.Copysign(0, -1)
	type fn = func(d, a []float64)
	var cases []struct {
		name string
		f    fn
		x    float64
		want float64
	}
	add := func(name string, f fn, x, want float64) {
		cases = append(cases, struct {
			name string
			f    fn
			x    float64
			want float64
		}{name, f, x, want})
	}
	for _, impl := range []struct {
		suffix             string
		exp, tanh, logistc fn
	}{{"", exp64Vec, tanh64Vec, logistic64Vec}, {"/scalar", exp64Scalar, tanh64Scalar, logistic64Scalar},
		{"/loop", exp64Loop, tanh64Loop, logistic64Loop}} {
		e, th, lg := "exp"+impl.suffix, "tanh"+impl.suffix, "logistic"+impl.suffix
		for _, c := range []struct {
			x, want float64
		}{{nan, nan}, {-nan, nan}, {inf, inf}, {-inf, 0}, {0, 1}, {negZero, 1}, {1e-300, 1}, {-1e-300, 1},
			{0x1p-54, 1}, {1, math.E}, {710, inf}, {709.79, inf}, {math.MaxFloat64, inf}, {-746, 0},
			{-745.14, 0}, {-math.MaxFloat64, 0}, {-745.13, 5e-324}, {-744.44, 5e-324}} {
			add(e, impl.exp, c.x, c.want)
		}
		for _, c := range []struct {
			x, want float64
		}{{nan, nan}, {-nan, nan}, {inf, 1}, {-inf, -1}, {0, 0}, {negZero, negZero}, {5e-324, 5e-324},
			{-5e-324, -5e-324}, {1e-300, 1e-300}, {-1e-300, -1e-300}, {0x1p-27, 0x1p-27}, {19.1, 1}, {-19.1, -1},
			{25, 1}, {-1000, -1}, {math.MaxFloat64, 1}} {
			add(th, impl.tanh, c.x, c.want)
		}
		for _, c := range []struct {
			x, want float64
		}{{nan, nan}, {-nan, nan}, {inf, 1}, {-inf, 0}, {0, 0.5}, {negZero, 0.5}, {1e-300, 0.5},
			{-1e-300, 0.5}, {38, 1}, {800, 1}, {-746, 0}, {-1000, 0}, {-745.13, 5e-324}} {
			add(lg, impl.logistc, c.x, c.want)
		}
	}
	for _, c := range cases {
		d := []float64{42}
		c.f(d, []float64{c.x})
		got := d[0]
		ok := got == c.want && math.Signbit(got) == math.Signbit(c.want)
		if c.want != c.want {
			ok = got != got
		}
		if !ok {
			t.Errorf("%s(%v) = %v, want %v", c.name, c.x, got, c.want)
		}
	}
}

// TestMath64Lengths checks every length up to a few 64-element blocks
// (the kernels' two-pass blocks, single vectors and partial tails), that
// nothing past len(d) is written, that the result does not depend on an
// element's position, and in-place use.
func TestMath64Lengths(t *testing.T) {
	const guard = -12345.0
	for _, c := range m64Cases {
		src := make([]float64, 200)
		for i := range src {
			src[i] = float64(i%97)*0.23 - 11
		}
		want := make([]float64, len(src))
		for i := range src {
			c.scalar(want[i:i+1], src[i:i+1])
		}
		for n := range len(src) - 3 {
			for off := range 3 {
				buf := slices.Repeat([]float64{guard}, n+off+5)
				d := buf[off : off+n]
				c.vec(d, src[:n+3]) // a may be longer than d
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

// BenchmarkMath64 times the float64 loops alone over 128 and 1<<16
// elements, in ns/elem: simd (the AVX2 kernel, or the scalar loop where
// there is none), scalar (the portable polynomial loop) and math (the
// math package, the loops these replace).
func BenchmarkMath64(b *testing.B) {
	for _, n := range []int{128, 1 << 16} {
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(i%8000)/1000 - 4
		}
		d := make([]float64, n)
		loops := []struct {
			name string
			f    func(d, a []float64)
		}{
			{"exp/simd", exp64Vec}, {"exp/scalar", exp64Scalar}, {"exp/math", expLoop64},
			{"tanh/simd", tanh64Vec}, {"tanh/scalar", tanh64Scalar}, {"tanh/math", tanhLoop64},
			{"logistic/simd", logistic64Vec}, {"logistic/scalar", logistic64Scalar}, {"logistic/math", logisticLoop64},
		}
		for _, l := range loops {
			b.Run(fmt.Sprintf("%s/n=%d", l.name, n), func(b *testing.B) {
				for b.Loop() {
					l.f(d, x)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/elem")
			})
		}
	}
}
