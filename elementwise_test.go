package peel_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
)

// values returns t's elements as float64s whatever its dtype.
func values(t *testing.T, x *peel.Tensor) []float64 {
	t.Helper()
	switch x.DType() {
	case peel.Float64:
		return x.Float64s()
	case peel.Float32:
		v := x.Float32s()
		out := make([]float64, len(v))
		for i, e := range v {
			out[i] = float64(e)
		}
		return out
	case peel.Int64:
		v := x.Int64s()
		out := make([]float64, len(v))
		for i, e := range v {
			out[i] = float64(e)
		}
		return out
	case peel.Bool:
		v := x.Bools()
		out := make([]float64, len(v))
		for i, e := range v {
			if e {
				out[i] = 1
			}
		}
		return out
	}
	t.Fatalf("unknown dtype %v", x.DType())
	return nil
}

// near reports whether got is within tol of want (relative for large
// values); NaNs and infinities must match exactly.
func near(got, want, tol float64) bool {
	switch {
	case math.IsNaN(want):
		return math.IsNaN(got)
	case math.IsInf(want, 0):
		return got == want
	}
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

// check compares x's shape, dtype and values with the expectation.
func check(t *testing.T, name string, x *peel.Tensor, dt peel.DType, shape []int, want []float64, tol float64) {
	t.Helper()
	if x.DType() != dt {
		t.Errorf("%s: dtype %v, want %v", name, x.DType(), dt)
	}
	if !equalInts(x.Shape(), shape) {
		t.Errorf("%s: shape %v, want %v", name, x.Shape(), shape)
		return
	}
	got := values(t, x)
	if len(got) != len(want) {
		t.Errorf("%s: %d values, want %d", name, len(got), len(want))
		return
	}
	for i := range got {
		if !near(got[i], want[i], tol) {
			t.Errorf("%s: element %d = %v, want %v (all: %v)", name, i, got[i], want[i], got)
			return
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// wantError runs f and checks it panics with a *peel.Error whose message
// names op and contains every fragment.
func wantError(t *testing.T, op string, f func(), fragments ...string) {
	t.Helper()
	err := peel.Catch(f)
	if err == nil {
		t.Errorf("%s: no error", op)
		return
	}
	var pe *peel.Error
	if !errors.As(err, &pe) {
		t.Errorf("%s: error %v is not a *peel.Error", op, err)
		return
	}
	msg := err.Error()
	if !strings.Contains(msg, op) {
		t.Errorf("%s: error %q does not name the op", op, msg)
	}
	for _, s := range fragments {
		if !strings.Contains(msg, s) {
			t.Errorf("%s: error %q does not mention %q", op, msg, s)
		}
	}
}

func mapf(xs []float64, f func(float64) float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func softplus(x float64) float64 { return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }

func gelu(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

func geluTanh(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x
}

var unaryCases = []struct {
	name  string
	f     func(*peel.Tensor) *peel.Tensor
	ref   func(float64) float64
	in    []float64
	float bool // defined on floats only: ints give f64
}{
	{"Neg", peel.Neg, func(x float64) float64 { return -x }, []float64{-2, 0, 1.5, 3}, false},
	{"Abs", peel.Abs, math.Abs, []float64{-2, 0, 1.5, -3}, false},
	{"Sign", peel.Sign, sign, []float64{-2, 0, 1.5, -3}, false},
	{"Square", peel.Square, func(x float64) float64 { return x * x }, []float64{-2, 0, 1.5, 3}, false},
	{"Floor", peel.Floor, math.Floor, []float64{-2.5, -0.5, 0, 1.5, 2.7}, false},
	{"Ceil", peel.Ceil, math.Ceil, []float64{-2.5, -0.5, 0, 1.5, 2.2}, false},
	{"Round", peel.Round, math.RoundToEven, []float64{-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.6, -2.4, 3}, false},
	{"Exp", peel.Exp, math.Exp, []float64{-2, 0, 1, 3}, true},
	{"Log", peel.Log, math.Log, []float64{0.5, 1, 2, 10}, true},
	{"Log1p", peel.Log1p, math.Log1p, []float64{1e-10, 0, 1, 3}, true},
	{"Expm1", peel.Expm1, math.Expm1, []float64{1e-10, 0, 1, -3}, true},
	{"Sqrt", peel.Sqrt, math.Sqrt, []float64{0, 1, 2, 9}, true},
	{"Rsqrt", peel.Rsqrt, func(x float64) float64 { return 1 / math.Sqrt(x) }, []float64{0.25, 1, 2, 9}, true},
	{"Sin", peel.Sin, math.Sin, []float64{-2, 0, 1, 3}, true},
	{"Cos", peel.Cos, math.Cos, []float64{-2, 0, 1, 3}, true},
	{"Tan", peel.Tan, math.Tan, []float64{-1, 0, 1, 0.5}, true},
	{"Tanh", peel.Tanh, math.Tanh, []float64{-2, 0, 1, 30}, true},
	{"Sigmoid", peel.Sigmoid, sigmoid, []float64{-3, 0, 1, 40}, true},
	{"Erf", peel.Erf, math.Erf, []float64{-2, 0, 0.5, 3}, true},
	{"Reciprocal", peel.Reciprocal, func(x float64) float64 { return 1 / x }, []float64{-2, 0.5, 1, 4}, true},
	{"ReLU", peel.ReLU, func(x float64) float64 { return math.Max(x, 0) }, []float64{-2, 0, 1.5, 3}, false},
	{"GELU", peel.GELU, gelu, []float64{-3, -0.5, 0, 1, 2}, true},
	{"GELUTanh", peel.GELUTanh, geluTanh, []float64{-3, -0.5, 0, 1, 2}, true},
	{"Softplus", peel.Softplus, softplus, []float64{-30, -1, 0, 1, 30}, true},
	{"LogSigmoid", peel.LogSigmoid, func(x float64) float64 { return -softplus(-x) }, []float64{-30, -1, 0, 1, 30}, true},
}

func TestUnary(t *testing.T) {
	for _, c := range unaryCases {
		t.Run(c.name, func(t *testing.T) {
			want := mapf(c.in, c.ref)
			check(t, "f64", c.f(peel.FromFloat64s(c.in)), peel.Float64, []int{len(c.in)}, want, 1e-14)
			check(t, "f64 2-D", c.f(peel.FromFloat64s(c.in[:4], 2, 2)), peel.Float64, []int{2, 2}, want[:4], 1e-14)
			in32 := make([]float32, len(c.in))
			for i, v := range c.in {
				in32[i] = float32(v)
			}
			check(t, "f32", c.f(peel.FromFloat32s(in32)), peel.Float32, []int{len(c.in)}, want, 2e-6)
			// Rank 0 and size 0.
			check(t, "rank0", c.f(peel.Scalar(c.in[1])), peel.Float64, []int{}, want[1:2], 1e-14)
			check(t, "empty", c.f(peel.Zeros(peel.Float64, 0, 3)), peel.Float64, []int{0, 3}, nil, 0)
			// Integers: whole inputs only.
			var ints []int64
			for _, v := range c.in {
				if v == math.Trunc(v) && (c.name != "Reciprocal" || v != 0) {
					ints = append(ints, int64(v))
				}
			}
			fl := make([]float64, len(ints))
			for i, v := range ints {
				fl[i] = float64(v)
			}
			dt := peel.Int64
			if c.float {
				dt = peel.Float64
			}
			check(t, "i64", c.f(peel.FromInt64s(ints)), dt, []int{len(ints)}, mapf(fl, c.ref), 1e-14)
			wantError(t, "peel."+c.name, func() { c.f(nil) }, "nil tensor")
		})
	}
}

func TestUnaryBool(t *testing.T) {
	b := peel.FromBools([]bool{true, false})
	for _, f := range []struct {
		name string
		f    func(*peel.Tensor) *peel.Tensor
	}{{"Neg", peel.Neg}, {"Sign", peel.Sign}, {"Square", peel.Square}, {"ReLU", peel.ReLU}} {
		wantError(t, "peel."+f.name, func() { f.f(b) }, "bool")
	}
	check(t, "Exp(bool)", peel.Exp(b), peel.Float64, []int{2}, []float64{math.E, 1}, 1e-15)
	check(t, "Abs(bool)", peel.Abs(b), peel.Bool, []int{2}, []float64{1, 0}, 0)
	check(t, "Floor(bool)", peel.Floor(b), peel.Float64, []int{2}, []float64{1, 0}, 0)
	check(t, "LogicalNot", peel.LogicalNot(b), peel.Bool, []int{2}, []float64{0, 1}, 0)
	wantError(t, "peel.LogicalNot", func() { peel.LogicalNot(peel.FromFloat64s([]float64{1})) }, "f64")
	wantError(t, "peel.LogicalNot", func() { peel.LogicalNot(nil) }, "nil")
}

func TestRoundingIntegersCopies(t *testing.T) {
	x := peel.FromInt64s([]int64{-3, 0, 7})
	for _, f := range []func(*peel.Tensor) *peel.Tensor{peel.Floor, peel.Ceil, peel.Round} {
		y := f(x)
		if y == x {
			t.Errorf("rounding an integer tensor returned the operand itself, want a copy")
		}
		check(t, "int", y, peel.Int64, []int{3}, []float64{-3, 0, 7}, 0)
	}
}

func TestRoundSpecial(t *testing.T) {
	in := []float64{math.Inf(1), math.Inf(-1), math.NaN(), math.Copysign(0, -1), 4503599627370497, 0.49999999999999994, -0.5}
	got := values(t, peel.Round(peel.FromFloat64s(in)))
	for i, v := range in {
		want := math.RoundToEven(v)
		if !near(got[i], want, 0) || math.Signbit(got[i]) != math.Signbit(want) && !math.IsNaN(want) {
			t.Errorf("Round(%v) = %v, want %v", v, got[i], want)
		}
	}
}

func floorDiv(a, b float64) float64 { return math.Floor(a / b) }

func pyMod(a, b float64) float64 {
	r := math.Mod(a, b)
	if r != 0 && (r < 0) != (b < 0) {
		r += b
	}
	return r
}

var binaryCases = []struct {
	name string
	f    func(x, y any) *peel.Tensor
	ref  func(a, b float64) float64
	// intRef is the integer semantics when it differs from ref.
	intRef func(a, b float64) float64
	float  bool
	bools  bool // accepts two bool operands
}{
	{"Add", peel.Add, func(a, b float64) float64 { return a + b }, nil, false, false},
	{"Sub", peel.Sub, func(a, b float64) float64 { return a - b }, nil, false, false},
	{"Mul", peel.Mul, func(a, b float64) float64 { return a * b }, nil, false, false},
	{"Div", peel.Div, func(a, b float64) float64 { return a / b }, nil, true, true},
	{"Pow", peel.Pow, math.Pow, nil, false, false},
	{"Maximum", peel.Maximum, math.Max, nil, false, true},
	{"Minimum", peel.Minimum, math.Min, nil, false, true},
	{"Rem", peel.Rem, math.Mod, nil, false, false},
	{"Mod", peel.Mod, pyMod, nil, false, false},
	{"FloorDiv", peel.FloorDiv, floorDiv, nil, false, false},
	{"Atan2", peel.Atan2, math.Atan2, nil, true, true},
}

func TestBinary(t *testing.T) {
	xs := []float64{-7, -7, 7, 7, 2.5, -2.5, 0, 3}
	ys := []float64{2, -2, 2, -2, 1.5, 0.75, 4, 3}
	ix := []int64{-7, -7, 7, 7, 6, -6, 0, 3}
	iy := []int64{2, -2, 2, -2, 4, 4, 5, 3}
	for _, c := range binaryCases {
		t.Run(c.name, func(t *testing.T) {
			want := make([]float64, len(xs))
			for i := range xs {
				want[i] = c.ref(xs[i], ys[i])
			}
			x, y := peel.FromFloat64s(xs, 2, 4), peel.FromFloat64s(ys, 2, 4)
			check(t, "f64", c.f(x, y), peel.Float64, []int{2, 4}, want, 1e-14)
			check(t, "f32", c.f(peel.AsType(x, peel.Float32), peel.AsType(y, peel.Float32)), peel.Float32, []int{2, 4}, want, 1e-6)

			// Integers (powers with non-negative exponents only).
			a, b := ix, iy
			if c.name == "Pow" {
				b = []int64{2, 3, 0, 1, 2, 3, 4, 1}
			}
			iwant := make([]float64, len(a))
			for i := range a {
				iwant[i] = c.ref(float64(a[i]), float64(b[i]))
			}
			dt := peel.Int64
			if c.float {
				dt = peel.Float64
			}
			check(t, "i64", c.f(peel.FromInt64s(a), peel.FromInt64s(b)), dt, []int{len(a)}, iwant, 1e-14)

			// Broadcasting [3,1] with [4] and scalars on either side.
			col := peel.FromFloat64s([]float64{1, 2, 3}, 3, 1)
			row := peel.FromFloat64s([]float64{0.5, 1, 1.5, 2}, 4)
			var bw []float64
			for i := 1; i <= 3; i++ {
				for _, r := range []float64{0.5, 1, 1.5, 2} {
					bw = append(bw, c.ref(float64(i), r))
				}
			}
			check(t, "broadcast", c.f(col, row), peel.Float64, []int{3, 4}, bw, 1e-14)
			check(t, "scalar right", c.f(row, 2.0), peel.Float64, []int{4}, mapf([]float64{0.5, 1, 1.5, 2}, func(v float64) float64 { return c.ref(v, 2) }), 1e-14)
			check(t, "scalar left", c.f(3, row), peel.Float64, []int{4}, mapf([]float64{0.5, 1, 1.5, 2}, func(v float64) float64 { return c.ref(3, v) }), 1e-14)
			check(t, "rank0", c.f(peel.Scalar(5.0), peel.Scalar(2.0)), peel.Float64, []int{}, []float64{c.ref(5, 2)}, 1e-14)
			check(t, "rank0+scalar", c.f(peel.Scalar(5.0), 2), peel.Float64, []int{}, []float64{c.ref(5, 2)}, 1e-14)
			check(t, "empty", c.f(peel.Zeros(peel.Float64, 0, 1), row), peel.Float64, []int{0, 4}, nil, 0)

			// Errors.
			op := "peel." + c.name
			wantError(t, op, func() { c.f(row, peel.Zeros(peel.Float64, 3, 3)) }, "broadcast", "[4]", "[3 3]")
			wantError(t, op, func() { c.f((*peel.Tensor)(nil), row) }, "nil")
			wantError(t, op, func() { c.f(row, "two") }, "string")
			tb := peel.FromBools([]bool{true, false})
			if c.bools {
				if err := peel.Catch(func() { c.f(tb, tb) }); err != nil {
					t.Errorf("bool operands: %v", err)
				}
			} else {
				wantError(t, op, func() { c.f(tb, tb) }, "bool")
			}
		})
	}
}

func TestFloorDivIntegers(t *testing.T) {
	var xs, ys []int64
	var want []float64
	for a := int64(-7); a <= 7; a++ {
		for _, b := range []int64{-3, -2, -1, 1, 2, 3} {
			xs, ys = append(xs, a), append(ys, b)
			want = append(want, math.Floor(float64(a)/float64(b)))
		}
	}
	check(t, "FloorDiv", peel.FloorDiv(peel.FromInt64s(xs), peel.FromInt64s(ys)), peel.Int64, []int{len(xs)}, want, 0)
	mod := make([]float64, len(xs))
	for i := range xs {
		mod[i] = float64(xs[i]) - want[i]*float64(ys[i])
	}
	check(t, "Mod", peel.Mod(peel.FromInt64s(xs), peel.FromInt64s(ys)), peel.Int64, []int{len(xs)}, mod, 0)
	rem := make([]float64, len(xs))
	for i := range xs {
		rem[i] = float64(xs[i] % ys[i])
	}
	check(t, "Rem", peel.Rem(peel.FromInt64s(xs), peel.FromInt64s(ys)), peel.Int64, []int{len(xs)}, rem, 0)
}

func TestPromotion(t *testing.T) {
	f32 := peel.FromFloat32s([]float32{1, 2})
	f64 := peel.FromFloat64s([]float64{1, 2})
	i64 := peel.FromInt64s([]int64{1, 2})
	b := peel.FromBools([]bool{true, false})
	cases := []struct {
		name string
		x, y any
		dt   peel.DType
		want []float64
	}{
		{"f32+2.0", f32, 2.0, peel.Float32, []float64{3, 4}},
		{"2.0+f32", 2.0, f32, peel.Float32, []float64{3, 4}},
		{"f32+int", f32, 2, peel.Float32, []float64{3, 4}},
		{"i64+f32", i64, f32, peel.Float32, []float64{2, 4}},
		{"f32+f64", f32, f64, peel.Float64, []float64{2, 4}},
		{"i64+2.5", i64, 2.5, peel.Float64, []float64{3.5, 4.5}},
		{"i64+int", i64, int64(3), peel.Int64, []float64{4, 5}},
		{"i64+bool", i64, true, peel.Int64, []float64{2, 3}},
		{"bool+int", b, 2, peel.Int64, []float64{3, 2}},
		{"bool+float", b, 0.5, peel.Float64, []float64{1.5, 0.5}},
		{"bool+i64", b, i64, peel.Int64, []float64{2, 2}},
		{"int+int", 2, 3, peel.Int64, []float64{5}},
		{"int+float", 2, 0.5, peel.Float64, []float64{2.5}},
		{"float32 scalar", f32, float32(0.5), peel.Float32, []float64{1.5, 2.5}},
	}
	for _, c := range cases {
		got := peel.Add(c.x, c.y)
		shape := []int{2}
		if len(c.want) == 1 {
			shape = []int{}
		}
		check(t, c.name, got, c.dt, shape, c.want, 1e-7)
	}
	check(t, "Div(i64,i64)", peel.Div(i64, peel.FromInt64s([]int64{2, 4})), peel.Float64, []int{2}, []float64{0.5, 0.5}, 0)
	check(t, "Div(f32,2)", peel.Div(f32, 2), peel.Float32, []int{2}, []float64{0.5, 1}, 0)
	check(t, "Atan2(i64,f32)", peel.Atan2(i64, f32), peel.Float32, []int{2}, []float64{math.Pi / 4, math.Pi / 4}, 1e-6)
	check(t, "Maximum(bool,bool)", peel.Maximum(b, peel.FromBools([]bool{false, false})), peel.Bool, []int{2}, []float64{1, 0}, 0)
	check(t, "Equal(i64,f32)", peel.Equal(i64, peel.FromFloat32s([]float32{1, 3})), peel.Bool, []int{2}, []float64{1, 0}, 0)
}

func TestComparisonsAndLogical(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2, 3, math.NaN()})
	cases := []struct {
		name string
		f    func(x, y any) *peel.Tensor
		want []float64
	}{
		{"Equal", peel.Equal, []float64{0, 1, 0, 0}},
		{"NotEqual", peel.NotEqual, []float64{1, 0, 1, 1}},
		{"Less", peel.Less, []float64{1, 0, 0, 0}},
		{"LessEqual", peel.LessEqual, []float64{1, 1, 0, 0}},
		{"Greater", peel.Greater, []float64{0, 0, 1, 0}},
		{"GreaterEqual", peel.GreaterEqual, []float64{0, 1, 1, 0}},
	}
	for _, c := range cases {
		check(t, c.name, c.f(x, 2), peel.Bool, []int{4}, c.want, 0)
		wantError(t, "peel."+c.name, func() { c.f(x, peel.Zeros(peel.Float64, 3)) }, "broadcast")
	}
	p := peel.FromBools([]bool{true, true, false, false})
	q := peel.FromBools([]bool{true, false, true, false})
	check(t, "And", peel.LogicalAnd(p, q), peel.Bool, []int{4}, []float64{1, 0, 0, 0}, 0)
	check(t, "Or", peel.LogicalOr(p, q), peel.Bool, []int{4}, []float64{1, 1, 1, 0}, 0)
	check(t, "And scalar", peel.LogicalAnd(p, false), peel.Bool, []int{4}, []float64{0, 0, 0, 0}, 0)
	check(t, "Or scalar", peel.LogicalOr(true, q), peel.Bool, []int{4}, []float64{1, 1, 1, 1}, 0)
	wantError(t, "peel.LogicalAnd", func() { peel.LogicalAnd(p, x) }, "f64")
	wantError(t, "peel.LogicalOr", func() { peel.LogicalOr(1, q) }, "int")
	wantError(t, "peel.LogicalAnd", func() { peel.LogicalAnd(p, peel.FromBools([]bool{true, false})) }, "broadcast")
}

// TestComparisonBroadcastValues checks the values of a broadcast
// comparison, which the table above only checks for shape.
func TestComparisonBroadcastValues(t *testing.T) {
	got := peel.Less(peel.FromInt64s([]int64{1, 2}, 2, 1), peel.FromInt64s([]int64{2, 1}))
	check(t, "Less", got, peel.Bool, []int{2, 2}, []float64{1, 0, 0, 0}, 0)
}

func TestWhere(t *testing.T) {
	c := peel.FromBools([]bool{true, false, true}, 3, 1)
	x := peel.FromFloat32s([]float32{1, 2})
	check(t, "tensor/scalar", peel.Where(c, x, 0), peel.Float32, []int{3, 2}, []float64{1, 2, 0, 0, 1, 2}, 0)
	check(t, "scalars", peel.Where(c, 1.5, -1), peel.Float64, []int{3, 1}, []float64{1.5, -1, 1.5}, 0)
	check(t, "ints", peel.Where(c, 1, 2), peel.Int64, []int{3, 1}, []float64{1, 2, 1}, 0)
	check(t, "rank0 cond", peel.Where(peel.Scalar(false), x, peel.FromInt64s([]int64{7, 8})), peel.Float32, []int{2}, []float64{7, 8}, 0)
	wantError(t, "peel.Where", func() { peel.Where(nil, x, 0) }, "nil")
	wantError(t, "peel.Where", func() { peel.Where(x, x, 0) }, "bool")
	wantError(t, "peel.Where", func() { peel.Where(c, x, peel.Zeros(peel.Float32, 3)) }, "broadcast")
	wantError(t, "peel.Where", func() { peel.Where(c, x, []float64{1}) }, "[]float64")
}

func TestClip(t *testing.T) {
	x := peel.FromFloat32s([]float32{-2, 0.5, 3})
	check(t, "both", peel.Clip(x, 0, 1), peel.Float32, []int{3}, []float64{0, 0.5, 1}, 0)
	check(t, "lo only", peel.Clip(x, 0.0, nil), peel.Float32, []int{3}, []float64{0, 0.5, 3}, 0)
	check(t, "hi only", peel.Clip(x, nil, 1), peel.Float32, []int{3}, []float64{-2, 0.5, 1}, 0)
	check(t, "none", peel.Clip(x, nil, nil), peel.Float32, []int{3}, []float64{-2, 0.5, 3}, 0)
	check(t, "int+float bounds", peel.Clip(peel.FromInt64s([]int64{-2, 1, 5}), 0.5, 2), peel.Float64, []int{3}, []float64{0.5, 1, 2}, 0)
	lo := peel.FromFloat64s([]float64{-3, 1}, 2, 1)
	check(t, "tensor bound", peel.Clip(x, lo, 2.0), peel.Float64, []int{2, 3}, []float64{-2, 0.5, 2, 1, 1, 2}, 0)
	wantError(t, "peel.Clip", func() { peel.Clip(nil, 0, 1) }, "nil")
	wantError(t, "peel.Clip", func() { peel.Clip(x, peel.Zeros(peel.Float64, 2), 1) }, "broadcast")
	wantError(t, "peel.Clip", func() { peel.Clip(x, "a", 1) }, "string")
}

func TestStability(t *testing.T) {
	check(t, "Softplus", peel.Softplus(peel.FromFloat64s([]float64{1000, -1000, 0})), peel.Float64, []int{3}, []float64{1000, 0, math.Ln2}, 1e-15)
	check(t, "Softplus f32", peel.Softplus(peel.FromFloat32s([]float32{1000, -1000})), peel.Float32, []int{2}, []float64{1000, 0}, 0)
	check(t, "LogSigmoid", peel.LogSigmoid(peel.FromFloat64s([]float64{1000, -1000})), peel.Float64, []int{2}, []float64{0, -1000}, 1e-15)
	check(t, "Sigmoid", peel.Sigmoid(peel.FromFloat64s([]float64{1000, -1000})), peel.Float64, []int{2}, []float64{1, 0}, 1e-15)
	check(t, "GELU", peel.GELU(peel.FromFloat64s([]float64{1000, -1000})), peel.Float64, []int{2}, []float64{1000, 0}, 1e-15)
	check(t, "GELUTanh", peel.GELUTanh(peel.FromFloat64s([]float64{1000, -1000})), peel.Float64, []int{2}, []float64{1000, 0}, 1e-15)
}

func TestSpecialValues(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	x := peel.FromFloat64s([]float64{inf, -inf, nan})
	check(t, "Maximum NaN", peel.Maximum(x, 0), peel.Float64, []int{3}, []float64{inf, 0, nan}, 0)
	check(t, "Minimum NaN", peel.Minimum(x, 0), peel.Float64, []int{3}, []float64{0, -inf, nan}, 0)
	check(t, "Exp", peel.Exp(x), peel.Float64, []int{3}, []float64{inf, 0, nan}, 0)
	check(t, "Softplus", peel.Softplus(x), peel.Float64, []int{3}, []float64{inf, 0, nan}, 0)
	check(t, "Div by 0", peel.Div(peel.FromFloat64s([]float64{1, -1, 0}), 0), peel.Float64, []int{3}, []float64{inf, -inf, nan}, 0)
	check(t, "Sign NaN", peel.Sign(x), peel.Float64, []int{3}, []float64{1, -1, nan}, 0)
}

// TestTraced stages each function with interp.Trace (every op must be
// built from primitives, never from reading data) and checks the graph
// evaluates to the eager result.
func TestTraced(t *testing.T) {
	x := peel.FromFloat64s([]float64{-2.5, -1, 0, 0.5, 3, 7}, 2, 3)
	y := peel.FromFloat64s([]float64{1.5, -2, 4, 0.5, -3, 2}, 2, 3)
	fs := []struct {
		name string
		f    func(x, y *peel.Tensor) *peel.Tensor
	}{
		{"FloorDiv", func(x, y *peel.Tensor) *peel.Tensor { return peel.FloorDiv(x, y) }},
		{"Mod", func(x, y *peel.Tensor) *peel.Tensor { return peel.Mod(x, y) }},
		{"FloorDiv int", func(x, y *peel.Tensor) *peel.Tensor {
			return peel.FloorDiv(peel.AsType(x, peel.Int64), peel.AsType(peel.Add(y, 10), peel.Int64))
		}},
		{"Where scalar", func(x, y *peel.Tensor) *peel.Tensor { return peel.Where(peel.Greater(x, y), x, 0.5) }},
		{"Clip", func(x, y *peel.Tensor) *peel.Tensor { return peel.Clip(x, y, 2) }},
		{"GELUTanh", func(x, _ *peel.Tensor) *peel.Tensor { return peel.GELUTanh(x) }},
		{"LogSigmoid", func(x, _ *peel.Tensor) *peel.Tensor { return peel.LogSigmoid(x) }},
		{"Reciprocal", func(_, y *peel.Tensor) *peel.Tensor { return peel.Reciprocal(y) }},
		{"Round", func(x, _ *peel.Tensor) *peel.Tensor { return peel.Round(x) }},
		{"Var keep", func(x, _ *peel.Tensor) *peel.Tensor { return peel.Keep(peel.Var, x, -1) }},
		{"Std", func(x, _ *peel.Tensor) *peel.Tensor { return peel.Std(x) }},
		{"LogSumExp", func(x, _ *peel.Tensor) *peel.Tensor { return peel.LogSumExp(x, 0) }},
		{"Softmax", func(x, _ *peel.Tensor) *peel.Tensor { return peel.Softmax(x, 0) }},
		{"ArgMax keep", func(x, _ *peel.Tensor) *peel.Tensor { return peel.Keep(peel.ArgMax, x, -1) }},
		{"Cumsum", func(x, _ *peel.Tensor) *peel.Tensor { return peel.Cumsum(x, 1) }},
		{"ZerosLike", func(x, y *peel.Tensor) *peel.Tensor { return peel.Add(peel.ZerosLike(x), y) }},
		{"FullLike", func(x, _ *peel.Tensor) *peel.Tensor { return peel.Mul(peel.FullLike(x, 2), x) }},
	}
	for _, c := range fs {
		want := c.f(x, y)
		var inner string
		g := interp.Trace(func(a []*peel.Tensor) []*peel.Tensor {
			out := c.f(a[0], a[1])
			inner = out.String()
			return []*peel.Tensor{out}
		}, []*peel.Tensor{x, y})
		if !strings.HasPrefix(inner, "Traced<"+want.TypeString()+"> [trace, level ") {
			t.Errorf("%s: traced result prints as %q", c.name, inner)
		}
		got := g.Eval(x, y)[0]
		check(t, c.name, got, want.DType(), want.Shape(), values(t, want), 1e-15)
	}
}
