package interp_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Every operation is a Bind of a primitive: on concrete tensors the eval
// interpreter runs the backend's kernel, on tracers the interpreter of
// their level handles it (here the staging one, which records a Graph).
// Misuse panics with *Error, which Catch returns.
func Example() {
	square := func(a []*interp.Tensor) []*interp.Tensor {
		return []*interp.Tensor{interp.Bind1(prims.Mul, nil, a[0], a[0])}
	}
	x := peel.FromFloat64s([]float64{1, 2, 3})
	fmt.Println(square([]*interp.Tensor{x})[0])
	fmt.Println(interp.Trace(square, []*interp.Tensor{x}))
	fmt.Println(interp.Catch(func() { interp.Bind(prims.Mul, nil, x, peel.Ones(peel.Float64, 2)) }))
	// Output:
	// [1 4 9]
	// { lambda ; a:f64[3] .
	//   let b:f64[3] = mul a a
	//   in (b) }
	// mul: operands must have equal shapes and dtypes (primitives do not broadcast or promote) (f64[3], f64[2]) at example_test.go:22
}

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
