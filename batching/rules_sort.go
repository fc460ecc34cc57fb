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
