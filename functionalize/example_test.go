package functionalize_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/functionalize"
	"github.com/peel-ml/peel/interp"
)

// Inside a functionalize level a write through a view updates its base
// out of place; the caller's tensor gets the final value when the level
// ends.
func Example() {
	x := peel.FromFloat64s([]float64{1, 2, 3, 4})
	f := functionalize.New(false)
	in := f.Wrap(x)
	peel.AddInPlace(peel.Narrow(in, 0, 1, 2), 10.0)
	out := f.Unwrap(peel.Sum(in))
	fmt.Println(x, in.IsConcrete())
	f.End([]*interp.Tensor{in}, []*interp.Tensor{x})
	fmt.Println(out, x)
	// Output:
	// [1 2 3 4] false
	// 30 [ 1 12 13  4]
}
