package transforms_test

import (
	"math"
	"slices"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// hookLoss is Σ tanh(h)·h with h = x·w hooked: the hook sees dL/dh.
func hookLoss(hook func(*T) *T) func(p ckParams) *T {
	return func(p ckParams) *T {
		h := transforms.Hook(peel.MatMul(p.X, p.W1), hook)
		return peel.Sum(peel.Mul(peel.Tanh(h), h))
	}
}

// TestHookScalesAndClips checks hooks written with peel ops against the
// gradient they stand for, eagerly, compiled, under Vmap, with a
// compiled backward and under Checkpoint.
func TestHookScalesAndClips(t *testing.T) {
	p := ckData()
	plain := hookLoss(func(*T) *T { return nil })
	scaled := hookLoss(func(ct *T) *T { return peel.Mul(ct, 3.0) })
	clipped := hookLoss(func(ct *T) *T { return peel.Clip(ct, -0.1, 0.1) })
	// The reference: dL/dh scaled (clipped), propagated to W1 and X by hand.
	ref := func(f func(*T) *T) ckParams {
		h := peel.MatMul(p.X, p.W1)
		dh := f(transforms.Grad(func(h *T) *T { return peel.Sum(peel.Mul(peel.Tanh(h), h)) })(h))
		return ckParams{W1: peel.MatMul(peel.Transpose(p.X), dh), W2: peel.ZerosLike(p.W2), X: peel.MatMul(dh, peel.Transpose(p.W1))}
	}
	for _, c := range []struct {
		name string
		loss func(ckParams) *T
		want ckParams
	}{
		{"none", plain, ref(func(ct *T) *T { return ct })},
		{"scale", scaled, ref(func(ct *T) *T { return peel.Mul(ct, 3.0) })},
		{"clip", clipped, ref(func(ct *T) *T { return peel.Clip(ct, -0.1, 0.1) })},
	} {
		t.Run(c.name, func(t *testing.T) {
			ckNear(t, "eager", transforms.Grad(c.loss)(p), c.want)
			ckNear(t, "Compile(Grad)", transforms.Compile(transforms.Grad(c.loss))(p), c.want)
			ckNear(t, "Grad(Compile)", transforms.Grad(transforms.Compile(c.loss))(p), c.want)
			ckNear(t, "CompileBackward", transforms.Grad(c.loss, transforms.CompileBackward())(p), c.want)
			ckNear(t, "Checkpoint", transforms.Grad(transforms.Checkpoint(c.loss, transforms.MinCut))(p), c.want)
			_, pull := transforms.VJP(c.loss, p)
			ckNear(t, "VJP", pull(peel.Scalar(1.0)), c.want)
			// Vmap(Grad): per-example gradients, each with the hook.
			xs := peel.Stack([]*T{p.X, peel.Mul(p.X, 0.5)}, 0)
			per := transforms.Vmap(func(x *T) ckParams { q := p; q.X = x; return transforms.Grad(c.loss)(q) })(xs)
			q := p
			q.X = peel.Mul(p.X, 0.5)
			second := transforms.Grad(c.loss)(q)
			near(t, "Vmap W1[1]", peel.Index(per.W1, 1).Float64s(), second.W1.Float64s(), 1e-12)
		})
	}
}

// TestHookOrderAndGoCode checks that hooks running Go code see the
// complete cotangent, in the backward pass's order, once per pass.
func TestHookOrderAndGoCode(t *testing.T) {
	var order []string
	var seen []float64
	f := func(x *T) *T {
		a := transforms.Hook(peel.Mul(x, 2.0), func(ct *T) *T {
			order = append(order, "a")
			seen = append(seen, ct.Float64s()...)
			return nil
		})
		// a is used twice: its hook sees the sum of both contributions.
		b := transforms.Hook(peel.Add(peel.Mul(a, a), a), func(ct *T) *T { order = append(order, "b"); return nil })
		return peel.Sum(b)
	}
	x := f64(1, 2)
	g := transforms.Grad(f)(x)
	// d/da of Σ(a² + a) is 2a + 1; a = 2x.
	near(t, "seen", seen, []float64{5, 9}, 0)
	near(t, "grad", g.Float64s(), []float64{10, 18}, 0)
	if !slices.Equal(order, []string{"b", "a"}) {
		t.Errorf("hooks ran in order %v, want [b a] (the reverse of the computation)", order)
	}
	// Forward mode does not run hooks.
	order = nil
	transforms.JVP(f, x, f64(1, 0))
	if len(order) != 0 {
		t.Errorf("JVP ran hooks %v", order)
	}
}

func TestHookErrors(t *testing.T) {
	x := f64(1, 2)
	if transforms.Hook(x, func(ct *T) *T { return ct }) != x {
		t.Error("Hook outside a transform is not x itself")
	}
	wantError(t, func() { transforms.Hook(nil, func(ct *T) *T { return ct }) }, "nil")
	wantError(t, func() { transforms.Hook(x, nil) }, "nil")
	bad := func(x *T) *T { return peel.Sum(transforms.Hook(x, func(*T) *T { return peel.Zeros(peel.Float64, 3) })) }
	wantError(t, func() { transforms.Grad(bad)(x) }, "transforms.Hook", "f64[3]")
}

// TestOnGradient checks post-accumulate gradient hooks: paths, order,
// replacement, and a wrong replacement.
func TestOnGradient(t *testing.T) {
	p := ckData()
	want := transforms.Grad(ckLoss)(p)
	var paths []string
	g := transforms.Grad(ckLoss,
		transforms.OnGradient(func(path string, g *T) *T { paths = append(paths, path); return nil }),
		transforms.OnGradient(func(path string, g *T) *T { return peel.Mul(g, 2.0) }),
	)(p)
	if !slices.Equal(paths, []string{".W1", ".W2", ".X"}) {
		t.Errorf("OnGradient saw paths %v", paths)
	}
	ckNear(t, "doubled", g, ckParams{W1: peel.Mul(want.W1, 2.0), W2: peel.Mul(want.W2, 2.0), X: peel.Mul(want.X, 2.0)})
	gw, _ := transforms.GradArgs2(func(w, b *T) *T { return peel.Sum(peel.Mul(w, b)) },
		transforms.Argnums(0), transforms.OnGradient(func(path string, g *T) *T { paths = append(paths, path); return nil }))(f64(1, 2), f64(3, 4))
	near(t, "GradArgs2", gw.Float64s(), []float64{3, 4}, 0)
	if last := paths[len(paths)-1]; last != "args[0]" {
		t.Errorf("GradArgs2's OnGradient path is %q, want args[0]", last)
	}
	wantError(t, func() {
		transforms.Grad(ckLoss, transforms.OnGradient(func(string, *T) *T { return peel.Scalar(1.0) }))(p)
	}, "OnGradient", ".W1")
}

// TestHookRunsWhenComplete: a hook runs as soon as its value's cotangent
// is complete, not where the reversed computation reaches the hook: two
// parameters hooked at the start of the function and read in the other
// order run their hooks in the order of their last reads, reversed (the
// gradient of a parameter read early in a network is ready late, and
// one read late is ready early: what overlapping a gradient's
// communication with the rest of the backward pass needs).
func TestHookRunsWhenComplete(t *testing.T) {
	type params struct{ A, B *T }
	var order []string
	rec := func(name string) func(*T) *T {
		return func(*T) *T { order = append(order, name); return nil }
	}
	f := func(p params) *T {
		a := transforms.Hook(p.A, rec("a"))
		b := transforms.Hook(p.B, rec("b"))
		y := peel.Sin(peel.Mul(b, 3.0)) // b's last read
		return peel.Sum(peel.Mul(y, a)) // a's last read, later
	}
	p := params{f64(0.5, 1), f64(0.25, -1)}
	for name, grad := range map[string]func(params) params{
		"Grad":          transforms.Grad(f),
		"Compile(Grad)": transforms.Compile(transforms.Grad(f)),
	} {
		order = nil
		g := grad(p)
		if !slices.Equal(order, []string{"a", "b"}) {
			t.Errorf("%s: hooks ran in order %v, want [a b]: a's cotangent is complete first", name, order)
		}
		// d/dA = sin(3B), d/dB = 3·cos(3B)·A.
		near(t, name+" A", g.A.Float64s(), []float64{math.Sin(0.75), math.Sin(-3)}, 1e-12)
		near(t, name+" B", g.B.Float64s(), []float64{3 * math.Cos(0.75) * 0.5, 3 * math.Cos(-3)}, 1e-12)
	}
}
