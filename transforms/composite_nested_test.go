package transforms_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/transforms"
)

// TestCompiledCallInsideStagedDerivative: forward mode through a
// compiled function that calls another compiled function, and a
// compiled JVP of one, used to fail with an escaped tracer: the inner
// call's tangent, composite_lin, held the call's operands as parameters,
// which the staged derivative recorded holding tracers of its own trace.
// Its residuals are now operands. Each result equals the same
// derivative of the uncompiled function (float64, 1e-12).
func TestCompiledCallInsideStagedDerivative(t *testing.T) {
	w := peel.Normal(peel.Key(4), peel.Float64, 3, 3)
	plain := func(x *peel.Tensor) *peel.Tensor { return peel.Sin(peel.MatMul(x, w)) }
	inner := transforms.Compile(plain)
	x := peel.Normal(peel.Key(5), peel.Float64, 2, 3)
	dx := peel.Cos(x)
	jvp := func(f func(*peel.Tensor) *peel.Tensor) *peel.Tensor { _, t := transforms.JVP(f, x, dx); return t }
	loss := func(f func(*peel.Tensor) *peel.Tensor) func(*peel.Tensor) *peel.Tensor {
		return func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Square(f(x))) }
	}
	for _, c := range []struct {
		name      string
		got, want func() *peel.Tensor
	}{
		{"JVP(Compile(inner))", func() *peel.Tensor { return jvp(transforms.Compile(inner)) }, func() *peel.Tensor { return jvp(plain) }},
		{"JVP(Compile(exp∘inner))", func() *peel.Tensor {
			return jvp(transforms.Compile(func(x *peel.Tensor) *peel.Tensor { return inner(peel.Exp(x)) }))
		}, func() *peel.Tensor { return jvp(func(x *peel.Tensor) *peel.Tensor { return plain(peel.Exp(x)) }) }},
		{"Compile(JVP(inner))", func() *peel.Tensor {
			return transforms.Compile(func(x *peel.Tensor) *peel.Tensor { _, t := transforms.JVP(inner, x, peel.Cos(x)); return t })(x)
		}, func() *peel.Tensor { return jvp(plain) }},
		{"Jacfwd(Compile(inner))", func() *peel.Tensor { return transforms.Jacfwd(transforms.Compile(inner))(x) },
			func() *peel.Tensor { return transforms.Jacfwd(plain)(x) }},
		{"Hessian(Compile(loss∘inner))", func() *peel.Tensor { return transforms.Hessian(transforms.Compile(loss(inner)))(x) },
			func() *peel.Tensor { return transforms.Hessian(loss(plain))(x) }},
		{"Grad(Compile(loss∘inner))", func() *peel.Tensor { return transforms.Grad(transforms.Compile(loss(inner)))(x) },
			func() *peel.Tensor { return transforms.Grad(loss(plain))(x) }},
	} {
		var got *peel.Tensor
		if err := peel.Catch(func() { got = c.got() }); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		want := c.want()
		g, w := got.Float64s(), want.Float64s()
		for i := range w {
			if d := g[i] - w[i]; d > 1e-12 || d < -1e-12 || len(g) != len(w) {
				t.Errorf("%s = %v, want %v", c.name, got, want)
				break
			}
		}
	}
}

// TestCompositeTangentHigherOrder: derivatives of order two and three
// through composite_lin (a compiled call's and a user-defined op's
// tangent), whose residuals are operands that have tangents of their
// own there, equal those of the plain functions (float64, 1e-9).
func TestCompositeTangentHigherOrder(t *testing.T) {
	w := peel.Normal(peel.Key(4), peel.Float64, 3, 3)
	plain := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Sin(peel.MatMul(peel.Reshape(x, 1, 3), w))) }
	comp := transforms.Compile(plain)
	gelu := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(mylib.Gelu.Call(x)) }
	geluPlain := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(mylib.GeluComposite(x)) }
	x := peel.Normal(peel.Key(5), peel.Float64, 3)
	for name, c := range map[string][2]*peel.Tensor{
		"jacrev(jacfwd(grad))": {transforms.Jacrev(transforms.Jacfwd(transforms.Grad(comp)))(x), transforms.Jacrev(transforms.Jacfwd(transforms.Grad(plain)))(x)},
		"jacrev(grad)":         {transforms.Jacrev(transforms.Grad(comp))(x), transforms.Jacrev(transforms.Grad(plain))(x)},
		"gelu jacrev(jacfwd)":  {transforms.Jacrev(transforms.Jacfwd(transforms.Grad(gelu)))(x), transforms.Jacrev(transforms.Jacfwd(transforms.Grad(geluPlain)))(x)},
		"gelu hessian":         {transforms.Hessian(gelu)(x), transforms.Hessian(geluPlain)(x)},
	} {
		g, wv := c[0].Float64s(), c[1].Float64s()
		for i := range wv {
			if d := g[i] - wv[i]; d > 1e-9 || d < -1e-9 {
				t.Errorf("%s: %v vs %v", name, g, wv)
				break
			}
		}
	}
}
