package peel_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// captureDebug runs f with DebugPrint writing to a buffer and returns
// the lines printed.
func captureDebug(t *testing.T, f func()) []string {
	t.Helper()
	var b bytes.Buffer
	old := peel.SetDebugOutput(&b)
	defer peel.SetDebugOutput(old)
	f()
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

func wantLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s printed\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestDebugPrint: prints inside transformed functions show the values
// where they run: eagerly; in a compiled function at each call, in the
// order written, not while it is traced; once per lane under Vmap,
// labelled, outer lanes first; with the primal values under Grad; and
// under Compile(Vmap(Grad(f))) all of these at once, in order (JAX's
// debugging_primitives_test: prints under jit, vmap and grad).
func TestDebugPrint(t *testing.T) {
	f := func(x *peel.Tensor) *peel.Tensor {
		peel.DebugPrint("x=%v", x)
		y := peel.Mul(x, x)
		peel.DebugPrint("y=%v sum=%v", y, peel.Sum(y))
		return peel.Sum(y)
	}
	x := peel.FromFloat64s([]float64{1, 2})
	wantLines(t, "eager", captureDebug(t, func() { f(x) }), []string{"x=[1 2]", "y=[1 4] sum=5"})

	c := transforms.Compile(f)
	wantLines(t, "Compile, first call", captureDebug(t, func() { c(x) }), []string{"x=[1 2]", "y=[1 4] sum=5"})
	// The same print twice prints twice: the compiler merges equal
	// equations, never effects.
	twice := transforms.Compile(func(x *peel.Tensor) *peel.Tensor {
		peel.DebugPrint("x=%v", x)
		peel.DebugPrint("x=%v", x)
		return peel.Sin(x)
	})
	wantLines(t, "Compile, a print twice", captureDebug(t, func() { twice(x) }), []string{"x=[1 2]", "x=[1 2]"})
	wantLines(t, "Compile, second call", captureDebug(t, func() { c(peel.FromFloat64s([]float64{3, 0})) }), []string{"x=[3 0]", "y=[9 0] sum=9"})

	g := func(x *peel.Tensor) *peel.Tensor { peel.DebugPrint("x=%v", x); return peel.Sin(x) }
	wantLines(t, "Vmap", captureDebug(t, func() { transforms.Vmap(g)(peel.FromFloat64s([]float64{1, 2, 3})) }),
		[]string{"[lane 0] x=1", "[lane 1] x=2", "[lane 2] x=3"})
	wantLines(t, "Vmap of Vmap", captureDebug(t, func() {
		transforms.Vmap(transforms.Vmap(g))(peel.FromFloat64s([]float64{1, 2, 3, 4}, 2, 2))
	}), []string{"[lane 0] [lane 0] x=1", "[lane 1] [lane 0] x=3", "[lane 0] [lane 1] x=2", "[lane 1] [lane 1] x=4"})

	wantLines(t, "Grad", captureDebug(t, func() { transforms.Grad(f)(x) }), []string{"x=[1 2]", "y=[1 4] sum=5"})
	// A checkpoint's forward pass prints; its recomputation for the
	// backward pass computes only what the derivative needs, which is no
	// print.
	ck := transforms.Grad(transforms.Checkpoint(f, transforms.NothingSaveable))
	wantLines(t, "Grad of Checkpoint", captureDebug(t, func() { ck(x) }), []string{"x=[1 2]", "y=[1 4] sum=5"})
	wantLines(t, "Compile(Grad of Checkpoint)", captureDebug(t, func() { transforms.Compile(ck)(x) }), []string{"x=[1 2]", "y=[1 4] sum=5"})

	// In control flow: the body's prints run at every step, also where
	// the loop's results are not needed (a gradient needs only the
	// backward scan), eagerly and compiled.
	sc := func(x *peel.Tensor) *peel.Tensor {
		c, _ := transforms.Scan(func(c, xi *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
			peel.DebugPrint("c=%v", c)
			return peel.Add(c, peel.Mul(xi, xi)), c
		}, peel.Scalar(0.0), x)
		return c
	}
	for name, g := range map[string]func(*peel.Tensor) *peel.Tensor{"Grad(Scan)": transforms.Grad(sc), "Compile(Grad(Scan))": transforms.Compile(transforms.Grad(sc))} {
		wantLines(t, name, captureDebug(t, func() { g(x) }), []string{"c=0", "c=1"})
	}
	cd := func(x *peel.Tensor) *peel.Tensor {
		return peel.Sum(transforms.Cond(peel.Scalar(true), func(x *peel.Tensor) *peel.Tensor { peel.DebugPrint("true %v", x); return peel.Sin(x) },
			func(x *peel.Tensor) *peel.Tensor { return x }, x))
	}
	wantLines(t, "Compile(Grad(Cond))", captureDebug(t, func() { transforms.Compile(transforms.Grad(cd))(x) }), []string{"true [1 2]"})

	// A WhileLoop under forward mode: the primals' loop prints each step
	// once; the tangents' loop of a staged JVP (Jacfwd, Compile(JVP))
	// does not print again.
	wl := func(x *peel.Tensor) *peel.Tensor {
		return transforms.WhileLoop(func(v *peel.Tensor) *peel.Tensor { return peel.Less(peel.Sum(v), 10.0) },
			func(v *peel.Tensor) *peel.Tensor { peel.DebugPrint("v=%v", v); return peel.Mul(v, 2.0) }, x)
	}
	steps := []string{"v=[1 2]", "v=[2 4]"}
	wantLines(t, "JVP(WhileLoop)", captureDebug(t, func() { transforms.JVP(wl, x, x) }), steps)
	wantLines(t, "Jacfwd(WhileLoop)", captureDebug(t, func() { transforms.Jacfwd(wl)(x) }), steps)
	wantLines(t, "Compile(Jacfwd(WhileLoop))", captureDebug(t, func() { transforms.Compile(transforms.Jacfwd(wl))(x) }), steps)

	xs := peel.FromFloat64s([]float64{1, 2, 3, 4}, 2, 2)
	cvg := transforms.Compile(transforms.Vmap(transforms.Grad(f)))
	want := []string{"[lane 0] x=[1 2]", "[lane 1] x=[3 4]", "[lane 0] y=[1 4] sum=5", "[lane 1] y=[ 9 16] sum=25"}
	wantLines(t, "Compile(Vmap(Grad))", captureDebug(t, func() {
		if got := cvg(xs).Float64s(); !slices.Equal(got, []float64{2, 4, 6, 8}) {
			t.Errorf("Compile(Vmap(Grad(f))) = %v", got)
		}
	}), want)
	wantLines(t, "Compile(Vmap(Grad)) again", captureDebug(t, func() { cvg(xs) }), want)
}

// TestCallback: a Go function called on concrete values inside
// transformed functions: its results eagerly, compiled, and under Vmap
// (once per lane) equal the function applied directly; Grad through it
// is refused naming peel.Callback unless CustomVJP gives its derivative.
func TestCallback(t *testing.T) {
	var calls int
	host := func(args []*peel.Tensor) []*peel.Tensor {
		calls++
		v := args[0].Float64s()
		out := make([]float64, len(v))
		for i, e := range v {
			out[i] = e*e + 1 // computed in Go, outside peel
		}
		return []*peel.Tensor{peel.FromFloat64s(out, args[0].Shape()...)}
	}
	f := func(x *peel.Tensor) *peel.Tensor {
		return peel.Callback(host, []*peel.Tensor{x}, peel.Mul(x, 2.0))[0]
	}
	x := peel.FromFloat64s([]float64{1, -0.5})
	want := []float64{5, 2}
	if got := f(x).Float64s(); !slices.Equal(got, want) {
		t.Errorf("eager: %v", got)
	}
	c := transforms.Compile(f)
	calls = 0
	c(x)
	if got := c(x).Float64s(); !slices.Equal(got, want) || calls != 2 {
		t.Errorf("compiled: %v after %d calls", got, calls)
	}
	calls = 0
	xs := peel.FromFloat64s([]float64{1, -0.5, 2, 0}, 2, 2)
	if got := transforms.Vmap(f)(xs).Float64s(); !slices.Equal(got, []float64{5, 2, 17, 1}) || calls != 2 {
		t.Errorf("Vmap: %v after %d calls", got, calls)
	}
	err := peel.Catch(func() { transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(f(x)) })(x) })
	if err == nil || !strings.Contains(err.Error(), "peel.Callback") || !strings.Contains(err.Error(), "CustomVJP") {
		t.Errorf("Grad through a callback: %v", err)
	}
	withRule := transforms.CustomVJP(f, func(x *peel.Tensor) (*peel.Tensor, *peel.Tensor) { return f(x), x },
		func(x, ct *peel.Tensor) *peel.Tensor { return peel.Mul(ct, peel.Mul(x, 8.0)) }) // d/dx (2x)²+1
	if got := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(withRule(x)) })(x).Float64s(); !slices.Equal(got, []float64{8, -4}) {
		t.Errorf("Grad with CustomVJP: %v", got)
	}
	bad := func(args []*peel.Tensor) []*peel.Tensor { return []*peel.Tensor{peel.Zeros(peel.Float32, 2)} }
	err = peel.Catch(func() { peel.Callback(bad, []*peel.Tensor{x}, x) })
	if err == nil || !strings.Contains(err.Error(), "peel.Callback") || !strings.Contains(err.Error(), "f32[2]") {
		t.Errorf("a result of another dtype: %v", err)
	}
}

// A print inside a vmapped function runs once per lane.
func ExampleDebugPrint() {
	f := transforms.Vmap(func(x *peel.Tensor) *peel.Tensor {
		peel.DebugPrint("x=%v", x)
		return peel.Exp(x)
	})
	f(peel.FromFloat64s([]float64{0, 1}))
	// Output:
	// [lane 0] x=0
	// [lane 1] x=1
}
