package transforms_test

import (
	"fmt"
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// TestArityGenerated: arity_gen.go is what genarity writes now (go
// generate ./transforms after a change to the templates), so CI fails on
// a stale file.
func TestArityGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs genarity")
	}
	out, err := exec.Command("go", "run", "./internal/genarity", "-check").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// TestArityForms: the forms of four and five arguments that the
// generator added equal the one-argument transforms of closures (the
// oracle: one argument varies, the others are captured), for a function
// whose arguments all matter.
func TestArityForms(t *testing.T) {
	v := func(seed float64, n int) *peel.Tensor {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = math.Sin(seed+1.3*float64(i)) + 0.1*seed
		}
		return peel.FromFloat64s(xs, n)
	}
	a, b, c, d, e := v(1, 3), v(2, 3), v(3, 3), v(4, 3), v(5, 3)
	f5 := func(a, b, c, d, e *peel.Tensor) *peel.Tensor {
		return peel.Sum(peel.Add(peel.Mul(peel.Sin(a), b), peel.Mul(peel.Mul(c, peel.Tanh(d)), peel.Exp(peel.Mul(e, 0.5)))))
	}
	f4 := func(a, b, c, d *peel.Tensor) *peel.Tensor { return f5(a, b, c, d, e) }
	args := []*peel.Tensor{a, b, c, d, e}
	// grad(k) is the gradient in argument k by the one-argument Grad.
	grad := func(k int) *peel.Tensor {
		return transforms.Grad(func(x *peel.Tensor) *peel.Tensor {
			in := append([]*peel.Tensor(nil), args...)
			in[k] = x
			return f5(in[0], in[1], in[2], in[3], in[4])
		})(args[k])
	}
	want := []*peel.Tensor{grad(0), grad(1), grad(2), grad(3), grad(4)}
	same := func(what string, got, want *peel.Tensor) {
		t.Helper()
		if d := maxAbsDiff(got, want); !(d <= 1e-12) {
			t.Fatalf("%s: differs by %g: %v, want %v", what, d, got, want)
		}
	}
	same("Grad5", transforms.Grad5(f5)(a, b, c, d, e), want[0])
	same("Grad4", transforms.Grad4(f4)(a, b, c, d), want[0])
	g := make([]*peel.Tensor, 5)
	g[0], g[1], g[2], g[3], g[4] = transforms.GradArgs5(f5)(a, b, c, d, e)
	for k := range g {
		same(fmt.Sprintf("GradArgs5 %d", k), g[k], want[k])
	}
	val, g0, g1, g2, g3 := transforms.ValueAndGradArgs4(f4, transforms.Argnums(1, -1))(a, b, c, d)
	same("ValueAndGradArgs4 value", val, f4(a, b, c, d))
	same("ValueAndGradArgs4 1", g1, want[1])
	same("ValueAndGradArgs4 3", g3, want[3])
	if g0 != nil || g2 != nil {
		t.Fatalf("ValueAndGradArgs4: unselected gradients %v, %v, want nil", g0, g2)
	}
	same("Grad5At 3", transforms.Grad5At[*peel.Tensor](f5, 3)(a, b, c, d, e), want[3])
	same("Grad4At -1", transforms.Grad4At[*peel.Tensor](f4, -1)(a, b, c, d), want[3])
	same("Jacrev5", transforms.Jacrev5(f5)(a, b, c, d, e), want[0])
	same("Jacfwd4", transforms.Jacfwd4(f4)(a, b, c, d), want[0])
	j := make([]*peel.Tensor, 5)
	j[0], j[1], j[2], j[3], j[4] = transforms.JacfwdArgs5(f5)(a, b, c, d, e)
	for k := range j {
		same(fmt.Sprintf("JacfwdArgs5 %d", k), j[k], want[k])
	}
	same("Jacrev5At 4", transforms.Jacrev5At[*peel.Tensor](f5, 4)(a, b, c, d, e), want[4])
	hess := transforms.Hessian5At(f5, 2)(a, b, c, d, e)
	same("Hessian5At 2", hess, transforms.Jacfwd(transforms.Jacrev(func(x *peel.Tensor) *peel.Tensor { return f5(a, b, x, d, e) }))(c))
	// VJP5 and JVP5: the pullback of 1 is the gradients; the tangent is
	// their inner product with the directions.
	out, pb := transforms.VJP5(f5, a, b, c, d, e)
	same("VJP5 value", out, f5(a, b, c, d, e))
	ct := make([]*peel.Tensor, 5)
	ct[0], ct[1], ct[2], ct[3], ct[4] = pb(peel.Scalar(1.0))
	dirs := []*peel.Tensor{v(6, 3), v(7, 3), v(8, 3), v(9, 3), v(10, 3)}
	dot := peel.Scalar(0.0)
	for k := range ct {
		same(fmt.Sprintf("VJP5 cotangent %d", k), ct[k], want[k])
		dot = peel.Add(dot, peel.Sum(peel.Mul(want[k], dirs[k])))
	}
	_, tan := transforms.JVP5(f5, a, b, c, d, e, dirs[0], dirs[1], dirs[2], dirs[3], dirs[4])
	same("JVP5", tan, dot)
	_, tan4 := transforms.JVP4(f4, a, b, c, d, nil, dirs[1], nil, nil)
	same("JVP4, one direction", tan4, peel.Sum(peel.Mul(want[1], dirs[1])))
	// Vmap5 against a loop; Compile5.
	xs := peel.Stack([]*peel.Tensor{a, b}, 0)
	vm := transforms.Vmap5(f5, transforms.InAxes(0, transforms.NoAxis, transforms.NoAxis, transforms.NoAxis, 0))(xs, b, c, d, peel.Stack([]*peel.Tensor{e, d}, 0))
	same("Vmap5", vm, peel.Stack([]*peel.Tensor{f5(a, b, c, d, e), f5(b, b, c, d, d)}, 0))
	same("Compile5", transforms.Compile5(f5)(a, b, c, d, e), f5(a, b, c, d, e))
	// Custom rules: a JVP rule that doubles the true tangent, a VJP rule
	// that returns each argument's gradient times its position + 1.
	cj := transforms.CustomJVP4(f4, func(a, b, c, d, ta, tb, tc, td *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
		_, t := transforms.JVP4(f4, a, b, c, d, ta, tb, tc, td)
		return f4(a, b, c, d), peel.Mul(t, 2.0)
	})
	_, ctan := transforms.JVP4(cj, a, b, c, d, dirs[0], dirs[1], dirs[2], dirs[3])
	_, plain := transforms.JVP4(f4, a, b, c, d, dirs[0], dirs[1], dirs[2], dirs[3])
	same("CustomJVP4", ctan, peel.Mul(plain, 2.0))
	cv := transforms.CustomVJP5(f5, func(a, b, c, d, e *peel.Tensor) (*peel.Tensor, []*peel.Tensor) {
		return f5(a, b, c, d, e), []*peel.Tensor{a, b, c, d, e}
	}, func(res []*peel.Tensor, ct *peel.Tensor) (*peel.Tensor, *peel.Tensor, *peel.Tensor, *peel.Tensor, *peel.Tensor) {
		g0, g1, g2, g3, g4 := transforms.GradArgs5(f5)(res[0], res[1], res[2], res[3], res[4])
		return g0, peel.Mul(g1, 2.0), peel.Mul(g2, 3.0), peel.Mul(g3, 4.0), peel.Mul(g4, 5.0)
	})
	g[0], g[1], g[2], g[3], g[4] = transforms.GradArgs5(cv)(a, b, c, d, e)
	for k := range g {
		same(fmt.Sprintf("CustomVJP5 %d", k), g[k], peel.Mul(want[k], float64(k+1)))
	}
	// The Aux forms: aux comes back as its values.
	fa := func(a, b, c, d, e *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
		return f5(a, b, c, d, e), peel.Mul(a, 2.0)
	}
	out, pba, aux := transforms.VJPAux5(fa, a, b, c, d, e)
	same("VJPAux5 value", out, f5(a, b, c, d, e))
	same("VJPAux5 aux", aux, peel.Mul(a, 2.0))
	ct[0], ct[1], ct[2], ct[3], ct[4] = pba(peel.Scalar(1.0))
	for k := range ct {
		same(fmt.Sprintf("VJPAux5 cotangent %d", k), ct[k], want[k])
	}
	_, tanA, auxJ := transforms.JVPAux5(fa, a, b, c, d, e, dirs[0], dirs[1], dirs[2], dirs[3], dirs[4])
	same("JVPAux5", tanA, dot)
	same("JVPAux5 aux", auxJ, peel.Mul(a, 2.0))
	_, linA, auxL := transforms.LinearizeAux5(fa, a, b, c, d, e)
	same("LinearizeAux5", linA(dirs[0], dirs[1], dirs[2], dirs[3], dirs[4]), dot)
	same("LinearizeAux5 aux", auxL, peel.Mul(a, 2.0))
	_, lin := transforms.Linearize5(f5, a, b, c, d, e)
	same("Linearize5", lin(dirs[0], dirs[1], dirs[2], dirs[3], dirs[4]), dot)
	jra, jaux := transforms.JacrevAux5(fa)(a, b, c, d, e)
	same("JacrevAux5", jra, want[0])
	same("JacrevAux5 aux", jaux, peel.Mul(a, 2.0))
	jfa, _ := transforms.JacfwdAux4(func(a, b, c, d *peel.Tensor) (*peel.Tensor, *peel.Tensor) { return f4(a, b, c, d), a })(a, b, c, d)
	same("JacfwdAux4", jfa, want[0])
	same("Hessian5", transforms.Hessian5(f5)(a, b, c, d, e), transforms.Jacfwd(transforms.Jacrev(func(x *peel.Tensor) *peel.Tensor { return f5(x, b, c, d, e) }))(a))
	// Functionalize5 (a write into an argument, answered out of place and
	// written back), Checkpoint5 (its gradient), MakeGraph5 (five inputs).
	fw := func(a, b, c, d, e *peel.Tensor) *peel.Tensor {
		peel.AddInPlace(a, b)
		return f5(a, b, c, d, e)
	}
	a1, a2 := peel.Clone(a), peel.Clone(a)
	same("Functionalize5", transforms.Functionalize5(fw)(a1, b, c, d, e), fw(a2, b, c, d, e))
	same("Functionalize5 writes back", a1, a2)
	same("Checkpoint5", transforms.Grad5(transforms.Checkpoint5(f5, transforms.NothingSaveable))(a, b, c, d, e), want[0])
	if g := transforms.MakeGraph5(f5, a, b, c, d, e); len(g.In) != 5 {
		t.Fatalf("MakeGraph5: %d inputs, want 5", len(g.In))
	}
	// Export5 and ExportedFunc5.
	prog := transforms.Export5(f5, a, b, c, d, e)
	same("Export5", transforms.ExportedFunc5[*peel.Tensor, *peel.Tensor, *peel.Tensor, *peel.Tensor, *peel.Tensor, *peel.Tensor](prog)(e, d, c, b, a), f5(e, d, c, b, a))
	prog4 := transforms.Export4(f4, a, b, c, d)
	if in := prog4.In(); len(in) != 4 || in[3].Path != "args[3]" {
		t.Fatalf("Export4 inputs %v", in)
	}
}

func maxAbsDiff(a, b *peel.Tensor) float64 {
	if fmt.Sprint(a.Shape()) != fmt.Sprint(b.Shape()) {
		return math.Inf(1)
	}
	x, y := peel.AsType(a, peel.Float64).Float64s(), peel.AsType(b, peel.Float64).Float64s()
	m := 0.0
	for i := range x {
		m = math.Max(m, math.Abs(x[i]-y[i]))
	}
	return m
}

// TestNilFunction: every transform given a nil function panics with a
// *peel.Error naming it when it is made, never with a bare runtime
// panic inside the trace later.
func TestNilFunction(t *testing.T) {
	type T = *peel.Tensor
	x := peel.Ones(peel.Float64, 3)
	var f1 func(T) T
	var f2 func(T, T) T
	var f5 func(T, T, T, T, T) T
	var a1 func(T) (T, T)
	var h func(*peel.Tensor) *peel.Tensor
	for _, c := range []struct {
		name string
		call func()
	}{
		{"Grad", func() { transforms.Grad(f1)(x) }},
		{"ValueAndGrad", func() { transforms.ValueAndGrad(f1)(x) }},
		{"GradAux", func() { transforms.GradAux(a1)(x) }},
		{"VJP", func() { transforms.VJP(f1, x) }},
		{"VJPAux", func() { transforms.VJPAux(a1, x) }},
		{"JVP", func() { transforms.JVP(f1, x, x) }},
		{"JVPAux", func() { transforms.JVPAux(a1, x, x) }},
		{"Linearize", func() { transforms.Linearize(f1, x) }},
		{"LinearizeAux", func() { transforms.LinearizeAux(a1, x) }},
		{"MakeGraph", func() { transforms.MakeGraph(f1, x) }},
		{"Jacrev", func() { transforms.Jacrev(f1)(x) }},
		{"Jacfwd", func() { transforms.Jacfwd(f1)(x) }},
		{"JacrevTree", func() { transforms.JacrevTree(f1)(x) }},
		{"JacfwdTree", func() { transforms.JacfwdTree(f1)(x) }},
		{"JacrevAux", func() { transforms.JacrevAux(a1)(x) }},
		{"JacfwdAux", func() { transforms.JacfwdAux(a1)(x) }},
		{"Hessian", func() { transforms.Hessian(h)(x) }},
		{"HessianTree", func() { transforms.HessianTree(f1)(x) }},
		{"HVP", func() { transforms.HVP(f1, x, x) }},
		{"Vmap", func() { transforms.Vmap(f1)(x) }},
		{"Functionalize", func() { transforms.Functionalize(f1)(x) }},
		{"Compile", func() { transforms.Compile(f1)(x) }},
		{"Checkpoint", func() { transforms.Checkpoint(f1, transforms.NothingSaveable)(x) }},
		{"Grad2", func() { transforms.Grad2(f2)(x, x) }},
		{"Vmap2", func() { transforms.Vmap2(f2)(x, x) }},
		{"Functionalize2", func() { transforms.Functionalize2(f2)(x, x) }},
		{"Checkpoint2", func() { transforms.Checkpoint2(f2, transforms.NothingSaveable)(x, x) }},
		{"Grad5At", func() { transforms.Grad5At[T](f5, 2)(x, x, x, x, x) }},
		{"Hessian5At", func() { transforms.Hessian5At(f5, 2)(x, x, x, x, x) }},
		{"JVP5", func() { transforms.JVP5(f5, x, x, x, x, x, x, x, x, x, x) }},
		{"Linearize5", func() { transforms.Linearize5(f5, x, x, x, x, x) }},
		{"MakeGraph5", func() { transforms.MakeGraph5(f5, x, x, x, x, x) }},
		{"Compile5", func() { transforms.Compile5(f5)(x, x, x, x, x) }},
		{"Export5", func() { transforms.Export5(f5, x, x, x, x, x) }},
	} {
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s(nil): a bare panic: %v", c.name, r)
				}
			}()
			err = peel.Catch(c.call)
		}()
		if err == nil || !strings.Contains(err.Error(), "transforms."+c.name) || !strings.Contains(err.Error(), "nil") {
			t.Errorf("%s(nil): %v, want a *peel.Error naming transforms.%s and the nil function", c.name, err, c.name)
		}
	}
}
