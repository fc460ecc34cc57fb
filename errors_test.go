package peel_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
)

// TestErrorTable checks that each kind of bad input panics with a
// *peel.Error that names the user's op — never a Go runtime panic.
func TestErrorTable(t *testing.T) {
	x := peel.Ones(peel.Float64, 2, 3)
	b := peel.FromBools([]bool{true, false})
	i := peel.FromInt64s([]int64{0, 5})
	cases := []struct {
		name string
		f    func()
		want []string // substrings of the message
	}{
		{"shape mismatch", func() { peel.Add(x, peel.Ones(peel.Float64, 4)) }, []string{"peel.Add", "broadcast"}},
		{"matmul mismatch", func() { peel.MatMul(x, x) }, []string{"peel.MatMul", "f64[2,3]"}},
		{"bad axis", func() { peel.Sum(x, 2) }, []string{"peel.Sum", "axis 2"}},
		{"bad negative axis", func() { peel.Softmax(x, -3) }, []string{"peel.Softmax", "axis"}},
		{"repeated axis", func() { peel.Sum(x, 0, -2) }, []string{"peel.Sum", "repeated"}},
		{"wrong dtype", func() { peel.LogicalNot(x) }, []string{"peel.LogicalNot"}},
		{"bool arithmetic", func() { peel.Add(b, b) }, []string{"peel.Add"}},
		{"slice out of range", func() { peel.Slice(x, 1, 0, 5, 1) }, []string{"peel.Slice"}},
		{"narrow out of range", func() { peel.Narrow(x, 0, 1, 2) }, []string{"peel.Narrow"}},
		{"select out of range", func() { peel.Select(x, 1, -4) }, []string{"peel.Select"}},
		{"index out of range", func() { peel.Index(x, 2) }, []string{"peel.Index"}},
		{"take out of range", func() { peel.Take(x, i, 1) }, []string{"peel.Take", "5"}},
		{"reshape size", func() { peel.Reshape(x, 4, -1) }, []string{"peel.Reshape"}},
		{"constructor length", func() { peel.FromFloat64s([]float64{1, 2, 3}, 2, 2) }, []string{"peel.FromFloat64s", "shape [2 2]"}},
		{"negative dim", func() { peel.Zeros(peel.Float32, 2, -1) }, []string{"peel.Zeros"}},
		{"bool read as float", func() { b.Float64s() }, []string{"Float64s", "bool"}},
		{"float read as int", func() { x.Int64s() }, []string{"Int64s", "f64"}},
		{"item of many", func() { x.Item() }, []string{"Item", "6 elements"}},
		{"nil operand", func() { peel.Exp(nil) }, []string{"peel.Exp", "nil"}},
		{"bad operand type", func() { peel.Add(x, "2") }, []string{"peel.Add", "string"}},
		{"in-place widening", func() { peel.AddInPlace(peel.Ones(peel.Int64, 2), 0.5) }, []string{"peel.AddInPlace"}},
		{"write into broadcast", func() { peel.CopyInto(peel.BroadcastTo(peel.Ones(peel.Float64, 1), 3), x.Shape()[0]) }, []string{"peel.CopyInto", "broadcast"}},
		{"bad key", func() { peel.Uniform(x, peel.Float64, 2) }, []string{"peel.Uniform", "key"}},
		{"einsum spec", func() { peel.Einsum("ij,jk->iz", x, x) }, []string{"peel.Einsum"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("panicked with %T %v, not *peel.Error", r, r)
					}
				}()
				err = peel.Catch(c.f)
			}()
			var e *peel.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want *peel.Error", err)
			}
			for _, w := range c.want {
				if !strings.Contains(e.Error(), w) {
					t.Errorf("message %q does not mention %q", e.Error(), w)
				}
			}
		})
	}
}

// TestAnnotate checks that peel.Annotate, deferred by a library's op,
// names it after the ops below it, records the user's call site, leaves
// other panic values alone and does nothing without a panic.
func TestAnnotate(t *testing.T) {
	op := func(x *peel.Tensor) *peel.Tensor {
		defer peel.Annotate("mylib.Op")
		return peel.MatMul(x, x)
	}
	err := peel.Catch(func() { op(peel.Ones(peel.Float64, 2, 3)) })
	var e *peel.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want a *peel.Error", err)
	}
	if got := strings.Join(e.Ops, " "); got != "peel.MatMul mylib.Op" {
		t.Errorf("Ops = %q, want peel.MatMul then mylib.Op", got)
	}
	if !strings.HasPrefix(e.Error(), "mylib.Op > peel.MatMul: ") || !strings.HasSuffix(e.File, "errors_test.go") {
		t.Errorf("error %q at %s, want it to start with the op chain and name errors_test.go", e.Error(), e.File)
	}
	if got := op(peel.Ones(peel.Float64, 2, 2)).Shape(); len(got) != 2 {
		t.Errorf("no panic: shape %v", got)
	}
	defer func() {
		if r := recover(); r != "other" {
			t.Errorf("recovered %v, want the panic value unchanged", r)
		}
	}()
	func() {
		defer peel.Annotate("mylib.Other")
		panic("other")
	}()
}
