package backendtest

import (
	"fmt"
	"math"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// reduceShapes are the operand shapes of reductions and scans.
var reduceShapes = [][]int{{}, {0}, {1}, {5}, {17}, {3, 4}, {4, 1}, {2, 0, 3}, {2, 3, 4}, {2, 1, 3, 2}}

// axisSubsets returns the sorted axis lists reductions run over: all of
// them up to rank 3, a selection for higher ranks.
func axisSubsets(rank int) [][]int {
	if rank > 3 {
		return [][]int{{}, {0}, {rank - 1}, {1, 2}, {0, rank - 1}, seq(rank)}
	}
	var out [][]int
	for mask := range 1 << rank {
		axes := []int{}
		for d := range rank {
			if mask&(1<<d) != 0 {
				axes = append(axes, d)
			}
		}
		out = append(out, axes)
	}
	return out
}

var (
	sumValues = values{lo: -3, hi: 3, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, 1, -1, inf, -inf, nan, 1e30, -1e30, tiny(dt)}
	}, ilo: -9, ihi: 9, ispecial: intEdges}
	prodValues = values{lo: -2, hi: 2, special: func(dt backend.DType) []float64 {
		return []float64{0, negZero, 1, -1, inf, -inf, nan}
	}, ilo: -3, ihi: 3, ispecial: []int64{0, 1, -1, math.MaxInt64, math.MinInt64}}
	// argValues have many ties, so the first occurrence matters.
	argValues = values{lo: -2, hi: 2, special: func(dt backend.DType) []float64 {
		return []float64{nan, inf, -inf, 0, negZero, 1, 1, 1, -1, -1}
	}, ilo: -2, ihi: 2, ispecial: []int64{math.MaxInt64, math.MinInt64}}
)

func runReduce(p *interp.Prim, kind reduceKind, v values) func(*suite) {
	return func(s *suite) {
		dts := accepted(p, prims.ReduceParams{Axes: []int{0}}, sameAvals(1, []int{2}))
		for _, dt := range allDTypes {
			if !slices.Contains(dts, dt) {
				s.expectError(describe(p.Name, dt, []int{2}, "(a dtype the rule rejects)"), func() {
					interp.Bind1(p, prims.ReduceParams{Axes: []int{0}}, s.operand(dt, []int{2}, contiguous, finiteValues).t)
				})
				continue
			}
			one := func(x operand, axes []int) {
				desc := describe(p.Name, dt, x.a.shape, fmt.Sprintf("axes=%v", axes), "x="+x.l.String())
				params := prims.ReduceParams{Axes: axes}
				empty := slices.ContainsFunc(axes, func(d int) bool { return x.a.shape[d] == 0 })
				if empty && (kind == maxReduce || kind == minReduce) {
					s.expectError(desc+" (an empty axis)", func() { interp.Bind1(p, params, x.t) })
					return
				}
				s.try(desc, func() {
					want, allow := refReduce(x.a, axes, kind)
					s.expect(check{desc: desc, allow: allow}, interp.Bind1(p, params, x.t), want)
				})
			}
			for _, shape := range reduceShapes {
				for _, axes := range axisSubsets(len(shape)) {
					for _, l := range layoutsFor(shape) {
						one(s.operand(dt, shape, l, v), axes)
					}
				}
			}
			one(s.operand(dt, bigShape, contiguous, v.finite()), []int{0})
			for _, axes := range [][]int{{0}, {1}, {0, 1}} {
				one(s.operand(dt, []int{300, 250}, contiguous, v.finite()), axes)
			}
			one(s.operand(dt, []int{300, 250}, transposed, v.finite()), []int{1})
		}
		x := s.operand(dts[0], []int{2, 3}, contiguous, finiteValues).t
		for _, axes := range [][]int{{2}, {-1}, {1, 0}, {0, 0}} {
			s.expectError(fmt.Sprintf("%s of [2,3] over axes %v", p.Name, axes), func() {
				interp.Bind1(p, prims.ReduceParams{Axes: axes}, x)
			})
		}
	}
}

func runArg(p *interp.Prim, isMax bool) func(*suite) {
	return func(s *suite) {
		dts := accepted(p, prims.AxisParams{Axis: 0}, sameAvals(1, []int{2}))
		for _, dt := range dts {
			one := func(x operand, axis int) {
				desc := describe(p.Name, dt, x.a.shape, fmt.Sprintf("axis=%d", axis), "x="+x.l.String())
				params := prims.AxisParams{Axis: axis}
				if x.a.shape[axis] == 0 {
					s.expectError(desc+" (an empty axis)", func() { interp.Bind1(p, params, x.t) })
					return
				}
				s.try(desc, func() {
					s.expect(check{desc: desc}, interp.Bind1(p, params, x.t), refArg(x.a, axis, isMax))
				})
			}
			for _, shape := range reduceShapes {
				for axis := range shape {
					for _, l := range layoutsFor(shape) {
						one(s.operand(dt, shape, l, argValues), axis)
					}
				}
			}
			one(s.operand(dt, bigShape, contiguous, argValues.finite()), 0)
			one(s.operand(dt, []int{300, 250}, contiguous, argValues.finite()), 0)
			one(s.operand(dt, []int{300, 250}, contiguous, argValues.finite()), 1)
			if dt.IsFloat() {
				// NaN at the start, in the middle, everywhere; ±Inf; ±0 ties.
				for _, row := range [][]float64{
					{nan, 1, 2}, {1, nan, 3, nan}, {nan, nan}, {-inf, inf, 1}, {inf, inf, -inf, -inf},
					{negZero, 0}, {0, negZero}, {3, 3, 3},
				} {
					a := newArray(dt, []int{len(row)})
					copy(a.f, row)
					one(s.place(a, contiguous), 0)
				}
			}
		}
		x := s.operand(dts[0], []int{2, 3}, contiguous, finiteValues).t
		for _, axis := range []int{2, -1} {
			s.expectError(fmt.Sprintf("%s of [2,3] along axis %d", p.Name, axis), func() {
				interp.Bind1(p, prims.AxisParams{Axis: axis}, x)
			})
		}
	}
}
