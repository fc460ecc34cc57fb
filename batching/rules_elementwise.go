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
			register(p, elementwise(p))
		}
	}
	for _, p := range []*interp.Prim{prims.Select, prims.ConvertElementType, prims.Threefry2x32} {
		register(p, elementwise(p))
	}
}

// elementwise returns the batching rule of an elementwise primitive p
// with any number of operands and results.
func elementwise(p *interp.Prim) Rule {
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
