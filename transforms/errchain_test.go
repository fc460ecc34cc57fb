package transforms_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
)

// TestErrorNamesEnclosingTransforms: an error inside Vmap(Grad(f)) names
// the chain of transforms it happened under, innermost first, not just
// the level that raised it.
func TestErrorNamesEnclosingTransforms(t *testing.T) {
	bad := func(x *T) *T { return peel.Sum(peel.MatMul(x, peel.Ones(peel.Float64, 5, 2))) }
	xs := peel.Ones(peel.Float64, 4, 3)
	cases := []struct {
		name   string
		run    func()
		within []string
	}{
		{"grad", func() { transforms.Grad(bad)(peel.Ones(peel.Float64, 3)) }, []string{"grad"}},
		{"vmap(grad)", func() { transforms.Vmap(transforms.Grad(bad))(xs) }, []string{"grad", "vmap"}},
		{"grad(vmap)", func() {
			transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Vmap(bad)(x)) })(xs)
		}, []string{"vmap", "grad"}},
	}
	for _, c := range cases {
		err := interp.Catch(c.run)
		var e *interp.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: no *peel.Error: %v", c.name, err)
		}
		if strings.Join(e.Within, ",") != strings.Join(c.within, ",") {
			t.Errorf("%s: Within %v, want %v (%v)", c.name, e.Within, c.within, err)
		}
		if len(c.within) > 1 && !strings.Contains(err.Error(), "inside "+c.within[len(c.within)-1]) {
			t.Errorf("%s: message %q does not name the enclosing transform", c.name, err)
		}
	}
}

// TestTreeErrorsNameLeafPaths: errors about one leaf of a tree name its
// path (".W", "[1]", `["k"]`), not its number.
func TestTreeErrorsNameLeafPaths(t *testing.T) {
	type params struct{ W, B *T }
	p := params{W: peel.Ones(peel.Float64, 2, 3), B: peel.Ones(peel.Float64, 3)}
	loss := func(p params) *T { return peel.Sum(peel.Add(peel.Sum(p.W), p.B)) }
	cases := []struct {
		name string
		run  func()
		want []string
	}{
		{"vmap sizes", func() {
			transforms.Vmap(func(m map[string]*T) *T { return peel.Add(m["a"], peel.Sum(m["b"])) })(
				map[string]*T{"a": peel.Ones(peel.Float64, 2), "b": peel.Ones(peel.Float64, 3)})
		}, []string{`leaf ["a"]: 2`, `leaf ["b"]: 3`}},
		{"jvp tangent", func() {
			transforms.JVP(loss, p, params{W: peel.Ones(peel.Float64, 2, 3), B: peel.Ones(peel.Float64, 4)})
		}, []string{"tangent leaf .B", "f64[4]"}},
		{"vjp cotangent", func() {
			_, pb := transforms.VJP(func(p params) []*T { return []*T{p.W, p.B} }, p)
			pb([]*T{p.W, peel.Ones(peel.Float64, 2)})
		}, []string{"cotangent leaf [1]"}},
		{"grad of an integer leaf", func() {
			transforms.Grad(func(p params) *T { return peel.Sum(p.W) })(params{W: p.W, B: peel.FromInt64s([]int64{1})})
		}, []string{"leaf .B", "i64"}},
	}
	for _, c := range cases {
		err := interp.Catch(c.run)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not mention %q", c.name, err, w)
			}
		}
	}
}

// TestHessianOfVectorFunction: for f: R^n → R^m the Hessian has shape
// [m, n, n], one symmetric Hessian per output (as documented).
func TestHessianOfVectorFunction(t *testing.T) {
	x := peel.FromFloat64s([]float64{0.5, -1, 2})
	f := func(x *T) *T { return peel.Stack([]*T{peel.Sum(peel.Mul(x, x)), peel.Sum(peel.Exp(x))}, 0) }
	h := transforms.Hessian(f)(x)
	if got := h.Shape(); len(got) != 3 || got[0] != 2 || got[1] != 3 || got[2] != 3 {
		t.Fatalf("Hessian shape %v, want [2 3 3]", got)
	}
	want := []float64{2, 0, 0, 0, 2, 0, 0, 0, 2}
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			e := 0.0
			if i == j {
				e = math.Exp(x.Float64s()[i])
			}
			want = append(want, e)
		}
	}
	near(t, "Hessian of [Σx², Σexp x]", h.Float64s(), want, 1e-12)
}

// TestJacobianOptions: a Jacobian takes its own options (InAxes, OutAxes
// and AxisSize no longer compile there); Argnums is refused by the forms
// that differentiate one fixed argument, naming the Jacobian and the
// form to use instead.
func TestJacobianOptions(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2})
	for _, jac := range []struct {
		op string
		f  func(func(*T) *T, ...transforms.JacobianOption) func(*T) *T
	}{{"transforms.Jacrev", transforms.Jacrev[*T]}, {"transforms.Jacfwd", transforms.Jacfwd[*T]}, {"transforms.Hessian", transforms.Hessian}} {
		err := interp.Catch(func() { jac.f(peel.Sin, transforms.Argnums(0))(x) })
		if err == nil || !strings.Contains(err.Error(), "Argnums") || !strings.Contains(err.Error(), jac.op) {
			t.Errorf("%s with Argnums: %v", jac.op, err)
		}
	}
	near(t, "Jacrev with ChunkSize", transforms.Jacrev(peel.Sin, transforms.ChunkSize(1))(x).Float64s(), []float64{math.Cos(1), 0, 0, math.Cos(2)}, 1e-15)
}
