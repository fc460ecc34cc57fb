package functionalize

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// ScatterView returns parent with the view (prim, params) of it replaced
// by child: the inverse of each view primitive, out of place. It panics
// with *interp.Error for a write into a broadcast view, which has no
// inverse (several elements share one location), as in eager mode.
func ScatterView(op, view *interp.Prim, params any, parent, child *T) *T {
	switch view {
	case prims.Slice:
		return sliceScatter(params.(prims.SliceParams), parent, child)
	case prims.Transpose:
		perm := params.(prims.TransposeParams).Perm
		inv := make([]int, len(perm))
		for i, p := range perm {
			inv[p] = i
		}
		return interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: inv}, child)
	case prims.Reshape:
		return interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: parent.Shape()}, child)
	case prims.BroadcastInDim:
		panic(&interp.Error{Prim: op.Name, Msg: "in-place write into a broadcast view: several of its elements are one element of the base, so the write has no single meaning (clone it first)", Operands: []string{child.TypeString()}})
	}
	panic(&interp.Error{Prim: op.Name, Msg: "in-place write through view primitive " + view.Name + ", which functionalize cannot invert"})
}

// sliceScatter writes child into the strided slice of parent. A slice
// of unit strides is a window, written with one dynamic_update_slice (a
// copy of parent with child in place, as jax.lax does); a strided one
// pads child (and a mask of trues) back to parent's shape, then selects.
func sliceScatter(sp prims.SliceParams, parent, child *T) *T {
	r := parent.Rank()
	if unitStrides(sp.Stride) {
		args := []*T{parent, child}
		for k := range r {
			args = append(args, prims.Full(float64(sp.Start[k]), interp.Aval{Shape: []int{}, DType: backend.Int64}))
		}
		return interp.Bind1(prims.DynamicUpdateSlice, nil, args...)
	}
	pp := prims.PadParams{Low: make([]int, r), High: make([]int, r), Interior: make([]int, r)}
	for k := 0; k < r; k++ {
		n := child.Shape()[k]
		pp.Low[k] = sp.Start[k]
		pp.Interior[k] = sp.Stride[k] - 1
		used := 0
		if n > 0 {
			used = sp.Start[k] + (n-1)*sp.Stride[k] + 1
		} else {
			used = sp.Start[k]
		}
		pp.High[k] = parent.Shape()[k] - used
	}
	scalar := func(v float64, d backend.DType) *T { return prims.Full(v, interp.Aval{Shape: []int{}, DType: d}) }
	padded := interp.Bind1(prims.Pad, pp, child, scalar(0, child.DType()))
	trues := prims.Full(1, interp.Aval{Shape: child.Shape(), DType: backend.Bool})
	mask := interp.Bind1(prims.Pad, pp, trues, scalar(0, backend.Bool))
	return interp.Bind1(prims.Where, nil, mask, padded, parent)
}

// unitStrides reports whether every stride of a slice is 1 (nil strides
// are).
func unitStrides(st []int) bool {
	for _, s := range st {
		if s != 1 {
			return false
		}
	}
	return true
}
