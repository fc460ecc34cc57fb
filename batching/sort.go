package batching

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// sort: every operand is brought to one batch dimension (unbatched ones
// broadcast there), which is never the sorted axis, so each lane's lines
// are sorted on their own.

func init() {
	register(prims.Sort, sortRule)
}

func sortRule(size int, params any, args []*T, dims []int) ([]*T, []int) {
	sp := params.(prims.SortParams)
	phys, d := align(args, dims, size)
	sp.Axis = physAxis(sp.Axis, d)
	outs := interp.Bind(prims.Sort, sp, phys...)
	od := make([]int, len(outs))
	for k := range od {
		od[k] = d
	}
	return outs, od
}

// searchsorted: both operands get the batch dimension first (an unbatched
// one broadcast), which becomes a leading dimension of the sorted
// operand's rows, so each lane searches its own.
func init() {
	register(prims.SearchSorted, func(size int, params any, args []*T, dims []int) ([]*T, []int) {
		if dims[0] == NotMapped {
			// The values' batch dimension may stay anywhere after the
			// sorted operand's leading dimensions.
			l, d := args[0].Rank()-1, dims[1]
			if d < l {
				return one(interp.Bind1(prims.SearchSorted, params, args[0], MoveDim(args[1], d, l)), l)
			}
			return one(interp.Bind1(prims.SearchSorted, params, args[0], args[1]), d)
		}
		phys := AllToFront(args, dims, size)
		return one(interp.Bind1(prims.SearchSorted, params, phys[0], phys[1]), 0)
	})
}
