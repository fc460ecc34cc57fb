package transforms_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/gpt/model"
	"github.com/peel-ml/peel/transforms"
)

// TestExportSymbolicMLP: an MLP over [batch, sequence, 4] exported once
// at batch 6 and sequence 4, both symbolic, runs at other batch sizes and
// sequence lengths (1 included), equal to the function, and so do its
// gradient, its Vmap and its compiled call, from the loaded program.
func TestExportSymbolicMLP(t *testing.T) {
	m := newExpMLP(1)
	f := func(x *peel.Tensor) *peel.Tensor {
		s := x.Shape()
		y := m.apply(peel.Reshape(x, s[0]*s[1], 4))
		return peel.Reshape(y, s[0], s[1], 3)
	}
	x := peel.Normal(peel.Key(9), peel.Float64, 6, 4, 4)
	e := reload(t, transforms.Export(f, x, transforms.SymbolicShape("", "b, s, 4")))
	if got := e.In()[0].String(); !strings.Contains(got, "f64[b,s,4]") {
		t.Fatalf("In = %s", got)
	}
	// Concurrent calls at several sizes share the program's instances.
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 3 {
				xb := peel.Normal(peel.Key(int64(10*g+r)), peel.Float64, 2+r, 1+g, 4)
				got, want := e.Call(xb)[0], f(xb)
				if d := maxAbsDiff(got, want); !(d <= 1e-12) {
					t.Errorf("goroutine %d, call %d: differs by %g", g, r, d)
				}
			}
		}()
	}
	wg.Wait()
	for _, bs := range [][2]int{{6, 4}, {5, 3}, {1, 7}, {16, 1}, {3, 9}} {
		xb := peel.Normal(peel.Key(int64(bs[0]*10+bs[1])), peel.Float64, bs[0], bs[1], 4)
		sameTensors(t, "call", e.Call(xb), []*peel.Tensor{f(xb)}, 1e-12)
		loaded := transforms.ExportedFunc[*peel.Tensor, *peel.Tensor](e)
		loss := func(g func(*peel.Tensor) *peel.Tensor) func(*peel.Tensor) *peel.Tensor {
			return func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Square(g(x))) }
		}
		sameTensors(t, "Grad", []*peel.Tensor{transforms.Grad(loss(loaded))(xb)}, []*peel.Tensor{transforms.Grad(loss(f))(xb)}, 1e-12)
		sameTensors(t, "Compile", []*peel.Tensor{transforms.Compile(loaded)(xb)}, []*peel.Tensor{f(xb)}, 1e-12)
		_, jl := transforms.JVP(loaded, xb, peel.Cos(xb))
		_, jf := transforms.JVP(f, xb, peel.Cos(xb))
		sameTensors(t, "JVP", []*peel.Tensor{jl}, []*peel.Tensor{jf}, 1e-12)
		xs := peel.Stack([]*peel.Tensor{xb, peel.Neg(xb)}, 0)
		sameTensors(t, "Vmap", []*peel.Tensor{transforms.Vmap(loaded)(xs)}, []*peel.Tensor{transforms.Vmap(f)(xs)}, 1e-12)
	}
}

// TestExportSymbolicGPT: the GPT's forward pass, exported with the
// parameters as an argument and a symbolic batch, runs at other batch
// sizes; its sequence length stays fixed, since the model builds its
// causal mask in Go from the length (a constant of the program), which
// Export refuses to make symbolic, saying so.
func TestExportSymbolicGPT(t *testing.T) {
	c := model.Config{Vocab: 11, Context: 8, Layers: 2, Heads: 2, Width: 16, DType: peel.Float64}
	p := model.Init(peel.Key(0), c)
	fwd := func(p model.Params, idx *peel.Tensor) *peel.Tensor { return model.Forward(c, p, idx, model.Options{}) }
	tokens := func(b, s int, seed int64) *peel.Tensor {
		return peel.AsType(peel.Floor(peel.Mul(peel.Uniform(peel.Key(seed), peel.Float64, b, s), float64(c.Vocab))), peel.Int64)
	}
	e := reload(t, transforms.Export2(fwd, p, tokens(2, 8, 1), transforms.SymbolicShape("args[1]", "b, 8")))
	loaded := transforms.ExportedFunc2[model.Params, *peel.Tensor, *peel.Tensor](e)
	for _, b := range []int{1, 3, 5} {
		idx := tokens(b, 8, int64(b))
		sameTensors(t, "GPT forward", []*peel.Tensor{loaded(p, idx)}, []*peel.Tensor{fwd(p, idx)}, 1e-10)
	}
	err := peel.Catch(func() {
		transforms.Export2(fwd, p, tokens(2, 2, 1), transforms.SymbolicShape("args[1]", "b, s"))
	})
	var pe *peel.Error
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "depends on a dimension variable") {
		t.Fatalf("a symbolic sequence length: %v, want a *peel.Error saying a constant depends on the variable", err)
	}
}

// TestExportSymbolicErrors: the constraints of a program with dimension
// variables are checked, at export and at each call, with *peel.Error.
func TestExportSymbolicErrors(t *testing.T) {
	check := func(what string, err error, want string) {
		t.Helper()
		var pe *peel.Error
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a *peel.Error saying %q", what, err, want)
		}
	}
	add := func(x, y *peel.Tensor) *peel.Tensor { return peel.Add(peel.Sum(x, 1), peel.Sum(y, 1)) }
	x, y := peel.Ones(peel.Float64, 4, 3), peel.Ones(peel.Float64, 4, 2)
	e := transforms.Export2(add, x, y, transforms.SymbolicShape("args[0]", "b, 3"), transforms.SymbolicShape("args[1]", "b, 2"))
	check("unequal b", peel.Catch(func() { e.Call(peel.Ones(peel.Float64, 5, 3), peel.Ones(peel.Float64, 6, 2)) }),
		"dimension b is 5 at axis 0 of argument args[0] but 6 at axis 0 of argument args[1]")
	check("fixed size", peel.Catch(func() { e.Call(peel.Ones(peel.Float64, 5, 4), peel.Ones(peel.Float64, 5, 2)) }),
		"argument args[0] must be f64[b,3] (f64[5,3] at these sizes), got f64[5,4]")
	sameTensors(t, "b=7", e.Call(peel.Ones(peel.Float64, 7, 3), peel.Ones(peel.Float64, 7, 2)), []*peel.Tensor{peel.Full(peel.Float64, 5, 7)}, 0)

	// A reshape that halves b: b must be even.
	half := func(x *peel.Tensor) *peel.Tensor { return peel.Reshape(x, x.Shape()[0]/2, 6) }
	h := transforms.Export(half, peel.Ones(peel.Float64, 4, 3), transforms.SymbolicShape("", "b, 3"))
	sameTensors(t, "b=6", h.Call(peel.Ones(peel.Float64, 6, 3)), []*peel.Tensor{peel.Ones(peel.Float64, 3, 6)}, 0)
	check("odd b", peel.Catch(func() { h.Call(peel.Ones(peel.Float64, 5, 3)) }), "not a whole number")

	// Sizes quadratic in b, and Go code branching on b, are refused.
	outer := func(x *peel.Tensor) *peel.Tensor { v := peel.Reshape(x, -1); return peel.Reshape(peel.Outer(v, v), -1) }
	check("b·b", peel.Catch(func() { transforms.Export(outer, peel.Ones(peel.Float64, 4, 3), transforms.SymbolicShape("", "b, 3")) }),
		"other than linearly")
	branch := func(x *peel.Tensor) *peel.Tensor {
		if x.Shape()[0] > 5 {
			return peel.Sin(x)
		}
		return x
	}
	check("branch", peel.Catch(func() { transforms.Export(branch, peel.Ones(peel.Float64, 4, 3), transforms.SymbolicShape("", "b, 3")) }),
		"another structure")
	check("path", peel.Catch(func() { transforms.Export(half, peel.Ones(peel.Float64, 4, 3), transforms.SymbolicShape("x", "b, 3")) }),
		`no argument leaf has that path`)
	check("rank", peel.Catch(func() { transforms.Export(half, peel.Ones(peel.Float64, 4, 3), transforms.SymbolicShape("", "b")) }),
		"1 dimensions for an argument of shape [4 3]")
	check("literal", peel.Catch(func() { transforms.Export(half, peel.Ones(peel.Float64, 4, 3), transforms.SymbolicShape("", "b, 2")) }),
		"axis 1 is 3 in the example, not 2")
}

// TestExportSymbolicScan: a Scan over a symbolic sequence length (its
// length parameter and its slices' shapes are sizes of the program) and
// a Cond inside it run at other lengths.
func TestExportSymbolicScan(t *testing.T) {
	w := peel.Normal(peel.Key(3), peel.Float64, 4, 4)
	f := func(x *peel.Tensor) []*peel.Tensor {
		c, ys := transforms.Scan(func(c, xi *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
			n := peel.Tanh(peel.Add(peel.Reshape(peel.MatMul(peel.Reshape(c, 1, 4), w), 4), xi))
			n = transforms.Cond(peel.Greater(peel.Sum(n), 0.0), peel.Sin, peel.Cos, n)
			return n, peel.Sum(n)
		}, peel.Zeros(peel.Float64, 4), x)
		return []*peel.Tensor{c, ys}
	}
	e := reload(t, transforms.Export(f, peel.Normal(peel.Key(4), peel.Float64, 5, 4), transforms.SymbolicShape("", "s, 4")))
	for _, s := range []int{5, 2, 9} {
		x := peel.Normal(peel.Key(int64(s)), peel.Float64, s, 4)
		sameTensors(t, "scan", e.Call(x), f(x), 1e-12)
	}
}
