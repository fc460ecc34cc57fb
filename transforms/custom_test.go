package transforms_test

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// The custom-rule tests use one layer, written three ways: plainly
// (the oracle: its derivatives are peel's own), with a CustomVJP rule and
// with a CustomJVP rule, both derived by hand. The argument holds a
// float matrix and vector, an int index vector and static fields; the
// result holds float leaves of three ranks, an int leaf and a static
// field; the VJP rule's residuals hold tensors of both kinds and static
// values.

type layerIn struct {
	W     *T // [m, n]
	X     *T // [n]
	Idx   *T // int64 [k], indices into [0, m)
	Scale float64
	Tag   string
}

type layerOut struct {
	Y   *T // Scale·tanh(W·X), [m]
	Sel *T // Y at Idx, [k]
	Z   *T // Σ X², scalar
	Idx *T // the argument's Idx
	Tag string
}

type layerRes struct {
	H     *T // tanh(W·X)
	W, X  *T
	Idx   *T
	Scale float64
	Note  string
}

// layerPlain is the oracle.
func layerPlain(a layerIn) layerOut {
	h := peel.Tanh(peel.Sum(peel.Mul(a.W, a.X), 1))
	y := peel.Mul(h, a.Scale)
	return layerOut{Y: y, Sel: peel.Take(y, a.Idx, 0), Z: peel.Sum(peel.Square(a.X)), Idx: a.Idx, Tag: a.Tag}
}

// layerCounts counts the runs of each user function of a custom layer.
type layerCounts struct{ f, fwd, bwd, jvp atomic.Int64 }

func (c *layerCounts) reset() {
	c.f.Store(0)
	c.fwd.Store(0)
	c.bwd.Store(0)
	c.jvp.Store(0)
}

func (c *layerCounts) String() string {
	return fmt.Sprintf("f %d, fwd %d, bwd %d, jvp %d", c.f.Load(), c.fwd.Load(), c.bwd.Load(), c.jvp.Load())
}

// layerFwd is the VJP rule's forward pass.
func layerFwd(a layerIn) (layerOut, layerRes) {
	h := peel.Tanh(peel.Sum(peel.Mul(a.W, a.X), 1))
	y := peel.Mul(h, a.Scale)
	out := layerOut{Y: y, Sel: peel.Take(y, a.Idx, 0), Z: peel.Sum(peel.Square(a.X)), Idx: a.Idx, Tag: a.Tag}
	return out, layerRes{H: h, W: a.W, X: a.X, Idx: a.Idx, Scale: a.Scale, Note: "saved"}
}

// layerBwd is the VJP rule's backward pass: the Idx cotangent is left
// nil and the static fields zero.
func layerBwd(r layerRes, ct layerOut) layerIn {
	if r.Note != "saved" || ct.Idx == nil || ct.Idx.DType() != peel.Int64 {
		panic(fmt.Sprintf("bwd: residual note %q, Idx cotangent %s", r.Note, ct.Idx.TypeString()))
	}
	m := r.W.Shape()[0]
	cy := peel.IndexAdd(ct.Y, r.Idx, ct.Sel, 0)
	g := peel.Mul(peel.Mul(cy, r.Scale), peel.Sub(1.0, peel.Square(r.H)))
	dW := peel.Outer(g, r.X)
	dX := peel.Add(peel.Sum(peel.Mul(r.W, peel.Reshape(g, m, 1)), 0), peel.Mul(peel.Mul(r.X, 2.0), ct.Z))
	return layerIn{W: dW, X: dX}
}

// layerJVP is the JVP rule; the Idx tangent must be an int zero and the
// static fields those of the primal.
func layerJVP(p, t layerIn) (layerOut, layerOut) {
	if t.Idx == nil || t.Idx.DType() != peel.Int64 || t.Scale != p.Scale || t.Tag != p.Tag {
		panic(fmt.Sprintf("jvp: Idx tangent %s, static fields %v %q", t.Idx.TypeString(), t.Scale, t.Tag))
	}
	h := peel.Tanh(peel.Sum(peel.Mul(p.W, p.X), 1))
	dpre := peel.Add(peel.Sum(peel.Mul(t.W, p.X), 1), peel.Sum(peel.Mul(p.W, t.X), 1))
	y := peel.Mul(h, p.Scale)
	dy := peel.Mul(peel.Mul(dpre, peel.Sub(1.0, peel.Square(h))), p.Scale)
	out := layerOut{Y: y, Sel: peel.Take(y, p.Idx, 0), Z: peel.Sum(peel.Square(p.X)), Idx: p.Idx, Tag: p.Tag}
	tan := layerOut{Y: dy, Sel: peel.Take(dy, p.Idx, 0), Z: peel.Sum(peel.Mul(peel.Mul(p.X, 2.0), t.X)), Tag: p.Tag}
	return out, tan
}

// customLayers returns the layer with a VJP rule and with a JVP rule,
// counting the runs of their functions in c.
func customLayers(c *layerCounts) (vjp, jvp func(layerIn) layerOut) {
	vjp = transforms.CustomVJP(
		func(a layerIn) layerOut { c.f.Add(1); return layerPlain(a) },
		func(a layerIn) (layerOut, layerRes) { c.fwd.Add(1); return layerFwd(a) },
		func(r layerRes, ct layerOut) layerIn { c.bwd.Add(1); return layerBwd(r, ct) },
	)
	jvp = transforms.CustomJVP(
		func(a layerIn) layerOut { c.f.Add(1); return layerPlain(a) },
		func(p, t layerIn) (layerOut, layerOut) { c.jvp.Add(1); return layerJVP(p, t) },
	)
	return vjp, jvp
}

// layerArg is a layer argument with m outputs, n inputs and k indices,
// its values drawn from seed.
func layerArg(m, n, k int, seed float64) layerIn {
	w := make([]float64, m*n)
	for i := range w {
		w[i] = math.Sin(seed + 0.7*float64(i))
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = math.Cos(seed + 1.3*float64(i))
	}
	idx := make([]int64, k)
	for i := range idx {
		idx[i] = int64((i*2 + 1) % m)
	}
	return layerIn{W: peel.FromFloat64s(w, m, n), X: peel.FromFloat64s(x, n), Idx: peel.FromInt64s(idx, k), Scale: 1.5 + seed/10, Tag: "layer"}
}

// layerLoss weighs every float leaf of the result, so every cotangent
// path of the rules is used.
func layerLoss(o layerOut) *T {
	m, k := o.Y.Shape()[len(o.Y.Shape())-1], o.Sel.Shape()[len(o.Sel.Shape())-1]
	cy := peel.Add(peel.Arange(peel.Float64, 0, float64(m), 1), 0.5)
	cs := peel.Sub(1.0, peel.Arange(peel.Float64, 0, float64(k), 1))
	return peel.Add(peel.Add(peel.Sum(peel.Mul(o.Y, cy)), peel.Sum(peel.Mul(o.Sel, cs))), peel.Mul(peel.Sum(o.Z), 3.0))
}

// layerParams are the float leaves of a layer argument, which Grad
// differentiates (Idx and the static fields are held).
type layerParams struct{ W, X *T }

func withParams(a layerIn, p layerParams) layerIn {
	a.W, a.X = p.W, p.X
	return a
}

// treeNear compares two trees leaf by leaf (structure, shapes, dtypes,
// values within tol) and reports the first difference.
func treeNear(got, want any, tol float64) string {
	if ok, msg := tree.SameStructure(got, want); !ok {
		return "structure: " + msg
	}
	gl, wl := tree.Leaves(got), tree.Leaves(want)
	paths := tree.Paths(want)
	for i := range gl {
		if !sameAval(gl[i], wl[i]) {
			return fmt.Sprintf("leaf %s is %s, want %s", paths[i], gl[i].TypeString(), wl[i].TypeString())
		}
		g, w := peel.AsType(gl[i], peel.Float64).Float64s(), peel.AsType(wl[i], peel.Float64).Float64s()
		for j := range g {
			if math.Abs(g[j]-w[j]) > tol*math.Max(1, math.Abs(w[j])) || math.IsNaN(g[j]) != math.IsNaN(w[j]) {
				return fmt.Sprintf("leaf %s element %d is %v, want %v (all: %v vs %v)", paths[i], j, g[j], w[j], g, w)
			}
		}
	}
	return ""
}

func sameAval(a, b *T) bool {
	if a.DType() != b.DType() || a.Rank() != b.Rank() {
		return false
	}
	for i, d := range a.Shape() {
		if b.Shape()[i] != d {
			return false
		}
	}
	return true
}

// checkNear fails t when got and want (run with panics caught) differ.
func checkNear(t *testing.T, got, want func() any, tol float64) {
	t.Helper()
	var g, w any
	if err := peel.Catch(func() { w = want() }); err != nil {
		t.Fatalf("oracle: %v", err)
	}
	if err := peel.Catch(func() { g = got() }); err != nil {
		t.Fatalf("%v", err)
	}
	if msg := treeNear(g, w, tol); msg != "" {
		t.Error(msg)
	}
}

// intZeros is an int64 zero of x's shape (the cotangent or tangent of an
// int leaf).
func intZeros(x *T) *T { return peel.Zeros(peel.Int64, x.Shape()...) }

// layerCotangent is a cotangent for the layer's result at a.
func layerCotangent(a layerIn, seed float64) layerOut {
	o := layerPlain(a)
	return layerOut{
		Y:   peel.Cos(peel.Add(o.Y, seed)),
		Sel: peel.Sin(peel.Add(o.Sel, seed)),
		Z:   peel.Full(peel.Float64, seed-0.5),
		Idx: intZeros(a.Idx),
		Tag: o.Tag,
	}
}

// layerTangent is a tangent for a layer argument.
func layerTangent(a layerIn, seed float64) layerIn {
	return layerIn{W: peel.Sin(peel.Add(a.W, seed)), X: peel.Cos(peel.Add(a.X, 2*seed)), Idx: intZeros(a.Idx), Scale: a.Scale, Tag: a.Tag}
}

// TestCustomTreeRules checks both rules on the tree layer against the
// plain layer's derivatives under every transform.
func TestCustomTreeRules(t *testing.T) {
	var c layerCounts
	vjpLayer, jvpLayer := customLayers(&c)
	a := layerArg(3, 2, 4, 0.3)
	p := layerParams{a.W, a.X}
	lossOf := func(layer func(layerIn) layerOut) func(layerParams) *T {
		return func(p layerParams) *T { return layerLoss(layer(withParams(a, p))) }
	}
	// A scalar function of X alone, for the Jacobians and Hessians.
	ofX := func(layer func(layerIn) layerOut) func(*T) *T {
		return func(x *T) *T { a := a; a.X = x; return layerLoss(layer(a)) }
	}
	yOfX := func(layer func(layerIn) layerOut) func(*T) *T {
		return func(x *T) *T { a := a; a.X = x; return layer(a).Y }
	}
	// Vmap over a batch of X (W, Idx and the static fields shared), and
	// over a batch of whole arguments (W and Idx mapped too).
	const batch = 3
	xs := peel.Stack([]*T{layerArg(3, 2, 4, 1).X, layerArg(3, 2, 4, 2).X, layerArg(3, 2, 4, 3).X}, 0)
	args := []layerIn{layerArg(3, 2, 4, 1.1), layerArg(3, 2, 4, 2.2), layerArg(3, 2, 4, 3.3)}
	args[1].Idx = peel.FromInt64s([]int64{2, 2, 0, 1}, 4)
	stacked := tree.Stack(args)
	type vmapIn struct{ W, X, Idx *T }
	fromVmapIn := func(v vmapIn, a layerIn) layerIn { a.W, a.X, a.Idx = v.W, v.X, v.Idx; return a }
	for _, layer := range []struct {
		name string
		f    func(layerIn) layerOut
	}{{"CustomVJP", vjpLayer}, {"CustomJVP", jvpLayer}} {
		cases := []struct {
			name      string
			got, want func() any
		}{
			{"call", func() any { return layer.f(a) }, func() any { return layerPlain(a) }},
			{"Grad", func() any { return transforms.Grad(lossOf(layer.f))(p) }, func() any { return transforms.Grad(lossOf(layerPlain))(p) }},
			{"ValueAndGrad", func() any {
				v, g := transforms.ValueAndGrad(lossOf(layer.f))(p)
				return []any{v, g}
			}, func() any {
				v, g := transforms.ValueAndGrad(lossOf(layerPlain))(p)
				return []any{v, g}
			}},
			{"VJP", func() any {
				o, pb := transforms.VJP(layer.f, a)
				return []any{o, pb(layerCotangent(a, 0.2))}
			}, func() any {
				o, pb := transforms.VJP(layerPlain, a)
				return []any{o, pb(layerCotangent(a, 0.2))}
			}},
			{"Grad of Grad", func() any {
				return transforms.Grad(func(x *T) *T { return peel.Sum(peel.Square(transforms.Grad(ofX(layer.f))(x))) })(a.X)
			}, func() any {
				return transforms.Grad(func(x *T) *T { return peel.Sum(peel.Square(transforms.Grad(ofX(layerPlain))(x))) })(a.X)
			}},
			{"Jacrev", func() any { return transforms.Jacrev(yOfX(layer.f))(a.X) }, func() any { return transforms.Jacrev(yOfX(layerPlain))(a.X) }},
			{"Hessian", func() any { return transforms.Hessian(ofX(layer.f))(a.X) }, func() any { return transforms.Hessian(ofX(layerPlain))(a.X) }},
			{"Vmap", func() any {
				return transforms.Vmap(func(x *T) layerOut { a := a; a.X = x; return layer.f(a) })(xs)
			}, func() any {
				o := layerPlain(a)
				ys, sels, zs := []*T{}, []*T{}, []*T{}
				for i := 0; i < batch; i++ {
					a := a
					a.X = peel.Take(xs, peel.FromInt64s([]int64{int64(i)}), 0)
					a.X = peel.Reshape(a.X, 2)
					l := layerPlain(a)
					ys, sels, zs = append(ys, l.Y), append(sels, l.Sel), append(zs, l.Z)
				}
				return layerOut{Y: peel.Stack(ys, 0), Sel: peel.Stack(sels, 0), Z: peel.Stack(zs, 0), Idx: peel.Stack([]*T{a.Idx, a.Idx, a.Idx}, 0), Tag: o.Tag}
			}},
			{"Vmap of whole arguments", func() any {
				return tree.Unstack(transforms.Vmap(func(v vmapIn) layerOut { return layer.f(fromVmapIn(v, args[0])) })(vmapIn{stacked.W, stacked.X, stacked.Idx}))
			}, func() any {
				outs := make([]layerOut, batch)
				for i, a := range args {
					a.Scale, a.Tag = args[0].Scale, args[0].Tag
					outs[i] = layerPlain(a)
				}
				return outs
			}},
			{"Vmap of Grad", func() any {
				return transforms.Vmap(transforms.Grad(ofX(layer.f)))(xs)
			}, func() any {
				rows := make([]*T, batch)
				for i := range rows {
					rows[i] = transforms.Grad(ofX(layerPlain))(peel.Reshape(peel.Take(xs, peel.FromInt64s([]int64{int64(i)}), 0), 2))
				}
				return peel.Stack(rows, 0)
			}},
			{"Vmap of Grad, batched", func() any {
				return tree.Unstack(transforms.Vmap(func(v vmapIn) layerParams {
					a := fromVmapIn(v, args[0])
					return transforms.Grad(lossOfArg(layer.f, a))(layerParams{a.W, a.X})
				})(vmapIn{stacked.W, stacked.X, stacked.Idx}))
			}, func() any {
				outs := make([]layerParams, batch)
				for i, a := range args {
					a.Scale, a.Tag = args[0].Scale, args[0].Tag
					outs[i] = transforms.Grad(lossOfArg(layerPlain, a))(layerParams{a.W, a.X})
				}
				return outs
			}},
			{"Grad of Vmap, shared W", func() any {
				return transforms.Grad(func(p layerParams) *T {
					o := transforms.Vmap(func(x *T) layerOut { a := withParams(a, layerParams{p.W, x}); return layer.f(a) })(p.X)
					return layerLoss(o)
				})(layerParams{a.W, xs})
			}, func() any {
				return transforms.Grad(func(p layerParams) *T {
					o := transforms.Vmap(func(x *T) layerOut { a := withParams(a, layerParams{p.W, x}); return layerPlain(a) })(p.X)
					return layerLoss(o)
				})(layerParams{a.W, xs})
			}},
			{"MakeGraph", func() any {
				return transforms.MakeGraph(layer.f, a).Eval(tree.Leaves(a)...)
			}, func() any { return tree.Leaves(layerPlain(a)) }},
			{"MakeGraph of Grad", func() any {
				return transforms.MakeGraph(transforms.Grad(lossOf(layer.f)), p).Eval(tree.Leaves(p)...)
			}, func() any { return tree.Leaves(transforms.Grad(lossOf(layerPlain))(p)) }},
			{"Functionalize", func() any { return transforms.Functionalize(layer.f)(a) }, func() any { return layerPlain(a) }},
			{"Grad of Functionalize", func() any {
				return transforms.Grad(transforms.Functionalize(lossOf(layer.f)))(p)
			}, func() any { return transforms.Grad(lossOf(layerPlain))(p) }},
			{"Functionalize of Grad", func() any {
				return transforms.Functionalize(transforms.Grad(lossOf(layer.f)))(p)
			}, func() any { return transforms.Grad(lossOf(layerPlain))(p) }},
		}
		for _, tc := range cases {
			t.Run(layer.name+"/"+tc.name, func(t *testing.T) {
				checkNear(t, tc.got, tc.want, 1e-12)
			})
		}
	}
	// Forward mode uses the JVP rule (the VJP rule has none).
	ta := layerTangent(a, 0.4)
	t.Run("CustomJVP/JVP", func(t *testing.T) {
		go1, gt := transforms.JVP(jvpLayer, a, ta)
		wo, wt := transforms.JVP(layerPlain, a, ta)
		if msg := treeNear([]any{go1, gt}, []any{wo, wt}, 1e-12); msg != "" {
			t.Error(msg)
		}
	})
	t.Run("CustomJVP/Jacfwd", func(t *testing.T) {
		if msg := treeNear(transforms.Jacfwd(yOfX(jvpLayer))(a.X), transforms.Jacfwd(yOfX(layerPlain))(a.X), 1e-12); msg != "" {
			t.Error(msg)
		}
	})
	t.Run("CustomJVP/Vmap of JVP", func(t *testing.T) {
		jv := func(layer func(layerIn) layerOut) func(x *T) *T {
			return func(x *T) *T {
				b := a
				b.X = x
				tb := ta
				tb.X = peel.Cos(x)
				_, tan := transforms.JVP(layer, b, tb)
				return tan.Y
			}
		}
		if msg := treeNear(transforms.Vmap(jv(jvpLayer))(xs), transforms.Vmap(jv(layerPlain))(xs), 1e-12); msg != "" {
			t.Error(msg)
		}
	})
	t.Run("CustomVJP/JVP refused", func(t *testing.T) {
		wantError(t, func() { transforms.JVP(vjpLayer, a, ta) }, "CustomVJP", "CustomJVP")
	})
	t.Run("CustomVJP/finite differences", func(t *testing.T) {
		g := transforms.Grad(ofX(vjpLayer))(a.X)
		near(t, "grad", g.Float64s(), fdGrad(ofX(layerPlain), a.X.Float64s(), 2), 1e-6)
	})
}

func lossOfArg(layer func(layerIn) layerOut, a layerIn) func(layerParams) *T {
	return func(p layerParams) *T { return layerLoss(layer(withParams(a, p))) }
}

// TestCustomRulesRunOnlyTheirFunctions counts the runs of each user
// function: outside autodiff only f runs; under reverse mode fwd's result
// is the result and f is not run; under forward mode only the JVP rule.
func TestCustomRulesRunOnlyTheirFunctions(t *testing.T) {
	var c layerCounts
	vjpLayer, jvpLayer := customLayers(&c)
	a := layerArg(3, 2, 2, 0.1)
	p := layerParams{a.W, a.X}
	xs := peel.Stack([]*T{a.X, peel.Neg(a.X)}, 0)
	loss := func(layer func(layerIn) layerOut) func(layerParams) *T {
		return func(p layerParams) *T { return layerLoss(layer(withParams(a, p))) }
	}
	ofX := func(layer func(layerIn) layerOut) func(*T) *T {
		return func(x *T) *T { a := a; a.X = x; return layerLoss(layer(a)) }
	}
	yOfX := func(layer func(layerIn) layerOut) func(*T) *T {
		return func(x *T) *T { a := a; a.X = x; return layer(a).Y }
	}
	// f, fwd, bwd, jvp
	type counts [4]int64
	cases := []struct {
		name string
		run  func()
		want counts
	}{
		{"CustomVJP call", func() { vjpLayer(a) }, counts{1, 0, 0, 0}},
		{"CustomVJP Grad", func() { transforms.Grad(loss(vjpLayer))(p) }, counts{0, 1, 1, 0}},
		{"CustomVJP VJP, two pullbacks", func() {
			_, pb := transforms.VJP(vjpLayer, a)
			pb(layerCotangent(a, 1))
			pb(layerCotangent(a, 2))
		}, counts{0, 1, 2, 0}},
		{"CustomVJP Grad, argument not differentiated", func() {
			transforms.Grad(func(s *T) *T { return peel.Mul(s, layerLoss(vjpLayer(a))) })(peel.Full(peel.Float64, 2))
		}, counts{1, 0, 0, 0}},
		{"CustomVJP Vmap", func() { transforms.Vmap(func(x *T) layerOut { a := a; a.X = x; return vjpLayer(a) })(xs) }, counts{1, 0, 0, 0}},
		{"CustomVJP Vmap of Grad", func() { transforms.Vmap(transforms.Grad(ofX(vjpLayer)))(xs) }, counts{0, 1, 1, 0}},
		{"CustomVJP Grad of Vmap", func() {
			transforms.Grad(func(xs *T) *T {
				return layerLoss(transforms.Vmap(func(x *T) layerOut { a := a; a.X = x; return vjpLayer(a) })(xs))
			})(xs)
		}, counts{0, 1, 1, 0}},
		{"CustomVJP Jacrev", func() { transforms.Jacrev(yOfX(vjpLayer))(a.X) }, counts{0, 1, 1, 0}},
		{"CustomVJP Hessian", func() { transforms.Hessian(ofX(vjpLayer))(a.X) }, counts{0, 1, 1, 0}},
		{"CustomVJP Grad of Grad", func() {
			transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Grad(ofX(vjpLayer))(x)) })(a.X)
		}, counts{0, 1, 1, 0}},
		{"CustomVJP MakeGraph", func() { transforms.MakeGraph(vjpLayer, a) }, counts{1, 0, 0, 0}},
		{"CustomVJP MakeGraph of Grad", func() { transforms.MakeGraph(transforms.Grad(loss(vjpLayer)), p) }, counts{0, 1, 1, 0}},
		{"CustomVJP Functionalize", func() { transforms.Functionalize(vjpLayer)(a) }, counts{1, 0, 0, 0}},
		{"CustomJVP call", func() { jvpLayer(a) }, counts{1, 0, 0, 0}},
		{"CustomJVP JVP", func() { transforms.JVP(jvpLayer, a, layerTangent(a, 1)) }, counts{0, 0, 0, 1}},
		{"CustomJVP Grad", func() { transforms.Grad(loss(jvpLayer))(p) }, counts{0, 0, 0, 1}},
		{"CustomJVP Vmap", func() { transforms.Vmap(func(x *T) layerOut { a := a; a.X = x; return jvpLayer(a) })(xs) }, counts{1, 0, 0, 0}},
		{"CustomJVP Vmap of Grad", func() { transforms.Vmap(transforms.Grad(ofX(jvpLayer)))(xs) }, counts{0, 0, 0, 1}},
		{"CustomJVP Jacfwd", func() { transforms.Jacfwd(yOfX(jvpLayer))(a.X) }, counts{0, 0, 0, 1}},
		{"CustomJVP Hessian", func() { transforms.Hessian(ofX(jvpLayer))(a.X) }, counts{0, 0, 0, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.reset()
			if err := peel.Catch(tc.run); err != nil {
				t.Fatal(err)
			}
			got := counts{c.f.Load(), c.fwd.Load(), c.bwd.Load(), c.jvp.Load()}
			if got != tc.want {
				t.Errorf("ran %s, want f %d, fwd %d, bwd %d, jvp %d", &c, tc.want[0], tc.want[1], tc.want[2], tc.want[3])
			}
		})
	}
}

type hidden struct {
	X *T
	y *T
}

type stack struct{ Layers []layerParams }

// TestCustomRulesErrors checks the misuse of custom rules: each is a
// *peel.Error naming the transform and the leaf path, also under Vmap.
func TestCustomRulesErrors(t *testing.T) {
	a := layerArg(3, 2, 2, 0.5)
	x := peel.FromFloat64s([]float64{0.5, -1})
	ident := func(x *T) *T { return peel.Mul(x, 1.0) }
	sum := func(x *T) *T { return peel.Sum(x) }
	// bwd returning cot for the layer argument (the rest of the rule is
	// the real one).
	layerWith := func(cot func(layerIn) layerIn) func(layerIn) layerOut {
		return transforms.CustomVJP(layerPlain, layerFwd, func(r layerRes, ct layerOut) layerIn { return cot(layerBwd(r, ct)) })
	}
	gradOf := func(layer func(layerIn) layerOut) func() {
		return func() {
			transforms.Grad(func(p layerParams) *T { return layerLoss(layer(withParams(a, p))) })(layerParams{a.W, a.X})
		}
	}
	vmapGradOf := func(layer func(layerIn) layerOut) func() {
		return func() {
			transforms.Vmap(transforms.Grad(func(x *T) *T { a := a; a.X = x; return layerLoss(layer(a)) }))(peel.Stack([]*T{a.X, a.X}, 0))
		}
	}
	gradVmapOf := func(layer func(layerIn) layerOut) func() {
		return func() {
			transforms.Grad(func(xs *T) *T {
				return layerLoss(transforms.Vmap(func(x *T) layerOut { a := a; a.X = x; return layer(a) })(xs))
			})(peel.Stack([]*T{a.X, a.X}, 0))
		}
	}
	wrongW := layerWith(func(g layerIn) layerIn { g.W = peel.Zeros(peel.Float64, 2, 3); return g })
	wrongXDType := layerWith(func(g layerIn) layerIn { g.X = peel.AsType(g.X, peel.Float32); return g })
	// A is a slice and a map.
	pair := func(xs []*T) *T { return peel.Mul(xs[0], xs[1]) }
	pairFwd := func(xs []*T) (*T, []*T) { return pair(xs), xs }
	pairShort := transforms.CustomVJP(pair, pairFwd, func(r []*T, ct *T) []*T { return []*T{peel.Mul(ct, r[1])} })
	pairDType := transforms.CustomVJP(pair, pairFwd, func(r []*T, ct *T) []*T {
		return []*T{peel.Mul(ct, r[1]), peel.AsType(peel.Mul(ct, r[0]), peel.Float32)}
	})
	byKey := transforms.CustomVJP(
		func(m map[string]*T) *T { return peel.Mul(m["a"], m["b"]) },
		func(m map[string]*T) (*T, map[string]*T) { return peel.Mul(m["a"], m["b"]), m },
		func(r map[string]*T, ct *T) map[string]*T { return map[string]*T{"a": peel.Mul(ct, r["b"]), "c": ct} },
	)
	nested := transforms.CustomVJP(
		func(s stack) *T { return peel.Mul(s.Layers[0].X, s.Layers[1].X) },
		func(s stack) (*T, stack) { return peel.Mul(s.Layers[0].X, s.Layers[1].X), s },
		func(r stack, ct *T) stack {
			return stack{[]layerParams{{X: peel.Mul(ct, r.Layers[1].X)}, {X: peel.Reshape(ct, 2, 1)}}}
		},
	)
	twoLayers := func(s stack) *T { return peel.Sum(nested(s)) }
	layers := stack{[]layerParams{{W: a.W, X: x}, {W: a.W, X: peel.Neg(x)}}}
	// JVP rules with a wrong tangent.
	jvpWith := func(tan func(layerOut) layerOut) func(layerIn) layerOut {
		return transforms.CustomJVP(layerPlain, func(p, t layerIn) (layerOut, layerOut) {
			o, to := layerJVP(p, t)
			return o, tan(to)
		})
	}
	jvpWrongY := jvpWith(func(t layerOut) layerOut { t.Y = peel.Zeros(peel.Float64, 4); return t })
	jvpNilZ := jvpWith(func(t layerOut) layerOut { t.Z = nil; return t })
	jvpShort := transforms.CustomJVP(
		func(x *T) []*T { return []*T{x, peel.Neg(x)} },
		func(p, t *T) ([]*T, []*T) { return []*T{p, peel.Neg(p)}, []*T{t} },
	)
	// f and fwd returning nil leaves and trees.
	nilSel := func(o layerOut) layerOut { o.Sel = nil; return o }
	fwdHidden := transforms.CustomVJP(ident, func(x *T) (*T, hidden) { return ident(x), hidden{X: x, y: x} }, func(r hidden, ct *T) *T { return ct })
	nilTree := transforms.CustomVJP(func(x *T) any { return nil }, func(x *T) (any, any) { return nil, nil }, func(_ any, ct any) *T { return nil })
	jvpNilSel := transforms.CustomJVP(func(a layerIn) layerOut { return layerPlain(a) }, func(p, t layerIn) (layerOut, layerOut) {
		o, to := layerJVP(p, t)
		return nilSel(o), to
	})
	capturing := func(w *T) func(*T) *T {
		return transforms.CustomVJP(func(x *T) *T { return peel.Mul(x, w) },
			func(x *T) (*T, *T) { return peel.Mul(x, w), x },
			func(r *T, ct *T) *T { return peel.Mul(ct, r) })
	}
	capturingRes := func(w *T) func(*T) *T {
		return transforms.CustomVJP(func(x *T) *T { return peel.Mul(x, 2.0) },
			func(x *T) (*T, layerParams) { return peel.Mul(x, 2.0), layerParams{W: peel.Mul(w, 1.0), X: x} },
			func(r layerParams, ct *T) *T { return peel.Mul(ct, 2.0) })
	}
	jvpCapturing := func(w *T) func(*T) *T {
		return transforms.CustomJVP(func(x *T) *T { return peel.Mul(x, w) },
			func(x, t *T) (*T, *T) { return peel.Mul(x, w), peel.Mul(t, w) })
	}
	cases := []rbCase{
		{"bwd wrong shape at .W", gradOf(wrongW), []string{"transforms.CustomVJP", "leaf .W", "f64[2,3]"}},
		{"bwd wrong shape at .W, Vmap of Grad", vmapGradOf(wrongW), []string{"transforms.CustomVJP", "leaf .W"}},
		{"bwd wrong shape at .W, Grad of Vmap", gradVmapOf(wrongW), []string{"transforms.CustomVJP", "leaf .W"}},
		{"bwd wrong dtype at .X", gradOf(wrongXDType), []string{"transforms.CustomVJP", "leaf .X", "f32"}},
		{"bwd wrong dtype at .X, Grad of Vmap", gradVmapOf(wrongXDType), []string{"transforms.CustomVJP", "leaf .X", "f32"}},
		{"bwd wrong dtype at [1]", func() { transforms.Grad(func(xs []*T) *T { return sum(pairDType(xs)) })([]*T{x, x}) }, []string{"transforms.CustomVJP", "leaf [1]", "f32"}},
		{"bwd too short", func() { transforms.Grad(func(xs []*T) *T { return sum(pairShort(xs)) })([]*T{x, x}) }, []string{"transforms.CustomVJP", "structure", "length 2", "1"}},
		{"bwd too short, Vmap of Grad", func() {
			transforms.Vmap(transforms.Grad(func(xs []*T) *T { return sum(pairShort(xs)) }))([]*T{x, x})
		}, []string{"transforms.CustomVJP", "structure", "length"}},
		{"bwd wrong key", func() {
			transforms.Grad(func(m map[string]*T) *T { return sum(byKey(m)) })(map[string]*T{"a": x, "b": x})
		}, []string{"transforms.CustomVJP", "structure", `"b"`, `"c"`}},
		{"bwd wrong shape, nested", func() { transforms.Grad(twoLayers)(layers) }, []string{"transforms.CustomVJP", "leaf .Layers[1].X"}},
		{"JVP rule wrong shape at .Y", func() { transforms.JVP(jvpWrongY, a, layerTangent(a, 1)) }, []string{"transforms.CustomJVP", "result path .Y", "f64[4]"}},
		{"JVP rule wrong shape at .Y, Grad", gradOf(jvpWrongY), []string{"transforms.CustomJVP", "result path .Y"}},
		{"JVP rule wrong shape at .Y, Grad of Vmap", gradVmapOf(jvpWrongY), []string{"transforms.CustomJVP", "result path .Y"}},
		{"JVP rule nil tangent at .Z", func() { transforms.JVP(jvpNilZ, a, layerTangent(a, 1)) }, []string{"transforms.CustomJVP", "nil tangent", "result path .Z"}},
		{"JVP rule nil tangent at .Z, Vmap of Grad", vmapGradOf(jvpNilZ), []string{"transforms.CustomJVP", "nil tangent", "result path .Z"}},
		{"JVP rule tangent too short", func() { transforms.JVP(jvpShort, x, x) }, []string{"transforms.CustomJVP", "structure", "length"}},
		// A nil tensor in a result is an empty subtree; the JVP rule's
		// tangent must then be nil there too.
		{"JVP rule nil output at .Sel", func() { transforms.JVP(jvpNilSel, a, layerTangent(a, 1)) }, []string{"transforms.CustomJVP", "JVP rule", ".Sel", "nil tensor (an empty subtree)"}},
		{"residual with a tensor in an unexported field", func() { transforms.Grad(func(x *T) *T { return sum(fwdHidden(x)) })(x) }, []string{"transforms.CustomVJP", "unexported field .y"}},
		{"f returns nil", func() { nilTree(x) }, []string{"transforms.CustomVJP", "f returned nil"}},
		{"fwd returns nil", func() { transforms.VJP(nilTree, x) }, []string{"transforms.CustomVJP", "fwd returned nil"}},
		// A nil argument leaf is an empty subtree: f gets it nil, and
		// the op that uses it says so.
		{"nil argument leaf at .X", func() { a := a; a.X = nil; layerWith(func(g layerIn) layerIn { return g })(a) }, []string{"transforms.CustomVJP > peel.Mul", "nil tensor"}},
		{"argument with a tensor in an unexported field", func() {
			transforms.CustomJVP(func(h hidden) *T { return h.X }, func(p, t hidden) (*T, *T) { return p.X, t.X })(hidden{X: x, y: x})
		}, []string{"transforms.CustomJVP", "unexported field .y"}},
		{"nil rule", func() { transforms.CustomVJP[*T, *T, any](ident, nil, nil) }, []string{"transforms.CustomVJP", "must not be nil"}},
		{"JVP of CustomVJP", func() { transforms.JVP(wrongW, a, layerTangent(a, 1)) }, []string{"CustomVJP", "CustomJVP"}},
		// Rules that capture the tensor being differentiated instead of
		// receiving it (its derivative would be lost).
		{"fwd captures a differentiated tensor", func() {
			transforms.Grad(func(p []*T) *T { return sum(capturing(p[1])(p[0])) })([]*T{x, x})
		}, []string{"transforms.CustomVJP", "fwd's result at result path (the root)", "captures", "grad"}},
		{"fwd residual captures a differentiated tensor", func() {
			transforms.Grad(func(p []*T) *T { return sum(capturingRes(p[1])(p[0])) })([]*T{x, x})
		}, []string{"transforms.CustomVJP", "fwd's residual at residual path .W", "captures"}},
		{"fwd captures a differentiated tensor, Grad of Vmap", func() {
			transforms.Grad(func(p []*T) *T { return sum(transforms.Vmap(capturing(p[1]))(peel.Stack([]*T{p[0], p[0]}, 0))) })([]*T{x, x})
		}, []string{"transforms.CustomVJP", "fwd's result", "captures"}},
		{"JVP rule captures a differentiated tensor", func() {
			transforms.JVP(func(p []*T) *T { return jvpCapturing(p[1])(p[0]) }, []*T{x, x}, []*T{x, x})
		}, []string{"transforms.CustomJVP", "the JVP rule's result at result path (the root)", "captures"}},
	}
	rbRun(t, cases)
}

// TestCustomVJPCotangentLeniency checks what bwd may leave out: a nil
// float cotangent is a zero, and cotangents of int leaves and static
// fields are ignored, whatever they are.
func TestCustomVJPCotangentLeniency(t *testing.T) {
	a := layerArg(3, 2, 2, 0.7)
	p := layerParams{a.W, a.X}
	cases := []struct {
		name  string
		cot   func(layerIn) layerIn
		wantW bool // the W cotangent is the real one (not zero)
	}{
		{"as computed", func(g layerIn) layerIn { return g }, true},
		{"nil W", func(g layerIn) layerIn { g.W = nil; return g }, false},
		{"Idx of another shape and dtype", func(g layerIn) layerIn { g.Idx = peel.Ones(peel.Float32, 7); return g }, true},
		{"int Idx", func(g layerIn) layerIn { g.Idx = peel.FromInt64s([]int64{9}); return g }, true},
		{"static fields changed", func(g layerIn) layerIn { g.Scale, g.Tag = -1, "other"; return g }, true},
	}
	want := transforms.Grad(lossOfArg(layerPlain, a))(p)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			layer := transforms.CustomVJP(layerPlain, layerFwd, func(r layerRes, ct layerOut) layerIn { return tc.cot(layerBwd(r, ct)) })
			w := want
			if !tc.wantW {
				w.W = peel.ZerosLike(w.W)
			}
			for _, g := range []func(layerParams) layerParams{
				transforms.Grad(lossOfArg(layer, a)),
				func(p layerParams) layerParams {
					// Vmap of Grad, over a batch of one.
					st := tree.Stack([]layerParams{p})
					return tree.Unstack(transforms.Vmap(transforms.Grad(lossOfArg(layer, a)))(st))[0]
				},
			} {
				checkNear(t, func() any { return g(p) }, func() any { return w }, 1e-12)
			}
		})
	}
}

// drawLayerArg draws a layer argument: W [m, n], X [n], Idx [k] in
// [0, m), and Scale.
func drawLayerArg(t *rapid.T, m, n, k int, name string) layerIn {
	idx := rapid.SliceOfN(rapid.Int64Range(0, int64(m-1)), k, k).Draw(t, name+".Idx")
	return layerIn{
		W:     drawTensor(t, name+".W", []int{m, n}),
		X:     drawTensor(t, name+".X", []int{n}),
		Idx:   peel.FromInt64s(idx, k),
		Scale: rapid.Float64Range(-2, 2).Draw(t, name+".Scale"),
		Tag:   name,
	}
}

// TestRapidCustomLayer checks both custom layers against the plain one
// for random sizes and values: VJP with a random cotangent, JVP with a
// random tangent, and Vmap of the layer and of its gradient over a
// random batch of arguments against a loop over the batch.
func TestRapidCustomLayer(t *testing.T) {
	var c layerCounts
	vjpLayer, jvpLayer := customLayers(&c)
	rapid.Check(t, func(t *rapid.T) {
		m, n, k := rapid.IntRange(1, 3).Draw(t, "m"), rapid.IntRange(1, 3).Draw(t, "n"), rapid.IntRange(1, 3).Draw(t, "k")
		a := drawLayerArg(t, m, n, k, "a")
		ct := layerOut{Y: drawTensor(t, "ct.Y", []int{m}), Sel: drawTensor(t, "ct.Sel", []int{k}), Z: peel.Sum(drawTensor(t, "ct.Z", []int{1})), Idx: intZeros(a.Idx), Tag: a.Tag}
		ta := layerIn{W: drawTensor(t, "ta.W", []int{m, n}), X: drawTensor(t, "ta.X", []int{n}), Idx: intZeros(a.Idx), Scale: a.Scale, Tag: a.Tag}
		vjpOf := func(layer func(layerIn) layerOut) func() any {
			return func() any {
				o, pb := transforms.VJP(layer, a)
				return []any{o, pb(ct)}
			}
		}
		jvpOf := func(layer func(layerIn) layerOut) func() any {
			return func() any {
				o, to := transforms.JVP(layer, a, ta)
				return []any{o, to}
			}
		}
		batch := rapid.IntRange(1, 3).Draw(t, "batch")
		args := make([]layerIn, batch)
		for i := range args {
			args[i] = drawLayerArg(t, m, n, k, fmt.Sprintf("args[%d]", i))
			args[i].Scale, args[i].Tag = a.Scale, a.Tag
		}
		type mapped struct{ W, X, Idx *T }
		st := tree.Stack(args)
		in := mapped{st.W, st.X, st.Idx}
		lane := func(v mapped) layerIn { return layerIn{W: v.W, X: v.X, Idx: v.Idx, Scale: a.Scale, Tag: a.Tag} }
		// The loss of the layer vmapped over the batch.
		loss := func(layer func(layerIn) layerOut) func(mapped) *T {
			return func(v mapped) *T {
				return layerLoss(transforms.Vmap(func(v mapped) layerOut { return layer(lane(v)) })(v))
			}
		}
		for _, layer := range []struct {
			name string
			f    func(layerIn) layerOut
		}{{"CustomVJP", vjpLayer}, {"CustomJVP", jvpLayer}} {
			checks := []struct {
				name      string
				got, want func() any
			}{
				{"VJP", vjpOf(layer.f), vjpOf(layerPlain)},
				{"Vmap", func() any {
					return tree.Unstack(transforms.Vmap(func(v mapped) layerOut { return layer.f(lane(v)) })(in))
				}, func() any {
					outs := make([]layerOut, batch)
					for i, a := range args {
						outs[i] = layerPlain(a)
					}
					return outs
				}},
				{"Vmap of Grad", func() any {
					// Grad differentiates the float leaves; Idx is held
					// by the mapped function.
					return tree.Unstack(transforms.Vmap(func(v mapped) layerParams {
						return transforms.Grad(lossOfArg(layer.f, lane(v)))(layerParams{v.W, v.X})
					})(in))
				}, func() any {
					outs := make([]layerParams, batch)
					for i, a := range args {
						outs[i] = transforms.Grad(lossOfArg(layerPlain, a))(layerParams{a.W, a.X})
					}
					return outs
				}},
				{"Grad of Vmap", func() any {
					return transforms.Grad(func(p layerParams) *T { return loss(layer.f)(mapped{p.W, p.X, in.Idx}) })(layerParams{in.W, in.X})
				}, func() any {
					return transforms.Grad(func(p layerParams) *T { return loss(layerPlain)(mapped{p.W, p.X, in.Idx}) })(layerParams{in.W, in.X})
				}},
			}
			if layer.name == "CustomJVP" {
				checks = append(checks, struct {
					name      string
					got, want func() any
				}{"JVP", jvpOf(layer.f), jvpOf(layerPlain)})
			}
			for _, ch := range checks {
				var g, w any
				if err := peel.Catch(func() { w = ch.want() }); err != nil {
					t.Fatalf("%s %s oracle: %v", layer.name, ch.name, err)
				}
				if err := peel.Catch(func() { g = ch.got() }); err != nil {
					t.Fatalf("%s %s: %v", layer.name, ch.name, err)
				}
				if msg := treeNear(g, w, 1e-12); msg != "" {
					t.Fatalf("%s %s: %s", layer.name, ch.name, msg)
				}
			}
		}
	})
}

// progIn is the argument of a random program: x, y (broadcast to x) and
// a static field the rules must pass through.
type progIn struct {
	X, Y *T
	Note string
}

// TestRapidCustomRulesFromTransforms wraps random smooth programs in
// custom rules made of the program's own VJP and JVP (transforms inside
// the rules), and checks Grad, Hessian (higher order through the rules)
// and Vmap of Grad against the program itself.
func TestRapidCustomRulesFromTransforms(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs, ys := drawShapes(t, 0)
		p := drawProgram(t)
		x, y := drawTensor(t, "x", xs), drawTensor(t, "y", ys)
		t.Logf("p = %s with x %v, y %v", p, xs, ys)
		plain := func(a progIn) *T {
			if a.Note != "static" {
				panic("the static field was not passed through: " + a.Note)
			}
			return p.run(a.X, a.Y)
		}
		vjpP := transforms.CustomVJP(plain,
			func(a progIn) (*T, progIn) { return plain(a), a },
			func(r progIn, ct *T) progIn {
				_, pb := transforms.VJP(plain, r)
				return pb(ct)
			})
		jvpP := transforms.CustomJVP(plain, func(a, ta progIn) (*T, *T) { return transforms.JVP(plain, a, ta) })
		a := progIn{X: x, Y: y, Note: "static"}
		ofX := func(f func(progIn) *T) func(*T) *T {
			return func(x *T) *T { return sumAll(f(progIn{X: x, Y: y, Note: "static"})) }
		}
		bx := drawTensor(t, "batch", append([]int{2}, xs...))
		for _, rule := range []struct {
			name string
			f    func(progIn) *T
		}{{"CustomVJP", vjpP}, {"CustomJVP", jvpP}} {
			checks := []struct {
				name      string
				tol       float64
				got, want func() any
			}{
				{"Grad", 1e-12, func() any { return transforms.Grad(func(a progIn) *T { return sumAll(rule.f(a)) })(a) },
					func() any { return transforms.Grad(func(a progIn) *T { return sumAll(plain(a)) })(a) }},
				{"Hessian", 1e-10, func() any { return transforms.Hessian(ofX(rule.f))(x) }, func() any { return transforms.Hessian(ofX(plain))(x) }},
				{"Vmap of Grad", 1e-12, func() any { return transforms.Vmap(transforms.Grad(ofX(rule.f)))(bx) }, func() any {
					rows := tree.Unstack(bx)
					for i := range rows {
						rows[i] = transforms.Grad(ofX(plain))(rows[i])
					}
					return tree.Stack(rows)
				}},
			}
			for _, ch := range checks {
				var g, w any
				if err := peel.Catch(func() { w = ch.want() }); err != nil {
					t.Fatalf("%s %s oracle: %v", rule.name, ch.name, err)
				}
				if err := peel.Catch(func() { g = ch.got() }); err != nil {
					t.Fatalf("%s %s: %v", rule.name, ch.name, err)
				}
				if msg := treeNear(g, w, ch.tol); msg != "" {
					t.Fatalf("%s %s: %s", rule.name, ch.name, msg)
				}
			}
		}
	})
}

// TestCustomRulesConcurrent runs the custom layers under several
// transforms on many goroutines at once, all sharing one custom function
// and the tensors its rules capture (W, the indices and a weight), and
// compares every result with the one computed alone. Run it with -race.
func TestCustomRulesConcurrent(t *testing.T) {
	shared := layerArg(3, 2, 4, 0.9)
	weight := peel.FromFloat64s([]float64{0.5, -1, 2})
	// Rules that capture shared tensors rather than receive them.
	capturedVJP := transforms.CustomVJP(
		func(x *T) *T { return layerPlain(layerIn{W: shared.W, X: x, Idx: shared.Idx, Scale: 1}).Y },
		func(x *T) (*T, layerRes) {
			o, r := layerFwd(layerIn{W: shared.W, X: x, Idx: shared.Idx, Scale: 1})
			return o.Y, r
		},
		func(r layerRes, ct *T) *T {
			return layerBwd(r, layerOut{Y: peel.Mul(ct, 1.0), Sel: peel.Zeros(peel.Float64, 4), Z: peel.Zeros(peel.Float64), Idx: r.Idx}).X
		},
	)
	capturedJVP := transforms.CustomJVP(
		func(x *T) *T { return peel.Mul(peel.Tanh(x), weight) },
		func(x, tx *T) (*T, *T) {
			return peel.Mul(peel.Tanh(x), weight), peel.Mul(peel.Mul(tx, peel.Sub(1.0, peel.Square(peel.Tanh(x)))), weight)
		},
	)
	var c layerCounts
	vjpLayer, jvpLayer := customLayers(&c)
	xs := peel.Stack([]*T{shared.X, peel.Neg(shared.X), peel.Add(shared.X, 1.0)}, 0)
	lossOfX := func(f func(*T) *T) func(*T) *T { return func(x *T) *T { return peel.Sum(peel.Mul(f(x), weight)) } }
	ops := []struct {
		name string
		run  func() any
	}{
		{"Grad CustomVJP", func() any { return transforms.Grad(lossOfX(capturedVJP))(shared.X) }},
		{"Vmap of Grad CustomVJP", func() any { return transforms.Vmap(transforms.Grad(lossOfX(capturedVJP)))(xs) }},
		{"Grad CustomJVP", func() any { return transforms.Grad(lossOfX(capturedJVP))(weight) }},
		{"JVP CustomJVP", func() any { _, tan := transforms.JVP(capturedJVP, weight, peel.Cos(weight)); return tan }},
		{"Hessian CustomVJP", func() any { return transforms.Hessian(lossOfX(capturedVJP))(shared.X) }},
		{"Grad tree layer", func() any { return transforms.Grad(lossOfArg(vjpLayer, shared))(layerParams{shared.W, shared.X}) }},
		{"Grad tree layer CustomJVP", func() any { return transforms.Grad(lossOfArg(jvpLayer, shared))(layerParams{shared.W, shared.X}) }},
		{"Vmap tree layer", func() any {
			return transforms.Vmap(func(x *T) layerOut { a := shared; a.X = x; return vjpLayer(a) })(xs)
		}},
	}
	want := make([]any, len(ops))
	for i, op := range ops {
		if err := peel.Catch(func() { want[i] = op.run() }); err != nil {
			t.Fatalf("%s alone: %v", op.name, err)
		}
	}
	const goroutines, calls = 8, 6
	var wg sync.WaitGroup
	errs := make(chan string, goroutines*calls*len(ops))
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < calls; k++ {
				i := (g + k) % len(ops)
				var got any
				if err := peel.Catch(func() { got = ops[i].run() }); err != nil {
					errs <- fmt.Sprintf("goroutine %d: %s: %v", g, ops[i].name, err)
					continue
				}
				if msg := treeNear(got, want[i], 0); msg != "" {
					errs <- fmt.Sprintf("goroutine %d: %s differs from the value computed alone: %s", g, ops[i].name, msg)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestCustomRulesCaptureOuterValues checks that rules may capture values
// of transforms outside the one applying the rule: an outer Grad's
// tracer (differentiated through the rule's own operations) and a
// Vmap's batched value.
func TestCustomRulesCaptureOuterValues(t *testing.T) {
	x0 := peel.FromFloat64s([]float64{0.5, -2})
	w0 := peel.FromFloat64s([]float64{1.5, 3})
	scaled := func(w *T) func(*T) *T {
		return transforms.CustomVJP(func(x *T) *T { return peel.Mul(peel.Sin(x), w) },
			func(x *T) (*T, *T) { return peel.Mul(peel.Sin(x), w), x },
			func(x *T, ct *T) *T { return peel.Mul(peel.Mul(ct, peel.Cos(x)), w) })
	}
	plain := func(w *T) func(*T) *T { return func(x *T) *T { return peel.Mul(peel.Sin(x), w) } }
	// d/dw Σ (d/dx Σ sin(x)·w)² at x0 = 2·w·cos²(x0).
	outer := func(layer func(*T) func(*T) *T) func() any {
		return func() any {
			return transforms.Grad(func(w *T) *T {
				g := transforms.Grad(func(x *T) *T { return peel.Sum(layer(w)(x)) })(x0)
				return peel.Sum(peel.Square(g))
			})(w0)
		}
	}
	checkNear(t, outer(scaled), outer(plain), 1e-12)
	want := make([]float64, 2)
	for i, x := range x0.Float64s() {
		want[i] = 2 * w0.Float64s()[i] * math.Cos(x) * math.Cos(x)
	}
	near(t, "outer Grad through the rule", outer(scaled)().(*T).Float64s(), want, 1e-12)
	// Vmap of a rule that captures the batched value.
	ws := peel.Stack([]*T{w0, peel.Neg(w0)}, 0)
	vm := func(layer func(*T) func(*T) *T) func() any {
		return func() any { return transforms.Vmap(func(w *T) *T { return layer(w)(x0) })(ws) }
	}
	checkNear(t, vm(scaled), vm(plain), 1e-12)
	// Vmap of Grad of a rule that captures the batched value: the rule
	// runs at the Grad level, with the batched value from below.
	vg := func(layer func(*T) func(*T) *T) func() any {
		return func() any {
			return transforms.Vmap(func(w *T) *T {
				return transforms.Grad(func(x *T) *T { return peel.Sum(layer(w)(x)) })(x0)
			})(ws)
		}
	}
	checkNear(t, vg(scaled), vg(plain), 1e-12)
}

// layerData is the second argument of the two-argument layer: int
// indices (not differentiated) and a static field.
type layerData struct {
	Idx   *T
	Scale float64
}

func join(p layerParams, d layerData) layerIn {
	return layerIn{W: p.W, X: p.X, Idx: d.Idx, Scale: d.Scale, Tag: "args"}
}

// TestCustomRulesPositional checks CustomVJP2/3 and CustomJVP2/3 against
// the plain functions under the positional transforms, a zero-valued
// cotangent for an argument that is not differentiated, and leaf paths
// that read args[k].
func TestCustomRulesPositional(t *testing.T) {
	var c layerCounts
	plain2 := func(p layerParams, d layerData) layerOut { return layerPlain(join(p, d)) }
	vjp2 := transforms.CustomVJP2(
		func(p layerParams, d layerData) layerOut { c.f.Add(1); return plain2(p, d) },
		func(p layerParams, d layerData) (layerOut, layerRes) { c.fwd.Add(1); return layerFwd(join(p, d)) },
		func(r layerRes, ct layerOut) (layerParams, layerData) {
			c.bwd.Add(1)
			g := layerBwd(r, ct)
			return layerParams{g.W, g.X}, layerData{} // no cotangent for the data
		},
	)
	jvp2 := transforms.CustomJVP2(
		func(p layerParams, d layerData) layerOut { c.f.Add(1); return plain2(p, d) },
		func(p layerParams, d layerData, tp layerParams, td layerData) (layerOut, layerOut) {
			c.jvp.Add(1)
			ta := join(tp, d)
			ta.Idx = td.Idx
			return layerJVP(join(p, d), ta)
		},
	)
	// Three scalar-ish arguments: x·y + sin(z), with z not differentiated
	// by the VJP rule (its zero value).
	plain3 := func(x, y, z *T) *T { return peel.Add(peel.Mul(x, y), peel.Sin(z)) }
	vjp3 := transforms.CustomVJP3(plain3,
		func(x, y, z *T) (*T, []*T) { return plain3(x, y, z), []*T{x, y} },
		func(r []*T, ct *T) (*T, *T, *T) { return peel.Mul(ct, r[1]), peel.Mul(ct, r[0]), nil })
	jvp3 := transforms.CustomJVP3(plain3, func(x, y, z, tx, ty, tz *T) (*T, *T) {
		return plain3(x, y, z), peel.Add(peel.Add(peel.Mul(tx, y), peel.Mul(x, ty)), peel.Mul(peel.Cos(z), tz))
	})
	a := layerArg(3, 2, 4, 0.8)
	p, d := layerParams{a.W, a.X}, layerData{a.Idx, a.Scale}
	loss2 := func(f func(layerParams, layerData) layerOut) func(layerParams, layerData) *T {
		return func(p layerParams, d layerData) *T { return layerLoss(f(p, d)) }
	}
	x, y, z := peel.FromFloat64s([]float64{0.5, -1}), peel.FromFloat64s([]float64{2, 3}), peel.FromFloat64s([]float64{0.25, 1})
	loss3 := func(f func(x, y, z *T) *T) func(x, y, z *T) *T {
		return func(x, y, z *T) *T { return peel.Sum(peel.Square(f(x, y, z))) }
	}
	ps := tree.Stack([]layerParams{p, {peel.Neg(p.W), peel.Add(p.X, 1.0)}})
	ct := layerCotangent(a, 0.3)
	tp := layerParams{peel.Cos(p.W), peel.Sin(p.X)}
	cases := []struct {
		name      string
		got, want func() any
	}{
		{"CustomVJP2 call", func() any { return vjp2(p, d) }, func() any { return plain2(p, d) }},
		{"CustomVJP2 Grad2", func() any { return transforms.Grad2(loss2(vjp2))(p, d) }, func() any { return transforms.Grad2(loss2(plain2))(p, d) }},
		{"CustomVJP2 VJP2", func() any {
			o, pb := transforms.VJP2(vjp2, p, d)
			gp, gd := pb(ct)
			return []any{o, gp, gd}
		}, func() any {
			o, pb := transforms.VJP2(plain2, p, d)
			gp, gd := pb(ct)
			return []any{o, gp, gd}
		}},
		{"CustomVJP2 Vmap2 of Grad2", func() any {
			return transforms.Vmap2(transforms.Grad2(loss2(vjp2)), transforms.InAxes(0, transforms.NoAxis))(ps, d)
		}, func() any {
			return transforms.Vmap2(transforms.Grad2(loss2(plain2)), transforms.InAxes(0, transforms.NoAxis))(ps, d)
		}},
		{"CustomVJP2 Grad of Vmap2", func() any {
			return transforms.Grad(func(ps layerParams) *T {
				return layerLoss(transforms.Vmap2(vjp2, transforms.InAxes(0, transforms.NoAxis))(ps, d))
			})(ps)
		}, func() any {
			return transforms.Grad(func(ps layerParams) *T {
				return layerLoss(transforms.Vmap2(plain2, transforms.InAxes(0, transforms.NoAxis))(ps, d))
			})(ps)
		}},
		{"CustomJVP2 JVP2", func() any {
			o, to := transforms.JVP2(jvp2, p, d, tp, layerData{})
			return []any{o, to}
		}, func() any {
			o, to := transforms.JVP2(plain2, p, d, tp, layerData{})
			return []any{o, to}
		}},
		{"CustomJVP2 Grad2", func() any { return transforms.Grad2(loss2(jvp2))(p, d) }, func() any { return transforms.Grad2(loss2(plain2))(p, d) }},
		{"CustomJVP2 Vmap2 of Grad2", func() any {
			return transforms.Vmap2(transforms.Grad2(loss2(jvp2)), transforms.InAxes(0, transforms.NoAxis))(ps, d)
		}, func() any {
			return transforms.Vmap2(transforms.Grad2(loss2(plain2)), transforms.InAxes(0, transforms.NoAxis))(ps, d)
		}},
		{"CustomVJP3 GradArgs3 of x, y", func() any {
			gx, gy, _ := transforms.GradArgs3(loss3(vjp3), transforms.Argnums(0, 1))(x, y, z)
			return []any{gx, gy}
		}, func() any {
			gx, gy, _ := transforms.GradArgs3(loss3(plain3), transforms.Argnums(0, 1))(x, y, z)
			return []any{gx, gy}
		}},
		{"CustomVJP3 z gets no cotangent", func() any {
			_, _, gz := transforms.GradArgs3(loss3(vjp3))(x, y, z)
			return gz
		}, func() any { return peel.ZerosLike(z) }},
		{"CustomJVP3 GradArgs3", func() any {
			gx, gy, gz := transforms.GradArgs3(loss3(jvp3))(x, y, z)
			return []any{gx, gy, gz}
		}, func() any {
			gx, gy, gz := transforms.GradArgs3(loss3(plain3))(x, y, z)
			return []any{gx, gy, gz}
		}},
		{"CustomJVP3 JVP3", func() any {
			o, to := transforms.JVP3(jvp3, x, y, z, peel.Cos(x), nil, peel.Sin(z))
			return []any{o, to}
		}, func() any {
			o, to := transforms.JVP3(plain3, x, y, z, peel.Cos(x), nil, peel.Sin(z))
			return []any{o, to}
		}},
		{"CustomJVP3 Hessian in x", func() any {
			return transforms.Hessian(func(x *T) *T { return loss3(jvp3)(x, y, z) })(x)
		}, func() any { return transforms.Hessian(func(x *T) *T { return loss3(plain3)(x, y, z) })(x) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkNear(t, tc.got, tc.want, 1e-12) })
	}
	t.Run("counts", func(t *testing.T) {
		c.reset()
		transforms.Grad2(loss2(vjp2))(p, d)
		transforms.Vmap2(transforms.Grad2(loss2(jvp2)), transforms.InAxes(0, transforms.NoAxis))(ps, d)
		if c.f.Load() != 0 || c.fwd.Load() != 1 || c.bwd.Load() != 1 || c.jvp.Load() != 1 {
			t.Errorf("ran %s, want f 0, fwd 1, bwd 1, jvp 1", &c)
		}
	})
	wrong2 := transforms.CustomVJP2(plain2,
		func(p layerParams, d layerData) (layerOut, layerRes) { return layerFwd(join(p, d)) },
		func(r layerRes, ct layerOut) (layerParams, layerData) {
			g := layerBwd(r, ct)
			return layerParams{g.W, peel.Reshape(g.X, 1, 2)}, layerData{}
		})
	short3 := transforms.CustomVJP3(plain3,
		func(x, y, z *T) (*T, []*T) { return plain3(x, y, z), []*T{x, y} },
		func(r []*T, ct *T) (*T, *T, *T) { return peel.Mul(ct, r[1]), peel.Sum(ct), nil })
	rbRun(t, []rbCase{
		{"CustomVJP2 wrong shape at args[0].X", func() { transforms.Grad2(loss2(wrong2))(p, d) }, []string{"transforms.CustomVJP2", "leaf args[0].X", "f64[1,2]"}},
		{"CustomVJP3 wrong shape at args[1]", func() { transforms.GradArgs3(loss3(short3))(x, y, z) }, []string{"transforms.CustomVJP3", "leaf args[1]"}},
		{"CustomVJP3 wrong shape at args[1], Vmap", func() {
			g := transforms.GradArgs3(loss3(short3))
			transforms.Vmap3(func(x, y, z *T) []*T { gx, gy, gz := g(x, y, z); return []*T{gx, gy, gz} })(peel.Stack([]*T{x, x}, 0), peel.Stack([]*T{y, y}, 0), peel.Stack([]*T{z, z}, 0))
		}, []string{"transforms.CustomVJP3", "leaf args[1]"}},
		{"CustomJVP2 nil rule", func() { transforms.CustomJVP2[*T, *T, *T](nil, nil) }, []string{"transforms.CustomJVP2", "must not be nil"}},
		{"CustomVJP3 nil rule", func() { transforms.CustomVJP3[*T, *T, *T, *T, any](plain3, nil, nil) }, []string{"transforms.CustomVJP3", "must not be nil"}},
	})
}

// TestCustomVJPZeroCotangent checks that bwd may return its argument
// type's zero value (here a nil slice, which differs from the argument in
// structure) for no cotangent at all.
func TestCustomVJPZeroCotangent(t *testing.T) {
	stop := transforms.CustomVJP(
		func(xs []*T) *T { return peel.Mul(xs[0], xs[1]) },
		func(xs []*T) (*T, any) { return peel.Mul(xs[0], xs[1]), nil },
		func(any, *T) []*T { return nil },
	)
	x := []*T{peel.FromFloat64s([]float64{1, 2}), peel.FromFloat64s([]float64{3, 4})}
	loss := func(xs []*T) *T { return peel.Sum(stop(xs)) }
	want := []*T{peel.ZerosLike(x[0]), peel.ZerosLike(x[1])}
	checkNear(t, func() any { return transforms.Grad(loss)(x) }, func() any { return want }, 0)
	xb := []*T{peel.Stack([]*T{x[0], x[0]}, 0), peel.Stack([]*T{x[1], x[1]}, 0)}
	checkNear(t, func() any { return transforms.Vmap(transforms.Grad(loss))(xb) },
		func() any { return []*T{peel.ZerosLike(xb[0]), peel.ZerosLike(xb[1])} }, 0)
}

// TestCustomRulesSurviveStaging: a straight-through estimator (the
// gradient of round taken as 1) keeps its rule in every graph that holds
// it: compiled, checkpointed, under Remat, in a Cond branch (concrete and
// traced predicate), with a compiled backward. Staging used to decompose
// the call into f, and these gradients silently came out as round's
// zero.
func TestCustomRulesSurviveStaging(t *testing.T) {
	ste := transforms.CustomVJP(func(x *T) *T { return peel.Round(x) },
		func(x *T) (*T, *T) { return peel.Round(x), x },
		func(_, ct *T) *T { return ct })
	steJ := transforms.CustomJVP(func(x *T) *T { return peel.Round(x) },
		func(x, t *T) (*T, *T) { return peel.Round(x), t })
	for name, r := range map[string]func(*T) *T{"CustomVJP": ste, "CustomJVP": steJ} {
		f := func(x *T) *T { return peel.Sum(peel.Mul(r(x), x)) }
		x := f64(0.4, 1.6)
		want := []float64{0.4, 3.6} // round(x) + x
		for how, g := range map[string]func(*T) *T{
			"Grad":                 transforms.Grad(f),
			"Compile(Grad)":        transforms.Compile(transforms.Grad(f)),
			"Grad(Compile)":        transforms.Grad(transforms.Compile(f)),
			"Checkpoint":           transforms.Grad(transforms.Checkpoint(f, transforms.MinCut)),
			"Remat":                transforms.Grad(f, transforms.Remat(transforms.NothingSaveable)),
			"CompileBackward":      transforms.Grad(f, transforms.CompileBackward()),
			"Cond":                 transforms.Grad(func(x *T) *T { return transforms.Cond(peel.Scalar(true), f, f, x) }),
			"Compile(Grad(Cond))":  transforms.Compile(transforms.Grad(func(x *T) *T { return transforms.Cond(peel.Greater(peel.Sum(x), 0.0), f, f, x) })),
			"Vmap(Grad) (per row)": func(x *T) *T { return transforms.Vmap(transforms.Grad(f))(peel.Reshape(x, 1, 2)) },
		} {
			near(t, name+" "+how, g(x).Float64s(), want, 1e-12)
		}
	}
}
