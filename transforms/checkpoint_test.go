package transforms_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/transforms"
)

// ckParams is a two-layer block's parameters and input.
type ckParams struct{ W1, W2, X *T }

func ckRandom(seed uint64, shape ...int) *T {
	rng := rand.New(rand.NewPCG(seed, 1))
	v := make([]float64, 1)
	for _, d := range shape {
		v = make([]float64, len(v)*d)
	}
	for i := range v {
		v[i] = rng.Float64()*2 - 1
	}
	return peel.FromFloat64s(v, shape...)
}

func ckData() ckParams {
	return ckParams{W1: ckRandom(1, 3, 5), W2: ckRandom(2, 5, 2), X: ckRandom(3, 4, 3)}
}

// ckBlock is tanh(tanh(X W1) W2) with the hidden layer named "h", and
// exp and a product on the way, so that each policy has something to
// save and something to recompute.
func ckBlock(p ckParams) *T {
	h := transforms.Name(peel.Tanh(peel.MatMul(p.X, p.W1)), "h")
	z := peel.MatMul(peel.Mul(h, peel.Exp(peel.Mul(h, 0.5))), p.W2)
	return peel.Tanh(z)
}

func ckLoss(p ckParams) *T { return peel.Sum(peel.Mul(ckBlock(p), ckBlock(p))) }

var ckPolicies = []struct {
	name   string
	policy transforms.SavePolicy
}{
	{"default", transforms.SavePolicy{}},
	{"nothing", transforms.NothingSaveable},
	{"everything", transforms.EverythingSaveable},
	{"dots", transforms.DotsSaveable},
	{"dots without batch dims", transforms.DotsWithNoBatchDimsSaveable},
	{"names", transforms.SaveOnlyNames("h")},
	{"min-cut", transforms.MinCut},
	{"custom", transforms.SaveIf("exp", func(c transforms.SaveCandidate) bool { return c.Prim == "exp" })},
}

func ckNear(t *testing.T, what string, got, want ckParams) {
	t.Helper()
	near(t, what+" W1", got.W1.Float64s(), want.W1.Float64s(), 1e-12)
	near(t, what+" W2", got.W2.Float64s(), want.W2.Float64s(), 1e-12)
	near(t, what+" X", got.X.Float64s(), want.X.Float64s(), 1e-12)
}

// TestCheckpointGradients checks every policy's gradients against the
// function without Checkpoint, for the checkpointed block inside a loss
// and for the whole loss.
func TestCheckpointGradients(t *testing.T) {
	p := ckData()
	want := transforms.Grad(ckLoss)(p)
	for _, c := range ckPolicies {
		t.Run(c.name, func(t *testing.T) {
			block := transforms.Checkpoint(ckBlock, c.policy)
			inner := func(p ckParams) *T { b := block(p); return peel.Sum(peel.Mul(b, ckBlock(p))) }
			ckNear(t, "inner", transforms.Grad(inner)(p), want)
			ckNear(t, "whole", transforms.Grad(transforms.Checkpoint(ckLoss, c.policy))(p), want)
			// The primal is f's.
			near(t, "value", block(p).Float64s(), ckBlock(p).Float64s(), 0)
		})
	}
}

// TestCheckpointComposes checks Checkpoint under the other transforms,
// in both orders, against the same compositions without it.
func TestCheckpointComposes(t *testing.T) {
	p := ckData()
	xs := ckRandom(4, 6, 4, 3) // a batch of six inputs
	for _, c := range ckPolicies {
		t.Run(c.name, func(t *testing.T) {
			ck := transforms.Checkpoint(ckLoss, c.policy)
			withX := func(loss func(ckParams) *T) func(*T) ckParams {
				return func(x *T) ckParams { q := p; q.X = x; return transforms.Grad(loss)(q) }
			}
			// Vmap(Grad(Checkpoint)).
			got, want := transforms.Vmap(withX(ck))(xs), transforms.Vmap(withX(ckLoss))(xs)
			ckNear(t, "Vmap(Grad)", got, want)
			// Grad(Vmap(Checkpoint)) through the batching rule.
			vm := func(f func(ckParams) *T) func(ckParams) *T {
				return func(q ckParams) *T {
					per := transforms.Vmap(func(x *T) *T { r := q; r.X = x; return f(r) })
					return peel.Sum(per(q.X))
				}
			}
			q := p
			q.X = xs
			ckNear(t, "Grad(Vmap)", transforms.Grad(vm(ck))(q), transforms.Grad(vm(ckLoss))(q))
			// Grad(Grad): the gradient of a directional derivative.
			dir := ckData()
			gg := func(f func(ckParams) *T) func(ckParams) *T {
				return func(q ckParams) *T {
					g := transforms.Grad(f)(q)
					return peel.Add(peel.Add(peel.Sum(peel.Mul(g.W1, dir.W1)), peel.Sum(peel.Mul(g.W2, dir.W2))), peel.Sum(peel.Mul(g.X, dir.X)))
				}
			}
			ckNear(t, "Grad(Grad)", transforms.Grad(gg(ck))(p), transforms.Grad(gg(ckLoss))(p))
			// Jacobians of the block.
			blk := transforms.Checkpoint(ckBlock, c.policy)
			onX := func(f func(ckParams) *T) func(*T) *T { return func(x *T) *T { q := p; q.X = x; return f(q) } }
			near(t, "Jacrev", transforms.Jacrev(onX(blk))(p.X).Float64s(), transforms.Jacrev(onX(ckBlock))(p.X).Float64s(), 1e-12)
			near(t, "Jacfwd", transforms.Jacfwd(onX(blk))(p.X).Float64s(), transforms.Jacfwd(onX(ckBlock))(p.X).Float64s(), 1e-12)
			// Compile(Grad(Checkpoint)) and Grad(Compile(Checkpoint)).
			ckNear(t, "Compile(Grad)", transforms.Compile(transforms.Grad(ck))(p), transforms.Grad(ckLoss)(p))
			ckNear(t, "Grad(Compile)", transforms.Grad(transforms.Compile(ck))(p), transforms.Grad(ckLoss)(p))
		})
	}
}

// TestCheckpointCapturedTensor checks that a tensor of an enclosing
// transform captured by the checkpointed function is differentiated.
func TestCheckpointCapturedTensor(t *testing.T) {
	x := f64(1, 2, 3)
	w := f64(0.5, -1, 2)
	for _, c := range ckPolicies {
		g := transforms.Grad(func(w *T) *T {
			return transforms.Checkpoint(func(x *T) *T { return peel.Sum(peel.Mul(peel.Tanh(peel.Mul(x, w)), w)) }, c.policy)(x)
		})(w)
		want := transforms.Grad(func(w *T) *T { return peel.Sum(peel.Mul(peel.Tanh(peel.Mul(x, w)), w)) })(w)
		near(t, c.name, g.Float64s(), want.Float64s(), 1e-12)
	}
}

// TestSavedResiduals checks what each policy saves: nothing but the
// arguments, the dot products, the named value, or all of it.
func TestSavedResiduals(t *testing.T) {
	p := ckData()
	count := func(rs []transforms.Residual, substr string) (n, bytes int) {
		for _, r := range rs {
			if strings.Contains(r.Source, substr) {
				n++
				bytes += r.Bytes()
			}
		}
		return n, bytes
	}
	plain := transforms.SavedResiduals(ckLoss, p)
	if n, _ := count(plain, "linearization"); n == 0 {
		t.Fatalf("the plain gradient saves nothing: %v", plain)
	}
	saved := func(policy transforms.SavePolicy) []transforms.Residual {
		return transforms.SavedResiduals(transforms.Checkpoint(ckLoss, policy), p)
	}
	nothing := saved(transforms.NothingSaveable)
	if n, _ := count(nothing, "policy"); n != 0 {
		t.Errorf("NothingSaveable saves computed values: %v", nothing)
	}
	if n, _ := count(nothing, "argument"); n != 3 {
		t.Errorf("NothingSaveable saves %d arguments, want the 3 leaves: %v", n, nothing)
	}
	dots := saved(transforms.DotsSaveable)
	if n, _ := count(dots, "policy: dot_general"); n == 0 {
		t.Errorf("DotsSaveable saves no product: %v", dots)
	}
	if n, _ := count(dots, "policy:"); n != func() int { m, _ := count(dots, "policy: dot_general"); return m }() {
		t.Errorf("DotsSaveable saves more than products: %v", dots)
	}
	names := saved(transforms.SaveOnlyNames("h"))
	if n, _ := count(names, "policy: name"); n == 0 {
		t.Errorf("SaveOnlyNames(h) saves no named value: %v", names)
	}
	everything := saved(transforms.EverythingSaveable)
	_, nb := count(nothing, "checkpoint")
	_, eb := count(everything, "checkpoint")
	if nb >= eb {
		t.Errorf("NothingSaveable saves %d bytes, EverythingSaveable %d", nb, eb)
	}
	if r := transforms.Recomputed(transforms.Checkpoint(ckLoss, transforms.NothingSaveable), p); !slices.Contains(r, "dot_general") || !slices.Contains(r, "tanh") {
		t.Errorf("NothingSaveable recomputes %v: want the products and tanh among them", r)
	}
	if r := transforms.Recomputed(transforms.Checkpoint(ckLoss, transforms.DotsSaveable), p); slices.Contains(r, "dot_general") {
		t.Errorf("DotsSaveable recomputes %v: products among them", r)
	}
	if r := transforms.Recomputed(ckLoss, p); len(r) != 0 {
		t.Errorf("a gradient without Checkpoint recomputes %v", r)
	}
	if s := everything[0].String(); !strings.Contains(s, "f64") {
		t.Errorf("Residual.String() = %q", s)
	}
}

func TestNameAndCheckpointErrors(t *testing.T) {
	x := f64(1, 2)
	if transforms.Name(x, "x") != x {
		t.Error("Name of a concrete tensor is not the tensor itself")
	}
	wantError(t, func() { transforms.Checkpoint[*T, *T](nil, transforms.NothingSaveable) }, "nil")
	wantError(t, func() { transforms.Name(nil, "x") }, "nil")
	wantError(t, func() { transforms.Checkpoint(func(x *T) *T { return nil }, transforms.SavePolicy{})(x) }, "nil")
	if s := transforms.SaveOnlyNames("a", "b").String(); s != "SaveOnlyNames[a b]" {
		t.Errorf("SaveOnlyNames(a, b).String() = %q", s)
	}
}

// TestMinCut checks the partitioner's choice on graphs checked by hand.
func TestMinCut(t *testing.T) {
	saved := func(f func(ckParams) *T, p ckParams) (n, bytes int, rs []transforms.Residual) {
		rs = transforms.SavedResiduals(transforms.Checkpoint(f, transforms.MinCut), p)
		for _, r := range rs {
			if strings.Contains(r.Source, "policy") {
				n++
				bytes += r.Bytes()
			}
		}
		return n, bytes, rs
	}
	// cos(cos(a+b+c)) is elementwise: everything is recomputed from the
	// arguments, which cost nothing to keep.
	big := ckParams{W1: ckRandom(5, 64, 32), W2: ckRandom(6, 64, 32), X: ckRandom(7, 64, 32)}
	coscos := func(p ckParams) *T { return peel.Sum(peel.Cos(peel.Cos(peel.Add(peel.Add(p.W1, p.W2), p.X)))) }
	if n, _, rs := saved(coscos, big); n != 0 {
		t.Errorf("cos(cos(a+b+c)) saves %d computed values, want 0: %v", n, rs)
	}
	// tanh(Σ_rows (X W)): the product may not be recomputed, but the
	// row sums (or what follows them), 64 values, are all the backward
	// pass needs of it; saving the 64×32 product would cost 32 times
	// more.
	rows := func(p ckParams) *T { return peel.Sum(peel.Tanh(peel.Sum(peel.MatMul(p.X, p.W1), 1))) }
	q := ckParams{W1: ckRandom(8, 32, 32), W2: ckRandom(9, 1, 1), X: ckRandom(10, 64, 32)}
	if n, b, rs := saved(rows, q); n != 1 || b != 64*8 {
		t.Errorf("tanh of row sums of a product saves %d values of %d bytes, want one of %d: %v", n, b, 64*8, rs)
	}
	near(t, "min-cut gradient", transforms.Grad(transforms.Checkpoint(rows, transforms.MinCut))(q).X.Float64s(), transforms.Grad(rows)(q).X.Float64s(), 1e-12)
	// tanh(X W) itself: the product or its tanh (equal sizes) is saved,
	// once.
	if n, b, rs := saved(func(p ckParams) *T { return peel.Sum(peel.Tanh(peel.MatMul(p.X, p.W1))) }, q); n != 1 || b != 64*32*8 {
		t.Errorf("tanh of a product saves %d values of %d bytes, want one of %d: %v", n, b, 64*32*8, rs)
	}
}

// TestCheckpointOfRules checks checkpointed functions holding a
// user-defined op (its composite is recomputed), a CustomVJP (whose
// residuals cannot leave J: differentiated inline), a compiled call and
// a nested checkpoint, under every policy.
func TestCheckpointOfRules(t *testing.T) {
	x := ckRandom(13, 4, 3)
	sq := transforms.CustomVJP(func(x *T) *T { return peel.Mul(x, x) },
		func(x *T) (*T, *T) { return peel.Mul(x, x), x },
		func(res, ct *T) *T { return peel.Mul(peel.Mul(ct, res), 2.0) })
	inner := transforms.Compile(func(x *T) *T { return peel.Exp(peel.Mul(x, 0.5)) })
	fs := map[string]func(*T) *T{
		"user op":   func(x *T) *T { return peel.Sum(peel.Tanh(mylib.Gelu.Call(peel.Mul(x, 2.0)))) },
		"CustomVJP": func(x *T) *T { return peel.Sum(peel.Tanh(sq(peel.Mul(x, 2.0)))) },
		"compiled":  func(x *T) *T { return peel.Sum(peel.Tanh(inner(peel.Mul(x, 2.0)))) },
		"nested": func(x *T) *T {
			return peel.Sum(transforms.Checkpoint(func(y *T) *T { return peel.Sin(peel.Mul(y, y)) }, transforms.DotsSaveable)(peel.Tanh(x)))
		},
	}
	for name, f := range fs {
		want := transforms.Grad(f)(x)
		for _, c := range ckPolicies {
			got := transforms.Grad(transforms.Checkpoint(f, c.policy))(x)
			near(t, name+" "+c.name, got.Float64s(), want.Float64s(), 1e-12)
		}
	}
}

// TestMinCutGeluByHand: for mylib.gelu's composite written out, MinCut
// saves nothing but the argument (every op is elementwise), and under
// Compile with FuseOps the forward pass runs the fused kernel while the
// backward recomputes from x.
func TestMinCutGeluByHand(t *testing.T) {
	x := ckRandom(14, 64, 32)
	loss := func(x *T) *T { return peel.Sum(mylib.GeluComposite(x)) }
	for _, r := range transforms.SavedResiduals(transforms.Checkpoint(loss, transforms.MinCut), x) {
		if strings.Contains(r.Source, "policy") {
			t.Errorf("MinCut saves %v", r)
		}
	}
	// Grad alone compiles to one fused loop reading x (the value is
	// not needed); ValueAndGrad needs the value: the fused op.
	type vg struct{ V, G *T }
	f := func(x *T) vg {
		v, g := transforms.ValueAndGrad(loss, transforms.Remat(transforms.MinCut))(x)
		return vg{v, g}
	}
	wv, wg := transforms.ValueAndGrad(loss)(x)
	var cIns transforms.Inspector
	c := transforms.Compile(f, transforms.FuseOps(mylib.Gelu), transforms.Inspect(&cIns))
	got := c(x)
	near(t, "value", got.V.Float64s(), wv.Float64s(), 1e-12)
	near(t, "gradient", got.G.Float64s(), wg.Float64s(), 1e-12)
	ex := cIns.Explain(x)
	prog := ex[strings.Index(ex, "program:"):]
	if !strings.Contains(prog, "mylib.gelu") {
		t.Errorf("the compiled program does not run the fused op:\n%s", prog)
	}
}

// TestRematUnderCompile checks that a compiled gradient with Remat
// recomputes what the policy does not save: the recomputation reads its
// constants through a barrier CSE cannot see through, so the program
// holds more products than the plain one, and gives the same results.
func TestRematUnderCompile(t *testing.T) {
	p := ckData()
	type vg struct {
		V *T
		G ckParams
	}
	step := func(ins *transforms.Inspector, opts ...transforms.GradOption) func(ckParams) vg {
		return transforms.Compile(func(q ckParams) vg {
			v, g := transforms.ValueAndGrad(ckLoss, opts...)(q)
			return vg{v, g}
		}, transforms.Inspect(ins))
	}
	var plainIns, rematIns transforms.Inspector
	plain, remat := step(&plainIns), step(&rematIns, transforms.Remat(transforms.NothingSaveable))
	a, b := plain(p), remat(p)
	near(t, "value", b.V.Float64s(), a.V.Float64s(), 1e-12)
	ckNear(t, "gradient", b.G, a.G)
	dots := func(c *transforms.Inspector) int {
		ex := c.Explain(p)
		return strings.Count(ex[strings.Index(ex, "program:"):], "dot_general")
	}
	if dp, dr := dots(&plainIns), dots(&rematIns); dr <= dp {
		t.Errorf("the remat program has %d products, the plain one %d: the recomputation was merged away", dr, dp)
	}
}

// TestCheckpointPlansShared checks that calls of one checkpointed
// function share their plan only by structure: a captured tensor with
// other values, and arguments with other values, give their own
// gradients (the shared plan holds no value).
func TestCheckpointPlansShared(t *testing.T) {
	w := f64(0.5, -1, 2)
	f := func(x *T) *T { return peel.Sum(peel.Tanh(peel.Mul(peel.Mul(x, w), x))) }
	ck := transforms.Checkpoint(f, transforms.MinCut)
	g := transforms.Grad(ck)
	gr := transforms.Grad(f, transforms.Remat(transforms.DotsSaveable))
	for k := range 4 {
		w = peel.Mul(w, float64(k+1))
		x := f64(float64(k)+0.1, -0.5, 1.5)
		want := transforms.Grad(f)(x)
		near(t, "Checkpoint", g(x).Float64s(), want.Float64s(), 1e-12)
		near(t, "Remat", gr(x).Float64s(), want.Float64s(), 1e-12)
	}
}

// TestGradRematDefault checks Compile's GradRemat: the gradients traced
// in the compiled function recompute what the default policy does not
// save — found through their arguments, through a batched argument
// (Vmap inside the compiled function), and through the result when only
// captured tensors are differentiated — while a gradient's own Remat
// wins, and every result equals the eager gradient's. (Each returns the
// value too, so the forward products stay and a recomputation adds its
// own.)
func TestGradRematDefault(t *testing.T) {
	p := ckData()
	type vg struct {
		V *T
		G ckParams
	}
	wv, wg := transforms.ValueAndGrad(ckLoss)(p)
	dots := func(ex string) int { return strings.Count(ex[strings.Index(ex, "program:"):], "dot_general") }
	grad := func(opts ...transforms.GradOption) func(ckParams) vg {
		return func(q ckParams) vg { v, g := transforms.ValueAndGrad(ckLoss, opts...)(q); return vg{v, g} }
	}
	nothing := transforms.GradRemat(transforms.NothingSaveable)
	var plainIns transforms.Inspector
	plain := transforms.Compile(grad(), transforms.Inspect(&plainIns))
	var defIns transforms.Inspector
	def := transforms.Compile(grad(), nothing, transforms.Inspect(&defIns))
	var ownIns transforms.Inspector
	own := transforms.Compile(grad(transforms.Remat(transforms.EverythingSaveable)), nothing, transforms.Inspect(&ownIns))
	var everythingIns transforms.Inspector
	transforms.Compile(grad(transforms.Remat(transforms.EverythingSaveable)), transforms.Inspect(&everythingIns))
	for name, c := range map[string]func(ckParams) vg{"plain": plain, "default": def, "own": own} {
		r := c(p)
		near(t, name+" value", r.V.Float64s(), wv.Float64s(), 1e-12)
		ckNear(t, name, r.G, wg)
	}
	dp, dd := dots(plainIns.Explain(p)), dots(defIns.Explain(p))
	if dd <= dp {
		t.Errorf("GradRemat(NothingSaveable): %d products, the plain program %d: the default was not applied", dd, dp)
	}
	if do, de := dots(ownIns.Explain(p)), dots(everythingIns.Explain(p)); do != de {
		t.Errorf("a gradient's own Remat: %d products, want %d as without GradRemat", do, de)
	}

	// Only captured tensors are differentiated: the result finds it.
	captured := func(x *T) vg {
		v, g := transforms.ValueAndGrad(func(q ckParams) *T { q.X = x; return ckLoss(q) })(p)
		return vg{v, g}
	}
	var cpIns, cdIns transforms.Inspector
	transforms.Compile(captured, transforms.Inspect(&cpIns))
	cd := transforms.Compile(captured, nothing, transforms.Inspect(&cdIns))
	cw := captured(p.X)
	ckNear(t, "captured", cd(p.X).G, cw.G)
	if a, b := dots(cpIns.Explain(p.X)), dots(cdIns.Explain(p.X)); b <= a {
		t.Errorf("captured leaves: %d products with GradRemat, %d without: the default was not applied", b, a)
	}

	// Vmap inside Compile: the batched arguments wrap the compiled ones.
	xs := ckRandom(9, 2, 4, 3)
	lanes := transforms.Vmap(func(x *T) [2]*T {
		v, g := transforms.ValueAndGrad(func(x *T) *T { q := p; q.X = x; return ckLoss(q) })(x)
		return [2]*T{v, g}
	})
	var vpIns, vdIns transforms.Inspector
	transforms.Compile(lanes, transforms.Inspect(&vpIns))
	vd := transforms.Compile(lanes, nothing, transforms.Inspect(&vdIns))
	a, b := vd(xs), lanes(xs)
	near(t, "vmap value", a[0].Float64s(), b[0].Float64s(), 1e-12)
	near(t, "vmap gradient", a[1].Float64s(), b[1].Float64s(), 1e-12)
	if a, b := dots(vpIns.Explain(xs)), dots(vdIns.Explain(xs)); b <= a {
		t.Errorf("Vmap in Compile: %d products with GradRemat, %d without: the default was not applied", b, a)
	}
}
