package customop_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/customop"
	"github.com/peel-ml/peel/transforms"
)

// An op defined by its composite, with a fused CPU kernel: eager calls run
// the kernel, the composite stays available as the reference (and is what
// transforms derive the op's rules from).
func ExampleDefine() {
	softsign := customop.Define("example.softsign", 1,
		func(xs ...*peel.Tensor) *peel.Tensor { // x / (1 + |x|)
			return peel.Div(xs[0], peel.Add(peel.Abs(xs[0]), 1.0))
		},
		customop.WithKernel(cpu.New(), func(_ any, in, out []backend.Array) {
			x, y := cpu.Float64s(in[0]), cpu.Float64s(out[0])
			for i, v := range x {
				if v < 0 {
					y[i] = v / (1 - v)
				} else {
					y[i] = v / (1 + v)
				}
			}
		}),
		customop.WithShapeRule(func(in []customop.Aval) customop.Aval {
			if in[0].DType != peel.Float64 {
				panic(&peel.Error{Msg: "float64 operands only", Operands: []string{in[0].String()}})
			}
			return in[0]
		}),
		customop.Elementwise(),
	)
	x := peel.FromFloat64s([]float64{-3, 0, 1})
	fmt.Println(softsign.Call(x))
	fmt.Println(softsign.Composite(x))
	fmt.Println(peel.Catch(func() { softsign.Call(peel.FromFloat32s([]float32{1})) }))

	// Autodiff derives the derivative 1/(1+|x|)² from the composite.
	grad := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(softsign.Call(x)) })
	fmt.Println(grad(x))
	// Output:
	// [-0.75     0   0.5]
	// [-0.75     0   0.5]
	// example.softsign: float64 operands only (f32[1]) at example_test.go:33
	// [0.0625      1   0.25]
}

// An op is defined once from its composite, an ordinary function of peel
// operations, and is then one primitive to every transform: graphs keep
// it as one equation, and Grad derives its derivative from the
// composite.
func Example() {
	cube := customop.Define("example.cube", 1, func(xs ...*peel.Tensor) *peel.Tensor {
		return peel.Mul(peel.Square(xs[0]), xs[0])
	})
	x := peel.FromFloat64s([]float64{1, 2, 3})
	fmt.Println(cube.Call(x))
	loss := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(cube.Call(x)) }
	fmt.Println(transforms.Grad(loss)(x))
	fmt.Println(transforms.MakeGraph(loss, x))
	// Output:
	// [ 1  8 27]
	// [ 3 12 27]
	// { lambda ; a:f64[3] .
	//   let b:f64[3] = example.cube a
	//       c:f64[] = reduce_sum[axes=[0]] b
	//   in (c) }
}
