package linalg_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/linalg"
	"github.com/peel-ml/peel/transforms"
)

// Every function acts on the last two dimensions and batches over the
// leading ones: here a stack of two symmetric positive-definite
// matrices is factored, and systems with them solved. The functions are
// differentiable like any peel op.
func Example() {
	a := peel.FromFloat64s([]float64{4, 2, 2, 3, 1, 0, 0, 9}, 2, 2, 2)
	l := linalg.Cholesky(a)
	fmt.Println(l)
	fmt.Println(linalg.CholeskySolve(l, peel.FromFloat64s([]float64{8, 7, 1, 9}, 2, 2, 1)))
	// The gradient of log|det a| is a⁻ᵀ.
	fmt.Println(transforms.Grad(func(a *peel.Tensor) *peel.Tensor {
		_, ld := linalg.Slogdet(a)
		return ld.Sum()
	})(a))
	// Output:
	// [[[        2         0]
	//   [        1 1.4142136]]
	//
	//  [[        1         0]
	//   [        0         3]]]
	// [[[1.25]
	//   [ 1.5]]
	//
	//  [[   1]
	//   [   1]]]
	// [[[     0.375      -0.25]
	//   [     -0.25        0.5]]
	//
	//  [[         1          0]
	//   [         0 0.11111111]]]
}

func ExampleSolve() {
	a := peel.FromFloat64s([]float64{3, 1, 1, 2}, 2, 2)
	b := peel.FromFloat64s([]float64{9, 8}, 2)
	fmt.Println(linalg.Solve(a, b))
	// Output: [2 3]
}

func ExampleDet() {
	a := peel.FromFloat64s([]float64{3, 1, 1, 2}, 2, 2)
	fmt.Println(linalg.Det(a))
	// The gradient of the determinant is det·a⁻ᵀ.
	fmt.Println(transforms.Grad(linalg.Det)(a))
	// Output:
	// 5
	// [[ 2 -1]
	//  [-1  3]]
}

func ExampleEigh() {
	a := peel.FromFloat64s([]float64{2, 1, 1, 2}, 2, 2)
	w, _ := linalg.Eigh(a)
	fmt.Println(w)
	// Output: [1 3]
}

func ExampleMatrixNorm() {
	a := peel.FromFloat64s([]float64{1, -2, 3, 4}, 2, 2)
	fmt.Println(linalg.MatrixNorm(a, linalg.OneNorm), linalg.MatrixNorm(a, linalg.InfNorm))
	// Output: 6 7
}
