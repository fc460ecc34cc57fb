package backend_test

import (
	"fmt"

	"github.com/peel-ml/peel/backend"
)

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
