package backendtest

import (
	"fmt"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// viewShapes are the operand shapes of the view primitives.
var viewShapes = [][]int{{}, {0}, {1}, {5}, {3, 4}, {1, 4}, {2, 0, 3}, {2, 3, 4}, {2, 1, 3, 2}}

// runView checks view primitive p with the parameters paramsFor gives for
// each operand shape: through every operand layout the view must read the
// right elements of the backend's buffer (by ToHost and as a kernel
// operand), and a copy_ into it must change exactly the aliased elements
// of the base (or be refused with *interp.Error when the view is a
// broadcast; a reshape that had to copy must leave the base alone).
func runView(p *interp.Prim, paramsFor func(shape []int) []any, bad func(s *suite)) func(*suite) {
	return func(s *suite) {
		for _, dt := range allDTypes {
			for _, shape := range viewShapes {
				for _, params := range paramsFor(shape) {
					for _, l := range layoutsFor(shape) {
						s.viewCase(p, params, s.operand(dt, shape, l, copyValues))
					}
				}
			}
		}
		bad(s)
	}
}

func (s *suite) viewCase(p *interp.Prim, params any, x operand) {
	desc := describe(p.Name, x.a.dt, x.a.shape, interp.FormatParams(params), "x="+x.l.String())
	s.try(desc, func() {
		v := interp.Bind1(p, params, x.t)
		shape, m := viewMap(p, params, x.a.shape)
		want := x.a.take(shape, m, array{})
		s.expect(check{desc: desc, signedZero: true}, v, want)
		if s.b.Has(prims.Copy.Op) {
			s.expect(check{desc: desc + ", as a kernel operand (copy)", signedZero: true}, interp.Bind1(prims.Copy, nil, v), want)
		}
		// Write through the view.
		alias := interp.ViewInfo(v) != nil
		mc := make([]int, len(m))
		for k, j := range m {
			mc[k] = x.m[j]
		}
		src := s.draw(x.a.dt, shape, copyValues)
		st := s.tensor(src)
		if alias && hasDuplicates(mc) {
			s.expectError(desc+", copy_ into a broadcast view", func() { interp.Bind1(prims.CopyInPlace, nil, v, st) })
			return
		}
		if !s.b.Has(prims.Copy.Op) {
			return // copy_ runs the copy kernel
		}
		wdesc := desc + ", after copy_ into the view"
		if got := interp.Bind1(prims.CopyInPlace, nil, v, st); got != v {
			s.failf("%s: copy_ did not return its destination", wdesc)
		}
		s.expect(check{desc: wdesc + ", read through the view", signedZero: true}, v, src)
		base := x.baseA.clone()
		if alias {
			for k, j := range mc {
				base.set(j, src, k)
			}
		} else if interp.BaseOf(v) == x.base {
			s.failf("%s: the view copied its operand but records it as its base", wdesc)
		}
		s.expect(check{desc: wdesc + ", read through the base", signedZero: true}, x.base, base)
		s.expect(check{desc: wdesc + ", read through the operand", signedZero: true}, x.t, base.take(x.a.shape, x.m, array{}))
	})
}

func transposeParams(shape []int) []any {
	var out []any
	for _, perm := range perms(len(shape)) {
		out = append(out, prims.TransposeParams{Perm: perm})
	}
	return out
}

// perms returns every permutation of rank ≤ 3 dimensions, and a selection
// for higher ranks.
func perms(r int) [][]int {
	if r > 3 {
		rev := seq(r)
		slices.Reverse(rev)
		return [][]int{seq(r), rev, {1, 3, 0, 2}, {2, 0, 3, 1}, {0, 2, 1, 3}}
	}
	if r == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range perms(r - 1) {
		for at := 0; at <= len(p); at++ {
			q := slices.Insert(slices.Clone(p), at, r-1)
			out = append(out, q)
		}
	}
	return out
}

func sliceParams(shape []int) []any {
	type pat func(d int) (start, limit, stride int)
	pats := []pat{
		func(d int) (int, int, int) { return 0, d, 1 },                           // everything
		func(d int) (int, int, int) { return 0, d, 2 },                           // every other element
		func(d int) (int, int, int) { return min(1, d), d, 3 },                   // offset and stride 3
		func(d int) (int, int, int) { return d / 2, d / 2, 1 },                   // empty
		func(d int) (int, int, int) { return max(d-1, 0), d, 1 },                 // the last element
		func(d int) (int, int, int) { return d / 3, d - d/3, 2 },                 // the middle
		func(d int) (int, int, int) { return min(1, d), max(d-1, min(1, d)), 5 }, // a stride longer than the slice
	}
	var out []any
	for j := range pats {
		sp := prims.SliceParams{Start: make([]int, len(shape)), Limit: make([]int, len(shape)), Stride: make([]int, len(shape))}
		for k, d := range shape {
			sp.Start[k], sp.Limit[k], sp.Stride[k] = pats[(j+k)%len(pats)](d)
		}
		out = append(out, sp)
		if len(shape) == 0 {
			break
		}
	}
	return out
}

func reshapeParams(shape []int) []any {
	n := backend.ShapeSize(shape)
	targets := [][]int{{n}, append([]int{1}, shape...), append(slices.Clone(shape), 1)}
	rev := slices.Clone(shape)
	slices.Reverse(rev)
	targets = append(targets, rev)
	if len(shape) >= 2 {
		targets = append(targets, append([]int{shape[0] * shape[1]}, shape[2:]...))
	}
	if n == 1 {
		targets = append(targets, []int{}, []int{1, 1, 1})
	}
	if n == 0 {
		targets = append(targets, []int{0, 5}, []int{3, 0})
	}
	if n%2 == 0 && n > 0 {
		targets = append(targets, []int{2, n / 2}, []int{n / 2, 1, 2})
	}
	var out []any
	for _, t := range targets {
		out = append(out, prims.ReshapeParams{Shape: t})
	}
	return out
}

func broadcastParams(shape []int) []any {
	r := len(shape)
	out := []any{
		prims.BroadcastParams{Shape: slices.Clone(shape), Dims: seq(r)},               // identity
		prims.BroadcastParams{Shape: append([]int{3}, shape...), Dims: seqFrom(1, r)}, // a new leading dimension
		prims.BroadcastParams{Shape: append(slices.Clone(shape), 2), Dims: seq(r)},    // a new trailing dimension
		prims.BroadcastParams{Shape: append([]int{1}, shape...), Dims: seqFrom(1, r)}, // a new dimension of size 1
		prims.BroadcastParams{Shape: append([]int{0}, shape...), Dims: seqFrom(1, r)}, // a new dimension of size 0
	}
	if r >= 1 {
		mid := append([]int{shape[0], 2}, shape[1:]...)
		dims := append([]int{0}, seqFrom(2, r-1)...)
		out = append(out, prims.BroadcastParams{Shape: mid, Dims: dims}) // a new middle dimension
	}
	if slices.Contains(shape, 1) {
		grown := slices.Clone(shape)
		for k, d := range grown {
			if d == 1 {
				grown[k] = 3
			}
		}
		out = append(out, prims.BroadcastParams{Shape: grown, Dims: seq(r)}) // size-1 dimensions stretched
	}
	return out
}

// seqFrom returns lo, lo+1, …, lo+n−1.
func seqFrom(lo, n int) []int {
	out := make([]int, n)
	for k := range out {
		out[k] = lo + k
	}
	return out
}

func badTranspose(s *suite) {
	x := s.operand(backend.Float64, []int{2, 3}, contiguous, finiteValues).t
	for _, perm := range [][]int{{0}, {0, 0}, {0, 2}, {1, 0, 2}, {-1, 0}} {
		s.expectError(fmt.Sprintf("transpose of [2,3] with perm %v", perm), func() {
			interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: perm}, x)
		})
	}
}

func badSlice(s *suite) {
	x := s.operand(backend.Float64, []int{4}, contiguous, finiteValues).t
	for _, sp := range []prims.SliceParams{
		{Start: []int{0}, Limit: []int{5}, Stride: []int{1}},
		{Start: []int{-1}, Limit: []int{2}, Stride: []int{1}},
		{Start: []int{3}, Limit: []int{2}, Stride: []int{1}},
		{Start: []int{0}, Limit: []int{4}, Stride: []int{0}},
		{Start: []int{0, 0}, Limit: []int{4, 1}, Stride: []int{1, 1}},
		{Start: []int{0}, Limit: []int{4}, Stride: nil},
	} {
		s.expectError(fmt.Sprintf("slice of [4] with %v", sp), func() { interp.Bind1(prims.Slice, sp, x) })
	}
}

func badReshape(s *suite) {
	x := s.operand(backend.Float64, []int{2, 3}, contiguous, finiteValues).t
	for _, shape := range [][]int{{5}, {7}, {}, {-2, -3}, {2, 3, 0}} {
		s.expectError(fmt.Sprintf("reshape of [2,3] to %v", shape), func() {
			interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: shape}, x)
		})
	}
}

func badBroadcast(s *suite) {
	x := s.operand(backend.Float64, []int{2, 3}, contiguous, finiteValues).t
	for _, bp := range []prims.BroadcastParams{
		{Shape: []int{2, 4}, Dims: []int{0, 1}},
		{Shape: []int{3, 2}, Dims: []int{1, 0}},
		{Shape: []int{2, 3}, Dims: []int{0}},
		{Shape: []int{2, 3}, Dims: []int{0, 2}},
		{Shape: []int{2, -3}, Dims: []int{0, 1}},
		{Shape: []int{3}, Dims: []int{0, 1}},
	} {
		s.expectError(fmt.Sprintf("broadcast_in_dim of [2,3] with %v", bp), func() {
			interp.Bind1(prims.BroadcastInDim, bp, x)
		})
	}
}
