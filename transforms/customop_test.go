package transforms_test

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/customop"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/transforms"
)

// Tests of user-defined ops (customop.Define) under every transform. The
// ops here count the calls of their kernels, composites and rules, so the
// tests can check who computed what: the counters are the claims of
// customop.Define's documentation made observable.

type counters struct{ kernel, composite, jvp, vjp, batch, eager atomic.Int64 }

func (c *counters) reset() {
	c.kernel.Store(0)
	c.composite.Store(0)
	c.jvp.Store(0)
	c.vjp.Store(0)
	c.batch.Store(0)
	c.eager.Store(0)
}

func (c *counters) get() [6]int64 {
	return [6]int64{c.kernel.Load(), c.composite.Load(), c.jvp.Load(), c.vjp.Load(), c.batch.Load(), c.eager.Load()}
}

// countedGelu defines a gelu op (mylib's composite and kernel) whose
// calls are counted, with the given extra options.
func countedGelu(name string, c *counters, opts ...customop.Option) *customop.Op {
	opts = append([]customop.Option{
		customop.WithKernel(cpu.New(), func(params any, in, out []backend.Array) {
			c.kernel.Add(1)
			mylib.GeluKernel(params, in, out)
		}),
		customop.WithShapeRule(func(in []customop.Aval) customop.Aval { return in[0] }),
	}, opts...)
	return customop.Define(name, 1, func(xs ...*T) *T {
		c.composite.Add(1)
		return mylib.GeluComposite(xs...)
	}, opts...)
}

// geluDeriv and geluDeriv2 are the first and second derivatives of the
// tanh approximation of GELU.
func geluDeriv(x float64) float64 {
	const k, c = 0.7978845608028654, 0.044715
	t := math.Tanh(k * (x + c*x*x*x))
	return 0.5*(1+t) + 0.5*x*(1-t*t)*k*(1+3*c*x*x)
}

func geluDeriv2(x float64) float64 {
	const h = 1e-5
	return (geluDeriv(x+h) - geluDeriv(x-h)) / (2 * h)
}

// unary is op as a function of one tensor, the type the transforms take.
func unary(op *customop.Op) func(*T) *T { return func(x *T) *T { return op.Call(x) } }

func sumOf(f func(...*T) *T) func(*T) *T {
	return func(x *T) *T { return peel.Sum(f(x)) }
}

var plainCounters, plainOp = func() (*counters, *customop.Op) {
	c := &counters{}
	return c, countedGelu("test.gelu", c)
}()

func TestOpForwardRunsTheKernel(t *testing.T) {
	c, op := plainCounters, plainOp
	c.reset()
	xs := []float64{-3, -1, -0.25, 0, 0.5, 2}
	x := peel.FromFloat64s(xs, 2, 3)
	got := op.Call(x)
	if n := c.get(); n[0] != 1 || n[1] != 0 {
		t.Fatalf("eager call: kernel %d, composite %d calls; want 1, 0", n[0], n[1])
	}
	want := make([]float64, len(xs))
	for i, v := range xs {
		want[i] = mylib.GeluFloat64(v)
	}
	near(t, "gelu", got.Float64s(), want, 1e-14)
	near(t, "composite", op.Composite(x).Float64s(), want, 1e-14)
}

func TestOpGradDerivedFromComposite(t *testing.T) {
	c, op := plainCounters, plainOp
	xs := []float64{-3, -1, -0.25, 0, 0.5, 2, 3.5}
	x := peel.FromFloat64s(xs)
	want := make([]float64, len(xs))
	for i, v := range xs {
		want[i] = geluDeriv(v)
	}
	for round := range 2 {
		c.reset()
		y, pullback := transforms.VJP(unary(op), x)
		if n := c.get(); n[0] != 1 || n[1] != 0 {
			t.Fatalf("round %d: forward under VJP ran the kernel %d and the composite %d times; want 1 and 0", round, n[0], n[1])
		}
		near(t, "primal", y.Float64s(), op.Composite(x).Float64s(), 1e-14)
		c.reset()
		g := pullback(peel.OnesLike(x))
		n := c.get()
		if n[0] != 0 {
			t.Fatalf("round %d: the backward ran the kernel %d times", round, n[0])
		}
		// The first backward for these operand types stages the
		// composite's derivative (one call); later ones run the
		// compiled graph.
		if wantC := int64(1 - round); n[1] != wantC {
			t.Fatalf("round %d: the backward ran the composite %d times, want %d", round, n[1], wantC)
		}
		near(t, "gradient", g.Float64s(), want, 1e-12)
	}
	// Grad through the op = Grad through the composite = finite
	// differences.
	g := transforms.Grad(sumOf(op.Call))(x).Float64s()
	near(t, "Grad(op) vs composite", g, transforms.Grad(sumOf(mylib.GeluComposite))(x).Float64s(), 1e-14)
	near(t, "Grad(op) vs FD", g, fdGrad(sumOf(op.Call), xs), 1e-7)
	// Second order, both ways round.
	gg := transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Grad(sumOf(op.Call))(x)) })(x).Float64s()
	want2 := make([]float64, len(xs))
	for i, v := range xs {
		want2[i] = geluDeriv2(v)
	}
	near(t, "Grad(Grad)", gg, want2, 1e-6)
	h := transforms.Hessian(sumOf(op.Call))(x)
	hc := transforms.Hessian(sumOf(mylib.GeluComposite))(x)
	near(t, "Hessian(op) vs composite", h.Float64s(), hc.Float64s(), 1e-12)
	jr := transforms.Jacrev(unary(op))(x)
	jf := transforms.Jacfwd(unary(op))(x)
	near(t, "Jacrev = Jacfwd", jr.Float64s(), jf.Float64s(), 1e-12)
	// Forward mode uses the composite's JVP.
	v := peel.FromFloat64s([]float64{1, -2, 0.5, 3, 1, 0, -1})
	_, tan := transforms.JVP(unary(op), x, v)
	_, tanc := transforms.JVP(func(x *T) *T { return mylib.GeluComposite(x) }, x, v)
	near(t, "JVP(op) vs composite", tan.Float64s(), tanc.Float64s(), 1e-14)
}

// TestOpBackwardBlocked runs the derived backward on an array large
// enough for the blocked evaluation of the compiled graph, at every
// thread count, in both precisions.
func TestOpBackwardBlocked(t *testing.T) {
	defer cpu.SetThreads(0)
	const n = 7 * 10003 // not a multiple of the block
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = -4 + 8*float64(i)/n
	}
	for _, threads := range []int{1, 3} {
		cpu.SetThreads(threads)
		for _, dt := range []peel.DType{peel.Float64, peel.Float32} {
			x := peel.AsType(peel.FromFloat64s(xs, 7, n/7), dt)
			g := transforms.Grad(sumOf(plainOp.Call))(x)
			gc := transforms.Grad(sumOf(mylib.GeluComposite))(x)
			tol := 1e-13
			if dt == peel.Float32 {
				tol = 2e-6
			}
			near(t, "blocked backward "+dt.String(), peel.AsType(g, peel.Float64).Float64s(), peel.AsType(gc, peel.Float64).Float64s(), tol)
		}
	}
}

func TestOpExplicitRulesWin(t *testing.T) {
	x := peel.FromFloat64s([]float64{-1, 0.5, 2})
	v := peel.FromFloat64s([]float64{1, 2, -1})
	want := []float64{geluDeriv(-1), geluDeriv(0.5), geluDeriv(2)}
	tangentRule := func(c *counters) customop.Option {
		return customop.WithJVP(func(primals []*T, out *T, tangents []*T) *T {
			c.jvp.Add(1)
			d := peel.FromFloat64s(want) // exact derivative at x (the test's point)
			return peel.Mul(tangents[0], d)
		})
	}
	cotangentRule := func(c *counters) customop.Option {
		return customop.WithVJP(func(primals []*T, out, ct *T) []*T {
			c.vjp.Add(1)
			return []*T{peel.Mul(ct, peel.FromFloat64s(want))}
		})
	}

	t.Run("jvp", func(t *testing.T) {
		c := &counters{}
		op := countedGelu("test.gelu_jvp", c, tangentRule(c))
		_, tan := transforms.JVP(unary(op), x, v)
		near(t, "JVP", tan.Float64s(), []float64{want[0], 2 * want[1], -want[2]}, 1e-12)
		g := transforms.Grad(sumOf(op.Call))(x)
		near(t, "Grad", g.Float64s(), want, 1e-12)
		if n := c.get(); n[1] != 0 || n[2] != 2 || n[0] != 2 {
			t.Fatalf("kernel %d, composite %d, JVP rule %d calls; want 2, 0, 2", n[0], n[1], n[2])
		}
	})
	t.Run("vjp", func(t *testing.T) {
		c := &counters{}
		op := countedGelu("test.gelu_vjp", c, cotangentRule(c))
		g := transforms.Grad(sumOf(op.Call))(x)
		near(t, "Grad", g.Float64s(), want, 1e-12)
		if n := c.get(); n[1] != 0 || n[3] != 1 || n[0] != 1 {
			t.Fatalf("Grad: kernel %d, composite %d, VJP rule %d calls; want 1, 0, 1", n[0], n[1], n[3])
		}
		// Forward mode has no rule: derived from the composite.
		c.reset()
		_, tan := transforms.JVP(unary(op), x, v)
		near(t, "JVP", tan.Float64s(), []float64{want[0], 2 * want[1], -want[2]}, 1e-12)
		if n := c.get(); n[1] == 0 || n[3] != 0 {
			t.Fatalf("JVP: composite %d, VJP rule %d calls; want ≥1, 0", n[1], n[3])
		}
	})
	t.Run("both", func(t *testing.T) {
		c := &counters{}
		op := countedGelu("test.gelu_both", c, tangentRule(c), cotangentRule(c))
		transforms.Grad(sumOf(op.Call))(x)
		if n := c.get(); n[2] != 0 || n[3] != 1 || n[1] != 0 {
			t.Fatalf("Grad: JVP rule %d, VJP rule %d, composite %d calls; want 0, 1, 0", n[2], n[3], n[1])
		}
		c.reset()
		transforms.JVP(unary(op), x, v)
		if n := c.get(); n[2] != 1 || n[3] != 0 || n[1] != 0 {
			t.Fatalf("JVP: JVP rule %d, VJP rule %d, composite %d calls; want 1, 0, 0", n[2], n[3], n[1])
		}
	})
}

func TestOpVmap(t *testing.T) {
	xs := peel.FromFloat64s([]float64{-2, -1, 0, 1, 2, 3, 0.5, -0.5}, 4, 2)
	loop := func(f func(...*T) *T) []float64 {
		var out []float64
		for i := range 4 {
			out = append(out, f(peel.Select(xs, 0, i)).Float64s()...)
		}
		return out
	}
	want := loop(mylib.GeluComposite)

	t.Run("decomposes", func(t *testing.T) {
		c := &counters{}
		op := countedGelu("test.gelu_decomposed", c)
		got := transforms.Vmap(unary(op))(xs)
		near(t, "Vmap(op)", got.Float64s(), want, 1e-14)
		if n := c.get(); n[0] != 0 || n[1] != 1 {
			t.Fatalf("kernel %d, composite %d calls; want 0, 1", n[0], n[1])
		}
	})
	t.Run("rule wins", func(t *testing.T) {
		c := &counters{}
		var op *customop.Op
		op = countedGelu("test.gelu_batched", c, customop.WithBatchRule(func(size int, xs []*T, dims []int) (*T, int) {
			c.batch.Add(1)
			return op.Call(xs[0]), dims[0]
		}))
		got := transforms.Vmap(unary(op), transforms.InAxes(1))(peel.Transpose(xs, 1, 0))
		near(t, "Vmap(op)", got.Float64s(), want, 1e-14)
		if n := c.get(); n[0] != 1 || n[1] != 0 || n[4] != 1 {
			t.Fatalf("kernel %d, composite %d, batch rule %d calls; want 1, 0, 1", n[0], n[1], n[4])
		}
	})
	t.Run("elementwise", func(t *testing.T) {
		c := &counters{}
		op := countedGelu("test.gelu_elementwise", c, customop.Elementwise())
		got := transforms.Vmap(transforms.Vmap(unary(op)), transforms.InAxes(1))(peel.Transpose(xs, 1, 0))
		near(t, "Vmap(Vmap(op))", got.Float64s(), want, 1e-14)
		if n := c.get(); n[0] != 1 || n[1] != 0 {
			t.Fatalf("Vmap(Vmap): kernel %d, composite %d calls; want 1, 0", n[0], n[1])
		}
		// Per-sample gradients keep the fused forward.
		c.reset()
		g := transforms.Vmap(transforms.Grad(sumOf(op.Call)))(xs)
		var wantG []float64
		for _, v := range xs.Float64s() {
			wantG = append(wantG, geluDeriv(v))
		}
		near(t, "Vmap(transforms.Grad(op))", g.Float64s(), wantG, 1e-12)
		if n := c.get(); n[0] != 1 {
			t.Fatalf("Vmap(Grad): kernel %d calls, want 1 (the forward of the whole batch)", n[0])
		}
	})
}

// interleaveFunctional is mylib.interleave without mutation.
func interleaveFunctional(xs ...*T) *T {
	a, b := xs[0], xs[1]
	shape := append([]int{2 * a.Shape()[0]}, a.Shape()[1:]...)
	return peel.Reshape(peel.Stack([]*T{a, b}, 1), shape...)
}

func TestOpMutatingDecomposition(t *testing.T) {
	a := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 3, 2, 2)
	b := peel.Neg(a)
	pair := func(x []*T) *T { return mylib.Interleave.Call(x[0], x[1]) }
	var want []float64
	for i := range 3 {
		want = append(want, interleaveFunctional(peel.Select(a, 0, i), peel.Select(b, 0, i)).Float64s()...)
	}
	near(t, "eager", mylib.Interleave.Call(a, b).Float64s(), interleaveFunctional(a, b).Float64s(), 0)
	got := transforms.Vmap(transforms.Functionalize(pair))([]*T{a, b})
	near(t, "Vmap(transforms.Functionalize(op))", got.Float64s(), want, 0)
	wantError(t, func() { transforms.Vmap(pair)([]*T{a, b}) },
		"while decomposing mylib.interleave", "[in vmap]", "copy_", "Functionalize")
	// Reverse mode differentiates the mutating decomposition.
	w := peel.Reshape(peel.Arange(peel.Float64, 0, 24, 1), 6, 2, 2)
	loss := func(x []*T) *T { return peel.Sum(peel.Mul(pair(x), w)) }
	g := transforms.Grad(loss)([]*T{a, b})
	near(t, "Grad a", g[0].Float64s(), peel.Slice(w, 0, 0, 6, 2).Float64s(), 0)
	near(t, "Grad b", g[1].Float64s(), peel.Slice(w, 0, 1, 6, 2).Float64s(), 0)
	// One equation in a graph; its functionalized decomposition with
	// Decompose.
	gr := transforms.MakeGraph(pair, []*T{a, b})
	if len(gr.Eqns) != 1 || gr.Eqns[0].Prim.Name != "mylib.interleave" {
		t.Fatalf("graph:\n%v\nwant one mylib.interleave equation", gr)
	}
	wantError(t, func() { transforms.MakeGraph(pair, []*T{a, b}, transforms.Decompose()) }, "while decomposing mylib.interleave")
	gd := transforms.MakeGraph(transforms.Functionalize(pair), []*T{a, b}, transforms.Decompose())
	for _, e := range gd.Eqns {
		if e.Prim.Name == "mylib.interleave" || e.Prim.Kind == 2 {
			t.Fatalf("decomposed graph has %s:\n%v", e.Prim.Name, gd)
		}
	}
	near(t, "decomposed graph", gd.Eval(a, b)[0].Float64s(), interleaveFunctional(a, b).Float64s(), 0)
}

func TestOpChoosesDecomposition(t *testing.T) {
	var c counters
	op := customop.Define("test.interleave_two_ways", 2, func(xs ...*T) *T {
		c.composite.Add(1)
		return interleaveFunctional(xs...)
	}, customop.WithDecomposition(func(xs ...*T) *T {
		c.eager.Add(1)
		return mylib.InterleaveComposite(xs...)
	}, customop.Mutates|customop.Eager))
	a := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 3, 2)
	b := peel.Neg(a)
	want := interleaveFunctional(a, b).Float64s()
	pair := func(x []*T) *T { return op.Call(x[0], x[1]) }
	cases := []struct {
		name            string
		run             func() *T
		eager, composed int64
	}{
		{"eval", func() *T { return pair([]*T{a, b}) }, 1, 0},
		{"functionalize passes it through", func() *T { return transforms.Functionalize(pair)([]*T{a, b}) }, 1, 0},
		{"vmap decomposes the functional one", func() *T {
			return peel.Select(transforms.Vmap(pair, transforms.InAxes([]any{0, transforms.NoAxis}))([]*T{peel.Stack([]*T{a, a}, 0), b}), 0, 1)
		}, 0, 1},
		{"grad: forward eager, backward functional", func() *T {
			return transforms.Grad(func(x []*T) *T { return peel.Sum(pair(x)) })([]*T{a, b})[0]
		}, 1, 1},
	}
	for _, tc := range cases {
		c.reset()
		got := tc.run()
		if tc.name[:4] == "grad" {
			near(t, tc.name, got.Float64s(), []float64{1, 1, 1, 1, 1, 1}, 0)
		} else {
			near(t, tc.name, got.Float64s(), want, 0)
		}
		if n := c.get(); n[5] != tc.eager || n[1] != tc.composed {
			t.Errorf("%s: eager decomposition %d, functional %d calls; want %d, %d", tc.name, n[5], n[1], tc.eager, tc.composed)
		}
	}
}

func TestOpShapeDerivedOnce(t *testing.T) {
	var c counters
	op := customop.Define("test.gelu_derived_shape", 1, func(xs ...*T) *T {
		c.composite.Add(1)
		return mylib.GeluComposite(xs...)
	}, customop.WithKernel(cpu.New(), func(params any, in, out []backend.Array) {
		c.kernel.Add(1)
		mylib.GeluKernel(params, in, out)
	}))
	x := peel.FromFloat64s([]float64{1, 2, 3})
	for i := range 3 {
		c.reset()
		op.Call(x)
		if n := c.get(); n[0] != 1 || n[1] != int64(1-min(i, 1)) {
			t.Fatalf("call %d: kernel %d, composite %d; want 1 and %d (the shape is derived once)", i, n[0], n[1], 1-min(i, 1))
		}
	}
	// The derived rule rejects what the composite rejects, naming the
	// op and no internal level.
	wantError(t, func() { op.Call(peel.FromBools([]bool{true})) }, "test.gelu_derived_shape")
	err := peel.Catch(func() { op.Call(peel.FromBools([]bool{true})) })
	if strings.Contains(err.Error(), "shape rule of") {
		t.Errorf("error names the internal staging level: %v", err)
	}
}

func TestOpGraph(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2, 3})
	g := transforms.MakeGraph(unary(plainOp), x)
	if len(g.Eqns) != 1 || g.Eqns[0].Prim != plainOp.Prim() {
		t.Fatalf("graph:\n%v\nwant one test.gelu equation", g)
	}
	if !strings.Contains(g.String(), "test.gelu a") {
		t.Errorf("graph prints as\n%v", g)
	}
	near(t, "graph eval", g.Eval(x)[0].Float64s(), plainOp.Call(x).Float64s(), 0)
	gd := transforms.MakeGraph(unary(plainOp), x, transforms.Decompose())
	if len(gd.Eqns) < 5 {
		t.Fatalf("decomposed graph:\n%v", gd)
	}
	for _, e := range gd.Eqns {
		if e.Prim == plainOp.Prim() {
			t.Fatalf("decomposed graph keeps the op:\n%v", gd)
		}
	}
	near(t, "decomposed graph eval", gd.Eval(x)[0].Float64s(), plainOp.Call(x).Float64s(), 1e-15)
}

func TestOpErrors(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2})
	wantError(t, func() { plainOp.Call(x, x) }, "test.gelu", "takes 1 operands, got 2")
	wantError(t, func() { customop.Define("test.gelu", 1, mylib.GeluComposite) }, "customop.Define", "already defined")
	wantError(t, func() { customop.Define("add", 2, mylib.GeluComposite) }, "already defined")
	type plainBackend struct{ backend.Backend }
	wantError(t, func() {
		customop.Define("test.no_registry", 1, mylib.GeluComposite, customop.WithKernel(plainBackend{cpu.New()}, mylib.GeluKernel))
	}, "does not accept kernels")
	// The failed definition registered nothing: the name is still free.
	customop.Define("test.no_registry", 1, mylib.GeluComposite)
	// Nested decompositions are named outermost first, with the
	// transform.
	outer := customop.Define("test.outer", 2, func(xs ...*T) *T {
		return peel.Mul(mylib.Interleave.Call(xs[0], xs[1]), 2.0)
	})
	a := peel.FromFloat64s([]float64{1, 2, 3, 4}, 2, 2)
	wantError(t, func() {
		transforms.Vmap(func(x []*T) *T { return outer.Call(x[0], x[1]) })([]*T{a, a})
	}, "while decomposing test.outer > mylib.interleave", "[in vmap]")
	// A failure in a backward pass, long after the call returned, names
	// the op too.
	reader := customop.Define("test.reads_data", 1, func(xs ...*T) *T {
		if peel.Sum(xs[0]).Item() > 0 {
			return peel.Mul(xs[0], 2.0)
		}
		return xs[0]
	})
	wantError(t, func() { transforms.Grad(sumOf(reader.Call))(x) }, "while decomposing test.reads_data")
	// A batching rule returning the wrong batch size.
	bad := customop.Define("test.bad_batch", 1, mylib.GeluComposite, customop.WithBatchRule(func(size int, xs []*T, dims []int) (*T, int) {
		return peel.Sum(xs[0]), 0
	}))
	wantError(t, func() { transforms.Vmap(unary(bad))(a) }, "test.bad_batch", "batch dimension of size 2")
}

func TestOpConcurrentGrad(t *testing.T) {
	var c counters
	op := countedGelu("test.gelu_concurrent", &c, customop.Elementwise())
	f := func(x *T) *T { return peel.Sum(peel.Mul(op.Call(x), x)) }
	inputs := make([]*T, 8)
	want := make([][]float64, len(inputs))
	for i := range inputs {
		xs := make([]float64, 3+i%3) // three shapes, shared caches
		for j := range xs {
			xs[j] = float64(i) - float64(j)/2
		}
		inputs[i] = peel.FromFloat64s(xs)
		want[i] = fdGrad(f, xs)
	}
	var wg sync.WaitGroup
	for i := range inputs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				g := transforms.Vmap(transforms.Grad(f))(peel.Stack([]*T{inputs[i], inputs[i]}, 0))
				near(t, "concurrent", peel.Select(g, 0, 1).Float64s(), want[i], 1e-7)
			}
		}()
	}
	wg.Wait()
}
