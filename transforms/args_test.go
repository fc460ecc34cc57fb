package transforms_test

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// lin2 is a small model of two parameters and a static field.
type lin2 struct {
	W, B *T
	Name string
}

func lin2At(s float64) lin2 {
	return lin2{
		W:    peel.FromFloat64s([]float64{0.3 * s, -0.2, 0.5, 0.1, 0.4 * s, -0.6}, 2, 3),
		B:    peel.FromFloat64s([]float64{0.05, -0.1 * s, 0.2}),
		Name: "lin",
	}
}

// predict is tanh(x W + B), x of shape [n, 2] → [n, 3].
func predict(p lin2, x *T) *T { return peel.Tanh(peel.Add(peel.MatMul(x, p.W), p.B)) }

var xs = peel.FromFloat64s([]float64{0.7, -1.1, 0.2, 0.9}, 2, 2)

// ravelJacobian is the Jacobian of f over the raveled tree p, split into
// the tree's leaves: the oracle the tree Jacobians are checked against.
func ravelJacobian[A any](f func(A) *T, p A) []*T {
	flat, unravel := tree.Ravel(p)
	j := transforms.Jacrev(func(v *T) *T { return f(unravel(v)) })(flat)
	y := f(p)
	var out []*T
	off := 0
	for _, l := range tree.Leaves(p) {
		blk := peel.Slice(j, y.Rank(), off, off+l.Size(), 1)
		out = append(out, peel.Reshape(blk, append(append([]int{}, y.Shape()...), l.Shape()...)...))
		off += l.Size()
	}
	return out
}

func sameLeaves(t *testing.T, what string, got, want []*T, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d leaves, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !slices.Equal(got[i].Shape(), want[i].Shape()) {
			t.Fatalf("%s: leaf %d has shape %v, want %v", what, i, got[i].Shape(), want[i].Shape())
		}
		near(t, what, peel.AsType(got[i], peel.Float64).Float64s(), peel.AsType(want[i], peel.Float64).Float64s(), tol)
	}
}

// TestJacobianOfTree: Jacrev and Jacfwd of a function of a struct give
// the struct's structure (the static field kept), leaves of shape
// out.shape + leaf.shape, equal to the raveled Jacobian; chunking does
// not change them.
func TestJacobianOfTree(t *testing.T) {
	p := lin2At(1)
	f := func(p lin2) *T { return predict(p, xs) }
	want := ravelJacobian(f, p)
	for name, jac := range map[string]func(lin2) lin2{
		"Jacrev":         transforms.Jacrev(f),
		"Jacfwd":         transforms.Jacfwd(f),
		"Jacrev chunk 4": transforms.Jacrev(f, transforms.ChunkSize(4)),
		"Jacfwd chunk 2": transforms.Jacfwd(f, transforms.ChunkSize(2)),
		"Jacrev2 first":  func(p lin2) lin2 { return transforms.Jacrev2(predict)(p, xs) },
		"Jacfwd2 first":  func(p lin2) lin2 { return transforms.Jacfwd2(predict)(p, xs) },
		"Jacrev3 first": func(p lin2) lin2 {
			return transforms.Jacrev3(func(p lin2, x, s *T) *T { return peel.Mul(predict(p, x), s) })(p, xs, peel.Scalar(1.0))
		},
		"JacfwdAux value": func(p lin2) lin2 {
			j, _ := transforms.JacfwdAux(func(p lin2) (*T, int) { return f(p), 3 })(p)
			return j
		},
	} {
		j := jac(p)
		if j.Name != "lin" {
			t.Errorf("%s: static field is %q", name, j.Name)
		}
		sameLeaves(t, name, tree.Leaves(j), want, 1e-12)
	}
}

// TestJacobianAux: the aux data comes back as values, not differentiated.
func TestJacobianAux(t *testing.T) {
	p := lin2At(0.5)
	type aux struct {
		Y     *T
		Count int
	}
	j, a := transforms.JacrevAux(func(p lin2) (*T, aux) {
		y := predict(p, xs)
		return peel.Sum(y, 0), aux{Y: y, Count: 2}
	})(p)
	if a.Count != 2 || !a.Y.IsConcrete() {
		t.Fatalf("aux = %+v", a)
	}
	near(t, "aux value", a.Y.Float64s(), predict(p, xs).Float64s(), 0)
	sameLeaves(t, "JacrevAux", tree.Leaves(j), ravelJacobian(func(p lin2) *T { return peel.Sum(predict(p, xs), 0) }, p), 1e-12)
}

// TestJacobianOfTreeResult: JacrevTree and JacfwdTree give one Jacobian
// per result leaf, each equal to Jacrev of that leaf alone.
func TestJacobianOfTreeResult(t *testing.T) {
	type out struct {
		Y  *T
		Zs []*T
	}
	f := func(p lin2) out {
		y := predict(p, xs)
		return out{Y: y, Zs: []*T{peel.Sum(peel.Square(p.W)), peel.Exp(p.B)}}
	}
	p := lin2At(1.5)
	parts := []func(lin2) *T{
		func(p lin2) *T { return f(p).Y },
		func(p lin2) *T { return f(p).Zs[0] },
		func(p lin2) *T { return f(p).Zs[1] },
	}
	for name, jac := range map[string]func(lin2) []lin2{
		"JacrevTree": transforms.JacrevTree(f), "JacfwdTree": transforms.JacfwdTree(f),
		"JacrevTree chunk 3": transforms.JacrevTree(f, transforms.ChunkSize(3)),
	} {
		js := jac(p)
		if len(js) != len(parts) {
			t.Fatalf("%s: %d Jacobians, want %d", name, len(js), len(parts))
		}
		for k, part := range parts {
			sameLeaves(t, name, tree.Leaves(js[k]), ravelJacobian(part, p), 1e-12)
		}
	}
}

// TestHessianTreeAndHVP: the blocks of HessianTree are the raveled
// Hessian's; HVP over a tree is the Hessian times the raveled vector.
func TestHessianTreeAndHVP(t *testing.T) {
	p := lin2At(0.8)
	f := func(p lin2) *T { return peel.Sum(peel.Square(predict(p, xs))) }
	flat, unravel := tree.Ravel(p)
	h := transforms.Hessian(func(v *T) *T { return f(unravel(v)) })(flat)
	leaves := tree.Leaves(p)
	blocks := transforms.HessianTree(f)(p)
	offI := 0
	for i, li := range leaves {
		offJ := 0
		for j, lj := range tree.Leaves(blocks[i]) {
			want := peel.Slice(peel.Slice(h, 0, offI, offI+li.Size(), 1), 1, offJ, offJ+leaves[j].Size(), 1)
			want = peel.Reshape(want, append(append([]int{}, li.Shape()...), leaves[j].Shape()...)...)
			sameLeaves(t, "HessianTree block", []*T{lj}, []*T{want}, 1e-10)
			offJ += leaves[j].Size()
		}
		offI += li.Size()
	}
	v := lin2At(-0.3)
	hv := transforms.HVP(f, p, v)
	vflat, _ := tree.Ravel(v)
	want := peel.MatMul(h, peel.Reshape(vflat, vflat.Size(), 1))
	got, _ := tree.Ravel(hv)
	near(t, "HVP", got.Float64s(), want.Float64s(), 1e-10)
}

// TestGradOfPositionalArguments: Grad2/Grad3 differentiate the first
// argument; GradArgs2/3 the ones Argnums selects, zero values for the
// others; all equal Grad of a closure.
func TestGradOfPositionalArguments(t *testing.T) {
	p := lin2At(1)
	labels := peel.FromInt64s([]int64{2, 0})
	loss := func(p lin2, x, y *T) *T {
		return peel.Neg(peel.Mean(peel.TakeAlongAxis(peel.LogSoftmax(predict(p, x), 1), peel.Reshape(y, 2, 1), 1)))
	}
	wantP := transforms.Grad(func(p lin2) *T { return loss(p, xs, labels) })(p)
	wantX := transforms.Grad(func(x *T) *T { return loss(p, x, labels) })(xs)

	sameLeaves(t, "Grad3", tree.Leaves(transforms.Grad3(loss)(p, xs, labels)), tree.Leaves(wantP), 1e-14)
	v, g := transforms.ValueAndGrad3(loss)(p, xs, labels)
	near(t, "ValueAndGrad3 value", []float64{v.Item()}, []float64{loss(p, xs, labels).Item()}, 1e-14)
	sameLeaves(t, "ValueAndGrad3", tree.Leaves(g), tree.Leaves(wantP), 1e-14)
	l2 := func(p lin2, x *T) *T { return loss(p, x, labels) }
	sameLeaves(t, "Grad2", tree.Leaves(transforms.Grad2(l2)(p, xs)), tree.Leaves(wantP), 1e-14)

	gp, gx := transforms.GradArgs2(l2)(p, xs)
	sameLeaves(t, "GradArgs2 p", tree.Leaves(gp), tree.Leaves(wantP), 1e-14)
	sameLeaves(t, "GradArgs2 x", []*T{gx}, []*T{wantX}, 1e-14)
	if gp.Name != "lin" {
		t.Errorf("GradArgs2 lost the static field: %q", gp.Name)
	}
	gp, gx = transforms.GradArgs2(l2, transforms.Argnums(1))(p, xs)
	if gp.W != nil || gp.B != nil || gp.Name != "" {
		t.Errorf("GradArgs2 Argnums(1): the first gradient is %+v, want the zero value", gp)
	}
	sameLeaves(t, "GradArgs2 Argnums(1)", []*T{gx}, []*T{wantX}, 1e-14)
	g3p, g3x, g3y := transforms.GradArgs3(loss, transforms.Argnums(1, 0))(p, xs, labels)
	if g3y != nil {
		t.Errorf("GradArgs3: labels gradient %v, want nil", g3y)
	}
	sameLeaves(t, "GradArgs3", append(tree.Leaves(g3p), g3x), append(tree.Leaves(wantP), wantX), 1e-14)

	wantError(t, func() { transforms.GradArgs2(l2, transforms.Argnums())(p, xs) }, "transforms.GradArgs2", "Argnums is empty")
	wantError(t, func() { transforms.GradArgs2(l2, transforms.Argnums(0, 0))(p, xs) }, "repeats argument 0")
	wantError(t, func() { transforms.GradArgs2(l2, transforms.Argnums(2))(p, xs) }, "index 2 is out of range for a function of 2 arguments")
	// Differentiating the labels is an error naming their path.
	wantError(t, func() { transforms.GradArgs3(loss)(p, xs, labels) }, "transforms.GradArgs3", "args[2]", "i64")
	aux := func(p lin2, x *T) (*T, string) { return l2(p, x), "aux" }
	ga, s := transforms.GradAux2(aux)(p, xs)
	if s != "aux" {
		t.Errorf("GradAux2 aux = %q", s)
	}
	sameLeaves(t, "GradAux2", tree.Leaves(ga), tree.Leaves(wantP), 1e-14)
}

// TestJacobianOfPositionalArguments: JacrevArgs/JacfwdArgs over the
// selected arguments equal Jacobians of closures.
func TestJacobianOfPositionalArguments(t *testing.T) {
	p := lin2At(1)
	scale := peel.FromFloat64s([]float64{1.5, -0.5, 2})
	f := func(p lin2, x, s *T) *T { return peel.Mul(predict(p, x), s) }
	wantP := transforms.Jacrev(func(p lin2) *T { return f(p, xs, scale) })(p)
	wantS := transforms.Jacrev(func(s *T) *T { return f(p, xs, s) })(scale)
	wantX := transforms.Jacfwd(func(x *T) *T { return f(p, x, scale) })(xs)
	for name, jac := range map[string]func(lin2, *T, *T) (lin2, *T, *T){
		"JacrevArgs3": transforms.JacrevArgs3(f), "JacfwdArgs3": transforms.JacfwdArgs3(f),
		"JacfwdArgs3 chunk": transforms.JacfwdArgs3(f, transforms.ChunkSize(5)),
	} {
		jp, jx, js := jac(p, xs, scale)
		sameLeaves(t, name, append(tree.Leaves(jp), jx, js), append(tree.Leaves(wantP), wantX, wantS), 1e-12)
	}
	jp, jx, js := transforms.JacrevArgs3(f, transforms.Argnums(0, 2))(p, xs, scale)
	if jx != nil {
		t.Errorf("JacrevArgs3 Argnums(0, 2): x Jacobian %v, want nil", jx)
	}
	sameLeaves(t, "JacrevArgs3 Argnums(0, 2)", append(tree.Leaves(jp), js), append(tree.Leaves(wantP), wantS), 1e-12)
	f2 := func(w, b *T) *T { return peel.Tanh(peel.Add(peel.MatMul(xs, w), b)) }
	jw, jb := transforms.JacfwdArgs2(f2)(p.W, p.B)
	sameLeaves(t, "JacfwdArgs2", []*T{jw, jb}, []*T{transforms.Jacrev(func(w *T) *T { return f2(w, p.B) })(p.W), transforms.Jacrev(func(b *T) *T { return f2(p.W, b) })(p.B)}, 1e-12)
}

// TestVmapOfPositionalArguments: Vmap2/Vmap3 with positional in axes
// equal a loop over the batch; NTK-style Vmap2(Jacrev2) too.
func TestVmapOfPositionalArguments(t *testing.T) {
	p := lin2At(1)
	batch := peel.FromFloat64s([]float64{0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8, 0.9, -1.0, 1.1, 1.2}, 3, 2, 2)
	one := func(p lin2, x *T) *T { return peel.Sum(predict(p, x)) }
	got := transforms.Vmap2(one, transforms.InAxes(transforms.NoAxis, 0))(p, batch)
	var want []float64
	for i := 0; i < 3; i++ {
		want = append(want, one(p, peel.Select(batch, 0, i)).Item())
	}
	near(t, "Vmap2", got.Float64s(), want, 1e-14)

	// In axis 2 of the batch, and a per-field spec for the params.
	moved := peel.Transpose(batch, 1, 2, 0)
	ws := peel.Stack([]*T{p.W, peel.Neg(p.W), peel.Mul(p.W, peel.Scalar(2.0))}, 0)
	pb := lin2{W: ws, B: p.B, Name: "lin"}
	got = transforms.Vmap2(one, transforms.InAxes(map[string]any{"W": 0, "B": transforms.NoAxis}, 2))(pb, moved)
	want = want[:0]
	for i := 0; i < 3; i++ {
		want = append(want, one(lin2{W: peel.Select(ws, 0, i), B: p.B}, peel.Select(batch, 0, i)).Item())
	}
	near(t, "Vmap2 per-field spec", got.Float64s(), want, 1e-14)

	// One int for every argument.
	add3 := func(a, b, c *T) *T { return peel.Add(peel.Add(a, b), c) }
	v := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 3, 2)
	near(t, "Vmap3 InAxes(1)", transforms.Vmap3(add3, transforms.InAxes(1))(v, v, v).Float64s(), []float64{3, 9, 15, 6, 12, 18}, 0)

	// Per-sample gradients: Vmap3(Grad3) against a loop.
	labels := peel.FromFloat64s([]float64{0.5, -0.5, 1})
	loss := func(p lin2, x, y *T) *T { return peel.Square(peel.Sub(peel.Sum(predict(p, x)), y)) }
	ps := transforms.Vmap3(transforms.Grad3(loss), transforms.InAxes(transforms.NoAxis, 0, 0))(p, batch, labels)
	for i := 0; i < 3; i++ {
		g := transforms.Grad3(loss)(p, peel.Select(batch, 0, i), peel.Select(labels, 0, i))
		sameLeaves(t, "Vmap3(Grad3)", []*T{peel.Select(ps.W, 0, i), peel.Select(ps.B, 0, i)}, tree.Leaves(g), 1e-14)
	}

	// NTK style: per-sample Jacobians of the params.
	jac := transforms.Vmap2(transforms.Jacrev2(one), transforms.InAxes(transforms.NoAxis, 0))(p, batch)
	for i := 0; i < 3; i++ {
		j := transforms.Jacrev(func(p lin2) *T { return one(p, peel.Select(batch, 0, i)) })(p)
		sameLeaves(t, "Vmap2(Jacrev2)", []*T{peel.Select(jac.W, 0, i), peel.Select(jac.B, 0, i)}, tree.Leaves(j), 1e-14)
	}

	wantError(t, func() { transforms.Vmap2(one, transforms.InAxes(0, 0, 0))(p, batch) }, "transforms.Vmap2", "InAxes has 3 specs, but the function takes 2 arguments")
	wantError(t, func() { transforms.Vmap2(one, transforms.InAxes([]any{0}))(p, batch) }, "InAxes has 1 specs")
	wantError(t, func() {
		transforms.Vmap2(one, transforms.InAxes(map[string]any{"W": 0, "Bias": 0}, 0))(pb, batch)
	}, "transforms.Vmap2", "no entry for field B of args[0]")
	wantError(t, func() {
		transforms.Vmap2(one, transforms.InAxes(map[string]any{"W": 0, "B": 0, "C": 0}, 0))(pb, batch)
	}, "the spec has an entry \"C\"", "args[0]")
	wantError(t, func() { transforms.Vmap2(one)(pb, peel.Reshape(batch, 2, 6)) }, "mapped arguments have different sizes", "args[0].W: 3", "args[1]: 2")
}

// TestVJPJVPOfPositionalArguments: VJP2/3 and JVP2/3 equal the one-
// argument forms over a closure; a zero-valued tangent is zero.
func TestVJPJVPOfPositionalArguments(t *testing.T) {
	p := lin2At(1)
	out, pb := transforms.VJP2(predict, p, xs)
	ct := peel.OnesLike(out)
	gp, gx := pb(ct)
	_, pbp := transforms.VJP(func(p lin2) *T { return predict(p, xs) }, p)
	_, pbx := transforms.VJP(func(x *T) *T { return predict(p, x) }, xs)
	sameLeaves(t, "VJP2", append(tree.Leaves(gp), gx), append(tree.Leaves(pbp(ct)), pbx(ct)), 1e-14)
	_, pb3 := transforms.VJP3(func(p lin2, x *T, n int) *T { return predict(p, x) }, p, xs, 7)
	g3p, g3x, n := pb3(ct)
	if n != 7 {
		t.Errorf("VJP3 kept static %d, want 7", n)
	}
	sameLeaves(t, "VJP3", append(tree.Leaves(g3p), g3x), append(tree.Leaves(pbp(ct)), pbx(ct)), 1e-14)

	tp := lin2At(-1)
	tx := peel.OnesLike(xs)
	_, both := transforms.JVP2(predict, p, xs, tp, tx)
	_, onlyP := transforms.JVP2(predict, p, xs, tp, nil)
	_, onlyX := transforms.JVP2(predict, p, xs, lin2{}, tx)
	_, wantP := transforms.JVP(func(p lin2) *T { return predict(p, xs) }, p, tp)
	_, wantX := transforms.JVP(func(x *T) *T { return predict(p, x) }, xs, tx)
	near(t, "JVP2 x only", onlyX.Float64s(), wantX.Float64s(), 1e-14)
	near(t, "JVP2 p only", onlyP.Float64s(), wantP.Float64s(), 1e-14)
	near(t, "JVP2 both", both.Float64s(), peel.Add(wantP, wantX).Float64s(), 1e-14)
	_, t3 := transforms.JVP3(func(p lin2, x, s *T) *T { return peel.Mul(predict(p, x), s) }, p, xs, peel.Scalar(1.0), tp, nil, nil)
	near(t, "JVP3", t3.Float64s(), wantP.Float64s(), 1e-14)
	wantError(t, func() { transforms.JVP2(predict, p, xs, tp, peel.Zeros(peel.Float64, 3)) }, "transforms.JVP2", "tangent leaf args[1] is f64[3]", "[in jvp]")
}

// TestTreeJacobianProperty: for random trees of leaves of random shape
// (zero sizes included) and dtype, the tree Jacobians in both modes equal
// the raveled Jacobian block by block.
func TestTreeJacobianProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 3).Draw(rt, "leaves")
		ps := make([]*T, n)
		for i := range ps {
			shape := rapid.SliceOfN(rapid.IntRange(0, 3), 0, 2).Draw(rt, "shape")
			size := 1
			for _, d := range shape {
				size *= d
			}
			vals := make([]float64, size)
			for k := range vals {
				vals[k] = rapid.Float64Range(-1, 1).Draw(rt, "v")
			}
			ps[i] = peel.FromFloat64s(vals, shape...)
		}
		outN := rapid.IntRange(0, 3).Draw(rt, "out")
		f := func(ps []*T) *T {
			acc := peel.Zeros(peel.Float64, outN)
			for i, l := range ps {
				s := peel.Sum(peel.Sin(peel.Mul(l, peel.Scalar(float64(i+1)))))
				acc = peel.Add(acc, peel.Mul(peel.Arange(peel.Float64, 1, float64(outN)+1, 1), s))
			}
			return peel.Tanh(acc)
		}
		want := ravelJacobian(f, ps)
		sameLeaves(t, "Jacrev", transforms.Jacrev(f)(ps), want, 1e-12)
		sameLeaves(t, "Jacfwd", transforms.Jacfwd(f)(ps), want, 1e-12)
	})
}

// TestJacobianErrorsNamePaths: a Jacobian's errors name the leaf of the
// argument or result at fault.
func TestJacobianErrorsNamePaths(t *testing.T) {
	type mixed struct {
		W *T
		N *T // int64: not differentiable
	}
	m := mixed{W: peel.FromFloat64s([]float64{1, 2}), N: peel.FromInt64s([]int64{1})}
	wantError(t, func() { transforms.Jacrev(func(m mixed) *T { return m.W })(m) }, "transforms.Jacrev", "leaf .N", "i64")
	type out struct{ Y, K *T }
	x := peel.FromFloat64s([]float64{1, 2})
	wantError(t, func() {
		transforms.JacfwdTree(func(x *T) out { return out{Y: x, K: peel.ArgMax(x)} })(x)
	}, "transforms.JacfwdTree", "result leaf .K", "float")
}

// TestExplicitNilAxisIsNotMapped: nil means "not mapped" wherever it is
// given, at the top of a spec as inside a prefix (before, a top-level
// InAxes(nil) meant axis 0).
func TestExplicitNilAxisIsNotMapped(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2})
	got := transforms.Vmap(func(x *T) *T { return peel.Sum(x) }, transforms.InAxes(nil), transforms.AxisSize(3))(x)
	near(t, "Vmap InAxes(nil)", got.Float64s(), []float64{3, 3, 3}, 0)
	got = transforms.Vmap2(func(a, b *T) *T { return peel.Add(a, b) }, transforms.InAxes(0, nil))(x, x)
	near(t, "Vmap2 InAxes(0, nil)", got.Float64s(), []float64{2, 3, 3, 4}, 0)
	wantError(t, func() {
		transforms.Vmap(func(x *T) *T { return peel.Sum(x) }, transforms.OutAxes(nil))(x)
	}, "batched but its out axis is NoAxis")
}

// TestJVPTreeWithIntLeaf: JVP along a tree whose int leaf has a tangent
// (ignored) works; the tangent check once saw that leaf dropped from its
// own slice and dereferenced nil.
func TestJVPTreeWithIntLeaf(t *testing.T) {
	type m struct{ W, N *T }
	x := m{W: peel.FromFloat64s([]float64{1, 2}), N: peel.FromInt64s([]int64{3})}
	f := func(p m) m { return m{W: peel.Mul(p.W, p.W), N: p.N} }
	y, ty := transforms.JVP(f, x, x)
	near(t, "JVP value", y.W.Float64s(), []float64{1, 4}, 0)
	near(t, "JVP tangent", ty.W.Float64s(), []float64{2, 8}, 0)
	if got := ty.N.Int64s(); len(got) != 1 || got[0] != 0 {
		t.Errorf("int leaf tangent %v, want zeros", ty.N)
	}
	_, t2 := transforms.JVP2(func(a m, s *T) *T { return peel.Mul(a.W, s) }, x, peel.Scalar(2.0), x, nil)
	near(t, "JVP2 tangent", t2.Float64s(), []float64{2, 4}, 0)
}
