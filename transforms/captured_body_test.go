package transforms_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/transforms"
)

// TestCompiledBodyCapturedWrite is the regression test of a silent wrong
// answer: a compiled function whose Scan body (or Cond branch, WhileLoop
// body, ShardMap device program) captured a tensor kept running with the
// body's copy after the tensor was written in place, because only the
// compiled function's own constants were watched. Each call after a
// write must see the new value (the compiled function traces again).
func TestCompiledBodyCapturedWrite(t *testing.T) {
	mesh := dist.NewMesh(dist.MeshAxis("data", 2))
	w := smData(0.4, 3)
	x := smData(0.1, 4, 3)
	cases := []struct {
		name string
		f    func(x *T) *T
		want func(x *T) *T
	}{
		{"Scan", func(x *T) *T {
			c, _ := transforms.Scan(func(c, _ *T) (*T, *T) { return c.Add(w), c }, x, peel.Zeros(peel.Float64, 2))
			return c
		}, func(x *T) *T { return x.Add(w.Mul(2)) }},
		{"Cond", func(x *T) *T {
			return transforms.Cond(peel.Greater(x.Sum(), -100.0), func(x *T) *T { return x.Mul(w) }, func(x *T) *T { return x }, x)
		}, func(x *T) *T { return x.Mul(w) }},
		{"WhileLoop", func(x *T) *T {
			type carry struct{ I, X *T }
			r := transforms.WhileLoop(func(c carry) *T { return peel.Less(c.I, 2.0) },
				func(c carry) carry { return carry{c.I.Add(1), c.X.Add(w)} }, carry{peel.Scalar(0.0), x})
			return r.X
		}, func(x *T) *T { return x.Add(w.Mul(2)) }},
		{"ShardMap", transforms.ShardMap(func(x *T) *T { return x.Mul(w) }, mesh, dist.P("data"), dist.P("data")),
			func(x *T) *T { return x.Mul(w) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := transforms.Compile(c.f)
			for k := range 3 {
				smNear(t, "call after a write", f(x), c.want(x), 1e-14)
				peel.AddInPlace(w, float64(k+1))
			}
		})
	}
}
