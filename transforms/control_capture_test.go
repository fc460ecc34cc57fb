package transforms_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// controlPrims runs h inside each loop and branch primitive, on x (a
// positive f64[2]) or its carry, and returns a result of x's shape.
var controlPrims = []struct {
	name, op string
	run      func(x *T, h func(*T) *T) *T
}{
	{"cond taken", "transforms.Cond", func(x *T, h func(*T) *T) *T {
		return transforms.Cond(peel.Greater(peel.Sum(x), 0.0), h, func(x *T) *T { return peel.Mul(x, 2.0) }, x)
	}},
	{"cond not taken", "transforms.Cond", func(x *T, h func(*T) *T) *T {
		return transforms.Cond(peel.Less(peel.Sum(x), 0.0), h, func(x *T) *T { return peel.Mul(x, 2.0) }, x)
	}},
	{"switch", "transforms.Switch", func(x *T, h func(*T) *T) *T {
		return transforms.Switch(peel.Scalar(int64(1)), []func(*T) *T{peel.Neg, h, peel.Exp}, x)
	}},
	{"scan", "transforms.Scan", func(x *T, h func(*T) *T) *T {
		c, _ := transforms.Scan(func(c *T, _ struct{}) (*T, struct{}) { return h(c), struct{}{} }, x, struct{}{}, transforms.Length(3))
		return c
	}},
	{"fori", "transforms.ForiLoop", func(x *T, h func(*T) *T) *T {
		return transforms.ForiLoop(0, 3, func(_ *T, c *T) *T { return h(c) }, x)
	}},
	{"while body", "transforms.WhileLoop", func(x *T, h func(*T) *T) *T {
		return transforms.WhileLoop(func(c *T) *T { return peel.Less(peel.Sum(c), 20.0) }, h, x)
	}},
	{"while cond", "transforms.WhileLoop", func(x *T, h func(*T) *T) *T {
		return transforms.WhileLoop(func(c *T) *T { return peel.Less(peel.Sum(h(c)), 40.0) }, func(c *T) *T { return peel.Mul(c, 2.0) }, x)
	}},
	{"map", "transforms.Map", func(x *T, h func(*T) *T) *T {
		return peel.Sum(transforms.Map(h, peel.Stack([]*T{x, peel.Mul(x, 3.0)}, 0), 1), 0)
	}},
}

// controlTransforms apply f (f64[2] → f64[2]) under each transform.
var controlTransforms = []struct {
	name string
	run  func(f func(*T) *T, x *T) *T
}{
	{"eager", func(f func(*T) *T, x *T) *T { return f(x) }},
	{"vmap", func(f func(*T) *T, x *T) *T { return transforms.Vmap(f)(peel.Stack([]*T{x, peel.Mul(x, 0.5)}, 0)) }},
	{"jvp", func(f func(*T) *T, x *T) *T { _, t := transforms.JVP(f, x, peel.OnesLike(x)); return t }},
	{"jacfwd", func(f func(*T) *T, x *T) *T { return transforms.Jacfwd(f)(x) }},
	{"grad", func(f func(*T) *T, x *T) *T { return transforms.Grad(func(x *T) *T { return peel.Sum(f(x)) })(x) }},
	{"compile", func(f func(*T) *T, x *T) *T { return transforms.Compile(f)(x) }},
	{"functionalize", func(f func(*T) *T, x *T) *T { return transforms.Functionalize(f)(x) }},
	{"compile(vmap)", func(f func(*T) *T, x *T) *T {
		return transforms.Compile(transforms.Vmap(f))(peel.Stack([]*T{x, peel.Mul(x, 0.5)}, 0))
	}},
}

// TestControlFlowCapturedWrite: a loop body, a branch or a predicate
// that writes in place into a tensor captured from outside it is refused
// with *peel.Error naming the write and the primitive, for every loop
// and branch primitive, eagerly and under every transform, and the
// tensor is left as it was. Before, a write whose value was not a value
// of the traced function (a constant, another captured tensor) ran once,
// while the function was traced: a WhileLoop of 4 steps added 1 to its
// accumulator once, and a branch not taken wrote anyway.
func TestControlFlowCapturedWrite(t *testing.T) {
	writes := []struct {
		name  string
		write func(acc, other *T)
	}{
		{"constant", func(acc, _ *T) { peel.AddInPlace(acc, 1.0) }},
		{"captured value", func(acc, other *T) { peel.CopyInto(acc, other) }},
		{"through a view", func(acc, _ *T) { peel.CopyInto(peel.Index(acc, 0), 3.0) }},
	}
	for _, p := range controlPrims {
		for _, w := range writes {
			for _, tr := range controlTransforms {
				t.Run(p.name+"/"+w.name+"/"+tr.name, func(t *testing.T) {
					acc, other := f64(0, 0), f64(5, 6)
					h := func(c *T) *T { w.write(acc, other); return peel.Mul(c, 2.0) }
					wantError(t, func() { tr.run(func(x *T) *T { return p.run(x, h) }, f64(0.5, 1)) }, p.op, "captured")
					near(t, "the captured tensor", acc.Float64s(), []float64{0, 0}, 0)
				})
			}
		}
		// A tensor of the enclosing transform (a tracer) captured.
		t.Run(p.name+"/captured tracer", func(t *testing.T) {
			wantError(t, func() {
				transforms.Grad(func(x *T) *T {
					acc := peel.Mul(x, 1.0)
					p.run(x, func(c *T) *T { peel.AddInPlace(acc, 1.0); return peel.Mul(c, 2.0) })
					return peel.Sum(acc)
				})(f64(0.5, 1))
			}, p.op, "captured")
		})
	}
}

// TestControlFlowLocalWrite: a write into a tensor the body makes stays
// allowed, for every primitive under every transform: the result is
// that of the body written out of place.
func TestControlFlowLocalWrite(t *testing.T) {
	local := func(c *T) *T {
		z := peel.ZerosLike(c)
		peel.AddInPlace(z, 1.0)
		peel.CopyInto(peel.Index(z, 1), 1.0)
		return peel.Mul(c, peel.Add(z, 1.0))
	}
	twin := func(c *T) *T { return peel.Mul(c, 2.0) }
	for _, p := range controlPrims {
		for _, tr := range controlTransforms {
			if tr.name == "grad" && p.op == "transforms.WhileLoop" {
				continue // reverse mode through a WhileLoop is refused (TestWhileLoopReverseModeError)
			}
			t.Run(p.name+"/"+tr.name, func(t *testing.T) {
				x := f64(0.5, 1)
				got := tr.run(func(x *T) *T { return p.run(x, local) }, x)
				want := tr.run(func(x *T) *T { return p.run(x, twin) }, x)
				near(t, "local write", got.Float64s(), want.Float64s(), 1e-15)
			})
		}
	}
}

// TestControlFlowCapturedWriteConcurrent: the check is per goroutine.
// While goroutines trace loop bodies and branches (some refused for a
// captured write, some fine), other goroutines write in place into
// tensors they made before, eagerly and under Vmap: those writes are
// theirs, not a body's, and must neither fail nor be lost.
func TestControlFlowCapturedWriteConcurrent(t *testing.T) {
	const workers, rounds = 4, 50
	errs := make(chan string, 4*workers)
	done := make(chan struct{})
	for w := 0; w < workers; w++ {
		go func() {
			defer func() { done <- struct{}{} }()
			acc := f64(0, 0)
			for r := 0; r < rounds; r++ {
				err := peel.Catch(func() {
					transforms.WhileLoop(func(c *T) *T { return peel.Less(peel.Sum(c), 20.0) },
						func(c *T) *T { peel.AddInPlace(acc, 1.0); return peel.Mul(c, 2.0) }, f64(0.5, 1))
				})
				if err == nil || !strings.Contains(err.Error(), "captured") {
					errs <- "a captured write in a body was not refused: " + fmt.Sprint(err)
					return
				}
				x := f64(0.5, 1)
				if got := controlPrims[0].run(x, func(c *T) *T { return peel.Mul(c, 3.0) }).Float64s(); got[1] != 3 {
					errs <- fmt.Sprint("cond gave ", got)
					return
				}
			}
			if a := acc.Float64s(); a[0] != 0 {
				errs <- fmt.Sprint("the refused writes happened: ", a)
			}
		}()
		go func() {
			defer func() { done <- struct{}{} }()
			own := f64(0, 0)
			lanes := peel.Zeros(peel.Float64, 3, 2)
			for r := 0; r < rounds; r++ {
				if err := peel.Catch(func() {
					peel.AddInPlace(own, 1.0)
					transforms.Vmap(func(l *T) *T { peel.AddInPlace(l, 1.0); return l })(lanes)
				}); err != nil {
					errs <- "an eager write outside any body failed: " + err.Error()
					return
				}
			}
			if o, l := own.Float64s(), lanes.Float64s(); o[0] != rounds || l[0] != rounds {
				errs <- fmt.Sprint("eager writes lost: ", o, l)
			}
		}()
	}
	for i := 0; i < 2*workers; i++ {
		<-done
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
