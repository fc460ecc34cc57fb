package transforms_test

import (
	"slices"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// biasFree is a layer whose bias is optional: nil when the layer has
// none (JAX's None leaf).
type biasFree struct {
	W, B *T
}

func (p biasFree) apply(x *T) *T {
	y := peel.Mul(p.W, x)
	if p.B != nil {
		y = peel.Add(y, p.B)
	}
	return y
}

// TestNilLeavesAreEmptySubtrees: a nil tensor inside a tree is an empty
// subtree in every transform (as JAX's None): it is no leaf (nothing to
// differentiate, batch or trace), it comes back nil at the same place in
// every result tree, and the values at the other leaves are those of the
// same computation written without the field.
func TestNilLeavesAreEmptySubtrees(t *testing.T) {
	w := peel.FromFloat64s([]float64{0.5, -1, 2})
	x := peel.FromFloat64s([]float64{1.5, 0.25, -2})
	p := biasFree{W: w}
	loss := func(p biasFree) *T { return peel.Sum(peel.Square(p.apply(x))) }
	plain := func(w *T) *T { return peel.Sum(peel.Square(peel.Mul(w, x))) }
	wantG := transforms.Grad(plain)(w).Float64s()
	same := func(name string, got *T, want []float64) {
		t.Helper()
		if got == nil || !slices.Equal(got.Float64s(), want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	isNil := func(name string, b *T) {
		t.Helper()
		if b != nil {
			t.Errorf("%s: the empty subtree came back as %s", name, b.TypeString())
		}
	}

	g := transforms.Grad(loss)(p)
	same("Grad .W", g.W, wantG)
	isNil("Grad .B", g.B)
	v, g2 := transforms.ValueAndGrad(loss)(p)
	same("ValueAndGrad value", v, []float64{plain(w).Item()})
	isNil("ValueAndGrad .B", g2.B)
	same("Compile of Grad .W", transforms.Compile(transforms.Grad(loss))(p).W, wantG)
	isNil("Compile of Grad .B", transforms.Compile(transforms.Grad(loss))(p).B)

	// A result with a nil tensor: forward and reverse mode, Jacobians.
	layer := func(p biasFree) biasFree { return biasFree{W: p.apply(x)} }
	out, tan := transforms.JVP(layer, p, biasFree{W: peel.OnesLike(w)})
	same("JVP primal", out.W, peel.Mul(w, x).Float64s())
	same("JVP tangent", tan.W, x.Float64s())
	isNil("JVP tangent .B", tan.B)
	out, back := transforms.VJP(layer, p)
	isNil("VJP primal .B", out.B)
	ct := back(biasFree{W: peel.OnesLike(w)})
	same("VJP cotangent .W", ct.W, x.Float64s())
	isNil("VJP cotangent .B", ct.B)
	jr := transforms.JacrevTree(loss)(p)
	same("JacrevTree .W", jr[0].W, wantG)
	isNil("JacrevTree .B", jr[0].B)
	h := transforms.HessianTree(loss)(p)
	isNil("HessianTree .B", h[0].B)

	// Vmap: a batch of bias-free layers, and a result with a nil field.
	ws := peel.Stack([]*T{w, peel.Neg(w)}, 0)
	vb := transforms.Vmap(layer)(biasFree{W: ws})
	same("Vmap .W", vb.W, peel.Mul(ws, x).Float64s())
	isNil("Vmap .B", vb.B)
	pg := transforms.Vmap(transforms.Grad(loss))(biasFree{W: ws})
	isNil("Vmap of Grad .B", pg.B)

	// Checkpoint, Functionalize, Compile, MakeGraph keep the structure.
	same("Checkpoint", transforms.Grad(transforms.Checkpoint(loss, transforms.NothingSaveable))(p).W, wantG)
	isNil("Functionalize .B", transforms.Functionalize(layer)(p).B)
	isNil("Compile .B", transforms.Compile(layer)(p).B)
	gr := transforms.MakeGraph(layer, p)
	if n := len(gr.In); n != 1 {
		t.Errorf("MakeGraph: %d inputs, want 1 (the nil bias is none)", n)
	}

	// Control flow: a carry, a branch result and a loop state with a nil
	// tensor.
	c, ys := transforms.Scan(func(c biasFree, xi *T) (biasFree, *T) {
		return biasFree{W: peel.Add(c.W, xi)}, c.W
	}, p, peel.Stack([]*T{x, x}, 0))
	isNil("Scan carry .B", c.B)
	same("Scan ys", peel.Select(ys, 0, 1), peel.Add(w, x).Float64s())
	r := transforms.Cond(peel.Scalar(true), layer, func(p biasFree) biasFree { return biasFree{W: peel.Neg(p.W)} }, p)
	isNil("Cond .B", r.B)
	wl := transforms.WhileLoop(func(p biasFree) *T { return peel.Less(peel.Sum(p.W), 10.0) },
		func(p biasFree) biasFree { return biasFree{W: peel.Add(p.W, 1.0)} }, p)
	isNil("WhileLoop .B", wl.B)

	// Custom rules: the argument's nil field is nil for f, fwd and bwd,
	// and its cotangent stays nil.
	custom := transforms.CustomVJP(layer, func(p biasFree) (biasFree, *T) {
		return layer(p), p.W
	}, func(wres *T, ct biasFree) biasFree {
		if ct.B != nil {
			panic("a cotangent for the empty subtree")
		}
		return biasFree{W: peel.Mul(ct.W, x)}
	})
	cg := transforms.Grad(func(p biasFree) *T { return peel.Sum(peel.Square(custom(p).W)) })(p)
	same("CustomVJP .W", cg.W, wantG)
	isNil("CustomVJP .B", cg.B)

	// A structure with the field set differs from one without.
	if err := peel.Catch(func() {
		transforms.Cond(peel.Scalar(true), layer, func(p biasFree) biasFree { return biasFree{W: p.W, B: p.W} }, p)
	}); err == nil {
		t.Errorf("Cond: branches that differ in a nil tensor were accepted")
	}

	// An exported program: the result's nil field comes back nil.
	e := transforms.Export(layer, p)
	loaded, err := transforms.LoadExported(e.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	lr := transforms.ExportedFunc[biasFree, biasFree](loaded)(p)
	same("Export .W", lr.W, peel.Mul(w, x).Float64s())
	isNil("Export .B", lr.B)
}
