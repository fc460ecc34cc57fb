package transforms_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// Gradients of any order, Jacobians and Hessians compose.
func Example() {
	f := func(x *peel.Tensor) *peel.Tensor {
		return peel.Sum(peel.Mul(peel.Square(x), x)) // Σ x³
	}
	x := peel.FromFloat64s([]float64{1, 2})
	fmt.Println(transforms.Grad(f)(x))
	fmt.Println(transforms.Hessian(f)(x))
	// Output:
	// [ 3 12]
	// [[ 6  0]
	//  [ 0 12]]
}

// Gradients with respect to a struct of parameters have its structure.
func ExampleGrad() {
	type params struct{ W, B *peel.Tensor }
	loss := func(p params) *peel.Tensor {
		y := peel.Add(peel.Mul(p.W, 3.0), p.B)
		return peel.Sum(peel.Square(y))
	}
	g := transforms.Grad(loss)(params{W: peel.Scalar(1.0), B: peel.Scalar(0.5)})
	fmt.Println(g.W, g.B)
	// Output:
	// 21 7
}
