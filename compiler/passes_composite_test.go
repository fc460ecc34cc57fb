package compiler_test

import (
	"errors"
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/compiler"
	"github.com/peel-ml/peel/customop"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
)

// geluByHand is mylib.gelu's composite written out in user code, with
// the constant c in place of 0.044715.
func geluByHand(x *T, c float64) *T {
	x3 := peel.Mul(x, peel.Mul(x, x))
	inner := peel.Mul(peel.Add(x, peel.Mul(x3, c)), 0.7978845608028654)
	return peel.Mul(peel.Mul(x, 0.5), peel.Add(peel.Tanh(inner), 1.0))
}

const geluC = 0.044715

func TestReplaceComposites(t *testing.T) {
	pass := compiler.ReplaceComposites(mylib.Gelu)
	x64, x32 := seq(2, 3), peel.AsType(seq(5), peel.Float32)
	cases := []struct {
		name string
		f    func(xs []*T) []*T
		x    *T
		// gelus is the number of mylib.gelu equations after the pass,
		// rest the number of other equations.
		gelus, rest int
	}{
		{"f64", func(xs []*T) []*T { return []*T{geluByHand(xs[0], geluC)} }, x64, 1, 0},
		{"f32", func(xs []*T) []*T { return []*T{geluByHand(xs[0], geluC)} }, x32, 1, 0},
		{"inside other work", func(xs []*T) []*T {
			return []*T{peel.Sum(peel.Exp(geluByHand(peel.Sin(xs[0]), geluC)))}
		}, x64, 1, 3},
		{"twice", func(xs []*T) []*T {
			return []*T{peel.Add(geluByHand(xs[0], geluC), geluByHand(peel.Cos(xs[0]), geluC))}
		}, x64, 2, 2},
		{"of itself", func(xs []*T) []*T { return []*T{geluByHand(geluByHand(xs[0], geluC), geluC)} }, x64, 2, 0},
		{"next to the op", func(xs []*T) []*T {
			return []*T{peel.Sub(geluByHand(xs[0], geluC), mylib.Gelu.Call(xs[0]))}
		}, x64, 2, 1},
		{"another constant", func(xs []*T) []*T { return []*T{geluByHand(xs[0], 0.045)} }, x64, 0, 9},
		{"intermediate used outside", func(xs []*T) []*T {
			x3 := peel.Mul(xs[0], peel.Mul(xs[0], xs[0]))
			inner := peel.Mul(peel.Add(xs[0], peel.Mul(x3, geluC)), 0.7978845608028654)
			return []*T{peel.Mul(peel.Mul(xs[0], 0.5), peel.Add(peel.Tanh(inner), 1.0)), x3}
		}, x64, 0, 9},
		{"intermediate is an output", func(xs []*T) []*T {
			th := peel.Tanh(peel.Mul(peel.Add(xs[0], peel.Mul(peel.Mul(xs[0], peel.Mul(xs[0], xs[0])), geluC)), 0.7978845608028654))
			return []*T{peel.Mul(peel.Mul(xs[0], 0.5), peel.Add(th, 1.0)), th}
		}, x64, 0, 9},
		{"operands swapped", func(xs []*T) []*T {
			x := xs[0]
			x3 := peel.Mul(peel.Mul(x, x), x)
			inner := peel.Mul(peel.Add(x, peel.Mul(x3, geluC)), 0.7978845608028654)
			return []*T{peel.Mul(peel.Mul(x, 0.5), peel.Add(peel.Tanh(inner), 1.0))}
		}, x64, 0, 9},
		{"operand written in place afterwards", func(xs []*T) []*T {
			x := peel.Exp(xs[0])
			y := geluByHand(x, geluC)
			peel.AddInPlace(x, 1.0)
			return []*T{y, x}
		}, x64, 0, 11},
		{"integer operand", func(xs []*T) []*T { return []*T{geluByHand(xs[0], geluC)} }, peel.FromInt64s([]int64{1, 2}, 2), 0, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := trace(c.f, c.x)
			ng := pass.Run(g)
			gelus := count(ng, "mylib.gelu")
			if gelus != c.gelus || (c.rest >= 0 && len(ng.Eqns)-gelus != c.rest) {
				t.Errorf("%d mylib.gelu and %d other equations, want %d and %d\nbefore:\n%v\nafter:\n%v", gelus, len(ng.Eqns)-gelus, c.gelus, c.rest, g, ng)
			}
			if again := pass.Run(ng); again.String() != ng.String() {
				t.Errorf("not idempotent:\n%v\nthen\n%v", ng, again)
			}
			// The fused kernel computes the composite's operations in
			// the same order, so the results agree bit for bit.
			if msg := sameResults(ng, g, []*T{c.x}); msg != "" {
				t.Errorf("results differ: %s\nbefore:\n%v\nafter:\n%v", msg, g, ng)
			}
		})
	}
}

// TestReplaceCompositesTwoOperands matches an op of two operands whose
// composite broadcasts, at operand types that differ.
func TestReplaceCompositesTwoOperands(t *testing.T) {
	op := customop.Define("compiler_test.scaled_tanh", 2, func(xs ...*T) *T {
		return peel.Mul(peel.Tanh(xs[0]), xs[1])
	})
	pass := compiler.ReplaceComposites(mylib.Gelu, op)
	x, s := seq(2, 3), peel.Cos(seq(3))
	g := trace(func(xs []*T) []*T {
		return []*T{peel.Exp(peel.Mul(peel.Tanh(xs[0]), xs[1])), geluByHand(xs[0], geluC)}
	}, x, s)
	ng := pass.Run(g)
	if count(ng, op.Name()) != 1 || count(ng, "mylib.gelu") != 1 || len(ng.Eqns) != 3 {
		t.Errorf("after the pass:\n%v\nbefore:\n%v", ng, g)
	}
	if msg := sameResults(ng, g, []*T{x, s}); msg != "" {
		t.Error(msg)
	}
}

// A user-defined op is a compiler.Op as it is.
var _ compiler.Op = (*customop.Op)(nil)

func TestReplaceCompositesNilOp(t *testing.T) {
	var none *customop.Op
	for _, op := range []compiler.Op{nil, none} {
		err := interp.Catch(func() { compiler.ReplaceComposites(mylib.Gelu, op) })
		var pe *peel.Error
		if !errors.As(err, &pe) {
			t.Errorf("op %#v: error %v, want *peel.Error", op, err)
		}
	}
}

// TestReplaceCompositesConcurrent runs one pass from several goroutines
// (its cache of staged composites is shared).
func TestReplaceCompositesConcurrent(t *testing.T) {
	pass := compiler.ReplaceComposites(mylib.Gelu)
	g := trace(func(xs []*T) []*T { return []*T{geluByHand(xs[0], geluC)} }, seq(4))
	done := make(chan int)
	for range 8 {
		go func() {
			done <- count(pass.Run(g), "mylib.gelu")
		}()
	}
	for range 8 {
		if n := <-done; n != 1 {
			t.Errorf("%d mylib.gelu equations, want 1", n)
		}
	}
}

// TestReplaceCompositesThenGrad differentiates a graph after the pass,
// as a compiled function is differentiated: evaluating the graph under
// Grad binds mylib.gelu, whose forward runs the fused kernel and whose
// backward is derived from the composite (recomputed from the operand),
// so the value-and-gradient graph computes the value with the op. Gradients agree with those of the hand-written composite to
// 1e-14 relative (the derived backward is compiled and may round in
// another order).
func TestReplaceCompositesThenGrad(t *testing.T) {
	x := peel.Mul(seq(3, 4), 1.3)
	f := func(xs []*T) []*T { return []*T{peel.Sum(geluByHand(peel.Sin(xs[0]), geluC))} }
	g := trace(f, x)
	ng := compiler.ReplaceComposites(mylib.Gelu).Run(g)
	if count(ng, "mylib.gelu") != 1 {
		t.Fatalf("not replaced:\n%v", ng)
	}
	want := transforms.Grad(func(x *T) *T { return f([]*T{x})[0] })(x).Float64s()
	gradOpt := func(x *T) *T { return ng.Eval(x)[0] }
	got := transforms.Grad(gradOpt)(x).Float64s()
	for i := range want {
		if d := math.Abs(got[i] - want[i]); d > 1e-14*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("gradient element %d is %v, want %v", i, got[i], want[i])
		}
	}
	vg := transforms.ValueAndGrad(gradOpt)
	gg := transforms.MakeGraph(func(x *T) []*T { v, d := vg(x); return []*T{v, d} }, x)
	if count(gg, "mylib.gelu") != 1 {
		t.Errorf("the value-and-gradient graph should run the op forward:\n%v", gg)
	}
}
