package transforms_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// TestCustomRuleCapturedTracerOfApplyingLevel is the regression test of
// issue 25 item 6: a CustomJVP (or CustomVJP) whose f and rule close
// over a tracer of the autodiff transform around the call, while the
// argument holds none of it, used to be accepted, the rule skipped and
// f's own operations differentiated (d/dc (1·c) = 1 where the rule's
// tangent says 2). It is refused, as JAX refuses it (an unexpected
// tracer), under every autodiff transform and through Vmap,
// Functionalize, Compile, Checkpoint and Cond between the transform and
// the call; and the same
// functions with the tensor passed in the argument, or captured from a
// Vmap only, still follow the rule.
func TestCustomRuleCapturedTracerOfApplyingLevel(t *testing.T) {
	// f(x) = x·c; the rule's tangent is 2·t (not f's c·t), so a result
	// that follows the rule is told apart from f's own derivative.
	jvpOf := func(c *T) func(*T) *T {
		return transforms.CustomJVP(func(x *T) *T { return peel.Mul(x, c) },
			func(x, tx *T) (*T, *T) { return peel.Mul(x, c), peel.Mul(tx, 2.0) })
	}
	vjpOf := func(c *T) func(*T) *T {
		return transforms.CustomVJP(func(x *T) *T { return peel.Mul(x, c) },
			func(x *T) (*T, *T) { return peel.Mul(x, c), x },
			func(_, ct *T) *T { return peel.Mul(ct, 2.0) })
	}
	one := peel.FromFloat64s([]float64{1, 3})
	k := peel.FromFloat64s([]float64{2, -1})
	ks := peel.Stack([]*T{k, peel.Neg(k)}, 0)
	type rule struct {
		name string
		of   func(c *T) func(*T) *T
		op   string
	}
	rules := []rule{{"CustomJVP", jvpOf, "transforms.CustomJVP"}, {"CustomVJP", vjpOf, "transforms.CustomVJP"}}
	for _, r := range rules {
		cases := []struct {
			name  string
			run   func()
			level string // the transform the error names
		}{
			{"Grad", func() { transforms.Grad(func(c *T) *T { return peel.Sum(r.of(c)(k)) })(one) }, "grad"},
			{"Grad, c derived", func() {
				transforms.Grad(func(x *T) *T { return peel.Sum(peel.Add(r.of(peel.Sin(x))(k), x)) })(one)
			}, "grad"},
			{"VJP", func() { transforms.VJP(func(c *T) *T { return r.of(c)(k) }, one) }, "vjp"},
			{"JVP", func() { transforms.JVP(func(c *T) *T { return r.of(c)(k) }, one, one) }, "jvp"},
			{"Jacfwd", func() { transforms.Jacfwd(func(c *T) *T { return r.of(c)(k) })(one) }, "jacfwd"},
			{"Jacrev", func() { transforms.Jacrev(func(c *T) *T { return r.of(c)(k) })(one) }, "jacrev"},
			{"Grad of Vmap", func() {
				transforms.Grad(func(c *T) *T { return peel.Sum(transforms.Vmap(r.of(c))(ks)) })(one)
			}, "grad"},
			{"Grad of Functionalize", func() {
				transforms.Grad(func(c *T) *T { return peel.Sum(transforms.Functionalize(r.of(c))(k)) })(one)
			}, "grad"},
			{"Grad of Compile", func() {
				transforms.Grad(func(c *T) *T { return peel.Sum(transforms.Compile(r.of(c))(k)) })(one)
			}, "grad"},
			{"Grad of Checkpoint", func() {
				transforms.Grad(func(c *T) *T { return peel.Sum(transforms.Checkpoint(r.of(c), transforms.MinCut)(k)) })(one)
			}, "grad"},
			{"Grad of Cond", func() {
				transforms.Grad(func(c *T) *T {
					return peel.Sum(transforms.Cond(peel.Scalar(true), r.of(c), func(x *T) *T { return x }, k))
				})(one)
			}, "grad"},
		}
		for _, tc := range cases {
			t.Run(r.name+"/"+tc.name, func(t *testing.T) {
				wantError(t, tc.run, r.op, "f captures", "skip the rule", "the "+tc.level+" ")
			})
		}
		// The same function with the tensor in the argument follows the
		// rule: d/dx Σ rule(x) = 2 wherever c is.
		t.Run(r.name+"/argument follows the rule", func(t *testing.T) {
			c := peel.FromFloat64s([]float64{5, 7})
			g := transforms.Grad(func(x *T) *T { return peel.Sum(r.of(c)(x)) })(one)
			near(t, "grad", g.Float64s(), []float64{2, 2}, 0)
		})
		// Capturing a Vmap's batched value differentiates nothing: the
		// lanes' values are f's.
		t.Run(r.name+"/Vmap capture", func(t *testing.T) {
			got := transforms.Vmap(func(c *T) *T { return r.of(c)(k) })(ks)
			want := peel.Mul(ks, k)
			near(t, "vmap", got.Float64s(), want.Float64s(), 0)
		})
	}
}
