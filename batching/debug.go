package batching

import (
	"fmt"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// debug_print and callback run once per lane, in lane order, each lane's
// operands cut out of the batch, and the lane named in the print
// ("[lane 2] ", the outer level's lane first). A callback's results are
// the lanes' results stacked along a new leading batch dimension; the
// token is not batched.

func init() {
	Register(prims.DebugPrint, func(size int, params any, args []*T, dims []int) ([]*T, []int) {
		p := params.(prims.DebugParams)
		tok := prims.Full(1, interp.Aval{DType: interp.Bool})
		for i := range size {
			lp := p
			lp.Lanes = laneLabel(i) + p.Lanes
			tok = interp.Bind1(prims.DebugPrint, lp, laneArgs(args, dims, i)...)
		}
		return []*T{tok}, []int{NotMapped}
	})
	Register(prims.Callback, func(size int, params any, args []*T, dims []int) ([]*T, []int) {
		p := params.(prims.CallbackParams)
		n := len(p.Out)
		lanes := make([][]*T, n)
		tok := prims.Full(1, interp.Aval{DType: interp.Bool})
		for i := range size {
			lp := p
			lp.Lanes = laneLabel(i) + p.Lanes
			outs := interp.Bind(prims.Callback, lp, laneArgs(args, dims, i)...)
			for k := range n {
				lanes[k] = append(lanes[k], interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: append([]int{1}, p.Out[k].Shape...)}, outs[k]))
			}
			tok = outs[n]
		}
		res := make([]*T, n+1)
		resDims := make([]int, n+1)
		for k := range n {
			shape := append([]int{size}, p.Out[k].Shape...)
			if size == 0 {
				res[k] = prims.Zeros(interp.Aval{Shape: shape, DType: p.Out[k].DType})
			} else {
				res[k] = interp.Bind1(prims.Concatenate, prims.AxisParams{Axis: 0}, lanes[k]...)
			}
		}
		res[n], resDims[n] = tok, NotMapped
		return res, resDims
	})
}

func laneLabel(i int) string { return fmt.Sprintf("[lane %d] ", i) }

// laneArgs returns lane i of the batched operands, the others as they
// are.
func laneArgs(args []*T, dims []int, i int) []*T {
	out := make([]*T, len(args))
	for k, a := range args {
		out[k] = a
		if dims[k] != NotMapped {
			out[k] = Lane(a, dims[k], i)
		}
	}
	return out
}
