package peel_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// Binary functions broadcast and promote; Go scalars are weakly typed, so
// a float32 tensor stays float32.
func ExampleAdd() {
	x := peel.FromFloat32s([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	y := peel.Add(peel.Mul(x, 2.0), peel.FromFloat32s([]float32{10, 20, 30}))
	fmt.Println(y.DType(), y.Shape())
	fmt.Println(y)
	// Output:
	// f32 [2 3]
	// [[12 24 36]
	//  [18 30 42]]
}

// A write through a view is visible through its base.
func ExampleNarrow() {
	y := peel.Zeros(peel.Float64, 5)
	peel.CopyInto(peel.Narrow(y, 0, 1, 3), peel.FromFloat64s([]float64{1, 2, 3}))
	peel.MulInPlace(y, 2)
	fmt.Println(y)
	// Output:
	// [0 2 4 6 0]
}

// MatMul follows numpy: batch dimensions broadcast.
func ExampleMatMul() {
	a := peel.Reshape(peel.Arange(peel.Float64, 0, 12, 1), 2, 2, 3)
	b := peel.Ones(peel.Float64, 3, 1)
	fmt.Println(peel.MatMul(a, b).Shape(), peel.Sum(peel.MatMul(a, b)).Item())
	// Output:
	// [2 2 1] 66
}

// Misuse panics with *peel.Error naming the op and shapes; Catch turns it
// into an error.
func ExampleCatch() {
	err := peel.Catch(func() {
		peel.MatMul(peel.Ones(peel.Float64, 2, 3), peel.Ones(peel.Float64, 4, 5))
	})
	fmt.Println(err)
	// Output:
	// peel.MatMul: contracting dimensions differ: f64[2,3] has 3 columns, f64[4,5] has 4 rows at example_test.go:46
}

// A 3×3 convolution with SAME padding keeps the image size; stride 2
// halves it, and ConvTranspose2D with the same options restores it. A
// 2×2 max pool takes each window's maximum.
func ExampleConv2D() {
	x := peel.Ones(peel.Float32, 1, 2, 4, 4) // [N, C, H, W]
	w := peel.Ones(peel.Float32, 3, 2, 3, 3) // [O, C, KH, KW]
	same := peel.ConvPadding(peel.SamePadding)
	fmt.Println(peel.Conv2D(x, w, same).Shape())
	y := peel.Conv2D(x, w, same, peel.ConvStrides(2))
	fmt.Println(y.Shape())
	fmt.Println(peel.ConvTranspose2D(y, peel.Ones(peel.Float32, 3, 2, 3, 3), same, peel.ConvStrides(2)).Shape())
	fmt.Println(peel.Conv2D(x, w).Shape(), peel.Conv2D(x, w).Float32s()[0]) // VALID: 2·3·3 ones per window
	fmt.Println(peel.MaxPool2D(peel.Reshape(peel.Arange(peel.Float64, 0, 16, 1), 1, 1, 4, 4), 2))
	// Output:
	// [1 3 4 4]
	// [1 3 2 2]
	// [1 2 4 4]
	// [1 3 2 2] 18
	// [[[[ 5  7]
	//    [13 15]]]]
}

// Tensors broadcast like numpy's arrays, views write through to their
// base, and every function works under the transforms of package
// transforms.
func Example() {
	x := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	b := peel.FromFloat64s([]float64{10, 20, 30})
	y := x.Mul(2).Add(b) // b broadcasts over the rows
	fmt.Println(y)
	fmt.Println(y.Sum(1), y.Mean().Item())

	row := peel.Select(x, 0, 1) // a view of the second row
	peel.MulInPlace(row, -1)
	fmt.Println(x)

	loss := func(w *peel.Tensor) *peel.Tensor { return w.Square().Sum() }
	fmt.Println(transforms.Grad(loss)(peel.FromFloat64s([]float64{1, -2})))
	// Output:
	// [[12 24 36]
	//  [18 30 42]]
	// [72 90] 27
	// [[ 1  2  3]
	//  [-4 -5 -6]]
	// [ 2 -4]
}
