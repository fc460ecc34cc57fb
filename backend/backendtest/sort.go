package backendtest

import (
	"fmt"
	"math"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// sort: a key of every dtype alone, and with companions of every dtype
// (one of them an iota, which makes the result the argsort), along every
// axis of the reduction shapes in every layout, both directions, with
// edge values (NaN, ±Inf, ±0) and many ties among integers and bools.

func runSort(s *suite) {
	p := prims.Sort
	for _, dt := range allDTypes {
		for _, shape := range reduceShapes {
			for axis := range shape {
				for _, desc := range []bool{false, true} {
					params := prims.SortParams{Axis: axis, Descending: desc}
					for _, l := range layoutsFor(shape) {
						x := s.operand(dt, shape, l, sumValues)
						desc := describe(p.Name, dt, shape, params, "x="+l.String())
						s.try(desc, func() {
							want := refSort(x.a, []array{x.a}, axis, params.Descending)
							s.expect(check{desc: desc, signedZero: true}, interp.Bind1(p, params, x.t), want[0])
						})
					}
				}
			}
		}
		// Companions of every dtype, one of them the positions.
		for _, desc := range []bool{false, true} {
			shape := []int{3, 90}
			params := prims.SortParams{Axis: 1, Descending: desc}
			key := s.operand(dt, shape, contiguous, sumValues)
			ops := []operand{key}
			for _, cd := range allDTypes {
				ops = append(ops, s.operand(cd, shape, transposedOr(shape), copyValues))
			}
			pos := newArray(backend.Int64, shape)
			for k := range pos.i {
				pos.i[k] = int64(k % shape[1])
			}
			if dt == backend.Float64 {
				// A line of 90 elements of all signs and magnitudes.
				for k := range key.a.f[:shape[1]] {
					key.a.f[k] = math.Ldexp(float64(k%7)-3, k%40-20)
				}
				key.t = s.tensor(key.a)
				ops[0] = key
			}
			ops = append(ops, operand{t: s.tensor(pos), a: pos})
			d := describe(p.Name, dt, shape, params, fmt.Sprintf("with %d companions", len(ops)-1))
			s.try(d, func() {
				ts, as := make([]*interp.Tensor, len(ops)), make([]array, len(ops))
				for k, o := range ops {
					ts[k], as[k] = o.t, o.a
				}
				want := refSort(key.a, as, 1, desc)
				got := interp.Bind(p, params, ts...)
				for k := range want {
					s.expect(check{desc: fmt.Sprintf("%s result %d", d, k), signedZero: true}, got[k], want[k])
				}
			})
		}
		big := s.operand(dt, []int{300, 250}, contiguous, sumValues)
		for axis := range 2 {
			params := prims.SortParams{Axis: axis, Descending: axis == 1}
			d := describe(p.Name, dt, big.a.shape, params)
			s.try(d, func() {
				want := refSort(big.a, []array{big.a}, axis, params.Descending)
				s.expect(check{desc: d, signedZero: true}, interp.Bind1(p, params, big.t), want[0])
			})
		}
	}
	x := s.operand(backend.Float64, []int{2, 3}, contiguous, finiteValues).t
	for _, axis := range []int{2, -1} {
		s.expectError(fmt.Sprintf("sort of [2,3] along axis %d", axis), func() {
			interp.Bind1(p, prims.SortParams{Axis: axis}, x)
		})
	}
	s.expectError("sort of a rank-0 tensor", func() {
		interp.Bind1(p, prims.SortParams{}, s.operand(backend.Float64, nil, contiguous, finiteValues).t)
	})
	s.expectError("sort with operands of different shapes", func() {
		interp.Bind(p, prims.SortParams{}, x, s.operand(backend.Float64, []int{3, 2}, contiguous, finiteValues).t)
	})
	s.expectError("sort without operands", func() { interp.Bind(p, prims.SortParams{}) })
}

// transposedOr returns the transposed layout when it fits shape.
func transposedOr(shape []int) layout {
	if slices.Contains(layoutsFor(shape), transposed) {
		return transposed
	}
	return contiguous
}

// refKey returns element k of a as a float64 sort key (bools as 0 and 1).
func refKey(a array, k int) float64 {
	switch a.dt {
	case backend.Bool:
		if a.b[k] {
			return 1
		}
		return 0
	case backend.Int64:
		return float64(a.i[k])
	}
	return a.f[k]
}

// refLess is numpy's order: ascending, NaN after every number.
func refLess(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return !math.IsNaN(a) && math.IsNaN(b)
	}
	return a < b
}

// refSort permutes every array of ops along axis by key's stable sorting
// permutation (insertion sort, which is stable by construction).
// Integer keys are compared exactly: the suite's integers are small or
// int64 edges, which float64 orders correctly.
func refSort(key array, ops []array, axis int, desc bool) []array {
	out := make([]array, len(ops))
	for k, o := range ops {
		out[k] = newArray(o.dt, o.shape)
	}
	before := func(a, b int) bool { // does position a go strictly before b?
		ka, kb := refKey(key, a), refKey(key, b)
		if key.dt == backend.Int64 {
			if desc {
				return key.i[a] > key.i[b]
			}
			return key.i[a] < key.i[b]
		}
		if desc {
			return refLess(kb, ka)
		}
		return refLess(ka, kb)
	}
	for _, line := range lineMap(key.shape, axis) {
		perm := slices.Clone(line)
		for i := 1; i < len(perm); i++ {
			for j := i; j > 0 && before(perm[j], perm[j-1]); j-- {
				perm[j], perm[j-1] = perm[j-1], perm[j]
			}
		}
		for k, o := range ops {
			for j, dst := range line {
				out[k].set(dst, o, perm[j])
			}
		}
	}
	return out
}
