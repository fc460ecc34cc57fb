package compiler_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/compiler"
	"github.com/peel-ml/peel/interp"
)

// A traced graph is optimized and built into a Program, which runs it
// on new arguments of the traced types: here the three elementwise
// equations run as one fused loop.
func Example() {
	g := interp.Trace(func(xs []*peel.Tensor) []*peel.Tensor {
		return []*peel.Tensor{xs[0].Mul(2).Add(1).Tanh()}
	}, []*peel.Tensor{peel.Zeros(peel.Float64, 3)})
	opt, _ := compiler.Optimize(g, compiler.DefaultPasses(), false)
	prog := compiler.Build(opt)
	st := prog.Stats()
	fmt.Printf("%d instruction, fused groups of %v equations\n", st.Instructions, st.FusedSizes)
	out := prog.Run([]*peel.Tensor{peel.FromFloat64s([]float64{-0.5, 0, 0.5})}, nil)
	fmt.Println(out[0])
	// Output:
	// 1 instruction, fused groups of [3] equations
	// [         0 0.76159416 0.96402758]
}

// Optimize runs the passes and records each one's result: here the
// transpose of w becomes the dot's dimension numbers, and the second,
// identical product is merged into the first.
func ExampleOptimize() {
	x, w := peel.Ones(peel.Float64, 2, 3), peel.Ones(peel.Float64, 4, 3)
	g := interp.Trace(func(xs []*peel.Tensor) []*peel.Tensor {
		y := peel.MatMul(xs[0], peel.Transpose(xs[1]))
		z := peel.MatMul(xs[0], peel.Transpose(xs[1]))
		return []*peel.Tensor{peel.Add(y, z)}
	}, []*peel.Tensor{x, w})
	fmt.Println(g)
	opt, stages := compiler.Optimize(g, compiler.DefaultPasses(), true)
	for _, s := range stages {
		fmt.Printf("%s: %d equations\n", s.Pass, len(s.Graph.Eqns))
	}
	fmt.Println(opt)
	// Output:
	// { lambda ; a:f64[2,3] b:f64[4,3] .
	//   let c:f64[3,4] = transpose[perm=[1 0]] b
	//       d:f64[2,4] = dot_general[contract=([1],[0]) batch=([],[])] a c
	//       e:f64[3,4] = transpose[perm=[1 0]] b
	//       f:f64[2,4] = dot_general[contract=([1],[0]) batch=([],[])] a e
	//       g:f64[2,4] = add d f
	//   in (g) }
	// splat-constants: 5 equations
	// simplify: 5 equations
	// expand-row-ops: 5 equations
	// fold-transpose-into-dot: 3 equations
	// fold-constants: 3 equations
	// cse: 2 equations
	// dce: 2 equations
	// { lambda ; a:f64[2,3] b:f64[4,3] .
	//   let c:f64[2,4] = dot_general[contract=([1],[1]) batch=([],[])] a b
	//       d:f64[2,4] = add c c
	//   in (d) }
}
