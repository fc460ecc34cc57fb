package transforms_test

import (
	"math"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

func seq(n int, shape ...int) *T {
	d := make([]float64, n)
	for i := range d {
		d[i] = math.Sin(float64(i)*0.7) * 2
	}
	return peel.FromFloat64s(d, shape...)
}

// loopOracle applies f to each lane of x along axis and stacks along out.
func loopOracle(f func(*T) *T, x *T, axis, out int) *T {
	var lanes []*T
	for i := 0; i < x.Shape()[axis]; i++ {
		lanes = append(lanes, f(peel.Select(x, axis, i)))
	}
	return peel.Stack(lanes, out)
}

func TestVmapAxes(t *testing.T) {
	x := seq(24, 2, 3, 4)
	f := func(v *T) *T { return peel.Softmax(peel.Mul(v, v), -1) }
	for _, in := range []int{0, 1, 2, -1} {
		for _, out := range []int{0, 1, -1} {
			got := transforms.Vmap(f, transforms.InAxes(in), transforms.OutAxes(out))(x)
			want := loopOracle(f, x, (in+3)%3, (out+3)%3)
			near(t, "vmap axes", got.Float64s(), want.Float64s(), 1e-12)
		}
	}
}

func TestVmapNestedAndUnbatched(t *testing.T) {
	x := seq(24, 2, 3, 4)
	y := seq(2, 2)
	f := func(a *T) *T { return peel.Add(peel.Sum(peel.Mul(a, y)), a) } // y captured, unbatched
	inner := transforms.Vmap(f, transforms.InAxes(1))
	outer := transforms.Vmap(inner, transforms.InAxes(2), transforms.OutAxes(-1))
	got := outer(x) // outer maps axis 2 of x; inner axis 1 of the [2,3] lanes
	want := loopOracle(func(l *T) *T { return loopOracle(f, l, 1, 0) }, x, 2, 2)
	near(t, "nested", got.Float64s(), want.Float64s(), 1e-12)
	// An output that does not depend on the mapped input is broadcast.
	c := transforms.Vmap(func(a *T) *T { return y })(x)
	if s := c.Shape(); len(s) != 2 || s[0] != 2 || s[1] != 2 {
		t.Fatalf("broadcast output shape %v", s)
	}
	// Trees: a struct with an unmapped field, and ChunkSize.
	type in struct{ X, W *T }
	g := func(p in) *T { return peel.MatMul(p.W, p.X) }
	w := seq(12, 3, 4)
	batch := seq(20, 5, 4)
	got2 := transforms.Vmap(g, transforms.InAxes(map[string]any{"X": 0, "W": transforms.NoAxis}), transforms.ChunkSize(2))(in{X: batch, W: w})
	want2 := loopOracle(func(v *T) *T { return peel.MatMul(w, v) }, batch, 0, 0)
	near(t, "struct in axes + chunks", got2.Float64s(), want2.Float64s(), 1e-12)
}

func TestVmapComposesWithAutodiff(t *testing.T) {
	// Per-sample gradients of a 2-layer MLP with softmax cross-entropy.
	type params struct{ W1, B1, W2 *T }
	p := params{W1: seq(12, 4, 3), B1: seq(3, 3), W2: seq(6, 3, 2)}
	xs := seq(20, 5, 4)
	labels := peel.FromInt64s([]int64{0, 1, 1, 0, 1})
	loss := func(p params, x, label *T) *T {
		h := peel.Tanh(peel.Add(peel.MatMul(x, p.W1), p.B1))
		logits := peel.MatMul(h, p.W2)
		return peel.Neg(peel.Sum(peel.Mul(peel.LogSoftmax(logits, -1), peel.OneHot(label, 2, peel.Float64))))
	}
	type sample struct{ X, L *T }
	perSample := transforms.Vmap(func(s sample) params {
		return transforms.Grad(func(p params) *T { return loss(p, s.X, s.L) })(p)
	})(sample{X: xs, L: labels})
	for i := 0; i < 5; i++ {
		g := transforms.Grad(func(p params) *T { return loss(p, peel.Select(xs, 0, i), peel.Select(labels, 0, i)) })(p)
		near(t, "per-sample W1", peel.Select(perSample.W1, 0, i).Float64s(), g.W1.Float64s(), 1e-12)
		near(t, "per-sample W2", peel.Select(perSample.W2, 0, i).Float64s(), g.W2.Float64s(), 1e-12)
	}
	// Grad of Vmap.
	h := func(x *T) *T {
		return peel.Sum(transforms.Vmap(func(r *T) *T { return peel.Sum(peel.Sin(r)) })(x))
	}
	gx := transforms.Grad(h)(xs)
	want := peel.Cos(xs)
	near(t, "grad of vmap", gx.Float64s(), want.Float64s(), 1e-12)
	// Vmap of JVP and of VJP.
	vj := transforms.Vmap(func(r *T) *T {
		_, tg := transforms.JVP(peel.Sin, r, peel.OnesLike(r))
		return tg
	})(xs)
	near(t, "vmap of jvp", vj.Float64s(), want.Float64s(), 1e-12)
	vv := transforms.Vmap(func(r *T) *T {
		_, pb := transforms.VJP(peel.Sin, r)
		return pb(peel.OnesLike(r))
	})(xs)
	near(t, "vmap of vjp", vv.Float64s(), want.Float64s(), 1e-12)
	// Vmap(Vmap(Grad)) and Vmap(Grad(Grad)).
	cube := func(v *T) *T { return peel.Sum(peel.Mul(peel.Square(v), v)) }
	x3 := seq(24, 2, 3, 4)
	vvg := transforms.Vmap(transforms.Vmap(transforms.Grad(cube)))(x3)
	near(t, "vmap vmap grad", vvg.Float64s(), peel.Mul(peel.Square(x3), 3).Float64s(), 1e-12)
	gg := transforms.Vmap(transforms.Grad(func(v *T) *T { return peel.Sum(transforms.Grad(cube)(v)) }))(xs)
	near(t, "vmap grad grad", gg.Float64s(), peel.Mul(xs, 6).Float64s(), 1e-12)
	// Hessian via vmap equals the loop of Hessians.
	hs := transforms.Vmap(transforms.Hessian(func(v *T) *T { return peel.Sum(peel.Exp(peel.Mul(v, 0.3))) }))(xs)
	for i := 0; i < 5; i++ {
		hi := transforms.Hessian(func(v *T) *T { return peel.Sum(peel.Exp(peel.Mul(v, 0.3))) })(peel.Select(xs, 0, i))
		near(t, "vmap hessian", peel.Select(hs, 0, i).Float64s(), hi.Float64s(), 1e-12)
	}
}

func TestJacobianChunks(t *testing.T) {
	w := seq(12, 3, 4)
	f := func(v *T) *T { return peel.Tanh(peel.MatMul(w, v)) }
	x := seq(4, 4)
	full := transforms.Jacrev(f)(x)
	for _, c := range []int{1, 2, 3, 5} {
		near(t, "jacrev chunk", transforms.Jacrev(f, transforms.ChunkSize(c))(x).Float64s(), full.Float64s(), 1e-12)
		near(t, "jacfwd chunk", transforms.Jacfwd(f, transforms.ChunkSize(c))(x).Float64s(), full.Float64s(), 1e-12)
	}
}

func TestVmapErrors(t *testing.T) {
	x := seq(6, 2, 3)
	wantError(t, func() {
		transforms.Vmap(func(xs []*T) *T { return peel.Add(xs[0], xs[1]) })([]*T{x, seq(6, 3, 2)})
	}, "different sizes", "leaf [0]: 2, leaf [1]: 3")
	// Parameters mapped with the batch by mistake: the sizes disagree
	// across arguments, and the error says which InAxes maps only the
	// batch.
	type mlp struct{ W, B *T }
	p := mlp{W: seq(12, 4, 3), B: seq(3, 3)}
	batch, labels := seq(30, 5, 6), seq(5, 5)
	wantError(t, func() {
		transforms.Vmap3(func(p mlp, x, y *T) *T { return peel.Sum(x) })(p, batch, labels)
	}, "different sizes", "leaf args[0].W: 4", "leaf args[1]: 5", "transforms.InAxes(transforms.NoAxis, 0, 0)")
	// The batch may share a size with a parameter: the argument whose
	// leaves agree stays mapped.
	wantError(t, func() {
		transforms.Vmap2(func(p mlp, x *T) *T { return x })(p, seq(20, 4, 5))
	}, "different sizes", "transforms.InAxes(transforms.NoAxis, 0)")
	// One argument (a tree): nothing to suggest.
	if err := peel.Catch(func() {
		transforms.Vmap(func(xs []*T) *T { return xs[0] })([]*T{x, seq(6, 3, 2)})
	}); err == nil || strings.Contains(err.Error(), "InAxes(") {
		t.Errorf("one argument of two sizes: %v", err)
	}
	wantError(t, func() { transforms.Vmap(peel.Sin, transforms.InAxes(2))(x) }, "in axis 2", "out of range")
	wantError(t, func() {
		type s struct {
			X    *T
			Name string
		}
		transforms.Vmap(func(v s) *T { return v.X }, transforms.InAxes(map[string]any{"X": 0, "Name": 0}))(s{X: x, Name: "a"})
	}, "Name", "holds no tensor")
	wantError(t, func() { transforms.Vmap(func(v *T) *T { _ = v.Float64s(); return v })(x) }, "traced tensor", "[in vmap]")
	wantError(t, func() { transforms.Vmap(peel.Sin, transforms.ChunkSize(0))(x) }, "ChunkSize must be positive")
	wantError(t, func() { transforms.Vmap(peel.Sin, transforms.InAxes(transforms.NoAxis))(x) }, "AxisSize")
	// The motivating case: a write of a batched value into a tensor
	// created inside the function.
	wantError(t, func() {
		transforms.Vmap(func(v *T) *T {
			y := peel.Zeros(peel.Float64, 5)
			peel.CopyInto(peel.Narrow(y, 0, 1, 3), v)
			return y
		})(x)
	}, "peel.CopyInto", "not batched at this level", "Functionalize", "[in vmap]")
	// In-place into a batched destination works.
	got := transforms.Vmap(func(v *T) *T {
		y := peel.Clone(v)
		peel.AddInPlace(peel.Narrow(y, 0, 1, 2), 10.0)
		return y
	})(x)
	near(t, "in-place into batched", got.Float64s(), peel.Add(x, peel.FromFloat64s([]float64{0, 10, 10})).Float64s(), 0)
	// AxisSize with no mapped input broadcasts.
	b := transforms.Vmap(func(v *T) *T { return peel.Exp(v) }, transforms.InAxes(transforms.NoAxis), transforms.AxisSize(3))(x)
	if s := b.Shape(); s[0] != 3 {
		t.Errorf("AxisSize result shape %v", s)
	}
}

func TestCustomRulesUnderVmap(t *testing.T) {
	log1pexp := transforms.CustomVJP(
		func(x *T) *T { return peel.Log(peel.Add(peel.Exp(x), 1)) },
		func(x *T) (*T, []*T) { return peel.Softplus(x), []*T{x} },
		func(res []*T, ct *T) *T { return peel.Mul(ct, peel.Sigmoid(res[0])) },
	)
	x := peel.FromFloat64s([]float64{0, 1000, -1000, 2}, 2, 2)
	want := []float64{0.5, 1, 0, 1 / (1 + math.Exp(-2))}
	f := func(r *T) *T { return peel.Sum(log1pexp(r)) }
	// Vmap(Grad): the rule is used per lane.
	near(t, "vmap(grad(custom vjp))", transforms.Vmap(transforms.Grad(f))(x).Float64s(), want, 1e-12)
	// Grad(Vmap): the rule is batched, not decomposed (the naive
	// derivative would be NaN at 1000).
	g := transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Vmap(func(r *T) *T { return log1pexp(r) })(x)) })(x)
	near(t, "grad(vmap(custom vjp))", g.Float64s(), want, 1e-12)
	// A custom JVP rule that doubles the derivative is used under vmap.
	sq := transforms.CustomJVP(
		func(x *T) *T { return peel.Square(x) },
		func(p, tg *T) (*T, *T) { return peel.Square(p), peel.Mul(peel.Mul(p, 4), tg) },
	)
	y := f64(1, 2, 3)
	gv := transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Vmap(func(r *T) *T { return sq(r) })(x)) })(y)
	near(t, "grad(vmap(custom jvp))", gv.Float64s(), []float64{4, 8, 12}, 0)
	_, jv := transforms.JVP(func(x *T) *T { return transforms.Vmap(func(r *T) *T { return sq(r) })(x) }, y, f64(1, 1, 1))
	near(t, "jvp(vmap(custom jvp))", jv.Float64s(), []float64{4, 8, 12}, 0)
	// An operand shared by the lanes gets the sum of their cotangents.
	mulc := transforms.CustomVJP(
		func(xs []*T) *T { return peel.Mul(xs[0], xs[1]) },
		func(xs []*T) (*T, []*T) { return peel.Mul(xs[0], xs[1]), xs },
		func(res []*T, ct *T) []*T { return []*T{peel.Mul(ct, res[1]), peel.Mul(ct, res[0])} },
	)
	w := f64(2, 3)
	gw := transforms.Grad(func(w *T) *T {
		return peel.Sum(transforms.Vmap(func(r *T) *T { return mulc([]*T{r, w}) })(x))
	})(w)
	near(t, "shared operand", gw.Float64s(), peel.Sum(x, 0).Float64s(), 1e-12)
}
