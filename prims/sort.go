package prims

import (
	"fmt"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

// SortParams are the parameters of sort: the axis sorted along and the
// direction (ascending unless Descending, so the zero value sorts axis 0
// ascending). The sort is always stable.
type SortParams struct {
	Axis       int
	Descending bool
}

func (p SortParams) String() string {
	return fmt.Sprintf("axis=%d descending=%v", p.Axis, p.Descending)
}

// Sort sorts its operands along SortParams.Axis by the first operand, the
// key (lax.sort with num_keys=1): every operand has the key's shape (any
// dtype) and result k is operand k permuted along the axis by the key's
// stable sorting permutation, so sorting (x, iota) gives the sorted x and
// its argsort. The order is ascending with NaN after every number (numpy),
// false before true, -0 equal to +0; descending reverses the comparison
// (NaN first) while ties keep their original order. Its derivative goes
// through the permutation: the tangent of result k is operand k's tangent
// gathered with the sorting indices.
var Sort = graphio.Params[SortParams](interp.NewPrim("sort", interp.Pure, func(params any, in []aval) []aval {
	if len(in) == 0 {
		interp.Panicf("needs at least one operand (the key)")
	}
	checkAxis(params.(SortParams).Axis, len(in[0].Shape))
	out := make([]aval, len(in))
	for k, a := range in {
		if !interp.ShapeEqual(a.Shape, in[0].Shape) {
			interp.Panicf("operand %d has shape %v, the key %v", k, a.Shape, in[0].Shape)
		}
		if !a.DType.IsValid() {
			interp.Panicf("operand %d has an invalid dtype", k)
		}
		out[k] = a
	}
	return out
}))

func init() {
	Sort.JVP = sortJVP
}

// sortJVP sorts an iota along with the operands and gathers each float
// operand's tangent with the permutation it returns.
func sortJVP(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
	if allNil(tangents) {
		outs := interp.Bind(Sort, params, primals...)
		return outs, make([]*tensor, len(outs))
	}
	axis := params.(SortParams).Axis
	shape := primals[0].Shape()
	iota := interp.Bind1(Iota, IotaParams{DType: backend.Int64, Shape: shape, Dim: axis})
	outs := interp.Bind(Sort, params, append(append([]*tensor{}, primals...), iota)...)
	perm := outs[len(primals)]
	outs = outs[:len(primals)]
	ts := make([]*tensor, len(outs))
	for k, t := range tangents {
		if t != nil && outs[k].DType().IsFloat() {
			ts[k] = TakeAlongAxis(t, perm, axis)
		}
	}
	return outs, ts
}

// TakeAlongAxis returns x's elements at the i64 indices idx along axis,
// where idx has x's shape except along axis (numpy's take_along_axis
// without broadcasting): out[…, j, …] = x[…, idx[…, j, …], …]. It is one
// gather of x flattened, at the linear positions (p·n + idx)·S + s, so it
// is linear in x (its transpose is a scatter-add) and batches as gather
// does. Indices must lie in [0, n); out-of-range ones are clamped by
// gather into the flattened operand.
func TakeAlongAxis(x, idx *tensor, axis int) *tensor {
	xs, is := x.Shape(), idx.Shape()
	if len(xs) != len(is) {
		interp.Panicf("take along axis: indices %v and operand %v differ in rank", is, xs)
	}
	p, s := 1, 1
	for k := range xs {
		switch {
		case k < axis:
			p *= xs[k]
		case k > axis:
			s *= xs[k]
		}
		if k != axis && xs[k] != is[k] {
			interp.Panicf("take along axis: indices %v do not fit operand %v", is, xs)
		}
	}
	if backend.ShapeSize(xs) == 0 && backend.ShapeSize(is) == 0 {
		// Nothing to take, and p·n·s may have wrapped (an empty
		// shape's other dimensions need not fit in an int together).
		// The empty x, reshaped, keeps the result linear in x.
		return reshape(x, is)
	}
	n, m := xs[axis], is[axis]
	i3 := reshape(idx, []int{p, m, s})
	sh := []int{p, m, s}
	pi := interp.Bind1(Iota, IotaParams{DType: backend.Int64, Shape: sh, Dim: 0})
	si := interp.Bind1(Iota, IotaParams{DType: backend.Int64, Shape: sh, Dim: 2})
	lin := mul(pi, full(float64(n), interp.AvalOf(pi)))
	lin = add(lin, i3)
	lin = mul(lin, full(float64(s), interp.AvalOf(pi)))
	lin = add(lin, si)
	flat := reshape(x, []int{p * n * s})
	g := interp.Bind1(Gather, AxisParams{Axis: 0}, flat, lin)
	return reshape(g, is)
}

// SearchParams are the parameters of searchsorted: whether a value equal
// to elements goes after them (numpy's side='right').
type SearchParams struct{ Right bool }

func (p SearchParams) String() string { return fmt.Sprintf("right=%v", p.Right) }

// SearchSorted finds, for each element of operand 1 (the values), its
// insertion index (i64) in operand 0 (sorted along its last axis, in
// Sort's order: NaN last, -0 = +0): the number of elements before which
// it goes, those less than it, or with SearchParams.Right those less
// than or equal. Operand 0 has shape L… + [n], operand 1 shape L… + R…:
// its leading dimensions index rows of operand 0 (none for a 1-d sorted
// operand), and the result has operand 1's shape. The operands have one
// numeric dtype. It has no derivative.
var SearchSorted = graphio.Params[SearchParams](interp.NewPrim("searchsorted", interp.Pure, func(_ any, in []aval) []aval {
	checkArity(in, 2)
	s, v := in[0], in[1]
	checkClass(numeric, s)
	if s.DType != v.DType {
		interp.Panicf("sorted operand %v and values %v have different dtypes", s.DType, v.DType)
	}
	l := len(s.Shape) - 1
	if l < 0 {
		interp.Panicf("sorted operand has rank 0")
	}
	if len(v.Shape) < l || !interp.ShapeEqual(v.Shape[:l], s.Shape[:l]) {
		interp.Panicf("values %v do not start with the sorted operand's leading dimensions %v", v.Shape, s.Shape[:l])
	}
	return one(aval{Shape: v.Shape, DType: backend.Int64})
}))

func init() { SearchSorted.NonDifferentiable = true }
