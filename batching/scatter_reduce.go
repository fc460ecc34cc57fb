package batching

import "github.com/peel-ml/peel/prims"

// scatter_mul, scatter_max and scatter_min batch as scatter_add does: the
// batch dimension is merged into the indexed axis with per-lane offsets.
func init() {
	register(prims.ScatterMul, scatterRule(prims.ScatterMul))
	register(prims.ScatterMax, scatterRule(prims.ScatterMax))
	register(prims.ScatterMin, scatterRule(prims.ScatterMin))
}
