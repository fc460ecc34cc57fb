package customop_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/customop"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
)

// opRobustPanic runs f and returns what it panicked with (nil if it
// returned).
func opRobustPanic(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// TestOpDefinitionNilArguments checks that Define and its options refuse
// nil arguments with a *peel.Error naming customop.Define, the op and the
// option, never a runtime panic, and that a refused definition leaves
// the name free.
func TestOpDefinitionNilArguments(t *testing.T) {
	square := func(xs ...*peel.Tensor) *peel.Tensor { return peel.Mul(xs[0], xs[0]) }
	kernel := backend.Kernel(func(any, []backend.Array, []backend.Array) {})
	var nilBackend *cpu.Backend // a typed nil in the interface
	cases := []struct {
		name string
		opts []customop.Option
		want []string
	}{
		{"WithKernel(nil, nil)", []customop.Option{customop.WithKernel(nil, nil)}, []string{"WithKernel", "nil backend"}},
		{"WithKernel(nil, k)", []customop.Option{customop.WithKernel(nil, kernel)}, []string{"WithKernel", "nil backend"}},
		{"WithKernel(typed nil, k)", []customop.Option{customop.WithKernel(nilBackend, kernel)}, []string{"WithKernel", "nil backend"}},
		{"WithKernel(cpu, nil)", []customop.Option{customop.WithKernel(cpu.New(), nil)}, []string{"WithKernel", "nil kernel", "cpu"}},
		{"WithShapeRule(nil)", []customop.Option{customop.WithShapeRule(nil)}, []string{"WithShapeRule", "nil"}},
		{"WithJVP(nil)", []customop.Option{customop.WithJVP(nil)}, []string{"WithJVP", "nil"}},
		{"WithVJP(nil)", []customop.Option{customop.WithVJP(nil)}, []string{"WithVJP", "nil"}},
		{"WithBatchRule(nil)", []customop.Option{customop.WithBatchRule(nil)}, []string{"WithBatchRule", "nil"}},
		{"WithDecomposition(nil)", []customop.Option{customop.WithDecomposition(nil, customop.Eager)}, []string{"WithDecomposition", "nil"}},
		{"nil option", []customop.Option{customop.Elementwise(), nil}, []string{"option 1", "nil"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := fmt.Sprintf("test.robust_nil_%d", i)
			r := opRobustPanic(func() { customop.Define(name, 1, square, c.opts...) })
			e, ok := r.(*interp.Error)
			if !ok {
				t.Fatalf("panicked with %T (%v), want *peel.Error", r, r)
			}
			for _, s := range append([]string{"customop.Define", name}, c.want...) {
				if !strings.Contains(e.Error(), s) {
					t.Errorf("error %q does not mention %q", e.Error(), s)
				}
			}
			// The failed definition left the name free.
			op := customop.Define(name, 1, square)
			x := peel.FromFloat64s([]float64{1.5, -2})
			got := op.Call(x).Float64s()
			if got[0] != 2.25 || got[1] != 4 {
				t.Errorf("op after a refused definition: %v", got)
			}
		})
	}
	// Nil composite, empty name, negative arity.
	for _, c := range []struct {
		name  string
		arity int
		comp  func(...*peel.Tensor) *peel.Tensor
	}{
		{"test.robust_nil_composite", 1, nil},
		{"", 1, square},
		{"test.robust_negative_arity", -1, square},
	} {
		r := opRobustPanic(func() { customop.Define(c.name, c.arity, c.comp) })
		if e, ok := r.(*interp.Error); !ok || !strings.Contains(e.Error(), "customop.Define") {
			t.Errorf("Define(%q, %d, composite nil: %v): panicked with %T (%v), want *peel.Error", c.name, c.arity, c.comp == nil, r, r)
		}
	}
}

// TestOpRulesReturningNil checks that rules returning nil are
// *peel.Error naming the op when they run.
func TestOpRulesReturningNil(t *testing.T) {
	square := func(xs ...*peel.Tensor) *peel.Tensor { return peel.Mul(xs[0], xs[0]) }
	x := peel.FromFloat64s([]float64{1.5, -2})
	cases := []struct {
		name string
		op   func() *customop.Op
		want []string
	}{
		{"nil decomposition result", func() *customop.Op {
			return customop.Define("test.robust_nil_decomp", 1, func(xs ...*peel.Tensor) *peel.Tensor { return nil })
		}, []string{"test.robust_nil_decomp", "nil tensor"}},
		{"nil eager decomposition result", func() *customop.Op {
			return customop.Define("test.robust_nil_eager", 1, square,
				customop.WithDecomposition(func(xs ...*peel.Tensor) *peel.Tensor { return nil }, customop.Eager))
		}, []string{"test.robust_nil_eager", "nil tensor"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op := c.op()
			r := opRobustPanic(func() { op.Call(x) })
			e, ok := r.(*interp.Error)
			if !ok {
				t.Fatalf("panicked with %T (%v), want *peel.Error", r, r)
			}
			for _, s := range c.want {
				if !strings.Contains(e.Error(), s) {
					t.Errorf("error %q does not mention %q", e.Error(), s)
				}
			}
		})
	}
}

// TestVJPRuleMisuse: a WithVJP rule that returns the wrong number of
// cotangents, or a cotangent of another shape or dtype than its operand,
// makes the gradient panic with *peel.Error naming the op and what is
// wrong, not a wrong gradient.
func TestVJPRuleMisuse(t *testing.T) {
	square := func(xs ...*peel.Tensor) *peel.Tensor { return peel.Mul(xs[0], xs[0]) }
	x := peel.FromFloat64s([]float64{1.5, -2, 0.5})
	cases := []struct {
		name string
		rule func(primals []*peel.Tensor, out, ct *peel.Tensor) []*peel.Tensor
		want []string
	}{
		{"count", func(p []*peel.Tensor, out, ct *peel.Tensor) []*peel.Tensor { return []*peel.Tensor{ct, ct} },
			[]string{"returned 2 cotangents for 1 operands"}},
		{"shape", func(p []*peel.Tensor, out, ct *peel.Tensor) []*peel.Tensor { return []*peel.Tensor{peel.Sum(ct)} },
			[]string{"cotangent 0 is f64[]", "the operand is f64[3]"}},
		{"dtype", func(p []*peel.Tensor, out, ct *peel.Tensor) []*peel.Tensor {
			return []*peel.Tensor{peel.AsType(ct, peel.Float32)}
		}, []string{"cotangent 0 is f32[3]", "the operand is f64[3]"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := fmt.Sprintf("test.robust_vjp_%d", i)
			op := customop.Define(name, 1, square, customop.WithVJP(c.rule))
			r := opRobustPanic(func() { transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(op.Call(x)) })(x) })
			e, ok := r.(*interp.Error)
			if !ok {
				t.Fatalf("panicked with %T (%v), want *peel.Error", r, r)
			}
			for _, s := range append([]string{name}, c.want...) {
				if !strings.Contains(e.Error(), s) {
					t.Errorf("error %q does not mention %q", e.Error(), s)
				}
			}
		})
	}
}
