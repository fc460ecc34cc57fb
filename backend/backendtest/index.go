package backendtest

import (
	"fmt"
	"math"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Conformance of the index family: gather, scatter_add, scatter,
// dynamic_slice and dynamic_update_slice.

// Index operands: in range, with duplicates, and far out of range.

func indexValues(n int) values {
	return values{ilo: 0, ihi: int64(max(n-1, 0)), ispecial: []int64{-1, int64(n), -100, 100, math.MinInt64, math.MaxInt64, 0, int64(n - 1)}}
}

// gatherShapes pairs operand shapes with the index shapes gathered by.
var (
	gatherShapes = [][]int{{5}, {3, 4}, {4, 1}, {2, 3, 4}, {2, 0, 3}, {3, 0}}
	indexShapes  = [][]int{{}, {3}, {2, 2}, {0}, {7}}
)

func runGather(s *suite) {
	p := prims.Gather
	for _, dt := range allDTypes {
		i := 0
		for _, shape := range gatherShapes {
			for axis := range shape {
				for _, ishape := range indexShapes {
					i++
					x := s.operand(dt, shape, cycle(shape, i), copyValues)
					idx := s.operand(backend.Int64, ishape, cycle(ishape, i/2), indexValues(shape[axis]))
					desc := describe(p.Name, dt, shape, fmt.Sprintf("axis=%d indices=%v", axis, idx.a), "x="+x.l.String(), "idx="+idx.l.String())
					params := prims.AxisParams{Axis: axis}
					if shape[axis] == 0 && idx.a.size() > 0 {
						// No element to gather: any result or an *interp.Error will do.
						s.robust(desc+" (from an empty axis)", func() { interp.Bind1(p, params, x.t, idx.t) })
						continue
					}
					s.try(desc, func() {
						s.expect(check{desc: desc, signedZero: true}, interp.Bind1(p, params, x.t, idx.t), refGather(x.a, idx.a, axis))
					})
				}
			}
		}
		x := s.operand(dt, []int{300, 40}, contiguous, copyValues)
		idx := s.operand(backend.Int64, []int{500}, contiguous, indexValues(300))
		desc := describe(p.Name, dt, x.a.shape, "axis=0, 500 indices")
		s.try(desc, func() {
			s.expect(check{desc: desc, signedZero: true}, interp.Bind1(p, prims.AxisParams{Axis: 0}, x.t, idx.t), refGather(x.a, idx.a, 0))
		})
	}
	x := s.operand(backend.Float64, []int{3, 4}, contiguous, finiteValues).t
	s.expectError("gather with f64 indices", func() {
		interp.Bind1(p, prims.AxisParams{Axis: 0}, x, s.operand(backend.Float64, []int{2}, contiguous, finiteValues).t)
	})
	s.expectError("gather along axis 2 of [3,4]", func() {
		interp.Bind1(p, prims.AxisParams{Axis: 2}, x, s.operand(backend.Int64, []int{2}, contiguous, finiteValues).t)
	})
}

func runScatter(p *interp.Prim, add bool) func(*suite) {
	v := copyValues
	if add {
		v = sumValues
	}
	return runScatterCases(p, v, !add, func(x, idx, upd array, axis int) (array, []float64) {
		return refScatter(x, idx, upd, axis, add)
	})
}

// runScatterCases checks the scatter-like primitive p (operand, i64
// indices, updates, along an axis) against ref: the dtypes its rule
// rejects are refused; every shape of gatherShapes along every axis with
// every index shape, in cycled layouts; a large update of 500 rows; and
// updates of the wrong shape or dtype and f64 indices are refused.
// signedZero requires zeros of the reference's sign.
func runScatterCases(p *interp.Prim, v values, signedZero bool, ref func(x, idx, upd array, axis int) (array, []float64)) func(*suite) {
	return func(s *suite) {
		dts := accepted(p, prims.AxisParams{Axis: 0}, func(dt backend.DType) []interp.Aval {
			return []interp.Aval{{Shape: []int{2}, DType: dt}, {Shape: []int{3}, DType: backend.Int64}, {Shape: []int{3}, DType: dt}}
		})
		run := func(desc string, x, idx, upd operand, axis int) {
			s.try(desc, func() {
				want, allow := ref(x.a, idx.a, upd.a, axis)
				s.expect(check{desc: desc, allow: allow, signedZero: signedZero}, interp.Bind1(p, prims.AxisParams{Axis: axis}, x.t, idx.t, upd.t), want)
			})
		}
		for _, dt := range allDTypes {
			if !slices.Contains(dts, dt) {
				s.expectError(describe(p.Name, dt, []int{2}, "(a dtype the rule rejects)"), func() {
					interp.Bind1(p, prims.AxisParams{Axis: 0}, s.operand(dt, []int{2}, contiguous, v).t,
						s.operand(backend.Int64, []int{1}, contiguous, indexValues(2)).t, s.operand(dt, []int{1}, contiguous, v).t)
				})
				continue
			}
			i := 0
			for _, shape := range gatherShapes {
				for axis := range shape {
					for _, ishape := range indexShapes {
						i++
						ushape := prims.GatherShape(shape, ishape, axis)
						x := s.operand(dt, shape, cycle(shape, i), v)
						idx := s.operand(backend.Int64, ishape, cycle(ishape, i/2), indexValues(shape[axis]))
						upd := s.operand(dt, ushape, cycle(ushape, i/3), v)
						run(describe(p.Name, dt, shape, fmt.Sprintf("axis=%d indices=%v", axis, idx.a),
							"x="+x.l.String(), "idx="+idx.l.String(), "updates="+upd.l.String()), x, idx, upd, axis)
					}
				}
			}
			x := s.operand(dt, []int{300, 40}, contiguous, v.finite())
			idx := s.operand(backend.Int64, []int{500}, contiguous, indexValues(300))
			upd := s.operand(dt, []int{500, 40}, contiguous, v.finite())
			run(describe(p.Name, dt, x.a.shape, "axis=0, 500 indices"), x, idx, upd, 0)
		}
		f := func(dt backend.DType, shape ...int) *interp.Tensor {
			return s.operand(dt, shape, contiguous, finiteValues).t
		}
		s.expectError(p.Name+" with updates of the wrong shape", func() {
			interp.Bind1(p, prims.AxisParams{Axis: 0}, f(dts[0], 3, 4), f(backend.Int64, 2), f(dts[0], 2, 3))
		})
		s.expectError(p.Name+" with f64 indices", func() {
			interp.Bind1(p, prims.AxisParams{Axis: 0}, f(dts[0], 3), f(backend.Float64, 2), f(dts[0], 2))
		})
		s.expectError(p.Name+" with updates of another dtype", func() {
			other := backend.Float32
			if dts[0] == other {
				other = backend.Float64
			}
			interp.Bind1(p, prims.AxisParams{Axis: 0}, f(dts[0], 3), f(backend.Int64, 2), f(other, 2))
		})
	}
}

// startValues are dynamic slice starts: in range and far outside it.
var startValues = values{ilo: -2, ihi: 5, ispecial: []int64{-100, 100, math.MinInt64, math.MaxInt64, math.MaxInt64 - 1}}

// blockSizes returns the block sizes a dynamic slice of shape takes.
func blockSizes(shape []int) [][]int {
	out := [][]int{slices.Clone(shape)}
	half, one, zero := make([]int, len(shape)), make([]int, len(shape)), make([]int, len(shape))
	for k, d := range shape {
		half[k], one[k] = d/2, min(d, 1)
		zero[k] = d
		if k == 0 {
			zero[k] = 0
		}
	}
	if len(shape) > 0 {
		out = append(out, half, one, zero)
	}
	return out
}

func (s *suite) starts(n int) ([]*interp.Tensor, []int64) {
	ts := make([]*interp.Tensor, n)
	vs := make([]int64, n)
	for k := range ts {
		a := s.draw(backend.Int64, nil, startValues)
		ts[k], vs[k] = s.tensor(a), a.i[0]
	}
	return ts, vs
}

func runDynamicSlice(s *suite) {
	p := prims.DynamicSlice
	for _, dt := range allDTypes {
		for _, shape := range moveShapes {
			for _, sizes := range blockSizes(shape) {
				for _, l := range layoutsFor(shape) {
					for range 2 {
						x := s.operand(dt, shape, l, copyValues)
						st, sv := s.starts(len(shape))
						desc := describe(p.Name, dt, shape, fmt.Sprintf("sizes=%v starts=%v", sizes, sv), "x="+l.String())
						s.try(desc, func() {
							got := interp.Bind1(p, prims.DynamicSliceParams{Sizes: sizes}, append([]*interp.Tensor{x.t}, st...)...)
							s.expect(check{desc: desc, signedZero: true}, got, refDynamicSlice(x.a, sv, sizes))
						})
					}
				}
			}
		}
	}
	x := s.operand(backend.Float64, []int{3, 4}, contiguous, finiteValues).t
	i0 := s.tensor(array{dt: backend.Int64, shape: []int{}, i: []int64{0}})
	s.expectError("dynamic_slice of [3,4] with sizes [4,1]", func() {
		interp.Bind1(p, prims.DynamicSliceParams{Sizes: []int{4, 1}}, x, i0, i0)
	})
	s.expectError("dynamic_slice of [3,4] with one start", func() {
		interp.Bind1(p, prims.DynamicSliceParams{Sizes: []int{1, 1}}, x, i0)
	})
	s.expectError("dynamic_slice of [3,4] with a [1] start", func() {
		interp.Bind1(p, prims.DynamicSliceParams{Sizes: []int{1, 1}}, x, i0, s.operand(backend.Int64, []int{1}, contiguous, finiteValues).t)
	})
	s.expectError("dynamic_slice of [3,4] with an f64 start", func() {
		interp.Bind1(p, prims.DynamicSliceParams{Sizes: []int{1, 1}}, x, i0, s.operand(backend.Float64, nil, contiguous, finiteValues).t)
	})
}

func runDynamicUpdateSlice(s *suite) {
	p := prims.DynamicUpdateSlice
	for _, dt := range allDTypes {
		i := 0
		for _, shape := range moveShapes {
			for _, sizes := range blockSizes(shape) {
				for _, l := range layoutsFor(shape) {
					for range 2 {
						i++
						x := s.operand(dt, shape, l, copyValues)
						u := s.operand(dt, sizes, cycle(sizes, i), copyValues)
						st, sv := s.starts(len(shape))
						desc := describe(p.Name, dt, shape, fmt.Sprintf("update=%v starts=%v", fmtShape(sizes), sv), "x="+l.String(), "update="+u.l.String())
						s.try(desc, func() {
							got := interp.Bind1(p, nil, append([]*interp.Tensor{x.t, u.t}, st...)...)
							s.expect(check{desc: desc, signedZero: true}, got, refDynamicUpdateSlice(x.a, u.a, sv))
						})
					}
				}
			}
		}
	}
	f := func(dt backend.DType, shape ...int) *interp.Tensor {
		return s.operand(dt, shape, contiguous, finiteValues).t
	}
	i0 := s.tensor(array{dt: backend.Int64, shape: []int{}, i: []int64{0}})
	s.expectError("dynamic_update_slice of [3,4] with a [4,1] update", func() {
		interp.Bind1(p, nil, f(backend.Float64, 3, 4), f(backend.Float64, 4, 1), i0, i0)
	})
	s.expectError("dynamic_update_slice of [3,4] with a [2] update", func() {
		interp.Bind1(p, nil, f(backend.Float64, 3, 4), f(backend.Float64, 2), i0, i0)
	})
	s.expectError("dynamic_update_slice of f64 with an f32 update", func() {
		interp.Bind1(p, nil, f(backend.Float64, 3, 4), f(backend.Float32, 1, 1), i0, i0)
	})
	s.expectError("dynamic_update_slice of [3,4] with one start", func() {
		interp.Bind1(p, nil, f(backend.Float64, 3, 4), f(backend.Float64, 1, 1), i0)
	})
}
