package dist_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/transforms"
)

type T = peel.Tensor

// data returns a deterministic f64 tensor of the shape with distinct
// entries (no ties for Pmax/Pmin).
func data(seed float64, shape ...int) *T {
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

func near(t *testing.T, what string, got, want *T, tol float64) {
	t.Helper()
	if fmt.Sprint(got.Shape()) != fmt.Sprint(want.Shape()) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
	}
	g, w := got.Float64s(), want.Float64s()
	for i := range g {
		if d := math.Abs(g[i] - w[i]); !(d <= tol*(1+math.Abs(w[i]))) {
			t.Fatalf("%s: element %d = %v, want %v", what, i, g[i], w[i])
		}
	}
}

// lanes returns the n slices of xs along axis 0.
func lanes(xs *T) []*T {
	out := make([]*T, xs.Shape()[0])
	for i := range out {
		out[i] = peel.Select(xs, 0, i)
	}
	return out
}

// collectiveCase is a collective under a named Vmap of 4 lanes over
// inputs [4, 6, 4], with the explicit computation over the batch (the
// oracle: per lane, from all lanes' values).
type collectiveCase struct {
	name   string
	f      func(x *T) *T
	oracle func(all []*T, i int) *T
	linear bool
}

func collectiveCases() []collectiveCase {
	sum := func(all []*T) *T { return peel.Sum(peel.Stack(all, 0), 0) }
	block := func(x *T, axis, k, n int) *T { m := x.Shape()[axis] / n; return peel.Narrow(x, axis, k*m, m) }
	ring := [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}}
	return []collectiveCase{
		{"Psum", func(x *T) *T { return dist.Psum(x, "i") }, func(all []*T, i int) *T { return sum(all) }, true},
		{"Pmean", func(x *T) *T { return dist.Pmean(x, "i") }, func(all []*T, i int) *T { return sum(all).Div(4) }, true},
		{"Pmax", func(x *T) *T { return dist.Pmax(x, "i") }, func(all []*T, i int) *T { return peel.Max(peel.Stack(all, 0), 0) }, false},
		{"Pmin", func(x *T) *T { return dist.Pmin(x, "i") }, func(all []*T, i int) *T { return peel.Min(peel.Stack(all, 0), 0) }, false},
		{"AllGather", func(x *T) *T { return dist.AllGather(x, "i", dist.OnAxis(1)) }, func(all []*T, i int) *T { return peel.Stack(all, 1) }, true},
		{"AllGather/tiled", func(x *T) *T { return dist.AllGather(x, "i", dist.OnAxis(-1), dist.Tiled()) }, func(all []*T, i int) *T { return peel.Concat(all, 1) }, true},
		{"PsumScatter/tiled", func(x *T) *T { return dist.PsumScatter(x, "i", dist.OnAxis(1), dist.Tiled()) }, func(all []*T, i int) *T { return block(sum(all), 1, i, 4) }, true},
		{"PsumScatter", func(x *T) *T { return dist.PsumScatter(x, "i", dist.OnAxis(1)) }, func(all []*T, i int) *T { return peel.Select(sum(all), 1, i) }, true},
		{"AllToAll", func(x *T) *T { return dist.AllToAll(x, "i", 1, 0) }, func(all []*T, i int) *T {
			bs := make([]*T, len(all))
			for k, a := range all {
				bs[k] = block(a, 1, i, 4)
			}
			return peel.Concat(bs, 0)
		}, true},
		{"AllToAll/same", func(x *T) *T { return dist.AllToAll(x, "i", 0, 0) }, func(all []*T, i int) *T {
			bs := make([]*T, len(all))
			for k, a := range all {
				bs[k] = block(a, 0, i, 4)
			}
			return peel.Concat(bs, 0)
		}, true},
		{"Ppermute", func(x *T) *T { return dist.Ppermute(x, "i", ring) }, func(all []*T, i int) *T { return all[(i+3)%4] }, true},
		{"Ppermute/partial", func(x *T) *T { return dist.Ppermute(x, "i", [][2]int{{0, 2}, {3, 1}}) }, func(all []*T, i int) *T {
			switch i {
			case 2:
				return all[0]
			case 1:
				return all[3]
			}
			return peel.Zeros(peel.Float64, all[0].Shape()...)
		}, true},
		{"Ppermute/cycle3", func(x *T) *T { return dist.Ppermute(x, "i", [][2]int{{0, 2}, {2, 3}, {3, 0}}) }, func(all []*T, i int) *T {
			// Neither an involution nor a full ring: lane 1 receives nothing.
			switch i {
			case 2:
				return all[0]
			case 3:
				return all[2]
			case 0:
				return all[3]
			}
			return peel.Zeros(peel.Float64, all[0].Shape()...)
		}, true},
		{"AxisIndex", func(x *T) *T { return x.Mul(dist.AxisIndex("i")) }, func(all []*T, i int) *T { return all[i].Mul(float64(i)) }, true},
	}
}

// TestCollectivesUnderVmap: each collective under Vmap with an axis name
// equals the explicit computation over the batch, lane by lane.
func TestCollectivesUnderVmap(t *testing.T) {
	xs := data(0.3, 4, 8, 4)
	for _, c := range collectiveCases() {
		t.Run(c.name, func(t *testing.T) {
			got := transforms.Vmap(c.f, transforms.AxisName("i"))(xs)
			all := lanes(xs)
			for i := range all {
				near(t, fmt.Sprintf("lane %d", i), peel.Select(got, 0, i), c.oracle(all, i), 1e-14)
			}
			// Compiled, both ways round.
			near(t, "Compile(Vmap)", transforms.Compile(transforms.Vmap(c.f, transforms.AxisName("i")))(xs), got, 1e-14)
			near(t, "Vmap(Compile)", transforms.Vmap(transforms.Compile(c.f), transforms.AxisName("i"))(xs), got, 1e-14)
			// The batch at another in and out axis.
			moved := transforms.Vmap(c.f, transforms.AxisName("i"), transforms.InAxes(2), transforms.OutAxes(1))(peel.MoveAxis(xs, 0, 2))
			near(t, "InAxes(2)/OutAxes(1)", peel.MoveAxis(moved, 1, 0), got, 1e-14)
		})
	}
}

// TestCollectiveDerivatives: Grad, JVP and Jacrev of a function of the
// whole batch built from each collective equal finite differences, and
// the transpose of each linear collective satisfies ⟨Ax, y⟩ = ⟨x, Aᵀy⟩
// (Aᵀ from VJP).
func TestCollectiveDerivatives(t *testing.T) {
	xs := data(0.7, 4, 8, 4)
	for _, c := range collectiveCases() {
		t.Run(c.name, func(t *testing.T) {
			A := transforms.Vmap(c.f, transforms.AxisName("i"))
			F := func(x *T) *T { return A(x.Tanh()).Sin().Sum() }
			g := transforms.Grad(F)(xs)
			dir := data(1.9, 4, 8, 4)
			_, jv := transforms.JVP(F, xs, dir)
			const h = 1e-6
			fd := F(xs.Add(dir.Mul(h))).Sub(F(xs.Sub(dir.Mul(h)))).Div(2 * h)
			near(t, "JVP vs finite differences", jv, fd, 1e-7)
			near(t, "Grad·dir vs JVP", g.Mul(dir).Sum(), jv, 1e-12)
			jr := transforms.Jacrev(F)(xs)
			near(t, "Jacrev vs Grad", jr, g, 1e-13)
			if !c.linear {
				return
			}
			y := data(2.3, peel.Stack(lanes(A(xs)), 0).Shape()...)
			ax, pullback := transforms.VJP(A, xs)
			aty := pullback(y)
			near(t, "<Ax, y> = <x, Aᵀy>", ax.Mul(y).Sum(), xs.Mul(aty).Sum(), 1e-12)
		})
	}
}

// TestCollectiveDerivativesInside: derivatives taken inside the named
// Vmap, where the transpose of each collective runs over the named axis
// itself (outside, batching turns a ppermute into a gather first): per
// lane, Grad and Jacrev of the lane's loss and VJP of the collective
// equal the derivative of the lanes' total taken outside, and JVP inside
// equals JVP outside, lane by lane.
func TestCollectiveDerivativesInside(t *testing.T) {
	xs := data(0.7, 4, 8, 4)
	dir := data(1.9, 4, 8, 4)
	for _, c := range collectiveCases() {
		t.Run(c.name, func(t *testing.T) {
			loss := func(x *T) *T { return c.f(x.Tanh()).Sin().Sum() }
			outside := transforms.Grad(func(xs *T) *T { return transforms.Vmap(loss, transforms.AxisName("i"))(xs).Sum() })(xs)
			inside := transforms.Vmap(transforms.Grad(loss), transforms.AxisName("i"))(xs)
			near(t, "Vmap(Grad) vs Grad(sum of Vmap)", inside, outside, 1e-13)
			jr := transforms.Vmap(transforms.Jacrev(loss), transforms.AxisName("i"))(xs)
			near(t, "Vmap(Jacrev) vs Grad(sum of Vmap)", jr, outside, 1e-13)
			near(t, "Compile(Vmap(Grad))", transforms.Compile(transforms.Vmap(transforms.Grad(loss), transforms.AxisName("i")))(xs), outside, 1e-13)
			_, jvOut := transforms.JVP(transforms.Vmap(loss, transforms.AxisName("i")), xs, dir)
			jvIn := transforms.Vmap2(func(x, d *T) *T {
				_, t := transforms.JVP(loss, x, d)
				return t
			}, transforms.AxisName("i"))(xs, dir)
			near(t, "Vmap(JVP) vs JVP(Vmap)", jvIn, jvOut, 1e-13)
			if !c.linear {
				return
			}
			// The collective's own transpose inside: ⟨Ax, y⟩ summed over
			// the lanes equals ⟨x, Aᵀy⟩ summed over the lanes.
			ax := transforms.Vmap(c.f, transforms.AxisName("i"))(xs)
			y := data(2.3, ax.Shape()...)
			aty := transforms.Vmap2(func(x, y *T) *T {
				_, pullback := transforms.VJP(c.f, x)
				return pullback(y)
			}, transforms.AxisName("i"))(xs, y)
			near(t, "<Ax, y> = <x, Aᵀy> inside", ax.Mul(y).Sum(), xs.Mul(aty).Sum(), 1e-12)
		})
	}
}

// TestNestedNames: collectives over an outer name from an inner Vmap, over
// both names at once, and an inner binding shadowing an outer one.
func TestNestedNames(t *testing.T) {
	xs := data(0.1, 3, 4, 5) // i: 3 lanes, j: 4 lanes
	both := func(f func(x *T) *T) *T {
		return transforms.Vmap(transforms.Vmap(f, transforms.AxisName("j")), transforms.AxisName("i"))(xs)
	}
	total := peel.Sum(xs, 0, 1)
	overI := peel.Sum(xs, 0)
	overJ := peel.Sum(xs, 1)
	got := both(func(x *T) *T { return dist.Psum(x, "i", "j") })
	gotI := both(func(x *T) *T { return dist.Psum(x, "i") })
	gotJ := both(func(x *T) *T { return dist.Psum(x, "j") })
	for i := range 3 {
		for j := range 4 {
			at := func(r *T) *T { return peel.Select(peel.Select(r, 0, i), 0, j) }
			near(t, "Psum(i, j)", at(got), total, 1e-14)
			near(t, "Psum(i) from the inner Vmap", at(gotI), peel.Select(overI, 0, j), 1e-14)
			near(t, "Psum(j)", at(gotJ), peel.Select(overJ, 0, i), 1e-14)
		}
	}
	idx := both(func(x *T) *T { return dist.AxisIndex("i").Mul(10).Add(dist.AxisIndex("j")) })
	if fmt.Sprint(idx.Int64s()) != "[0 1 2 3 10 11 12 13 20 21 22 23]" {
		t.Errorf("AxisIndex(i)·10 + AxisIndex(j) = %v", idx.Int64s())
	}
	// An inner Vmap binding "i" again shadows the outer one.
	sh := transforms.Vmap(transforms.Vmap(func(x *T) *T { return dist.Psum(x, "i") }, transforms.AxisName("i")), transforms.AxisName("i"))(xs)
	near(t, "shadowed", peel.Select(sh, 0, 1), peel.Select(gotJ, 0, 1), 1e-14)
}

// TestErrors: an unbound name, a bad permutation, a dimension that does
// not split, a name given twice, and ChunkSize with AxisName are
// *peel.Error naming the op and what is wrong; never a wrong number.
func TestErrors(t *testing.T) {
	xs := data(0.2, 4, 6)
	in := func(f func(x *T) *T) func() { return func() { transforms.Vmap(f, transforms.AxisName("i"))(xs) } }
	for _, c := range []struct {
		name string
		f    func()
		want []string
	}{
		{"unbound", func() { dist.Psum(xs, "i") }, []string{"dist.Psum", `axis name "i" is not bound`, "none is bound here"}},
		{"unbound inside Vmap", in(func(x *T) *T { return dist.Pmean(x, "j") }), []string{"dist.Pmean", `axis name "j"`, `the names bound here are "i"`}},
		{"AxisIndex unbound", func() { dist.AxisIndex("data") }, []string{"dist.AxisIndex", `"data"`}},
		{"not a permutation", in(func(x *T) *T { return dist.Ppermute(x, "i", [][2]int{{0, 1}, {2, 1}}) }), []string{"dist.Ppermute", "destination 1 appears twice"}},
		{"perm out of range", in(func(x *T) *T { return dist.Ppermute(x, "i", [][2]int{{0, 4}}) }), []string{"dist.Ppermute", "out of range for an axis of size 4"}},
		{"scatter does not split", in(func(x *T) *T { return dist.PsumScatter(x, "i", dist.Tiled()) }), []string{"dist.PsumScatter", "size 6 does not split into 4 blocks"}},
		{"scatter of the wrong size", in(func(x *T) *T { return dist.PsumScatter(x, "i") }), []string{"dist.PsumScatter", "has size 6, not 4"}},
		{"all_to_all does not split", in(func(x *T) *T { return dist.AllToAll(x.Reshape(3, 2), "i", 0, 1) }), []string{"dist.AllToAll", "does not split into 4 blocks"}},
		{"a name twice", in(func(x *T) *T { return dist.Psum(x, "i", "i") }), []string{"dist.Psum", `"i" is given twice`}},
		{"ChunkSize", func() {
			transforms.Vmap(func(x *T) *T { return dist.Psum(x, "i") }, transforms.AxisName("i"), transforms.ChunkSize(2))(xs)
		}, []string{"ChunkSize 2 with AxisName", "whole batch of 4"}},
	} {
		err := peel.Catch(c.f)
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

// TestCollectivesCompose: collectives inside control flow, Checkpoint,
// Functionalize and a custom rule, all under a named Vmap, and
// per-sample gradients averaged with Pmean (data parallelism under
// Vmap) equal the batch gradient; each against the plain computation
// (f64, 1e-13).
func TestCollectivesCompose(t *testing.T) {
	xs := data(0.4, 4, 3)
	vm := func(f func(x *T) *T) *T { return transforms.Vmap(f, transforms.AxisName("i"))(xs) }
	sum := peel.Sum(xs, 0)
	lane := func(r *T, i int) *T { return peel.Select(r, 0, i) }

	// Scan: carry ← carry + psum(carry·x) for three steps.
	scanned := vm(func(x *T) *T {
		c, _ := transforms.Scan(func(c *T, _ *T) (*T, *T) { return c.Add(dist.Psum(c.Mul(x), "i")), c }, x, peel.Zeros(peel.Float64, 3))
		return c
	})
	// The oracle of the scan: every lane's carry c_k follows
	// c_k ← c_k + Σ_m c_m·x_m, with c_m(0) = x_m.
	cs := lanes(xs)
	for range 3 {
		var s *T
		for m := range 4 {
			s = addOr(s, cs[m].Mul(lane(xs, m)))
		}
		for m := range cs {
			cs[m] = cs[m].Add(s)
		}
	}
	for i := range 4 {
		near(t, "Scan with Psum", lane(scanned, i), cs[i], 1e-13)
	}

	// Cond on a per-lane predicate, each branch with a collective.
	cond := vm(func(x *T) *T {
		return transforms.Cond(peel.Greater(peel.Sum(x), 0.0),
			func(x *T) *T { return dist.Psum(x, "i") },
			func(x *T) *T { return dist.Pmax(x, "i") }, x)
	})
	for i := range 4 {
		want := peel.Max(xs, 0)
		if peel.Sum(lane(xs, i)).Item() > 0 {
			want = sum
		}
		near(t, "Cond with collectives", lane(cond, i), want, 1e-13)
	}

	// WhileLoop: double until the psum over the lanes exceeds 10.
	wl := vm(func(x *T) *T {
		return transforms.WhileLoop(func(c *T) *T { return peel.Less(dist.Psum(c.Abs(), "i").Sum(), 10.0) },
			func(c *T) *T { return c.Mul(2) }, x)
	})
	scale := 1.0
	for peel.Sum(peel.Abs(xs)).Item()*scale < 10 {
		scale *= 2
	}
	near(t, "WhileLoop with Psum", wl, xs.Mul(scale), 1e-13)

	// Checkpoint, and its gradient.
	ck := transforms.Checkpoint(func(x *T) *T { return dist.Psum(x.Sin(), "i").Mul(x) }, transforms.NothingSaveable)
	plain := func(x *T) *T { return dist.Psum(x.Sin(), "i").Mul(x) }
	near(t, "Checkpoint", vm(ck), vm(plain), 1e-14)
	gck := transforms.Grad(func(xs *T) *T { return transforms.Vmap(ck, transforms.AxisName("i"))(xs).Sum() })(xs)
	gpl := transforms.Grad(func(xs *T) *T { return transforms.Vmap(plain, transforms.AxisName("i"))(xs).Sum() })(xs)
	near(t, "Grad(Checkpoint)", gck, gpl, 1e-13)

	// Functionalize: an in-place write of a collective's result.
	fz := vm(transforms.Functionalize(func(x *T) *T {
		y := peel.Clone(x)
		peel.CopyInto(peel.Narrow(y, 0, 0, 1), dist.Psum(peel.Narrow(x, 0, 0, 1), "i"))
		return y
	}))
	for i := range 4 {
		want := peel.Concat([]*T{peel.Narrow(sum, 0, 0, 1), peel.Narrow(lane(xs, i), 0, 1, 2)}, 0)
		near(t, "Functionalize with Psum", lane(fz, i), want, 1e-14)
	}

	// A custom VJP whose forward pass uses a collective.
	cv := transforms.CustomVJP(plain,
		func(x *T) (*T, *T) { return plain(x), x },
		func(x, ct *T) *T {
			_, pb := transforms.VJP(plain, x)
			return pb(ct)
		})
	near(t, "CustomVJP", vm(cv), vm(plain), 1e-14)
	gcv := transforms.Grad(func(xs *T) *T { return transforms.Vmap(cv, transforms.AxisName("i"))(xs).Sum() })(xs)
	near(t, "Grad(CustomVJP)", gcv, gpl, 1e-13)

	// Per-sample gradients averaged with Pmean equal the batch-mean
	// gradient.
	w := data(0.9, 3)
	loss := func(w, x *T) *T { return x.Mul(w).Sum().Tanh().Square() }
	avg := transforms.Vmap2(func(w, x *T) *T { return dist.Pmean(transforms.Grad2(loss)(w, x), "i") },
		transforms.InAxes(transforms.NoAxis, 0), transforms.AxisName("i"))(w, xs)
	batch := transforms.Grad(func(w *T) *T {
		return transforms.Vmap2(loss, transforms.InAxes(transforms.NoAxis, 0))(w, xs).Mean()
	})(w)
	for i := range 4 {
		near(t, "Pmean of per-sample gradients", lane(avg, i), batch, 1e-14)
	}
}

func addOr(a, b *T) *T {
	if a == nil {
		return b
	}
	return a.Add(b)
}

// TestInvariantOperands: collectives of values that do not vary along
// the axis (a captured tensor, a constant, of any dtype, bool included)
// are answered by the axis's level: Psum gives size·x, AllGather the
// copies.
func TestInvariantOperands(t *testing.T) {
	c := data(0.5, 3)
	xs := data(0.1, 4, 3)
	got := transforms.Vmap(func(x *T) *T { return dist.Psum(c, "i").Add(x.Mul(0)) }, transforms.AxisName("i"))(xs)
	for i := range 4 {
		near(t, "Psum of a captured tensor", peel.Select(got, 0, i), c.Mul(4), 1e-15)
	}
	b := peel.Greater(c, 0.0)
	gb := transforms.Vmap(func(x *T) *T { return dist.AllGather(b, "i") }, transforms.AxisName("i"))(xs)
	if fmt.Sprint(gb.Shape()) != "[4 4 3]" || fmt.Sprint(peel.Select(peel.Select(gb, 0, 2), 0, 3).Bools()) != fmt.Sprint(b.Bools()) {
		t.Errorf("AllGather of a captured bool tensor: %v", gb)
	}
	n := transforms.Vmap(func(x *T) *T { return dist.Psum(peel.FromInt64s([]int64{2, 3}), "i") }, transforms.AxisName("i"))(xs)
	if fmt.Sprint(peel.Select(n, 0, 1).Int64s()) != "[8 12]" {
		t.Errorf("Psum of an i64 constant: %v", n)
	}
}
