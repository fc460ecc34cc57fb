package batching

import (
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Collectives (prims' collective family) under a named level. A
// collective that names the level's axis is answered here, across the
// batch: a reduction over the batch dimension (psum, pmax, pmin), the
// batch dimension moved into the array (all_gather), a sum whose blocks
// become the lanes (psum_scatter), blocks exchanged between lanes
// (all_to_all), lanes gathered in the permutation's order (ppermute). One
// that names other axes acts lane by lane: it is applied below to the
// physical value, whose batch dimension is an ordinary dimension there
// (the axes are moved so the collective's own dimensions stay put).

func init() {
	RegisterNamed(prims.Psum, reduceCollective(prims.Psum, prims.ReduceSum))
	RegisterNamed(prims.Pmax, reduceCollective(prims.Pmax, prims.ReduceMax))
	RegisterNamed(prims.Pmin, reduceCollective(prims.Pmin, prims.ReduceMin))
	RegisterNamed(prims.AllGather, allGatherRule)
	RegisterNamed(prims.PsumScatter, psumScatterRule)
	RegisterNamed(prims.AllToAll, allToAllRule)
	RegisterNamed(prims.Ppermute, ppermuteRule)
}

// reduceCollective is the rule of psum, pmax and pmin: reduce over the
// batch when the level's axis is among the names, then over the other
// names below.
func reduceCollective(p, reduce *interp.Prim) NamedRule {
	return func(axis string, size int, params any, args []*T, dims []int) ([]*T, []int) {
		cp := params.(prims.CollectiveParams)
		x, d := args[0], dims[0]
		k := slices.Index(cp.Axes, axis)
		if axis == "" || k < 0 {
			return one(interp.Bind1(p, params, x), d)
		}
		r := interp.Bind1(reduce, prims.ReduceParams{Axes: []int{d}}, x)
		if len(cp.Axes) > 1 {
			rest := prims.CollectiveParams{
				Axes:  slices.Delete(slices.Clone(cp.Axes), k, k+1),
				Sizes: slices.Delete(slices.Clone(cp.Sizes), k, k+1),
			}
			r = prims.BindCollective(p, rest, r, x)
		}
		return one(r, NotMapped)
	}
}

func allGatherRule(axis string, size int, params any, args []*T, dims []int) ([]*T, []int) {
	gp := params.(prims.GatherParams)
	x, d := args[0], dims[0]
	if gp.Axis != axis {
		gp.Dim++
		return one(interp.Bind1(prims.AllGather, gp, ToFront(x, d, size)), 0)
	}
	// The lanes stacked at Dim are the batch dimension moved there.
	r := MoveDim(x, d, gp.Dim)
	if gp.Tiled {
		s := r.Shape()
		shape := append(append(slices.Clone(s[:gp.Dim]), s[gp.Dim]*s[gp.Dim+1]), s[gp.Dim+2:]...)
		r = interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: shape}, r)
	}
	return one(r, NotMapped)
}

func psumScatterRule(axis string, size int, params any, args []*T, dims []int) ([]*T, []int) {
	gp := params.(prims.GatherParams)
	x, d := args[0], dims[0]
	if gp.Axis != axis {
		gp.Dim++
		return one(interp.Bind1(prims.PsumScatter, gp, ToFront(x, d, size)), 0)
	}
	// The sum over the lanes; lane i's block i along Dim makes Dim the
	// new batch dimension.
	s := interp.Bind1(prims.ReduceSum, prims.ReduceParams{Axes: []int{d}}, x)
	if gp.Tiled {
		sh := s.Shape()
		shape := append(append(slices.Clone(sh[:gp.Dim]), size, sh[gp.Dim]/size), sh[gp.Dim+1:]...)
		s = interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: shape}, s)
	}
	return one(s, gp.Dim)
}

func allToAllRule(axis string, size int, params any, args []*T, dims []int) ([]*T, []int) {
	ap := params.(prims.AllToAllParams)
	x, d := args[0], dims[0]
	if ap.Axis != axis {
		ap.Split++
		ap.Concat++
		return one(interp.Bind1(prims.AllToAll, ap, ToFront(x, d, size)), 0)
	}
	// X = x with the lanes i in front: [i, L0, …]. Cut Split into (j, m):
	// lane j's result is block j of every lane i, concatenated along
	// Concat in i's order, so j becomes the batch dimension and i joins
	// Concat as its outer part.
	xf := ToFront(x, d, size)
	logical := xf.Shape()[1:]
	s, c, r := ap.Split, ap.Concat, len(logical)
	m := logical[s] / size
	split := append(append(slices.Clone(xf.Shape()[:1+s]), size, m), xf.Shape()[2+s:]...)
	y := interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: split}, xf)
	// Positions in y: i at 0, logical k < s at 1+k, j at 1+s, m at 2+s,
	// logical k > s at 2+k.
	pos := func(k int) int {
		switch {
		case k < s:
			return 1 + k
		case k == s:
			return 2 + s
		}
		return 2 + k
	}
	perm := []int{1 + s}
	for k := range r {
		if k == c {
			perm = append(perm, 0)
		}
		perm = append(perm, pos(k))
	}
	t := interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: perm}, y)
	out := slices.Clone(logical)
	out[s] = m
	out[c] *= size
	return one(interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: append([]int{size}, out...)}, t), 0)
}

func ppermuteRule(axis string, size int, params any, args []*T, dims []int) ([]*T, []int) {
	pp := params.(prims.PermuteParams)
	x, d := args[0], dims[0]
	if pp.Axis != axis {
		return one(interp.Bind1(prims.Ppermute, pp, x), d)
	}
	// Lane dst takes lane src's value: a gather of the lanes along the
	// batch dimension; lanes no pair ends at get zeros.
	src := make([]int64, size)
	keep := make([]float64, size)
	for _, pr := range pp.Perm {
		src[pr[1]], keep[pr[1]] = int64(pr[0]), 1
	}
	be := interp.DefaultBackend()
	idx := interp.NewConcrete(be, backend.Array{Buf: backend.FromOwnedHost(be, src), Shape: []int{size}})
	r := interp.Bind1(prims.Gather, prims.AxisParams{Axis: d}, x, idx)
	if len(pp.Perm) < size {
		mask := backend.HostConvert(keep, x.DType())
		m := interp.NewConcrete(be, backend.Array{Buf: backend.FromOwnedHost(be, mask), Shape: []int{size}})
		m = interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: r.Shape(), Dims: []int{d}}, m)
		r = bin(prims.Mul, r, m)
	}
	return one(r, d)
}
