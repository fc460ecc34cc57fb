package prims

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// The random family: the Threefry-2x32 block cipher under peel's PRNG.

// Threefry2x32 is the Threefry-2x32 block cipher (20 rounds), elementwise:
// (k0, k1, x0, x1) → (y0, y1). All operands are i64 with equal shapes and
// hold 32-bit unsigned values; the results do too.
var Threefry2x32 = interp.NewPrim("threefry2x32", interp.Pure, func(_ any, in []aval) []aval {
	checkArity(in, 4)
	sameAvals(in)
	if in[0].DType != backend.Int64 {
		interp.Panicf("operands must be i64 holding 32-bit words")
	}
	return []aval{in[0], in[0]}
})

func init() {
	Threefry2x32.NonDifferentiable = true
}
