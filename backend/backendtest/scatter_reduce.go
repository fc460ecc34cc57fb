package backendtest

import (
	"fmt"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Conformance of scatter_mul, scatter_max and scatter_min, over the
// operand and index shapes, layouts and special values of scatter_add.

// The ways an update is combined (refScatterCombine).
const (
	combineMul = iota
	combineMax
	combineMin
)

func runScatterCombine(p *interp.Prim, how int) func(*suite) {
	return func(s *suite) {
		dts := accepted(p, prims.AxisParams{Axis: 0}, func(dt backend.DType) []interp.Aval {
			return []interp.Aval{{Shape: []int{2}, DType: dt}, {Shape: []int{3}, DType: backend.Int64}, {Shape: []int{3}, DType: dt}}
		})
		v := copyValues
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
						desc := describe(p.Name, dt, shape, fmt.Sprintf("axis=%d indices=%v", axis, idx.a),
							"x="+x.l.String(), "idx="+idx.l.String(), "updates="+upd.l.String())
						s.try(desc, func() {
							want := refScatterCombine(x.a, idx.a, upd.a, axis, how)
							s.expect(check{desc: desc, signedZero: true}, interp.Bind1(p, prims.AxisParams{Axis: axis}, x.t, idx.t, upd.t), want)
						})
					}
				}
			}
			x := s.operand(dt, []int{300, 40}, contiguous, v.finite())
			idx := s.operand(backend.Int64, []int{500}, contiguous, indexValues(300))
			upd := s.operand(dt, []int{500, 40}, contiguous, v.finite())
			desc := describe(p.Name, dt, x.a.shape, "axis=0, 500 indices")
			s.try(desc, func() {
				want := refScatterCombine(x.a, idx.a, upd.a, 0, how)
				s.expect(check{desc: desc, signedZero: true}, interp.Bind1(p, prims.AxisParams{Axis: 0}, x.t, idx.t, upd.t), want)
			})
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
	}
}

// refScatterCombine combines the slices of upd into x at idx along axis,
// in row-major order of the updates, dropping out-of-range indices. Each
// step is rounded to x's dtype (int64 products wrap), as a kernel that
// combines one update at a time computes it, so the result is exact. Max
// and min take an update that is NaN or beyond the current value.
func refScatterCombine(x, idx, upd array, axis, how int) array {
	out := x.clone()
	n := int64(x.shape[axis])
	st := backend.ContiguousStrides(x.shape)
	ist := backend.ContiguousStrides(idx.shape)
	r := len(idx.shape)
	forEachIndex(upd.shape, func(k int, u []int) {
		i := idx.i[ravel(u[axis:axis+r], ist)]
		if i < 0 || i >= n {
			return
		}
		j := int(i) * st[axis]
		for d := range axis {
			j += u[d] * st[d]
		}
		for d := axis + 1; d < len(x.shape); d++ {
			j += u[d-1+r] * st[d]
		}
		if x.dt == backend.Int64 {
			a, w := out.i[j], upd.i[k]
			switch {
			case how == combineMul:
				out.i[j] = a * w
			case how == combineMax && w > a, how == combineMin && w < a:
				out.i[j] = w
			}
			return
		}
		a, w := out.f[j], upd.f[k]
		switch {
		case how == combineMul:
			out.f[j] = fround(x.dt, a*w)
		case w != w, how == combineMax && w > a, how == combineMin && w < a:
			out.f[j] = w
		}
	})
	return out
}
