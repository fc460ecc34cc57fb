package backendtest

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// layer_norm and rms_norm: every count of trailing axes of the reduction
// shapes in every layout, with edge values (zeros, NaN, ±Inf, constant
// rows), long rows, and the errors of a bad axis count or dtype, against
// a float64 reference.

// normValues are moderate values with the edges a normalization meets:
// zeros (a constant row has no deviation), signed units, NaN and ±Inf.
var normValues = values{lo: -3, hi: 3, special: func(backend.DType) []float64 {
	return []float64{0, negZero, 1, -1, nan, inf, -inf}
}}

func runNorm(p *interp.Prim, center bool) func(*suite) {
	return func(s *suite) {
		params0 := prims.NormParams{Axes: 1, Eps: 1e-5}
		dts := s.forUnaryDTypes(p, params0, func(dt backend.DType) {
			one := func(x operand, params prims.NormParams) {
				desc := describe(p.Name, dt, x.a.shape, params, "x="+x.l.String())
				s.try(desc, func() {
					want, allow := refNorm(x.a, params, center)
					got := interp.Bind(p, params, x.t)
					for k := range want {
						s.expect(check{desc: fmt.Sprintf("%s result %d", desc, k), allow: allow[k]}, got[k], want[k])
					}
				})
			}
			for _, shape := range reduceShapes {
				for k := 1; k <= len(shape); k++ {
					for _, eps := range []float64{1e-5, 0.25} {
						for _, l := range layoutsFor(shape) {
							one(s.operand(dt, shape, l, normValues), prims.NormParams{Axes: k, Eps: eps})
						}
					}
				}
			}
			big := []int{300, 250}
			one(s.operand(dt, big, contiguous, normValues), prims.NormParams{Axes: 1, Eps: 1e-5})
			one(s.operand(dt, big, contiguous, finiteValues), prims.NormParams{Axes: 1, Eps: 1e-5})
			one(s.operand(dt, big, contiguous, finiteValues), prims.NormParams{Axes: 2, Eps: 1e-5})
			// ε = 0 on rows that are not constant.
			one(s.operand(dt, []int{4, 33}, contiguous, finiteValues), prims.NormParams{Axes: 1})
		})
		x := s.operand(dts[0], []int{2, 3}, contiguous, finiteValues).t
		for _, k := range []int{0, 3, -1} {
			s.expectError(fmt.Sprintf("%s of [2,3] over the last %d axes", p.Name, k), func() {
				interp.Bind(p, prims.NormParams{Axes: k}, x)
			})
		}
		s.expectError(p.Name+" of a rank-0 tensor", func() {
			interp.Bind(p, params0, s.operand(dts[0], nil, contiguous, finiteValues).t)
		})
	}
}

// refNorm is layer_norm (rms_norm without center) in float64, with the
// errors allowed for each element of both results. It takes the
// kernel's steps (the mean, the centered values, the mean of their
// squares, ε in the dtype, the inverse square root, the product), so
// NaN and infinities come out where IEEE arithmetic puts them (a row
// holding an infinity: NaN for layer_norm; r = 0 for rms_norm), and a
// special value is required exactly. Elsewhere each of the kernel's
// roundings costs a few units of the dtype's roundoff relative to the
// values it touches, and its sums n of them.
func refNorm(x array, p prims.NormParams, center bool) ([]array, [][]float64) {
	r := len(x.shape)
	rows := x.shape[:r-p.Axes]
	y, inv := newArray(x.dt, x.shape), newArray(x.dt, rows)
	ay, ainv := make([]float64, len(x.f)), make([]float64, len(inv.f))
	u := unitRoundoff(x.dt)
	n := backend.ShapeSize(x.shape[r-p.Axes:])
	eps := fround(x.dt, p.Eps)
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	for i := range inv.f {
		row := x.f[i*n : (i+1)*n]
		var m, big float64
		for _, v := range row {
			m += v
			big = math.Max(big, math.Abs(v))
		}
		if center {
			m /= float64(n)
		} else {
			m = 0
		}
		var v float64
		for _, e := range row {
			v += (e - m) * (e - m)
		}
		v /= float64(n)
		rr := 1 / math.Sqrt(v+eps)
		inv.f[i] = fround(x.dt, rr)
		// The variance is off by about (n+8)·u·(its size plus big²),
		// which moves r by half that relative to v+ε.
		dv := float64(n+8) * u * (v + 2*big*big)
		dr := 2*u*rr + 0.5*rr*dv/(v+eps)
		if finite(inv.f[i]) && finite(big) {
			ainv[i] = 4 * dr
		}
		for j, e := range row {
			k := i*n + j
			y.f[k] = fround(x.dt, (e-m)*rr)
			if finite(y.f[k]) && finite(big) && finite(rr) {
				ay[k] = 4 * (math.Abs(e-m)*dr + rr*float64(n+4)*u*big + u*math.Abs(y.f[k]))
			}
		}
	}
	return []array{y, inv}, [][]float64{ay, ainv}
}

// addNorms registers layer_norm's and rms_norm's cases.
func addNorms(m map[*interp.Prim]func(*suite)) {
	m[prims.LayerNorm] = runNorm(prims.LayerNorm, true)
	m[prims.RMSNorm] = runNorm(prims.RMSNorm, false)
}
