package backendtest

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel/backend"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// softmax and log_softmax: every axis of the reduction shapes in every
// layout, with edge values (±Inf, NaN, ±1e30, subnormals), long rows, and
// the errors of a bad axis or dtype, against a float64 reference.

func runSoftmax(p *interp.Prim, log bool) func(*suite) {
	return func(s *suite) {
		params0 := prims.AxisParams{Axis: 0}
		dts := s.forUnaryDTypes(p, params0, func(dt backend.DType) {
			one := func(x operand, axis int) {
				desc := describe(p.Name, dt, x.a.shape, prims.AxisParams{Axis: axis}, "x="+x.l.String())
				s.try(desc, func() {
					want, allow := refSoftmax(x.a, axis, log)
					s.expect(check{desc: desc, allow: allow}, interp.Bind1(p, prims.AxisParams{Axis: axis}, x.t), want[0])
				})
			}
			for _, shape := range reduceShapes {
				for axis := range shape {
					for _, l := range layoutsFor(shape) {
						one(s.operand(dt, shape, l, sumValues), axis)
					}
				}
			}
			big := []int{300, 250}
			one(s.operand(dt, big, contiguous, sumValues), 0)
			one(s.operand(dt, big, contiguous, sumValues), 1)
			one(s.operand(dt, big, contiguous, finiteValues), 1)
		})
		x := s.operand(dts[0], []int{2, 3}, contiguous, finiteValues).t
		for _, axis := range []int{2, -1} {
			s.expectError(fmt.Sprintf("%s of [2,3] along axis %d", p.Name, axis), func() {
				interp.Bind(p, prims.AxisParams{Axis: axis}, x)
			})
		}
		s.expectError(p.Name+" of a rank-0 tensor", func() {
			interp.Bind(p, params0, s.operand(dts[0], nil, contiguous, finiteValues).t)
		})
	}
}

// refSoftmax is softmax (log-softmax with log set) along axis in float64,
// with the error allowed for each element: the rounding of the shifted
// operand (relative to its size, which the exponential turns into a
// relative error of the result), of the sum, and of the result. A line
// holding a NaN, or whose maximum is infinite, is NaN throughout.
func refSoftmax(x array, axis int, log bool) ([]array, []float64) {
	out := newArray(x.dt, x.shape)
	allow := make([]float64, len(x.f))
	u := unitRoundoff(x.dt)
	for _, line := range lineMap(x.shape, axis) {
		m := math.Inf(-1)
		for _, k := range line {
			m = math.Max(m, x.f[k])
		}
		if math.IsNaN(m) || math.IsInf(m, 0) {
			for _, k := range line {
				out.f[k] = math.NaN()
			}
			continue
		}
		var sum float64
		for _, k := range line {
			sum += math.Exp(x.f[k] - m)
		}
		n := float64(len(line))
		ls := math.Log(sum)
		for _, k := range line {
			d := x.f[k] - m
			if log {
				out.f[k] = fround(x.dt, d-ls)
				allow[k] = 4 * u * (n + 4 + math.Abs(d) + ls)
			} else {
				y := math.Exp(d) / sum
				out.f[k] = fround(x.dt, y)
				allow[k] = 4*u*(n+4+math.Abs(d))*y + fround(x.dt, math.SmallestNonzeroFloat64)
			}
		}
	}
	return []array{out}, allow
}

// addSoftmax registers softmax's and log_softmax's cases.
func addSoftmax(m map[*interp.Prim]func(*suite)) {
	m[prims.Softmax] = runSoftmax(prims.Softmax, false)
	m[prims.LogSoftmax] = runSoftmax(prims.LogSoftmax, true)
}
