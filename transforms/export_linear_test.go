package transforms_test

import (
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/internal/interptest"
	"github.com/peel-ml/peel/transforms"
)

// TestExportDerivativeForms: the derivative forms of every higher-order
// primitive (scan_lin, cond_lin, while_lin, composite_lin, and the
// transposed scans of a VJP) export and load back. Their counts differ
// from one another (more invariant operands than residuals in a scan,
// several carries beside a loop's tangents), so a decoder that reads a
// count into another's place changes the program: each loaded program
// equals the function, and each graph's encoding survives decoding and
// encoding again byte for byte.
func TestExportDerivativeForms(t *testing.T) {
	w := peel.Normal(peel.Key(21), peel.Float64, 3, 3)
	v := peel.Normal(peel.Key(22), peel.Float64, 3)
	u := peel.Normal(peel.Key(23), peel.Float64, 3)
	// A scan whose body reads three invariants (w, v, u) and saves
	// fewer residuals per step than that.
	scan := func(x *peel.Tensor) *peel.Tensor {
		c, ys := transforms.Scan(func(c, xi *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
			n := peel.Tanh(peel.Add(peel.Reshape(peel.MatMul(peel.Reshape(c, 1, 3), w), 3), peel.Mul(xi, v)))
			return peel.Add(n, u), peel.Sum(peel.Mul(n, xi))
		}, peel.Zeros(peel.Float64, 3), x)
		return peel.Add(peel.Sum(c), peel.Sum(ys))
	}
	cond := func(x *peel.Tensor) *peel.Tensor {
		return peel.Sum(transforms.Cond(peel.Greater(peel.Sum(x), 0.0),
			func(a *peel.Tensor) *peel.Tensor { return peel.Mul(peel.Sin(a), v) },
			func(a *peel.Tensor) *peel.Tensor { return peel.Add(peel.Exp(a), u) }, peel.Reshape(peel.Slice(x, 0, 0, 1, 1), 3)))
	}
	while := func(x *peel.Tensor) *peel.Tensor {
		// Three carries: a counter, the value and an accumulator.
		type st struct{ I, V, A *peel.Tensor }
		s := transforms.WhileLoop(func(s st) *peel.Tensor { return peel.Less(s.I, 4.0) },
			func(s st) st {
				n := peel.Sin(peel.Add(peel.Mul(s.V, v), u))
				return st{peel.Add(s.I, 1.0), n, peel.Add(s.A, peel.Mul(n, n))}
			}, st{peel.Scalar(0.0), peel.Reshape(peel.Slice(x, 0, 1, 2, 1), 3), peel.Zeros(peel.Float64, 3)})
		return peel.Add(peel.Sum(s.V), peel.Sum(s.A))
	}
	composite := func(x *peel.Tensor) *peel.Tensor { return peel.Sum(mylib.Gelu.Call(x)) }
	x := peel.Normal(peel.Key(24), peel.Float64, 4, 3)
	dx := peel.Cos(x)
	for _, c := range []struct {
		name string
		f    func(*peel.Tensor) *peel.Tensor
		want string // the primitive one of the exported derivatives holds
	}{
		{"scan", scan, "scan_lin"},
		{"cond", cond, "cond_lin"},
		{"while", while, "while_lin"},
		{"composite", composite, "composite_lin"},
	} {
		forms := map[string]func(*peel.Tensor) *peel.Tensor{
			"JVP": func(x *peel.Tensor) *peel.Tensor { _, t := transforms.JVP(c.f, x, dx); return t },
			"Linearize": func(x *peel.Tensor) *peel.Tensor {
				_, lin := transforms.Linearize(c.f, x)
				return lin(dx)
			},
		}
		if c.name != "while" { // reverse mode through WhileLoop is refused
			forms["Grad"] = transforms.Grad(c.f)
		}
		seen := map[string]bool{}
		for form, f := range forms {
			t.Run(c.name+"/"+form, func(t *testing.T) {
				e := transforms.Export(f, x)
				for _, q := range e.Graph().Eqns {
					seen[q.Prim.Name] = true
				}
				if d := interptest.Reencodes(e.Graph()); d != "" {
					t.Fatalf("re-encoding: %s\n%v", d, e.Graph())
				}
				l := reload(t, e)
				sameTensors(t, "loaded", l.Call(x), []*peel.Tensor{f(x)}, 1e-12)
				// At other values (a differently taken branch, a loop of
				// other length) too.
				x2 := peel.Neg(peel.Mul(x, 0.5))
				sameTensors(t, "loaded at other values", l.Call(x2), []*peel.Tensor{f(x2)}, 1e-12)
			})
		}
		if !seen[c.want] {
			t.Errorf("%s: no exported derivative holds %s: %v", c.name, c.want, seen)
		}
	}
}
