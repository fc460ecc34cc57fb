package transforms_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// auxStats is the auxiliary data of the has_aux tests: a float tensor
// computed from x, an int tensor, a nil tensor and a static field.
type auxStats struct {
	Mean  *T
	Count *T
	None  *T
	Tag   string
}

// auxFn returns tanh(x)·x² and statistics of x as aux.
func auxFn(x *T) (*T, auxStats) {
	y := peel.Mul(peel.Tanh(x), peel.Square(x))
	return y, auxStats{Mean: peel.Mean(peel.Exp(x)), Count: peel.FromInt64s([]int64{int64(x.Size())}), Tag: "stats"}
}

func auxPlain(x *T) *T { y, _ := auxFn(x); return y }

// checkAux compares aux with the eager one and checks its leaves are
// values, not tracers.
func checkAux(t *testing.T, what string, got auxStats, x *T) {
	t.Helper()
	_, want := auxFn(x)
	if got.Tag != "stats" || got.None != nil {
		t.Errorf("%s: static field %q / nil leaf %v not kept", what, got.Tag, got.None)
	}
	if !got.Mean.IsConcrete() || !got.Count.IsConcrete() {
		t.Fatalf("%s: aux leaves are not concrete values", what)
	}
	near(t, what+" aux Mean", got.Mean.Float64s(), want.Mean.Float64s(), 0)
	if got.Count.Int64s()[0] != want.Count.Int64s()[0] {
		t.Errorf("%s: aux Count %v, want %v", what, got.Count, want.Count)
	}
}

// TestAuxForms checks VJPAux, JVPAux and LinearizeAux (issue 25 item
// 14) against VJP, JVP and Linearize of the function without aux, and
// against central finite differences (float64; 1e-12 against the
// non-aux forms, 1e-7 against differences), with an aux of float, int,
// nil and static leaves that comes back as eager values; and under
// Vmap against per-lane calls.
func TestAuxForms(t *testing.T) {
	x := f64(0.5, -1.25, 2)
	dir := f64(0.3, -0.7, 1.1)
	ct := f64(1.5, 0.25, -2)
	// Finite differences: the directional derivative of auxPlain along
	// dir, and the gradient of <ct, auxPlain(x)>.
	fdDir := make([]float64, 3)
	const eps = 1e-6
	xp, xm := peel.Add(x, peel.Mul(dir, eps)), peel.Sub(x, peel.Mul(dir, eps))
	for i, p := range auxPlain(xp).Float64s() {
		fdDir[i] = (p - auxPlain(xm).Float64s()[i]) / (2 * eps)
	}
	fdCt := fdGrad(func(x *T) *T { return peel.Sum(peel.Mul(auxPlain(x), ct)) }, x.Float64s(), 3)
	value := auxPlain(x).Float64s()

	t.Run("VJPAux", func(t *testing.T) {
		out, pb, aux := transforms.VJPAux(auxFn, x)
		wantOut, wantPb := transforms.VJP(auxPlain, x)
		near(t, "value", out.Float64s(), wantOut.Float64s(), 0)
		near(t, "pullback", pb(ct).Float64s(), wantPb(ct).Float64s(), 1e-12)
		near(t, "pullback vs differences", pb(ct).Float64s(), fdCt, 1e-7)
		near(t, "pullback again", pb(peel.Neg(ct)).Float64s(), peel.Neg(wantPb(ct)).Float64s(), 1e-12)
		checkAux(t, "VJPAux", aux, x)
		wantError(t, func() { pb(f64(1, 2)) }, "transforms.VJPAux", "cotangent")
	})
	t.Run("JVPAux", func(t *testing.T) {
		out, tan, aux := transforms.JVPAux(auxFn, x, dir)
		wantOut, wantTan := transforms.JVP(auxPlain, x, dir)
		near(t, "value", out.Float64s(), wantOut.Float64s(), 0)
		near(t, "tangent", tan.Float64s(), wantTan.Float64s(), 1e-12)
		near(t, "tangent vs differences", tan.Float64s(), fdDir, 1e-7)
		checkAux(t, "JVPAux", aux, x)
		wantError(t, func() { transforms.JVPAux(auxFn, x, f64(1, 2)) }, "transforms.JVPAux", "tangent")
	})
	t.Run("LinearizeAux", func(t *testing.T) {
		out, lin, aux := transforms.LinearizeAux(auxFn, x)
		wantOut, wantLin := transforms.Linearize(auxPlain, x)
		near(t, "value", out.Float64s(), wantOut.Float64s(), 0)
		near(t, "tangent", lin(dir).Float64s(), wantLin(dir).Float64s(), 1e-12)
		near(t, "tangent vs differences", lin(dir).Float64s(), fdDir, 1e-7)
		near(t, "tangent along x", lin(x).Float64s(), wantLin(x).Float64s(), 1e-12)
		checkAux(t, "LinearizeAux", aux, x)
		wantError(t, func() { lin(f64(1, 2)) }, "transforms.LinearizeAux", "tangent")
	})
	t.Run("nil and tensor aux", func(t *testing.T) {
		_, _, none := transforms.VJPAux(func(x *T) (*T, *T) { return auxPlain(x), nil }, x)
		if none != nil {
			t.Errorf("nil aux came back as %v", none)
		}
		_, tan, sq := transforms.JVPAux(func(x *T) (*T, *T) { return auxPlain(x), peel.Square(x) }, x, dir)
		near(t, "tangent", tan.Float64s(), fdDir, 1e-7)
		near(t, "tensor aux", sq.Float64s(), peel.Square(x).Float64s(), 0)
		out, _, _ := transforms.LinearizeAux(func(x *T) (*T, string) { return auxPlain(x), "only static" }, x)
		near(t, "value with static aux", out.Float64s(), value, 0)
		type hidden struct{ t *T }
		wantError(t, func() {
			transforms.VJPAux(func(x *T) (*T, hidden) { return x, hidden{x} }, x)
		}, "transforms.VJPAux", "unexported field")
	})
	// Under Vmap: per-lane values, tangents and aux.
	t.Run("Vmap", func(t *testing.T) {
		xs := peel.Stack([]*T{x, peel.Neg(x), peel.Mul(x, 0.5)}, 0)
		type res struct{ Out, Tan, Ct, Mean *T }
		got := transforms.Vmap(func(x *T) res {
			out, tan, aux := transforms.JVPAux(auxFn, x, dir)
			_, pb, _ := transforms.VJPAux(auxFn, x)
			return res{out, tan, pb(ct), aux.Mean}
		})(xs)
		for i := 0; i < 3; i++ {
			xi := peel.Index(xs, i)
			out, tan := transforms.JVP(auxPlain, xi, dir)
			_, pb := transforms.VJP(auxPlain, xi)
			_, aux := auxFn(xi)
			near(t, "lane value", peel.Index(got.Out, i).Float64s(), out.Float64s(), 1e-12)
			near(t, "lane tangent", peel.Index(got.Tan, i).Float64s(), tan.Float64s(), 1e-12)
			near(t, "lane cotangent", peel.Index(got.Ct, i).Float64s(), pb(ct).Float64s(), 1e-12)
			near(t, "lane aux", peel.Index(got.Mean, i).Float64s(), aux.Mean.Float64s(), 1e-12)
		}
	})
}

// TestValueAndGradArgs checks ValueAndGradArgs2/3 (issue 25 item 14)
// against ValueAndGrad of closures and finite differences.
func TestValueAndGradArgs(t *testing.T) {
	a, b, c := f64(0.5, -1, 2), f64(1.5, 0.25, -2), f64(-0.5, 0.75, 1)
	f3 := func(a, b, c *T) *T { return peel.Sum(peel.Mul(peel.Mul(peel.Sin(a), peel.Square(b)), peel.Exp(c))) }
	f2 := func(a, b *T) *T { return f3(a, b, c) }
	v, ga, gb := transforms.ValueAndGradArgs2(f2)(a, b)
	wv, wa := transforms.ValueAndGrad(func(a *T) *T { return f2(a, b) })(a)
	near(t, "value", v.Float64s(), wv.Float64s(), 0)
	near(t, "grad a", ga.Float64s(), wa.Float64s(), 1e-14)
	near(t, "grad b", gb.Float64s(), fdGrad(func(b *T) *T { return f2(a, b) }, b.Float64s(), 3), 1e-7)
	v, ga, gb, gc := transforms.ValueAndGradArgs3(f3, transforms.Argnums(2, 0))(a, b, c)
	near(t, "value 3", v.Float64s(), f3(a, b, c).Float64s(), 0)
	if gb != nil {
		t.Errorf("ValueAndGradArgs3 Argnums(2, 0): b has a gradient %v", gb)
	}
	near(t, "grad a 3", ga.Float64s(), wa.Float64s(), 1e-14)
	near(t, "grad c 3", gc.Float64s(), fdGrad(func(c *T) *T { return f3(a, b, c) }, c.Float64s(), 3), 1e-7)
	wantError(t, func() { transforms.ValueAndGradArgs2(f2, transforms.Argnums(5))(a, b) }, "transforms.ValueAndGradArgs2", "out of range")
}
