package mylib

import (
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/customop"
)

// The constants of the tanh approximation of GELU.
const (
	geluK = 0.7978845608028654 // √(2/π)
	geluC = 0.044715
)

// GeluComposite is Gelu's meaning:
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
func GeluComposite(xs ...*peel.Tensor) *peel.Tensor {
	x := xs[0]
	x3 := peel.Mul(x, peel.Mul(x, x))
	inner := peel.Mul(peel.Add(x, peel.Mul(x3, geluC)), geluK)
	return peel.Mul(peel.Mul(x, 0.5), peel.Add(peel.Tanh(inner), 1.0))
}

// GeluKernel is Gelu's fused CPU kernel: one pass over the input in
// cache-sized blocks, split across the backend's threads.
func GeluKernel(_ any, in, out []backend.Array) {
	switch in[0].Buf.DType() {
	case peel.Float32:
		x, y := cpu.Float32s(in[0]), cpu.Float32s(out[0])
		cpu.ParallelFor(len(x), 8, func(lo, hi int) { gelu(y[lo:hi], x[lo:hi], cpu.Tanh32) })
	case peel.Float64:
		x, y := cpu.Float64s(in[0]), cpu.Float64s(out[0])
		cpu.ParallelFor(len(x), 8, func(lo, hi int) { gelu(y[lo:hi], x[lo:hi], cpu.Tanh64) })
	default:
		// Unreachable: the shape rule admits floats only.
		panic(&peel.Error{Ops: []string{"mylib.gelu"}, Msg: "no kernel for " + in[0].Buf.DType().String()})
	}
}

// gelu computes y = gelu(x) block by block: the tanh argument into y, the
// vectorized tanh in place, then the final products.
func gelu[F float32 | float64](y, x []F, tanh func(d, a []F)) {
	const block = 2048
	for lo := 0; lo < len(x); lo += block {
		hi := min(lo+block, len(x))
		xb, yb := x[lo:hi], y[lo:hi]
		for i, v := range xb {
			yb[i] = F(geluK) * (v + F(geluC)*v*v*v)
		}
		tanh(yb, yb)
		for i, v := range xb {
			yb[i] = F(0.5) * v * (1 + yb[i])
		}
	}
}

// geluShape admits floating-point operands (the composite would promote
// an integer operand to float, which the kernel does not do).
func geluShape(in []customop.Aval) customop.Aval {
	if !in[0].DType.IsFloat() {
		panic(&peel.Error{Msg: "operand must be float32 or float64", Operands: []string{in[0].String()}})
	}
	return in[0]
}

// Gelu is the tanh approximation of the Gaussian error linear unit, an op
// with a fused CPU kernel and no hand-written derivative.
var Gelu = customop.Define("mylib.gelu", 1, GeluComposite,
	customop.WithKernel(cpu.New(), GeluKernel),
	customop.WithShapeRule(geluShape),
	customop.Elementwise(),
)

// InterleaveComposite is Interleave's meaning, written the way eager code
// often is: allocate the result, then copy a into its even rows and b
// into its odd rows (in place, through strided views).
func InterleaveComposite(xs ...*peel.Tensor) *peel.Tensor {
	a, b := xs[0], xs[1]
	shape := append([]int{2 * a.Shape()[0]}, a.Shape()[1:]...)
	out := peel.Zeros(a.DType(), shape...)
	peel.CopyInto(peel.Slice(out, 0, 0, shape[0], 2), a)
	peel.CopyInto(peel.Slice(out, 0, 1, shape[0], 2), b)
	return out
}

// Interleave interleaves the rows of a and b (of one shape [n, …]) into
// [2n, …]: a's rows at the even positions, b's at the odd ones. Its only
// decomposition mutates.
var Interleave = customop.Define("mylib.interleave", 2, InterleaveComposite,
	customop.CompositeTraits(customop.Mutates),
)

// GeluFloat64 is the scalar reference of Gelu.
func GeluFloat64(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(geluK*(x+geluC*x*x*x)))
}
