package transforms_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/customop"
	"github.com/peel-ml/peel/transforms"
)

// newtonState is the carry of the cube-root Newton iteration: the
// iterate X and the step count K (int64).
type newtonState struct {
	X, K *T
}

// cubeRoot solves x³ = a by Newton's method with WhileLoop, until
// |x³ - a| < tol (or 100 steps), from x = 1 + a/3 (never 0 for a > 0).
func cubeRoot(a *T, tol float64) newtonState {
	return transforms.WhileLoop(func(s newtonState) *T {
		r := peel.Abs(peel.Sub(peel.Mul(peel.Mul(s.X, s.X), s.X), a))
		return peel.LogicalAnd(peel.Greater(r, tol), peel.Less(s.K, peel.Scalar(int64(100))))
	}, func(s newtonState) newtonState {
		f := peel.Sub(peel.Mul(peel.Mul(s.X, s.X), s.X), a)
		df := peel.Mul(peel.Mul(s.X, s.X), 3.0)
		return newtonState{X: peel.Sub(s.X, peel.Div(f, df)), K: peel.Add(s.K, peel.Scalar(int64(1)))}
	}, newtonState{X: peel.Add(peel.Div(a, 3.0), 1.0), K: peel.Scalar(int64(0))})
}

// goCubeRoot is the oracle: the same iteration as a Go loop on float64s.
func goCubeRoot(a, tol float64) (float64, int) {
	x, k := 1+a/3, 0
	for math.Abs(x*x*x-a) > tol && k < 100 {
		x -= (x*x*x - a) / (3 * x * x)
		k++
	}
	return x, k
}

func TestWhileLoopMatchesGoLoop(t *testing.T) {
	for _, a := range []float64{0.001, 1, 2, 27, 1000, 1e6} {
		s := cubeRoot(peel.Scalar(a), 1e-9)
		x, k := goCubeRoot(a, 1e-9)
		if s.X.Item() != x || int(s.K.Item()) != k {
			t.Fatalf("a=%v: got x=%v k=%v, want x=%v k=%v", a, s.X.Item(), s.K.Item(), x, k)
		}
	}
	// Zero steps: cond false at init.
	got := transforms.WhileLoop(func(x *T) *T { return peel.Less(peel.Sum(x), 0.0) }, func(x *T) *T { return peel.Mul(x, 2.0) }, f64(1, 2))
	near(t, "zero steps", got.Float64s(), []float64{1, 2}, 0)
	// A numeric predicate (true when nonzero): a countdown.
	n := transforms.WhileLoop(func(k *T) *T { return k }, func(k *T) *T { return peel.Sub(k, peel.Scalar(int64(1))) }, peel.Scalar(int64(5)))
	if n.Item() != 0 {
		t.Fatalf("countdown ended at %v", n.Item())
	}
}

// whileGeo multiplies x by w (captured) until its sum reaches limit.
func whileGeo(w *T, limit float64) func(x *T) *T {
	return func(x *T) *T {
		return transforms.WhileLoop(func(x *T) *T { return peel.Less(peel.Sum(x), limit) },
			func(x *T) *T { return peel.Add(peel.Mul(x, w), 0.25) }, x)
	}
}

// goGeo is whileGeo's oracle on concrete values; geoN is its loop with
// the number of steps n fixed (the oracle under a transform, which
// cannot read values), and geoCount the number of steps from x.
func goGeo(w *T, limit float64) func(x *T) *T {
	return func(x *T) *T { return geoN(w, geoCount(w, limit, x))(x) }
}

func geoN(w *T, n int) func(x *T) *T {
	return func(x *T) *T {
		for k := 0; k < n; k++ {
			x = peel.Add(peel.Mul(x, w), 0.25)
		}
		return x
	}
}

func geoCount(w *T, limit float64, x *T) int {
	n := 0
	for ; peel.Sum(x).Item() < limit; n++ {
		x = peel.Add(peel.Mul(x, w), 0.25)
	}
	return n
}

func TestWhileLoopForwardMode(t *testing.T) {
	w := f64(1.5, 1.25)
	x, dx := f64(0.5, 1), f64(1, -0.5)
	f := func(x *T) *T { return peel.Sin(whileGeo(w, 20)(x)) }
	n := geoCount(w, 20, x)
	g := func(x *T) *T { return peel.Sin(geoN(w, n)(x)) }
	y, dy := transforms.JVP(f, x, dx)
	wy, wdy := transforms.JVP(g, x, dx)
	near(t, "jvp primal", y.Float64s(), wy.Float64s(), 0)
	near(t, "jvp tangent", dy.Float64s(), wdy.Float64s(), 1e-14)
	near(t, "jacfwd", transforms.Jacfwd(f)(x).Float64s(), transforms.Jacfwd(g)(x).Float64s(), 1e-14)
	// The tangent of a captured tensor.
	near(t, "jacfwd captured", transforms.Jacfwd(func(w *T) *T { return peel.Sum(whileGeo(w, 20)(x)) })(w).Float64s(),
		transforms.Jacfwd(func(w *T) *T { return peel.Sum(geoN(w, n)(x)) })(w).Float64s(), 1e-13)
	// Compiled forward mode. A concrete tangent: one while over (primal,
	// tangent) carries. A traced tangent: a while for the primals and
	// while_lin (that while) for the tangents.
	cj := transforms.Compile(func(x *T) *T { _, d := transforms.JVP(f, x, dx); return d })
	near(t, "compiled jvp", cj(x).Float64s(), wdy.Float64s(), 1e-14)
	gr := transforms.MakeGraph(func(x *T) *T { y, d := transforms.JVP(f, x, dx); return peel.Add(y, d) }, x).String()
	if strings.Count(gr, "= while[") != 1 || strings.Contains(gr, "while_lin") {
		t.Fatalf("staged JVP graph with a concrete tangent: want one while:\n%s", gr)
	}
	jt := func(a [2]*T) *T { y, d := transforms.JVP(f, a[0], a[1]); return peel.Add(y, d) }
	near(t, "compiled jvp, traced tangent", transforms.Compile(jt)([2]*T{x, dx}).Float64s(), peel.Add(wy, wdy).Float64s(), 1e-14)
	gr = transforms.MakeGraph(jt, [2]*T{x, dx}).String()
	if strings.Count(gr, "= while[") != 1 || strings.Count(gr, "= while_lin[") != 1 {
		t.Fatalf("staged JVP graph with a traced tangent: want one while and one while_lin:\n%s", gr)
	}
	// Newton's root: dx/da = 1/(3x²) (to the solver's tolerance).
	a := peel.Scalar(8.0)
	_, da := transforms.JVP(func(a *T) *T { return cubeRoot(a, 1e-12).X }, a, peel.Scalar(1.0))
	near(t, "d cbrt", []float64{da.Item()}, []float64{1.0 / 12}, 1e-9)
	// Jacfwd of Jacfwd (a second derivative through the loop).
	h := transforms.Jacfwd(func(x *T) *T { return peel.Sum(transforms.Jacfwd(f)(x)) })(x)
	wh := transforms.Jacfwd(func(x *T) *T { return peel.Sum(transforms.Jacfwd(g)(x)) })(x)
	near(t, "jacfwd of jacfwd", h.Float64s(), wh.Float64s(), 1e-12)
}

func TestWhileLoopReverseModeError(t *testing.T) {
	w := f64(1.5, 1.25)
	x := f64(0.5, 1)
	loss := func(x *T) *T { return peel.Sum(whileGeo(w, 20)(x)) }
	msg := []string{"transforms.WhileLoop", "ForiLoop", "Scan", "reverse-mode"}
	wantError(t, func() { transforms.Grad(loss)(x) }, msg...)
	wantError(t, func() {
		_, pb := transforms.VJP(loss, x)
		pb(peel.Scalar(1.0))
	}, msg...)
	wantError(t, func() { transforms.Jacrev(func(x *T) *T { return whileGeo(w, 20)(x) })(x) }, msg...)
	wantError(t, func() { transforms.Hessian(loss)(x) }, msg...)
	wantError(t, func() { transforms.Compile(transforms.Grad(loss))(x) }, msg...)
	wantError(t, func() { transforms.Grad(loss, transforms.CompileBackward())(x) }, msg...)
	wantError(t, func() { transforms.Vmap(transforms.Grad(loss))(peel.Stack([]*T{x, x}, 0)) }, msg...)
	wantError(t, func() {
		transforms.Grad(func(x *T) *T { return peel.Sum(transforms.Vmap(whileGeo(w, 20))(x)) })(peel.Stack([]*T{x, x}, 0))
	}, msg...)
	// A gradient that does not reach the loop is fine.
	g := transforms.Grad(func(x *T) *T {
		_ = whileGeo(w, 20)(peel.StopGradient(x))
		return peel.Sum(peel.Mul(x, x))
	})(x)
	near(t, "grad beside", g.Float64s(), []float64{1, 2}, 0)
}

// TestWhileLoopVmap covers the batching layouts: batched or shared carry
// leaves, a batched captured tensor, and an unbatched or batched
// predicate with lanes finishing at different steps.
func TestWhileLoopVmap(t *testing.T) {
	as := f64(0.001, 1, 27, 1000, 1e6, 5)
	got := transforms.Vmap(func(a *T) newtonState { return cubeRoot(a, 1e-9) })(as)
	ks := map[int]bool{}
	for i, a := range as.Float64s() {
		x, k := goCubeRoot(a, 1e-9)
		ks[k] = true
		if g := peel.Index(got.X, i).Item(); g != x {
			t.Fatalf("lane %d: x=%v want %v", i, g, x)
		}
		if g := peel.Index(got.K, i).Item(); int(g) != k {
			t.Fatalf("lane %d: k=%v want %v", i, g, k)
		}
	}
	if len(ks) < 3 {
		t.Fatalf("the lanes should finish at different steps: %v", ks)
	}

	// An unbatched predicate: a counter decides, only the data is batched.
	type st struct{ X, K *T }
	count := func(x *T) st {
		return transforms.WhileLoop(func(s st) *T { return peel.Less(s.K, peel.Scalar(int64(4))) },
			func(s st) st { return st{X: peel.Add(peel.Sin(s.X), s.X), K: peel.Add(s.K, peel.Scalar(int64(1)))} },
			st{X: x, K: peel.Scalar(int64(0))})
	}
	xs := peel.FromFloat64s([]float64{0.1, 0.2, -0.3, 1, 2, 3}, 3, 2)
	vc := transforms.Vmap(count)(xs)
	for i := 0; i < 3; i++ {
		w := count(peel.Index(xs, i))
		near(t, "unbatched pred", peel.Index(vc.X, i).Float64s(), w.X.Float64s(), 0)
	}
	near(t, "unbatched counter", peel.AsType(vc.K, peel.Float64).Float64s(), []float64{4, 4, 4}, 0)
	g := transforms.MakeGraph(transforms.Vmap(count), xs).String()
	if strings.Count(g, "= while[") != 1 || strings.Contains(g, "any") {
		t.Fatalf("an unbatched predicate should stay one while without a lane mask:\n%s", g)
	}

	// A batched captured tensor, shared initial carry.
	ws := peel.FromFloat64s([]float64{1.5, 1.25, 3, 2, 1.1, 1.05}, 3, 2)
	x0 := f64(0.5, 1)
	vw := transforms.Vmap(func(w *T) *T { return whileGeo(w, 20)(x0) })(ws)
	for i := 0; i < 3; i++ {
		near(t, "batched captured", peel.Index(vw, i).Float64s(), goGeo(peel.Index(ws, i), 20)(x0).Float64s(), 0)
	}
	// Batched carry, shared captured tensor; batch along axis 1.
	w := f64(1.5, 1.25)
	xsT := peel.Transpose(xs) // [2, 3]: lanes along axis 1
	vx := transforms.Vmap(whileGeo(w, 20), transforms.InAxes(1))(xsT)
	for i := 0; i < 3; i++ {
		near(t, "batched carry", peel.Index(vx, i).Float64s(), goGeo(w, 20)(peel.Index(xs, i)).Float64s(), 0)
	}
	// Both batched, and a carry leaf that is shared at first but becomes
	// batched through the body.
	type two struct{ X, Y *T }
	mixed := func(x, w *T) two {
		return transforms.WhileLoop(func(s two) *T { return peel.Less(peel.Sum(s.X), 20.0) },
			func(s two) two { return two{X: peel.Add(peel.Mul(s.X, w), 0.25), Y: peel.Add(s.Y, peel.Sum(s.X))} },
			two{X: x, Y: peel.Scalar(0.0)})
	}
	vm := transforms.Vmap2(mixed)(xs, ws)
	for i := 0; i < 3; i++ {
		wm := mixed(peel.Index(xs, i), peel.Index(ws, i))
		near(t, "mixed X", peel.Index(vm.X, i).Float64s(), wm.X.Float64s(), 0)
		near(t, "mixed Y", []float64{peel.Index(vm.Y, i).Item()}, []float64{wm.Y.Item()}, 1e-15)
	}
	// Vmap of Vmap, and Vmap of JVP and JVP of Vmap.
	as2 := peel.Reshape(as, 2, 3)
	vv := transforms.Vmap(transforms.Vmap(func(a *T) *T { return cubeRoot(a, 1e-9).X }))(as2)
	near(t, "vmap of vmap", vv.Float64s(), peel.Reshape(got.X, 2, 3).Float64s(), 0)
	jv := func(x *T) *T { _, d := transforms.JVP(whileGeo(w, 20), x, peel.OnesLike(x)); return d }
	gj := func(x *T) *T { _, d := transforms.JVP(geoN(w, geoCount(w, 20, x)), x, peel.OnesLike(x)); return d }
	vj := transforms.Vmap(jv)(xs)
	for i := 0; i < 3; i++ {
		near(t, "vmap of jvp", peel.Index(vj, i).Float64s(), gj(peel.Index(xs, i)).Float64s(), 1e-14)
	}
	_, dv := transforms.JVP(transforms.Vmap(whileGeo(w, 20)), xs, peel.OnesLike(xs))
	near(t, "jvp of vmap", dv.Float64s(), vj.Float64s(), 1e-14)
	jf := transforms.Jacfwd(func(x *T) *T { return peel.Sum(transforms.Vmap(whileGeo(w, 20))(x)) })(xs)
	near(t, "jacfwd of vmap", jf.Float64s(), vj.Float64s(), 1e-14)
}

func TestWhileLoopCompile(t *testing.T) {
	var cIns transforms.Inspector
	c := transforms.Compile(func(a *T) newtonState { return cubeRoot(a, 1e-9) }, transforms.Inspect(&cIns))
	for _, a := range []float64{1, 27, 1e6, 0.001} {
		s := c(peel.Scalar(a))
		x, k := goCubeRoot(a, 1e-9)
		if s.X.Item() != x || int(s.K.Item()) != k {
			t.Fatalf("compiled a=%v: x=%v k=%v, want %v %v", a, s.X.Item(), s.K.Item(), x, k)
		}
	}
	if st := cIns.Stats(); st.Misses != 1 || st.Hits != 3 || len(st.GraphBreaks) != 0 {
		t.Fatalf("a data-dependent trip count must not retrace: %+v", st)
	}
	g := transforms.MakeGraph(func(a *T) newtonState { return cubeRoot(a, 1e-9) }, peel.Scalar(2.0)).String()
	if n := strings.Count(g, "= while["); n != 1 {
		t.Fatalf("graph holds %d while equations, want 1:\n%s", n, g)
	}
	if !strings.Contains(g, "cond={ lambda") || !strings.Contains(g, "body={ lambda") {
		t.Fatalf("the while equation should print its graphs:\n%s", g)
	}
	// WhileLoop inside Vmap inside Compile.
	var cvIns transforms.Inspector
	cv := transforms.Compile(transforms.Vmap(func(a *T) newtonState { return cubeRoot(a, 1e-9) }), transforms.Inspect(&cvIns))
	for _, vals := range [][]float64{{1, 8, 1e6}, {0.5, 2000, 3}} {
		s := cv(f64(vals...))
		for i, a := range vals {
			x, k := goCubeRoot(a, 1e-9)
			if peel.Index(s.X, i).Item() != x || int(peel.Index(s.K, i).Item()) != k {
				t.Fatalf("compiled vmap lane %d (a=%v): x=%v k=%v, want %v %v", i, a, peel.Index(s.X, i).Item(), peel.Index(s.K, i).Item(), x, k)
			}
		}
	}
	if st := cvIns.Stats(); st.Misses != 1 {
		t.Fatalf("compiled vmap retraced: %+v", st)
	}
}

func TestWhileLoopNested(t *testing.T) {
	// Cond inside the body: halve when even-ish, 3x+1 otherwise
	// (Collatz on float64 integers), counting steps.
	type st struct{ N, K *T }
	collatz := func(n *T) st {
		return transforms.WhileLoop(func(s st) *T { return peel.Greater(s.N, 1.0) }, func(s st) st {
			even := peel.Equal(peel.Mod(s.N, 2.0), 0.0)
			next := transforms.Cond(even, func(n *T) *T { return peel.Div(n, 2.0) }, func(n *T) *T { return peel.Add(peel.Mul(n, 3.0), 1.0) }, s.N)
			return st{N: next, K: peel.Add(s.K, peel.Scalar(int64(1)))}
		}, st{N: n, K: peel.Scalar(int64(0))})
	}
	goCollatz := func(n int) int {
		k := 0
		for n > 1 {
			if n%2 == 0 {
				n /= 2
			} else {
				n = 3*n + 1
			}
			k++
		}
		return k
	}
	for _, n := range []int{1, 6, 7, 27} {
		if k := collatz(peel.Scalar(float64(n))).K.Item(); int(k) != goCollatz(n) {
			t.Fatalf("collatz(%d): %v steps, want %d", n, k, goCollatz(n))
		}
	}
	ns := f64(6, 7, 27, 1)
	vk := transforms.Vmap(collatz)(ns).K
	ck := transforms.Compile(transforms.Vmap(collatz))(ns).K
	for i, n := range []int{6, 7, 27, 1} {
		if int(peel.Index(vk, i).Item()) != goCollatz(n) || int(peel.Index(ck, i).Item()) != goCollatz(n) {
			t.Fatalf("vmap collatz lane %d: %v / %v, want %d", i, peel.Index(vk, i).Item(), peel.Index(ck, i).Item(), goCollatz(n))
		}
	}
	// Scan inside the body, and a WhileLoop inside a Scan.
	xs := scanXs()
	inner := func(c *T) *T {
		r, _ := transforms.Scan(func(c, x *T) (*T, struct{}) { return peel.Add(peel.Mul(peel.Sin(c), x), c), struct{}{} }, c, xs)
		return r
	}
	goInner := func(c *T) *T {
		for i := 0; i < xs.Shape()[0]; i++ {
			c = peel.Add(peel.Mul(peel.Sin(c), peel.Index(xs, i)), c)
		}
		return c
	}
	type cStep struct{ C, K *T }
	outer := func(run func(*T) *T) func(*T) *T {
		return func(c *T) *T {
			return transforms.WhileLoop(func(s cStep) *T {
				return peel.LogicalAnd(peel.Less(peel.Max(peel.Abs(s.C)), 10.0), peel.Less(s.K, peel.Scalar(int64(6))))
			}, func(s cStep) cStep {
				return cStep{C: peel.Add(run(s.C), 0.5), K: peel.Add(s.K, peel.Scalar(int64(1)))}
			}, cStep{C: c, K: peel.Scalar(int64(0))}).C
		}
	}
	outerCount := func(c *T) int {
		n := 0
		for ; n < 6 && peel.Max(peel.Abs(c)).Item() < 10; n++ {
			c = peel.Add(goInner(c), 0.5)
		}
		return n
	}
	outerN := func(n int) func(*T) *T {
		return func(c *T) *T {
			for k := 0; k < n; k++ {
				c = peel.Add(goInner(c), 0.5)
			}
			return c
		}
	}
	goOuter := func(c *T) *T { return outerN(outerCount(c))(c) }
	c0 := f64(0.1, -0.2, 0.3)
	near(t, "scan in while", outer(inner)(c0).Float64s(), goOuter(c0).Float64s(), 0)
	_, d := transforms.JVP(outer(inner), c0, peel.OnesLike(c0))
	_, wd := transforms.JVP(outerN(outerCount(c0)), c0, peel.OnesLike(c0))
	near(t, "scan in while jvp", d.Float64s(), wd.Float64s(), 1e-12)
	near(t, "compiled scan in while", transforms.Compile(outer(inner))(c0).Float64s(), goOuter(c0).Float64s(), 0)
	ws, _ := transforms.Scan(func(c, x *T) (*T, *T) {
		r := whileGeo(peel.Add(peel.Abs(x), 1.1), 20)(c)
		return peel.Mul(r, 0.01), r
	}, c0, xs)
	wc := c0
	for i := 0; i < xs.Shape()[0]; i++ {
		wc = peel.Mul(goGeo(peel.Add(peel.Abs(peel.Index(xs, i)), 1.1), 20)(wc), 0.01)
	}
	near(t, "while in scan", ws.Float64s(), wc.Float64s(), 0)
	// A WhileLoop inside a WhileLoop's body.
	ww := f64(1.1, 1.2, 1.3)
	nest := func(x *T) *T {
		return transforms.WhileLoop(func(x *T) *T { return peel.Less(peel.Sum(x), 100.0) }, func(x *T) *T {
			return peel.Add(whileGeo(ww, 5)(x), 1.0)
		}, x)
	}
	goNest := func(x *T) *T {
		for peel.Sum(x).Item() < 100 {
			x = peel.Add(goGeo(ww, 5)(x), 1.0)
		}
		return x
	}
	near(t, "while in while", nest(c0).Float64s(), goNest(c0).Float64s(), 0)
	vn := transforms.Vmap(nest)(peel.Stack([]*T{c0, peel.Mul(c0, 3.0)}, 0))
	near(t, "vmap while in while", peel.Index(vn, 1).Float64s(), goNest(peel.Mul(c0, 3.0)).Float64s(), 0)
}

func TestWhileLoopFunctionalize(t *testing.T) {
	// A body writing into a tensor of its own.
	body := func(x *T) *T {
		d := peel.Mul(x, 1.0)
		peel.AddInPlace(d, peel.OnesLike(d))
		peel.MulInPlace(d, 1.5)
		return d
	}
	cond := func(x *T) *T { return peel.Less(peel.Sum(x), 50.0) }
	loopN := func(n int) func(*T) *T {
		return func(x *T) *T {
			for k := 0; k < n; k++ {
				x = peel.Mul(peel.Add(x, 1.0), 1.5)
			}
			return x
		}
	}
	count := func(x *T) int {
		n := 0
		for ; peel.Sum(x).Item() < 50; n++ {
			x = loopN(1)(x)
		}
		return n
	}
	goLoop := func(x *T) *T { return loopN(count(x))(x) }
	x := f64(0.5, 1)
	want := goLoop(x).Float64s()
	near(t, "local mutation", transforms.WhileLoop(cond, body, x).Float64s(), want, 1e-15)
	f := func(x *T) *T { return transforms.WhileLoop(cond, body, x) }
	near(t, "functionalized", transforms.Functionalize(f)(x).Float64s(), want, 1e-15)
	near(t, "compiled", transforms.Compile(f)(x).Float64s(), want, 1e-15)
	_, dx := transforms.JVP(f, x, peel.OnesLike(x))
	_, wdx := transforms.JVP(loopN(count(x)), x, peel.OnesLike(x))
	near(t, "jvp mutation", dx.Float64s(), wdx.Float64s(), 1e-14)
	// An in-place write into the carry inside the body, under Vmap.
	near(t, "vmap mutation", transforms.Vmap(f)(peel.Stack([]*T{x, peel.Neg(x)}, 0)).Float64s(),
		append(goLoop(x).Float64s(), goLoop(peel.Neg(x)).Float64s()...), 1e-15)
	// A predicate writing into a tensor of its own.
	condLocal := func(x *T) *T {
		d := peel.Mul(x, 1.0)
		peel.SubInPlace(d, peel.OnesLike(d))
		return peel.Less(peel.Sum(d), 48.0)
	}
	near(t, "local mutation in cond", transforms.Functionalize(func(x *T) *T { return transforms.WhileLoop(condLocal, body, x) })(x).Float64s(), want, 1e-15)
	near(t, "local mutation in cond, compiled", transforms.Compile(func(x *T) *T { return transforms.WhileLoop(condLocal, body, x) })(x).Float64s(), want, 1e-15)
	// A write into a captured tensor is refused, as in Scan.
	w := f64(1, 2)
	wantError(t, func() {
		transforms.WhileLoop(func(x *T) *T { peel.AddInPlace(w, x); return peel.Less(peel.Sum(x), 1.0) }, body, x)
	}, "transforms.WhileLoop")
	wantError(t, func() {
		transforms.WhileLoop(cond, func(x *T) *T { peel.AddInPlace(w, x); return peel.Add(x, w) }, x)
	}, "transforms.WhileLoop")
	wantError(t, func() {
		transforms.Functionalize(func(w *T) *T {
			return transforms.WhileLoop(cond, func(x *T) *T { peel.AddInPlace(w, x); return peel.Add(x, w) }, x)
		})(w)
	}, "transforms.WhileLoop")
}

func TestWhileLoopErrors(t *testing.T) {
	cond := func(x *T) *T { return peel.Less(peel.Sum(x), 10.0) }
	wantError(t, func() { transforms.WhileLoop(nil, func(x *T) *T { return x }, f64(1)) }, "transforms.WhileLoop", "cond must not be nil")
	wantError(t, func() { transforms.WhileLoop(cond, nil, f64(1)) }, "transforms.WhileLoop", "body must not be nil")
	wantError(t, func() {
		transforms.WhileLoop(func(x *T) *T { return peel.Less(x, 10.0) }, func(x *T) *T { return x }, f64(1, 2))
	}, "transforms.WhileLoop", "scalar", "bool[2]")
	wantError(t, func() { transforms.WhileLoop(func(x *T) *T { return nil }, func(x *T) *T { return x }, f64(1)) }, "transforms.WhileLoop", "nil")
	wantError(t, func() { transforms.WhileLoop(cond, func(x *T) *T { return nil }, f64(1)) }, "transforms.WhileLoop", "nil")
	wantError(t, func() {
		transforms.WhileLoop(cond, func(x *T) *T { return peel.AsType(x, peel.Float32) }, f64(1))
	}, "transforms.WhileLoop", "carry", "f32[1]", "f64[1]")
	wantError(t, func() {
		transforms.WhileLoop(func(s scanCarry) *T { return peel.Less(peel.Sum(s.H), 10.0) }, func(s scanCarry) scanCarry {
			return scanCarry{H: peel.Concat([]*T{s.H, s.H}, 0), N: s.N}
		}, scanCarry{H: f64(1), N: peel.Scalar(int64(0))})
	}, "transforms.WhileLoop", "carry path .H")
	wantError(t, func() {
		transforms.WhileLoop(func(c []*T) *T { return peel.Less(peel.Sum(c[0]), 1.0) }, func(c []*T) []*T { return append(c, c[0]) }, []*T{f64(1)})
	}, "transforms.WhileLoop", "structure")
	// Decomposing a while loop into its steps.
	wantError(t, func() {
		transforms.MakeGraph(func(x *T) *T { return transforms.WhileLoop(cond, func(x *T) *T { return peel.Add(x, 1.0) }, x) }, f64(1), transforms.Decompose())
	}, "transforms.WhileLoop", "Decompose")
	// Reading a traced value in a body.
	wantError(t, func() {
		transforms.WhileLoop(cond, func(x *T) *T {
			if peel.Sum(x).Item() > 0 {
				return peel.Add(x, 1.0)
			}
			return x
		}, f64(1))
	}, "cannot read the value of a traced tensor", "transforms.WhileLoop")
}

// TestWhileLoopRapid compares WhileLoop to a Go loop on random inputs:
// an affine map x ↦ x·m + b, iterated while max|x| < limit and fewer than
// 50 steps, eagerly, vmapped over lanes and compiled.
func TestWhileLoopRapid(t *testing.T) {
	compiled := transforms.Compile(func(a [3]*T) *T { return affineWhile(a[0], a[1], a[2]) })
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 4).Draw(rt, "n")
		lanes := rapid.IntRange(1, 4).Draw(rt, "lanes")
		draw := func(name string, lo, hi float64) []float64 {
			v := make([]float64, lanes*n)
			for i := range v {
				v[i] = rapid.Float64Range(lo, hi).Draw(rt, name)
			}
			return v
		}
		xs, ms, bs := draw("x", -1, 1), draw("m", -2, 2), draw("b", -0.5, 0.5)
		var want []float64
		for l := 0; l < lanes; l++ {
			w := goAffine(xs[l*n:(l+1)*n], ms[l*n:(l+1)*n], bs[l*n:(l+1)*n])
			want = append(want, w...)
		}
		X, M, B := peel.FromFloat64s(xs, lanes, n), peel.FromFloat64s(ms, lanes, n), peel.FromFloat64s(bs, lanes, n)
		for l := 0; l < lanes; l++ {
			got := affineWhile(peel.Index(X, l), peel.Index(M, l), peel.Index(B, l)).Float64s()
			near(t, "eager", got, want[l*n:(l+1)*n], 0)
		}
		near(t, "vmap", transforms.Vmap(func(a [3]*T) *T { return affineWhile(a[0], a[1], a[2]) })([3]*T{X, M, B}).Float64s(), want, 0)
		near(t, "compiled", compiled([3]*T{peel.Index(X, 0), peel.Index(M, 0), peel.Index(B, 0)}).Float64s(), want[:n], 0)
		// Forward mode against the same number of steps unrolled in Go.
		x0, m0, b0 := peel.Index(X, 0), peel.Index(M, 0), peel.Index(B, 0)
		steps := affineSteps(xs[:n], ms[:n], bs[:n])
		_, d := transforms.JVP(func(m *T) *T { return affineWhile(x0, m, b0) }, m0, peel.OnesLike(m0))
		_, wd := transforms.JVP(func(m *T) *T {
			x := x0
			for k := 0; k < steps; k++ {
				x = peel.Add(peel.Mul(x, m), b0)
			}
			return x
		}, m0, peel.OnesLike(m0))
		near(t, "jvp", d.Float64s(), wd.Float64s(), 1e-12)
	})
}

// affineSteps is the number of steps goAffine takes.
func affineSteps(x, m, b []float64) int {
	for k := 0; k <= 50; k++ {
		if k == 50 || slices.Max(absAll(x)) >= 4 {
			return k
		}
		x = goAffineStep(x, m, b)
	}
	return 50
}

func absAll(x []float64) []float64 {
	r := make([]float64, len(x))
	for i, v := range x {
		r[i] = math.Abs(v)
	}
	return r
}

func goAffineStep(x, m, b []float64) []float64 {
	r := make([]float64, len(x))
	for i := range x {
		r[i] = x[i]*m[i] + b[i]
	}
	return r
}

func affineWhile(x, m, b *T) *T {
	type st struct{ X, K *T }
	return transforms.WhileLoop(func(s st) *T {
		return peel.LogicalAnd(peel.Less(peel.Max(peel.Abs(s.X)), 4.0), peel.Less(s.K, peel.Scalar(int64(50))))
	}, func(s st) st {
		return st{X: peel.Add(peel.Mul(s.X, m), b), K: peel.Add(s.K, peel.Scalar(int64(1)))}
	}, st{X: x, K: peel.Scalar(int64(0))}).X
}

func goAffine(x, m, b []float64) []float64 {
	x = append([]float64(nil), x...)
	for k := 0; k < 50; k++ {
		mx := 0.0
		for _, v := range x {
			mx = math.Max(mx, math.Abs(v))
		}
		if mx >= 4 {
			break
		}
		for i := range x {
			x[i] = x[i]*m[i] + b[i]
		}
	}
	return x
}

func TestMap(t *testing.T) {
	xs := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, 7, 2)
	f := func(x *T) []*T { return []*T{peel.Sum(peel.Sin(x)), peel.Mul(x, x)} }
	var w0, w1 []*T
	for i := 0; i < 7; i++ {
		y := f(peel.Index(xs, i))
		w0, w1 = append(w0, y[0]), append(w1, y[1])
	}
	want0, want1 := peel.Stack(w0, 0), peel.Stack(w1, 0)
	for _, b := range []int{0, 1, 2, 3, 7, 10} {
		ys := transforms.Map(f, xs, b)
		scanEqual(t, fmt.Sprintf("map batch %d [0]", b), ys[0], want0)
		scanEqual(t, fmt.Sprintf("map batch %d [1]", b), ys[1], want1)
	}
	// Trees, under Grad, Vmap and Compile.
	type in struct{ A, B *T }
	g := func(p in) *T { return peel.Add(peel.Sum(peel.Mul(p.A, p.B)), peel.Sin(peel.Sum(p.A))) }
	ins := in{A: xs, B: peel.FromFloat64s([]float64{0.5, -1, 2, 0, 1, 1, -2, 3, 0.25, 4, 2, 2, 1, 0}, 7, 2)}
	loop := func(p in) *T {
		var ys []*T
		for i := 0; i < 7; i++ {
			ys = append(ys, g(in{A: peel.Index(p.A, i), B: peel.Index(p.B, i)}))
		}
		return peel.Stack(ys, 0)
	}
	for _, b := range []int{1, 3} {
		m := func(p in) *T { return transforms.Map(g, p, b) }
		scanEqual(t, "map tree", m(ins), loop(ins))
		loss := func(p in) *T { return peel.Sum(peel.Sin(m(p))) }
		wl := func(p in) *T { return peel.Sum(peel.Sin(loop(p))) }
		gr, wg := transforms.Grad(loss)(ins), transforms.Grad(wl)(ins)
		near(t, "map grad A", gr.A.Float64s(), wg.A.Float64s(), 1e-14)
		near(t, "map grad B", gr.B.Float64s(), wg.B.Float64s(), 1e-14)
		near(t, "map compiled", transforms.Compile(m)(ins).Float64s(), loop(ins).Float64s(), 1e-14)
		stacked := in{A: peel.Stack([]*T{ins.A, peel.Neg(ins.A)}, 0), B: peel.Stack([]*T{ins.B, ins.B}, 0)}
		vm := transforms.Vmap(m)(stacked)
		near(t, "map vmap", peel.Index(vm, 1).Float64s(), loop(in{A: peel.Neg(ins.A), B: ins.B}).Float64s(), 1e-14)
	}
	// A Map of a WhileLoop.
	as := f64(1, 8, 27, 1e6, 5)
	roots := transforms.Map(func(a *T) *T { return cubeRoot(a, 1e-9).X }, as, 2)
	for i, a := range as.Float64s() {
		x, _ := goCubeRoot(a, 1e-9)
		near(t, "map of while", []float64{peel.Index(roots, i).Item()}, []float64{x}, 0)
	}
	wantError(t, func() { transforms.Map(g, in{A: xs, B: peel.Zeros(peel.Float64, 3, 2)}, 2) }, "transforms.Map", "xs leaf .A", "xs leaf .B", "leading size")
	wantError(t, func() { transforms.Map(func(x *T) *T { return x }, peel.Scalar(1.0), 1) }, "transforms.Map", "scalar")
	wantError(t, func() { transforms.Map(func(struct{}) *T { return nil }, struct{}{}, 1) }, "transforms.Map", "no tensor leaves")
	wantError(t, func() { transforms.Map[*T, *T](nil, xs, 1) }, "transforms.Map", "nil")
}

// Cube roots by Newton's method: iterate until the residual is small.
func ExampleWhileLoop() {
	a := peel.Scalar(27.0)
	x := transforms.WhileLoop(func(x *peel.Tensor) *peel.Tensor {
		return peel.Greater(peel.Abs(peel.Sub(peel.Mul(peel.Mul(x, x), x), a)), 1e-12)
	}, func(x *peel.Tensor) *peel.Tensor {
		return peel.Sub(x, peel.Div(peel.Sub(peel.Mul(peel.Mul(x, x), x), a), peel.Mul(peel.Mul(x, x), 3.0)))
	}, peel.Scalar(1.0))
	fmt.Printf("%.6f\n", x.Item())
	// Output: 3.000000
}

// TestWhileLoopMoreCompositions: a predicate batched only through a
// captured tensor (the carry starts unbatched), a WhileLoop in a Scan's
// body and in a Cond branch under forward mode and Compile, a body that
// writes its carry in place, and a gradient through a Checkpoint that
// holds a WhileLoop (the error).
func TestWhileLoopMoreCompositions(t *testing.T) {
	type st struct{ X, K *T }
	upTo := func(n *T) *T {
		return transforms.WhileLoop(func(s st) *T { return peel.Less(s.K, n) }, func(s st) st {
			return st{X: peel.Add(peel.Mul(s.X, 2.0), 1.0), K: peel.Add(s.K, peel.Scalar(int64(1)))}
		}, st{X: peel.Scalar(0.0), K: peel.Scalar(int64(0))}).X
	}
	ns := peel.FromInt64s([]int64{2, 5, 0, 3})
	near(t, "pred batched by a captured tensor", transforms.Vmap(upTo)(ns).Float64s(), []float64{3, 31, 0, 7}, 0)
	near(t, "compiled", transforms.Compile(transforms.Vmap(upTo))(ns).Float64s(), []float64{3, 31, 0, 7}, 0)

	// Forward mode of a WhileLoop in a Scan body (scan_lin holds while_lin).
	w := f64(1.5, 1.25)
	xs := peel.FromFloat64s([]float64{1, 2, 0.5, 3}, 4)
	inScan := func(c *T) *T {
		r, _ := transforms.Scan(func(c, x *T) (*T, struct{}) {
			return peel.Mul(whileGeo(w, 20)(peel.Mul(c, x)), 0.1), struct{}{}
		}, c, xs)
		return r
	}
	c0 := f64(0.5, 1)
	counts := make([]int, 4)
	c := c0
	for i := range counts {
		counts[i] = geoCount(w, 20, peel.Mul(c, peel.Index(xs, i)))
		c = peel.Mul(goGeo(w, 20)(peel.Mul(c, peel.Index(xs, i))), 0.1)
	}
	goInScan := func(c *T) *T {
		for i, n := range counts {
			c = peel.Mul(geoN(w, n)(peel.Mul(c, peel.Index(xs, i))), 0.1)
		}
		return c
	}
	near(t, "while in scan", inScan(c0).Float64s(), c.Float64s(), 0)
	_, d := transforms.JVP(inScan, c0, f64(1, -1))
	_, wd := transforms.JVP(goInScan, c0, f64(1, -1))
	near(t, "while in scan jvp", d.Float64s(), wd.Float64s(), 1e-13)
	near(t, "while in scan jacfwd", transforms.Jacfwd(inScan)(c0).Float64s(), transforms.Jacfwd(goInScan)(c0).Float64s(), 1e-13)
	wantError(t, func() { transforms.Grad(func(c *T) *T { return peel.Sum(inScan(c)) })(c0) }, "transforms.WhileLoop", "ForiLoop")

	// In a Cond branch whose predicate is traced (Compile of a JVP).
	br := func(x *T) *T {
		return transforms.Cond(peel.Greater(peel.Sum(x), 0.0), whileGeo(w, 20), func(x *T) *T { return peel.Sin(x) }, x)
	}
	n := geoCount(w, 20, c0)
	goBr := func(x *T) *T { return geoN(w, n)(x) }
	cj := transforms.Compile(func(x *T) *T { _, d := transforms.JVP(br, x, f64(1, 0.5)); return d })(c0)
	_, wj := transforms.JVP(goBr, c0, f64(1, 0.5))
	near(t, "while in cond, compiled jvp", cj.Float64s(), wj.Float64s(), 1e-13)

	// A body writing its carry in place.
	inPlace := transforms.WhileLoop(func(x *T) *T { return peel.Less(peel.Sum(x), 10.0) }, func(x *T) *T {
		peel.MulInPlace(x, 2.0)
		return x
	}, f64(0.5, 1))
	near(t, "carry written in place", inPlace.Float64s(), []float64{4, 8}, 0)

	// Checkpoint around a WhileLoop: its gradient is the error too.
	wantError(t, func() {
		transforms.Grad(transforms.Checkpoint(func(x *T) *T { return peel.Sum(whileGeo(w, 20)(x)) }, transforms.NothingSaveable))(c0)
	}, "transforms.WhileLoop", "Scan")
}

// whileOp is a user-defined op with a kernel-less composite and no JVP
// rule of its own (its derivative is derived from the composite).
var whileOp = customop.Define("test.while_softplus_step", 1, func(xs ...*T) *T {
	return peel.Add(xs[0], peel.Log1p(peel.Exp(peel.Neg(xs[0]))))
})

// TestWhileLoopCustomOpForwardMode: forward mode through a WhileLoop
// whose body calls user-defined ops without JVP rules (one composite
// only, one with a kernel) works as it does in ForiLoop and Scan; it used
// to fail with "escaped tracer: … belongs to a while that has already
// returned", the ops' derived derivatives holding values of the trace of
// the loop's JVP body.
func TestWhileLoopCustomOpForwardMode(t *testing.T) {
	for _, op := range []*customop.Op{whileOp, plainOp} {
		t.Run(op.Name(), func(t *testing.T) {
			step := func(c *T) *T { return peel.Add(op.Call(c), 0.25) }
			cond := func(c *T) *T { return peel.Less(peel.Sum(c), 6.0) }
			f := func(x *T) *T { return transforms.WhileLoop(cond, step, x) }
			x := f64(0.5, -0.25, 1)
			n := 0
			for c := x; cond(c).Item() != 0; c = step(c) {
				n++
			}
			fori := func(x *T) *T { return transforms.ForiLoop(0, n, func(_ *T, c *T) *T { return step(c) }, x) }
			v := f64(1, -2, 0.5)
			p, tan := transforms.JVP(f, x, v)
			wp, wt := transforms.JVP(fori, x, v)
			near(t, "jvp primal", p.Float64s(), wp.Float64s(), 1e-15)
			near(t, "jvp tangent", tan.Float64s(), wt.Float64s(), 1e-14)
			// The tangent against central differences along v.
			const h = 1e-6
			fd := peel.Div(peel.Sub(f(peel.Add(x, peel.Mul(v, h))), f(peel.Sub(x, peel.Mul(v, h)))), 2*h)
			near(t, "jvp vs finite differences", tan.Float64s(), fd.Float64s(), 1e-6)
			near(t, "jacfwd", transforms.Jacfwd(f)(x).Float64s(), transforms.Jacfwd(fori)(x).Float64s(), 1e-14)
			cj := transforms.Compile(func(a [2]*T) [2]*T { p, t := transforms.JVP(f, a[0], a[1]); return [2]*T{p, t} })
			got := cj([2]*T{x, v})
			near(t, "compile(jvp) primal", got[0].Float64s(), wp.Float64s(), 1e-14)
			near(t, "compile(jvp) tangent", got[1].Float64s(), wt.Float64s(), 1e-14)
			near(t, "vmap(jacfwd)", transforms.Vmap(transforms.Jacfwd(f))(peel.Stack([]*T{x, x}, 0)).Float64s(),
				slices.Concat(transforms.Jacfwd(fori)(x).Float64s(), transforms.Jacfwd(fori)(x).Float64s()), 1e-14)
		})
	}
}
