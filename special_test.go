package peel_test

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

var (
	inf    = math.Inf(1)
	nan    = math.NaN()
	negZ   = math.Copysign(0, -1)
	f64Vec = func(v ...float64) *peel.Tensor { return peel.FromFloat64s(v, len(v)) }
)

// elemGrad returns the derivative of elementwise f at each element of x.
func elemGrad(f func(*peel.Tensor) *peel.Tensor, x *peel.Tensor) *peel.Tensor {
	return transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(f(x)) })(x)
}

// grad2 returns the derivatives of elementwise f with respect to both
// operands.
func grad2(f func(x, y any) *peel.Tensor, x, y *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
	g := transforms.Grad(func(a []*peel.Tensor) *peel.Tensor { return peel.Sum(f(a[0], a[1])) })([]*peel.Tensor{x, y})
	return g[0], g[1]
}

// TestSpecialFunctionValues checks edge values and exact results against numpy's
// and JAX's (table-driven, float64).
func TestSpecialFunctionValues(t *testing.T) {
	for _, c := range []struct {
		name string
		got  *peel.Tensor
		want []float64
	}{
		{"Log2 powers", peel.Log2(f64Vec(1, 2, 1024, 0.125, 0, -1)), []float64{0, 1, 10, -3, -inf, nan}},
		{"Log10 powers", peel.Log10(f64Vec(1, 10, 1e15, 1e-3, 1e22, 0)), []float64{0, 1, 15, -3, 22, -inf}},
		{"Exp2 integers", peel.Exp2(f64Vec(0, 3, -2, 10, 1024, -inf)), []float64{1, 8, 0.25, 1024, inf, 0}},
		{"Asin", peel.Asin(f64Vec(1, -1, 0, 2)), []float64{math.Pi / 2, -math.Pi / 2, 0, nan}},
		{"Acosh", peel.Acosh(f64Vec(1, 0.5, inf)), []float64{0, nan, inf}},
		{"Atanh", peel.Atanh(f64Vec(1, -1, 0.5, 2)), []float64{inf, -inf, math.Atanh(0.5), nan}},
		{"Erfinv", peel.Erfinv(f64Vec(0, 1, -1, 1.5, 0.5)), []float64{0, inf, -inf, nan, 0.4769362762044699}},
		{"Erfc", peel.Erfc(f64Vec(0, 10, -inf)), []float64{1, 2.088487583762545e-45, 2}},
		{"Lgamma", peel.Lgamma(f64Vec(1, 2, 0.5, 0, -1, -0.5, inf, -inf)),
			[]float64{0, 0, 0.5 * math.Log(math.Pi), inf, inf, math.Log(2 * math.Sqrt(math.Pi)), inf, inf}},
		{"Digamma", peel.Digamma(f64Vec(1, 0.5, 0, negZ, -2, inf)), []float64{-0.5772156649015329, -1.9635100260214235, -inf, inf, nan, inf}},
		{"Polygamma(1)", peel.Polygamma(1, f64Vec(1, 0, inf)), []float64{math.Pi * math.Pi / 6, inf, 0}},
		{"Trunc", peel.Trunc(f64Vec(-1.5, 1.5, -0.5, inf, nan)), []float64{-1, 1, negZ, inf, nan}},
		{"Frac", peel.Frac(f64Vec(-1.25, 3.5, 2, inf, nan)), []float64{-0.25, 0.5, 0, nan, nan}},
		{"Xlogy", peel.Xlogy(f64Vec(0, 0, 0, 0, 2, 1), f64Vec(0, -1, nan, inf, math.E, 0)), []float64{0, 0, 0, 0, 2, -inf}},
		{"Hypot", peel.Hypot(f64Vec(3, 1e300, inf, nan, 0), f64Vec(4, 1e300, nan, inf, 0)), []float64{5, math.Sqrt2 * 1e300, inf, inf, 0}},
		{"Copysign", peel.Copysign(f64Vec(2, 2, -2, 3), f64Vec(-1, negZ, 0, -nan)), []float64{-2, -2, 2, -3}},
		{"LogAddExp", peel.LogAddExp(f64Vec(1000, -inf, inf, 0, nan, -inf), f64Vec(1000, -inf, inf, -inf, 0, 3)),
			[]float64{1000 + math.Ln2, -inf, inf, 0, nan, 3}},
		{"Fmax", peel.Fmax(f64Vec(nan, 1, nan, -inf), f64Vec(2, nan, nan, 0)), []float64{2, 1, nan, 0}},
		{"Fmax zeros (y at ties)", peel.Fmax(f64Vec(negZ, 0), f64Vec(0, negZ)), []float64{0, negZ}},
		{"Fmin", peel.Fmin(f64Vec(nan, 1, nan, inf), f64Vec(2, nan, nan, 0)), []float64{2, 1, nan, 0}},
		{"Lerp ends", peel.Lerp(f64Vec(0.1, 0.1, 0.1), f64Vec(0.7, 0.7, 0.7), f64Vec(0, 1, 0.5)), []float64{0.1, 0.7, 0.4}},
		{"NanToNum", peel.NanToNum(f64Vec(nan, inf, -inf, 2)), []float64{0, math.MaxFloat64, -math.MaxFloat64, 2}},
		{"NanToNum opts", peel.NanToNum(f64Vec(nan, inf, -inf, 2), peel.NanTo(-1), peel.PosInfTo(9), peel.NegInfTo(-9)), []float64{-1, 9, -9, 2}},
		{"NanToNum f32", peel.NanToNum(peel.FromFloat32s([]float32{float32(inf)}, 1)), []float64{math.MaxFloat32}},
		{"ELU", peel.ELU(f64Vec(-inf, 0, 2, nan), 0.5), []float64{-0.5, 0, 2, nan}},
		{"LeakyReLU", peel.LeakyReLU(f64Vec(-2, 0, 3), 0.1), []float64{-0.2, 0, 3}},
		{"HardTanh", peel.HardTanh(f64Vec(-3, 0.5, 3, nan), -1, 2), []float64{-1, 0.5, 2, nan}},
		{"HardSwish", peel.HardSwish(f64Vec(-4, -3, 0, 3, 5)), []float64{0, 0, 0, 3, 5}},
		{"Logit", peel.Logit(f64Vec(0, 0.5, 1, 2)), []float64{-inf, 0, inf, nan}},
		{"Logit eps", peel.Logit(f64Vec(0, 1), 0.25), []float64{-math.Log(3), math.Log(3)}},
		{"Softsign", peel.Softsign(f64Vec(-3, 0, 1)), []float64{-0.75, 0, 0.5}},
		{"GLU", peel.GLU(peel.FromFloat64s([]float64{1, 2, 0, 100}, 1, 4), -1), []float64{0.5, 2}},
	} {
		check(t, c.name, c.got, c.got.DType(), c.got.Shape(), c.want, 1e-15)
		// Signed zeros where the table has them.
		for i, w := range c.want {
			if w == 0 && math.Signbit(w) && !math.Signbit(values(t, c.got)[i]) {
				t.Errorf("%s: element %d is +0, want -0", c.name, i)
			}
		}
	}
}

func TestSpecialIntegerOps(t *testing.T) {
	i64 := func(v ...int64) *peel.Tensor { return peel.FromInt64s(v, len(v)) }
	bools := func(v ...bool) *peel.Tensor { return peel.FromBools(v, len(v)) }
	for _, c := range []struct {
		name string
		got  *peel.Tensor
		dt   peel.DType
		want []float64
	}{
		{"BitwiseAnd", peel.BitwiseAnd(i64(12, -1, 5), i64(10, 7, 0)), peel.Int64, []float64{8, 7, 0}},
		{"BitwiseOr", peel.BitwiseOr(i64(12, -8), 3), peel.Int64, []float64{15, -5}},
		{"BitwiseXor", peel.BitwiseXor(i64(12, -1), i64(10, 5)), peel.Int64, []float64{6, -6}},
		{"BitwiseXor bool", peel.BitwiseXor(bools(true, true, false), bools(true, false, false)), peel.Bool, []float64{0, 1, 0}},
		{"BitwiseAnd bool scalar", peel.BitwiseAnd(bools(true, false), true), peel.Bool, []float64{1, 0}},
		{"BitwiseNot", peel.BitwiseNot(i64(0, 5, -1)), peel.Int64, []float64{-1, -6, 0}},
		{"BitwiseNot bool", peel.BitwiseNot(bools(true, false)), peel.Bool, []float64{0, 1}},
		{"LeftShift", peel.LeftShift(i64(1, 3, -1, 1, 1), i64(3, 1, 2, 64, -1)), peel.Int64, []float64{8, 6, -4, 0, 0}},
		{"RightShift", peel.RightShift(i64(16, -16, -1, 5, -5), i64(2, 2, 10, 64, 100)), peel.Int64, []float64{4, -4, -1, 0, -1}},
		{"LeftShift bool", peel.LeftShift(bools(true, true), bools(true, false)), peel.Int64, []float64{2, 1}},
		{"LogicalXor", peel.LogicalXor(bools(true, true, false), false), peel.Bool, []float64{1, 1, 0}},
		{"IsNaN int", peel.IsNaN(i64(1, 2)), peel.Bool, []float64{0, 0}},
		{"IsFinite int", peel.IsFinite(i64(1, 2)), peel.Bool, []float64{1, 1}},
		{"IsInf", peel.IsInf(f64Vec(inf, -inf, nan, 1)), peel.Bool, []float64{1, 1, 0, 0}},
		{"IsFinite", peel.IsFinite(f64Vec(inf, -inf, nan, 1)), peel.Bool, []float64{0, 0, 0, 1}},
		{"Fmax int", peel.Fmax(i64(1, 5), 3), peel.Int64, []float64{3, 5}},
		{"Trunc int", peel.Trunc(i64(-3, 4)), peel.Int64, []float64{-3, 4}},
		{"Frac int", peel.Frac(i64(-3, 4)), peel.Int64, []float64{0, 0}},
		{"NanToNum int", peel.NanToNum(i64(-3, 4)), peel.Int64, []float64{-3, 4}},
		{"Asin int", peel.Asin(i64(1, 0)), peel.Float64, []float64{math.Pi / 2, 0}},
	} {
		check(t, c.name, c.got, c.dt, c.got.Shape(), c.want, 0)
	}
}

// TestSpecialDerivatives checks the conventions at kinks and special
// points (JAX's), which the registry sweeps skip.
func TestSpecialDerivatives(t *testing.T) {
	for _, c := range []struct {
		name string
		got  *peel.Tensor
		want []float64
	}{
		{"Trunc", elemGrad(peel.Trunc, f64Vec(-1.5, 0, 2)), []float64{0, 0, 0}},
		{"Frac", elemGrad(peel.Frac, f64Vec(-1.5, 0, 2)), []float64{1, 1, 1}},
		{"LeakyReLU at 0", elemGrad(func(x *peel.Tensor) *peel.Tensor { return peel.LeakyReLU(x, 0.1) }, f64Vec(0, -1, 1)), []float64{1, 0.1, 1}},
		{"ELU at 0", elemGrad(func(x *peel.Tensor) *peel.Tensor { return peel.ELU(x, 0.5) }, f64Vec(0, -1000, 1000)), []float64{0.5, 0, 1}},
		{"HardTanh at the bounds", elemGrad(func(x *peel.Tensor) *peel.Tensor { return peel.HardTanh(x, -1, 1) }, f64Vec(-1, 1, 2, -2)), []float64{1, 1, 0, 0}},
		{"HardSwish at ±3", elemGrad(peel.HardSwish, f64Vec(-3, 3, 0)), []float64{0, 1, 0.5}},
		{"Logit eps outside", elemGrad(func(x *peel.Tensor) *peel.Tensor { return peel.Logit(x, 0.1) }, f64Vec(0.05, 0.5)), []float64{0, 4}},
		{"Softsign at 0", elemGrad(peel.Softsign, f64Vec(0)), []float64{1}},
		{"SiLU large", elemGrad(peel.SiLU, f64Vec(-1000, 1000)), []float64{0, 1}},
		{"Mish large", elemGrad(peel.Mish, f64Vec(-1000, 1000)), []float64{0, 1}},
		{"Lgamma is Digamma's integral", elemGrad(peel.Lgamma, f64Vec(1, 0.5)), []float64{-0.5772156649015329, -1.9635100260214235}},
		{"Digamma", elemGrad(peel.Digamma, f64Vec(1)), []float64{math.Pi * math.Pi / 6}},
		{"Asinh large", elemGrad(peel.Asinh, f64Vec(1e300, -1e300)), []float64{1e-300, 1e-300}},
		{"Acosh large", elemGrad(peel.Acosh, f64Vec(1e300)), []float64{1e-300}},
		{"NanToNum", elemGrad(func(x *peel.Tensor) *peel.Tensor { return peel.NanToNum(x) }, f64Vec(nan, inf, 2)), []float64{0, 0, 1}},
	} {
		check(t, c.name, c.got, peel.Float64, c.got.Shape(), c.want, 1e-14)
	}
	for _, c := range []struct {
		name   string
		f      func(x, y any) *peel.Tensor
		x, y   *peel.Tensor
		gx, gy []float64
	}{
		{"Xlogy at x = 0", peel.Xlogy, f64Vec(0, 0, 2), f64Vec(math.E, -1, 4), []float64{1, 0, math.Log(4)}, []float64{0, 0, 0.5}},
		{"Copysign", peel.Copysign, f64Vec(2, -2, 0, negZ, 2, 0), f64Vec(-1, -1, 1, 1, negZ, -3), []float64{-1, 1, 1, 1, -1, -1}, []float64{0, 0, 0, 0, 0, 0}},
		{"Fmax ties and NaN", peel.Fmax, f64Vec(1, nan, 3, 2), f64Vec(1, 2, nan, 1), []float64{0, 0, 1, 1}, []float64{1, 1, 0, 0}},
		{"Fmin ties and NaN", peel.Fmin, f64Vec(1, nan, 3, 0), f64Vec(1, 2, nan, 1), []float64{0, 0, 1, 1}, []float64{1, 1, 0, 0}},
		{"Hypot at the origin", peel.Hypot, f64Vec(0, 3), f64Vec(0, 4), []float64{0, 0.6}, []float64{0, 0.8}},
		{"LogAddExp ties", peel.LogAddExp, f64Vec(1, -inf, 1000), f64Vec(1, 0, 0), []float64{0.5, 0, 1}, []float64{0.5, 1, 0}},
	} {
		gx, gy := grad2(c.f, c.x, c.y)
		check(t, c.name+" ∂x", gx, peel.Float64, c.x.Shape(), c.gx, 1e-15)
		check(t, c.name+" ∂y", gy, peel.Float64, c.y.Shape(), c.gy, 1e-15)
	}
}

// TestSpecialInverses checks round trips and identities on random
// points (rapid).
func TestSpecialInverses(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x := rapid.Float64Range(-20, 20).Draw(t, "x")
		y := rapid.Float64Range(-20, 20).Draw(t, "y")
		v := func(a *peel.Tensor) float64 { return a.Float64s()[0] }
		s := func(a float64) *peel.Tensor { return peel.FromFloat64s([]float64{a}, 1) }
		for _, c := range []struct {
			name      string
			got, want float64
			tol       float64
		}{
			{"Asinh(Sinh(x))", v(peel.Asinh(peel.Sinh(s(x)))), x, 1e-14},
			{"Atan(tan x)", v(peel.Atan(peel.Tan(s(x / 20)))), x / 20, 1e-15},
			{"Erfinv(Erf(x))", v(peel.Erfinv(peel.Erf(s(x / 10)))), x / 10, 1e-9},
			{"Cosh² − Sinh²", v(peel.Cosh(s(x/8)))*v(peel.Cosh(s(x/8))) - v(peel.Sinh(s(x/8)))*v(peel.Sinh(s(x/8))), 1, 1e-13},
			{"Exp2(Log2)", v(peel.Exp2(peel.Log2(s(math.Abs(x) + 1)))), math.Abs(x) + 1, 1e-14},
			{"LogAddExp", v(peel.LogAddExp(s(x), s(y))), math.Log(math.Exp(x) + math.Exp(y)), 1e-14},
			{"LogAddExp symmetric", v(peel.LogAddExp(s(x), s(y))), v(peel.LogAddExp(s(y), s(x))), 0},
			{"Lerp", v(peel.Lerp(s(x), s(y), s(0.25))), x + 0.25*(y-x), 1e-14},
			{"Hypot", v(peel.Hypot(s(x), s(y))), math.Sqrt(x*x + y*y), 1e-15},
			{"Frac + Trunc", v(peel.Frac(s(x))) + v(peel.Trunc(s(x))), x, 0},
			{"Logit(Sigmoid)", v(peel.Logit(peel.Sigmoid(s(x / 4)))), x / 4, 1e-13},
		} {
			if !near(c.got, c.want, c.tol) {
				t.Fatalf("%s at x=%v, y=%v: %v, want %v", c.name, x, y, c.got, c.want)
			}
		}
	})
}

func TestSpecialErrors(t *testing.T) {
	f := f64Vec(1, 2)
	i := peel.FromInt64s([]int64{1, 2}, 2)
	for _, c := range []struct {
		op   string
		f    func()
		frag string
	}{
		{"peel.Polygamma", func() { peel.Polygamma(-1, f) }, "outside"},
		{"peel.Polygamma", func() { peel.Polygamma(171, f) }, "outside"},
		{"peel.Asin", func() { peel.Asin(nil) }, "nil"},
		{"peel.Logit", func() { peel.Logit(f, 0.1, 0.2) }, "at most one"},
		{"peel.Logit", func() { peel.Logit(f, 0.7) }, "outside"},
		{"peel.GLU", func() { peel.GLU(peel.FromFloat64s([]float64{1, 2, 3}, 3), 0) }, "odd"},
		{"peel.GLU", func() { peel.GLU(f, 1) }, "out of range"},
		{"peel.HardTanh", func() { peel.HardTanh(f, 1, -1) }, "interval"},
		{"peel.BitwiseAnd", func() { peel.BitwiseAnd(i, 1.5) }, "bitwise"},
		{"peel.BitwiseXor", func() { peel.BitwiseXor(f, i) }, "bitwise"},
		{"peel.LeftShift", func() { peel.LeftShift(f, 1) }, "bitwise"},
		{"peel.BitwiseNot", func() { peel.BitwiseNot(f) }, "bitwise"},
		{"peel.LogicalXor", func() { peel.LogicalXor(i, true) }, "not bool"},
		{"peel.Hypot", func() { peel.Hypot(f, peel.FromFloat64s([]float64{1, 2, 3}, 3)) }, "broadcast"},
		{"peel.Lerp", func() { peel.Lerp(f, f, "x") }, "string"},
		{"peel.NanToNum", func() { peel.NanToNum(f, nil) }, "nil option"},
	} {
		wantError(t, c.op, c.f, c.frag)
	}
}
