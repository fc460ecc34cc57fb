package transforms_test

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
)

// TestErrorNamesEnclosingTransforms: an error inside Vmap(Grad(f)) names
// the chain of transforms it happened under, innermost first, not just
// the level that raised it.
func TestErrorNamesEnclosingTransforms(t *testing.T) {
	bad := func(x *T) *T { return peel.Sum(peel.MatMul(x, peel.Ones(peel.Float64, 5, 2))) }
	xs := peel.Ones(peel.Float64, 4, 3)
	cases := []struct {
		name   string
		run    func()
		within []string
	}{
		{"grad", func() { transforms.Grad(bad)(peel.Ones(peel.Float64, 3)) }, []string{"grad"}},
		{"vmap(grad)", func() { transforms.Vmap(transforms.Grad(bad))(xs) }, []string{"grad", "vmap"}},
		{"grad(vmap)", func() {
			transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Vmap(bad)(x)) })(xs)
		}, []string{"vmap", "grad"}},
	}
	for _, c := range cases {
		err := interp.Catch(c.run)
		var e *interp.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: no *peel.Error: %v", c.name, err)
		}
		if strings.Join(e.Within, ",") != strings.Join(c.within, ",") {
			t.Errorf("%s: Within %v, want %v (%v)", c.name, e.Within, c.within, err)
		}
		outerFirst := slices.Clone(c.within)
		slices.Reverse(outerFirst)
		if want := "[in " + strings.Join(outerFirst, " ∘ ") + "]"; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: message %q does not name the transforms as %q", c.name, err, want)
		}
	}
}

// TestErrorChainHasNoLevelCounters (issue 25, item 15a): the transform
// chain of an error names the transforms, outermost first, and never an
// internal level ID, so the same misuse reads the same on every call
// (the IDs grow with every transform call).
func TestErrorChainHasNoLevelCounters(t *testing.T) {
	bad := func(x *T) *T { return peel.Sum(peel.MatMul(x, peel.Ones(peel.Float64, 5, 2))) }
	xs := peel.Ones(peel.Float64, 4, 3)
	cases := []struct {
		name string
		run  func()
		want string
	}{
		{"grad", func() { transforms.Grad(bad)(peel.Ones(peel.Float64, 3)) }, "[in grad]"},
		{"vmap(grad)", func() { transforms.Vmap(transforms.Grad(bad))(xs) }, "[in vmap ∘ grad]"},
		{"grad(grad)", func() {
			transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Grad(bad)(x)) })(peel.Ones(peel.Float64, 3))
		}, "[in grad ∘ grad]"},
		{"vmap(vmap)", func() { transforms.Vmap(transforms.Vmap(bad))(peel.Ones(peel.Float64, 2, 4, 3)) }, "[in vmap ∘ vmap]"},
		{"jvp", func() { transforms.JVP(bad, peel.Ones(peel.Float64, 3), peel.Ones(peel.Float64, 3)) }, "[in jvp]"},
		// The outer vmap's interpreter raises the error: the write
		// involves no tracer of the inner grad.
		{"vmap raises under grad", func() {
			transforms.Vmap(func(x *T) *T {
				return transforms.Grad(func(y *T) *T {
					peel.CopyInto(peel.Zeros(peel.Float64, 3), x)
					return peel.Sum(y)
				})(x)
			})(xs)
		}, "[in vmap ∘ grad, raised by vmap]"},
		{"the 1st of two vmaps raises", func() {
			transforms.Vmap(func(x *T) *T {
				return transforms.Vmap(func(y *T) *T {
					peel.CopyInto(peel.Zeros(peel.Float64, 3), x)
					return y
				})(peel.Ones(peel.Float64, 2, 3))
			})(xs)
		}, "[in vmap ∘ vmap, raised by the first vmap]"},
	}
	chain := regexp.MustCompile(`\[in ([^\]]*)\]`)
	for _, c := range cases {
		var msgs []string
		for range 3 { // the same misuse, three times: the same message
			err := interp.Catch(c.run)
			if err == nil {
				t.Fatalf("%s: no error", c.name)
			}
			msgs = append(msgs, err.Error())
		}
		if !strings.Contains(msgs[0], c.want) {
			t.Errorf("%s: %q does not contain %q", c.name, msgs[0], c.want)
		}
		if m := chain.FindStringSubmatch(msgs[0]); m == nil || strings.Contains(m[1], "level") || strings.ContainsAny(m[1], "0123456789") {
			t.Errorf("%s: %q shows a level or a number in the transform chain", c.name, msgs[0])
		}
		if msgs[1] != msgs[0] || msgs[2] != msgs[0] {
			t.Errorf("%s: the message changes between calls:\n%s\n%s\n%s", c.name, msgs[0], msgs[1], msgs[2])
		}
	}
}

// TestErrorChainFormat pins the chain's format on hand-made errors.
func TestErrorChainFormat(t *testing.T) {
	cases := []struct {
		e    *interp.Error
		want string
	}{
		{&interp.Error{Msg: "m"}, "m"},
		{&interp.Error{Msg: "m", Transform: "vmap", Level: 7}, "m [in vmap]"},
		{&interp.Error{Msg: "m", Transform: "grad", Level: 9, Within: []string{"grad", "vmap"}}, "m [in vmap ∘ grad]"},
		{&interp.Error{Msg: "m", Transform: "vmap", Level: 3, Within: []string{"grad", "vmap"}, File: "/x/y/train.go", Line: 42}, "m [in vmap ∘ grad, raised by vmap] at train.go:42"},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// TestVmapInAxisSuggestsNoAxis (issue 25, item 15b): an in axis out of
// range for a leaf (a rank-0 bias, say) suggests NoAxis, the option that
// passes the leaf unmapped.
func TestVmapInAxisSuggestsNoAxis(t *testing.T) {
	type params struct{ W, B *T }
	p := params{W: peel.Ones(peel.Float64, 3), B: peel.Scalar(1.0)}
	f := func(p params) *T { return peel.Add(p.W, p.B) }
	for _, run := range []func(){
		func() { transforms.Vmap(f)(p) },
		func() { transforms.Vmap(f, transforms.InAxes(map[string]any{"W": 0, "B": 0}))(p) },
		func() { transforms.Vmap(peel.Sin, transforms.InAxes(2))(peel.Ones(peel.Float64, 2, 2)) },
	} {
		err := interp.Catch(run)
		if err == nil || !strings.Contains(err.Error(), "out of range") || !strings.Contains(err.Error(), "transforms.NoAxis") {
			t.Errorf("got %v, want an out-of-range in axis suggesting transforms.NoAxis", err)
		}
	}
}

// TestErrorCarriesUserCallSite (issue 25, item 15c): a *peel.Error
// carries the user's own call site — the innermost frame outside peel's
// packages — and shows it as "at file.go:line", eagerly, inside a
// transformed function, and for an error raised by a transform about its
// arguments.
func TestErrorCarriesUserCallSite(t *testing.T) {
	a, b := peel.Ones(peel.Float64, 2, 3), peel.Ones(peel.Float64, 4, 5)
	// at records the line it is called on and returns x, so the call
	// that fails is on the recorded line.
	var line int
	at := func(x *T) *T { _, _, line, _ = runtime.Caller(1); return x }
	cases := []struct {
		name string
		run  func()
	}{
		{"eager", func() { peel.MatMul(a, at(b)) }},
		{"composite", func() { peel.Mean(at(a), 7) }},
		{"inside vmap(grad)", func() {
			transforms.Vmap(transforms.Grad(func(x *T) *T {
				return peel.Sum(peel.MatMul(x, at(b)))
			}))(a)
		}},
		{"transform argument", func() { transforms.Vmap(peel.Sin, transforms.InAxes(5))(at(a)) }},
	}
	for _, c := range cases {
		err := interp.Catch(c.run)
		var e *interp.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: no *peel.Error: %v", c.name, err)
		}
		if filepath.Base(e.File) != "errchain_test.go" || e.Line != line {
			t.Errorf("%s: call site %s:%d, want errchain_test.go:%d (%v)", c.name, e.File, e.Line, line, err)
		}
		if want := fmt.Sprintf(" at errchain_test.go:%d", line); !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%s: %q does not end with %q", c.name, err, want)
		}
	}
}

// TestTreeErrorsNameLeafPaths: errors about one leaf of a tree name its
// path (".W", "[1]", `["k"]`), not its number.
func TestTreeErrorsNameLeafPaths(t *testing.T) {
	type params struct{ W, B *T }
	p := params{W: peel.Ones(peel.Float64, 2, 3), B: peel.Ones(peel.Float64, 3)}
	loss := func(p params) *T { return peel.Sum(peel.Add(peel.Sum(p.W), p.B)) }
	cases := []struct {
		name string
		run  func()
		want []string
	}{
		{"vmap sizes", func() {
			transforms.Vmap(func(m map[string]*T) *T { return peel.Add(m["a"], peel.Sum(m["b"])) })(
				map[string]*T{"a": peel.Ones(peel.Float64, 2), "b": peel.Ones(peel.Float64, 3)})
		}, []string{`leaf ["a"]: 2`, `leaf ["b"]: 3`}},
		{"jvp tangent", func() {
			transforms.JVP(loss, p, params{W: peel.Ones(peel.Float64, 2, 3), B: peel.Ones(peel.Float64, 4)})
		}, []string{"tangent leaf .B", "f64[4]"}},
		{"vjp cotangent", func() {
			_, pb := transforms.VJP(func(p params) []*T { return []*T{p.W, p.B} }, p)
			pb([]*T{p.W, peel.Ones(peel.Float64, 2)})
		}, []string{"cotangent leaf [1]"}},
		{"grad of an integer leaf", func() {
			transforms.Grad(func(p params) *T { return peel.Sum(p.W) })(params{W: p.W, B: peel.FromInt64s([]int64{1})})
		}, []string{"leaf .B", "i64"}},
	}
	for _, c := range cases {
		err := interp.Catch(c.run)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not mention %q", c.name, err, w)
			}
		}
	}
}

// TestHessianOfVectorFunction: for f: R^n → R^m the Hessian has shape
// [m, n, n], one symmetric Hessian per output (as documented).
func TestHessianOfVectorFunction(t *testing.T) {
	x := peel.FromFloat64s([]float64{0.5, -1, 2})
	f := func(x *T) *T { return peel.Stack([]*T{peel.Sum(peel.Mul(x, x)), peel.Sum(peel.Exp(x))}, 0) }
	h := transforms.Hessian(f)(x)
	if got := h.Shape(); len(got) != 3 || got[0] != 2 || got[1] != 3 || got[2] != 3 {
		t.Fatalf("Hessian shape %v, want [2 3 3]", got)
	}
	want := []float64{2, 0, 0, 0, 2, 0, 0, 0, 2}
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			e := 0.0
			if i == j {
				e = math.Exp(x.Float64s()[i])
			}
			want = append(want, e)
		}
	}
	near(t, "Hessian of [Σx², Σexp x]", h.Float64s(), want, 1e-12)
}

// TestJacobianOptions: a Jacobian takes its own options (InAxes, OutAxes
// and AxisSize no longer compile there); Argnums is refused by the forms
// that differentiate one fixed argument, naming the Jacobian and the
// form to use instead.
func TestJacobianOptions(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2})
	for _, jac := range []struct {
		op string
		f  func(func(*T) *T, ...transforms.JacobianOption) func(*T) *T
	}{{"transforms.Jacrev", transforms.Jacrev[*T]}, {"transforms.Jacfwd", transforms.Jacfwd[*T]}, {"transforms.Hessian", transforms.Hessian}} {
		err := interp.Catch(func() { jac.f(peel.Sin, transforms.Argnums(0))(x) })
		if err == nil || !strings.Contains(err.Error(), "Argnums") || !strings.Contains(err.Error(), jac.op) {
			t.Errorf("%s with Argnums: %v", jac.op, err)
		}
	}
	near(t, "Jacrev with ChunkSize", transforms.Jacrev(peel.Sin, transforms.ChunkSize(1))(x).Float64s(), []float64{math.Cos(1), 0, 0, math.Cos(2)}, 1e-15)
}
