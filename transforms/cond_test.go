package transforms_test

import (
	"math"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// Branches of the piecewise test function, and their Go-if composition.
func condPos(x *T) *T { return peel.Mul(peel.Sin(x), x) }
func condNeg(x *T) *T { return peel.Mul(peel.Mul(x, x), x) }

// condF is x ↦ sin(x)·x when Σx > 0, x³ otherwise, with Cond; ifF is the
// same with a Go if on the concrete value.
func condF(x *T) *T {
	return transforms.Cond(peel.Greater(peel.Sum(x), 0.0), condPos, condNeg, x)
}

func ifF(x *T) *T { return condPick(x)(x) }

// condPick is the branch a Go if on the concrete x takes: the oracle for
// transformed calls (a transformed function cannot read values).
func condPick(x *T) func(*T) *T {
	if peel.Sum(x).Item() > 0 {
		return condPos
	}
	return condNeg
}

func condSum(f func(*T) *T) func(*T) *T { return func(x *T) *T { return peel.Sum(f(x)) } }

func condInputs() []*T {
	return []*T{f64(0.5, -0.25, 2), f64(-1.5, 0.25, -3), f64(0, 0, 0), f64(1e-3)}
}

func condEqual(t *testing.T, what string, got, want *T) {
	t.Helper()
	near(t, what, got.Float64s(), want.Float64s(), 0)
}

func TestCondMatchesIf(t *testing.T) {
	for _, x := range condInputs() {
		condEqual(t, "cond", condF(x), ifF(x))
	}
	// A numeric predicate: nonzero is true.
	for _, p := range []float64{0, 1, -2.5} {
		x := f64(1, 2)
		got := transforms.Cond(peel.Scalar(p), condPos, condNeg, x)
		want := condNeg(x)
		if p != 0 {
			want = condPos(x)
		}
		condEqual(t, "numeric pred", got, want)
	}
	gotI := transforms.Cond(peel.Scalar(int64(3)), condPos, condNeg, f64(1))
	condEqual(t, "int pred", gotI, condPos(f64(1)))
}

func TestSwitchClampsIndex(t *testing.T) {
	branches := []func(*T) *T{
		func(x *T) *T { return peel.Add(x, 1.0) },
		func(x *T) *T { return peel.Mul(x, 10.0) },
		func(x *T) *T { return peel.Neg(x) },
	}
	x := f64(1, -2)
	for _, k := range []int64{-5, -1, 0, 1, 2, 3, 100} {
		want := branches[min(max(k, 0), 2)](x)
		condEqual(t, "switch", transforms.Switch(peel.Scalar(k), branches, x), want)
	}
	// One branch: any index.
	condEqual(t, "one branch", transforms.Switch(peel.Scalar(int64(7)), branches[:1], x), branches[0](x))
}

type condPair struct{ A, B *T }

func TestCondTrees(t *testing.T) {
	swap := func(p condPair) []*T { return []*T{p.B, peel.Add(p.A, p.B)} }
	keep := func(p condPair) []*T { return []*T{p.A, peel.Mul(p.A, p.B)} }
	p := condPair{f64(1, 2), f64(3, 4)}
	for _, b := range []bool{true, false} {
		got := transforms.Cond(peel.Scalar(b), swap, keep, p)
		want := keep(p)
		if b {
			want = swap(p)
		}
		for i := range want {
			condEqual(t, "tree", got[i], want[i])
		}
	}
}

func TestCondGradJVPJacrev(t *testing.T) {
	for _, x := range condInputs() {
		ifF := condPick(x)
		condEqual(t, "grad", transforms.Grad(condSum(condF))(x), transforms.Grad(condSum(ifF))(x))
		tan := peel.OnesLike(x)
		y, dy := transforms.JVP(condF, x, tan)
		wy, wdy := transforms.JVP(ifF, x, tan)
		condEqual(t, "jvp primal", y, wy)
		condEqual(t, "jvp tangent", dy, wdy)
		condEqual(t, "jacrev", transforms.Jacrev(condF)(x), transforms.Jacrev(ifF)(x))
		hess := func(f func(*T) *T) *T { return transforms.Grad(condSum(transforms.Grad(condSum(f))))(x) }
		condEqual(t, "grad of grad", hess(condF), hess(ifF))
	}
}

// TestCondCapturedGrad: a tensor of an outer Grad captured by a branch
// is differentiated (it is an operand of cond, closure-converted).
func TestCondCapturedGrad(t *testing.T) {
	x := f64(1, -2, 3)
	for _, b := range []bool{true, false} {
		pred := peel.Scalar(b)
		withCond := func(w *T) *T {
			return peel.Sum(transforms.Cond(pred,
				func(x *T) *T { return peel.Mul(x, peel.Sin(w)) },
				func(x *T) *T { return peel.Add(x, peel.Mul(w, w)) }, x))
		}
		withIf := func(w *T) *T {
			if b {
				return peel.Sum(peel.Mul(x, peel.Sin(w)))
			}
			return peel.Sum(peel.Add(x, peel.Mul(w, w)))
		}
		w := f64(0.5, 0.25, -1)
		condEqual(t, "captured grad", transforms.Grad(withCond)(w), transforms.Grad(withIf)(w))
		cw := transforms.Compile(transforms.Grad(withCond))
		near(t, "compiled captured grad", cw(w).Float64s(), transforms.Grad(withIf)(w).Float64s(), 1e-12)
	}
}

func condLanes(x *T) []*T {
	n := x.Shape()[0]
	out := make([]*T, n)
	for i := range out {
		out[i] = peel.Select(x, 0, i)
	}
	return out
}

func condStack(f func(*T) *T, x *T) *T {
	var ys []*T
	for _, l := range condLanes(x) {
		ys = append(ys, f(l))
	}
	return peel.Stack(ys, 0)
}

func TestCondVmap(t *testing.T) {
	xs := peel.FromFloat64s([]float64{0.5, -0.25, 2, -1.5, 0.25, -3, 1, 1, -1, 0, 0, 0}, 4, 3)
	// A batched predicate (computed from the lane).
	condEqual(t, "vmap batched pred", transforms.Vmap(condF)(xs), condStack(ifF, xs))
	// An unbatched predicate, batched operands.
	for _, b := range []bool{true, false} {
		pred := peel.Scalar(b)
		f := func(x *T) *T { return transforms.Cond(pred, condPos, condNeg, x) }
		want := condStack(condNeg, xs)
		if b {
			want = condStack(condPos, xs)
		}
		condEqual(t, "vmap unbatched pred", transforms.Vmap(f)(xs), want)
	}
	// A batched predicate, unbatched operands (captured).
	y := f64(0.5, -2)
	preds := peel.FromFloat64s([]float64{1, 0, -3, 0})
	f := func(p *T) *T { return transforms.Cond(p, condPos, condNeg, y) }
	got := transforms.Vmap(f)(preds)
	var want []*T
	for _, p := range preds.Float64s() {
		if p != 0 {
			want = append(want, condPos(y))
		} else {
			want = append(want, condNeg(y))
		}
	}
	condEqual(t, "vmap batched pred, unbatched operand", got, peel.Stack(want, 0))
	// A batched Switch index.
	branches := []func(*T) *T{condPos, condNeg, peel.Neg}
	idx := peel.FromInt64s([]int64{2, 0, 1, 7})
	gotS := transforms.Vmap2(func(k, x *T) *T { return transforms.Switch(k, branches, x) })(idx, xs)
	var wantS []*T
	for i, l := range condLanes(xs) {
		wantS = append(wantS, branches[min(idx.Int64s()[i], 2)](l))
	}
	condEqual(t, "vmap switch", gotS, peel.Stack(wantS, 0))
	// Vmap of Grad and Grad of Vmap.
	gradIf := func(x *T) *T { return transforms.Grad(condSum(condPick(x)))(x) }
	condEqual(t, "vmap(grad)", transforms.Vmap(transforms.Grad(condSum(condF)))(xs), condStack(gradIf, xs))
	gv := transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Vmap(condF)(x)) })(xs)
	condEqual(t, "grad(vmap)", gv, condStack(gradIf, xs))
}

func TestCondCompile(t *testing.T) {
	c := transforms.Compile(condF)
	cg := transforms.Compile(transforms.Grad(condSum(condF)))
	for _, x := range condInputs() {
		near(t, "compiled", c(x).Float64s(), ifF(x).Float64s(), 1e-12)
		near(t, "compiled grad", cg(x).Float64s(), transforms.Grad(condSum(condPick(x)))(x).Float64s(), 1e-12)
	}
	g := transforms.MakeGraph(condF, f64(1, 2)).String()
	if !strings.Contains(g, "cond[2 branches]") {
		t.Errorf("graph does not hold one cond equation:\n%s", g)
	}
}

func TestCondErrors(t *testing.T) {
	x := f64(1, 2)
	pred := peel.Scalar(true)
	wantError(t, func() { transforms.Cond(pred, condPos, func(x *T) *T { return peel.Sum(x) }, x) },
		"transforms.Cond", "falseFn", "shape")
	wantError(t, func() { transforms.Cond(pred, condPos, func(x *T) *T { return peel.AsType(x, peel.Float32) }, x) },
		"transforms.Cond", "falseFn", "f32")
	wantError(t, func() {
		transforms.Cond(pred, func(x *T) []*T { return []*T{x} }, func(x *T) []*T { return []*T{x, x} }, x)
	}, "transforms.Cond", "structure")
	wantError(t, func() {
		transforms.Switch(peel.Scalar(int64(0)), []func(condPair) *T{
			func(p condPair) *T { return p.A },
			func(p condPair) *T { return p.A },
			func(p condPair) *T { return peel.Stack([]*T{p.A, p.B}, 0) },
		}, condPair{x, x})
	}, "transforms.Switch", "branch 2", "shape")
	wantError(t, func() {
		transforms.Cond(pred, func(p condPair) condPair { return p }, func(p condPair) condPair { return condPair{p.A, peel.Sum(p.B)} }, condPair{x, x})
	}, "falseFn", ".B")
	wantError(t, func() { transforms.Cond(nil, condPos, condNeg, x) }, "pred must not be nil")
	wantError(t, func() { transforms.Cond(x, condPos, condNeg, x) }, "scalar")
	wantError(t, func() { transforms.Cond(pred, nil, condNeg, x) }, "trueFn must not be nil")
	wantError(t, func() { transforms.Switch(peel.Scalar(1.0), []func(*T) *T{condPos}, x) }, "int64 scalar")
	wantError(t, func() { transforms.Switch[*T, *T](peel.Scalar(int64(0)), nil, x) }, "must not be empty")
	wantError(t, func() { transforms.Cond(pred, func(*T) *T { return nil }, condNeg, x) }, "nil")
}

// TestCondOnlyTakenBranchRuns: eagerly, only the taken branch's
// derivative runs (a hook on each branch counts its backward passes).
func TestCondOnlyTakenBranchRuns(t *testing.T) {
	var hits [2]int
	hooked := func(k int, f func(*T) *T) func(*T) *T {
		return func(x *T) *T {
			return f(transforms.Hook(x, func(ct *T) *T { hits[k]++; return ct }))
		}
	}
	x := f64(1, -2)
	for _, b := range []bool{false, true} {
		hits = [2]int{}
		f := func(x *T) *T {
			return peel.Sum(transforms.Cond(peel.Scalar(b), hooked(1, condPos), hooked(0, condNeg), x))
		}
		want := condNeg
		taken := 0
		if b {
			want, taken = condPos, 1
		}
		condEqual(t, "grad", transforms.Grad(f)(x), transforms.Grad(condSum(want))(x))
		if hits[taken] != 1 || hits[1-taken] != 0 {
			t.Errorf("pred %v: hooks ran %v times, want only branch %d once", b, hits, taken)
		}
	}
}

func TestCondMoreTransforms(t *testing.T) {
	for _, x := range condInputs() {
		ifF := condPick(x)
		condEqual(t, "jacfwd", transforms.Jacfwd(condF)(x), transforms.Jacfwd(ifF)(x))
		condEqual(t, "hessian", transforms.Hessian(condSum(condF))(x), transforms.Hessian(condSum(ifF))(x))
		gc := transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Compile(condF)(x)) })(x)
		near(t, "grad(compile)", gc.Float64s(), transforms.Grad(condSum(ifF))(x).Float64s(), 1e-12)
	}
	// Operands batched along another axis.
	xs := peel.FromFloat64s([]float64{0.5, -0.25, 2, -1.5, 0.25, -3}, 3, 2)
	got := transforms.Vmap(condF, transforms.InAxes(1))(xs)
	want := condStack(ifF, peel.Transpose(xs))
	condEqual(t, "vmap in axis 1", got, want)
	// Compiled vmap with a batched predicate.
	cv := transforms.Compile(transforms.Vmap(condF))
	near(t, "compile(vmap)", cv(peel.Transpose(xs)).Float64s(), want.Float64s(), 1e-12)
}

// TestCondEagerGradIgnoresUntakenBranch: a branch not taken whose
// derivative would be NaN at the operands does not reach an eager
// gradient (only the taken branch is differentiated).
func TestCondEagerGradIgnoresUntakenBranch(t *testing.T) {
	f := func(x *T) *T {
		return peel.Sum(transforms.Cond(peel.Greater(peel.Sum(x), 0.0), peel.Sqrt, func(x *T) *T { return peel.Mul(x, 2.0) }, x))
	}
	condEqual(t, "grad", transforms.Grad(f)(f64(-1, -4)), f64(2, 2))
}

// TestCondCapturedVmapAndCompiledSwitch: a branch capturing a tensor of
// an outer Vmap is batched in it; a compiled Switch takes its index as
// an argument of the program.
func TestCondCapturedVmapAndCompiledSwitch(t *testing.T) {
	x := f64(1, -2)
	ws := peel.FromFloat64s([]float64{0.5, 2, -1}, 3, 1)
	for _, b := range []bool{true, false} {
		f := func(w *T) *T {
			return transforms.Cond(peel.Scalar(b), func(x *T) *T { return peel.Mul(x, w) }, func(x *T) *T { return peel.Add(x, w) }, x)
		}
		want := condStack(func(w *T) *T {
			if b {
				return peel.Mul(x, w)
			}
			return peel.Add(x, w)
		}, ws)
		condEqual(t, "vmap captured", transforms.Vmap(f)(ws), want)
	}
	branches := []func(*T) *T{condPos, condNeg, peel.Neg}
	c := transforms.Compile2(func(k, x *T) *T { return transforms.Switch(k, branches, x) })
	for _, k := range []int64{-1, 0, 1, 2, 3} {
		near(t, "compiled switch", c(peel.Scalar(k), x).Float64s(), branches[min(max(k, 0), 2)](x).Float64s(), 1e-12)
	}
}

// TestCondTracedGradRunsOneBranch: with a traced predicate (under
// Compile) the gradient is a cond of the branches' forward passes and a
// cond of their transposed linear maps, so a branch not taken whose
// derivative is NaN does not reach the gradient, and no select merges
// the branches.
func TestCondTracedGradRunsOneBranch(t *testing.T) {
	f := func(x *T) *T {
		return peel.Sum(transforms.Cond(peel.Greater(peel.Sum(x), 0.0), peel.Sqrt, func(x *T) *T { return peel.Mul(x, 2.0) }, x))
	}
	c := transforms.Compile(transforms.Grad(f))
	condEqual(t, "compiled grad, not taken NaN", c(f64(-1, -4)), f64(2, 2))
	near(t, "compiled grad, sqrt", c(f64(1, 4)).Float64s(), []float64{0.5, 0.25}, 1e-15)
	g := transforms.MakeGraph(transforms.Grad(f), f64(1, 2)).String()
	if strings.Count(g, "cond[2 branches]") != 2 || strings.Contains(g, "select") {
		t.Errorf("want a forward and a backward cond and no select:\n%s", g)
	}
	// Second order, Jacobians and vmap of the traced gradient.
	for _, x := range condInputs() {
		ifF := condPick(x)
		h := transforms.Compile(transforms.Hessian(condSum(condF)))
		near(t, "compiled hessian", h(x).Float64s(), transforms.Hessian(condSum(ifF))(x).Float64s(), 1e-12)
		jr := transforms.Compile(transforms.Jacrev(condF))
		near(t, "compiled jacrev", jr(x).Float64s(), transforms.Jacrev(ifF)(x).Float64s(), 1e-12)
		jf := transforms.Compile(transforms.Jacfwd(condF))
		near(t, "compiled jacfwd", jf(x).Float64s(), transforms.Jacfwd(ifF)(x).Float64s(), 1e-12)
	}
	xs := peel.FromFloat64s([]float64{0.5, -0.25, 2, -1.5, 0.25, -3, 1, 1, -1}, 3, 3)
	gradIf := func(x *T) *T { return transforms.Grad(condSum(condPick(x)))(x) }
	cv := transforms.Compile(transforms.Vmap(transforms.Grad(condSum(condF))))
	near(t, "compile(vmap(grad))", cv(xs).Float64s(), condStack(gradIf, xs).Float64s(), 1e-12)
	gv := transforms.Compile(transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Vmap(condF)(x)) }))
	near(t, "compile(grad(vmap))", gv(xs).Float64s(), condStack(gradIf, xs).Float64s(), 1e-12)
}

// TestCondComposes: a CustomVJP in a branch (whose rule, here the true
// derivative, is decomposed when the branch is traced, as in Checkpoint
// and Compile), nested Conds, Cond inside Checkpoint and Remat, and
// CompileBackward.
func TestCondComposes(t *testing.T) {
	square := transforms.CustomVJP(func(x *T) *T { return peel.Mul(x, x) },
		func(x *T) (*T, *T) { return peel.Mul(x, x), x },
		func(x, ct *T) *T { return peel.Mul(peel.Mul(ct, x), 2.0) })
	withVJP := func(x *T) *T { return transforms.Cond(peel.Greater(peel.Sum(x), 0.0), square, condNeg, x) }
	nested := func(x *T) *T {
		return transforms.Cond(peel.Greater(peel.Sum(x), 0.0), condF, func(x *T) *T {
			return transforms.Switch(peel.AsType(peel.Less(peel.Sum(x), -2.0), peel.Int64), []func(*T) *T{condPos, peel.Exp}, x)
		}, x)
	}
	nestedIf := func(x *T) func(*T) *T {
		switch s := peel.Sum(x).Item(); {
		case s > 0:
			return condPos
		case s < -2:
			return peel.Exp
		}
		return condPos
	}
	for _, x := range condInputs() {
		grad := func(f func(*T) *T) *T { return transforms.Grad(condSum(f))(x) }
		cgrad := func(f func(*T) *T, opts ...transforms.GradOption) *T {
			return transforms.Compile(transforms.Grad(condSum(f), opts...))(x)
		}
		vjpIf := condNeg
		if peel.Sum(x).Item() > 0 {
			vjpIf = square
		}
		condEqual(t, "custom vjp branch", grad(withVJP), grad(vjpIf))
		near(t, "compiled custom vjp branch", cgrad(withVJP).Float64s(), grad(vjpIf).Float64s(), 1e-12)
		condEqual(t, "nested", grad(nested), grad(nestedIf(x)))
		near(t, "compiled nested", cgrad(nested).Float64s(), grad(nestedIf(x)).Float64s(), 1e-12)
		want := grad(condPick(x))
		near(t, "checkpoint", grad(transforms.Checkpoint(condF, transforms.NothingSaveable)).Float64s(), want.Float64s(), 1e-12)
		near(t, "remat", transforms.Grad(condSum(condF), transforms.Remat(transforms.MinCut))(x).Float64s(), want.Float64s(), 1e-12)
		near(t, "compiled remat", cgrad(condF, transforms.Remat(transforms.DotsSaveable)).Float64s(), want.Float64s(), 1e-12)
		near(t, "compile backward", transforms.Grad(condSum(condF), transforms.CompileBackward())(x).Float64s(), want.Float64s(), 1e-12)
	}
}

// TestCondTracedGradZeroCotangent: a traced-predicate gradient with
// respect to one operand that a branch does not read (a zero cotangent
// in that branch's transpose), and with a captured integer operand.
func TestCondTracedGradZeroCotangent(t *testing.T) {
	type ops struct{ X, Y *T }
	n := peel.FromInt64s([]int64{1, 2}) // captured: an integer operand of cond
	f := func(o ops) *T {
		r := transforms.Cond(peel.Greater(peel.Sum(o.X), 0.0),
			func(o ops) *T { return peel.Mul(o.X, o.X) },
			func(o ops) *T { return peel.Add(peel.Mul(o.X, o.Y), peel.AsType(n, peel.Float64)) }, o)
		return peel.Sum(r)
	}
	for _, x := range []*T{f64(1, 2), f64(-1, -2)} {
		o := ops{x, f64(3, 4)}
		var wantX, wantY []float64
		if peel.Sum(x).Item() > 0 {
			wantX, wantY = peel.Mul(x, 2.0).Float64s(), []float64{0, 0}
		} else {
			wantX, wantY = o.Y.Float64s(), x.Float64s()
		}
		for name, g := range map[string]ops{
			"eager":    transforms.Grad(f)(o),
			"compiled": transforms.Compile(transforms.Grad(f))(o),
		} {
			near(t, name+" dx", g.X.Float64s(), wantX, 1e-12)
			near(t, name+" dy", g.Y.Float64s(), wantY, 1e-12)
		}
	}
}

// TestCondDecomposed: a trace that decomposes every composite records
// every branch and a select by the traced index.
func TestCondDecomposed(t *testing.T) {
	for _, x := range condInputs() {
		g := transforms.MakeGraph(condF, x, transforms.Decompose())
		if s := g.String(); strings.Contains(s, "cond") || !strings.Contains(s, "select") {
			t.Errorf("want the branches and a select:\n%s", s)
		}
		condEqual(t, "decomposed", g.Eval(x)[0], ifF(x))
	}
}

// TestCondCompiledForwardMode: JVP and Linearize under Compile (a
// traced predicate: cond_lin evaluated forward).
func TestCondCompiledForwardMode(t *testing.T) {
	jvp := transforms.Compile(func(x *T) []*T {
		y, dy := transforms.JVP(condF, x, peel.OnesLike(x))
		return []*T{y, dy}
	})
	lin := transforms.Compile(func(x *T) *T {
		_, l := transforms.Linearize(condF, x)
		return l(peel.Mul(x, 3.0))
	})
	for _, x := range condInputs() {
		ifF := condPick(x)
		wy, wdy := transforms.JVP(ifF, x, peel.OnesLike(x))
		got := jvp(x)
		near(t, "compiled jvp primal", got[0].Float64s(), wy.Float64s(), 1e-12)
		near(t, "compiled jvp tangent", got[1].Float64s(), wdy.Float64s(), 1e-12)
		_, wl := transforms.JVP(ifF, x, peel.Mul(x, 3.0))
		near(t, "compiled linearize", lin(x).Float64s(), wl.Float64s(), 1e-12)
	}
}

// TestTracedReadPointsToControlFlow: reading a traced value to decide Go
// control flow under a transform is an error that names the constructs
// to use instead.
func TestTracedReadPointsToControlFlow(t *testing.T) {
	f := func(x *T) *T {
		if peel.Sum(x).Item() > 0 {
			return peel.Sin(x)
		}
		return peel.Cos(x)
	}
	wantError(t, func() { transforms.Grad(func(x *T) *T { return peel.Sum(f(x)) })(f64(1, 2)) }, "transforms.Cond", "transforms.Scan", "transforms.WhileLoop")
	wantError(t, func() { transforms.Vmap(f)(f64(1, 2)) }, "transforms.Cond")
}

// nearFinite is near that also fails on a NaN or infinite value, which
// near's comparison lets through.
func nearFinite(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	for i, v := range got {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%s: element %d is %v, want %v (all: %v vs %v)", what, i, v, want[i], got, want)
		}
	}
	near(t, what, got, want, tol)
}

// TestCondGradVmapNan is JAX's testCondGradVmapNan, with a batched
// Switch index too: under Vmap with a batched predicate every branch
// runs on every lane, and the gradient must not carry the NaN that a
// branch not taken gets from its infinite derivative there (Sqrt and Log
// at 0). The oracle is each lane's eager gradient, in which only the
// taken branch is differentiated.
func TestCondGradVmapNan(t *testing.T) {
	const eps = 1e-3
	safe := func(x *T) *T {
		return transforms.Cond(peel.Less(x, eps),
			func(x *T) *T { return peel.FullLike(x, eps) }, peel.Sqrt, x)
	}
	// JAX: grad(lambda x: vmap(safe1)(x).sum())(zeros(10)) is finite:
	// zeros, the taken branch being a constant.
	g := transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Vmap(safe)(x)) })(peel.Zeros(peel.Float64, 10))
	nearFinite(t, "grad(vmap(cond)) at zeros", g.Float64s(), make([]float64, 10), 0)
	// The form, JAX's own: x captured by the branches, no
	// operands (the branch's Sqrt of a captured tracer is staged into
	// the branch, interp.CaptureTrace, so it is selected with it).
	captured := func(x *T) *T {
		return transforms.Cond(peel.Less(x, eps),
			func(struct{}) *T { return peel.Scalar(eps) }, func(struct{}) *T { return peel.Sqrt(x) }, struct{}{})
	}
	g = transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Vmap(captured)(x)) })(peel.Zeros(peel.Float64, 10))
	nearFinite(t, "grad(vmap(cond)) at zeros, x captured", g.Float64s(), make([]float64, 10), 0)
	xs4 := peel.FromFloat64s([]float64{0, 4, 0, 0.25})
	g = transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Vmap(captured)(x)) })(xs4)
	nearFinite(t, "grad(vmap(cond)), x captured", g.Float64s(), []float64{0, 0.25, 0, 1}, 1e-15)
	g = transforms.Compile(transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Vmap(captured)(x)) }))(xs4)
	nearFinite(t, "compile(grad(vmap(cond))), x captured", g.Float64s(), []float64{0, 0.25, 0, 1}, 1e-15)

	// Three branches, each with an infinite derivative where another is
	// taken: 0 at x < eps, sqrt(x) on [eps, 2], log(x-2) above 2.
	piece := func(x *T) *T {
		k := peel.Add(peel.AsType(peel.GreaterEqual(x, eps), peel.Int64), peel.AsType(peel.Greater(x, 2.0), peel.Int64))
		return transforms.Switch(k, []func(*T) *T{
			func(x *T) *T { return peel.Mul(x, 0.0) },
			peel.Sqrt,
			func(x *T) *T { return peel.Log(peel.Sub(x, 2.0)) },
		}, x)
	}
	withSafe := func(x *T) *T { return peel.Add(piece(x), safe(x)) }
	xs := []float64{0, 0, 1, 4, 2, 0.25, 3, 0}
	x := peel.FromFloat64s(xs)
	var want []float64
	for _, v := range xs {
		want = append(want, transforms.Grad(withSafe)(peel.Scalar(v)).Item())
	}
	for _, w := range want {
		if math.IsNaN(w) || math.IsInf(w, 0) {
			t.Fatalf("oracle not finite: %v", want)
		}
	}
	sumV := func(x *T) *T { return peel.Sum(transforms.Vmap(withSafe)(x)) }
	nearFinite(t, "grad(vmap(switch))", transforms.Grad(sumV)(x).Float64s(), want, 1e-15)
	nearFinite(t, "compile(grad(vmap(switch)))", transforms.Compile(transforms.Grad(sumV))(x).Float64s(), want, 1e-15)
	nearFinite(t, "vmap(grad(switch))", transforms.Vmap(transforms.Grad(withSafe))(x).Float64s(), want, 1e-15)
	_, vjp := transforms.VJP(transforms.Vmap(withSafe), x)
	nearFinite(t, "vjp(vmap(switch))", vjp(peel.OnesLike(x)).Float64s(), want, 1e-15)
	_, tan := transforms.JVP(transforms.Vmap(withSafe), x, peel.OnesLike(x))
	nearFinite(t, "jvp(vmap(switch))", tan.Float64s(), want, 1e-15)
	jac := transforms.Jacrev(transforms.Vmap(withSafe))(x)
	var diag []float64
	for i := range xs {
		diag = append(diag, peel.Index(peel.Index(jac, i), i).Item())
	}
	nearFinite(t, "jacrev(vmap(switch)) diagonal", diag, want, 1e-15)
}
