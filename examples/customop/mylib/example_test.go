package mylib_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/transforms"
)

// Gelu runs its fused kernel eagerly; Grad derives its derivative from
// the composite, and a graph keeps it as one equation.
func Example() {
	x := peel.FromFloat64s([]float64{-1, 0, 1, 2})
	fmt.Printf("gelu(x)  = %.4f\n", mylib.Gelu.Call(x).Float64s())
	loss := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(mylib.Gelu.Call(x)) }
	fmt.Printf("d/dx     = %.4f\n", transforms.Grad(loss)(x).Float64s())
	fmt.Print(transforms.MakeGraph(func(x *peel.Tensor) *peel.Tensor { return mylib.Gelu.Call(x) }, x))
	// Output:
	// gelu(x)  = [-0.1588 0.0000 0.8412 1.9546]
	// d/dx     = [-0.0830 0.5000 1.0830 1.0861]
	// { lambda ; a:f64[4] .
	//   let b:f64[4] = mylib.gelu a
	//   in (b) }
}
