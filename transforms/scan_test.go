package transforms_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
)

// scanStep is the test body: carry c ↦ sin(c)·x + c·0.5, y = Σ c·x and
// c itself (a tree of ys).
func scanStep(c, x *T) (*T, []*T) {
	next := peel.Add(peel.Mul(peel.Sin(c), x), peel.Mul(c, 0.5))
	return next, []*T{peel.Sum(peel.Mul(c, x)), c}
}

// goScan is the oracle: a Go loop of f on concrete slices of xs (axis 0).
func goScan(f func(c, x *T) (*T, []*T), init, xs *T, reverse bool) (*T, []*T) {
	n := xs.Shape()[0]
	c := init
	var ys []*T
	per := make([][]*T, n)
	for k := 0; k < n; k++ {
		i := k
		if reverse {
			i = n - 1 - k
		}
		var y []*T
		c, y = f(c, peel.Index(xs, i))
		per[i] = y
	}
	for j := range per[0] {
		var col []*T
		for i := range per {
			col = append(col, per[i][j])
		}
		ys = append(ys, peel.Stack(col, 0))
	}
	return c, ys
}

func scanXs() *T {
	return peel.FromFloat64s([]float64{0.5, -0.25, 2, -1.5, 0.25, -3, 1, 1, -1, 0.75, 0, 0.125}, 4, 3)
}

func scanEqual(t *testing.T, what string, got, want *T) {
	t.Helper()
	if g, w := got.TypeString(), want.TypeString(); g != w {
		t.Fatalf("%s: %s, want %s", what, g, w)
	}
	near(t, what, got.Float64s(), want.Float64s(), 0)
}

func TestScanMatchesLoop(t *testing.T) {
	init, xs := f64(0.1, -0.2, 0.3), scanXs()
	for _, rev := range []bool{false, true} {
		var opts []peel.ScanOption
		if rev {
			opts = append(opts, peel.Reverse())
		}
		c, ys := transforms.Scan(scanStep, init, xs, opts...)
		wc, wys := goScan(scanStep, init, xs, rev)
		scanEqual(t, "carry", c, wc)
		if len(ys) != 2 {
			t.Fatalf("%d ys, want 2", len(ys))
		}
		scanEqual(t, "ys[0]", ys[0], wys[0])
		scanEqual(t, "ys[1]", ys[1], wys[1])
	}
}

type scanCarry struct {
	H *T
	N *T // an int64 counter
}

type scanIn struct {
	A, B *T
}

func TestScanTrees(t *testing.T) {
	init := scanCarry{H: f64(1, 2), N: peel.Scalar(int64(0))}
	xs := scanIn{A: peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 3, 2), B: f64(0.5, -1, 2)}
	f := func(c scanCarry, x scanIn) (scanCarry, map[string]*T) {
		h := peel.Add(peel.Mul(c.H, x.B), x.A)
		return scanCarry{H: h, N: peel.Add(c.N, peel.Scalar(int64(1)))}, map[string]*T{"h": h, "b": peel.Mul(x.B, 2.0)}
	}
	c, ys := transforms.Scan(f, init, xs)
	wc := init
	var hs, bs []*T
	for i := 0; i < 3; i++ {
		var y map[string]*T
		wc, y = f(wc, scanIn{A: peel.Index(xs.A, i), B: peel.Index(xs.B, i)})
		hs, bs = append(hs, y["h"]), append(bs, y["b"])
	}
	scanEqual(t, "carry H", c.H, wc.H)
	if c.N.Item() != 3 || c.N.DType() != peel.Int64 {
		t.Fatalf("counter %v (%v), want 3 int64", c.N.Item(), c.N.DType())
	}
	scanEqual(t, "ys h", ys["h"], peel.Stack(hs, 0))
	scanEqual(t, "ys b", ys["b"], peel.Stack(bs, 0))
}

// scanLoss and goLoss: a scalar of the final carry and of the ys, with
// Scan and with the Go loop, of (init, xs) and a captured weight.
type scanArgs struct {
	Init, Xs, W *T
}

func scanLossWith(run func(f func(c, x *T) (*T, []*T), init, xs *T) (*T, []*T)) func(a scanArgs) *T {
	return func(a scanArgs) *T {
		f := func(c, x *T) (*T, []*T) {
			n, ys := scanStep(c, x)
			return peel.Mul(n, a.W), ys
		}
		c, ys := run(f, a.Init, a.Xs)
		return peel.Add(peel.Sum(peel.Mul(c, c)), peel.Add(peel.Sum(ys[0]), peel.Sum(peel.Sin(ys[1]))))
	}
}

func scanRunner(rev bool) func(f func(c, x *T) (*T, []*T), init, xs *T) (*T, []*T) {
	return func(f func(c, x *T) (*T, []*T), init, xs *T) (*T, []*T) {
		var opts []peel.ScanOption
		if rev {
			opts = append(opts, peel.Reverse())
		}
		return transforms.Scan(f, init, xs, opts...)
	}
}

func goRunner(rev bool) func(f func(c, x *T) (*T, []*T), init, xs *T) (*T, []*T) {
	return func(f func(c, x *T) (*T, []*T), init, xs *T) (*T, []*T) { return goScan(f, init, xs, rev) }
}

func scanArgsValue() scanArgs {
	return scanArgs{Init: f64(0.1, -0.2, 0.3), Xs: scanXs(), W: f64(0.9, 1.1, -0.7)}
}

// scanArgsEqual compares gradients to tol: the scan's transpose sums
// the captured tensors' cotangents over the steps in its own order.
func scanArgsEqual(t *testing.T, what string, got, want scanArgs, tol float64) {
	t.Helper()
	near(t, what+" init", got.Init.Float64s(), want.Init.Float64s(), tol)
	near(t, what+" xs", got.Xs.Float64s(), want.Xs.Float64s(), tol)
	near(t, what+" w", got.W.Float64s(), want.W.Float64s(), tol)
}

func TestScanGrad(t *testing.T) {
	a := scanArgsValue()
	for _, rev := range []bool{false, true} {
		loss, oracle := scanLossWith(scanRunner(rev)), scanLossWith(goRunner(rev))
		scanEqual(t, "loss", loss(a), oracle(a))
		scanArgsEqual(t, "grad", transforms.Grad(loss)(a), transforms.Grad(oracle)(a), 1e-14)
		// Grad of Grad (a Hessian-vector product through the loop).
		hvp := func(l func(scanArgs) *T) func(scanArgs) *T {
			return func(a scanArgs) *T { return peel.Sum(transforms.Grad(l)(a).Init) }
		}
		scanArgsEqual(t, "grad of grad", transforms.Grad(hvp(loss))(a), transforms.Grad(hvp(oracle))(a), 1e-12)
	}
}

func TestScanJVP(t *testing.T) {
	a := scanArgsValue()
	tan := scanArgs{Init: f64(1, 0.5, -1), Xs: peel.OnesLike(a.Xs), W: f64(0, 1, 0.25)}
	for _, rev := range []bool{false, true} {
		y, dy := transforms.JVP(scanLossWith(scanRunner(rev)), a, tan)
		wy, wdy := transforms.JVP(scanLossWith(goRunner(rev)), a, tan)
		scanEqual(t, "jvp primal", y, wy)
		scanEqual(t, "jvp tangent", dy, wdy)
	}
}

func TestScanVmap(t *testing.T) {
	inits := peel.FromFloat64s([]float64{0.1, -0.2, 0.3, 1, 2, -3}, 2, 3)
	xss := peel.Stack([]*T{scanXs(), peel.Neg(scanXs())}, 0) // [2, 4, 3]
	run := func(init, xs *T) []*T {
		c, ys := transforms.Scan(scanStep, init, xs)
		return append([]*T{c}, ys...)
	}
	oracle := func(init, xs *T) []*T {
		c, ys := goScan(scanStep, init, xs, false)
		return append([]*T{c}, ys...)
	}
	stackLanes := func(outs [][]*T) []*T {
		var res []*T
		for j := range outs[0] {
			var col []*T
			for _, o := range outs {
				col = append(col, o[j])
			}
			res = append(res, peel.Stack(col, 0))
		}
		return res
	}
	check := func(what string, got []*T, lanes func(i int) []*T) {
		t.Helper()
		want := stackLanes([][]*T{lanes(0), lanes(1)})
		for j := range want {
			scanEqual(t, what, got[j], want[j])
		}
	}
	// Both batched.
	check("vmap both", transforms.Vmap2(run)(inits, xss), func(i int) []*T { return oracle(peel.Index(inits, i), peel.Index(xss, i)) })
	// Batched init, shared xs.
	check("vmap init", transforms.Vmap2(run, transforms.InAxes(0, transforms.NoAxis))(inits, scanXs()),
		func(i int) []*T { return oracle(peel.Index(inits, i), scanXs()) })
	// Shared init, batched xs (the carry becomes batched).
	init := f64(0.1, -0.2, 0.3)
	check("vmap xs", transforms.Vmap2(run, transforms.InAxes(transforms.NoAxis, 0))(init, xss),
		func(i int) []*T { return oracle(init, peel.Index(xss, i)) })
	// xs batched along its last axis (the batch dim moves to 1).
	xsLast := peel.MoveAxis(xss, 0, 2) // [4, 3, 2]
	check("vmap xs axis 2", transforms.Vmap2(run, transforms.InAxes(0, 2))(inits, xsLast),
		func(i int) []*T { return oracle(peel.Index(inits, i), peel.Index(xss, i)) })
	// Grad of Vmap and Vmap of Grad.
	a := scanArgsValue()
	loss, want := scanLossWith(scanRunner(false)), scanLossWith(goRunner(false))
	vg := transforms.Vmap(transforms.Grad(loss), transforms.InAxes(map[string]any{"Init": 0, "Xs": transforms.NoAxis, "W": transforms.NoAxis}))(scanArgs{Init: inits, Xs: a.Xs, W: a.W})
	for i := 0; i < 2; i++ {
		g := transforms.Grad(want)(scanArgs{Init: peel.Index(inits, i), Xs: a.Xs, W: a.W})
		near(t, "vmap(grad) init", peel.Index(vg.Init, i).Float64s(), g.Init.Float64s(), 1e-12)
		near(t, "vmap(grad) xs", peel.Index(vg.Xs, i).Float64s(), g.Xs.Float64s(), 1e-12)
	}
}

func TestScanCompile(t *testing.T) {
	run := func(a scanArgs) []*T {
		c, ys := transforms.Scan(func(c, x *T) (*T, []*T) {
			n, ys := scanStep(c, x)
			return peel.Mul(n, a.W), ys
		}, a.Init, a.Xs)
		return append([]*T{c}, ys...)
	}
	a := scanArgsValue()
	got := transforms.Compile(run)(a)
	want := run(a)
	for j := range want {
		scanEqual(t, "compiled", got[j], want[j])
	}
	g := transforms.MakeGraph(run, a).String()
	if n := strings.Count(g, "scan"); n != 1 {
		t.Fatalf("graph holds %d scan equations, want 1:\n%s", n, g)
	}
	for _, op := range []string{"sin", "stack", "concatenate"} {
		if strings.Contains(g, op) {
			t.Fatalf("graph holds a per-step %s outside the scan:\n%s", op, g)
		}
	}
	// A compiled gradient.
	loss, oracle := scanLossWith(scanRunner(false)), scanLossWith(goRunner(false))
	cg := transforms.Compile(transforms.Grad(loss))(a)
	wg := transforms.Grad(oracle)(a)
	near(t, "compiled grad init", cg.Init.Float64s(), wg.Init.Float64s(), 1e-12)
	near(t, "compiled grad xs", cg.Xs.Float64s(), wg.Xs.Float64s(), 1e-12)
	near(t, "compiled grad w", cg.W.Float64s(), wg.W.Float64s(), 1e-12)
}

func TestForiLoop(t *testing.T) {
	body := func(i *T, c *T) *T {
		fi := peel.AsType(i, peel.Float64)
		return peel.Add(peel.Mul(peel.Sin(c), fi), peel.Mul(c, 0.5))
	}
	goLoop := func(lo, hi int, c *T) *T {
		for i := lo; i < hi; i++ {
			c = body(peel.Scalar(int64(i)), c)
		}
		return c
	}
	x := f64(0.3, -1.2)
	for _, b := range [][2]int{{0, 5}, {2, 6}, {-3, 1}, {4, 4}, {5, 2}} {
		lo, hi := b[0], b[1]
		scanEqual(t, "fori", transforms.ForiLoop(lo, hi, body, x), goLoop(lo, hi, x))
		f := func(x *T) *T { return peel.Sum(transforms.ForiLoop(lo, hi, body, x)) }
		w := func(x *T) *T { return peel.Sum(goLoop(lo, hi, x)) }
		near(t, "fori grad", transforms.Grad(f)(x).Float64s(), transforms.Grad(w)(x).Float64s(), 0)
	}
	// A tree carry with an int counter.
	type st struct{ X, K *T }
	got := transforms.ForiLoop(0, 3, func(i *T, s st) st {
		return st{X: peel.Mul(s.X, 2.0), K: peel.Add(s.K, i)}
	}, st{X: f64(1), K: peel.Scalar(int64(10))})
	if got.X.Item() != 8 || got.K.Item() != 13 {
		t.Fatalf("tree fori: %v, %v, want 8, 13", got.X.Item(), got.K.Item())
	}
}

func TestScanLengthOption(t *testing.T) {
	// No xs leaves: Length gives the steps.
	c, ys := transforms.Scan(func(c *T, _ struct{}) (*T, *T) { return peel.Mul(c, 2.0), c }, f64(1), struct{}{}, transforms.Length(3))
	scanEqual(t, "length carry", c, f64(8))
	scanEqual(t, "length ys", ys, peel.FromFloat64s([]float64{1, 2, 4}, 3, 1))
	// Zero steps.
	c0, ys0 := transforms.Scan(scanStep, f64(1, 2, 3), peel.Zeros(peel.Float64, 0, 3))
	scanEqual(t, "zero-length carry", c0, f64(1, 2, 3))
	if s := ys0[1].Shape(); len(s) != 2 || s[0] != 0 || s[1] != 3 {
		t.Fatalf("zero-length ys shape %v", s)
	}
}

func TestScanErrors(t *testing.T) {
	ident := func(c *T, x scanIn) (*T, *T) { return c, x.A }
	wantError(t, func() {
		transforms.Scan(ident, f64(1), scanIn{A: peel.Zeros(peel.Float64, 3, 2), B: peel.Zeros(peel.Float64, 4)})
	}, "leading size", "xs leaf .B", "xs leaf .A")
	wantError(t, func() {
		transforms.Scan(scanStep, f64(1, 2, 3), scanXs(), transforms.Length(5))
	}, "Length")
	wantError(t, func() {
		transforms.Scan(func(c *T, x *T) (*T, *T) { return peel.AsType(c, peel.Float32), x }, f64(1), f64(1, 2))
	}, "carry", "f32[1]", "f64[1]")
	wantError(t, func() {
		transforms.Scan(func(c scanCarry, x *T) (scanCarry, *T) {
			return scanCarry{H: peel.Concat([]*T{c.H, c.H}, 0), N: c.N}, x
		}, scanCarry{H: f64(1), N: peel.Scalar(int64(0))}, f64(1, 2))
	}, "carry path .H")
	wantError(t, func() {
		transforms.Scan(func(c []*T, x *T) ([]*T, *T) { return append(c, x), x }, []*T{f64(1)}, f64(1, 2))
	}, "structure")
	wantError(t, func() { transforms.Scan(scanStep, f64(1), peel.Scalar(1.0)) }, "scalar")
	wantError(t, func() {
		transforms.Scan(func(c *T, _ struct{}) (*T, *T) { return c, c }, f64(1), struct{}{})
	}, "Length")
	wantError(t, func() {
		transforms.Scan(func(c *T, x *T) (*T, *T) { return nil, x }, f64(1), f64(1, 2))
	}, "nil")
	wantError(t, func() {
		transforms.ForiLoop(0, 3, func(i *T, c *T) *T { return peel.AsType(i, peel.Float64) }, f64(1, 2))
	}, "carry")
}

// TestScanStagedDerivatives: a gradient is a forward scan (stacking the
// residuals) and a reverse scan of the transposed body, a JVP a scan and
// a scan_lin: no step is unrolled.
func TestScanStagedDerivatives(t *testing.T) {
	a := scanArgsValue()
	for _, rev := range []bool{false, true} {
		loss := scanLossWith(scanRunner(rev))
		g := transforms.MakeGraph(transforms.Grad(loss), a).String()
		if n := strings.Count(g, "= scan["); n != 2 {
			t.Fatalf("gradient graph holds %d scans, want 2:\n%s", n, g)
		}
		if strings.Contains(g, "sin") || strings.Contains(g, "slice") {
			t.Fatalf("gradient graph unrolls a step:\n%s", g)
		}
		tan := scanArgsValue()
		j := transforms.MakeGraph(func(a scanArgs) *T { _, d := transforms.JVP(loss, a, tan); return d }, a).String()
		if strings.Count(j, "= scan[") != 1 || strings.Count(j, "= scan_lin[") != 1 {
			t.Fatalf("JVP graph: want one scan and one scan_lin:\n%s", j)
		}
		// Compiled JVP and gradient against the Go loop's.
		oracle := scanLossWith(goRunner(rev))
		cj := transforms.Compile(func(a scanArgs) *T { _, d := transforms.JVP(loss, a, tan); return d })(a)
		_, wj := transforms.JVP(oracle, a, tan)
		near(t, "compiled jvp", cj.Float64s(), wj.Float64s(), 1e-12)
		scanArgsEqual(t, "compiled grad", transforms.Compile(transforms.Grad(loss))(a), transforms.Grad(oracle)(a), 1e-12)
	}
}

func TestScanJacobians(t *testing.T) {
	x := f64(0.1, -0.2, 0.3)
	f := func(init *T) *T {
		c, ys := transforms.Scan(scanStep, init, scanXs(), peel.Reverse())
		return peel.Add(c, peel.Sum(ys[1], 0))
	}
	w := func(init *T) *T {
		c, ys := goScan(scanStep, init, scanXs(), true)
		return peel.Add(c, peel.Sum(ys[1], 0))
	}
	near(t, "jacrev", transforms.Jacrev(f)(x).Float64s(), transforms.Jacrev(w)(x).Float64s(), 1e-14)
	near(t, "jacfwd", transforms.Jacfwd(f)(x).Float64s(), transforms.Jacfwd(w)(x).Float64s(), 1e-14)
}

// TestScanGradOfVmap: the batched scan_lin is transposed.
func TestScanGradOfVmap(t *testing.T) {
	inits := peel.FromFloat64s([]float64{0.1, -0.2, 0.3, 1, 2, -3}, 2, 3)
	a := scanArgsValue()
	loss, want := scanLossWith(scanRunner(false)), scanLossWith(goRunner(false))
	lanes := func(l func(scanArgs) *T) func(*T) *T {
		return func(inits *T) *T {
			return peel.Sum(transforms.Vmap(func(init *T) *T { return l(scanArgs{Init: init, Xs: a.Xs, W: a.W}) })(inits))
		}
	}
	near(t, "grad(vmap)", transforms.Grad(lanes(loss))(inits).Float64s(), transforms.Grad(lanes(want))(inits).Float64s(), 1e-14)
}

// TestScanNestedAndCustom: a scan inside a scan's body, and a CustomVJP
// in the body (its JVP holds custom_vjp_lin: the step-by-step route).
func TestScanNestedAndCustom(t *testing.T) {
	xs := scanXs()
	inner := func(c, x *T) (*T, *T) {
		r, _ := transforms.Scan(func(h, e *T) (*T, struct{}) { return peel.Add(peel.Mul(peel.Sin(h), e), h), struct{}{} }, c, x)
		return r, peel.Sum(r)
	}
	nested := func(init *T) *T {
		c, ys := transforms.Scan(func(c, x *T) (*T, *T) {
			// The inner scan runs over x's elements on a scalar carry.
			r, y := inner(peel.Sum(c), x)
			return peel.Mul(c, r), y
		}, init, xs)
		return peel.Add(peel.Sum(c), peel.Sum(ys))
	}
	goNested := func(init *T) *T {
		c := init
		var ys []*T
		for i := 0; i < xs.Shape()[0]; i++ {
			h := peel.Sum(c)
			x := peel.Index(xs, i)
			for k := 0; k < x.Shape()[0]; k++ {
				h = peel.Add(peel.Mul(peel.Sin(h), peel.Index(x, k)), h)
			}
			c = peel.Mul(c, h)
			ys = append(ys, peel.Sum(h))
		}
		return peel.Add(peel.Sum(c), peel.Sum(peel.Stack(ys, 0)))
	}
	x := f64(0.1, -0.2, 0.3)
	near(t, "nested", nested(x).Float64s(), goNested(x).Float64s(), 0)
	near(t, "nested grad", transforms.Grad(nested)(x).Float64s(), transforms.Grad(goNested)(x).Float64s(), 1e-13)

	// A straight-through round: its gradient is the identity's.
	st := transforms.CustomVJP(peel.Round, func(x *T) (*T, struct{}) { return peel.Round(x), struct{}{} }, func(_ struct{}, ct *T) *T { return ct })
	body := func(c, x *T) (*T, *T) { n := peel.Mul(st(peel.Mul(c, 3.0)), x); return n, n }
	f := func(init *T) *T { c, ys := transforms.Scan(body, init, xs); return peel.Add(peel.Sum(c), peel.Sum(ys)) }
	w := func(init *T) *T {
		c, ys := goScan(func(c, x *T) (*T, []*T) { n, y := body(c, x); return n, []*T{y} }, init, xs, false)
		return peel.Add(peel.Sum(c), peel.Sum(ys[0]))
	}
	near(t, "custom in body", f(x).Float64s(), w(x).Float64s(), 0)
	near(t, "custom in body grad", transforms.Grad(f)(x).Float64s(), transforms.Grad(w)(x).Float64s(), 0)
}

// TestScanMoreCompositions: Vmap of a JVP (a batched scan_lin), Hessian
// (forward over reverse), a batched captured tensor, a zero-length
// gradient, a compiled Vmap, and an int carry beside a float one.
func TestScanMoreCompositions(t *testing.T) {
	a := scanArgsValue()
	loss, oracle := scanLossWith(scanRunner(true)), scanLossWith(goRunner(true))
	// Vmap over tangents of a JVP.
	tans := peel.FromFloat64s([]float64{1, 0, 0, 0, 1, 0.5}, 2, 3)
	jv := func(l func(scanArgs) *T) func(*T) *T {
		return func(tn *T) *T {
			_, d := transforms.JVP(l, a, scanArgs{Init: tn, Xs: peel.ZerosLike(a.Xs), W: peel.ZerosLike(a.W)})
			return d
		}
	}
	near(t, "vmap(jvp)", transforms.Vmap(jv(loss))(tans).Float64s(), transforms.Vmap(jv(oracle))(tans).Float64s(), 1e-14)
	// Hessian with respect to init.
	hi := func(l func(scanArgs) *T) func(*T) *T {
		return func(init *T) *T { return l(scanArgs{Init: init, Xs: a.Xs, W: a.W}) }
	}
	near(t, "hessian", transforms.Hessian(hi(loss))(a.Init).Float64s(), transforms.Hessian(hi(oracle))(a.Init).Float64s(), 1e-12)
	// A captured tensor batched by an outer Vmap.
	ws := peel.FromFloat64s([]float64{0.9, 1.1, -0.7, 0.2, 0.3, 0.4}, 2, 3)
	byW := func(l func(scanArgs) *T) func(*T) *T {
		return func(w *T) *T { return l(scanArgs{Init: a.Init, Xs: a.Xs, W: w}) }
	}
	near(t, "vmap captured", transforms.Vmap(byW(loss))(ws).Float64s(), transforms.Vmap(byW(oracle))(ws).Float64s(), 1e-14)
	near(t, "vmap(grad) captured", transforms.Vmap(transforms.Grad(byW(loss)))(ws).Float64s(), transforms.Vmap(transforms.Grad(byW(oracle)))(ws).Float64s(), 1e-14)
	// Zero steps: the gradient of the carry is the identity's.
	z := func(init *T) *T {
		c, _ := transforms.Scan(scanStep, init, peel.Zeros(peel.Float64, 0, 3))
		return peel.Sum(peel.Mul(c, c))
	}
	near(t, "zero-length grad", transforms.Grad(z)(a.Init).Float64s(), peel.Mul(a.Init, 2.0).Float64s(), 0)
	// A compiled Vmap.
	inits := peel.FromFloat64s([]float64{0.1, -0.2, 0.3, 1, 2, -3}, 2, 3)
	run := func(init *T) *T { c, _ := transforms.Scan(scanStep, init, scanXs(), peel.Reverse()); return c }
	goRun := func(init *T) *T { c, _ := goScan(scanStep, init, scanXs(), true); return c }
	near(t, "compiled vmap", transforms.Compile(transforms.Vmap(run))(inits).Float64s(),
		peel.Stack([]*T{goRun(peel.Index(inits, 0)), goRun(peel.Index(inits, 1))}, 0).Float64s(), 0)
	// An int carry beside a float one, differentiated.
	counted := func(init *T) *T {
		c, _ := transforms.Scan(func(c scanCarry, x *T) (scanCarry, struct{}) {
			k := peel.AsType(c.N, peel.Float64)
			return scanCarry{H: peel.Add(peel.Mul(peel.Sin(c.H), x), k), N: peel.Add(c.N, peel.Scalar(int64(1)))}, struct{}{}
		}, scanCarry{H: init, N: peel.Scalar(int64(0))}, scanXs())
		return peel.Sum(c.H)
	}
	goCounted := func(init *T) *T {
		h := init
		for i := 0; i < 4; i++ {
			h = peel.Add(peel.Mul(peel.Sin(h), peel.Index(scanXs(), i)), float64(i))
		}
		return peel.Sum(h)
	}
	near(t, "int carry", counted(a.Init).Float64s(), goCounted(a.Init).Float64s(), 0)
	near(t, "int carry grad", transforms.Grad(counted)(a.Init).Float64s(), transforms.Grad(goCounted)(a.Init).Float64s(), 0)
}

// TestScanGradOptions: the gradient options and forms around a scan.
func TestScanGradOptions(t *testing.T) {
	a := scanArgsValue()
	loss, oracle := scanLossWith(scanRunner(false)), scanLossWith(goRunner(false))
	want := transforms.Grad(oracle)(a)
	scanArgsEqual(t, "compile backward", transforms.Grad(loss, transforms.CompileBackward())(a), want, 1e-14)
	scanArgsEqual(t, "remat", transforms.Grad(loss, transforms.Remat(transforms.NothingSaveable))(a), want, 1e-14)
	scanArgsEqual(t, "checkpoint", transforms.Grad(transforms.Checkpoint(loss, transforms.NothingSaveable))(a), want, 1e-14)
	_, vjp := transforms.VJP(loss, a)
	scanArgsEqual(t, "vjp", vjp(peel.Scalar(1.0)), want, 1e-14)
}

// TestScanLocalMutation: a body writing into a tensor of its own.
func TestScanLocalMutation(t *testing.T) {
	body := func(c, x *T) (*T, *T) {
		d := peel.Mul(c, 1.0)
		peel.AddInPlace(d, x)
		return peel.Mul(peel.Sin(d), c), d
	}
	f := func(init *T) *T {
		c, ys := transforms.Scan(body, init, scanXs())
		return peel.Add(peel.Sum(c), peel.Sum(ys))
	}
	w := func(init *T) *T {
		c, ys := goScan(func(c, x *T) (*T, []*T) { n, y := body(c, x); return n, []*T{y} }, init, scanXs(), false)
		return peel.Add(peel.Sum(c), peel.Sum(ys[0]))
	}
	init := f64(0.1, -0.2, 0.3)
	near(t, "mutation", f(init).Float64s(), w(init).Float64s(), 0)
	near(t, "mutation grad", transforms.Grad(f)(init).Float64s(), transforms.Grad(w)(init).Float64s(), 1e-14)
	near(t, "compiled mutation", transforms.Compile(f)(init).Float64s(), w(init).Float64s(), 1e-14)
}

// A cumulative sum: the carry is the running total, each y the total so
// far.
func ExampleScan() {
	xs := peel.FromFloat64s([]float64{1, 2, 3, 4})
	total, sums := transforms.Scan(func(c, x *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
		s := peel.Add(c, x)
		return s, s
	}, peel.Scalar(0.0), xs)
	fmt.Println(total.Item(), sums.Float64s())
	// Output: 10 [1 3 6 10]
}

// x ↦ x·2ⁿ by a loop of n steps, and its derivative.
func ExampleForiLoop() {
	double := func(x *peel.Tensor) *peel.Tensor {
		return transforms.ForiLoop(0, 3, func(_ *peel.Tensor, c *peel.Tensor) *peel.Tensor { return peel.Mul(c, 2.0) }, x)
	}
	fmt.Println(double(peel.Scalar(1.5)).Item(), transforms.Grad(double)(peel.Scalar(1.5)).Item())
	// Output: 12 8
}

// unrollXs is a length-7 xs: 3 does not divide it.
func unrollXs() *T {
	v := make([]float64, 21)
	for i := range v {
		v[i] = 0.3*float64(i%5) - 0.6 + 0.05*float64(i)
	}
	return peel.FromFloat64s(v, 7, 3)
}

func unrollArgs() scanArgs {
	return scanArgs{Init: f64(0.1, -0.2, 0.3), Xs: unrollXs(), W: f64(0.9, 1.1, -0.7)}
}

func unrollRunner(rev bool, n int) func(f func(c, x *T) (*T, []*T), init, xs *T) (*T, []*T) {
	return func(f func(c, x *T) (*T, []*T), init, xs *T) (*T, []*T) {
		opts := []peel.ScanOption{transforms.Unroll(n)}
		if rev {
			opts = append(opts, peel.Reverse())
		}
		return transforms.Scan(f, init, xs, opts...)
	}
}

// TestScanUnroll: Unroll(3) (two iterations of 3 steps and a remainder
// of 1) and Unroll(7) (one body) compute what Unroll(1) does, eagerly,
// under JVP, Grad, Vmap and Compile, in both directions. The primal
// steps are the same ops in the same order, so eager values are equal
// bit for bit; derivatives sum the captured weight's cotangents in
// another grouping, so they are compared to 1e-13.
func TestScanUnroll(t *testing.T) {
	a := unrollArgs()
	tan := scanArgs{Init: f64(1, 0.5, -1), Xs: peel.OnesLike(a.Xs), W: f64(0, 1, 0.25)}
	inits := peel.FromFloat64s([]float64{0.1, -0.2, 0.3, 1, 2, -3}, 2, 3)
	vlanes := func(l func(scanArgs) *T) func(*T) *T {
		return func(init *T) *T { return l(scanArgs{Init: init, Xs: a.Xs, W: a.W}) }
	}
	for _, rev := range []bool{false, true} {
		base := scanLossWith(unrollRunner(rev, 1))
		oracle := scanLossWith(goRunner(rev))
		scanEqual(t, "unroll 1 vs loop", base(a), oracle(a))
		for _, n := range []int{3, 7, 10} {
			what := fmt.Sprintf("reverse %v unroll %d", rev, n)
			loss := scanLossWith(unrollRunner(rev, n))
			scanEqual(t, what+" loss", loss(a), base(a))
			// Every y and the carry.
			run := func(r func(f func(c, x *T) (*T, []*T), init, xs *T) (*T, []*T)) []*T {
				c, ys := r(scanStep, a.Init, a.Xs)
				return append([]*T{c}, ys...)
			}
			got, want := run(unrollRunner(rev, n)), run(unrollRunner(rev, 1))
			for j := range want {
				scanEqual(t, what+" results", got[j], want[j])
			}
			_, d := transforms.JVP(loss, a, tan)
			_, wd := transforms.JVP(base, a, tan)
			near(t, what+" jvp", d.Float64s(), wd.Float64s(), 1e-13)
			scanArgsEqual(t, what+" grad", transforms.Grad(loss)(a), transforms.Grad(base)(a), 1e-13)
			// Batched, the ys come back in another physical layout, which
			// the loss's sum may reduce in another order.
			near(t, what+" vmap", transforms.Vmap(vlanes(loss))(inits).Float64s(), transforms.Vmap(vlanes(base))(inits).Float64s(), 1e-14)
			near(t, what+" vmap(grad)", transforms.Vmap(transforms.Grad(vlanes(loss)))(inits).Float64s(),
				transforms.Vmap(transforms.Grad(vlanes(base)))(inits).Float64s(), 1e-13)
			near(t, what+" compiled", transforms.Compile(loss)(a).Float64s(), base(a).Float64s(), 1e-14)
			scanArgsEqual(t, what+" compiled grad", transforms.Compile(transforms.Grad(loss))(a), transforms.Grad(base)(a), 1e-13)
		}
	}
}

// TestScanUnrollGraph: Unroll(3) on 7 steps is a scan of 2 iterations
// and a scan of 1 whose bodies hold 3 and 1 copies of f; Unroll(7) one
// scan of a single iteration; Unroll(1) the plain scan.
func TestScanUnrollGraph(t *testing.T) {
	a := unrollArgs()
	var copies []int
	count := func(c, x *T) (*T, []*T) {
		copies[len(copies)-1]++
		return scanStep(c, x)
	}
	for _, tc := range []struct {
		n      int
		scans  []string
		copies []int
	}{
		{1, []string{"scan[length 7]"}, []int{1}},
		{3, []string{"scan[length 2]", "scan[length 1]"}, []int{3, 1}},
		{7, []string{"scan[length 1]"}, []int{7}},
		{100, []string{"scan[length 1]"}, []int{7}},
	} {
		copies = []int{0}
		g := transforms.MakeGraph(func(a scanArgs) *T {
			c, ys := transforms.Scan(func(c, x *T) (*T, []*T) {
				if copies[len(copies)-1] == tc.n {
					copies = append(copies, 0)
				}
				return count(c, x)
			}, a.Init, a.Xs, transforms.Unroll(tc.n))
			return peel.Add(peel.Sum(c), peel.Sum(ys[1]))
		}, a).String()
		if n := strings.Count(g, "= scan["); n != len(tc.scans) {
			t.Fatalf("Unroll(%d): %d scans, want %d:\n%s", tc.n, n, len(tc.scans), g)
		}
		for _, s := range tc.scans {
			if !strings.Contains(g, s) {
				t.Fatalf("Unroll(%d): no %s:\n%s", tc.n, s, g)
			}
		}
		if fmt.Sprint(copies) != fmt.Sprint(tc.copies) {
			t.Fatalf("Unroll(%d): f traced %v times per body, want %v", tc.n, copies, tc.copies)
		}
	}
}

// TestScanUnrollEdges: no xs leaves (Length), zero steps, tree ys, an
// int carry, and the option's errors.
func TestScanUnrollEdges(t *testing.T) {
	double := func(c *T, _ struct{}) (*T, *T) { return peel.Mul(c, 2.0), c }
	c, ys := transforms.Scan(double, f64(1), struct{}{}, transforms.Length(5), transforms.Unroll(2))
	scanEqual(t, "length carry", c, f64(32))
	scanEqual(t, "length ys", ys, peel.FromFloat64s([]float64{1, 2, 4, 8, 16}, 5, 1))
	c0, ys0 := transforms.Scan(scanStep, f64(1, 2, 3), peel.Zeros(peel.Float64, 0, 3), transforms.Unroll(4))
	scanEqual(t, "zero-length carry", c0, f64(1, 2, 3))
	if s := ys0[1].Shape(); len(s) != 2 || s[0] != 0 || s[1] != 3 {
		t.Fatalf("zero-length ys shape %v", s)
	}
	init := scanCarry{H: f64(1, 2), N: peel.Scalar(int64(0))}
	xs := scanIn{A: peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 5, 2), B: f64(0.5, -1, 2, 0.25, 1)}
	f := func(c scanCarry, x scanIn) (scanCarry, map[string]*T) {
		h := peel.Add(peel.Mul(c.H, x.B), x.A)
		return scanCarry{H: h, N: peel.Add(c.N, peel.Scalar(int64(1)))}, map[string]*T{"h": h, "b": peel.Mul(x.B, 2.0)}
	}
	for _, rev := range []bool{false, true} {
		opts := []peel.ScanOption{peel.Reverse()}
		if !rev {
			opts = nil
		}
		wc, wys := transforms.Scan(f, init, xs, opts...)
		gc, gys := transforms.Scan(f, init, xs, append(opts, transforms.Unroll(2))...)
		scanEqual(t, "tree H", gc.H, wc.H)
		if gc.N.Item() != wc.N.Item() || gc.N.DType() != peel.Int64 {
			t.Fatalf("tree N %v (%v), want %v", gc.N.Item(), gc.N.DType(), wc.N.Item())
		}
		scanEqual(t, "tree ys h", gys["h"], wys["h"])
		scanEqual(t, "tree ys b", gys["b"], wys["b"])
	}
	wantError(t, func() { transforms.Scan(scanStep, f64(1, 2, 3), scanXs(), transforms.Unroll(0)) }, "Unroll", "at least 1")
	// A carry that changes type at a later step of the body.
	wantError(t, func() {
		k := 0
		transforms.Scan(func(c *T, x *T) (*T, *T) {
			if k++; k == 2 {
				return peel.AsType(c, peel.Float32), x
			}
			return c, x
		}, f64(1), f64(1, 2, 3), transforms.Unroll(3))
	}, "carry", "f32[1]", "f64[1]")
	// A y that changes type at a later step.
	wantError(t, func() {
		k := 0
		transforms.Scan(func(c *T, x *T) (*T, *T) {
			if k++; k == 2 {
				return c, peel.AsType(x, peel.Float32)
			}
			return c, x
		}, f64(1), f64(1, 2, 3), transforms.Unroll(3))
	}, "y", "f32[]", "f64[]")
}

// TestScanHoistedResiduals: a residual the body's derivative needs that
// is the same at every step (a captured matrix, a constant made inside
// the body) is kept once, not stacked per step, and one that is an xs
// slice is read from xs; the derivatives stay the Go loop's.
func TestScanHoistedResiduals(t *testing.T) {
	type args struct{ W, Xs, Init *T }
	a := args{
		W:    peel.FromFloat64s([]float64{0.5, -0.3, 0.2, 0.1, 0.4, -0.6, 0.7, 0.2, -0.1}, 3, 3),
		Xs:   peel.FromFloat64s([]float64{0.5, -0.25, 2, -1.5, 0.25, -3, 1, 1, -1, 0.75, 0, 0.125, 0.3, -0.2, 0.9}, 5, 3),
		Init: f64(0.1, -0.2, 0.3),
	}
	step := func(w *T) func(c, x *T) (*T, *T) {
		return func(c, x *T) (*T, *T) {
			k := peel.FromFloat64s([]float64{1.5, -0.5, 0.25}) // a constant of the body
			n := peel.Tanh(peel.Add(peel.MatMul(peel.Mul(c, k), w), peel.Mul(x, c)))
			return n, peel.Sum(peel.Mul(n, x))
		}
	}
	loss := func(a args) *T {
		c, ys := transforms.Scan(step(a.W), a.Init, a.Xs)
		return peel.Add(peel.Sum(peel.Mul(c, c)), peel.Sum(ys))
	}
	oracle := func(a args) *T {
		c, f := a.Init, step(a.W)
		var ys []*T
		for i := 0; i < 5; i++ {
			var y *T
			c, y = f(c, peel.Index(a.Xs, i))
			ys = append(ys, y)
		}
		return peel.Add(peel.Sum(peel.Mul(c, c)), peel.Sum(peel.Stack(ys, 0)))
	}
	g := transforms.MakeGraph(transforms.Grad(loss), a).String()
	if strings.Contains(g, "f64[5,3,3]") {
		t.Fatalf("the gradient stacks the captured matrix per step:\n%s", g)
	}
	eq := func(what string, got, want args, tol float64) {
		t.Helper()
		near(t, what+" w", got.W.Float64s(), want.W.Float64s(), tol)
		near(t, what+" xs", got.Xs.Float64s(), want.Xs.Float64s(), tol)
		near(t, what+" init", got.Init.Float64s(), want.Init.Float64s(), tol)
	}
	want := transforms.Grad(oracle)(a)
	eq("grad", transforms.Grad(loss)(a), want, 1e-13)
	eq("compiled grad", transforms.Compile(transforms.Grad(loss))(a), want, 1e-13)
	hv := func(l func(args) *T) func(args) *T {
		return func(a args) *T { g := transforms.Grad(l)(a); return peel.Add(peel.Sum(g.W), peel.Sum(g.Xs)) }
	}
	eq("grad of grad", transforms.Grad(hv(loss))(a), transforms.Grad(hv(oracle))(a), 1e-12)
	ws := peel.Stack([]*T{a.W, peel.Mul(a.W, -0.5)}, 0)
	byW := func(l func(args) *T) func(*T) *T {
		return func(w *T) *T { return l(args{W: w, Xs: a.Xs, Init: a.Init}) }
	}
	near(t, "vmap(grad) over the captured matrix", transforms.Vmap(transforms.Grad(byW(loss)))(ws).Float64s(),
		transforms.Vmap(transforms.Grad(byW(oracle)))(ws).Float64s(), 1e-13)
	near(t, "grad(vmap) over the captured matrix", transforms.Grad(func(ws *T) *T { return peel.Sum(transforms.Vmap(byW(loss))(ws)) })(ws).Float64s(),
		transforms.Grad(func(ws *T) *T { return peel.Sum(transforms.Vmap(byW(oracle))(ws)) })(ws).Float64s(), 1e-13)
	near(t, "hessian in the captured matrix", transforms.Hessian(byW(loss))(a.W).Float64s(), transforms.Hessian(byW(oracle))(a.W).Float64s(), 1e-12)
}

// TestScanCompiledBody: a compiled program runs a scan's body as a
// program of its own, each step taking over the memory of the carries
// the step before made. Bodies whose results alias one another (the
// carry returned as a y too, a y that is a view of the carry, a carry
// passed through, carries swapped) or write in place must give the
// loop's values, call after call.
func TestScanCompiledBody(t *testing.T) {
	type two struct{ A, B *T }
	xs := unrollXs()
	bodies := map[string]func(c two, x *T) (two, []*T){
		"carry is a y": func(c two, x *T) (two, []*T) {
			n := peel.Add(peel.Mul(c.A, x), 1.0)
			return two{n, peel.Mul(c.B, 0.5)}, []*T{n, c.B}
		},
		"carry is a y, through a cond": func(c two, x *T) (two, []*T) {
			v := transforms.Cond(peel.Greater(peel.Sum(x), 0.0), func(in []*T) *T { return peel.Sin(in[0]) }, func(in []*T) *T { return peel.Cos(in[0]) }, []*T{c.A})
			n := peel.Tanh(v)
			return two{n, c.B}, []*T{n}
		},
		"y views the carry": func(c two, x *T) (two, []*T) {
			n := peel.Sin(peel.Add(c.A, x))
			return two{n, peel.Add(c.B, n)}, []*T{peel.Reshape(n, 3, 1), peel.Index(n, 1)}
		},
		"carry passed through": func(c two, x *T) (two, []*T) {
			return two{c.A, peel.Add(c.B, peel.Mul(c.A, x))}, []*T{c.A, c.B}
		},
		"carries swapped": func(c two, x *T) (two, []*T) {
			return two{c.B, peel.Add(c.A, x)}, []*T{c.A}
		},
		"in place": func(c two, x *T) (two, []*T) {
			d := peel.Mul(c.A, 1.0)
			peel.AddInPlace(d, x)
			peel.MulInPlace(d, peel.Sin(c.B))
			return two{d, peel.Add(c.B, d)}, []*T{d, c.A}
		},
	}
	init := two{f64(0.1, -0.2, 0.3), f64(1, 0.5, -0.25)}
	for name, f := range bodies {
		run := func(init two) []*T {
			c, ys := transforms.Scan(f, init, xs)
			return append([]*T{c.A, c.B}, ys...)
		}
		oracle := func(init two) []*T {
			c := init
			var per [][]*T
			for i := 0; i < xs.Shape()[0]; i++ {
				var y []*T
				c, y = f(c, peel.Index(xs, i))
				per = append(per, y)
			}
			res := []*T{c.A, c.B}
			for j := range per[0] {
				var col []*T
				for _, y := range per {
					col = append(col, y[j])
				}
				res = append(res, peel.Stack(col, 0))
			}
			return res
		}
		want := oracle(init)
		c := transforms.Compile(run)
		for call := 0; call < 3; call++ {
			got := c(init)
			for j := range want {
				near(t, fmt.Sprintf("%s: call %d result %d", name, call, j), got[j].Float64s(), want[j].Float64s(), 1e-14)
			}
		}
		near(t, name+": the initial carry", init.A.Float64s(), []float64{0.1, -0.2, 0.3}, 0)
		// And its gradient, compiled (a forward and a reverse scan, each
		// with its own program).
		loss := func(l func(two) []*T) func(two) *T {
			return func(c two) *T {
				s := peel.Scalar(0.0)
				for _, r := range l(c) {
					s = peel.Add(s, peel.Sum(peel.Sin(r)))
				}
				return s
			}
		}
		wg := transforms.Grad(loss(oracle))(init)
		cg := transforms.Compile(transforms.Grad(loss(run)))
		for call := 0; call < 2; call++ {
			g := cg(init)
			near(t, name+": compiled grad A", g.A.Float64s(), wg.A.Float64s(), 1e-13)
			near(t, name+": compiled grad B", g.B.Float64s(), wg.B.Float64s(), 1e-13)
		}
	}
}

// TestScanStepRemat checks StepRemat: every policy gives the gradient of
// the plain scan (eagerly, compiled, under Vmap, and differentiated
// again), and NothingSaveable stacks fewer residuals per step than the
// default, which saves every one.
func TestScanStepRemat(t *testing.T) {
	w := ckRandom(21, 4, 4)
	xs := ckRandom(22, 6, 3, 4)
	h0 := ckRandom(23, 3, 4)
	body := func(h, x *T) (*T, *T) {
		z := peel.Tanh(peel.Add(peel.MatMul(h, w), x))
		return peel.Mul(peel.Exp(peel.Mul(z, 0.5)), z), z
	}
	loss := func(opts ...peel.ScanOption) func(*T) *T {
		return func(h0 *T) *T {
			h, ys := transforms.Scan(body, h0, xs, opts...)
			return peel.Add(peel.Sum(peel.Mul(h, h)), peel.Sum(peel.Sin(ys)))
		}
	}
	want := transforms.Grad(loss())(h0).Float64s()
	lanes := peel.Stack([]*T{h0, peel.Mul(h0, 0.5)}, 0)
	wantLanes := transforms.Vmap(transforms.Grad(loss()))(lanes).Float64s()
	dir := ckRandom(24, 3, 4)
	hvp := func(f func(*T) *T) []float64 {
		_, t := transforms.JVP(transforms.Grad(f), h0, dir)
		return t.Float64s()
	}
	wantHVP := hvp(loss())
	stacked := func(rs []transforms.Residual) int {
		n := 0
		for _, r := range rs {
			if len(r.Shape) == 3 && r.Shape[0] == 6 {
				n++
			}
		}
		return n
	}
	base := stacked(transforms.SavedResiduals(loss(), h0))
	for _, c := range ckPolicies[1:] {
		f := loss(transforms.StepRemat(c.policy))
		near(t, c.name+" Grad", transforms.Grad(f)(h0).Float64s(), want, 1e-12)
		near(t, c.name+" Compile(Grad)", transforms.Compile(transforms.Grad(f))(h0).Float64s(), want, 1e-12)
		near(t, c.name+" Vmap(Grad)", transforms.Vmap(transforms.Grad(f))(lanes).Float64s(), wantLanes, 1e-12)
		near(t, c.name+" JVP(Grad)", hvp(f), wantHVP, 1e-10)
		if c.name == "nothing" {
			if got := stacked(transforms.SavedResiduals(f, h0)); got >= base {
				t.Errorf("StepRemat(NothingSaveable) stacks %d residuals per step, the default %d", got, base)
			}
		}
	}
}

// TestScanCompiledAccumulatesInPlace checks that a compiled scan's
// accumulating carry is updated in the memory of the step before at
// every step: each step gives its carry up, and the step's add writes
// into it. (The check of a carry's memory once counted the carry it was
// given up as shared, so every other step allocated a new one.)
func TestScanCompiledAccumulatesInPlace(t *testing.T) {
	const steps = 100
	xs := peel.AsType(ckRandom(31, steps, 32, 128), peel.Float32)
	acc := func(xs *T) *T {
		a, _ := transforms.Scan(func(a, x *T) (*T, struct{}) {
			return peel.Add(a, peel.MatMul(peel.Transpose(x, 1, 0), x)), struct{}{}
		}, peel.Zeros(peel.Float32, 128, 128), xs)
		return a
	}
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop run states, which then allocate their arenas")
	}
	c := transforms.Compile(acc)
	near(t, "accumulation", peel.AsType(c(xs), peel.Float64).Float64s(), peel.AsType(acc(xs), peel.Float64).Float64s(), 1e-3)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c(xs)
	runtime.ReadMemStats(&m1)
	// One 64 KiB carry per step would be 6.4 MiB; the products are made
	// in the body's arena.
	if b := m1.TotalAlloc - m0.TotalAlloc; b > steps*128*128*4/4 {
		t.Errorf("a compiled call allocates %d bytes: the accumulator is not updated in place", b)
	}
}

// TestSharesMemory: a loop donates a carry to its next step unless it
// shares memory with another value of the step (sharesMemory): a tensor
// with itself and its views, and two storages over one host slice, do;
// distinct tensors, small or large, do not. (With the CPU backend's
// buffers pointers, no longer slices, a check by reflection took every
// pair as sharing, and no carry was donated.)
func TestSharesMemory(t *testing.T) {
	be := interp.DefaultBackend()
	d := make([]float64, 8)
	adopt := func(d []float64) *T {
		return interp.NewConcrete(be, backend.Array{Buf: backend.FromOwnedHost(be, d), Shape: []int{len(d)}})
	}
	small, large := peel.Zeros(peel.Float32, 4), peel.Zeros(peel.Float32, 128, 128)
	over := adopt(d)
	for _, c := range []struct {
		name string
		a, b *T
		want bool
	}{
		{"a tensor and itself", small, small, true},
		{"a tensor and its view", large, peel.Transpose(large), true},
		{"two storages over one slice", over, adopt(d), true},
		{"two storages over parts of one slice", adopt(d[:5]), adopt(d[4:]), true},
		{"two storages over disjoint parts", adopt(d[:4]), adopt(d[4:]), false},
		{"two small tensors", small, peel.Zeros(peel.Float32, 4), false},
		{"two large tensors", large, peel.Ones(peel.Float32, 128, 128), false},
	} {
		if got := transforms.SharesMemory(c.a, c.b); got != c.want {
			t.Errorf("%s: sharesMemory = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestLoopTooLarge: a loop whose stacked results cannot be allocated
// panics with the "too large" *peel.Error every other size gets
// (backend.CheckedSize, backend.AllocSize), eagerly and under every
// transform, before any step runs; it used to fail with a bare
// "makeslice: len out of range" (or "buffer of negative size" under
// Compile).
func TestLoopTooLarge(t *testing.T) {
	huge := transforms.Length(1 << 62)
	scalarYs := func(x *T) *T {
		_, ys := transforms.Scan(func(c *T, _ struct{}) (*T, *T) { return peel.Add(c, 1.0), c }, x, struct{}{}, huge)
		return peel.Sum(peel.Mul(ys, ys))
	}
	// ys of [1<<62, 4] elements: the count itself overflows int.
	vectorYs := func(x *T) *T {
		_, ys := transforms.Scan(func(c *T, _ struct{}) (*T, *T) { return c, peel.Mul(c, peel.Ones(peel.Float64, 4)) }, x, struct{}{}, huge)
		return peel.Sum(peel.Mul(ys, ys))
	}
	fori := func(x *T) *T {
		return transforms.ForiLoop(-(1 << 62), 1<<62, func(i, c *T) *T { return peel.Add(c, peel.AsType(i, peel.Float64)) }, x)
	}
	// Each slice's result is [1<<61] (a traced shape, not allocated
	// while tracing); four of them stacked overflow int.
	mapped := func(x *T) *T {
		ys := transforms.Map(func(r *T) *T { return peel.BroadcastTo(peel.Sum(r), 1<<61) }, peel.BroadcastTo(x, 4, 2), 1)
		return peel.Sum(peel.Mul(ys, ys))
	}
	x := peel.Scalar(0.5)
	for _, f := range []struct {
		name string
		f    func(*T) *T
	}{{"scan", scalarYs}, {"scan rank 1", vectorYs}, {"fori", fori}, {"map", mapped}} {
		for _, tr := range []struct {
			name string
			run  func()
		}{
			{"eager", func() { f.f(x) }},
			{"jvp", func() { transforms.JVP(f.f, x, peel.OnesLike(x)) }},
			{"grad", func() { transforms.Grad(f.f)(x) }},
			{"jacfwd", func() { transforms.Jacfwd(f.f)(x) }},
			{"vmap", func() { transforms.Vmap(f.f)(peel.FromFloat64s([]float64{1, 2})) }},
			{"compile", func() { transforms.Compile(f.f)(x) }},
			{"compile(grad)", func() { transforms.Compile(transforms.Grad(f.f))(x) }},
			{"functionalize", func() { transforms.Functionalize(f.f)(x) }},
		} {
			t.Run(f.name+"/"+tr.name, func(t *testing.T) { wantError(t, tr.run, "too large") })
		}
	}
}
