package linalg_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/linalg"
	"github.com/peel-ml/peel/transforms"
)

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
