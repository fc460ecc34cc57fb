package prims_test

import (
	"fmt"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// A primitive's shape rule gives the result type, or rejects the operands
// with *interp.Error.
func Example() {
	p := prims.DotParams{LhsContract: []int{2}, RhsContract: []int{1}, LhsBatch: []int{0}, RhsBatch: []int{0}}
	a := interp.Aval{Shape: []int{4, 2, 3}, DType: interp.Float32}
	b := interp.Aval{Shape: []int{4, 3, 5}, DType: interp.Float32}
	fmt.Println(prims.DotGeneral.Abstract(p, []interp.Aval{a, b})[0])

	err := interp.Catch(func() {
		prims.Add.Abstract(nil, []interp.Aval{a, b})
	})
	fmt.Println(err)
	// Output:
	// f32[4,2,5]
	// operands must have equal shapes and dtypes (primitives do not broadcast or promote) at example_test.go:19
}
