package prims

import (
	"github.com/peel-ml/peel/interp"
)

// Linear is the affine map of a dense layer, x·w + b, for x [..., k], w
// [k, n] and b [n] (broadcast along x's leading axes): result [..., n],
// one float dtype. It is a composite, its Impl dot_general then add, so
// that the interpreters without a rule for it (vmap, staging: compiled
// programs keep seeing the product and the sum they fuse) decompose it;
// evaluated on a backend with a kernel for it, it is one call that adds
// b into the product's own buffer, where the decomposition wrote a
// second buffer as large as the product (a bias addition of a GPT's
// forward pass read the product back and wrote a fresh buffer, cold, for
// each of its layers). The kernel performs the decomposition's two
// operations, so the bits are the same. Its JVP rule binds Linear for
// the primal and dot_general and add for the tangent, so the backward
// pass is the decomposition's.
var Linear = interp.NewPrim("linear", interp.Pure, func(_ any, in []aval) []aval {
	checkArity(in, 3)
	x, w, b := in[0], in[1], in[2]
	checkClass(floats, x)
	if w.DType != x.DType || b.DType != x.DType {
		interp.Panicf("operands must have one dtype, got %v, %v and %v", x.DType, w.DType, b.DType)
	}
	r := len(x.Shape)
	if r == 0 || len(w.Shape) != 2 || len(b.Shape) != 1 || x.Shape[r-1] != w.Shape[0] || b.Shape[0] != w.Shape[1] {
		interp.Panicf("needs x [..., k], w [k, n] and b [n], got %v, %v and %v", x, w, b)
	}
	out := append(append([]int{}, x.Shape[:r-1]...), w.Shape[1])
	return one(aval{Shape: out, DType: x.DType})
})

// LinearDot is the dot_general of Linear's product for an x of rank r:
// x's last axis against w's first.
func LinearDot(r int) DotParams {
	return DotParams{LhsContract: []int{r - 1}, RhsContract: []int{0}}
}

// linearBias broadcasts b [n] along the leading axes of shape [..., n].
func linearBias(b *tensor, shape []int) *tensor {
	return broadcastInDim(b, shape, []int{len(shape) - 1})
}

func init() {
	Linear.Impl = func(_ any, args []*tensor) []*tensor {
		x, w, b := args[0], args[1], args[2]
		y := interp.Bind1(DotGeneral, LinearDot(x.Rank()), x, w)
		return []*tensor{add(y, linearBias(b, y.Shape()))}
	}
	defJVP(Linear, func(_ any, primals, tangents []*tensor, out *tensor) *tensor {
		x, w := primals[0], primals[1]
		dx, dw, db := tangents[0], tangents[1], tangents[2]
		var d *tensor
		if dx != nil {
			d = interp.Bind1(DotGeneral, LinearDot(x.Rank()), dx, w)
		}
		if dw != nil {
			d = addNil(d, interp.Bind1(DotGeneral, LinearDot(x.Rank()), x, dw))
		}
		if db != nil {
			d = addNil(d, linearBias(db, out.Shape()))
		}
		return d
	})
}
