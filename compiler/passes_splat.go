package compiler

import (
	"math"
	"runtime"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// SplatConstants replaces each constant of two or more elements, all
// equal bit for bit, with a broadcast of a one-element constant: a
// broadcast view of one element (every stride 0) of any size, and a
// constant of at most MaxFoldElements elements whose elements are equal. Such
// constants are what tracing leaves of a Go scalar meeting a traced
// value (x·0.1 captures 0.1 broadcast to x's shape, evaluated eagerly
// because its input is concrete) and of the ones and zeros in derivative
// rules; as broadcasts, fused code reads one value instead of a whole
// array, and the program holds no copy of it. Constants written in
// place and constants that are outputs stay as they are (a broadcast is
// a view, and neither may be one). It runs before FoldConstants, which
// leaves broadcasts of constants unfolded for this reason.
func SplatConstants(g *interp.Graph) *interp.Graph {
	mut := mutated(g)
	isOut := make(map[*interp.Var]bool, len(g.Out))
	for _, v := range g.Out {
		isOut[v] = true
	}
	var out *interp.Graph
	var eqns []*interp.Eqn
	next := 0
	for i, c := range g.Consts {
		if c.Aval.Size() < 2 || mut[c] || isOut[c] {
			continue
		}
		s := splatValue(g.ConstVals[i])
		if s == nil {
			continue
		}
		if out == nil {
			out = &interp.Graph{In: g.In, Out: g.Out}
			next = g.IDBound()
		}
		k := &interp.Var{ID: next, Aval: interp.Aval{Shape: []int{}, DType: c.Aval.DType}}
		next++
		out.Consts = append(out.Consts, k)
		out.ConstVals = append(out.ConstVals, s)
		shape := append([]int{}, c.Aval.Shape...)
		eqns = append(eqns, &interp.Eqn{Prim: prims.BroadcastInDim, Params: prims.BroadcastParams{Shape: shape, Dims: []int{}}, In: []*interp.Var{k}, Out: []*interp.Var{c}})
	}
	if out == nil {
		return g
	}
	splat := make(map[*interp.Var]bool, len(eqns))
	for _, e := range eqns {
		splat[e.Out[0]] = true
	}
	for i, c := range g.Consts {
		if !splat[c] {
			out.Consts = append(out.Consts, c)
			out.ConstVals = append(out.ConstVals, g.ConstVals[i])
		}
	}
	out.Eqns = append(eqns, g.Eqns...)
	return out
}

// splatValue returns a 0-d constant holding t's one value when all of
// t's elements are equal bit for bit, else nil.
func splatValue(t *interp.Tensor) *interp.Tensor {
	if t == nil || !t.IsConcrete() {
		return nil
	}
	arr, be := interp.ArrayOf(t)
	if len(arr.Strides) == len(arr.Shape) && len(arr.Shape) > 0 {
		// A broadcast view (every stride 0, as eager broadcasting of a
		// scalar makes): its one element, whatever its size.
		zero := true
		for _, s := range arr.Strides {
			zero = zero && s == 0
		}
		if zero {
			one := be.ToHost(backend.Array{Buf: arr.Buf, Shape: []int{}, Offset: arr.Offset})
			runtime.KeepAlive(t)
			return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(one), Shape: []int{}})
		}
	}
	if t.Size() > MaxFoldElements {
		// Reading every element of a large constant would cost compile
		// time for a rare case.
		return nil
	}
	var one any
	switch h := be.ToHost(arr).(type) {
	case []float64:
		if !allEqual(h, func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }) {
			return nil
		}
		one = h[:1]
	case []float32:
		if !allEqual(h, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
			return nil
		}
		one = h[:1]
	case []int64:
		if !allEqual(h, func(a, b int64) bool { return a == b }) {
			return nil
		}
		one = h[:1]
	case []bool:
		if !allEqual(h, func(a, b bool) bool { return a == b }) {
			return nil
		}
		one = h[:1]
	default:
		return nil
	}
	return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(one), Shape: []int{}})
}

// allEqual reports whether s is non-empty and all its elements equal
// s[0] under eq.
func allEqual[T any](s []T, eq func(a, b T) bool) bool {
	if len(s) == 0 {
		return false
	}
	for _, v := range s[1:] {
		if !eq(v, s[0]) {
			return false
		}
	}
	return true
}
