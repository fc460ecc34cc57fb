package batching

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// The linear-algebra primitives (cholesky, triangular_solve, lu, qr,
// eigh, svd) act on the last two dimensions and are batched over every
// leading one, so the rule moves each operand's vmap dimension to the
// front (broadcasting an unbatched operand of triangular_solve there) and
// binds the primitive once: every result is batched at dimension 0. The
// composites pinv and det have the rule too, so that under Vmap they
// stay one primitive and keep their own JVP rules.

func init() {
	for _, p := range []*interp.Prim{prims.Cholesky, prims.TriangularSolve, prims.LU, prims.QR, prims.Eigh, prims.SVD, prims.Pinv, prims.Det} {
		register(p, leadingBatchRule(p))
	}
}

func leadingBatchRule(p *interp.Prim) Rule {
	return func(size int, params any, args []*T, dims []int) ([]*T, []int) {
		in := make([]*T, len(args))
		for i, a := range args {
			in[i] = ToFront(a, dims[i], size)
		}
		outs := interp.Bind(p, params, in...)
		od := make([]int, len(outs))
		return outs, od
	}
}
