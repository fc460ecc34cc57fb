package peel_test

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
	"github.com/peel-ml/peel/transforms"
)

// conversionValue draws a float64 of every kind the conversion rule
// distinguishes: ±Inf, NaN, ±0, values past every integer range (huge),
// tiny and subnormal values, values on and next to the boundaries of
// each dtype, and arbitrary floats.
func conversionValue() *rapid.Generator[float64] {
	return rapid.OneOf(
		rapid.SampledFrom(floatEdgeValues),
		rapid.SampledFrom([]float64{
			1e30, -1e30, math.MaxFloat64, -math.MaxFloat64, 0x1p63, -0x1p63, math.Nextafter(0x1p63, 0),
			math.MaxInt32, math.MaxInt32 + 0.5, math.MinInt32, math.MinInt32 - 0.5, -0.5, -1.5,
			255, 255.5, 256, -1e-300, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
		}),
		rapid.Float64(),
		rapid.Float64Range(-300, 300),
	)
}

// TestOneConversionRule (issue 25, item 7) checks that every way peel
// makes a constant converts a float as AsType does: Full, FullLike,
// Ones, Arange, Linspace, a Go scalar written with CopyInto or used as a
// Pad value, and a rule constant (prims.Full), for every dtype and every
// float including ±Inf, NaN, huge, tiny and negative values; and that
// the convert_element_type kernel gives the same under Compile as
// eagerly. Before the one rule, Full(Int64, +Inf) gave MinInt64 while
// AsType gave MaxInt64.
func TestOneConversionRule(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dt := rapid.SampledFrom(everyDType).Draw(rt, "dtype")
		v := conversionValue().Draw(rt, "v")
		n := rapid.IntRange(1, 4).Draw(rt, "n")
		want := peel.AsType(peel.Scalar(v), dt)
		wantN := peel.BroadcastTo(want, n)
		check := func(what string, got *peel.Tensor) {
			if got.DType() != dt || !sameElems(t, got, wantN) {
				rt.Fatalf("%s(%v, %v) = %v; AsType(Scalar(%v), %v) = %v", what, dt, v, got, v, dt, want)
			}
		}
		check("Full", peel.Full(dt, v, n))
		check("FullLike", peel.FullLike(peel.Zeros(dt, n), v))
		check("CopyInto", peel.CopyInto(peel.Zeros(dt, n), v))
		check("prims.Full", prims.Full(v, interp.Aval{Shape: []int{n}, DType: dt}))
		if dt != peel.Bool {
			check("Pad", peel.Pad(peel.Zeros(dt, 0), [][2]int{{n, 0}}, v))
		}
		if !sameElems(t, peel.Ones(dt, n), peel.BroadcastTo(peel.AsType(peel.Scalar(1.0), dt), n)) {
			rt.Fatalf("Ones(%v) differs from AsType(Scalar(1), %v)", dt, dt)
		}

		// The kernel under Compile agrees with the eager kernel (and so
		// with the host fill, checked above).
		c := transforms.Compile(func(x *peel.Tensor) *peel.Tensor { return peel.AsType(x, dt) })
		x := peel.FromFloat64s([]float64{v, -v, v / 3})
		if got, want := c(x), peel.AsType(x, dt); !sameElems(t, got, want) {
			rt.Fatalf("Compile(AsType(·, %v))(%v) = %v; eager %v", dt, x, got, want)
		}

		// Arange and Linspace convert each float64 element by the rule.
		if dt == peel.Bool || math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1e300 {
			return
		}
		step := rapid.SampledFrom([]float64{1, -1, 0.5, 1e20, -3.25}).Draw(rt, "step")
		f := make([]float64, n)
		for i := range f {
			f[i] = v + float64(i)*step
		}
		stop := f[n-1] + step/2
		if got, w := peel.Arange(dt, v, stop, step), peel.AsType(peel.FromFloat64s(f), dt); got.Size() == n && !sameElems(t, got, w) {
			rt.Fatalf("Arange(%v, %v, %v, %v) = %v; AsType of its float64 elements %v", dt, v, stop, step, got, w)
		}
		lin := peel.Linspace(peel.Float64, v, f[n-1], n)
		if dt.IsInteger() {
			lin = peel.Floor(lin)
		}
		if got, w := peel.Linspace(dt, v, f[n-1], n), peel.AsType(lin, dt); !sameElems(t, got, w) {
			rt.Fatalf("Linspace(%v, %v, %v, %d) = %v; AsType of its float64 elements %v", dt, v, f[n-1], n, got, w)
		}
	})
}

// TestConversionRuleEdges pins the rule itself on the cases of issue 25.
func TestConversionRuleEdges(t *testing.T) {
	cases := []struct {
		dt   peel.DType
		v    float64
		want int64
	}{
		{peel.Int64, math.Inf(1), math.MaxInt64},
		{peel.Int64, math.Inf(-1), math.MinInt64},
		{peel.Int64, 1e30, math.MaxInt64},
		{peel.Int64, -1e30, math.MinInt64},
		{peel.Int64, math.NaN(), 0},
		{peel.Int64, -2.9, -2},
		{peel.Int32, 1e30, math.MaxInt32},
		{peel.Int32, -1e30, math.MinInt32},
		{peel.Int32, math.NaN(), 0},
		{peel.Uint8, 300, 255},
		{peel.Uint8, -1, 0},
		{peel.Uint8, 255.9, 255},
	}
	for _, c := range cases {
		for what, x := range map[string]*peel.Tensor{
			"Full":   peel.Full(c.dt, c.v),
			"AsType": peel.AsType(peel.Scalar(c.v), c.dt),
		} {
			if got := elems(t, x)[0].i; got != c.want {
				t.Errorf("%s(%v, %v) = %d; want %d", what, c.dt, c.v, got, c.want)
			}
		}
	}
}
