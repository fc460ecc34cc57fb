package prims_test

import (
	"github.com/peel-ml/peel/interp"
	"math/rand/v2"

	"github.com/peel-ml/peel/prims"
)

// scatterReduceJVPCases are the JVP cases of scatter_mul, scatter_max and
// scatter_min (checked against finite differences, second derivatives
// included, with the other rules' cases): repeated and out-of-range
// indices, and for scatter_mul one, two and three zero factors at a
// position.
func scatterReduceJVPCases(r *rand.Rand) []jvpCase {
	ax := func(a int) prims.AxisParams { return prims.AxisParams{Axis: a} }
	var cs []jvpCase
	for _, p := range []*interp.Prim{prims.ScatterMul, prims.ScatterMax, prims.ScatterMin} {
		cs = append(cs,
			jvpCase{prim: p, params: ax(0), args: []*T{uniform(r, -2, 2, 5), i64([]int64{3, 0, 3, 7, -1}, 5), uniform(r, -2, 2, 5)}},
			jvpCase{prim: p, params: ax(1), args: []*T{uniform(r, -2, 2, 3, 4), i64([]int64{1, 9, 1, 2}, 2, 2), uniform(r, -2, 2, 3, 2, 2)}},
			jvpCase{prim: p, params: ax(0), args: []*T{uniform(r, -2, 2, 0), i64([]int64{0}, 1), uniform(r, -2, 2, 1)}},
		)
	}
	cs = append(cs,
		// Position 0 has factors 0 (operand) and 0, 1.5: two zeros;
		// position 1 has 2 and 0: one zero; position 2 has 0, 0, 0 and
		// -1: three.
		jvpCase{name: "zeros", prim: prims.ScatterMul, params: ax(0), args: []*T{f64([]float64{0, 2, 0}, 3), i64([]int64{0, 0, 1, 2, 2, 2}, 6), f64([]float64{0, 1.5, 0, 0, 0, -1}, 6)}},
	)
	return cs
}
