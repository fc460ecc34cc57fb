package tree_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

type mlp struct {
	Layers []layer
	Scale  *peel.Tensor
	Name   string // static
}

func sample(seed float64) mlp {
	f := func(vs ...float64) *peel.Tensor {
		for i := range vs {
			vs[i] += seed
		}
		return peel.FromFloat64s(vs)
	}
	return mlp{
		Layers: []layer{{W: f(1, 2, 3), B: f(0.5)}, {W: f(4, 5), B: f(-1)}},
		Scale:  peel.Scalar(2.0 + seed),
		Name:   "net",
	}
}

func values(ts []*peel.Tensor) [][]float64 {
	out := make([][]float64, len(ts))
	for i, t := range ts {
		out[i] = t.Float64s()
	}
	return out
}

func sameValues(t *testing.T, what string, got, want []*peel.Tensor) {
	t.Helper()
	g, w := values(got), values(want)
	if len(g) != len(w) {
		t.Fatalf("%s: %d leaves, want %d", what, len(g), len(w))
	}
	for i := range g {
		if !slices.Equal(g[i], w[i]) {
			t.Fatalf("%s: leaf %d = %v, want %v", what, i, g[i], w[i])
		}
	}
}

func TestLeavesPathsUnflatten(t *testing.T) {
	p := sample(0)
	leaves := tree.Leaves(p)
	if got, want := tree.Paths(p), []string{".Layers[0].W", ".Layers[0].B", ".Layers[1].W", ".Layers[1].B", ".Scale"}; !slices.Equal(got, want) {
		t.Fatalf("Paths %v, want %v", got, want)
	}
	q := tree.Unflatten(p, tree.Leaves(sample(10)))
	if q.Name != "net" {
		t.Errorf("static field lost: %q", q.Name)
	}
	sameValues(t, "Unflatten", tree.Leaves(q), tree.Leaves(sample(10)))
	sameValues(t, "the original is untouched", tree.Leaves(p), leaves)
	if got := tree.Paths(peel.Ones(peel.Float64, 2)); !slices.Equal(got, []string{""}) {
		t.Errorf("Paths of a tensor: %q", got)
	}
	m := map[string]*peel.Tensor{"b": peel.Scalar(1.0), "a": peel.Scalar(2.0)}
	if got := tree.Paths(m); !slices.Equal(got, []string{`["a"]`, `["b"]`}) {
		t.Errorf("Paths of a map: %q", got)
	}
}

func TestMapMapN(t *testing.T) {
	p, q := sample(0), sample(1)
	d := tree.Map(func(x *peel.Tensor) *peel.Tensor { return peel.Mul(x, 2.0) }, p)
	for i, l := range tree.Leaves(d) {
		want := tree.Leaves(p)[i].Float64s()
		for j := range want {
			want[j] *= 2
		}
		if !slices.Equal(l.Float64s(), want) {
			t.Fatalf("Map leaf %d = %v, want %v", i, l.Float64s(), want)
		}
	}
	s := tree.MapN(func(x []*peel.Tensor) *peel.Tensor { return peel.Sub(x[1], x[0]) }, p, q)
	for _, l := range tree.Leaves(s) {
		for _, v := range l.Float64s() {
			if v != 1 {
				t.Fatalf("MapN difference %v, want ones", l.Float64s())
			}
		}
	}
	z, o := tree.ZerosLike(p), tree.OnesLike(p)
	for i := range tree.Leaves(p) {
		for _, v := range tree.Leaves(z)[i].Float64s() {
			if v != 0 {
				t.Fatal("ZerosLike")
			}
		}
		for _, v := range tree.Leaves(o)[i].Float64s() {
			if v != 1 {
				t.Fatal("OnesLike")
			}
		}
	}
}

func TestStackUnstack(t *testing.T) {
	ps := []mlp{sample(0), sample(1), sample(2)}
	st := tree.Stack(ps)
	if got := st.Layers[0].W.Shape(); !slices.Equal(got, []int{3, 3}) {
		t.Fatalf("stacked W shape %v", got)
	}
	back := tree.Unstack(st)
	if len(back) != 3 {
		t.Fatalf("Unstack gave %d trees", len(back))
	}
	for k := range ps {
		sameValues(t, "Unstack(Stack)", tree.Leaves(back[k]), tree.Leaves(ps[k]))
		if back[k].Name != "net" {
			t.Errorf("static field lost in tree %d", k)
		}
	}
	// An ensemble: Vmap over the stacked parameters equals a loop.
	loss := func(p mlp) *peel.Tensor {
		return peel.Mul(p.Scale, peel.Add(peel.Sum(peel.Mul(p.Layers[0].W, p.Layers[0].W)), peel.Sum(p.Layers[1].W)))
	}
	got := transforms.Vmap(loss)(st).Float64s()
	for k, p := range ps {
		if want := loss(p).Item(); got[k] != want {
			t.Errorf("ensemble member %d: %v, want %v", k, got[k], want)
		}
	}
}

func TestRavel(t *testing.T) {
	p := sample(0)
	p.Layers[1].B = peel.FromFloat32s([]float32{-1}) // mixed dtypes promote
	vec, unravel := tree.Ravel(p)
	if !slices.Equal(vec.Shape(), []int{8}) || vec.DType() != peel.Float64 {
		t.Fatalf("Ravel gave %s", vec.TypeString())
	}
	if got := vec.Float64s(); !slices.Equal(got, []float64{1, 2, 3, 0.5, 4, 5, -1, 2}) {
		t.Fatalf("Ravel values %v", got)
	}
	q := unravel(peel.Mul(vec, 2.0))
	if q.Layers[1].B.DType() != peel.Float32 || q.Layers[1].B.Float32s()[0] != -2 {
		t.Errorf("unravel dtype/value: %s %v", q.Layers[1].B.TypeString(), q.Layers[1].B)
	}
	if got := q.Layers[0].W.Float64s(); !slices.Equal(got, []float64{2, 4, 6}) {
		t.Errorf("unravel W %v", got)
	}
	// Ravel is differentiable: the gradient of a function of the vector
	// unravels to the gradient of the tree.
	g := transforms.Grad(func(v *peel.Tensor) *peel.Tensor {
		r := unravel(v)
		return peel.Sum(peel.Mul(r.Layers[0].W, r.Layers[0].W))
	})(vec).Float64s()
	if !slices.Equal(g, []float64{2, 4, 6, 0, 0, 0, 0, 0}) {
		t.Errorf("Grad through unravel %v", g)
	}
}

func TestSameStructure(t *testing.T) {
	if ok, msg := tree.SameStructure(sample(0), sample(1)); !ok {
		t.Errorf("same structure reported different: %s", msg)
	}
	q := sample(0)
	q.Layers = q.Layers[:1]
	if ok, msg := tree.SameStructure(sample(0), q); ok || !strings.Contains(msg, ".Layers") {
		t.Errorf("different lengths: %v %q", ok, msg)
	}
	if ok, _ := tree.SameStructure(sample(0), layer{W: peel.Scalar(1.0), B: peel.Scalar(2.0)}); ok {
		t.Error("different types reported the same")
	}
}

type hidden struct {
	W *peel.Tensor
	b *peel.Tensor
}

func TestErrors(t *testing.T) {
	p := sample(0)
	short := sample(0)
	short.Layers = short.Layers[:1]
	bad := sample(0)
	bad.Layers[0].W = peel.Ones(peel.Float64, 4)
	cases := []struct {
		name string
		f    func()
		want []string
	}{
		{"unexported tensor", func() { tree.Leaves(hidden{W: peel.Scalar(1.0), b: peel.Scalar(2.0)}) }, []string{"tree.Leaves", "unexported", ".b"}},
		{"Map2 with a nil tensor in one tree only", func() {
			tree.Map2(func(a, b *peel.Tensor) *peel.Tensor { return peel.Add(a, b) }, layer{W: peel.Scalar(1.0)}, layer{W: peel.Scalar(1.0), B: peel.Scalar(2.0)})
		}, []string{"tree.Map2", ".B", "nil tensor (an empty subtree)"}},
		{"Unflatten count", func() { tree.Unflatten(p, tree.Leaves(p)[:2]) }, []string{"tree.Unflatten", "5 leaves, got 2"}},
		{"MapN structure", func() {
			tree.MapN(func(x []*peel.Tensor) *peel.Tensor { return x[0] }, p, short)
		}, []string{"tree.MapN", "tree 1", ".Layers"}},
		{"Stack shapes", func() { tree.Stack([]mlp{p, bad}) }, []string{"tree.Stack", ".Layers[0].W", "f64[4]"}},
		{"Stack empty", func() { tree.Stack([]mlp{}) }, []string{"tree.Stack", "no trees"}},
		{"Unstack scalar", func() { tree.Unstack(layer{W: peel.Ones(peel.Float64, 2), B: peel.Scalar(1.0)}) }, []string{"tree.Unstack", "leaf .B", "scalar"}},
		{"Unstack sizes", func() { tree.Unstack(p) }, []string{"tree.Unstack", "leaf .Layers[0].B has leading size 1", "leaf .Layers[0].W has 3"}},
		{"unravel size", func() {
			_, un := tree.Ravel(p)
			un(peel.Ones(peel.Float64, 3))
		}, []string{"tree.Ravel", "8 elements"}},
		{"map returns nil", func() { tree.Map(func(*peel.Tensor) *peel.Tensor { return nil }, p) }, []string{"tree.Map", "nil tensor"}},
	}
	for _, c := range cases {
		err := interp.Catch(c.f)
		var e *interp.Error
		if !errors.As(err, &e) {
			t.Errorf("%s: %v, want a *peel.Error", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not mention %q", c.name, err, w)
			}
		}
	}
}

// TestGlobalNormKeys checks GlobalNorm against the norm of the raveled
// tree, and Keys against SplitKeys.
func TestGlobalNormKeys(t *testing.T) {
	p := mlp{Layers: []layer{{W: peel.FromFloat64s([]float64{3, 0, 0, 0}, 2, 2), B: peel.FromFloat64s([]float64{0, 4}, 2)}}, Scale: peel.Scalar(12.0)}
	if got := tree.GlobalNorm(p).Float64s()[0]; got != 13 {
		t.Errorf("GlobalNorm = %v, want 13", got)
	}
	flat, _ := tree.Ravel(p)
	if got, want := tree.GlobalNorm(p).Float64s()[0], peel.Norm(flat).Float64s()[0]; got != want {
		t.Errorf("GlobalNorm = %v, Norm(Ravel) = %v", got, want)
	}
	if got := tree.GlobalNorm([]*peel.Tensor{}); got.DType() != peel.Float32 || got.Float32s()[0] != 0 {
		t.Errorf("GlobalNorm of no leaves = %v", got)
	}
	key := peel.Key(7)
	ks := tree.Keys(key, p)
	want := peel.SplitKeys(key, 3)
	got := tree.Leaves(ks)
	for i := range want {
		if !slices.Equal(got[i].Int64s(), want[i].Int64s()) {
			t.Errorf("key of leaf %d = %v, want %v", i, got[i].Int64s(), want[i].Int64s())
		}
	}
	if ks.Name != p.Name || len(ks.Layers) != 1 {
		t.Errorf("Keys changed the structure: %+v", ks)
	}
}

// TestMap23 checks Map2 and Map3 against MapN, and that they refuse trees
// of different structures.
func TestMap23(t *testing.T) {
	type pair struct{ A, B *peel.Tensor }
	a := pair{peel.FromFloat64s([]float64{1, 2}), peel.Scalar(3.0)}
	b := pair{peel.FromFloat64s([]float64{4, 5}), peel.Scalar(6.0)}
	c := pair{peel.FromFloat64s([]float64{7, 8}), peel.Scalar(9.0)}
	got2 := tree.Map2(func(x, y *peel.Tensor) *peel.Tensor { return x.Sub(y.Mul(2)) }, a, b)
	want2 := tree.MapN(func(l []*peel.Tensor) *peel.Tensor { return peel.Sub(l[0], peel.Mul(l[1], 2)) }, a, b)
	got3 := tree.Map3(func(x, y, z *peel.Tensor) *peel.Tensor { return x.Add(y).Mul(z) }, a, b, c)
	want3 := tree.MapN(func(l []*peel.Tensor) *peel.Tensor { return peel.Mul(peel.Add(l[0], l[1]), l[2]) }, a, b, c)
	for i, g := range append(tree.Leaves(got2), tree.Leaves(got3)...) {
		w := append(tree.Leaves(want2), tree.Leaves(want3)...)[i]
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("leaf %d: %v, want %v", i, g, w)
		}
	}
	defer func() {
		if e, ok := recover().(*peel.Error); !ok || !strings.Contains(e.Error(), "tree.Map2") {
			t.Fatalf("Map2 of trees of different structures: %v", e)
		}
	}()
	tree.Map2(func(x, y *peel.Tensor) *peel.Tensor { return x }, []*peel.Tensor{a.A}, []*peel.Tensor{a.A, b.A})
}

// optional is a tree with an optional tensor: nil is an empty subtree.
type optional struct {
	W, B *peel.Tensor
	Rest []*peel.Tensor
}

// TestNilTensorsAreEmptySubtrees: every tree function treats a nil
// tensor inside a tree as an empty subtree (JAX's None): no leaf, no
// path, and nil again where it rebuilds the tree.
func TestNilTensorsAreEmptySubtrees(t *testing.T) {
	w := peel.FromFloat64s([]float64{1, 2})
	o := optional{W: w, Rest: []*peel.Tensor{nil, peel.Scalar(3.0)}}
	if n := len(tree.Leaves(o)); n != 2 {
		t.Fatalf("Leaves: %d leaves, want 2", n)
	}
	if got := tree.Paths(o); !slices.Equal(got, []string{".W", ".Rest[1]"}) {
		t.Errorf("Paths: %v", got)
	}
	check := func(name string, r optional) {
		t.Helper()
		if r.B != nil || len(r.Rest) != 2 || r.Rest[0] != nil || r.W == nil || r.Rest[1] == nil {
			t.Errorf("%s: the nil tensors did not come back nil where they were: %+v", name, r)
		}
	}
	check("Map", tree.Map(peel.Neg, o))
	check("Map2", tree.Map2(func(a, b *peel.Tensor) *peel.Tensor { return peel.Add(a, b) }, o, o))
	check("Unflatten", tree.Unflatten(o, tree.Leaves(o)))
	check("ZerosLike", tree.ZerosLike(o))
	st := tree.Stack([]optional{o, o})
	check("Stack", st)
	for _, u := range tree.Unstack(st) {
		check("Unstack", u)
	}
	flat, back := tree.Ravel(o)
	if flat.Size() != 3 {
		t.Errorf("Ravel: %d elements, want 3", flat.Size())
	}
	check("Ravel's way back", back(flat))
	if got := tree.GlobalNorm(o).Item(); math.Abs(got-math.Sqrt(14)) > 1e-15 {
		t.Errorf("GlobalNorm = %v, want √14", got)
	}
	if ok, _ := tree.SameStructure(o, optional{W: w, Rest: []*peel.Tensor{nil, w}}); !ok {
		t.Errorf("SameStructure: trees with nil at the same places differ")
	}
	if ok, diff := tree.SameStructure(o, optional{W: w, B: w, Rest: []*peel.Tensor{nil, w}}); ok || !strings.Contains(diff, ".B") {
		t.Errorf("SameStructure: a tensor and a nil tensor at .B are the same structure (%q)", diff)
	}
	if err := peel.Catch(func() { tree.Leaves((*peel.Tensor)(nil)) }); err == nil {
		t.Errorf("Leaves of a nil tensor: no error; a nil tensor is an empty subtree, not a tree")
	}
}
