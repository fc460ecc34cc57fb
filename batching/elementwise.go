package batching

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Elementwise primitives: every operand has the same logical shape, so
// aligning the batch dimensions (align) makes the physical operands equal
// in shape and the primitive applies unchanged. Every result carries the
// common batch dimension.

func init() {
	for _, p := range interp.Prims() {
		if p.Elementwise != nil && p.Kind == interp.Pure {
			register(p, ElementwiseRule(p))
		}
	}
	for _, p := range []*interp.Prim{prims.Where, prims.ConvertElementType} {
		register(p, ElementwiseRule(p))
	}
}

// ElementwiseRule returns the batching rule vmap uses for every
// elementwise primitive, for p with any number of operands and results:
// the operands are aligned on one batch dimension (the one the batched
// operands share, else 0; unbatched operands are broadcast there, not
// copied), p is bound on them unchanged, and every result carries that
// batch dimension. It is correct for any p that commutes with a batch
// dimension added to all its operands at one position, such as a
// user-defined op declared elementwise (customop.Elementwise). The
// operands must have one logical rank.
func ElementwiseRule(p *interp.Prim) Rule {
	return func(size int, params any, args []*T, dims []int) ([]*T, []int) {
		in, d := align(args, dims, size)
		outs := interp.Bind(p, params, in...)
		odims := make([]int, len(outs))
		for i := range odims {
			odims[i] = d
		}
		return outs, odims
	}
}
