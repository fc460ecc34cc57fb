package transforms_test

import (
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// wantPanic runs f and checks it panics with *peel.Error whose message
// holds every piece of want.
func wantPanic(t *testing.T, what string, f func(), want ...string) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		e, ok := r.(*peel.Error)
		if !ok {
			t.Fatalf("%s: panic %v, want *peel.Error", what, r)
		}
		for _, w := range want {
			if !strings.Contains(e.Error(), w) {
				t.Errorf("%s: error %q does not say %q", what, e.Error(), w)
			}
		}
	}()
	f()
	t.Fatalf("%s: no panic", what)
}

// TestFourAndFiveArguments checks Vmap4/5 against a loop over the batch,
// Grad4/5, ValueAndGrad4/5 and GradAux4/5 against Grad of a closure over
// the other arguments, and Compile4/5 against the uncompiled function
// (float64, 1e-14).
func TestFourAndFiveArguments(t *testing.T) {
	type params struct{ W, B *T }
	p := params{f64(0.5, -1, 2), f64(0.25)}
	s, x, y, k := f64(1.5, 0.5, -0.5), f64(0.3, -0.7, 1.1), f64(0.2), f64(2)
	f5 := func(p params, s, x, y, k *T) *T {
		return p.W.Mul(x).Add(s.Mul(k)).Tanh().Sum().Add(p.B).Sub(y).Square().Sum()
	}
	f4 := func(p params, s, x, y *T) *T { return f5(p, s, x, y, k) }
	oracle := transforms.Grad(func(p params) *T { return f5(p, s, x, y, k) })(p)
	v, g5 := transforms.ValueAndGrad5(f5)(p, s, x, y, k)
	_, g4 := transforms.ValueAndGrad4(f4)(p, s, x, y)
	ga4, aux := transforms.GradAux4(func(p params, s, x, y *T) (*T, *T) { return f4(p, s, x, y), s })(p, s, x, y)
	ga5, _ := transforms.GradAux5(func(p params, s, x, y, k *T) (*T, *T) { return f5(p, s, x, y, k), k })(p, s, x, y, k)
	for name, g := range map[string]params{
		"Grad4": transforms.Grad4(f4)(p, s, x, y), "Grad5": transforms.Grad5(f5)(p, s, x, y, k),
		"ValueAndGrad4": g4, "ValueAndGrad5": g5, "GradAux4": ga4, "GradAux5": ga5,
	} {
		near(t, name+" W", g.W.Float64s(), oracle.W.Float64s(), 1e-14)
		near(t, name+" B", g.B.Float64s(), oracle.B.Float64s(), 1e-14)
	}
	near(t, "value", v.Float64s(), f5(p, s, x, y, k).Float64s(), 0)
	near(t, "aux", aux.Float64s(), s.Float64s(), 0)

	// Vmap over x (rows) and y, sharing params, s and k.
	xs := peel.Reshape(f64(0.3, -0.7, 1.1, 0.9, 0.1, -0.4), 2, 3)
	ys := f64(0.2, -0.6)
	got5 := transforms.Vmap5(f5, transforms.InAxes(transforms.NoAxis, transforms.NoAxis, 0, 0, transforms.NoAxis))(p, s, xs, ys, k)
	got4 := transforms.Vmap4(f4, transforms.InAxes(transforms.NoAxis, transforms.NoAxis, 0, 0))(p, s, xs, ys)
	for i := range 2 {
		want := f5(p, s, peel.Select(xs, 0, i), peel.Select(ys, 0, i), k).Item()
		near(t, "Vmap5 lane", []float64{peel.Select(got5, 0, i).Item()}, []float64{want}, 1e-14)
		near(t, "Vmap4 lane", []float64{peel.Select(got4, 0, i).Item()}, []float64{want}, 1e-14)
	}
	// Per-sample gradients of a five-argument loss.
	ps := transforms.Vmap5(transforms.Grad5(f5), transforms.InAxes(transforms.NoAxis, transforms.NoAxis, 0, 0, transforms.NoAxis))(p, s, xs, ys, k)
	for i := range 2 {
		want := transforms.Grad5(f5)(p, s, peel.Select(xs, 0, i), peel.Select(ys, 0, i), k)
		near(t, "Vmap5(Grad5) lane", peel.Select(ps.W, 0, i).Float64s(), want.W.Float64s(), 1e-14)
	}

	// Compile4/5 with a tuple result, unpacked in one line.
	step := func(p params, s, x, y, k *T) tree.Tuple2[params, *T] {
		l, g := transforms.ValueAndGrad5(f5)(p, s, x, y, k)
		return tree.Pack2(tree.Map2(func(p, g *T) *T { return p.Sub(g.Mul(0.1)) }, p, g), l)
	}
	var ins transforms.Inspector
	c5 := transforms.Compile5(step, transforms.Inspect(&ins))
	c4 := transforms.Compile4(func(p params, s, x, y *T) tree.Tuple2[params, *T] { return step(p, s, x, y, k) })
	for range 2 {
		wp, wl := step(p, s, x, y, k).Unpack()
		for name, got := range map[string]tree.Tuple2[params, *T]{"Compile5": c5(p, s, x, y, k), "Compile4": c4(p, s, x, y)} {
			gp, gl := got.Unpack()
			near(t, name+" W", gp.W.Float64s(), wp.W.Float64s(), 1e-14)
			near(t, name+" loss", gl.Float64s(), wl.Float64s(), 1e-14)
		}
	}
	if st := ins.Stats(); st.Calls != 2 || st.Hits != 1 {
		t.Errorf("Compile5 stats %+v, want 2 calls, 1 hit", st)
	}
	if ex := ins.Explain(p, s, x, y, k); !strings.Contains(ex, "tanh") {
		t.Errorf("Explain:\n%s", ex)
	}
	wantPanic(t, "Explain with four arguments", func() { ins.Explain(p, s, x, y) }, "4 arguments for a function of 5")
	wantPanic(t, "Explain with a wrong type", func() { ins.Explain(s, s, x, y, k) }, "argument 0", "transforms_test.params")
	wantPanic(t, "one Inspector twice", func() { transforms.Compile(f64Id, transforms.Inspect(&ins)) }, "attached to another compiled function (transforms.Compile5)")
	var unattached transforms.Inspector
	wantPanic(t, "an unattached Inspector", func() { unattached.Stats() }, "attached to no compiled function")
}

func f64Id(x *T) *T { return x }

// TestAtFormsCompose: the one-argument forms differentiate the argument
// asked for and compose: Jacfwd2At(Jacrev2At(u, 1), 1) is the Hessian
// of u in x (JAX's jacfwd(jacrev(u, argnums=1), argnums=1)), equal to
// Hessian of the closure; under Vmap it gives per-point Laplacians, as
// a PINN needs. Grad2At/Grad3At and Jacrev3At are checked against
// closures too, and a wrong result type or argnum is a *peel.Error.
func TestAtFormsCompose(t *testing.T) {
	type mlp struct{ W1, B1, W2 *T }
	p := mlp{peel.Reshape(f64(0.5, -0.3, 0.8, 0.2, -0.6, 0.4), 2, 3), f64(0.1, -0.2, 0.3), f64(0.7, -0.5, 0.9)}
	u := func(p mlp, x *T) *T { return x.MatMul(p.W1).Add(p.B1).Tanh().MatMul(p.W2) }
	x := f64(0.3, -0.4)
	closure := func(x *T) *T { return u(p, x) }
	hess := transforms.Jacfwd2At[*T](transforms.Jacrev2At[*T](u, 1), 1)
	near(t, "Jacfwd2At(Jacrev2At)", hess(p, x).Float64s(), transforms.Hessian(closure)(x).Float64s(), 1e-14)
	near(t, "Jacrev2At(Jacrev2At)", transforms.Jacrev2At[*T](transforms.Jacrev2At[*T](u, -1), 1)(p, x).Float64s(), transforms.Hessian(closure)(x).Float64s(), 1e-14)
	near(t, "Grad2At", transforms.Grad2At[*T](u, 1)(p, x).Float64s(), transforms.Grad(closure)(x).Float64s(), 1e-14)
	near(t, "Hessian2At", transforms.Hessian2At(u, 1)(p, x).Float64s(), transforms.Hessian(closure)(x).Float64s(), 1e-14)
	g0 := transforms.Grad2At[mlp](u, 0)(p, x)
	near(t, "Grad2At(0)", g0.W1.Float64s(), transforms.Grad2(u)(p, x).W1.Float64s(), 0)

	// The Laplacian at each of a batch of points.
	lap := func(p mlp, x *T) *T { return peel.Trace(hess(p, x)) }
	xs := peel.Reshape(f64(0.3, -0.4, 0.1, 0.9, -0.5, 0.2), 3, 2)
	laps := transforms.Vmap2(lap, transforms.InAxes(transforms.NoAxis, 0))(p, xs)
	for i := range 3 {
		xi := peel.Select(xs, 0, i)
		want := peel.Trace(transforms.Hessian(func(x *T) *T { return u(p, x) })(xi))
		near(t, "Vmap2 Laplacian", []float64{peel.Select(laps, 0, i).Item()}, []float64{want.Item()}, 1e-13)
	}
	// Its gradient with respect to the params (a PINN's training signal).
	gl := transforms.Grad2(func(p mlp, x *T) *T { return lap(p, x) })(p, x)
	eps := 1e-6
	w := p.W2.Float64s()
	w[1] += eps
	up := lap(mlp{p.W1, p.B1, peel.FromFloat64s(w)}, x).Item()
	w[1] -= 2 * eps
	dn := lap(mlp{p.W1, p.B1, peel.FromFloat64s(w)}, x).Item()
	near(t, "Grad of the Laplacian vs finite differences", []float64{gl.W2.Float64s()[1]}, []float64{(up - dn) / (2 * eps)}, 1e-7)

	// Three arguments: jacrev(predict, argnums=2)(w, b, x).
	predict := func(w, b, x *T) *T { return w.MatMul(x).Add(b).Tanh() }
	wm, b := peel.Reshape(f64(0.5, -0.3, 0.8, 0.2), 2, 2), f64(0.1, -0.2)
	near(t, "Jacrev3At", transforms.Jacrev3At[*T](predict, 2)(wm, b, x).Float64s(),
		transforms.Jacrev(func(x *T) *T { return predict(wm, b, x) })(x).Float64s(), 1e-14)
	near(t, "Jacfwd3At", transforms.Jacfwd3At[*T](predict, 1)(wm, b, x).Float64s(),
		transforms.Jacrev(func(b *T) *T { return predict(wm, b, x) })(b).Float64s(), 1e-14)
	near(t, "Hessian3At", transforms.Hessian3At(func(w, b, x *T) *T { return predict(w, b, x).Sum() }, 2)(wm, b, x).Float64s(),
		transforms.Hessian(func(x *T) *T { return predict(wm, b, x).Sum() })(x).Float64s(), 1e-14)
	near(t, "Grad3At", transforms.Grad3At[*T](func(w, b, x *T) *T { return predict(w, b, x).Sum() }, 2)(wm, b, x).Float64s(),
		transforms.Grad(func(x *T) *T { return predict(wm, b, x).Sum() })(x).Float64s(), 1e-14)

	wantPanic(t, "Jacrev2At of the wrong type", func() { transforms.Jacrev2At[*T](u, 0) }, "transforms.Jacrev2At", "argument 0 is a transforms_test.mlp")
	wantPanic(t, "Grad2At out of range", func() { transforms.Grad2At[*T](u, 2) }, "transforms.Grad2At", "argnum")
}
