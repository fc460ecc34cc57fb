package peel_test

import (
	"errors"
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// StopGradient's value flows and its derivative is zero: the gradient of
// x·stop(x) is stop(x), not 2x.
func ExampleStopGradient() {
	f := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Mul(x, peel.StopGradient(x))) }
	fmt.Println(transforms.Grad(f)(peel.FromFloat64s([]float64{2, 3})))
	// Output:
	// [2 3]
}

// A library's composite op defers Annotate, so errors raised inside it
// name it (outermost last).
func ExampleAnnotate() {
	softsign := func(x *peel.Tensor) *peel.Tensor {
		defer peel.Annotate("mylib.Softsign")
		return peel.Div(x, peel.Add(peel.Abs(x), 1.0))
	}
	err := peel.Catch(func() { softsign(nil) })
	var e *peel.Error
	if errors.As(err, &e) {
		fmt.Println(e.Ops)
	}
	// Output:
	// [peel.Abs mylib.Softsign]
}
