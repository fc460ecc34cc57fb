package transforms_test

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
)

// fzShape is the shape of every program's input in the registry.
var fzShape = []int{3, 4}

// fzCase is one mutating program of the Functionalize registry. mutatesInput
// says f writes its argument; skip maps a check name ("functionalize",
// "graph", "removeviews", "removeviews_graph", "vmap", "grad") to the
// reason it is skipped (a known bug, "BUG: …").
type fzCase struct {
	name         string
	f            func(x *T) *T
	mutatesInput bool
	skip         map[string]string
}

// fzPrograms is the registry: each program writes through views of a
// tensor it creates or of its input, and reads aliases afterwards. No
// in-place op reads a source that overlaps its destination (other than
// elementwise-identically), so eager evaluation is well defined.
var fzPrograms = []fzCase{
	{name: "zeros_narrow_copy", f: func(x *T) *T {
		y := peel.Zeros(peel.Float64, 5, 4)
		peel.CopyInto(peel.Narrow(y, 0, 1, 3), x)
		peel.MulInPlace(y, 2.0)
		peel.AddInPlace(peel.Narrow(y, 0, 0, 1), peel.Keep(peel.Sum, peel.Square(x), 0))
		return y
	}},
	{name: "strided_slices", f: func(x *T) *T {
		y := peel.Zeros(peel.Float64, 3, 8)
		peel.CopyInto(peel.Slice(y, 1, 0, 8, 2), x)
		peel.CopyInto(peel.Slice(y, 1, 1, 8, 2), peel.Square(x))
		peel.MulInPlace(peel.Slice(y, 0, 0, 3, 2), -1.5)
		peel.AddInPlace(peel.Slice(peel.Slice(y, 1, 1, 8, 3), 0, 1, 3, 1), 0.25)
		return y
	}},
	{name: "select_index", f: func(x *T) *T {
		y := peel.Clone(x)
		peel.CopyInto(peel.Select(y, 1, 2), peel.Sin(peel.Select(x, 1, 0)))
		peel.AddInPlace(peel.Index(y, 0), peel.Index(x, 2))
		peel.MulInPlace(peel.Index(y, 1, 3), 3.0)
		peel.SubInPlace(peel.Select(y, 0, -1), peel.Exp(peel.Select(x, 0, 0)))
		return y
	}},
	{name: "transposed_view", f: func(x *T) *T {
		y := peel.Zeros(peel.Float64, 4, 3)
		tr := peel.Transpose(y)
		peel.CopyInto(tr, x)
		peel.AddInPlace(peel.Narrow(tr, 1, 0, 2), peel.Narrow(x, 1, 2, 2))
		peel.MulInPlace(peel.Select(tr, 0, 1), peel.Exp(peel.Select(x, 0, 2)))
		return y
	}},
	{name: "view_chain", f: func(x *T) *T {
		y := peel.Clone(x)
		n := peel.Narrow(peel.Transpose(peel.Reshape(y, 2, 6)), 0, 1, 3) // [3,2]
		peel.AddInPlace(n, peel.Reshape(peel.Narrow(peel.Reshape(x, 12), 0, 0, 6), 3, 2))
		peel.MulInPlace(peel.Select(n, 1, 0), peel.Sin(peel.Narrow(peel.Select(x, 0, 1), 0, 0, 3)))
		q := peel.Squeeze(peel.MoveAxis(peel.Unsqueeze(y, 0), 2, 0), 1) // [4,3] = yᵀ
		peel.SubInPlace(peel.Narrow(q, 0, 0, 2), peel.Narrow(peel.Transpose(x), 0, 2, 2))
		return y
	}},
	{name: "two_aliases_third_read", f: func(x *T) *T {
		y := peel.Clone(x)
		c := peel.Select(y, 1, 3) // third alias, read after the writes
		a := peel.Narrow(y, 1, 0, 2)
		b := peel.Narrow(y, 1, 2, 2)
		peel.AddInPlace(a, 1.0)
		peel.MulInPlace(b, a)
		peel.AddInPlace(a, peel.Sin(b))
		return peel.Mul(c, peel.Sum(y, 1))
	}},
	{name: "input_inplace", mutatesInput: true, f: func(x *T) *T {
		peel.MulInPlace(x, 2.0)
		peel.AddInPlace(x, peel.Sin(x))
		return peel.Sum(x, 0)
	}},
	{name: "input_through_view", mutatesInput: true, f: func(x *T) *T {
		v := peel.Narrow(x, 0, 1, 2)
		peel.CopyInto(peel.Select(v, 1, 3), peel.Exp(peel.Narrow(peel.Select(x, 1, 0), 0, 0, 2)))
		peel.MulInPlace(peel.Select(peel.Transpose(x), 0, 0), 3.0)
		return peel.Mul(v, 2.0)
	}},
	{name: "fill", f: func(x *T) *T {
		y := peel.Clone(x)
		peel.Fill(peel.Narrow(y, 1, 1, 2), 0.5)
		peel.Fill(peel.Index(y, 2, 0), 7.0)
		peel.AddInPlace(y, x)
		return peel.Mul(y, y)
	}},
	{name: "div_inplace", f: func(x *T) *T {
		y := peel.Add(peel.Square(x), 1.0)
		peel.DivInPlace(peel.Narrow(y, 0, 0, 2), peel.Add(peel.Exp(peel.Select(x, 0, 2)), 0.5))
		peel.DivInPlace(y, 2.0)
		peel.DivInPlace(peel.Select(peel.Transpose(y), 0, 3), peel.Add(peel.Square(peel.Select(x, 1, 3)), 1.5))
		return y
	}},
	{name: "return_view", f: func(x *T) *T {
		y := peel.Clone(x)
		peel.AddInPlace(y, 1.0)
		peel.MulInPlace(peel.Select(y, 0, 1), peel.Select(x, 0, 2))
		return peel.Transpose(peel.Narrow(y, 1, 1, 2))
	}},
	{name: "alias_before_write", f: func(x *T) *T {
		y := peel.Zeros(peel.Float64, 3, 4)
		a := peel.Select(y, 0, 1)
		tt := peel.Transpose(peel.Narrow(y, 1, 0, 2)) // [2,3]
		peel.CopyInto(y, x)
		peel.MulInPlace(peel.Narrow(y, 0, 1, 2), peel.Narrow(x, 0, 0, 2))
		return peel.Concat([]*T{a, peel.Reshape(tt, 6)}, 0)
	}},
	{name: "input_return_view", mutatesInput: true, f: func(x *T) *T {
		peel.MulInPlace(peel.Select(x, 0, 0), 3.0)
		peel.AddInPlace(peel.Narrow(x, 1, 2, 2), peel.Sin(peel.Narrow(x, 1, 0, 2)))
		return peel.Transpose(x)
	}},
	{name: "input_overwritten_by_scratch", mutatesInput: true, f: func(x *T) *T {
		y := peel.Zeros(peel.Float64, 3, 4)
		peel.CopyInto(y, x)
		peel.CopyInto(x, peel.Sin(y))
		peel.AddInPlace(y, x)
		return y
	}},
}

// fzData returns deterministic inputs of shape fzShape, different per seed.
func fzData(seed int, shape []int) []float64 {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = 1.2 * math.Sin(1.3*float64(i)+0.7*float64(seed)+0.1)
	}
	return v
}

func fzInput(seed int) *T { return peel.FromFloat64s(fzData(seed, fzShape), fzShape...) }

// fzWeighted returns Σ w⊙f(x) with fixed distinct weights w, so a
// gradient that permutes or drops elements is caught.
func fzWeighted(f func(*T) *T) func(*T) *T {
	return func(x *T) *T {
		y := f(x)
		w := make([]float64, y.Size())
		for i := range w {
			w[i] = 0.5 + 0.25*float64((i*7)%5)
		}
		return peel.Sum(peel.Mul(y, peel.FromFloat64s(w, y.Shape()...)))
	}
}

func graphHas(g *interp.Graph, bad func(e *interp.Eqn) bool) string {
	for _, e := range g.Eqns {
		if bad(e) {
			return e.Prim.Name
		}
	}
	return ""
}

func isView(e *interp.Eqn) bool {
	return e.Prim.Kind == interp.ViewKind && e.Prim.Name != "broadcast_in_dim"
}

func isMutation(e *interp.Eqn) bool { return e.Prim.Kind == interp.Mutation }

// viewNotCopied returns a view primitive (other than broadcast_in_dim)
// whose result is used by anything but copy, or is an output: RemoveViews
// copies every view's result at once.
func viewNotCopied(g *interp.Graph) string {
	users := map[*interp.Var][]*interp.Eqn{}
	for _, e := range g.Eqns {
		for _, v := range e.In {
			users[v] = append(users[v], e)
		}
	}
	out := map[*interp.Var]bool{}
	for _, v := range g.Out {
		out[v] = true
	}
	for _, e := range g.Eqns {
		if !isView(e) {
			continue
		}
		if out[e.Out[0]] {
			return e.Prim.Name
		}
		for _, u := range users[e.Out[0]] {
			if u.Prim.Name != "copy" {
				return e.Prim.Name + " (used by " + u.Prim.Name + ")"
			}
		}
	}
	return ""
}

// fzCheck runs one named check, skipping it when the case records a reason.
func fzCheck(t *testing.T, c fzCase, check string, body func(t *testing.T)) {
	t.Run(check, func(t *testing.T) {
		if r, ok := c.skip[check]; ok {
			t.Skip(r)
		}
		body(t)
	})
}

func TestFunctionalizeSweep(t *testing.T) {
	if len(fzPrograms) < 12 {
		t.Fatalf("registry has %d programs, want at least 12", len(fzPrograms))
	}
	for _, c := range fzPrograms {
		t.Run(c.name, func(t *testing.T) {
			// Eager reference on its own copy of the input.
			xRef := fzInput(0)
			want := c.f(xRef)
			wantV, wantShape := want.Float64s(), want.Shape()
			wantIn := xRef.Float64s()
			if !c.mutatesInput {
				near(t, "program leaves its input alone", wantIn, fzData(0, fzShape), 0)
			}
			fzCheck(t, c, "functionalize", func(t *testing.T) {
				x := fzInput(0)
				got := transforms.Functionalize(c.f)(x)
				if !interp.ShapeEqual(got.Shape(), wantShape) {
					t.Fatalf("shape %v, want %v", got.Shape(), wantShape)
				}
				near(t, "output", got.Float64s(), wantV, 0)
				near(t, "caller's input after the call", x.Float64s(), wantIn, 0)
			})
			fzCheck(t, c, "graph", func(t *testing.T) {
				x := fzInput(0)
				g := transforms.MakeGraph(transforms.Functionalize(c.f), x)
				if m := graphHas(g, isMutation); m != "" {
					t.Errorf("graph has mutation %s:\n%v", m, g)
				}
				near(t, "tracing leaves the input alone", x.Float64s(), fzData(0, fzShape), 0)
				x2 := fzInput(1)
				want2 := c.f(fzInput(1)).Float64s()
				near(t, "graph eval on a fresh input", g.Eval(x2)[0].Float64s(), want2, 0)
			})
			fzCheck(t, c, "removeviews", func(t *testing.T) {
				x := fzInput(0)
				got := transforms.Functionalize(c.f, transforms.RemoveViews())(x)
				near(t, "output", got.Float64s(), wantV, 0)
				near(t, "caller's input after the call", x.Float64s(), wantIn, 0)
				g := transforms.MakeGraph(transforms.Functionalize(c.f, transforms.RemoveViews()), fzInput(0))
				if m := graphHas(g, isMutation); m != "" {
					t.Errorf("RemoveViews graph has mutation %s:\n%v", m, g)
				}
				near(t, "graph eval on a fresh input", g.Eval(fzInput(2))[0].Float64s(), c.f(fzInput(2)).Float64s(), 0)
			})
			fzCheck(t, c, "removeviews_graph", func(t *testing.T) {
				g := transforms.MakeGraph(transforms.Functionalize(c.f, transforms.RemoveViews()), fzInput(0))
				if v := viewNotCopied(g); v != "" {
					t.Errorf("RemoveViews graph has a view %s whose result is not copied at once:\n%v", v, g)
				}
			})
			fzCheck(t, c, "vmap", func(t *testing.T) {
				const batch = 3
				lanes := make([]*T, batch)
				outs := make([]*T, batch)
				var lanesAfter []float64
				for i := range lanes {
					lanes[i] = fzInput(10 + i)
				}
				xs := peel.Stack(lanes, 0)
				for i := range lanes {
					outs[i] = c.f(lanes[i])
					lanesAfter = append(lanesAfter, lanes[i].Float64s()...)
				}
				got := transforms.Vmap(transforms.Functionalize(c.f))(xs)
				near(t, "vmap(functionalize) vs loop", got.Float64s(), peel.Stack(outs, 0).Float64s(), 0)
				near(t, "batched input after the call", xs.Float64s(), lanesAfter, 0)
			})
			fzCheck(t, c, "grad", func(t *testing.T) {
				loss := fzWeighted(c.f)
				x0 := fzData(3, fzShape)
				fd := fdGrad(loss, x0, fzShape...)
				gf := transforms.Grad(transforms.Functionalize(loss))(peel.FromFloat64s(x0, fzShape...))
				near(t, "grad(Σ functionalize(f)) vs finite differences", gf.Float64s(), fd, 1e-6)
				gd := transforms.Grad(loss)(peel.FromFloat64s(x0, fzShape...))
				near(t, "grad(Σ functionalize(f)) vs grad(Σ f)", gf.Float64s(), gd.Float64s(), 1e-12)
			})
		})
	}
}

// fzLosses are mutating scalar losses for Vmap(Functionalize(Grad(loss))).
var fzLosses = []struct {
	name string
	loss func(x *T) *T
}{
	{"scratch_writes", func(x *T) *T {
		y := peel.Zeros(peel.Float64, 5, 4)
		peel.CopyInto(peel.Narrow(y, 0, 1, 3), x)
		peel.MulInPlace(peel.Narrow(y, 0, 0, 4), peel.Sin(peel.Narrow(y, 0, 1, 4)))
		peel.AddInPlace(peel.Select(peel.Transpose(y), 0, 2), peel.Concat([]*T{peel.Exp(peel.Select(x, 1, 1)), peel.Sin(peel.Narrow(peel.Select(x, 0, 0), 0, 0, 2))}, 0))
		return peel.Sum(peel.Square(y))
	}},
	{"input_writes", func(x *T) *T {
		peel.MulInPlace(x, x)
		peel.AddInPlace(peel.Select(peel.Transpose(x), 0, 1), peel.Sin(peel.Select(x, 1, 3)))
		return fzWeighted(peel.Exp)(x)
	}},
}

func TestFunctionalizeVmapGradSweep(t *testing.T) {
	for _, c := range fzLosses {
		t.Run(c.name, func(t *testing.T) {
			const batch = 3
			lanes := make([]*T, batch)
			var want []float64
			for i := range lanes {
				lanes[i] = fzInput(20 + i)
				want = append(want, fdGrad(c.loss, fzData(20+i, fzShape), fzShape...)...)
			}
			got := transforms.Vmap(transforms.Functionalize(transforms.Grad(c.loss)))(peel.Stack(lanes, 0))
			near(t, "vmap(functionalize(grad)) vs per-example finite differences", got.Float64s(), want, 1e-6)
		})
	}
}

// fzStep is one step of a random mutating program over a [4,5] base: a
// view of an earlier view, or an in-place write into one.
type fzStep struct {
	write bool
	// view: parent, kind (0 Narrow, 1 Select, 2 Transpose, 3 Slice), axis,
	// start, length/stop, step.
	parent, kind, axis, a, b, c int
	// write: dst, op (0 CopyInto, 1 AddInPlace, 2 MulInPlace), src view
	// (-1: the scalar), clone (src overlaps dst: read a copy).
	dst, op, src int
	scalar       float64
	clone        bool
}

// fzView applies a view step to x.
func fzView(s fzStep, x *T) *T {
	switch s.kind {
	case 0:
		return peel.Narrow(x, s.axis, s.a, s.b)
	case 1:
		return peel.Select(x, s.axis, s.a)
	case 2:
		return peel.Transpose(x)
	default:
		return peel.Slice(x, s.axis, s.a, s.b, s.c)
	}
}

// fzRun runs the program on base y (created from the input by the
// caller) and returns y + Σ views[sum].
func fzRun(steps []fzStep, sum int, y *T) *T {
	views := []*T{y}
	for _, s := range steps {
		if !s.write {
			views = append(views, fzView(s, views[s.parent]))
			continue
		}
		var src any = s.scalar
		if s.src >= 0 {
			src = views[s.src]
			if s.clone {
				src = peel.Clone(views[s.src])
			}
		}
		dst := views[s.dst]
		switch s.op {
		case 0:
			peel.CopyInto(dst, src)
		case 1:
			peel.AddInPlace(dst, src)
		default:
			peel.MulInPlace(dst, src)
		}
	}
	return peel.Add(y, peel.Sum(views[sum]))
}

func TestFunctionalizeRapidViewsAndWrites(t *testing.T) {
	shape := []int{4, 5}
	rapid.Check(t, func(rt *rapid.T) {
		// Draw the program against an index tensor: its views hold the base
		// offsets of their elements, which give shapes and overlaps.
		idx := make([]float64, 20)
		for i := range idx {
			idx[i] = float64(i)
		}
		ivs := []*T{peel.FromFloat64s(idx, shape...)}
		n := rapid.IntRange(1, 6).Draw(rt, "steps")
		steps := make([]fzStep, 0, n)
		for len(steps) < n {
			var s fzStep
			if rapid.Bool().Draw(rt, "write") {
				s.write = true
				s.dst = rapid.IntRange(0, len(ivs)-1).Draw(rt, "dst")
				s.op = rapid.IntRange(0, 2).Draw(rt, "op")
				s.scalar = rapid.Float64Range(-2, 2).Draw(rt, "scalar")
				s.src = -1
				var cands []int
				for i, v := range ivs {
					if interp.ShapeEqual(v.Shape(), ivs[s.dst].Shape()) {
						cands = append(cands, i)
					}
				}
				if k := rapid.IntRange(-1, len(cands)-1).Draw(rt, "src"); k >= 0 {
					s.src = cands[k]
					s.clone = fzOverlap(ivs[s.src], ivs[s.dst])
				}
				steps = append(steps, s)
				continue
			}
			s.parent = rapid.IntRange(0, len(ivs)-1).Draw(rt, "parent")
			p := ivs[s.parent]
			r := p.Rank()
			if r == 0 {
				continue // no view of a scalar: draw again
			}
			s.kind = rapid.IntRange(0, 3).Draw(rt, "kind")
			s.axis = rapid.IntRange(0, r-1).Draw(rt, "axis")
			d := p.Shape()[s.axis]
			switch s.kind {
			case 0:
				s.a = rapid.IntRange(0, d-1).Draw(rt, "start")
				s.b = rapid.IntRange(1, d-s.a).Draw(rt, "length")
			case 1:
				s.a = rapid.IntRange(0, d-1).Draw(rt, "index")
			case 3:
				s.a = rapid.IntRange(0, d-1).Draw(rt, "start")
				s.b = rapid.IntRange(s.a+1, d).Draw(rt, "stop")
				s.c = rapid.IntRange(1, 3).Draw(rt, "stride")
			}
			ivs = append(ivs, fzView(s, p))
			steps = append(steps, s)
		}
		sum := rapid.IntRange(0, len(ivs)-1).Draw(rt, "sum")
		f := func(x *T) *T { return fzRun(steps, sum, peel.Clone(x)) }
		data := rapid.SliceOfN(rapid.Float64Range(-2, 2), 20, 20).Draw(rt, "x")
		want := f(peel.FromFloat64s(data, shape...)).Float64s()
		x := peel.FromFloat64s(data, shape...)
		got := transforms.Functionalize(f)(x)
		fzNear(rt, fmt.Sprintf("functionalize %+v", steps), got.Float64s(), want, 0)
		fzNear(rt, "input untouched", x.Float64s(), data, 0)
		got2 := transforms.Functionalize(f, transforms.RemoveViews())(peel.FromFloat64s(data, shape...))
		fzNear(rt, "functionalize(RemoveViews)", got2.Float64s(), want, 0)
		g := transforms.MakeGraph(transforms.Functionalize(f), peel.FromFloat64s(data, shape...))
		if m := graphHas(g, isMutation); m != "" {
			rt.Fatalf("graph has mutation %s:\n%v", m, g)
		}
		fzNear(rt, "graph eval", g.Eval(peel.FromFloat64s(data, shape...))[0].Float64s(), want, 0)
	})
}

// fzOverlap reports whether two index views share a base element at
// different positions (an in-place op reading src while writing dst would
// then depend on the kernel's order in eager mode).
func fzOverlap(src, dst *T) bool {
	s, d := src.Float64s(), dst.Float64s()
	at := map[float64]int{}
	for i, v := range d {
		at[v] = i
	}
	for i, v := range s {
		if j, ok := at[v]; ok && j != i {
			return true
		}
	}
	return false
}

func TestFunctionalizeBroadcastWriteError(t *testing.T) {
	f := func(v *T) *T {
		peel.CopyInto(peel.BroadcastTo(peel.Ones(peel.Float64, 1), 3), v)
		return v
	}
	wantError(t, func() { transforms.Functionalize(f)(f64(1, 2, 3)) }, "peel.CopyInto", "broadcast")
	wantError(t, func() { f(f64(1, 2, 3)) }, "peel.CopyInto")
}

// fzNear fails rt when got and want differ by more than tol (relative
// above magnitude 1), so rapid can shrink the failing program.
func fzNear(rt *rapid.T, what string, got, want []float64, tol float64) {
	if len(got) != len(want) {
		rt.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*math.Max(1, math.Abs(want[i])) {
			rt.Fatalf("%s: element %d is %v, want %v (all: %v vs %v)", what, i, got[i], want[i], got, want)
		}
	}
}
