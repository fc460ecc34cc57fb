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

// searchsorted: rows of every length (the empty one included) sorted in
// Sort's order with edge values, values in every layout that hit
// elements exactly, fall between them and beyond both ends, with zero,
// one and two leading row dimensions.
func runSearchSorted(s *suite) {
	p := prims.SearchSorted
	for _, dt := range allDTypes {
		if dt == backend.Bool {
			s.expectError("searchsorted of bool operands", func() {
				x := s.operand(dt, []int{3}, contiguous, finiteValues).t
				interp.Bind1(p, prims.SearchParams{}, x, x)
			})
			continue
		}
		cases := []struct{ sorted, values []int }{
			{[]int{0}, []int{4}}, {[]int{1}, []int{5}}, {[]int{5}, nil}, {[]int{17}, []int{3, 4}},
			{[]int{300}, []int{2, 50}}, {[]int{3, 10}, []int{3, 4}}, {[]int{2, 2, 6}, []int{2, 2, 3}}, {[]int{2, 0}, []int{2, 3}},
		}
		for _, c := range cases {
			raw := s.draw(dt, c.sorted, sumValues)
			srt := refSort(raw, []array{raw}, len(c.sorted)-1, false)[0]
			for _, right := range []bool{false, true} {
				params := prims.SearchParams{Right: right}
				for _, l := range layoutsFor(c.values) {
					v := s.operand(dt, c.values, l, sumValues)
					// Some values equal elements of their row.
					n := c.sorted[len(c.sorted)-1]
					if n > 0 && v.a.size() > 0 {
						per := v.a.size() / max(1, backend.ShapeSize(c.sorted[:len(c.sorted)-1]))
						for k := 0; k < v.a.size(); k += 3 {
							v.a.set(k, srt, (k/per)*n+k%n)
						}
						v = operand{t: s.tensor(v.a), a: v.a, l: contiguous}
					}
					d := describe(p.Name, dt, c.sorted, params, fmt.Sprintf("values %v %v", c.values, l))
					s.try(d, func() {
						s.expect(check{desc: d}, interp.Bind1(p, params, s.tensor(srt), v.t), refSearchSorted(srt, v.a, right))
					})
				}
			}
		}
	}
	f := s.operand(backend.Float64, []int{3}, contiguous, finiteValues).t
	s.expectError("searchsorted of a rank-0 sorted operand", func() {
		interp.Bind1(p, prims.SearchParams{}, s.operand(backend.Float64, nil, contiguous, finiteValues).t, f)
	})
	s.expectError("searchsorted of mixed dtypes", func() {
		interp.Bind1(p, prims.SearchParams{}, f, s.operand(backend.Int64, []int{3}, contiguous, finiteValues).t)
	})
	s.expectError("searchsorted with values not led by the rows", func() {
		interp.Bind1(p, prims.SearchParams{}, s.operand(backend.Float64, []int{2, 3}, contiguous, finiteValues).t, f)
	})
}

// refSearchSorted counts, for each value, the elements of its row that go
// before it.
func refSearchSorted(srt, v array, right bool) array {
	n := srt.shape[len(srt.shape)-1]
	out := newArray(backend.Int64, v.shape)
	rows := max(1, backend.ShapeSize(srt.shape[:len(srt.shape)-1]))
	per := v.size() / rows
	for k := range out.i {
		base := (k / per) * n
		c := 0
		for j := base; j < base+n; j++ {
			var before bool
			if srt.dt == backend.Int64 {
				before = srt.i[j] < v.i[k] || (right && srt.i[j] == v.i[k])
			} else {
				before = refLess(srt.f[j], v.f[k]) || (right && !refLess(v.f[k], srt.f[j]))
			}
			if before {
				c++
			}
		}
		out.i[k] = int64(c)
	}
	return out
}
