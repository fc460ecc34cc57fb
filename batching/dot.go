package batching

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// dot_general folds the vmap batch into the contraction without moving
// data: when both operands are batched their batch dimensions become a new
// leading pair of dot batch dimensions; when one is, its batch dimension
// is one more free dimension of that operand.

func init() { register(prims.DotGeneral, dotRule) }

func dotRule(_ int, params any, args []*T, dims []int) ([]*T, []int) {
	dp := params.(prims.DotParams)
	ld, rd := dims[0], dims[1]
	np := dp
	if ld != NotMapped {
		np.LhsContract, np.LhsBatch = physAxes(dp.LhsContract, ld), physAxes(dp.LhsBatch, ld)
	}
	if rd != NotMapped {
		np.RhsContract, np.RhsBatch = physAxes(dp.RhsContract, rd), physAxes(dp.RhsBatch, rd)
	}
	var od int
	switch {
	case ld != NotMapped && rd != NotMapped:
		np.LhsBatch = insertAt(np.LhsBatch, 0, ld)
		np.RhsBatch = insertAt(np.RhsBatch, 0, rd)
		od = 0
	case ld != NotMapped:
		od = len(dp.LhsBatch) + freeBefore(ld, np.LhsContract, np.LhsBatch)
	default:
		lhsFree := args[0].Rank() - len(dp.LhsContract) - len(dp.LhsBatch)
		od = len(dp.LhsBatch) + lhsFree + freeBefore(rd, np.RhsContract, np.RhsBatch)
	}
	return one(interp.Bind1(prims.DotGeneral, np, args[0], args[1]), od)
}

// freeBefore counts the free dimensions (in neither list) below d.
func freeBefore(d int, contract, batch []int) int {
	n := d
	for _, l := range [][]int{contract, batch} {
		for _, x := range l {
			if x < d {
				n--
			}
		}
	}
	return n
}
