package transforms_test

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/internal/optest"
	"github.com/peel-ml/peel/transforms"
)

// floatArgs splits a sample's arguments into the float ones (returned)
// and a function rebuilding the full list from new float ones.
func floatArgs(args []*T) ([]*T, func([]*T) []*T) {
	var fl []*T
	var idx []int
	for i, a := range args {
		if a.DType().IsFloat() {
			fl = append(fl, a)
			idx = append(idx, i)
		}
	}
	return fl, func(xs []*T) []*T {
		full := append([]*T(nil), args...)
		for k, i := range idx {
			full[i] = xs[k]
		}
		return full
	}
}

// TestCompileBackwardRegistry checks, for every differentiable registry
// op and sample, that the gradient of Σ op(args)·w with the backward
// pass compiled equals the eager one (the compiled program runs the same
// kernels; fused reductions may round differently, within 1e-12 for f64
// and 1e-5 for f32).
func TestCompileBackwardRegistry(t *testing.T) {
	checked := 0
	for _, op := range optest.All() {
		if !op.Differentiable {
			continue
		}
		for _, s := range op.Samples() {
			fl, full := floatArgs(s.Args)
			if len(fl) == 0 {
				continue
			}
			out := op.F(s.Args)
			if !out.DType().IsFloat() || out.Size() == 0 {
				continue
			}
			w := peel.AsType(peel.Add(peel.Mul(peel.Arange(peel.Float64, 0, float64(out.Size()), 1), 0.25), 1), out.DType())
			w = peel.Reshape(w, out.Shape()...)
			loss := func(xs []*T) *T { return peel.Sum(peel.Mul(op.F(full(xs)), w)) }
			var want, got []*T
			if err := catchAll(func() { want = transforms.Grad(loss)(fl) }); err != nil {
				continue // not differentiable at this sample in reverse mode
			}
			if err := catchAll(func() { got = transforms.Grad(loss, transforms.CompileBackward())(fl) }); err != nil {
				t.Errorf("%s %s: CompileBackward: %v", op.Name, s.Name, err)
				continue
			}
			tol := 1e-12
			if out.DType() == peel.Float32 {
				tol = 1e-5
			}
			if msg := sameFloats(concatData(got), concatData(want), tol); msg != "" {
				t.Errorf("%s %s: compiled backward vs eager: %s", op.Name, s.Name, msg)
			}
			checked++
		}
	}
	if checked < 50 {
		t.Errorf("only %d samples checked", checked)
	}
}

// TestCompileBackwardRapid checks random smooth programs on broadcast
// shapes: the compiled backward equals the eager one, on the first call
// and on a second call of the same structure with other values (the
// cached program must not hold the first call's values).
func TestCompileBackwardRapid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs, ys := drawShapes(t, 0)
		p := drawProgram(t)
		f := func(a []*T) *T { return sumAll(p.run(a[0], a[1])) }
		for round := range 2 {
			x, y := drawTensor(t, "x", xs), drawTensor(t, "y", ys)
			want := transforms.Grad(f)([]*T{x, y})
			got := transforms.Grad(f, transforms.CompileBackward())([]*T{x, y})
			if msg := withinTol(concatData(got), concatData(want), 1e-12, 1e-12); msg != "" {
				t.Fatalf("round %d, f = Σ %s: compiled backward vs eager: %s", round, p, msg)
			}
		}
	})
}

// TestGradOptions checks CompileBackward and Remat on the forms that
// take them, their fallbacks, and Argnums where it does not apply.
func TestGradOptions(t *testing.T) {
	p := ckData()
	want := transforms.Grad(ckLoss)(p)
	ckNear(t, "CompileBackward", transforms.Grad(ckLoss, transforms.CompileBackward())(p), want)
	ckNear(t, "Remat(MinCut)", transforms.Grad(ckLoss, transforms.Remat(transforms.MinCut))(p), want)
	ckNear(t, "both", transforms.Grad(ckLoss, transforms.Remat(transforms.DotsSaveable), transforms.CompileBackward())(p), want)
	v, g := transforms.ValueAndGrad(ckLoss, transforms.CompileBackward())(p)
	near(t, "ValueAndGrad value", v.Float64s(), ckLoss(p).Float64s(), 0)
	ckNear(t, "ValueAndGrad", g, want)
	g2 := transforms.Grad2(func(p ckParams, s *T) *T { return peel.Mul(ckLoss(p), s) }, transforms.CompileBackward())(p, peel.Scalar(1.0))
	ckNear(t, "Grad2", g2, want)
	ga, aux := transforms.GradAux(func(p ckParams) (*T, *T) { return ckLoss(p), p.X }, transforms.Remat(transforms.MinCut))(p)
	ckNear(t, "GradAux", ga, want)
	near(t, "GradAux aux", aux.Float64s(), p.X.Float64s(), 0)
	// Under Vmap (tracers): transposed eagerly, same results.
	xs := ckRandom(11, 5, 4, 3)
	per := func(opts ...transforms.GradOption) ckParams {
		return transforms.Vmap(func(x *T) ckParams { q := p; q.X = x; return transforms.Grad(ckLoss, opts...)(q) })(xs)
	}
	ckNear(t, "Vmap(Grad(CompileBackward))", per(transforms.CompileBackward()), per())
	// A user-defined op's rule holds values: transposed eagerly.
	x := ckRandom(12, 3, 4)
	gelu := func(x *T) *T { return peel.Sum(mylib.Gelu.Call(x)) }
	near(t, "user op", transforms.Grad(gelu, transforms.CompileBackward())(x).Float64s(), transforms.Grad(gelu)(x).Float64s(), 1e-12)
	// Under Compile: the joint program, same results.
	ckNear(t, "Compile(Grad(CompileBackward))", transforms.Compile(transforms.Grad(ckLoss, transforms.CompileBackward()))(p), want)
}

// sameFloats reports how got differs from want beyond tol (relative,
// with an absolute floor of tol), where NaNs equal NaNs and infinities
// must match exactly; "" if they agree.
func sameFloats(got, want []float64, tol float64) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d values, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		switch {
		case math.IsNaN(w) || math.IsNaN(g):
			if !math.IsNaN(w) || !math.IsNaN(g) {
				return fmt.Sprintf("element %d is %v, want %v", i, g, w)
			}
		case math.IsInf(w, 0) || math.IsInf(g, 0):
			if g != w {
				return fmt.Sprintf("element %d is %v, want %v", i, g, w)
			}
		case math.Abs(g-w) > tol*math.Max(1, math.Abs(w)):
			return fmt.Sprintf("element %d is %v, want %v", i, g, w)
		}
	}
	return ""
}
