package transforms_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/checkpoint"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
)

type expMLP struct{ W1, B1, W2, B2 *peel.Tensor }

func newExpMLP(seed int64) expMLP {
	k := peel.SplitKeys(peel.Key(seed), 4)
	return expMLP{
		W1: peel.Normal(k[0], peel.Float64, 4, 8),
		B1: peel.Normal(k[1], peel.Float64, 8),
		W2: peel.Normal(k[2], peel.Float64, 8, 3),
		B2: peel.Normal(k[3], peel.Float64, 3),
	}
}

func (m expMLP) apply(x *peel.Tensor) *peel.Tensor {
	h := peel.Tanh(peel.Add(peel.MatMul(x, m.W1), m.B1))
	return peel.Add(peel.MatMul(h, m.W2), m.B2)
}

func expLoss(m expMLP, x *peel.Tensor) *peel.Tensor {
	return peel.Mean(peel.Square(m.apply(x)))
}

// reload writes e's bytes and loads them back, as another process would.
func reload(t *testing.T, e *transforms.Exported, opts ...transforms.LoadOption) *transforms.Exported {
	t.Helper()
	var buf bytes.Buffer
	if _, err := e.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	l, err := transforms.ReadExported(&buf, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func sameTensors(t *testing.T, what string, got, want []*peel.Tensor, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !interp.AvalOf(got[i]).Equal(interp.AvalOf(want[i])) {
			t.Fatalf("%s: result %d is %s, want %s", what, i, got[i].TypeString(), want[i].TypeString())
		}
		g, w := peel.AsType(got[i], peel.Float64).Float64s(), peel.AsType(want[i], peel.Float64).Float64s()
		for j := range w {
			if d := g[j] - w[j]; d > tol || d < -tol || g[j] != g[j] != (w[j] != w[j]) {
				t.Fatalf("%s: result %d element %d = %v, want %v", what, i, j, g[j], w[j])
			}
		}
	}
}

// TestExportRoundTrip: a model with captured weights, exported, written,
// read back and run, equals the compiled function bit for bit; the
// typed form rebuilds the result tree.
func TestExportRoundTrip(t *testing.T) {
	m := newExpMLP(1)
	f := func(x *peel.Tensor) *peel.Tensor { return m.apply(x) }
	x := peel.Normal(peel.Key(9), peel.Float64, 5, 4)
	e := transforms.Export(f, x)
	l := reload(t, e)
	want := transforms.Compile(f)(x)
	sameTensors(t, "Call", l.Call(x), []*peel.Tensor{want}, 0)
	sameTensors(t, "ExportedFunc", []*peel.Tensor{transforms.ExportedFunc[*peel.Tensor, *peel.Tensor](l)(x)}, []*peel.Tensor{want}, 0)
	if got := l.String(); !strings.Contains(got, "f64[5,4]") || !strings.Contains(got, "f64[5,3]") {
		t.Fatalf("String = %q", got)
	}
	// The biases, broadcast to the batch while f was traced, are stored
	// as the biases (strided constants): 67 float64 parameters, 536
	// bytes, where the broadcast ones would take 440 more (about 760 bytes
	// in all, against 1200).
	if n := len(e.Bytes()); n > 1000 {
		t.Errorf("the program takes %d bytes:\n%v", n, l.Graph())
	}
	if l.Producer() == "" || !strings.Contains(l.Name(), "TestExportRoundTrip") {
		t.Fatalf("Producer %q, Name %q", l.Producer(), l.Name())
	}
}

// TestExport2Composes: the loaded program of a loss of (params, x)
// composes with Grad, Vmap (per-example gradients) and Compile, and
// equals the transforms of the original function.
func TestExport2Composes(t *testing.T) {
	m := newExpMLP(2)
	x := peel.Normal(peel.Key(3), peel.Float64, 6, 4)
	e := reload(t, transforms.Export2(expLoss, m, x))
	if in := e.In(); len(in) != 5 || in[0].Path != "args[0].W1" || in[4].Path != "args[1]" {
		t.Fatalf("In = %v", in)
	}
	loaded := transforms.ExportedFunc2[expMLP, *peel.Tensor, *peel.Tensor](e)
	sameTensors(t, "value", []*peel.Tensor{loaded(m, x)}, []*peel.Tensor{expLoss(m, x)}, 1e-12)

	g := transforms.Grad2(loaded)(m, x)
	want := transforms.Grad2(expLoss)(m, x)
	sameTensors(t, "Grad", []*peel.Tensor{g.W1, g.B1, g.W2, g.B2}, []*peel.Tensor{want.W1, want.B1, want.W2, want.B2}, 1e-12)

	// Per-example gradients: the exported loss at one example of batch 1.
	e1 := reload(t, transforms.Export2(expLoss, m, peel.Slice(x, 0, 0, 1, 1)))
	loaded1 := transforms.ExportedFunc2[expMLP, *peel.Tensor, *peel.Tensor](e1)
	per := func(f func(expMLP, *peel.Tensor) *peel.Tensor) expMLP {
		return transforms.Vmap2(func(p expMLP, xi *peel.Tensor) expMLP {
			return transforms.Grad2(f)(p, peel.Reshape(xi, 1, 4))
		}, transforms.InAxes(nil, 0))(m, x)
	}
	pg, pw := per(loaded1), per(expLoss)
	sameTensors(t, "Vmap(Grad)", []*peel.Tensor{pg.W1, pg.B2}, []*peel.Tensor{pw.W1, pw.B2}, 1e-12)

	c := transforms.Compile2(func(p expMLP, x *peel.Tensor) *peel.Tensor { return peel.Mul(loaded(p, x), 2.0) })
	sameTensors(t, "Compile", []*peel.Tensor{c(m, x)}, []*peel.Tensor{peel.Mul(expLoss(m, x), 2.0)}, 1e-12)
}

// TestExportControlFlow: loops, conditionals, checkpoints and compiled
// calls inside the exported function are kept (their graphs travel in
// the file) and run the same.
func TestExportControlFlow(t *testing.T) {
	w := peel.Normal(peel.Key(4), peel.Float64, 3, 3)
	inner := transforms.Compile(func(x *peel.Tensor) *peel.Tensor { return peel.Sin(peel.MatMul(x, w)) })
	f := func(x *peel.Tensor) []*peel.Tensor {
		c, ys := transforms.Scan(func(c, xi *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
			n := peel.Tanh(peel.Add(peel.MatMul(peel.Reshape(c, 1, 3), w), xi))
			return peel.Reshape(n, 3), peel.Sum(n)
		}, peel.Zeros(peel.Float64, 3), x)
		s := transforms.Cond(peel.Greater(peel.Sum(c), 0.0),
			func(v *peel.Tensor) *peel.Tensor { return peel.Mul(v, 2.0) },
			func(v *peel.Tensor) *peel.Tensor { return peel.Neg(v) }, c)
		wl := transforms.WhileLoop(func(v *peel.Tensor) *peel.Tensor { return peel.Less(peel.Sum(peel.Abs(v)), 10.0) },
			func(v *peel.Tensor) *peel.Tensor { return peel.Add(peel.Mul(v, 1.5), 0.25) }, s)
		ck := transforms.Checkpoint(func(v *peel.Tensor) *peel.Tensor {
			return transforms.Name(peel.Exp(peel.Cos(v)), "e")
		}, transforms.SaveOnlyNames("e"))(wl)
		return []*peel.Tensor{ys, inner(peel.Reshape(ck, 1, 3)), transforms.ForiLoop(0, 3, func(i, v *peel.Tensor) *peel.Tensor {
			return peel.Add(v, peel.AsType(i, peel.Float64))
		}, ck)}
	}
	x := peel.Normal(peel.Key(5), peel.Float64, 4, 3)
	e := reload(t, transforms.Export(f, x))
	var names []string
	for _, q := range e.Graph().Eqns {
		names = append(names, q.Prim.Name)
	}
	for _, p := range []string{"scan", "cond", "while"} {
		if !strings.Contains(strings.Join(names, " "), p) {
			t.Errorf("the exported graph has no %s: %v", p, names)
		}
	}
	sameTensors(t, "control flow", e.Call(x), f(x), 1e-12)
	// Forward-mode through the loaded loops.
	dx := peel.OnesLike(x)
	_, want := transforms.JVP(func(x *peel.Tensor) *peel.Tensor { return f(x)[0] }, x, dx)
	cf := transforms.Compile(f)
	_, want2 := transforms.JVP(func(x *peel.Tensor) *peel.Tensor { return cf(x)[0] }, x, dx)
	sameTensors(t, "JVP compiled", []*peel.Tensor{want2}, []*peel.Tensor{want}, 1e-12)
	_, got := transforms.JVP(func(x *peel.Tensor) *peel.Tensor { return e.Call(x)[0] }, x, dx)
	sameTensors(t, "JVP", []*peel.Tensor{got}, []*peel.Tensor{want}, 1e-12)
}

// otherBackend is a backend of its own (a CPU backend behind another
// type, so without its optional interfaces: no fused kernels, no host
// views).
type otherBackend struct{ backend.Backend }

func onBackend(be backend.Backend, x *peel.Tensor) *peel.Tensor {
	arr, from := interp.ArrayOf(x)
	return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(from.ToHost(arr)), Shape: x.Shape()})
}

// TestExportOtherBackend: a program exported on the default backend runs
// on another one, with its constants placed there.
func TestExportOtherBackend(t *testing.T) {
	m := newExpMLP(4)
	f := func(x *peel.Tensor) *peel.Tensor { return peel.Softmax(m.apply(x), -1) }
	x := peel.Normal(peel.Key(7), peel.Float64, 3, 4)
	be := otherBackend{cpu.New()}
	l := reload(t, transforms.Export(f, x), transforms.OnBackend(be))
	xo := onBackend(be, x)
	got := l.Call(xo)
	if _, gb := interp.ArrayOf(got[0]); gb != backend.Backend(be) {
		t.Fatalf("result on backend %v", gb)
	}
	sameTensors(t, "other backend", got, []*peel.Tensor{f(x)}, 1e-12)
	if err := peel.Catch(func() { l.Call(x) }); err == nil {
		t.Fatal("an argument on the default backend was accepted by a program on another")
	}
	// A graph without constants runs on the backend it was loaded for.
	g := reload(t, transforms.Export(func(x *peel.Tensor) *peel.Tensor { return peel.Exp(x) }, x), transforms.OnBackend(be))
	sameTensors(t, "no constants", g.Call(xo), []*peel.Tensor{peel.Exp(x)}, 0)

	// So do the programs nested in it, which have no constants either: a
	// scan's body and a compiled call (they were built for the default
	// backend, and refused the operands, before).
	inner := transforms.Compile(func(x *peel.Tensor) *peel.Tensor { return peel.Sin(x) })
	nested := func(x *peel.Tensor) *peel.Tensor {
		_, ys := transforms.Scan(func(c, xi *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
			n := peel.Add(c, peel.Tanh(xi))
			return n, peel.Mul(n, 2.0)
		}, peel.Zeros(peel.Float64, 4), x)
		return inner(ys)
	}
	n := reload(t, transforms.Export(nested, x), transforms.OnBackend(be))
	sameTensors(t, "nested programs", n.Call(xo), []*peel.Tensor{nested(x)}, 1e-12)
}

// TestExportErrors: what cannot be one exported program, and files that
// are not ones, fail with *peel.Error saying why.
func TestExportErrors(t *testing.T) {
	x := peel.Normal(peel.Key(8), peel.Float64, 3)
	captured := peel.Zeros(peel.Float64, 3)
	for _, c := range []struct {
		name string
		f    func(x *peel.Tensor) *peel.Tensor
		want string
	}{
		{"hook", func(x *peel.Tensor) *peel.Tensor {
			return peel.Sin(transforms.Hook(x, func(ct *peel.Tensor) *peel.Tensor { return ct }))
		}, "cannot be written into a file"},
		{"writes its argument", func(x *peel.Tensor) *peel.Tensor { peel.AddInPlace(x, 1.0); return peel.Sin(x) }, "writes its argument"},
		{"graph break", func(x *peel.Tensor) *peel.Tensor {
			if peel.Sum(x).Item() > 0 {
				return x
			}
			return peel.Neg(x)
		}, "graph break"},
		{"custom derivative", func(x *peel.Tensor) *peel.Tensor {
			return transforms.CustomJVP(peel.Sin, func(p, t *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
				return peel.Sin(p), peel.Mul(peel.Cos(p), t)
			})(x)
		}, "cannot be written into a file"},
		{"writes a captured tensor", func(x *peel.Tensor) *peel.Tensor {
			peel.CopyInto(captured, x)
			return peel.Sin(x)
		}, "writes a tensor it captures"},
	} {
		err := peel.Catch(func() { transforms.Export(c.f, x) })
		var pe *peel.Error
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a *peel.Error saying %q", c.name, err, c.want)
		}
	}

	data := transforms.Export(peel.Sin, x).Bytes()
	load := func(b []byte) error { _, err := transforms.LoadExported(b); return err }
	check := func(what string, err error, want string) {
		t.Helper()
		var pe *peel.Error
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a *peel.Error saying %q", what, err, want)
		}
	}
	// The version follows the magic.
	v2 := bytes.Clone(data)
	v2[8] = transforms.ExportVersion + 1
	check("version", load(v2), fmt.Sprintf("format version %d", transforms.ExportVersion+1))
	check("magic", load([]byte("PK\x03\x04")), "not an exported peel program")
	unknown := bytes.Replace(data, []byte("\x03sin"), []byte("\x03sjn"), 1)
	check("unknown primitive", load(unknown), `unknown primitive "sjn"`)
	check("truncated", load(data[:len(data)-3]), "")
	check("extra bytes", load(append(bytes.Clone(data), 0)), "")

	// Arguments of the wrong type name the leaf.
	e := transforms.Export2(expLoss, newExpMLP(1), peel.Zeros(peel.Float64, 2, 4))
	err := peel.Catch(func() {
		transforms.ExportedFunc2[expMLP, *peel.Tensor, *peel.Tensor](e)(newExpMLP(1), peel.Zeros(peel.Float64, 3, 4))
	})
	check("argument type", err, "argument args[1] must be f64[2,4]")
	err = peel.Catch(func() { transforms.ExportedFunc[*peel.Tensor, []*peel.Tensor](e) })
	check("result structure", err, "use Exported.Call")
}

// TestExportCompositeTangent: the JVP of a user-defined op (its tangent
// is composite_lin, which holds the op) exports, when the op is linked
// into the loading program, and equals the JVP of the op.
func TestExportCompositeTangent(t *testing.T) {
	f := func(x *peel.Tensor) *peel.Tensor {
		_, tan := transforms.JVP(func(x *peel.Tensor) *peel.Tensor { return mylib.Gelu.Call(x) }, x, peel.Cos(x))
		return tan
	}
	x := peel.Normal(peel.Key(10), peel.Float64, 4, 5)
	e := reload(t, transforms.Export(f, x))
	found := false
	for _, q := range e.Graph().Eqns {
		found = found || q.Prim.Name == "composite_lin"
	}
	if !found {
		t.Fatalf("no composite_lin in the exported graph:\n%v", e.Graph())
	}
	sameTensors(t, "JVP of a user-defined op", e.Call(x), []*peel.Tensor{f(x)}, 1e-12)
}

// FuzzLoadExported: no input makes LoadExported panic, fail with an
// error other than *peel.Error, or read more constants than the file
// holds; a program it accepts runs on zeros, or fails with *peel.Error
// (loops are not run: a hostile loop may be endless, which is the
// program's meaning, not a fault of the loader).
func FuzzLoadExported(f *testing.F) {
	m := newExpMLP(1)
	x := peel.Normal(peel.Key(1), peel.Float64, 2, 4)
	f.Add(transforms.Export(func(x *peel.Tensor) *peel.Tensor { return m.apply(x) }, x).Bytes())
	f.Add(transforms.Export2(expLoss, m, x).Bytes())
	f.Add(transforms.Export(func(x *peel.Tensor) *peel.Tensor { return m.apply(x) }, x, transforms.OmitConstants()).Bytes())
	f.Add(transforms.Export(func(x *peel.Tensor) *peel.Tensor {
		return transforms.Cond(peel.Greater(peel.Sum(x), 0.0), peel.Exp, peel.Sin, peel.Reshape(x, 8))
	}, x).Bytes())
	f.Add(transforms.Export(func(x *peel.Tensor) []*peel.Tensor {
		return []*peel.Tensor{peel.ArgMax(x, 1), peel.Cumsum(x, 0), peel.AsType(x, peel.Float16), peel.Greater(x, 0.5)}
	}, x).Bytes())
	f.Add(transforms.Export(func(x *peel.Tensor) *peel.Tensor {
		return peel.Reshape(m.apply(x), x.Shape()[0]*3)
	}, x, transforms.SymbolicShape("", "b, 4")).Bytes())
	f.Add([]byte("PEELPROG"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := transforms.LoadExported(data)
		if err != nil {
			var pe *peel.Error
			if !errors.As(err, &pe) {
				t.Fatalf("%T: %v, want a *peel.Error", err, err)
			}
			return
		}
		consts := 0
		for _, c := range e.Graph().ConstVals {
			if c != nil { // nil: left out (OmitConstants)
				consts += c.Size() * c.DType().Size()
			}
		}
		if consts > len(data) {
			t.Fatalf("%d bytes of constants from %d bytes", consts, len(data))
		}
		if bytes.Contains(data, []byte("while")) || bytes.Contains(data, []byte("scan")) {
			return
		}
		// Run small programs only (a fuzzed shape may be as large as the
		// allocation limit allows).
		g := e.Graph()
		size := 0
		for _, v := range g.In {
			size += v.Aval.Size()
		}
		for _, q := range g.Eqns {
			for _, v := range q.Out {
				size += v.Aval.Size()
			}
		}
		if size > 1<<12 || len(g.Eqns) > 64 {
			return
		}
		var args []*peel.Tensor
		for _, l := range e.In() {
			args = append(args, peel.Zeros(l.DType, l.Shape...))
		}
		if err := peel.Catch(func() { e.Call(args...) }); err != nil {
			var pe *peel.Error
			if !errors.As(err, &pe) {
				t.Fatalf("running: %T: %v", err, err)
			}
		}
	})
}

// TestExportConcurrent: one loaded program called from several
// goroutines, eagerly and under Grad and Vmap, gives each the same
// results as alone (go test -race checks the sharing).
func TestExportConcurrent(t *testing.T) {
	m := newExpMLP(5)
	x := peel.Normal(peel.Key(11), peel.Float64, 3, 4)
	e := reload(t, transforms.Export2(expLoss, m, x))
	f := transforms.ExportedFunc2[expMLP, *peel.Tensor, *peel.Tensor](e)
	want := f(m, x).Item()
	wantG := transforms.Grad2(f)(m, x).W1.Float64s()
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if g%2 == 0 {
					if got := f(m, x).Item(); got != want {
						errs <- fmt.Sprintf("goroutine %d: %v, want %v", g, got, want)
					}
					continue
				}
				got := transforms.Grad2(f)(m, x).W1.Float64s()
				for i := range wantG {
					if got[i] != wantG[i] {
						errs <- fmt.Sprintf("goroutine %d: gradient %v, want %v", g, got[i], wantG[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestExportOmitConstants: a program written without its constants is
// smaller; it runs once they are given back by name (here through a
// safetensors checkpoint), and refuses to run, or to load with wrong
// ones, before.
func TestExportOmitConstants(t *testing.T) {
	m := newExpMLP(3)
	f := func(x *peel.Tensor) *peel.Tensor { return m.apply(x) }
	x := peel.Normal(peel.Key(6), peel.Float64, 2, 4)
	e := transforms.Export(f, x, transforms.OmitConstants())
	full := transforms.Export(f, x)
	if len(e.Bytes()) >= len(full.Bytes())-500 {
		t.Fatalf("without constants %d bytes, with %d", len(e.Bytes()), len(full.Bytes()))
	}
	weights := filepath.Join(t.TempDir(), "weights.safetensors")
	if err := checkpoint.Save(weights, e.ConstantValues()); err != nil {
		t.Fatal(err)
	}
	bare, err := transforms.LoadExported(e.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if bare.ConstantValues() != nil || len(bare.Constants()) != len(e.Constants()) {
		t.Fatalf("loaded without constants: %v, %v", bare.ConstantValues(), bare.Constants())
	}
	if err := peel.Catch(func() { bare.Call(x) }); err == nil || !strings.Contains(err.Error(), "WithConstants") {
		t.Fatalf("calling without constants: %v", err)
	}
	// The loader knows the constants' names and types: a checked load.
	like := map[string]*peel.Tensor{}
	for _, c := range bare.Constants() {
		like[c.Path] = peel.Zeros(c.DType, c.Shape...)
	}
	vals, err := checkpoint.Load(weights, like)
	if err != nil {
		t.Fatal(err)
	}
	l, err := transforms.LoadExported(e.Bytes(), transforms.WithConstants(vals))
	if err != nil {
		t.Fatal(err)
	}
	sameTensors(t, "with constants", l.Call(x), []*peel.Tensor{f(x)}, 0)

	// Wrong constants are all named.
	bad := map[string]*peel.Tensor{"const0": peel.Zeros(peel.Float32, 1), "extra": x}
	_, err = transforms.LoadExported(e.Bytes(), transforms.WithConstants(bad))
	for _, want := range []string{"const0 must be a concrete", "const1 is missing", "extra is not a constant"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("wrong constants: %v, want it to say %q", err, want)
		}
	}
	if _, err := transforms.LoadExported(full.Bytes(), transforms.WithConstants(vals)); err == nil {
		t.Fatal("constants given to a program that holds them")
	}
}

// exportedPredict is a user function exported under Vmap, whose ops are
// in a helper it calls.
func exportedPredict(w, x *peel.Tensor) *peel.Tensor { return exportedDense(w, x) }

func exportedDense(w, x *peel.Tensor) *peel.Tensor { return peel.Tanh(peel.MatMul(x, w)) }

// TestExportName: an exported program is named after the function the
// user gave the outermost transform (not the transform's closure, nor
// the helper holding the ops), or as ExportName says; loaded, the name
// comes back and names the program in Call's errors.
func TestExportName(t *testing.T) {
	w := peel.Normal(peel.Key(1), peel.Float64, 3, 2)
	x := peel.Normal(peel.Key(2), peel.Float64, 4, 3)
	vm := transforms.Vmap2(exportedPredict, transforms.InAxes(transforms.NoAxis, 0))
	e := transforms.Export2(vm, w, x)
	if n := reload(t, e).Name(); !strings.HasSuffix(n, ".exportedPredict") {
		t.Errorf("the program of Vmap2(exportedPredict) is named %q", n)
	}
	l := reload(t, transforms.Export2(vm, w, x, transforms.ExportName("predict")))
	if n := l.Name(); n != "predict" {
		t.Errorf("ExportName: named %q", n)
	}
	err := peel.Catch(func() { l.Call(w) })
	if err == nil || !strings.Contains(err.Error(), "predict") {
		t.Errorf("a call with too few arguments: %v", err)
	}
}
