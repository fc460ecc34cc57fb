package transforms_test

import (
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
)

// canonical writes x into the middle of a zeros tensor it creates, then
// scales the whole tensor in place.
func canonical(x *T) *T {
	n := x.Shape()[0]
	y := peel.Zeros(x.DType(), n+2)
	peel.CopyInto(peel.Narrow(y, 0, 1, n), x)
	peel.MulInPlace(y, 2.0)
	return y
}

func hasMutation(g *interp.Graph) string {
	for _, e := range g.Eqns {
		if e.Prim.Kind == interp.Mutation {
			return e.Prim.Name
		}
	}
	return ""
}

func TestFunctionalizeCanonical(t *testing.T) {
	x := f64(1, 2, 3)
	want := canonical(x).Float64s()
	near(t, "functionalize", transforms.Functionalize(canonical)(x).Float64s(), want, 0)
	g := transforms.MakeGraph(transforms.Functionalize(canonical), x)
	if m := hasMutation(g); m != "" {
		t.Errorf("graph has mutation %s:\n%v", m, g)
	}
	near(t, "graph eval", g.Eval(x)[0].Float64s(), want, 0)
	// Vmap refuses the mutating program; Vmap(Functionalize) runs it.
	xs := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	wantError(t, func() { transforms.Vmap(canonical)(xs) }, "not batched at this level", "Functionalize")
	got := transforms.Vmap(transforms.Functionalize(canonical))(xs)
	for i := 0; i < 2; i++ {
		near(t, "vmap(functionalize)", peel.Select(got, 0, i).Float64s(), canonical(peel.Select(xs, 0, i)).Float64s(), 0)
	}
	// Grad and Vmap(Grad) through it.
	loss := func(x *T) *T { return peel.Sum(peel.Square(canonical(x))) }
	gf := transforms.Grad(transforms.Functionalize(loss))(x)
	near(t, "grad(functionalize)", gf.Float64s(), peel.Mul(x, 8.0).Float64s(), 1e-12)
	vg := transforms.Vmap(transforms.Functionalize(transforms.Grad(loss)))(xs)
	near(t, "vmap(functionalize(grad))", vg.Float64s(), peel.Mul(xs, 8.0).Float64s(), 1e-12)
	fv := transforms.Functionalize(transforms.Vmap(func(r *T) *T { return peel.Sum(r) }))(xs)
	near(t, "functionalize(vmap)", fv.Float64s(), []float64{6, 15}, 0)
	jr := transforms.Jacrev(transforms.Functionalize(canonical))(x)
	if s := jr.Shape(); s[0] != 5 || s[1] != 3 {
		t.Fatalf("jacrev shape %v", s)
	}
}

func TestFunctionalizeAliasesAndInputs(t *testing.T) {
	// Writes through one alias are seen by the others, and the input's
	// mutation reaches the caller once.
	f := func(x *T) *T {
		tr := peel.Transpose(x)        // [3,2] view of x
		row := peel.Select(tr, 0, 1)   // x[:,1]
		peel.AddInPlace(row, 100.0)    // writes x[:,1]
		col := peel.Narrow(x, 1, 0, 2) // sees the write
		peel.MulInPlace(x, 2.0)
		return peel.Add(peel.Sum(col), peel.Sum(row))
	}
	x1 := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	x2 := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	alias := peel.Narrow(x2, 0, 1, 1) // the caller's alias of x2
	want := f(x1)
	got := transforms.Functionalize(f)(x2)
	near(t, "value", []float64{got.Item()}, []float64{want.Item()}, 0)
	near(t, "input mutated", x2.Float64s(), x1.Float64s(), 0)
	near(t, "caller's alias", alias.Float64s(), peel.Narrow(x1, 0, 1, 1).Float64s(), 0)
	g := transforms.MakeGraph(transforms.Functionalize(f), peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 2, 3))
	if m := hasMutation(g); m != "" {
		t.Errorf("graph has mutation %s:\n%v", m, g)
	}
	// RemoveViews: no view primitive below.
	g2 := transforms.MakeGraph(transforms.Functionalize(canonical, transforms.RemoveViews()), f64(1, 2))
	for _, e := range g2.Eqns {
		if e.Prim.Kind != interp.Pure && !strings.HasPrefix(e.Prim.Name, "broadcast") {
			t.Errorf("RemoveViews graph has %s", e.Prim.Name)
		}
	}
}
