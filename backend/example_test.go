package backend_test

import (
	"fmt"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
)

// A Backend owns buffers, and an Array is a strided view of one: here
// the CPU backend copies the transpose of a 2×3 matrix, a view with
// swapped strides, into a contiguous buffer. Shapes are checked before
// anything is allocated.
func Example() {
	var be backend.Backend = cpu.New()
	buf := be.FromHost([]float64{1, 2, 3, 4, 5, 6})
	x := backend.Array{Buf: buf, Shape: []int{2, 3}} // nil Strides: row-major
	xt := backend.Array{Buf: buf, Shape: []int{3, 2}, Strides: []int{1, 3}}
	dst := backend.Array{Buf: be.Alloc(backend.Float64, xt.Size()), Shape: xt.Shape}
	be.Copy(dst, xt)
	fmt.Println(be.Name(), buf.DType(), x.IsContiguous(), xt.IsContiguous())
	fmt.Println(be.ToHost(dst))

	_, err := backend.AllocSize(backend.Float32, []int{2, -1})
	fmt.Println(err)
	// Output:
	// cpu f64 true false
	// [1 4 2 5 3 6]
	// negative dimension -1 in shape [2 -1]
}

// An Array is a strided view of a buffer: a transpose swaps strides.
func ExampleArray() {
	a := backend.Array{Shape: []int{2, 3}}
	t := backend.Array{Shape: []int{3, 2}, Strides: []int{1, 3}}
	fmt.Println(a.IsContiguous(), a.EffectiveStrides())
	fmt.Println(t.IsContiguous(), t.Size())
	// Output:
	// true [3 1]
	// false 6
}
