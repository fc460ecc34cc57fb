package transforms_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/transforms"
)

func smData(seed float64, shape ...int) *T {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float64, n)
	for k := range v {
		v[k] = math.Sin(0.37*float64(k)+0.011*float64(k*k)+seed) + 0.001*float64(k)
	}
	return peel.FromFloat64s(v, shape...)
}

func smNear(t *testing.T, what string, got, want *T, tol float64) {
	t.Helper()
	if !slices.Equal(got.Shape(), want.Shape()) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
	}
	near(t, what, got.Float64s(), want.Float64s(), tol)
}

// TestShardMapBasics: ShardMap over 1-D and 2-D meshes equals the same
// computation unsharded: a data-parallel sum of squares (Psum to a
// replicated result), an elementwise map (sharded in and out), and a
// tensor-parallel matrix product (rows over "data", columns over
// "model", a Psum over the contraction split over "model").
func TestShardMapBasics(t *testing.T) {
	x := smData(0.1, 8, 6)
	m1 := dist.NewMesh(dist.MeshAxis("data", 4))
	ss := transforms.ShardMap(func(x *T) *T { return dist.Psum(x.Square().Sum(), "data") }, m1, dist.P("data"), dist.P())(x)
	smNear(t, "sum of squares", ss, x.Square().Sum(), 1e-14)
	dbl := transforms.ShardMap(func(x *T) *T { return x.Mul(2).Add(dist.AxisIndex("data")) }, m1, dist.P("data", nil), dist.P("data", nil))(x)
	idx := peel.FromFloat64s([]float64{0, 0, 1, 1, 2, 2, 3, 3}, 8, 1)
	smNear(t, "elementwise with AxisIndex", dbl, x.Mul(2).Add(idx), 0)

	m2 := dist.NewMesh(dist.MeshAxis("data", 2), dist.MeshAxis("model", 3))
	w := smData(0.5, 6, 9)
	// y = x·w: x's rows over data, its columns (the contraction) over
	// model; w's rows over model; partial products summed over model.
	y := transforms.ShardMap2(func(x, w *T) *T { return dist.Psum(x.MatMul(w), "model") }, m2,
		[]any{dist.P("data", "model"), dist.P("model", nil)}, dist.P("data", nil))(x, w)
	smNear(t, "2-D tensor-parallel matmul", y, x.MatMul(w), 1e-13)
	// The result split over both axes (rows over data, columns over model).
	z := transforms.ShardMap2(func(x, w *T) *T { return x.MatMul(w) }, m2,
		[]any{dist.P("data", nil), dist.P(nil, "model")}, dist.P("data", "model"))(x, w)
	smNear(t, "2-D sharded result", z, x.MatMul(w), 1e-13)
	// Five arguments (a generated form): sharded, replicated, sharded.
	f5 := func(x, w, b, s, u *T) *T { return x.MatMul(w).Add(b).Mul(s).Sub(u) }
	b5, s5, u5 := smData(0.2, 9), smData(0.3, 9), smData(0.4, 8, 9)
	y5 := transforms.ShardMap5(f5, m2,
		[]any{dist.P("data", nil), dist.P(nil, "model"), dist.P("model"), dist.P("model"), dist.P("data", "model")}, dist.P("data", "model"))(x, w, b5, s5, u5)
	smNear(t, "ShardMap5", y5, f5(x, w, b5, s5, u5), 1e-13)
	// A spec splitting one array axis over both mesh axes.
	v := smData(0.9, 12)
	s := transforms.ShardMap(func(v *T) *T { return dist.AllGather(v, "model", dist.Tiled()) }, m2, dist.P([]string{"data", "model"}), dist.P("data"))(v)
	smNear(t, "P([data model]) then AllGather over model", s, v, 0)
}

// TestShardMapTransforms: Grad, JVP, Jacrev, Vmap and Compile of a
// ShardMap equal those of the unsharded function (f64, 1e-12), for a
// data-parallel loss with replicated parameters and a tensor-parallel
// block.
func TestShardMapTransforms(t *testing.T) {
	mesh := dist.NewMesh(dist.MeshAxis("data", 2), dist.MeshAxis("model", 2))
	type params struct{ W1, W2 *T }
	p := params{smData(0.2, 4, 6), smData(0.7, 6, 3)}
	x := smData(1.1, 8, 4)
	plain := func(p params, x *T) *T { return x.MatMul(p.W1).Tanh().MatMul(p.W2).Square().Mean() }
	// Data parallel over "data" and Megatron-style over "model": W1's
	// columns and W2's rows split over model, one Psum.
	sharded := transforms.ShardMap2(func(p params, x *T) *T {
		h := x.MatMul(p.W1).Tanh()
		out := dist.Psum(h.MatMul(p.W2), "model")
		return dist.Pmean(out.Square().Mean(), "data")
	}, mesh, []any{map[string]any{"W1": dist.P(nil, "model"), "W2": dist.P("model", nil)}, dist.P("data", nil)}, dist.P())
	smNear(t, "value", sharded(p, x), plain(p, x), 1e-13)
	g := transforms.Grad2(sharded)(p, x)
	want := transforms.Grad2(plain)(p, x)
	smNear(t, "Grad W1", g.W1, want.W1, 1e-12)
	smNear(t, "Grad W2", g.W2, want.W2, 1e-12)
	gx := transforms.Grad2At[*T](sharded, 1)(p, x)
	smNear(t, "Grad x", gx, transforms.Grad2At[*T](plain, 1)(p, x), 1e-12)
	dir := params{smData(2.2, 4, 6), smData(2.7, 6, 3)}
	_, jv := transforms.JVP2(sharded, p, x, dir, nil)
	_, jw := transforms.JVP2(plain, p, x, dir, nil)
	smNear(t, "JVP", jv, jw, 1e-12)
	jr := transforms.Jacrev2At[*T](sharded, 1)(p, x)
	smNear(t, "Jacrev", jr, transforms.Jacrev2At[*T](plain, 1)(p, x), 1e-12)
	// Second order: the gradient of the gradient's norm.
	gg := transforms.Grad(func(x *T) *T { return transforms.Grad2At[*T](sharded, 1)(p, x).Square().Sum() })(x)
	smNear(t, "Grad of Grad", gg, transforms.Grad(func(x *T) *T { return transforms.Grad2At[*T](plain, 1)(p, x).Square().Sum() })(x), 1e-11)

	// Vmap over a batch of parameter sets, and Compile.
	ps := params{peel.Stack([]*T{p.W1, p.W1.Mul(0.5)}, 0), peel.Stack([]*T{p.W2, p.W2.Neg()}, 0)}
	vs := transforms.Vmap2(sharded, transforms.InAxes(0, transforms.NoAxis))(ps, x)
	vw := transforms.Vmap2(plain, transforms.InAxes(0, transforms.NoAxis))(ps, x)
	smNear(t, "Vmap(ShardMap)", vs, vw, 1e-13)
	var ins transforms.Inspector
	c := transforms.Compile2(sharded, transforms.Inspect(&ins))
	for range 2 {
		smNear(t, "Compile(ShardMap)", c(p, x), plain(p, x), 1e-13)
	}
	if !strings.Contains(ins.Explain(p, x), "shard_map") {
		t.Errorf("the compiled program does not keep shard_map as one call:\n%s", ins.Explain(p, x))
	}
	cg := transforms.Compile2(transforms.Grad2(sharded))(p, x)
	smNear(t, "Compile(Grad(ShardMap))", cg.W1, want.W1, 1e-12)
	// Checkpoint decomposes the ShardMap into named Vmaps (its meaning
	// written with the transforms): the same gradient.
	type both struct {
		P params
		X *T
	}
	ck := transforms.Checkpoint(func(a both) *T { return sharded(a.P, a.X) }, transforms.NothingSaveable)
	gck := transforms.Grad(ck)(both{p, x})
	smNear(t, "Grad(Checkpoint(ShardMap))", gck.P.W1, want.W1, 1e-12)
}

// TestShardMapErrors: specs that do not fit the mesh or the arrays, a
// result claimed replicated that differs between devices, and a device
// that fails are *peel.Error naming what is wrong; never a hang.
func TestShardMapErrors(t *testing.T) {
	mesh := dist.NewMesh(dist.MeshAxis("data", 2), dist.MeshAxis("model", 2))
	x := smData(0.3, 6, 4)
	id := func(x *T) *T { return x }
	for _, c := range []struct {
		name string
		f    func()
		want []string
	}{
		{"unknown mesh axis", func() { transforms.ShardMap(id, mesh, dist.P("batch"), dist.P("batch"))(x) }, []string{"transforms.ShardMap", `mesh axis "batch"`, "does not have"}},
		{"not divisible", func() {
			transforms.ShardMap(id, mesh, dist.P(nil, []string{"data", "model"}), dist.P())(smData(0, 6, 6))
		}, []string{"array axis 1 of size 6 does not split into 4 blocks"}},
		{"too many entries", func() { transforms.ShardMap(id, mesh, dist.P("data", nil, nil), dist.P())(x) }, []string{"has 3 entries", "only 2 axes"}},
		{"an axis twice", func() { transforms.ShardMap(id, mesh, dist.P("data", "data"), dist.P())(smData(0, 4, 4)) }, []string{`"data" twice`}},
		{"replicated but varying", func() { transforms.ShardMap(id, mesh, dist.P("data"), dist.P())(x) }, []string{"claimed equal on devices", "differ"}},
		{"a collective over an axis the mesh lacks", func() {
			transforms.ShardMap(func(x *T) *T { return dist.Psum(x, "batch") }, mesh, dist.P("data"), dist.P("data"))(x)
		}, []string{`axis name "batch" is not bound`, `"data", "model"`}},
		{"a device fails", func() {
			transforms.ShardMap(func(x *T) *T { return transforms.Opaque(func(x *T) *T { return x })(x) }, mesh, dist.P("data"), dist.P("data"))(x)
		}, nil},
	} {
		err := peel.Catch(c.f)
		if c.want == nil {
			continue // no hang is the check
		}
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.name, err, w)
			}
		}
	}
}

// TestShardMapCapturedWrite: a tensor the function captures, written in
// place between calls, is read as it is at each call (never a stale
// copy of an earlier call's).
func TestShardMapCapturedWrite(t *testing.T) {
	mesh := dist.NewMesh(dist.MeshAxis("data", 2))
	w := smData(0.4, 3)
	f := transforms.ShardMap(func(x *T) *T { return dist.Psum(x.Mul(w).Sum(0), "data") }, mesh, dist.P("data"), dist.P())
	x := smData(0.6, 4, 3)
	for k := range 3 {
		smNear(t, "call after a write", f(x), x.Mul(w).Sum(0), 1e-14)
		peel.AddInPlace(w, float64(k+1))
	}
}
