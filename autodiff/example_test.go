package autodiff_test

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/autodiff"
)

// f(x) = sum(x * sin(x)): forward mode pushes a tangent through it;
// linearize + transpose pulls a cotangent back, giving the gradient
// sin(x) + x cos(x).
func Example() {
	f := func(in []*peel.Tensor) []*peel.Tensor {
		x := in[0]
		return []*peel.Tensor{peel.Sum(peel.Mul(x, peel.Sin(x)))}
	}
	x := peel.FromFloat64s([]float64{0, 1, 2})

	outs, touts := autodiff.JVP("jvp", f, []*peel.Tensor{x}, []*peel.Tensor{peel.OnesLike(x)})
	fmt.Printf("f(x) = %.4f, directional derivative along ones = %.4f\n", outs[0].Item(), touts[0].Item())

	lin := autodiff.Linearize("grad", f, []*peel.Tensor{x})
	defer lin.Release()
	grad := lin.Transpose([]*peel.Tensor{peel.OnesLike(lin.Outs[0])})[0]
	fmt.Printf("gradient = %.4f\n", grad.Float64s())
	// Output:
	// f(x) = 2.6601, directional derivative along ones = 1.4588
	// gradient = [0.0000 1.3818 0.0770]
}
