package backendtest

import (
	"fmt"
	"math"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// cumprod, cumlogsumexp, cummax and cummin: every axis of the reduction
// shapes in every layout, both directions, with edge values (ties, NaN,
// ±Inf, integer edges that overflow), and large operands.

// scanRef computes one scan's reference: results and the error allowed
// for float results (nil: exact).
type scanRef func(x array, axis int, reverse bool) ([]array, []float64)

func runScan(p *interp.Prim, v values, ref scanRef) func(*suite) {
	return func(s *suite) {
		params0 := prims.CumsumParams{Axis: 0}
		dts := s.forUnaryDTypes(p, params0, func(dt backend.DType) {
			one := func(x operand, params prims.CumsumParams) {
				desc := describe(p.Name, dt, x.a.shape, params, "x="+x.l.String())
				s.try(desc, func() {
					want, allow := ref(x.a, params.Axis, params.Reverse)
					got := interp.Bind(p, params, x.t)
					for k := range want {
						c := check{desc: fmt.Sprintf("%s result %d", desc, k), signedZero: p == prims.Cummax || p == prims.Cummin}
						if k == 0 {
							c.allow = allow
						}
						s.expect(c, got[k], want[k])
					}
				})
			}
			for _, shape := range reduceShapes {
				for axis := range shape {
					for _, rev := range []bool{false, true} {
						for _, l := range layoutsFor(shape) {
							one(s.operand(dt, shape, l, v), prims.CumsumParams{Axis: axis, Reverse: rev})
						}
					}
				}
			}
			big := []int{300, 250}
			one(s.operand(dt, big, contiguous, v), prims.CumsumParams{Axis: 0, Reverse: true})
			one(s.operand(dt, big, contiguous, v), prims.CumsumParams{Axis: 1})
		})
		x := s.operand(dts[0], []int{2, 3}, contiguous, finiteValues).t
		for _, axis := range []int{2, -1} {
			s.expectError(fmt.Sprintf("%s of [2,3] along axis %d", p.Name, axis), func() {
				interp.Bind(p, prims.CumsumParams{Axis: axis}, x)
			})
		}
		s.expectError(p.Name+" of a rank-0 tensor", func() {
			interp.Bind(p, params0, s.operand(dts[0], nil, contiguous, finiteValues).t)
		})
	}
}

// scanLines calls f with each line along axis in scan order.
func scanLines(shape []int, axis int, reverse bool, f func(line []int)) {
	for _, line := range lineMap(shape, axis) {
		if reverse {
			slices.Reverse(line)
		}
		f(line)
	}
}

func refCumprod(x array, axis int, reverse bool) ([]array, []float64) {
	out := newArray(x.dt, x.shape)
	var allow []float64
	if x.dt.IsFloat() {
		allow = make([]float64, len(x.f))
	}
	scanLines(x.shape, axis, reverse, func(line []int) {
		pi, pf := int64(1), 1.0
		for n, k := range line {
			if x.dt == backend.Int64 {
				pi *= x.i[k] // wraps, as int64 arithmetic does
				out.i[k] = pi
				continue
			}
			pf *= x.f[k]
			out.f[k] = fround(x.dt, pf)
			allow[k] = 2 * float64(n+2) * unitRoundoff(x.dt) * math.Abs(out.f[k])
		}
	})
	return []array{out}, allow
}

func refCumlogsumexp(x array, axis int, reverse bool) ([]array, []float64) {
	out := newArray(x.dt, x.shape)
	allow := make([]float64, len(x.f))
	u := unitRoundoff(x.dt)
	scanLines(x.shape, axis, reverse, func(line []int) {
		acc, big := math.Inf(-1), 0.0
		for n, k := range line {
			v := x.f[k]
			switch {
			case n == 0:
				acc = v
			case math.IsNaN(acc) || math.IsNaN(v):
				acc = math.NaN()
			case math.IsInf(acc, 0) && acc == v:
			case math.IsInf(v, 1) || math.IsInf(acc, -1):
				acc = v
			case math.IsInf(v, -1) || math.IsInf(acc, 1):
			default:
				m := math.Max(acc, v)
				acc = m + math.Log(math.Exp(acc-m)+math.Exp(v-m))
			}
			out.f[k] = fround(x.dt, acc)
			if !math.IsInf(acc, 0) && !math.IsNaN(acc) {
				big = math.Max(big, math.Abs(acc))
			}
			allow[k] = 4 * float64(n+2) * u * (big + 1)
		}
	})
	return []array{out}, allow
}

// refCumExtremum keeps the running extremum and the position of its first
// occurrence; a NaN replaces any number and is never replaced.
func refCumExtremum(isMax bool) scanRef {
	return func(x array, axis int, reverse bool) ([]array, []float64) {
		out, idx := newArray(x.dt, x.shape), newArray(backend.Int64, x.shape)
		scanLines(x.shape, axis, reverse, func(line []int) {
			if len(line) == 0 {
				return
			}
			best := line[0]
			better := func(k int) bool {
				switch x.dt {
				case backend.Bool:
					return x.b[k] != x.b[best] && x.b[k] == isMax
				case backend.Int64:
					return (isMax && x.i[k] > x.i[best]) || (!isMax && x.i[k] < x.i[best])
				}
				a, b := x.f[k], x.f[best]
				if math.IsNaN(b) {
					return false
				}
				return math.IsNaN(a) || (isMax && a > b) || (!isMax && a < b)
			}
			for j, k := range line {
				if better(k) {
					best = line[j]
				}
				out.set(k, x, best)
				idx.i[k] = int64(axisIndex(x.shape, axis, best))
			}
		})
		return []array{out, idx}, nil
	}
}

// axisIndex returns the coordinate along axis of flat position k.
func axisIndex(shape []int, axis, k int) int {
	idx := make([]int, len(shape))
	unravel(k, shape, idx)
	return idx[axis]
}

// addScans registers the scans' cases.
func addScans(m map[*interp.Prim]func(*suite)) {
	m[prims.Cumprod] = runScan(prims.Cumprod, prodValues, refCumprod)
	m[prims.Cumlogsumexp] = runScan(prims.Cumlogsumexp, sumValues, refCumlogsumexp)
	m[prims.Cummax] = runScan(prims.Cummax, argValues, refCumExtremum(true))
	m[prims.Cummin] = runScan(prims.Cummin, argValues, refCumExtremum(false))
}

func runCumsum(s *suite) {
	p := prims.Cumsum
	dts := accepted(p, prims.CumsumParams{Axis: 0}, sameAvals(1, []int{2}))
	for _, dt := range allDTypes {
		if !slices.Contains(dts, dt) {
			s.expectError(describe(p.Name, dt, []int{2}, "(a dtype the rule rejects)"), func() {
				interp.Bind1(p, prims.CumsumParams{}, s.operand(dt, []int{2}, contiguous, finiteValues).t)
			})
			continue
		}
		one := func(x operand, params prims.CumsumParams) {
			desc := describe(p.Name, dt, x.a.shape, params, "x="+x.l.String())
			s.try(desc, func() {
				want, allow := refCumsum(x.a, params.Axis, params.Reverse)
				s.expect(check{desc: desc, allow: allow}, interp.Bind1(p, params, x.t), want)
			})
		}
		for _, shape := range reduceShapes {
			for axis := range shape {
				for _, rev := range []bool{false, true} {
					for _, l := range layoutsFor(shape) {
						one(s.operand(dt, shape, l, sumValues), prims.CumsumParams{Axis: axis, Reverse: rev})
					}
				}
			}
		}
		one(s.operand(dt, bigShape, contiguous, sumValues.finite()), prims.CumsumParams{Axis: 0})
		one(s.operand(dt, []int{300, 250}, contiguous, sumValues.finite()), prims.CumsumParams{Axis: 0, Reverse: true})
		one(s.operand(dt, []int{300, 250}, contiguous, sumValues.finite()), prims.CumsumParams{Axis: 1})
	}
	x := s.operand(dts[0], []int{2, 3}, contiguous, finiteValues).t
	for _, axis := range []int{2, -1} {
		s.expectError(fmt.Sprintf("cumsum of [2,3] along axis %d", axis), func() {
			interp.Bind1(p, prims.CumsumParams{Axis: axis}, x)
		})
	}
	s.expectError("cumsum of a rank-0 tensor", func() {
		interp.Bind1(p, prims.CumsumParams{Axis: 0}, s.operand(dts[0], nil, contiguous, finiteValues).t)
	})
}
