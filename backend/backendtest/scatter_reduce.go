package backendtest

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
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
	return runScatterCases(p, copyValues, true, func(x, idx, upd array, axis int) (array, []float64) {
		return refScatterCombine(x, idx, upd, axis, how), nil
	})
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
