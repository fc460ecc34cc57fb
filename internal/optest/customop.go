package optest

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/customop"
)

// User-defined ops (customop.Define) in the registry, so that every sweep
// (eval, autodiff against finite differences, vmap against loops,
// functionalize) also covers the machinery behind them: fused kernels,
// derived derivatives (compiled, blocked or not), decomposition under
// vmap, the choice between decompositions.

// softsign is x/(1+|x|): an elementwise composite with a fused kernel and
// no rules; vmap runs the kernel on the batch (customop.Elementwise).
var softsign = customop.Define("optest.softsign", 1,
	func(xs ...*T) *T { return peel.Div(xs[0], peel.Add(peel.Abs(xs[0]), 1.0)) },
	customop.WithKernel(cpu.New(), func(_ any, in, out []backend.Array) {
		switch in[0].Buf.DType() {
		case peel.Float32:
			x, y := cpu.Float32s(in[0]), cpu.Float32s(out[0])
			for i, v := range x {
				y[i] = v / (float32(math.Abs(float64(v))) + 1)
			}
		case peel.Float64:
			x, y := cpu.Float64s(in[0]), cpu.Float64s(out[0])
			for i, v := range x {
				y[i] = v / (math.Abs(v) + 1)
			}
		}
	}),
	customop.WithShapeRule(func(in []customop.Aval) customop.Aval {
		if !in[0].DType.IsFloat() {
			panic(&peel.Error{Msg: "operand must be float", Operands: []string{in[0].String()}})
		}
		return in[0]
	}),
	customop.Elementwise(),
)

// logSumExpRows is log Σ exp over the last axis: a reduction composite
// with a fused kernel, its result type derived from the composite, and
// no batching rule (vmap decomposes it).
var logSumExpRows = customop.Define("optest.logsumexp_rows", 1,
	func(xs ...*T) *T { return peel.LogSumExp(xs[0], -1) },
	customop.WithKernel(cpu.New(), func(_ any, in, out []backend.Array) {
		n := in[0].Shape[len(in[0].Shape)-1]
		switch in[0].Buf.DType() {
		case peel.Float32:
			lseRows(cpu.Float32s(out[0]), cpu.Float32s(in[0]), n)
		case peel.Float64:
			lseRows(cpu.Float64s(out[0]), cpu.Float64s(in[0]), n)
		case peel.Int64:
			// Integer and bool rows promote to f64, as LogSumExp does.
			lseRows(cpu.Float64s(out[0]), toF64(cpu.Int64s(in[0])), n)
		case peel.Bool:
			lseRows(cpu.Float64s(out[0]), toF64(cpu.Bools(in[0])), n)
		}
	}),
)

// toF64 converts integer or bool elements to float64.
func toF64[E int64 | bool](x []E) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		switch v := any(v).(type) {
		case int64:
			y[i] = float64(v)
		case bool:
			if v {
				y[i] = 1
			}
		}
	}
	return y
}

func lseRows[F float32 | float64](y, x []F, n int) {
	for r := range y {
		row := x[r*n : (r+1)*n]
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, float64(v))
		}
		s := 0.0
		for _, v := range row {
			s += math.Exp(float64(v) - m)
		}
		y[r] = F(m + math.Log(s))
	}
}

// interleaveRows puts a's rows at the even positions and b's at the odd
// ones: a functional composite (what transforms use) and an in-place
// decomposition eager evaluation prefers.
var interleaveRows = customop.Define("optest.interleave", 2,
	func(xs ...*T) *T {
		shape := append([]int{2 * xs[0].Shape()[0]}, xs[0].Shape()[1:]...)
		return peel.Reshape(peel.Stack(xs, 1), shape...)
	},
	customop.WithDecomposition(func(xs ...*T) *T {
		shape := append([]int{2 * xs[0].Shape()[0]}, xs[0].Shape()[1:]...)
		out := peel.Zeros(xs[0].DType(), shape...)
		peel.CopyInto(peel.Slice(out, 0, 0, shape[0], 2), xs[0])
		peel.CopyInto(peel.Slice(out, 0, 1, shape[0], 2), xs[1])
		return out
	}, customop.Mutates|customop.Eager),
)

func userOps() []Op {
	rowShapes := [][]int{{1}, {5}, {2, 3}, {2, 3, 4}}
	return []Op{
		unaryOp("optest.softsign", func(x *T) *T { return softsign.Call(x) }, func(x float64) float64 {
			return x / (1 + math.Abs(x))
		}, floats, same, -5, 5),
		{
			Name: "optest.logsumexp_rows",
			F:    func(a []*T) *T { return logSumExpRows.Call(a[0]) },
			Samples: func() []Sample {
				g := NewGen(7)
				var out []Sample
				for _, d := range floats {
					for _, s := range rowShapes {
						out = append(out, Sample{Name: fmt.Sprintf("%v%v", d, s), Args: []*T{g.Tensor(d, -4, 4, s...)}})
					}
				}
				return out
			},
			Ref: func(a []Host) Host {
				x := a[0]
				n := x.Shape[len(x.Shape)-1]
				out := Host{Shape: x.Shape[:len(x.Shape)-1], DType: x.DType}
				for r := 0; r < x.Size()/n; r++ {
					m, s := math.Inf(-1), 0.0
					for _, v := range x.Data[r*n : (r+1)*n] {
						m = math.Max(m, v)
					}
					for _, v := range x.Data[r*n : (r+1)*n] {
						s += math.Exp(v - m)
					}
					out.Data = append(out.Data, Round(x.DType, m+math.Log(s)))
				}
				return out
			},
			Tol:            1e-5,
			Differentiable: true,
		},
		{
			Name: "optest.interleave",
			F:    func(a []*T) *T { return interleaveRows.Call(a[0], a[1]) },
			Samples: func() []Sample {
				g := NewGen(8)
				var out []Sample
				for _, d := range numerics {
					for _, s := range rowShapes {
						out = append(out, Sample{Name: fmt.Sprintf("%v%v", d, s), Args: []*T{g.Tensor(d, -4, 4, s...), g.Tensor(d, -4, 4, s...)}})
					}
				}
				return out
			},
			Ref: func(a []Host) Host {
				x, y := a[0], a[1]
				row := x.Size() / x.Shape[0]
				out := Host{Shape: append([]int{2 * x.Shape[0]}, x.Shape[1:]...), DType: x.DType}
				for r := range x.Shape[0] {
					out.Data = append(out.Data, x.Data[r*row:(r+1)*row]...)
					out.Data = append(out.Data, y.Data[r*row:(r+1)*row]...)
				}
				return out
			},
			Tol:            -1,
			Differentiable: true,
		},
	}
}
