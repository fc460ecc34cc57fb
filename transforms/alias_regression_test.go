package transforms_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// TestReshapeOfTransposeIsACopy: eager reshape of a transposed layout
// copies (no strides express it), so a later write into the base does
// not reach the reshaped tensor; functionalize and autodiff must agree
// instead of treating every reshape as an alias (found by FuzzProgram).
func TestReshapeOfTransposeIsACopy(t *testing.T) {
	xs := []float64{0.5, -1, 2, 0.25, 1.5, -0.75}
	f := func(x *peel.Tensor) *peel.Tensor {
		y := peel.Clone(x)
		flat := peel.Reshape(peel.Transpose(y), -1) // a copy at eval
		peel.CopyInto(y, 0.625)                     // does not reach flat
		return peel.Sum(peel.Mul(peel.Mul(flat, flat), peel.Reshape(peel.Transpose(x), -1)))
	}
	x := peel.FromFloat64s(xs, 2, 3)
	want := f(x).Item()
	near(t, "Functionalize vs eager", []float64{transforms.Functionalize(f)(x).Item()}, []float64{want}, 1e-12)
	fd := fdGrad(f, xs, 2, 3)
	near(t, "Grad vs finite differences", transforms.Grad(f)(x).Float64s(), fd, 1e-6)
	near(t, "Grad(Functionalize) vs finite differences", transforms.Grad(transforms.Functionalize(f))(x).Float64s(), fd, 1e-6)
	_, tan := transforms.JVP(f, x, peel.OnesLike(x))
	sum := 0.0
	for _, g := range fd {
		sum += g
	}
	near(t, "JVP vs <grad, 1>", []float64{tan.Item()}, []float64{sum}, 1e-6)
}
