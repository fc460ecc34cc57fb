package batching_test

import "github.com/peel-ml/peel/prims"

// specialCases are the batching cases of polygamma, which has no
// Elementwise rule (its order is a parameter).
func specialCases() []ruleCase {
	var cs []ruleCase
	for n := range 3 {
		for _, s := range [][]int{{2, 3}, {}, {3, 0}} {
			cs = append(cs, ruleCase{prim: prims.Polygamma, params: prims.PolygammaParams{N: n}, ops: []operand{op(f64, s...).in(0.2, 5)}})
		}
	}
	return cs
}
