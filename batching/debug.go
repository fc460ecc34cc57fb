package batching

import (
	"fmt"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// debug_print and callback run once per lane, in lane order, each lane's
// operands cut out of the batch (runLanes), and the lane named in the
// print ("[lane 2] ", the outer level's lane first). A callback's results
// are the lanes' results stacked along a new leading batch dimension;
// the token is not batched.

func init() {
	Register(prims.DebugPrint, func(size int, params any, args []*T, dims []int) ([]*T, []int) {
		p := params.(prims.DebugParams)
		runLanes(prims.DebugPrint, size, func(i int) any {
			lp := p
			lp.Lanes = laneLabel(i) + p.Lanes
			return lp
		}, args, dims)
		return []*T{prims.Full(1, interp.Aval{DType: interp.Bool})}, []int{NotMapped}
	})
	Register(prims.Callback, func(size int, params any, args []*T, dims []int) ([]*T, []int) {
		p := params.(prims.CallbackParams)
		lanes := runLanes(prims.Callback, size, func(i int) any {
			lp := p
			lp.Lanes = laneLabel(i) + p.Lanes
			return lp
		}, args, dims)
		n := len(p.Out)
		res := make([]*T, n+1)
		resDims := make([]int, n+1)
		for k := range n {
			if size == 0 {
				res[k] = prims.Zeros(interp.Aval{Shape: append([]int{0}, p.Out[k].Shape...), DType: p.Out[k].DType})
			} else {
				res[k] = stackLanes(lanes, k)
			}
		}
		res[n], resDims[n] = prims.Full(1, interp.Aval{DType: interp.Bool}), NotMapped
		return res, resDims
	})
}

func laneLabel(i int) string { return fmt.Sprintf("[lane %d] ", i) }
