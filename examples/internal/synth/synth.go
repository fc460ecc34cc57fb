// Package synth makes the deterministic stand-ins for random data that the
// tutorial examples share with their PyTorch reference generators
// (examples/*/testdata/gen_reference.py compute the same formulas), so that
// both sides start from bit-identical inputs without sharing an RNG.
package synth

import (
	"math"

	"github.com/peel-ml/peel"
)

// Data returns a float64 tensor of the given shape whose element with
// row-major flat index k is sin(0.37·k + 0.011·k² + seed), a value in [-1, 1].
// The quadratic term makes matrices built this way full rank (sin(f(i)+g(j))
// alone would give rank 2).
func Data(seed float64, shape ...int) *peel.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float64, n)
	for k := range v {
		fk := float64(k)
		v[k] = math.Sin(0.37*fk + 0.011*fk*fk + seed)
	}
	return peel.FromFloat64s(v, shape...)
}

// Labels returns n int64 class labels in [0, classes): label k is
// (k·k + 3·k + seed) mod classes.
func Labels(seed, n, classes int) *peel.Tensor {
	v := make([]int64, n)
	for k := range v {
		v[k] = int64((k*k + 3*k + seed) % classes)
	}
	return peel.FromInt64s(v, n)
}
