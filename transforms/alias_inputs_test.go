package transforms_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
)

// TestRegressionAliasedArgumentLeaves (issue 25, item 2): the same
// tensor passed as two leaves (tied weights), or a view of one leaf
// passed as another, aliases under Functionalize and Compile as it does
// eagerly; a compiled function traced for one alias pattern is not run
// for another.
func TestRegressionAliasedArgumentLeaves(t *testing.T) {
	f := func(p [2]*T) *T { peel.AddInPlace(p[0], 1.0); return peel.Mul(p[1], 2.0) }
	tied := func() ([2]*T, *T) { x := peel.FromFloat64s([]float64{1, 2, 3}, 3); return [2]*T{x, x}, x }
	view := func() ([2]*T, *T) {
		x := peel.FromFloat64s([]float64{1, 2, 3}, 3)
		return [2]*T{x, peel.Narrow(x, 0, 1, 2)}, x
	}
	views := func() ([2]*T, *T) {
		x := peel.FromFloat64s([]float64{1, 2, 3}, 3)
		return [2]*T{peel.Narrow(x, 0, 0, 2), peel.Narrow(x, 0, 1, 2)}, x
	}
	apart := func() ([2]*T, *T) {
		return [2]*T{peel.FromFloat64s([]float64{1, 2, 3}, 3), peel.FromFloat64s([]float64{1, 2, 3}, 3)}, nil
	}
	cases := []struct {
		name       string
		make       func() ([2]*T, *T)
		want, base []float64
	}{
		{"tied", tied, []float64{4, 6, 8}, []float64{2, 3, 4}},
		{"view of the other", view, []float64{6, 8}, []float64{2, 3, 4}},
		{"two views of one tensor", views, []float64{6, 6}, []float64{2, 3, 3}},
		{"apart", apart, []float64{2, 4, 6}, nil},
	}
	var cIns transforms.Inspector
	c := transforms.Compile(f, transforms.Inspect(&cIns))
	for _, run := range []struct {
		name string
		g    func([2]*T) *T
	}{{"eager", f}, {"Functionalize", transforms.Functionalize(f)}, {"Compile", c}} {
		// Twice through the patterns: a compiled function alternates
		// between its programs.
		for range 2 {
			for _, tc := range cases {
				p, x := tc.make()
				near(t, run.name+" "+tc.name+": result", run.g(p).Float64s(), tc.want, 0)
				if x != nil {
					near(t, run.name+" "+tc.name+": base after", x.Float64s(), tc.base, 0)
				}
			}
		}
	}
	if s := cIns.Stats(); s.Signatures != 4 || s.Misses != 4 {
		t.Errorf("compiled stats %+v: want 4 signatures, one per alias pattern, each traced once", s)
	}
}

// TestCompileAliasedReadOnly: aliasing among arguments f only reads
// does not matter, so tied and untied calls share one program (an
// optimizer's state starts with shared zeros).
func TestCompileAliasedReadOnly(t *testing.T) {
	f := func(p [2]*T) *T { return peel.Add(peel.Mul(p[0], 2.0), p[1]) }
	var cIns transforms.Inspector
	c := transforms.Compile(f, transforms.Inspect(&cIns))
	x, y := peel.FromFloat64s([]float64{1, 2}, 2), peel.FromFloat64s([]float64{5, 7}, 2)
	for _, p := range [][2]*T{{x, x}, {x, y}, {peel.Narrow(x, 0, 0, 2), x}, {y, y}} {
		near(t, "result", c(p).Float64s(), f(p).Float64s(), 0)
	}
	if s := cIns.Stats(); s.Misses != 1 {
		t.Errorf("stats %+v: want one trace for every alias pattern of a function that writes no argument", s)
	}
}

// TestCompileAliasedManyLeaves: the alias pattern of a tree of many
// leaves (the set path of sharesBase) is seen too.
func TestCompileAliasedManyLeaves(t *testing.T) {
	f := func(ps []*T) *T {
		peel.MulInPlace(ps[0], 3.0)
		return peel.Add(ps[len(ps)-1], ps[1])
	}
	c := transforms.Compile(f)
	for _, tied := range []bool{true, false, true} {
		mk := func() ([]*T, *T) {
			ps := make([]*T, 20)
			for i := range ps {
				ps[i] = peel.FromFloat64s([]float64{float64(i), 1}, 2)
			}
			if tied {
				ps[19] = ps[0]
			}
			return ps, ps[0]
		}
		pe, xe := mk()
		want := f(pe).Float64s()
		pc, xc := mk()
		near(t, fmt.Sprintf("tied=%v: result", tied), c(pc).Float64s(), want, 0)
		near(t, fmt.Sprintf("tied=%v: leaf 0 after", tied), xc.Float64s(), xe.Float64s(), 0)
	}
}

// TestRegressionCompileCapturedWrite (issue 25, item 3): a compiled
// function that writes a captured tensor makes the write on every call,
// not once while tracing, and does not trace again for it.
func TestRegressionCompileCapturedWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(W, v *T)
	}{
		{"constant", func(W, v *T) { peel.AddInPlace(W, 1.0) }},
		{"traced value", func(W, v *T) { peel.AddInPlace(W, peel.Div(v, v)) }},
	} {
		W := peel.FromFloat64s([]float64{1}, 1)
		var cIns transforms.Inspector
		c := transforms.Compile(func(v *T) *T { tc.write(W, v); return peel.Mul(v, W) }, transforms.Inspect(&cIns))
		for k, want := range []float64{2, 3, 4} {
			near(t, tc.name+": result", c(peel.Ones(peel.Float64, 1)).Float64s(), []float64{want}, 0)
			near(t, tc.name+": W after the call", W.Float64s(), []float64{want}, 0)
			if s := cIns.Stats(); s.Misses != 1 || s.Hits != int64(k) {
				t.Errorf("%s: stats after call %d: %+v, want one trace", tc.name, k+1, s)
			}
		}
	}
}

// TestRegressionArgumentIsCaptured (issue 25, item 3): the argument f
// writes is also the tensor f reads as a capture; the read sees the
// write under Functionalize and Compile, on every call.
func TestRegressionArgumentIsCaptured(t *testing.T) {
	for _, name := range []string{"Functionalize", "Compile"} {
		W := peel.FromFloat64s([]float64{1, 2, 3}, 3)
		f := func(a *T) *T { peel.AddInPlace(a, 1.0); return peel.Mul(W, 1.0) }
		g := transforms.Functionalize(f)
		var cIns transforms.Inspector
		c := transforms.Compile(f, transforms.Inspect(&cIns))
		if name == "Compile" {
			g = c
		}
		near(t, name+" call 1", g(W).Float64s(), []float64{2, 3, 4}, 0)
		near(t, name+" call 2", g(W).Float64s(), []float64{3, 4, 5}, 0)
		near(t, name+" W", W.Float64s(), []float64{3, 4, 5}, 0)
		if s := cIns.Stats(); name == "Compile" && s.Misses != 1 {
			t.Errorf("compiled stats %+v: want one trace", s)
		}
	}
}

// TestCompileCapturedWriteUnderTransforms: a compiled function that
// writes a captured tensor is one primitive to the transforms above it:
// Grad sees the write (the captured tensor gets the primal, as under
// Grad of f), Vmap refuses it as it refuses f's, with *peel.Error and
// the tensor untouched.
func TestCompileCapturedWriteUnderTransforms(t *testing.T) {
	mk := func() (*T, func(v *T) *T) {
		W := peel.FromFloat64s([]float64{1, 2}, 2)
		return W, func(v *T) *T { peel.AddInPlace(W, v); return peel.Sum(peel.Mul(v, W)) }
	}
	x := peel.FromFloat64s([]float64{0.5, 3}, 2)
	We, fe := mk()
	Wc, fc := mk()
	c := transforms.Compile(fc)
	for range 3 {
		near(t, "Grad(Compile) vs Grad", transforms.Grad(c)(x).Float64s(), transforms.Grad(fe)(x).Float64s(), 0)
		near(t, "captured tensor after", Wc.Float64s(), We.Float64s(), 0)
	}
	Wv, fv := mk()
	cv := transforms.Compile(fv)
	xs := peel.FromFloat64s([]float64{0.5, 3, 1, 1}, 2, 2)
	for name, g := range map[string]func(*T) *T{"Vmap(f)": fv, "Vmap(Compile(f))": cv} {
		err := interp.Catch(func() { transforms.Vmap(g)(xs) })
		var pe *peel.Error
		if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "not batched") {
			t.Errorf("%s: %v, want the *peel.Error of a batched write into an unbatched tensor", name, err)
		}
		near(t, name+": captured tensor untouched", Wv.Float64s(), []float64{1, 2}, 0)
	}
}
