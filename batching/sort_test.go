package batching_test

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// sortCases: one key, a key with companions of other dtypes (the shape of
// an argsort), both directions, every axis, and an empty axis.
func sortCases() []ruleCase {
	var cs []ruleCase
	add := func(params prims.SortParams, ops ...operand) {
		cs = append(cs, ruleCase{prim: prims.Sort, params: params, ops: ops})
	}
	for _, dt := range []backend.DType{f64, i64, bln} {
		for axis := range 3 {
			for _, desc := range []bool{false, true} {
				add(prims.SortParams{Axis: axis, Descending: desc}, op(dt, 2, 3, 4))
			}
		}
	}
	add(prims.SortParams{Axis: 1}, op(f64, 3, 4), op(i64, 3, 4), op(bln, 3, 4))
	add(prims.SortParams{Axis: 0, Descending: true}, op(i64, 5), op(f64, 5))
	add(prims.SortParams{Axis: 1}, op(f64, 2, 0), op(i64, 2, 0))
	for _, p := range []*interp.Prim{prims.Cumprod, prims.Cumlogsumexp, prims.Cummax, prims.Cummin} {
		dts := []backend.DType{f64, i64, bln}
		switch p {
		case prims.Cumprod:
			dts = []backend.DType{f64, i64}
		case prims.Cumlogsumexp:
			dts = []backend.DType{f64}
		}
		for _, dt := range dts {
			for axis := range 3 {
				for _, rev := range []bool{false, true} {
					cs = append(cs, ruleCase{prim: p, params: prims.CumsumParams{Axis: axis, Reverse: rev}, ops: []operand{op(dt, 2, 3, 4)}})
				}
			}
			cs = append(cs, ruleCase{prim: p, params: prims.CumsumParams{Axis: 0}, ops: []operand{op(dt, 0, 2)}})
		}
	}
	for _, p := range []*interp.Prim{prims.Softmax, prims.LogSoftmax} {
		for axis := range 3 {
			cs = append(cs, ruleCase{prim: p, params: prims.AxisParams{Axis: axis}, ops: []operand{op(f64, 2, 3, 4)}})
		}
		cs = append(cs, ruleCase{prim: p, params: prims.AxisParams{Axis: 1}, ops: []operand{op(f64, 3, 0)}})
	}
	for _, p := range []*interp.Prim{prims.LayerNorm, prims.RMSNorm} {
		for k := 1; k <= 3; k++ {
			cs = append(cs, ruleCase{prim: p, params: prims.NormParams{Axes: k, Eps: 1e-3}, ops: []operand{op(f64, 2, 3, 4)}})
		}
		cs = append(cs, ruleCase{prim: p, params: prims.NormParams{Axes: 1, Eps: 1e-3}, ops: []operand{op(f64, 3, 0)}})
	}
	for _, dt := range []backend.DType{f64, i64} {
		for _, right := range []bool{false, true} {
			sp := prims.SearchParams{Right: right}
			cs = append(cs,
				ruleCase{prim: prims.SearchSorted, params: sp, ops: []operand{op(dt, 5), op(dt, 2, 3)}},
				ruleCase{prim: prims.SearchSorted, params: sp, ops: []operand{op(dt, 2, 5), op(dt, 2, 3)}},
				ruleCase{prim: prims.SearchSorted, params: sp, ops: []operand{op(dt, 4), op(dt)}},
				ruleCase{prim: prims.SearchSorted, params: sp, ops: []operand{op(dt, 0), op(dt, 3)}})
		}
	}
	return cs
}
