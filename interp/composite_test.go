package interp_test

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/internal/interptest"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Tests of the decomposition chain of errors (Error.Decomposing,
// Decomposing) and of composites recorded whole (Prim.Whole, DecomposeOps).

// cmpAdd binds add on operands of different shapes: it panics with an
// *interp.Error.
func cmpAdd() {
	interp.Bind1(prims.Add, nil, interptest.Tensor([]float64{1, 2}, 2), interptest.Tensor([]float64{1, 2, 3}, 3))
}

// cmpNested runs f inside deferred Decomposing calls for names,
// outermost first.
func cmpNested(names []string, f func()) {
	if len(names) == 0 {
		f()
		return
	}
	defer interp.Decomposing(names[0])
	cmpNested(names[1:], f)
}

func TestDecomposingChain(t *testing.T) {
	cases := []struct {
		names []string // outermost first
		want  []string // Error.Decomposing, innermost first
		msg   string
	}{
		{nil, nil, ""},
		{[]string{"mylib.op"}, []string{"mylib.op"}, " while decomposing mylib.op"},
		{[]string{"outer", "inner"}, []string{"inner", "outer"}, " while decomposing outer > inner"},
		{[]string{"outer", "inner", "inner"}, []string{"inner", "outer"}, " while decomposing outer > inner"},
		{[]string{"a", "a", "b", "b", "a"}, []string{"a", "b", "a"}, " while decomposing a > b > a"},
	}
	for _, c := range cases {
		err := interp.Catch(func() { cmpNested(c.names, cmpAdd) })
		var e *interp.Error
		if !errors.As(err, &e) {
			t.Fatalf("%v: got %v, want *interp.Error", c.names, err)
		}
		if !slices.Equal(e.Decomposing, c.want) {
			t.Errorf("%v: Decomposing = %q, want %q", c.names, e.Decomposing, c.want)
		}
		base := "add: operands must have equal shapes and dtypes (primitives do not broadcast or promote) (f64[2], f64[3])"
		// The call site is cmpAdd's Bind, the innermost frame outside
		// peel's non-test code.
		if got, want := e.Error(), base+c.msg+" at composite_test.go:24"; got != want {
			t.Errorf("%v: message %q, want %q", c.names, got, want)
		}
	}
}

// TestDecomposingUnderTrace checks that the chain follows the
// "[transform, level N]" part and the user-level op chain precedes the
// message.
func TestDecomposingUnderTrace(t *testing.T) {
	x := interptest.Tensor([]float64{1, 2}, 2)
	err := interp.Catch(func() {
		interp.Trace(func(a []*interp.Tensor) []*interp.Tensor {
			defer interp.Annotate("mylib.Outer")
			cmpNested([]string{"mylib.outer", "mylib.inner"}, func() {
				interp.Bind1(prims.Add, nil, a[0], interptest.Tensor([]float64{1, 2, 3}, 3))
			})
			return a
		}, []*interp.Tensor{x})
	})
	var e *interp.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want *interp.Error", err)
	}
	re := regexp.MustCompile(`^mylib\.Outer: add: .* \(f64\[2\], f64\[3\]\) \[in trace\] while decomposing mylib\.outer > mylib\.inner at composite_test\.go:\d+$`)
	if !re.MatchString(e.Error()) {
		t.Errorf("message %q does not match %s", e.Error(), re)
	}
}

func TestDecomposingFormat(t *testing.T) {
	e := &interp.Error{Ops: []string{"peel.Add"}, Prim: "add", Msg: "m", Transform: "vmap", Level: 4, Decomposing: []string{"in", "mid", "out"}}
	if got, want := e.Error(), "peel.Add: add: m [in vmap] while decomposing out > mid > in"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	e = &interp.Error{Msg: "m", Decomposing: []string{"op"}}
	if got, want := e.Error(), "m while decomposing op"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestDecomposingPassesOtherPanics checks that panics with other values
// pass through unchanged, and that no panic stays no panic.
func TestDecomposingPassesOtherPanics(t *testing.T) {
	plain := errors.New("plain")
	for _, v := range []any{"boom", plain, 42, fmt.Errorf("wrapped: %w", interp.Errorf("inner"))} {
		got := func() (r any) {
			defer func() { r = recover() }()
			cmpNested([]string{"outer", "inner"}, func() { panic(v) })
			return nil
		}()
		if got != v {
			t.Errorf("panic %v (%T) came out as %v (%T)", v, v, got, got)
		}
	}
	// A runtime error keeps its type.
	got := func() (r any) {
		defer func() { r = recover() }()
		cmpNested([]string{"op"}, func() {
			var s []int
			_ = s[len(s)]
		})
		return nil
	}()
	if _, ok := got.(interface{ RuntimeError() }); !ok {
		t.Errorf("runtime error came out as %v (%T)", got, got)
	}
	// No panic: the function returns normally.
	ran := false
	cmpNested([]string{"a", "b"}, func() { ran = true })
	if !ran {
		t.Error("function did not run")
	}
}

// Composite primitives for the Whole tests. cmpTanhMul(x, y) is
// tanh(x)·y; cmpOuter(x, y) is cmpTanhMul(x, y) + x. Both are recorded
// whole; cmpLoose is cmpTanhMul without Whole.
var (
	cmpAbstractCalls int
	cmpTanhMul       = cmpComposite("interptest.whole.tanhmul", true, func(a []*interp.Tensor) *interp.Tensor {
		return interptest.Bind(prims.Mul, interptest.Bind(prims.Tanh, a[0]), a[1])
	})
	cmpOuter = cmpComposite("interptest.whole.outer", true, func(a []*interp.Tensor) *interp.Tensor {
		return interptest.Bind(prims.Add, interptest.Bind(cmpTanhMul, a[0], a[1]), a[0])
	})
	cmpLoose = cmpComposite("interptest.whole.loose", false, func(a []*interp.Tensor) *interp.Tensor {
		return interptest.Bind(prims.Mul, interptest.Bind(prims.Tanh, a[0]), a[1])
	})
	// cmpKernel has a cpu kernel (x ↦ 42) that Eval prefers to its
	// decomposition (x ↦ x).
	cmpKernel = func() *interp.Prim {
		p := cmpComposite("interptest.whole.kernel", true, func(a []*interp.Tensor) *interp.Tensor {
			return interptest.Bind(prims.Copy, a[0])
		})
		cpu.New().RegisterKernel(p.Op, func(_ any, _, out []backend.Array) {
			d := cpu.Float64s(out[0])
			for i := range d {
				d[i] = 42
			}
		})
		return p
	}()
)

// cmpComposite defines a composite whose Abstract (used when it is
// recorded whole) requires operands of one type and counts its calls.
func cmpComposite(name string, whole bool, impl func(a []*interp.Tensor) *interp.Tensor) *interp.Prim {
	p := interp.NewPrim(name, interp.Pure, func(_ any, in []interp.Aval) []interp.Aval {
		cmpAbstractCalls++
		for _, a := range in[1:] {
			if !a.Equal(in[0]) {
				interp.Panicf("whole composite: operands %v and %v differ", in[0], a)
			}
		}
		return []interp.Aval{in[0]}
	})
	p.Impl = func(_ any, a []*interp.Tensor) []*interp.Tensor { return []*interp.Tensor{impl(a)} }
	p.Whole = whole
	return p
}

func cmpPrimNames(g *interp.Graph) []string {
	var s []string
	for _, e := range g.Eqns {
		s = append(s, e.Prim.Name)
	}
	return s
}

func TestWholeRecordedAsOneEquation(t *testing.T) {
	x := interptest.Tensor([]float64{-1, 0.5, 2}, 3)
	y := interptest.Tensor([]float64{3, -2, 0.25}, 3)
	av := interp.AvalOf(x)
	cases := []struct {
		name      string
		p         *interp.Prim
		whole     []string // equations of a plain trace
		decompose []string // equations with DecomposeOps
	}{
		{"whole", cmpTanhMul, []string{"interptest.whole.tanhmul"}, []string{"tanh", "mul"}},
		{"nested whole", cmpOuter, []string{"interptest.whole.outer"}, []string{"tanh", "mul", "add"}},
		{"not whole", cmpLoose, []string{"tanh", "mul"}, []string{"tanh", "mul"}},
	}
	direct := interptest.Bind(prims.Add, interptest.Bind(prims.Mul, interptest.Bind(prims.Tanh, x), y), x)
	for _, c := range cases {
		f := func(a []*interp.Tensor) []*interp.Tensor { return []*interp.Tensor{interptest.Bind(c.p, a[0], a[1])} }
		calls := cmpAbstractCalls
		g := interptest.Trace(f, av, av)
		if c.p.Whole && cmpAbstractCalls == calls {
			t.Errorf("%s: Abstract not consulted for a whole composite", c.name)
		}
		calls = cmpAbstractCalls
		gd := interp.Trace(f, []*interp.Tensor{x, y}, interp.DecomposeOps())
		if cmpAbstractCalls != calls {
			t.Errorf("%s: Abstract consulted by a decomposing trace", c.name)
		}
		if got := cmpPrimNames(g); !slices.Equal(got, c.whole) {
			t.Errorf("%s: trace records %v, want %v", c.name, got, c.whole)
		}
		if got := cmpPrimNames(gd); !slices.Equal(got, c.decompose) {
			t.Errorf("%s: decomposing trace records %v, want %v", c.name, got, c.decompose)
		}
		if len(g.Eqns) == 1 && (!g.Eqns[0].Out[0].Aval.Equal(av) || g.Eqns[0].Prim != c.p) {
			t.Errorf("%s: equation %v %v", c.name, g.Eqns[0].Prim, g.Eqns[0].Out[0].Aval)
		}
		// Evaluating the one-equation graph decomposes eagerly (no
		// kernel): the same values as the decomposed graph.
		got := g.Eval(x, y)
		interptest.SameResults(t, c.name, got, gd.Eval(x, y))
		if c.p == cmpOuter {
			interptest.SameResults(t, c.name+" vs direct", got, []*interp.Tensor{direct})
		}
	}

	// The whole composite's Abstract decides its operands; a decomposing
	// trace reports the failing primitive of the decomposition instead.
	z := interptest.Aval(backend.Float64, 4)
	f := func(a []*interp.Tensor) []*interp.Tensor {
		return []*interp.Tensor{interptest.Bind(cmpTanhMul, a[0], a[1])}
	}
	wantErr(t, func() { interptest.Trace(f, av, z) }, "interptest.whole.tanhmul", "operands f64[3] and f64[4] differ", "[in trace]")
	e := wantErr(t, func() { interp.TraceAvals("trace", f, []interp.Aval{av, z}, interp.DecomposeOps()) }, "mul", "[in trace]")
	if e.Prim != "mul" {
		t.Errorf("decomposing trace failed in %q, want mul", e.Prim)
	}
}

// TestWholeKernel checks that a whole composite with a backend kernel
// runs the kernel eagerly and from a one-equation graph, and its
// decomposition under DecomposeOps.
func TestWholeKernel(t *testing.T) {
	n := interptest.Min + 3
	x := interptest.Tensor(make([]float64, n), n)
	check := func(what string, r *interp.Tensor, want float64) {
		t.Helper()
		for i, v := range r.Float64s() {
			if v != want {
				t.Fatalf("%s: element %d = %v, want %v", what, i, v, want)
			}
		}
	}
	check("eager", interptest.Bind(cmpKernel, x), 42)
	f := func(a []*interp.Tensor) []*interp.Tensor {
		return []*interp.Tensor{interptest.Bind(prims.Neg, interptest.Bind(cmpKernel, a[0]))}
	}
	g := interp.Trace(f, []*interp.Tensor{x})
	if got := cmpPrimNames(g); !slices.Equal(got, []string{"interptest.whole.kernel", "neg"}) {
		t.Fatalf("trace records %v", got)
	}
	check("graph", g.Eval(x)[0], -42)
	gd := interp.Trace(f, []*interp.Tensor{x}, interp.DecomposeOps())
	if got := strings.Join(cmpPrimNames(gd), " "); got != "copy neg" {
		t.Fatalf("decomposing trace records %v", got)
	}
	check("decomposed graph", gd.Eval(x)[0], 0)
}
