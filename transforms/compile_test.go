package transforms_test

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

type cparams struct {
	W, B *T
	Act  string // static: part of the signature
}

func cpredict(p cparams, x *T) *T {
	y := peel.Add(peel.MatMul(x, p.W), p.B)
	if p.Act == "tanh" {
		return peel.Tanh(y)
	}
	return peel.Sin(y)
}

// TestCompileMatchesEager: compiled results equal the function's, over
// trees, several arguments and static fields; a second call with the same
// signature does not trace.
func TestCompileMatchesEager(t *testing.T) {
	p := cparams{W: lin2At(1).W, B: lin2At(1).B, Act: "tanh"}
	traces := 0
	f := func(p cparams, x *T) *T { traces++; return peel.Sum(cpredict(p, x), 1) }
	var cIns transforms.Inspector
	c := transforms.Compile2(f, transforms.Inspect(&cIns))
	want := f(p, xs)
	traces = 0
	for i := 0; i < 3; i++ {
		near(t, "Compile2", c(p, xs).Float64s(), want.Float64s(), 0)
	}
	if traces != 1 {
		t.Errorf("f ran %d times for three calls with one signature, want 1 (the trace)", traces)
	}
	s := cIns.Stats()
	if s.Calls != 3 || s.Hits != 2 || s.Misses != 1 || s.Signatures != 1 || s.LastMiss != "first call" {
		t.Errorf("stats %+v", s)
	}
	// A tree result.
	type out struct{ Y, Z *T }
	g := transforms.Compile(func(p cparams) out { return out{Y: cpredict(p, xs), Z: peel.Sum(p.W)} })
	got := g(p)
	near(t, "tree result Y", got.Y.Float64s(), cpredict(p, xs).Float64s(), 0)
	near(t, "tree result Z", got.Z.Float64s(), peel.Sum(p.W).Float64s(), 0)
}

// TestCompileCacheMisses: a miss says which leaf or static value changed,
// and a captured tensor written in place is retraced, never stale.
func TestCompileCacheMisses(t *testing.T) {
	p := cparams{W: lin2At(1).W, B: lin2At(1).B, Act: "tanh"}
	var cIns transforms.Inspector
	c := transforms.Compile2(func(p cparams, x *T) *T { return cpredict(p, x) }, transforms.Inspect(&cIns))
	c(p, xs)
	c(p, peel.Ones(peel.Float64, 3, 2))
	if m := cIns.Stats().LastMiss; !strings.Contains(m, "leaf args[1] changed from f64[2,2] to f64[3,2]") {
		t.Errorf("shape miss: %q", m)
	}
	q := p
	q.Act = "sin"
	near(t, "static change", c(q, xs).Float64s(), cpredict(q, xs).Float64s(), 0)
	if m := cIns.Stats().LastMiss; !strings.Contains(m, `static value args[0].Act changed from "tanh" to "sin"`) {
		t.Errorf("static miss: %q", m)
	}

	w := peel.FromFloat64s([]float64{1, 2})
	var scaleIns transforms.Inspector
	scale := transforms.Compile(func(x *T) *T { return peel.Mul(x, w) }, transforms.Inspect(&scaleIns))
	x := peel.FromFloat64s([]float64{3, 4})
	near(t, "captured", scale(x).Float64s(), []float64{3, 8}, 0)
	peel.MulInPlace(w, 10.0) // an optimizer step on a captured parameter
	near(t, "captured after an in-place write", scale(x).Float64s(), []float64{30, 80}, 0)
	if m := scaleIns.Stats().LastMiss; !strings.Contains(m, "captured tensor 0 (f64[2]) changed") {
		t.Errorf("captured miss: %q", m)
	}
}

// TestCompileRecompileLimit: traces beyond the limit warn with the reason.
func TestCompileRecompileLimit(t *testing.T) {
	var warnings []string
	var cIns transforms.Inspector
	c := transforms.Compile(func(x *T) *T { return peel.Sum(x) }, transforms.RecompileLimit(2),
		transforms.OnWarning(func(m string) { warnings = append(warnings, m) }), transforms.Inspect(&cIns))
	for n := 1; n <= 4; n++ {
		c(peel.Ones(peel.Float64, n))
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "past RecompileLimit(2)") || !strings.Contains(warnings[0], "the argument changed from f64[2] to f64[3]") {
		t.Errorf("warnings %q", warnings)
	}
	if s := cIns.Stats(); s.Signatures != 4 || s.Misses != 4 {
		t.Errorf("stats %+v", s)
	}
}

// TestCompileMutation: a compiled function that writes its argument
// leaves it as eager code would, and returns the same results.
func TestCompileMutation(t *testing.T) {
	f := func(p cparams) *T {
		peel.AddInPlace(p.W, 1.0)
		row := peel.Narrow(p.B, 0, 1, 2)
		peel.MulInPlace(row, 2.0) // through a view
		return peel.Sum(peel.Mul(p.W, p.W))
	}
	eager := cparams{W: lin2At(1).W, B: lin2At(1).B}
	comp := cparams{W: lin2At(1).W, B: lin2At(1).B}
	c := transforms.Compile(f)
	for i := 0; i < 2; i++ {
		want := f(eager)
		got := c(comp)
		near(t, "result", got.Float64s(), want.Float64s(), 1e-15)
		near(t, "W written back", comp.W.Float64s(), eager.W.Float64s(), 1e-15)
		near(t, "B written back", comp.B.Float64s(), eager.B.Float64s(), 1e-15)
	}
}

// TestCompileComposes: Compile in every order with the other transforms
// equals the uncompiled composition.
func TestCompileComposes(t *testing.T) {
	p := lin2At(1)
	loss := func(p lin2, x *T) *T { return peel.Sum(peel.Square(predict(p, x))) }
	batch := peel.FromFloat64s([]float64{0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8, 0.9, -1.0, 1.1, 1.2}, 3, 2, 2)
	wantG := transforms.Grad2(loss)(p, xs)
	c := transforms.Compile2(loss)
	sameLeaves(t, "Grad2(Compile2)", tree.Leaves(transforms.Grad2(c)(p, xs)), tree.Leaves(wantG), 1e-14)
	cg := transforms.Compile2(transforms.Grad2(loss))
	for i := 0; i < 2; i++ {
		sameLeaves(t, "Compile2(Grad2)", tree.Leaves(cg(p, xs)), tree.Leaves(wantG), 1e-14)
	}
	vg := transforms.Vmap2(transforms.Grad2(loss), transforms.InAxes(transforms.NoAxis, 0))
	cvg := transforms.Compile2(vg)
	sameLeaves(t, "Compile2(Vmap2(Grad2))", tree.Leaves(cvg(p, batch)), tree.Leaves(vg(p, batch)), 1e-14)
	sameLeaves(t, "Vmap2(Compile2)", []*T{transforms.Vmap2(c, transforms.InAxes(transforms.NoAxis, 0))(p, batch)},
		[]*T{transforms.Vmap2(loss, transforms.InAxes(transforms.NoAxis, 0))(p, batch)}, 1e-14)
	fx := func(x *T) *T { return predict(p, x) }
	cf := transforms.Compile(fx)
	sameLeaves(t, "Jacrev(Compile)", []*T{transforms.Jacrev(cf)(xs)}, []*T{transforms.Jacrev(fx)(xs)}, 1e-14)
	nested := transforms.Compile(func(x *T) *T { return peel.Exp(cf(x)) })
	sameLeaves(t, "nested Compile", []*T{nested(xs)}, []*T{peel.Exp(fx(xs))}, 1e-14)
	pad := func(x *T) *T {
		y := peel.Zeros(x.DType(), x.Shape()[0]+2)
		peel.CopyInto(peel.Narrow(y, 0, 1, x.Shape()[0]), x)
		return y
	}
	cfun := transforms.Compile(transforms.Vmap(transforms.Functionalize(pad)))
	rows := peel.Reshape(batch, 3, 4)
	sameLeaves(t, "Compile(Vmap(Functionalize))", []*T{cfun(rows)}, []*T{transforms.Vmap(transforms.Functionalize(pad))(rows)}, 0)
	// Under Grad, a compiled function closing over the differentiated
	// value (a tracer constant) is evaluated, not cached.
	gw := transforms.Grad(func(w *T) *T {
		return transforms.Compile(func(x *T) *T { return peel.Sum(peel.Mul(x, w)) })(xs)
	})(peel.OnesLike(xs))
	near(t, "Grad through a closure", gw.Float64s(), xs.Float64s(), 0)
}

// TestCompileStaticArgnums: a static argument is keyed by value.
func TestCompileStaticArgnums(t *testing.T) {
	traces := 0
	var cIns transforms.Inspector
	c := transforms.Compile2(func(x, s *T) *T { traces++; return peel.Mul(x, s) }, transforms.StaticArgnums(1), transforms.Inspect(&cIns))
	x := peel.FromFloat64s([]float64{1, 2})
	near(t, "s=2", c(x, peel.Scalar(2.0)).Float64s(), []float64{2, 4}, 0)
	near(t, "s=2 again", c(x, peel.Scalar(2.0)).Float64s(), []float64{2, 4}, 0)
	near(t, "s=3", c(x, peel.Scalar(3.0)).Float64s(), []float64{3, 6}, 0)
	if traces != 2 {
		t.Errorf("%d traces, want 2 (one per static value)", traces)
	}
	if m := cIns.Stats().LastMiss; !strings.Contains(m, "static leaf args[1]") {
		t.Errorf("miss %q", m)
	}
	wantError(t, func() { transforms.Compile(func(x *T) *T { return x }, transforms.Donate(1)) }, "transforms.Compile", "out of range")
	d := transforms.Compile2(func(x, y *T) *T { return peel.Add(x, y) }, transforms.Donate(0))
	near(t, "donated", d(peel.FromFloat64s([]float64{1, 2}), x).Float64s(), []float64{2, 4}, 0)
}

// TestCompileConcurrent: many goroutines call one compiled function,
// sharing captured and argument tensors (run under -race).
func TestCompileConcurrent(t *testing.T) {
	p := lin2At(1)
	var cIns transforms.Inspector
	c := transforms.Compile2(func(p lin2, x *T) *T { return peel.Sum(predict(p, x)) }, transforms.Inspect(&cIns))
	want := peel.Sum(predict(p, xs)).Item()
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				x := xs
				if i%5 == g%5 {
					x = peel.Concat([]*T{xs, xs}, 0) // another signature now and then
				}
				got := c(p, x).Item()
				w := want
				if x != xs {
					w = 2 * want
				}
				if got != w {
					errs <- "wrong result"
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if s := cIns.Stats(); s.Signatures != 2 || s.Calls != 160 {
		t.Errorf("stats %+v", s)
	}
}

// TestCompiledIsOnePrimitive: under Vmap, Grad and MakeGraph a compiled
// function is one compiled_call: f is traced once however often the
// transformed function runs, and the results equal the uncompiled ones.
func TestCompiledIsOnePrimitive(t *testing.T) {
	traces := 0
	f := func(x *T) *T { traces++; return peel.Sum(peel.Tanh(peel.Mul(x, x))) }
	c := transforms.Compile(f)
	batch := peel.FromFloat64s([]float64{0.1, 0.2, -0.3, 0.4, 0.5, -0.6}, 3, 2)
	v := transforms.Vmap(c)
	g := transforms.Grad(c)
	vg := transforms.Vmap(transforms.Grad(c))
	traces = 0
	for i := 0; i < 3; i++ {
		near(t, "Vmap(Compile)", v(batch).Float64s(), transforms.Vmap(f)(batch).Float64s(), 1e-15)
		near(t, "Grad(Compile)", g(xs).Float64s(), transforms.Grad(f)(xs).Float64s(), 1e-15)
		near(t, "Vmap(Grad(Compile))", vg(batch).Float64s(), transforms.Vmap(transforms.Grad(f))(batch).Float64s(), 1e-15)
	}
	// The uncompiled references ran f 3×3 times; the compiled function
	// traced it once per signature (a lane [2] and xs [2,2]).
	if traces != 9+2 {
		t.Errorf("f ran %d times, want 11 (9 for the references, 2 traces)", traces)
	}
	gr := transforms.MakeGraph(c, xs).String()
	if strings.Count(gr, "compiled_call") != 1 {
		t.Errorf("MakeGraph of a compiled function:\n%s", gr)
	}
	h := transforms.Hessian(func(x *T) *T { return c(x) })(peel.FromFloat64s([]float64{0.3, -0.2}))
	near(t, "Hessian(Compile)", h.Float64s(), transforms.Hessian(f)(peel.FromFloat64s([]float64{0.3, -0.2})).Float64s(), 1e-14)
}

// TestCompileExplain: Explain prints the traced graph (and, once the
// passes change it, each stage).
func TestCompileExplain(t *testing.T) {
	var cIns transforms.Inspector
	transforms.Compile(func(x *T) *T { return peel.Sum(peel.Tanh(x)) }, transforms.Inspect(&cIns))
	s := cIns.Explain(xs)
	if !strings.Contains(s, "traced:") || !strings.Contains(s, "tanh") || !strings.Contains(s, "reduce_sum") {
		t.Errorf("Explain:\n%s", s)
	}
	if cIns.Stats().Calls != 0 || cIns.Stats().Signatures != 0 {
		t.Errorf("Explain touched the cache: %+v", cIns.Stats())
	}
}

// TestRapidCompileEqualsEager: on random smooth programs over random
// broadcast shapes, Compile2(p) equals p bit for bit, and so do Grad of
// the compiled program and the compiled Grad, against Grad of p.
func TestRapidCompileEqualsEager(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		xs, ys := drawShapes(rt, 0)
		p := drawProgram(rt)
		x, y := drawTensor(rt, "x", xs), drawTensor(rt, "y", ys)
		c := transforms.Compile2(p.run)
		want := p.run(x, y)
		for i := 0; i < 2; i++ {
			got := c(x, y)
			if !slices.Equal(got.Shape(), want.Shape()) {
				rt.Fatalf("%s: shape %v, want %v", p, got.Shape(), want.Shape())
			}
			if !slices.Equal(got.Float64s(), want.Float64s()) {
				rt.Fatalf("%s: compiled %v, eager %v", p, got.Float64s(), want.Float64s())
			}
		}
		loss := func(x, y *T) *T { return peel.Sum(p.run(x, y)) }
		wantG := transforms.Grad2(loss)(x, y)
		cl := transforms.Compile2(loss)
		for name, g := range map[string]*T{
			"Grad2(Compile2)": transforms.Grad2(cl)(x, y),
			"Compile2(Grad2)": transforms.Compile2(transforms.Grad2(loss))(x, y),
		} {
			got, want := g.Float64s(), wantG.Float64s()
			for k := range got {
				if math.Abs(got[k]-want[k]) > 1e-12*math.Max(1, math.Abs(want[k])) {
					rt.Fatalf("%s of %s: %v, want %v", name, p, got, want)
				}
			}
		}
	})
}

// TestCompileGradHitsCache: a constant lifted twice while tracing (the
// broadcast 0.5 of the forward and of the backward pass) does not make
// every later call a miss.
func TestCompileGradHitsCache(t *testing.T) {
	var cIns transforms.Inspector
	c := transforms.Compile(transforms.Grad(func(x *T) *T { return peel.Sum(peel.Mul(peel.Mul(x, 0.5), x)) }), transforms.Inspect(&cIns))
	x := peel.FromFloat64s([]float64{1, 2, 3, 4})
	for i := 0; i < 3; i++ {
		near(t, "Compile(Grad)", c(x).Float64s(), x.Float64s(), 1e-15)
	}
	if s := cIns.Stats(); s.Misses != 1 || s.Hits != 2 {
		t.Errorf("stats %+v (last miss %q)", s, s.LastMiss)
	}
}

// TestCompileFuseOps: with FuseOps, gelu written out by hand runs as
// mylib.Gelu (one equation, the fused kernel), with the same results and
// gradient.
func TestCompileFuseOps(t *testing.T) {
	x := peel.FromFloat64s([]float64{-2, -0.5, 0, 0.3, 1.7, 3}, 2, 3)
	byHand := func(x *T) *T { return mylib.GeluComposite(x) } // seven plain peel ops
	var cIns transforms.Inspector
	c := transforms.Compile(byHand, transforms.FuseOps(mylib.Gelu), transforms.Inspect(&cIns))
	s := cIns.Explain(x)
	if !strings.Contains(s, "mylib.gelu") || !strings.Contains(s, "tanh") {
		t.Errorf("the traced graph (with tanh) should become mylib.gelu:\n%s", s)
	}
	var plainIns transforms.Inspector
	transforms.Compile(byHand, transforms.Inspect(&plainIns))
	if strings.Contains(plainIns.Explain(x), "mylib.gelu") {
		t.Errorf("without FuseOps the composite must stay as written")
	}
	near(t, "fused", c(x).Float64s(), byHand(x).Float64s(), 1e-15)
	loss := func(x *T) *T { return peel.Sum(c(x)) }
	near(t, "Grad of fused", transforms.Grad(loss)(x).Float64s(), transforms.Grad(func(x *T) *T { return peel.Sum(byHand(x)) })(x).Float64s(), 1e-14)
}

// TestCompileDonatedAndWritten: an argument that is donated and written
// by f gets its final value, and the results are not clobbered by the
// write-back.
func TestCompileDonatedAndWritten(t *testing.T) {
	f := func(x *T) *T {
		y := peel.Mul(x, 2.0)
		peel.AddInPlace(x, 1.0)
		return y
	}
	c := transforms.Compile(f, transforms.Donate(0))
	for i := 0; i < 2; i++ {
		x := peel.FromFloat64s([]float64{1, 2, 3})
		y := c(x)
		near(t, "result", y.Float64s(), []float64{2, 4, 6}, 0)
		near(t, "written back", x.Float64s(), []float64{2, 3, 4}, 0)
	}
}
