package batching_test

import (
	"github.com/peel-ml/peel/prims"
)

// linalgCases are the linear-algebra primitives' cases: each operand a
// stack of matrices (the cholesky operands are positive definite only
// sometimes; the others give NaN in every lane alike).
func linalgCases() []ruleCase {
	var cs []ruleCase
	for _, s := range [][]int{{1, 1}, {3, 3}, {2, 3, 3}} {
		cs = append(cs,
			ruleCase{prim: prims.Cholesky, ops: []operand{op(f64, s...).in(0.5, 2)}},
			ruleCase{prim: prims.LU, ops: []operand{op(f64, s...)}},
			ruleCase{prim: prims.Eigh, ops: []operand{op(f64, s...)}},
			ruleCase{prim: prims.Det, ops: []operand{op(f64, s...)}},
		)
	}
	for _, s := range [][]int{{3, 2}, {2, 4}, {2, 3, 3}, {0, 2}} {
		cs = append(cs,
			ruleCase{prim: prims.QR, ops: []operand{op(f64, s...)}},
			ruleCase{prim: prims.SVD, params: prims.SVDParams{ComputeUV: true}, ops: []operand{op(f64, s...)}},
			ruleCase{prim: prims.SVD, params: prims.SVDParams{}, ops: []operand{op(f64, s...)}},
			ruleCase{prim: prims.Pinv, params: prims.PinvParams{RTol: 1e-12}, ops: []operand{op(f64, s...)}},
		)
	}
	for _, p := range []prims.TriangularSolveParams{{Lower: true, LeftSide: true}, {TransposeA: true, UnitDiagonal: true}} {
		b := op(f64, 3, 2)
		if !p.LeftSide {
			b = op(f64, 2, 3)
		}
		cs = append(cs, ruleCase{prim: prims.TriangularSolve, params: p, ops: []operand{op(f64, 3, 3).in(1, 2), b}})
	}
	return cs
}
