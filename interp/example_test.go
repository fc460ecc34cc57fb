package interp_test

import (
	"fmt"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Trace records the primitives a function applies to its arguments.
func ExampleTrace() {
	x := f64([]float64{1, 2, 3}, 3)
	g := interp.Trace(func(a []*interp.Tensor) []*interp.Tensor {
		y := interp.Bind1(prims.Mul, nil, a[0], a[0])
		return []*interp.Tensor{interp.Bind1(prims.ReduceSum, prims.ReduceParams{Axes: []int{0}}, y)}
	}, []*interp.Tensor{x})
	fmt.Println(g)
	// Output:
	// { lambda ; a:f64[3] .
	//   let b:f64[3] = mul a a
	//       c:f64[] = reduce_sum[axes=[0]] b
	//   in (c) }
}
