package cpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Tests of the elementwise, reduction and miscellaneous kernels. Every
// kernel is called through the real dispatch path (interp.Bind) and
// compared against float64 references computed here.

// ewTensor returns a contiguous tensor holding data (a []bool, []int64,
// []float32 or []float64) with the given shape.
func ewTensor(data any, shape ...int) *interp.Tensor {
	be := cpu.New()
	return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(data), Shape: shape})
}

// ewTransposed returns a tensor with data's values (row-major for shape
// [m, n]) that is a transposed, non-contiguous view.
func ewTransposed[T any](data []T, m, n int) *interp.Tensor {
	tr := make([]T, len(data))
	for i := range m {
		for j := range n {
			tr[j*m+i] = data[i*n+j]
		}
	}
	v := interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: []int{1, 0}}, ewTensor(tr, n, m))
	if a, _ := interp.ArrayOf(v); a.IsContiguous() && m > 1 && n > 1 {
		panic("transposed view is contiguous")
	}
	return v
}

// ewSplat broadcasts the single value v (a one-element slice) to shape.
func ewSplat(v any, shape ...int) *interp.Tensor {
	s := ewTensor(v)
	return interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: shape, Dims: []int{}}, s)
}

// ewHost returns t's elements in row-major order.
func ewHost(t *interp.Tensor) any {
	a, be := interp.ArrayOf(t)
	h := be.ToHost(a)
	runtime.KeepAlive(t)
	return h
}

// ewF64 converts t's elements to float64 (bools to 0/1).
func ewF64(t *interp.Tensor) []float64 {
	switch h := ewHost(t).(type) {
	case []bool:
		out := make([]float64, len(h))
		for i, b := range h {
			if b {
				out[i] = 1
			}
		}
		return out
	case []int64:
		out := make([]float64, len(h))
		for i, v := range h {
			out[i] = float64(v)
		}
		return out
	case []float32:
		out := make([]float64, len(h))
		for i, v := range h {
			out[i] = float64(v)
		}
		return out
	case []float64:
		return h
	}
	panic("unknown host type")
}

// ewRound rounds float64 values to dtype dt's precision (float32 only).
func ewRound(v []float64, dt backend.DType) []float64 {
	out := slices.Clone(v)
	if dt == backend.Float32 {
		for i, x := range out {
			out[i] = float64(float32(x))
		}
	}
	return out
}

// ewFrom converts float64 values to a slice of dtype dt.
func ewFrom(v []float64, dt backend.DType) any {
	switch dt {
	case backend.Bool:
		out := make([]bool, len(v))
		for i, x := range v {
			out[i] = x != 0
		}
		return out
	case backend.Int64:
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = int64(x)
		}
		return out
	case backend.Float32:
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(x)
		}
		return out
	}
	return slices.Clone(v)
}

// ulpDiff32 is the distance between two float32 values in units in the
// last place (0 when both are NaN; huge when only one is).
func ulpDiff32(a, b float32) float64 {
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

// ewSameF64 reports whether got equals want, NaN matching NaN, with the
// relative tolerance tol.
func ewSameF64(got, want, tol float64) bool {
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) && math.IsNaN(got)
	}
	if got == want {
		return true
	}
	if math.IsInf(want, 0) || math.IsInf(got, 0) {
		return false
	}
	return math.Abs(got-want) <= tol*math.Abs(want)
}

// Edge values of float inputs.
var ewFloatEdges = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5,
	1e-30, -1e-30, 1e-40, 3, -3, 10, -10, 30, -30, 88, -88, 89, -89, 100, -105, 200, -200, 1e30, -1e30,
	math.Inf(1), math.Inf(-1), math.NaN(), 0.7, -0.7, 1e-7, 8.9, -8.9, 9.5, -9.5}

// ewShapes are the shapes the elementwise tests run on.
var ewShapes = [][]int{{}, {0}, {3, 0}, {1}, {7}, {4, 5}, {2, 3, 5}, {70000}}

func ewValues(rng *rand.Rand, n int, edges []float64, scale float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		if i < len(edges) && rng.IntN(2) == 0 {
			v[i] = edges[rng.IntN(len(edges))]
		} else {
			v[i] = (rng.Float64()*2 - 1) * scale
		}
	}
	return v
}

type ewUnary struct {
	p   *interp.Prim
	ref func(float64) float64
	// ulps is the float32 tolerance (in float32 ulps of the correctly
	// rounded reference); float64 results must match within 2 ulps.
	ulps float64
	// dom limits the random operands (edges are always included).
	scale float64
}

func ewLogistic(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

var ewUnaries = []ewUnary{
	{prims.Neg, func(x float64) float64 { return -x }, 0, 100},
	{prims.Abs, math.Abs, 0, 100},
	{prims.Sign, func(x float64) float64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return x
	}, 0, 100},
	{prims.Floor, math.Floor, 0, 100},
	{prims.Ceil, math.Ceil, 0, 100},
	{prims.Round, math.Round, 0, 100},
	{prims.Exp, math.Exp, 1, 90},
	{prims.Log, math.Log, 1, 1e6},
	{prims.Log1p, math.Log1p, 1, 10},
	{prims.Expm1, math.Expm1, 1, 20},
	{prims.Sqrt, math.Sqrt, 0, 1e4},
	{prims.Rsqrt, func(x float64) float64 { return 1 / math.Sqrt(x) }, 1, 1e4},
	{prims.Sin, math.Sin, 1, 10},
	{prims.Cos, math.Cos, 1, 10},
	{prims.Tan, math.Tan, 1, 10},
	{prims.Tanh, math.Tanh, 2, 12},
	{prims.Logistic, ewLogistic, 1, 30},
	{prims.Erf, math.Erf, 1, 5},
}

// TestUnaryFloat checks every float unary primitive on f32 and f64, every
// layout (contiguous, transposed view, broadcast scalar) and the edge
// values.
func TestUnaryFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, u := range ewUnaries {
		for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
			for _, shape := range ewShapes {
				n := backend.ShapeSize(shape)
				vals := ewValues(rng, n, ewFloatEdges, u.scale)
				if dt == backend.Float32 {
					vals = ewRound(vals, dt)
				}
				got := ewF64(interp.Bind1(u.p, nil, ewTensor(ewFrom(vals, dt), shape...)))
				ewCheckUnary(t, u, dt, fmt.Sprint(shape), vals, got)
			}
			// A transposed (strided) operand.
			vals := ewValues(rng, 6*7, ewFloatEdges, u.scale)
			vals = ewRound(vals, dt)
			var x *interp.Tensor
			if dt == backend.Float32 {
				x = ewTransposed(ewFrom(vals, dt).([]float32), 6, 7)
			} else {
				x = ewTransposed(vals, 6, 7)
			}
			ewCheckUnary(t, u, dt, "transposed", vals, ewF64(interp.Bind1(u.p, nil, x)))
			// A broadcast scalar operand.
			for _, v := range []float64{0.75, -2, math.NaN()} {
				got := ewF64(interp.Bind1(u.p, nil, ewSplat(ewFrom([]float64{v}, dt), 3, 4)))
				want := make([]float64, 12)
				for i := range want {
					want[i] = v
				}
				ewCheckUnary(t, u, dt, "splat", want, got)
			}
		}
	}
}

func ewCheckUnary(t *testing.T, u ewUnary, dt backend.DType, what string, in, got []float64) {
	t.Helper()
	if len(got) != len(in) {
		t.Fatalf("%s %v %s: %d results for %d operands", u.p.Name, dt, what, len(got), len(in))
	}
	for i, x := range in {
		want := u.ref(x)
		ok := false
		if dt == backend.Float32 {
			ok = ulpDiff32(float32(got[i]), float32(want)) <= u.ulps
		} else {
			ok = ewSameF64(got[i], want, 4e-16)
		}
		if !ok {
			t.Errorf("%s %v %s: f(%v) = %v, want %v", u.p.Name, dt, what, x, got[i], want)
			return
		}
		if want == 0 && got[i] == 0 && math.Signbit(want) != math.Signbit(got[i]) && u.ulps == 0 {
			t.Errorf("%s %v %s: f(%v) = %v, want %v (sign of zero)", u.p.Name, dt, what, x, got[i], want)
			return
		}
	}
}

// ewSweep32 returns float32 values covering every binade densely: all
// bit patterns with a stride, plus a fine sweep of [-lim, lim].
func ewSweep32(stride uint32, lim float32, fine int) []float32 {
	var v []float32
	for u := uint64(0); u < 1<<32; u += uint64(stride) {
		v = append(v, math.Float32frombits(uint32(u)))
	}
	for i := range fine {
		v = append(v, -lim+2*lim*float32(i)/float32(fine))
	}
	return append(v, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32)
}

// TestFastMath32 measures the float32 approximations of fastmath.go
// against math.* in float64 (rounded once to float32) over a dense sweep:
// every 1021st float32 bit pattern (~4.2M values, all binades, both signs,
// subnormals, ±Inf, NaN) plus 1M evenly spaced values in each function's
// interesting range. The maximum error observed is 1 ulp for exp, expm1,
// logistic, tanh, log, sin, cos, erf and gelu (relative error ≤ 1.2e-7);
// the
// assertion allows 2 ulps.
func TestFastMath32(t *testing.T) {
	cases := []struct {
		p   *interp.Prim
		ref func(float64) float64
		lim float32
	}{
		{prims.Exp, math.Exp, 105},
		{prims.Expm1, math.Expm1, 30},
		{prims.Logistic, ewLogistic, 110},
		{prims.Tanh, math.Tanh, 10},
		{prims.Log, math.Log, 4},
		{prims.Sin, math.Sin, 40},
		{prims.Cos, math.Cos, 40},
		{prims.Erf, math.Erf, 5},
		{prims.GELU, referenceOf(prims.GELU), 16},
	}
	stride := uint32(1021)
	fine := 1 << 20
	if testing.Short() {
		stride, fine = 65521, 1<<14
	}
	for _, c := range cases {
		in := ewSweep32(stride, c.lim, fine)
		if c.p == prims.Log {
			// Values near 1, where log is small.
			for i := range 1 << 12 {
				in = append(in, math.Nextafter32(1, 0)-float32(i)*1e-7, 1+float32(i)*1e-7)
			}
		}
		got := ewHost(interp.Bind1(c.p, nil, ewTensor(in, len(in)))).([]float32)
		var worst float64
		var at float32
		for i, x := range in {
			want := float32(c.ref(float64(x)))
			if d := ulpDiff32(got[i], want); d > worst {
				worst, at = d, x
			}
		}
		t.Logf("%s f32: max error %.0f ulp (at %v) over %d values", c.p.Name, worst, at, len(in))
		if worst > 2 {
			t.Errorf("%s f32: error %.0f ulps at %v (got %v, want %v)", c.p.Name, worst, at,
				got[slices.Index(in, at)], float32(c.ref(float64(at))))
		}
	}
}

// referenceOf is p's float64 meaning (prims.Reference): GELU's and its
// derivative's, with their limits at ±Inf.
func referenceOf(p *interp.Prim) func(float64) float64 {
	r, _ := prims.ReferenceOf(p)
	return r.F
}

// TestGELUGrad32 checks gelu_grad's float32 kernel over the sweep of
// TestFastMath32 within 1 ulp plus 2^-23 absolute: GELU′ has a root
// near −0.7518, where no float32 evaluation keeps relative accuracy (the
// kernel's error there is about 6e-8 absolute, 10 ulps at −1.2). Below
// −√2, where GELU′ falls to −5e-4 at −4 and then to 0, the results must
// keep their relative accuracy: within 2 ulps.
func TestGELUGrad32(t *testing.T) {
	stride, fine := uint32(1021), 1<<20
	if testing.Short() {
		stride, fine = 65521, 1<<14
	}
	in := ewSweep32(stride, 16, fine)
	got := ewHost(interp.Bind1(prims.GELUGrad, nil, ewTensor(in, len(in)))).([]float32)
	var worst, worstTail float64
	for i, x := range in {
		want := float32(referenceOf(prims.GELUGrad)(float64(x)))
		if got[i] == want || (got[i] != got[i] && want != want) {
			continue
		}
		d := math.Abs(float64(got[i]) - float64(want))
		worst = max(worst, d)
		if ulpDiff32(got[i], want) > 1 && d > 0x1p-23 {
			t.Errorf("gelu_grad(%v) = %v, want %v", x, got[i], want)
		}
		if x < -math.Sqrt2 {
			u := ulpDiff32(got[i], want)
			worstTail = max(worstTail, u)
			if u > 2 {
				t.Errorf("gelu_grad(%v) = %v, want %v: %.0f ulps", x, got[i], want, u)
			}
		}
	}
	t.Logf("gelu_grad f32: max absolute error %g over %d values, %.0f ulps below −√2", worst, len(in), worstTail)
}

// Integer and bool unary primitives.
func TestUnaryIntBool(t *testing.T) {
	ints := []int64{0, 1, -1, 7, -7, math.MaxInt64, math.MinInt64, 1 << 40}
	cases := []struct {
		p    *interp.Prim
		want func(int64) int64
	}{
		{prims.Neg, func(x int64) int64 { return -x }},
		{prims.Abs, func(x int64) int64 {
			if x < 0 {
				return -x
			}
			return x
		}},
		{prims.Sign, func(x int64) int64 {
			switch {
			case x > 0:
				return 1
			case x < 0:
				return -1
			}
			return 0
		}},
		{prims.Not, func(x int64) int64 { return ^x }},
		{prims.Copy, func(x int64) int64 { return x }},
	}
	for _, c := range cases {
		got := ewHost(interp.Bind1(c.p, nil, ewTensor(ints, 2, 4))).([]int64)
		for i, x := range ints {
			if got[i] != c.want(x) {
				t.Errorf("%s(%d) = %d, want %d", c.p.Name, x, got[i], c.want(x))
			}
		}
	}
	bs := []bool{true, false, false, true, true}
	got := ewHost(interp.Bind1(prims.Not, nil, ewTensor(bs, 5))).([]bool)
	for i := range bs {
		if got[i] == bs[i] {
			t.Errorf("not(%v) = %v", bs[i], got[i])
		}
	}
	if c := ewHost(interp.Bind1(prims.Copy, nil, ewTensor(bs, 5))).([]bool); !slices.Equal(c, bs) {
		t.Errorf("copy = %v, want %v", c, bs)
	}
	if c := ewHost(interp.Bind1(prims.Not, nil, ewSplat([]bool{true}, 3))).([]bool); !slices.Equal(c, []bool{false, false, false}) {
		t.Errorf("not(splat true) = %v", c)
	}
}

type ewBinary struct {
	p      *interp.Prim
	dtypes []backend.DType
	// ref computes the result in float64 for float dtypes.
	ref func(a, b float64) float64
	// iref computes the result for int64 (nil: ref through float64).
	iref func(a, b int64) int64
	// bref computes the result for bool operands.
	bref   func(a, b bool) bool
	ulps   float64
	toBool bool
}

var (
	ewAll    = []backend.DType{backend.Bool, backend.Int64, backend.Float32, backend.Float64}
	ewNum    = []backend.DType{backend.Int64, backend.Float32, backend.Float64}
	ewFloats = []backend.DType{backend.Float32, backend.Float64}
	ewLogic  = []backend.DType{backend.Bool, backend.Int64}
)

func ewB(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ewIntPow is the reference integer power (wrapping, by repeated
// multiplication).
func ewIntPow(a, b int64) int64 {
	if b < 0 {
		switch {
		case a == 1:
			return 1
		case a == -1:
			if b%2 == 0 {
				return 1
			}
			return -1
		}
		return 0
	}
	r := int64(1)
	for range min(b, 200) {
		r *= a
	}
	if b > 200 && (a == 0 || a == 1 || a == -1) {
		return ewIntPow(a, b%2+2)
	}
	return r
}

// ewNaNMax is math.Max except that NaN wins over +Inf too.
func ewNaNMax(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Max(a, b)
}

func ewNaNMin(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Min(a, b)
}

var ewBinaries = []ewBinary{
	{p: prims.Add, dtypes: ewNum, ref: func(a, b float64) float64 { return a + b }, iref: func(a, b int64) int64 { return a + b }},
	{p: prims.Sub, dtypes: ewNum, ref: func(a, b float64) float64 { return a - b }, iref: func(a, b int64) int64 { return a - b }},
	{p: prims.Mul, dtypes: ewNum, ref: func(a, b float64) float64 { return a * b }, iref: func(a, b int64) int64 { return a * b }},
	{p: prims.Div, dtypes: ewNum, ref: func(a, b float64) float64 { return a / b }, iref: func(a, b int64) int64 {
		if b == 0 {
			return 0
		}
		return a / b
	}},
	{p: prims.Rem, dtypes: ewNum, ref: math.Mod, iref: func(a, b int64) int64 {
		if b == 0 {
			return 0
		}
		return a % b
	}},
	{p: prims.Pow, dtypes: ewNum, ref: math.Pow, iref: ewIntPow, ulps: 1},
	{p: prims.Atan2, dtypes: ewFloats, ref: math.Atan2, ulps: 1},
	{p: prims.Max, dtypes: ewAll, ref: ewNaNMax, iref: func(a, b int64) int64 { return max(a, b) }, bref: func(a, b bool) bool { return a || b }},
	{p: prims.Min, dtypes: ewAll, ref: ewNaNMin, iref: func(a, b int64) int64 { return min(a, b) }, bref: func(a, b bool) bool { return a && b }},
	{p: prims.And, dtypes: ewLogic, iref: func(a, b int64) int64 { return a & b }, bref: func(a, b bool) bool { return a && b }},
	{p: prims.Or, dtypes: ewLogic, iref: func(a, b int64) int64 { return a | b }, bref: func(a, b bool) bool { return a || b }},
	{p: prims.Eq, dtypes: ewAll, toBool: true, ref: func(a, b float64) float64 { return ewB(a == b) }},
	{p: prims.Ne, dtypes: ewAll, toBool: true, ref: func(a, b float64) float64 { return ewB(a != b) }},
	{p: prims.Lt, dtypes: ewAll, toBool: true, ref: func(a, b float64) float64 { return ewB(a < b) }},
	{p: prims.Le, dtypes: ewAll, toBool: true, ref: func(a, b float64) float64 { return ewB(a <= b) }},
	{p: prims.Gt, dtypes: ewAll, toBool: true, ref: func(a, b float64) float64 { return ewB(a > b) }},
	{p: prims.Ge, dtypes: ewAll, toBool: true, ref: func(a, b float64) float64 { return ewB(a >= b) }},
}

// ewOperands returns operand values of dtype dt as float64 (exactly
// representable in dt), with edge values; for ints and bools the values
// are held as float64 of the int64.
func ewOperands(rng *rand.Rand, dt backend.DType, n int) []float64 {
	v := make([]float64, n)
	switch dt {
	case backend.Bool:
		for i := range v {
			v[i] = float64(rng.IntN(2))
		}
	case backend.Int64:
		edges := []float64{0, 1, -1, 2, -2, 3, 63, -64}
		for i := range v {
			if rng.IntN(3) == 0 {
				v[i] = edges[rng.IntN(len(edges))]
			} else {
				v[i] = float64(rng.IntN(21) - 10)
			}
		}
	default:
		edges := []float64{0, math.Copysign(0, -1), 1, -1, 2, 0.5, -3, math.Inf(1), math.Inf(-1), math.NaN(), 1e30, -7.25}
		for i := range v {
			if rng.IntN(3) == 0 {
				v[i] = edges[rng.IntN(len(edges))]
			} else {
				v[i] = math.Round((rng.Float64()*20-10)*64) / 64
			}
		}
		if dt == backend.Float32 {
			v = ewRound(v, dt)
		}
	}
	return v
}

// ewRefBinary computes the expected result of c on one element pair.
func ewRefBinary(c ewBinary, dt backend.DType, a, b float64) float64 {
	switch dt {
	case backend.Bool:
		if c.bref != nil {
			return ewB(c.bref(a != 0, b != 0))
		}
		return c.ref(a, b) // comparisons of 0/1
	case backend.Int64:
		if c.iref != nil {
			return float64(c.iref(int64(a), int64(b)))
		}
		return c.ref(a, b)
	case backend.Float32:
		return float64(float32(c.ref(a, b)))
	}
	return c.ref(a, b)
}

func ewCheckBinary(t *testing.T, c ewBinary, dt backend.DType, what string, a, b, got []float64) {
	t.Helper()
	for i := range got {
		want := ewRefBinary(c, dt, a[i], b[i])
		ok := ewSameF64(got[i], want, 0)
		if !ok && c.ulps > 0 && dt == backend.Float32 {
			ok = ulpDiff32(float32(got[i]), float32(want)) <= c.ulps
		}
		if !ok && c.ulps > 0 && dt == backend.Float64 {
			ok = ewSameF64(got[i], want, 4e-16)
		}
		if !ok {
			t.Errorf("%s %v %s: f(%v, %v) = %v, want %v", c.p.Name, dt, what, a[i], b[i], got[i], want)
			return
		}
	}
}

// TestBinary checks every binary primitive on every dtype it accepts, for
// tensor-tensor, tensor-scalar, scalar-tensor and scalar-scalar operands,
// strided operands, rank 0 and empty shapes.
func TestBinary(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range ewBinaries {
		for _, dt := range c.dtypes {
			for _, shape := range ewShapes {
				n := backend.ShapeSize(shape)
				a, b := ewOperands(rng, dt, n), ewOperands(rng, dt, n)
				x, y := ewTensor(ewFrom(a, dt), shape...), ewTensor(ewFrom(b, dt), shape...)
				ewCheckBinary(t, c, dt, fmt.Sprint(shape), a, b, ewF64(interp.Bind1(c.p, nil, x, y)))
				// Broadcast scalars on either side and both.
				for _, s := range ewOperands(rng, dt, 3) {
					sv := make([]float64, n)
					for i := range sv {
						sv[i] = s
					}
					sx := ewSplat(ewFrom([]float64{s}, dt), shape...)
					ewCheckBinary(t, c, dt, fmt.Sprint(shape, " tensor-scalar"), a, sv, ewF64(interp.Bind1(c.p, nil, x, sx)))
					ewCheckBinary(t, c, dt, fmt.Sprint(shape, " scalar-tensor"), sv, b, ewF64(interp.Bind1(c.p, nil, sx, y)))
					ewCheckBinary(t, c, dt, fmt.Sprint(shape, " scalar-scalar"), sv, sv, ewF64(interp.Bind1(c.p, nil, sx, sx)))
				}
			}
			// Transposed operands, mixed with contiguous ones.
			a, b := ewOperands(rng, dt, 5*6), ewOperands(rng, dt, 5*6)
			xt, yc := ewTransposedAny(a, dt, 5, 6), ewTensor(ewFrom(b, dt), 5, 6)
			ewCheckBinary(t, c, dt, "transposed-contiguous", a, b, ewF64(interp.Bind1(c.p, nil, xt, yc)))
			ewCheckBinary(t, c, dt, "contiguous-transposed", b, a, ewF64(interp.Bind1(c.p, nil, yc, xt)))
		}
	}
}

func ewTransposedAny(v []float64, dt backend.DType, m, n int) *interp.Tensor {
	switch d := ewFrom(v, dt).(type) {
	case []bool:
		return ewTransposed(d, m, n)
	case []int64:
		return ewTransposed(d, m, n)
	case []float32:
		return ewTransposed(d, m, n)
	case []float64:
		return ewTransposed(d, m, n)
	}
	panic("dtype")
}

// TestIntegerEdges pins the integer semantics that must never panic.
func TestIntegerEdges(t *testing.T) {
	const mn, mx = math.MinInt64, math.MaxInt64
	cases := []struct {
		p    *interp.Prim
		a, b int64
		want int64
	}{
		{prims.Div, 7, 0, 0},
		{prims.Div, -7, 2, -3},
		{prims.Div, mn, -1, mn},
		{prims.Rem, 7, 0, 0},
		{prims.Rem, -7, 2, -1},
		{prims.Rem, 7, -2, 1},
		{prims.Rem, mn, -1, 0},
		{prims.Pow, 2, 10, 1024},
		{prims.Pow, 3, 0, 1},
		{prims.Pow, 0, 0, 1},
		{prims.Pow, 2, -1, 0},
		{prims.Pow, 0, -1, 0},
		{prims.Pow, 1, -5, 1},
		{prims.Pow, -1, -5, -1},
		{prims.Pow, -1, -4, 1},
		{prims.Pow, -2, 3, -8},
		{prims.Pow, 2, 64, 0},
		{prims.Pow, 3, 41, 3 * 12157665459056928801 % (1 << 63)},
		{prims.Add, mx, 1, mn},
		{prims.Mul, mx, 2, -2},
		{prims.Sub, mn, 1, mx},
	}
	for _, c := range cases {
		if c.p == prims.Pow && c.a == 3 && c.b == 41 {
			c.want = ewIntPow(3, 41)
		}
		for _, layout := range []string{"vv", "vs", "sv", "ss"} {
			var x, y *interp.Tensor
			switch layout {
			case "vv":
				x, y = ewTensor([]int64{c.a, c.a}, 2), ewTensor([]int64{c.b, c.b}, 2)
			case "vs":
				x, y = ewTensor([]int64{c.a, c.a}, 2), ewSplat([]int64{c.b}, 2)
			case "sv":
				x, y = ewSplat([]int64{c.a}, 2), ewTensor([]int64{c.b, c.b}, 2)
			default:
				x, y = ewSplat([]int64{c.a}, 2), ewSplat([]int64{c.b}, 2)
			}
			got := ewHost(interp.Bind1(c.p, nil, x, y)).([]int64)
			if got[0] != c.want || got[1] != c.want {
				t.Errorf("%s(%d, %d) %s = %v, want %d", c.p.Name, c.a, c.b, layout, got, c.want)
			}
		}
	}
	// abs and neg of MinInt64 wrap.
	if got := ewHost(interp.Bind1(prims.Abs, nil, ewTensor([]int64{mn}))).([]int64); got[0] != mn {
		t.Errorf("abs(MinInt64) = %d", got[0])
	}
}

// TestFloatEdges pins NaN propagation, signed zeros and rounding.
func TestFloatEdges(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	neg0 := math.Copysign(0, -1)
	for _, dt := range ewFloats {
		bin := func(p *interp.Prim, a, b float64) float64 {
			return ewF64(interp.Bind1(p, nil, ewTensor(ewFrom([]float64{a}, dt)), ewTensor(ewFrom([]float64{b}, dt))))[0]
		}
		un := func(p *interp.Prim, a float64) float64 {
			return ewF64(interp.Bind1(p, nil, ewTensor(ewFrom([]float64{a}, dt))))[0]
		}
		if !math.IsNaN(bin(prims.Max, nan, 1)) || !math.IsNaN(bin(prims.Max, 1, nan)) ||
			!math.IsNaN(bin(prims.Min, nan, 1)) || !math.IsNaN(bin(prims.Min, 1, nan)) {
			t.Errorf("%v: max/min do not propagate NaN", dt)
		}
		if v := bin(prims.Max, neg0, 0); math.Signbit(v) {
			t.Errorf("%v: max(-0, 0) = -0", dt)
		}
		if v := bin(prims.Min, 0, neg0); !math.Signbit(v) {
			t.Errorf("%v: min(0, -0) = +0", dt)
		}
		for _, c := range [][2]float64{{2.5, 3}, {-2.5, -3}, {0.5, 1}, {-0.5, -1}, {1.49999, 1}} {
			if v := un(prims.Round, c[0]); v != c[1] {
				t.Errorf("%v: round(%v) = %v, want %v", dt, c[0], v, c[1])
			}
		}
		if v := un(prims.Sign, neg0); v != 0 || !math.Signbit(v) {
			t.Errorf("%v: sign(-0) = %v", dt, v)
		}
		if v := un(prims.Sign, nan); !math.IsNaN(v) {
			t.Errorf("%v: sign(NaN) = %v", dt, v)
		}
		if v := un(prims.Logistic, -inf); v != 0 {
			t.Errorf("%v: logistic(-Inf) = %v", dt, v)
		}
		if v := un(prims.Logistic, inf); v != 1 {
			t.Errorf("%v: logistic(+Inf) = %v", dt, v)
		}
		// logistic keeps relative precision far in the tail.
		if v, want := un(prims.Logistic, -80), math.Exp(-80); math.Abs(v-want) > 1e-6*want {
			t.Errorf("%v: logistic(-80) = %v, want %v", dt, v, want)
		}
		if v := un(prims.Tanh, 1e-40); dt == backend.Float32 && v != float64(float32(1e-40)) {
			t.Errorf("%v: tanh(1e-40) = %v", dt, v)
		}
		if v := un(prims.Expm1, neg0); v != 0 || !math.Signbit(v) {
			t.Errorf("%v: expm1(-0) = %v", dt, v)
		}
		if v := un(prims.Log, neg0); !math.IsInf(v, -1) {
			t.Errorf("%v: log(-0) = %v", dt, v)
		}
		if v := un(prims.Log, -1); !math.IsNaN(v) {
			t.Errorf("%v: log(-1) = %v", dt, v)
		}
		if v := bin(prims.Pow, 3, 2); v != 9 {
			t.Errorf("%v: pow(3, 2) = %v", dt, v)
		}
		if v := bin(prims.Rem, -7, 2); v != -1 {
			t.Errorf("%v: rem(-7, 2) = %v", dt, v)
		}
	}
}

// TestSelect covers every combination of broadcast and tensor operands.
func TestSelect(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, dt := range ewAll {
		for _, shape := range [][]int{{}, {0}, {9}, {3, 4}} {
			n := backend.ShapeSize(shape)
			p := ewOperands(rng, backend.Bool, n)
			a, b := ewOperands(rng, dt, n), ewOperands(rng, dt, n)
			sp, sa, sb := ewOperands(rng, backend.Bool, 1)[0], ewOperands(rng, dt, 1)[0], ewOperands(rng, dt, 1)[0]
			for mask := range 8 {
				pv, av, bv := p, a, b
				pt, at, bt := ewTensor(ewFrom(p, backend.Bool), shape...), ewTensor(ewFrom(a, dt), shape...), ewTensor(ewFrom(b, dt), shape...)
				rep := func(v float64) []float64 {
					r := make([]float64, n)
					for i := range r {
						r[i] = v
					}
					return r
				}
				if mask&1 != 0 {
					pv, pt = rep(sp), ewSplat(ewFrom([]float64{sp}, backend.Bool), shape...)
				}
				if mask&2 != 0 {
					av, at = rep(sa), ewSplat(ewFrom([]float64{sa}, dt), shape...)
				}
				if mask&4 != 0 {
					bv, bt = rep(sb), ewSplat(ewFrom([]float64{sb}, dt), shape...)
				}
				got := ewF64(interp.Bind1(prims.Where, nil, pt, at, bt))
				for i := range got {
					want := bv[i]
					if pv[i] != 0 {
						want = av[i]
					}
					if !ewSameF64(got[i], want, 0) {
						t.Fatalf("select %v %v mask %d: element %d = %v, want %v", dt, shape, mask, i, got[i], want)
					}
				}
			}
		}
	}
	// A transposed predicate.
	p := []bool{true, false, false, true, true, false}
	got := ewHost(interp.Bind1(prims.Where, nil, ewTransposed(p, 2, 3),
		ewTensor([]float64{1, 2, 3, 4, 5, 6}, 2, 3), ewSplat([]float64{0}, 2, 3))).([]float64)
	if want := []float64{1, 0, 0, 4, 5, 0}; !slices.Equal(got, want) {
		t.Errorf("select with transposed predicate = %v, want %v", got, want)
	}
}

// TestConvert covers all 16 dtype pairs and the float→int edge cases.
func TestConvert(t *testing.T) {
	vals := []float64{0, 1, -1, 2.75, -2.75, 0.5, -0.5, 1e3, 123456789, math.NaN(), math.Inf(1), math.Inf(-1),
		1e19, -1e19, 9.223372036854775e18, -9.223372036854775808e18, math.Copysign(0, -1)}
	for _, from := range ewAll {
		for _, to := range ewAll {
			var src []float64
			switch from {
			case backend.Bool:
				src = []float64{0, 1, 1, 0}
			case backend.Int64:
				src = []float64{0, 1, -1, 7, -7, 1 << 40, 1<<53 + 1, -(1 << 62)}
			default:
				src = ewRound(vals, from)
			}
			x := ewTensor(ewFrom(src, from), len(src))
			got := ewHost(interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: to}, x))
			for i, v := range src {
				if from == backend.Int64 && i == 6 {
					v = 1<<53 + 1 // held exactly only as int64
				}
				var ok bool
				var want any
				switch g := got.(type) {
				case []bool:
					want = v != 0
					ok = g[i] == want
				case []int64:
					var w int64
					switch {
					case math.IsNaN(v):
					case v >= 0x1p63:
						w = math.MaxInt64
					case v <= -0x1p63:
						w = math.MinInt64
					default:
						w = int64(v)
					}
					if from == backend.Int64 {
						w = ewHost(x).([]int64)[i]
					}
					want, ok = w, g[i] == w
				case []float32:
					w := float32(v)
					if from == backend.Int64 {
						w = float32(ewHost(x).([]int64)[i])
					}
					want, ok = w, g[i] == w || (w != w && g[i] != g[i])
				case []float64:
					w := v
					if from == backend.Int64 {
						w = float64(ewHost(x).([]int64)[i])
					}
					want, ok = w, g[i] == w || (w != w && g[i] != g[i])
				}
				if !ok {
					t.Errorf("convert %v→%v of %v = %v, want %v", from, to, v, ewAt(got, i), want)
				}
			}
		}
	}
	// A broadcast scalar.
	got := ewHost(interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: backend.Int64}, ewSplat([]float32{-3.9}, 3))).([]int64)
	if !slices.Equal(got, []int64{-3, -3, -3}) {
		t.Errorf("convert of splat -3.9 = %v", got)
	}
}

func ewAt(h any, i int) any {
	switch g := h.(type) {
	case []bool:
		return g[i]
	case []int64:
		return g[i]
	case []float32:
		return g[i]
	case []float64:
		return g[i]
	}
	return nil
}

// ---------------------------------------------------------------------------
// Reductions.

// ewRefReduce reduces x (shape) over axes in float64.
func ewRefReduce(x []float64, shape, axes []int, op string) ([]float64, []int) {
	red := make([]bool, len(shape))
	for _, a := range axes {
		red[a] = true
	}
	var oshape []int
	for k, d := range shape {
		if !red[k] {
			oshape = append(oshape, d)
		}
	}
	out := make([]float64, backend.ShapeSize(oshape))
	init := map[string]float64{"sum": 0, "prod": 1, "max": math.Inf(-1), "min": math.Inf(1)}[op]
	for i := range out {
		out[i] = init
	}
	idx := make([]int, len(shape))
	for i := range x {
		// Unravel i and ravel the kept indices.
		r := i
		for k := len(shape) - 1; k >= 0; k-- {
			idx[k] = r % shape[k]
			r /= shape[k]
		}
		o := 0
		for k, d := range shape {
			if !red[k] {
				o = o*d + idx[k]
			}
		}
		v := x[i]
		switch op {
		case "sum":
			out[o] += v
		case "prod":
			out[o] *= v
		case "max":
			out[o] = ewNaNMax(out[o], v)
		case "min":
			out[o] = ewNaNMin(out[o], v)
		}
	}
	if oshape == nil {
		oshape = []int{}
	}
	return out, oshape
}

var ewReduces = []struct {
	p  *interp.Prim
	op string
}{
	{prims.ReduceSum, "sum"}, {prims.ReduceProd, "prod"}, {prims.ReduceMax, "max"}, {prims.ReduceMin, "min"},
}

// ewCheckReduce runs one reduction and compares with the reference.
func ewCheckReduce(t interface {
	Helper()
	Fatalf(string, ...any)
}, p *interp.Prim, op string, dt backend.DType, x []float64, shape, axes []int, strided bool) {
	t.Helper()
	var xt *interp.Tensor
	if strided && len(shape) == 2 {
		xt = ewTransposedAny(x, dt, shape[0], shape[1])
	} else {
		xt = ewTensor(ewFrom(x, dt), shape...)
	}
	want, wshape := ewRefReduce(x, shape, axes, op)
	res := interp.Bind1(p, prims.ReduceParams{Axes: axes}, xt)
	if !slices.Equal(res.Shape(), wshape) {
		t.Fatalf("%s %v %v axes %v: shape %v, want %v", p.Name, dt, shape, axes, res.Shape(), wshape)
	}
	got := ewF64(res)
	for i := range want {
		w := want[i]
		switch dt {
		case backend.Bool:
			w = ewB(w != 0)
		case backend.Float32:
			w = float64(float32(w))
		}
		tol := 0.0
		if dt.IsFloat() && (op == "sum" || op == "prod") {
			tol = 1e-12
			if dt == backend.Float32 {
				tol = 2e-7
			}
		}
		if !ewSameF64(got[i], w, tol) && !(op == "sum" && math.Abs(got[i]-w) < 1e-12) {
			t.Fatalf("%s %v %v axes %v strided=%v: element %d = %v, want %v", p.Name, dt, shape, axes, strided, i, got[i], w)
		}
	}
}

// TestReduce checks reductions against the float64 reference over random
// shapes (size-0 and size-1 dimensions included), random axis subsets and
// layouts.
func TestReduce(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rank := rapid.IntRange(0, 4).Draw(rt, "rank")
		shape := make([]int, rank)
		for k := range shape {
			shape[k] = rapid.IntRange(0, 5).Draw(rt, fmt.Sprint("d", k))
		}
		var axes []int
		for k := range rank {
			if rapid.Bool().Draw(rt, fmt.Sprint("ax", k)) {
				axes = append(axes, k)
			}
		}
		if axes == nil {
			axes = []int{}
		}
		r := ewReduces[rapid.IntRange(0, 3).Draw(rt, "op")]
		dts := ewNum
		if r.op == "max" || r.op == "min" {
			dts = ewAll
			for _, a := range axes {
				if shape[a] == 0 {
					return // rejected by the shape rule
				}
			}
		}
		dt := dts[rapid.IntRange(0, len(dts)-1).Draw(rt, "dt")]
		n := backend.ShapeSize(shape)
		x := make([]float64, n)
		for i := range x {
			switch dt {
			case backend.Bool:
				x[i] = float64(rapid.IntRange(0, 1).Draw(rt, "b"))
			case backend.Int64:
				x[i] = float64(rapid.IntRange(-4, 4).Draw(rt, "i"))
			default:
				x[i] = float64(rapid.IntRange(-64, 64).Draw(rt, "f")) / 16
			}
		}
		ewCheckReduce(rt, r.p, r.op, dt, x, shape, axes, rapid.Bool().Draw(rt, "strided"))
	})
}

// TestReduceLarge exercises the parallel paths, NaN propagation and the
// independence of results from the thread count.
func TestReduceLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	cases := []struct {
		shape []int
		axes  []int
	}{
		{[]int{300000}, []int{0}},
		{[]int{1000, 300}, []int{1}},
		{[]int{300, 1000}, []int{0}},
		{[]int{31, 4099}, []int{0}}, // rows past the SIMD chunk, with a tail
		{[]int{5, 13}, []int{0}},
		{[]int{20, 300, 50}, []int{1}},
		{[]int{20, 300, 50}, []int{0, 2}},
		{[]int{7, 11, 13, 17}, []int{0, 2}},
		{[]int{7, 11, 13, 17}, []int{1, 3}},
	}
	defer cpu.SetThreads(0)
	for _, c := range cases {
		n := backend.ShapeSize(c.shape)
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.Float64()*2 - 1
		}
		for _, r := range ewReduces {
			if r.op == "prod" {
				for i := range x {
					x[i] = 1 + (rng.Float64()-0.5)*1e-3
				}
			}
			for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
				xv := ewRound(x, dt)
				var first []float64
				for _, th := range []int{1, 3, 8} {
					cpu.SetThreads(th)
					ewCheckReduce(t, r.p, r.op, dt, xv, c.shape, c.axes, false)
					got := ewF64(interp.Bind1(r.p, prims.ReduceParams{Axes: c.axes}, ewTensor(ewFrom(xv, dt), c.shape...)))
					if first == nil {
						first = got
					} else if !slices.Equal(first, got) {
						t.Errorf("%s %v %v: result depends on the thread count", r.p.Name, dt, c.shape)
					}
				}
			}
		}
	}
	// NaN propagates through max and min.
	for _, p := range []*interp.Prim{prims.ReduceMax, prims.ReduceMin, prims.ReduceSum} {
		x := []float64{1, 2, math.NaN(), 4, 5, 6}
		got := ewF64(interp.Bind1(p, prims.ReduceParams{Axes: []int{1}}, ewTensor(x, 2, 3)))
		if !math.IsNaN(got[0]) || math.IsNaN(got[1]) {
			t.Errorf("%s with a NaN = %v", p.Name, got)
		}
	}
	// Empty sums and products are the identity.
	for _, c := range []struct {
		p    *interp.Prim
		want float64
	}{{prims.ReduceSum, 0}, {prims.ReduceProd, 1}} {
		got := ewF64(interp.Bind1(c.p, prims.ReduceParams{Axes: []int{1}}, ewTensor([]float32{}, 3, 0)))
		if !slices.Equal(got, []float64{c.want, c.want, c.want}) {
			t.Errorf("%s over an empty axis = %v", c.p.Name, got)
		}
	}
}

// TestReduceBool: reduce_max is any, reduce_min is all, over leading,
// trailing and all axes.
func TestReduceBool(t *testing.T) {
	x := []bool{
		true, false, false, false,
		true, true, false, false,
		true, false, true, false,
	}
	cases := []struct {
		p    *interp.Prim
		axes []int
		want []bool
	}{
		{prims.ReduceMax, []int{0}, []bool{true, true, true, false}},
		{prims.ReduceMin, []int{0}, []bool{true, false, false, false}},
		{prims.ReduceMax, []int{1}, []bool{true, true, true}},
		{prims.ReduceMin, []int{1}, []bool{false, false, false}},
		{prims.ReduceMax, []int{0, 1}, []bool{true}},
		{prims.ReduceMin, []int{0, 1}, []bool{false}},
		{prims.ReduceMin, []int{}, x},
	}
	for _, c := range cases {
		for _, strided := range []bool{false, true} {
			xt := ewTensor(x, 3, 4)
			if strided {
				xt = ewTransposed(x, 3, 4)
			}
			got := ewHost(interp.Bind1(c.p, prims.ReduceParams{Axes: c.axes}, xt)).([]bool)
			if !slices.Equal(got, c.want) {
				t.Errorf("%s axes %v strided=%v = %v, want %v", c.p.Name, c.axes, strided, got, c.want)
			}
		}
	}
}

// TestReduceAccuracy: float32 sums accumulate in float64, float64 sums
// pairwise.
func TestReduceAccuracy(t *testing.T) {
	n := 1 << 22
	x32 := make([]float32, n)
	x64 := make([]float64, n)
	for i := range x32 {
		x32[i] = 0.1
		x64[i] = 0.1
	}
	got32 := ewHost(interp.Bind1(prims.ReduceSum, prims.ReduceParams{Axes: []int{0}}, ewTensor(x32, n))).([]float32)[0]
	if want := float32(float64(float32(0.1)) * float64(n)); got32 != want {
		t.Errorf("f32 sum of %d × 0.1 = %v, want %v", n, got32, want)
	}
	got64 := ewHost(interp.Bind1(prims.ReduceSum, prims.ReduceParams{Axes: []int{0}}, ewTensor(x64, n))).([]float64)[0]
	if want := 0.1 * float64(n); math.Abs(got64-want) > 1e-13*want {
		t.Errorf("f64 sum of %d × 0.1 = %v, want %v", n, got64, want)
	}
}

// TestArgMaxMin covers ties (first occurrence), NaN (first NaN wins),
// bools, every axis position and strided operands.
func TestArgMaxMin(t *testing.T) {
	nan := math.NaN()
	type tc struct {
		x     []float64
		shape []int
		axis  int
		max   []int64
		min   []int64
	}
	cases := []tc{
		{[]float64{3, 1, 3, 0, 0}, []int{5}, 0, []int64{0}, []int64{3}},
		{[]float64{1, nan, 5, nan}, []int{4}, 0, []int64{1}, []int64{1}},
		{[]float64{7}, []int{1}, 0, []int64{0}, []int64{0}},
		{[]float64{1, 9, 2, 8, 3, 7}, []int{2, 3}, 0, []int64{1, 0, 1}, []int64{0, 1, 0}},
		{[]float64{1, 9, 2, 8, 3, 7}, []int{2, 3}, 1, []int64{1, 0}, []int64{0, 1}},
		{[]float64{1, 1, nan, 2, 2, 2, nan, nan}, []int{4, 2}, 0, []int64{1, 3}, []int64{1, 3}},
		{[]float64{}, []int{3, 0}, 0, []int64{}, []int64{}},
	}
	for _, c := range cases {
		for _, dt := range ewFloats {
			for _, p := range []*interp.Prim{prims.ArgMax, prims.ArgMin} {
				want := c.max
				if p == prims.ArgMin {
					want = c.min
				}
				got := ewHost(interp.Bind1(p, prims.AxisParams{Axis: c.axis}, ewTensor(ewFrom(c.x, dt), c.shape...))).([]int64)
				if !slices.Equal(got, want) {
					t.Errorf("%s %v of %v %v axis %d = %v, want %v", p.Name, dt, c.x, c.shape, c.axis, got, want)
				}
			}
		}
	}
	// Random cases against a reference, all dtypes, with strided operands.
	rng := rand.New(rand.NewPCG(9, 10))
	defer cpu.SetThreads(0)
	for _, dt := range ewAll {
		for _, shape := range [][]int{{6, 7}, {40, 3000}, {3000, 40}, {2, 3, 4, 5}} {
			n := backend.ShapeSize(shape)
			x := make([]float64, n)
			for i := range x {
				x[i] = float64(rng.IntN(5))
				if dt == backend.Bool {
					x[i] = float64(rng.IntN(2))
				} else if dt.IsFloat() && rng.IntN(97) == 0 {
					x[i] = nan
				}
			}
			for axis := range shape {
				for _, isMax := range []bool{true, false} {
					p := prims.ArgMin
					if isMax {
						p = prims.ArgMax
					}
					want := ewRefArg(x, shape, axis, isMax)
					cpu.SetThreads(1 + rng.IntN(4))
					got := ewHost(interp.Bind1(p, prims.AxisParams{Axis: axis}, ewTensor(ewFrom(x, dt), shape...))).([]int64)
					if !slices.Equal(got, want) {
						t.Fatalf("%s %v %v axis %d: %v, want %v", p.Name, dt, shape, axis, got[:min(10, len(got))], want[:min(10, len(want))])
					}
					if len(shape) == 2 {
						// The same values through a transposed view.
						xt := ewTransposedAny(x, dt, shape[0], shape[1])
						got := ewHost(interp.Bind1(p, prims.AxisParams{Axis: axis}, xt)).([]int64)
						if !slices.Equal(got, want) {
							t.Fatalf("%s %v %v axis %d transposed: wrong result", p.Name, dt, shape, axis)
						}
					}
				}
			}
		}
	}
}

func ewRefArg(x []float64, shape []int, axis int, isMax bool) []int64 {
	outer := backend.ShapeSize(shape[:axis])
	n := shape[axis]
	inner := backend.ShapeSize(shape[axis+1:])
	out := make([]int64, outer*inner)
	for o := range outer {
		for j := range inner {
			bi := 0
			best := x[o*n*inner+j]
			for r := 1; r < n; r++ {
				v := x[(o*n+r)*inner+j]
				if math.IsNaN(best) {
					break
				}
				if math.IsNaN(v) || (isMax && v > best) || (!isMax && v < best) {
					best, bi = v, r
				}
			}
			out[o*inner+j] = int64(bi)
		}
	}
	return out
}

// TestCumsum covers every axis, both directions, dtypes, layouts and
// the parallel path.
func TestCumsum(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	defer cpu.SetThreads(0)
	for _, dt := range ewNum {
		for _, shape := range [][]int{{1}, {9}, {0}, {3, 0}, {4, 5}, {3, 4, 5}, {200, 700}, {5000, 3}} {
			n := backend.ShapeSize(shape)
			x := make([]float64, n)
			for i := range x {
				x[i] = float64(rng.IntN(9) - 4)
			}
			for axis := range shape {
				for _, rev := range []bool{false, true} {
					want := ewRefCumsum(x, shape, axis, rev)
					cpu.SetThreads(1 + rng.IntN(4))
					xt := ewTensor(ewFrom(x, dt), shape...)
					if len(shape) == 2 && rng.IntN(2) == 0 {
						xt = ewTransposedAny(x, dt, shape[0], shape[1])
					}
					got := ewF64(interp.Bind1(prims.Cumsum, prims.CumsumParams{Axis: axis, Reverse: rev}, xt))
					if !slices.Equal(got, want) {
						t.Fatalf("cumsum %v %v axis %d reverse %v: %v, want %v", dt, shape, axis, rev, got[:min(8, n)], want[:min(8, n)])
					}
				}
			}
		}
	}
}

func ewRefCumsum(x []float64, shape []int, axis int, rev bool) []float64 {
	outer := backend.ShapeSize(shape[:axis])
	n := shape[axis]
	inner := backend.ShapeSize(shape[axis+1:])
	out := make([]float64, len(x))
	for o := range outer {
		for j := range inner {
			s := 0.0
			for k := range n {
				r := k
				if rev {
					r = n - 1 - k
				}
				i := (o*n+r)*inner + j
				s += x[i]
				out[i] = s
			}
		}
	}
	return out
}

func TestIota(t *testing.T) {
	for _, dt := range ewNum {
		for _, c := range []struct {
			shape []int
			dim   int
		}{{[]int{5}, 0}, {[]int{0}, 0}, {[]int{3, 4}, 0}, {[]int{3, 4}, 1}, {[]int{2, 3, 4}, 1}, {[]int{2, 0, 4}, 2}} {
			got := ewF64(interp.Bind1(prims.Iota, prims.IotaParams{DType: dt, Shape: c.shape, Dim: c.dim}))
			stride := backend.ShapeSize(c.shape[c.dim+1:])
			for i, v := range got {
				if want := float64(i / stride % c.shape[c.dim]); v != want {
					t.Fatalf("iota %v %v dim %d: element %d = %v, want %v", dt, c.shape, c.dim, i, v, want)
				}
			}
		}
	}
}

// TestThreefry checks the Random123 known answers (counter, key → output)
// with every operand layout.
func TestThreefry(t *testing.T) {
	kat := [][6]int64{
		// ctr0, ctr1, key0, key1, out0, out1
		{0, 0, 0, 0, 0x6b200159, 0x99ba4efe},
		{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7},
		{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xc4923a9c, 0x483df7a0},
	}
	for _, k := range kat {
		for mask := range 16 {
			// Operands k0, k1, x0, x1 in the primitive's order.
			words := [4]int64{k[2], k[3], k[0], k[1]}
			args := make([]*interp.Tensor, 4)
			for j, w := range words {
				if mask&(1<<j) != 0 {
					args[j] = ewSplat([]int64{w}, 3)
				} else {
					args[j] = ewTensor([]int64{w, w, w}, 3)
				}
			}
			res := interp.Bind(prims.Threefry2x32, nil, args...)
			y0, y1 := ewHost(res[0]).([]int64), ewHost(res[1]).([]int64)
			for i := range 3 {
				if y0[i] != k[4] || y1[i] != k[5] {
					t.Fatalf("threefry(ctr %#x %#x, key %#x %#x) mask %d = %#x %#x, want %#x %#x",
						k[0], k[1], k[2], k[3], mask, y0[i], y1[i], k[4], k[5])
				}
			}
		}
	}
	// Distinct counters give distinct outputs; a large batch runs in
	// parallel identically.
	n := 100000
	ctr := make([]int64, n)
	for i := range ctr {
		ctr[i] = int64(i)
	}
	defer cpu.SetThreads(0)
	var first []int64
	for _, th := range []int{1, 4} {
		cpu.SetThreads(th)
		res := interp.Bind(prims.Threefry2x32, nil, ewSplat([]int64{42}, n), ewSplat([]int64{7}, n), ewSplat([]int64{0}, n), ewTensor(ctr, n))
		y0 := ewHost(res[0]).([]int64)
		if first == nil {
			first = y0
			seen := map[int64]bool{}
			for _, v := range y0 {
				if v < 0 || v > math.MaxUint32 {
					t.Fatalf("threefry output %d is not a 32-bit word", v)
				}
				seen[v] = true
			}
			if len(seen) < n-5 {
				t.Errorf("threefry outputs repeat: %d distinct of %d", len(seen), n)
			}
		} else if !slices.Equal(first, y0) {
			t.Errorf("threefry depends on the thread count")
		}
	}
}

// TestLargeParallel runs the elementwise kernels on arrays large enough to
// be split across goroutines and checks them against one thread.
func TestLargeParallel(t *testing.T) {
	n := 1<<18 + 3
	rng := rand.New(rand.NewPCG(13, 14))
	x := make([]float32, n)
	y := make([]float32, n)
	for i := range x {
		x[i] = rng.Float32()*8 - 4
		y[i] = rng.Float32()*8 - 4
	}
	defer cpu.SetThreads(0)
	run := func() [][]float32 {
		xt, yt := ewTensor(x, n), ewTensor(y, n)
		s := ewSplat([]float32{1.5}, n)
		return [][]float32{
			ewHost(interp.Bind1(prims.Add, nil, xt, yt)).([]float32),
			ewHost(interp.Bind1(prims.Mul, nil, xt, s)).([]float32),
			ewHost(interp.Bind1(prims.Sub, nil, s, yt)).([]float32),
			ewHost(interp.Bind1(prims.Tanh, nil, xt)).([]float32),
			ewHost(interp.Bind1(prims.Exp, nil, xt)).([]float32),
			ewHost(interp.Bind1(prims.Sin, nil, xt)).([]float32),
			ewHost(interp.Bind1(prims.Where, nil, interp.Bind1(prims.Lt, nil, xt, yt), xt, s)).([]float32),
		}
	}
	cpu.SetThreads(1)
	one := run()
	cpu.SetThreads(4)
	many := run()
	for i := range one {
		if !slices.Equal(one[i], many[i]) {
			t.Errorf("result %d differs between 1 and 4 threads", i)
		}
	}
	for i := range x {
		if one[0][i] != x[i]+y[i] || one[1][i] != x[i]*1.5 || one[2][i] != 1.5-y[i] {
			t.Fatalf("element %d wrong", i)
		}
	}
}
