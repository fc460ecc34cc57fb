package transforms_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
)

// Robustness of trees and of the transforms' handling of malformed
// arguments, results, rules and axis specs: each must panic with a
// *peel.Error naming the transform and the place in the tree, never with
// a Go runtime panic, never silently do the wrong thing.

// rbCase is one call expected to panic with *peel.Error whose message
// contains every string of want.
type rbCase struct {
	name string
	run  func()
	want []string
}

// rbPanic runs f and returns what it panicked with (nil if it returned).
func rbPanic(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// rbCheck fails t unless c panics with *interp.Error (peel.Error) whose
// message names everything c wants.
func rbCheck(t *testing.T, c rbCase) {
	t.Helper()
	r := rbPanic(c.run)
	if r == nil {
		t.Errorf("%s: returned normally, want a *peel.Error mentioning %q", c.name, c.want)
		return
	}
	e, ok := r.(*interp.Error)
	if !ok {
		t.Errorf("%s: panicked with %T (%v), want *peel.Error", c.name, r, r)
		return
	}
	t.Logf("%s: %v", c.name, e)
	for _, s := range c.want {
		if !strings.Contains(e.Error(), s) {
			t.Errorf("%s: error %q does not mention %q", c.name, e.Error(), s)
		}
	}
}

// rbRun runs every case as a subtest.
func rbRun(t *testing.T, cases []rbCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { rbCheck(t, c) })
	}
}

// rbNear compares float64 values with relative-or-absolute tolerance tol.
func rbNear(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values, want %d", what, len(got), len(want))
		return
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*math.Max(1, math.Abs(want[i])) {
			t.Errorf("%s: element %d is %v, want %v (all: %v vs %v)", what, i, got[i], want[i], got, want)
			return
		}
	}
}

func rbSum(x *T) *T { return peel.Sum(x) }

// rbSum1 is f followed by a sum.
func rbSum1(f func(*T) *T) func(*T) *T { return func(x *T) *T { return rbSum(f(x)) } }

// rbTreeCases are calls of every tree-taking transform with x as the
// argument (and, where the transform returns trees, as the result): each
// must be refused naming want.
func rbTreeCases[A any](name string, x A, loss func(A) *T, want ...string) []rbCase {
	t0 := peel.FromFloat64s([]float64{1, 2})
	id := func(a A) A { return a }
	const2 := func(*T) A { return x }
	cases := []rbCase{
		{"Grad", func() { transforms.Grad(loss)(x) }, []string{"transforms.Grad"}},
		{"ValueAndGrad", func() { transforms.ValueAndGrad(loss)(x) }, []string{"transforms.ValueAndGrad"}},
		{"GradAux", func() {
			transforms.GradAux(func(a A) (*T, int) { return loss(a), 0 })(x)
		}, []string{"transforms.GradAux"}},
		{"Jacrev", func() { transforms.Jacrev(loss)(x) }, []string{"transforms.Jacrev"}},
		{"Jacfwd", func() { transforms.Jacfwd(loss)(x) }, []string{"transforms.Jacfwd"}},
		{"JacrevTree", func() { transforms.JacrevTree(loss)(x) }, []string{"transforms.JacrevTree"}},
		{"HessianTree", func() { transforms.HessianTree(loss)(x) }, []string{"transforms.HessianTree"}},
		{"VJP", func() { transforms.VJP(loss, x) }, []string{"transforms.VJP"}},
		{"JVP", func() { transforms.JVP(loss, x, x) }, []string{"transforms.JVP"}},
		{"Linearize", func() { transforms.Linearize(loss, x) }, []string{"transforms.Linearize"}},
		{"Vmap", func() { transforms.Vmap(loss, transforms.AxisSize(2), transforms.InAxes(transforms.NoAxis))(x) }, []string{"transforms.Vmap"}},
		{"MakeGraph", func() { transforms.MakeGraph(loss, x) }, []string{"transforms.MakeGraph"}},
		{"Functionalize", func() { transforms.Functionalize(loss)(x) }, []string{"transforms.Functionalize"}},
		// The same tree as a result.
		{"VJP result", func() { transforms.VJP(const2, t0) }, []string{"transforms.VJP"}},
		{"JVP result", func() { transforms.JVP(const2, t0, t0) }, []string{"transforms.JVP"}},
		{"Vmap result", func() { transforms.Vmap(const2)(t0) }, []string{"transforms.Vmap"}},
		{"MakeGraph result", func() { transforms.MakeGraph(const2, t0) }, []string{"transforms.MakeGraph"}},
		{"Functionalize identity", func() { transforms.Functionalize(id)(x) }, []string{"transforms.Functionalize"}},
	}
	for i := range cases {
		cases[i].want = append(cases[i].want, want...)
	}
	// The positional forms: the tree is the first (or second) argument,
	// so its paths start with args[0] (args[1]).
	in := func(k int, ws ...string) []string {
		for _, w := range want {
			ws = append(ws, argsPath(k, w))
		}
		return ws
	}
	var y *T = t0
	cases = append(cases, []rbCase{
		{"Grad2", func() {
			transforms.Grad2(func(a A, _ int) *T { return loss(a) })(x, 0)
		}, in(0, "transforms.Grad2")},
		{"Grad3", func() {
			transforms.Grad3(func(a A, _, _ *T) *T { return loss(a) })(x, y, y)
		}, in(0, "transforms.Grad3")},
		{"GradArgs2 second", func() {
			transforms.GradArgs2(func(_ *T, a A) *T { return loss(a) })(y, x)
		}, in(1, "transforms.GradArgs2")},
		{"Vmap2", func() {
			transforms.Vmap2(func(_ *T, a A) *T { return loss(a) }, transforms.InAxes(0, transforms.NoAxis))(y, x)
		}, in(1, "transforms.Vmap2")},
		{"VJP2", func() { transforms.VJP2(func(a A, _ *T) *T { return loss(a) }, x, y) }, in(0, "transforms.VJP2")},
		{"JVP2", func() { transforms.JVP2(func(_ *T, a A) *T { return loss(a) }, y, x, y, x) }, in(1, "transforms.JVP2")},
		{"Jacrev2", func() { transforms.Jacrev2(func(a A, _ *T) *T { return loss(a) })(x, y) }, in(0, "transforms.Jacrev2")},
		{"JacfwdArgs3", func() {
			transforms.JacfwdArgs3(func(_, _ *T, a A) *T { return loss(a) })(y, y, x)
		}, in(2, "transforms.JacfwdArgs3")},
	}...)
	for i := range cases {
		cases[i].name = name + "/" + cases[i].name
	}
	return cases
}

// argsPath rewrites a wanted path fragment of a one-argument transform's
// error for the tree as positional argument k: ".W" becomes "args[k].W"
// and "unexported field .p" "unexported field args[k].p".
func argsPath(k int, w string) string {
	pre := fmt.Sprintf("args[%d]", k)
	if strings.HasPrefix(w, ".") || strings.HasPrefix(w, "[") {
		return pre + w
	}
	for _, f := range []string{"field ", "node "} {
		if i := strings.Index(w, f); i >= 0 {
			return w[:i+len(f)] + pre + w[i+len(f):]
		}
	}
	return w
}

type rbHidden struct{ w, b *T }

type rbInner struct{ Ws []*T }

type rbNested struct {
	W     *T
	inner rbInner
}

type rbMapHidden struct {
	W *T
	m map[string]*T
}

type rbPtrHidden struct {
	W *T
	p *rbHidden
}

type rbAnyHidden struct {
	W *T
	x any
}

func TestTreeUnexportedTensorFieldsRejected(t *testing.T) {
	a, b := peel.FromFloat64s([]float64{0.5, -1}), peel.FromFloat64s([]float64{2, 3})
	var cases []rbCase
	cases = append(cases, rbTreeCases("direct", rbHidden{w: a, b: b},
		func(p rbHidden) *T { return rbSum(peel.Mul(p.w, p.b)) }, "unexported field .w", ".w")...)
	cases = append(cases, rbTreeCases("slice under unexported", rbNested{W: a, inner: rbInner{Ws: []*T{b}}},
		func(p rbNested) *T { return rbSum(p.W) }, "unexported field .inner", ".inner.Ws[0]")...)
	cases = append(cases, rbTreeCases("map", rbMapHidden{W: a, m: map[string]*T{"k": b}},
		func(p rbMapHidden) *T { return rbSum(p.W) }, "unexported field .m", `.m["k"]`)...)
	cases = append(cases, rbTreeCases("pointer", rbPtrHidden{W: a, p: &rbHidden{b: b}},
		func(p rbPtrHidden) *T { return rbSum(p.W) }, "unexported field .p", ".p.b")...)
	cases = append(cases, rbTreeCases("interface", rbAnyHidden{W: a, x: []any{1, b}},
		func(p rbAnyHidden) *T { return rbSum(p.W) }, "unexported field .x", ".x[1]")...)
	cases = append(cases, rbTreeCases("in a slice", []rbHidden{{}, {w: a}},
		func(p []rbHidden) *T { return rbSum(p[1].w) }, "unexported field [1].w")...)
	rbRun(t, cases)
}

type rbCfg struct {
	Name string
	Up   *rbCfg // a cycle without tensors: static
}

type rbStatic struct {
	W      *T
	name   string
	n      int
	cfg    *rbCfg
	none   *T // a nil tensor in an unexported field holds no tensor
	scales []float64
	Cfg    *rbCfg
}

func TestTreeUnexportedStaticFieldsKept(t *testing.T) {
	cfg := &rbCfg{Name: "c"}
	cfg.Up = cfg
	x := []float64{0.3, -0.8, 1.5}
	p := rbStatic{W: peel.FromFloat64s(x), name: "net", n: 7, cfg: cfg, scales: []float64{2}, Cfg: cfg}
	loss := func(p rbStatic) *T {
		return rbSum(peel.Mul(peel.Sin(p.W), p.scales[0]*float64(p.n)))
	}
	check := func(what string, g rbStatic) {
		t.Helper()
		if g.name != "net" || g.n != 7 || g.cfg != cfg || len(g.scales) != 1 || g.scales[0] != 2 || g.none != nil {
			t.Errorf("%s: static fields not kept: %+v", what, g)
		}
		if g.Cfg == nil || g.Cfg.Name != "c" {
			t.Errorf("%s: static exported field not kept: %+v", what, g.Cfg)
		}
		want := fdGrad(func(w *T) *T { q := p; q.W = w; return loss(q) }, x, 3)
		rbNear(t, what, g.W.Float64s(), want, 1e-6)
	}
	check("Grad", transforms.Grad(loss)(p))
	_, g := transforms.ValueAndGrad(loss)(p)
	check("ValueAndGrad", g)
	_, pull := transforms.VJP(loss, p)
	check("VJP", pull(peel.Scalar(1.0)))
	out := transforms.Vmap(func(p rbStatic) rbStatic { p.W = peel.Mul(p.W, 2.0); return p })(p)
	if out.name != "net" || out.cfg != cfg {
		t.Errorf("Vmap: static fields not kept: %+v", out)
	}
	rbNear(t, "Vmap", out.W.Float64s(), []float64{0.6, -1.6, 3}, 1e-15)
}

type rbNode struct {
	W    *T
	Next *rbNode
}

type rbHiddenCycle struct {
	W    *T
	self *rbHiddenCycle
}

type rbLeaf struct{ W *T }

type rbDAG struct{ A, B *rbLeaf }

func TestTreeCycles(t *testing.T) {
	w := peel.FromFloat64s([]float64{1, 2})
	n := &rbNode{W: w}
	n.Next = n
	n2 := &rbNode{W: w, Next: &rbNode{W: w}}
	n2.Next.Next = n2
	s := []any{w, nil}
	s[1] = s
	m := map[string]any{"w": w}
	m["self"] = m
	h := &rbHiddenCycle{W: w}
	h.self = h
	var cases []rbCase
	cases = append(cases, rbTreeCases("pointer", n, func(n *rbNode) *T { return rbSum(n.W) }, "cycle", ".Next")...)
	cases = append(cases, rbTreeCases("two nodes", n2, func(n *rbNode) *T { return rbSum(n.W) }, "cycle", ".Next.Next")...)
	cases = append(cases, rbTreeCases("slice", s, func(s []any) *T { return rbSum(s[0].(*T)) }, "cycle", "[1]")...)
	cases = append(cases, rbTreeCases("map", m, func(m map[string]any) *T { return rbSum(m["w"].(*T)) }, "cycle", `["self"]`)...)
	// A cycle under an unexported field holds a tensor (the root's W is
	// reached again): refused as a hidden tensor, without looping.
	cases = append(cases, rbTreeCases("unexported", h, func(h *rbHiddenCycle) *T { return rbSum(h.W) }, "unexported field .self")...)
	rbRun(t, cases)
}

// TestTreeSharedNodes: a node reached twice (a DAG) is two separate
// subtrees, as in JAX (which has no sharing): each occurrence gets its own
// leaves, derivative and result copy.
func TestTreeSharedNodes(t *testing.T) {
	x := []float64{0.4, -1.2}
	shared := &rbLeaf{W: peel.FromFloat64s(x)}
	p := rbDAG{A: shared, B: shared}
	loss := func(p rbDAG) *T {
		return peel.Add(rbSum(peel.Mul(p.A.W, p.A.W)), rbSum(peel.Mul(p.B.W, 3.0)))
	}
	g := transforms.Grad(loss)(p)
	if g.A == g.B {
		t.Errorf("the gradient shares one node for two leaves")
	}
	rbNear(t, "A", g.A.W.Float64s(), []float64{0.8, -2.4}, 1e-12)
	rbNear(t, "B", g.B.W.Float64s(), []float64{3, 3}, 1e-12)
	// The same tensor twice.
	type pair struct{ X, Y *T }
	w := peel.FromFloat64s(x)
	gp := transforms.Grad(func(p pair) *T { return peel.Add(rbSum(peel.Mul(p.X, p.X)), rbSum(peel.Mul(p.Y, 3.0))) })(pair{w, w})
	rbNear(t, "X", gp.X.Float64s(), []float64{0.8, -2.4}, 1e-12)
	rbNear(t, "Y", gp.Y.Float64s(), []float64{3, 3}, 1e-12)
	// Vmap maps both occurrences.
	out := transforms.Vmap(func(p rbDAG) *T { return peel.Add(p.A.W, p.B.W) })(p)
	rbNear(t, "Vmap", out.Float64s(), []float64{0.8, -2.4}, 1e-15)
}

func TestTransformsNilResult(t *testing.T) {
	x := peel.FromFloat64s([]float64{0.5, 1.5})
	nilf := func(*T) *T { return nil }
	cases := []rbCase{
		{"Grad", func() { transforms.Grad(nilf)(x) }, []string{"transforms.Grad", "returned a nil tensor"}},
		{"ValueAndGrad", func() { transforms.ValueAndGrad(nilf)(x) }, []string{"transforms.ValueAndGrad", "returned a nil tensor"}},
		{"GradAux", func() {
			transforms.GradAux(func(*T) (*T, int) { return nil, 0 })(x)
		}, []string{"transforms.GradAux", "returned a nil tensor"}},
		{"Grad2", func() {
			transforms.Grad2(func(*T, int) *T { return nil })(x, 0)
		}, []string{"transforms.Grad2", "returned a nil tensor"}},
		{"HVP", func() { transforms.HVP(nilf, x, x) }, []string{"transforms.HVP", "returned a nil tensor"}},
		{"VJP", func() { transforms.VJP(nilf, x) }, []string{"transforms.VJP", "returned a nil tensor", "(the root)"}},
		{"JVP", func() { transforms.JVP(nilf, x, x) }, []string{"transforms.JVP", "returned a nil tensor"}},
		{"Linearize", func() { transforms.Linearize(nilf, x) }, []string{"transforms.Linearize", "returned a nil tensor"}},
		{"Jacrev", func() { transforms.Jacrev(nilf)(x) }, []string{"transforms.Jacrev", "returned a nil tensor"}},
		{"Jacfwd", func() { transforms.Jacfwd(nilf)(x) }, []string{"transforms.Jacfwd", "returned a nil tensor"}},
		{"Hessian", func() { transforms.Hessian(nilf)(x) }, []string{"transforms.Jac", "returned a nil tensor"}},
		{"Vmap", func() { transforms.Vmap(nilf)(x) }, []string{"transforms.Vmap", "returned a nil tensor"}},
		{"MakeGraph", func() { transforms.MakeGraph(nilf, x) }, []string{"transforms.MakeGraph", "returned a nil tensor"}},
		{"Functionalize", func() { transforms.Functionalize(nilf)(x) }, []string{"transforms.Functionalize", "returned a nil tensor"}},
		{"Vmap of Grad", func() { transforms.Vmap(transforms.Grad(nilf))(x) }, []string{"transforms.Grad", "returned a nil tensor"}},
		{"Grad of Vmap", func() {
			transforms.Grad(func(x *T) *T { return rbSum(transforms.Vmap(nilf)(x)) })(x)
		}, []string{"transforms.Vmap", "returned a nil tensor"}},
		// (A nil tensor inside a result tree is an empty subtree:
		// TestNilLeavesAreEmptySubtrees.)
		{"Linearize nil interface", func() {
			transforms.Linearize(func(x *T) any { return nil }, x)
		}, []string{"transforms.Linearize", "returned nil"}},
		// A nil argument leaf.
		{"Grad nil argument", func() { transforms.Grad(rbSum)(nil) }, []string{"transforms.Grad", "nil tensor"}},
		{"Jacrev nil argument", func() { transforms.Jacrev(rbSum)(nil) }, []string{"transforms.Jacrev", "nil tensor"}},
	}
	rbRun(t, cases)
}

func TestCustomRulesNilResults(t *testing.T) {
	x := peel.FromFloat64s([]float64{0.5, 1.5})
	sq := func(x *T) *T { return peel.Mul(x, x) }
	bwd := func(res []*T, ct *T) *T { return peel.Mul(ct, peel.Mul(res[0], 2.0)) }
	nilOut := transforms.CustomVJP(sq, func(x *T) (*T, []*T) { return nil, []*T{x} }, bwd)
	nilRes := transforms.CustomVJP(sq, func(x *T) (*T, []*T) { return sq(x), []*T{nil} }, bwd)
	nilF := transforms.CustomVJP(func(*T) *T { return nil }, func(x *T) (*T, []*T) { return sq(x), []*T{x} }, bwd)
	jvpNilOut := transforms.CustomJVP(sq, func(p, tg *T) (*T, *T) { return nil, tg })
	jvpNilTan := transforms.CustomJVP(sq, func(p, tg *T) (*T, *T) { return sq(p), nil })
	jvpNilF := transforms.CustomJVP(func(*T) *T { return nil }, func(p, tg *T) (*T, *T) { return sq(p), tg })
	sum := func(f func(*T) *T) func(*T) *T { return func(x *T) *T { return rbSum(f(x)) } }
	cases := []rbCase{
		{"CustomVJP nil output", func() { transforms.Grad(sum(nilOut))(x) }, []string{"transforms.CustomVJP", "fwd", "nil tensor", "result path (the root)"}},
		{"CustomVJP nil output under Vmap", func() { transforms.Vmap(transforms.Grad(sum(nilOut)))(x) }, []string{"transforms.CustomVJP", "fwd", "nil tensor", "result path (the root)"}},
		// A nil residual is an empty subtree: bwd gets it nil, and the
		// op that uses it says so.
		{"CustomVJP nil residual", func() { transforms.Grad(sum(nilRes))(x) }, []string{"peel.Mul", "nil tensor"}},
		{"CustomVJP nil residual under Vmap", func() { transforms.Vmap(transforms.Grad(sum(nilRes)))(x) }, []string{"peel.Mul", "nil tensor"}},
		{"CustomVJP nil f", func() { nilF(x) }, []string{"transforms.CustomVJP", "nil tensor"}},
		{"CustomVJP nil f under Vmap", func() { transforms.Vmap(func(x *T) *T { return nilF(x) })(x) }, []string{"transforms.CustomVJP", "nil tensor"}},
		{"CustomJVP nil output", func() { transforms.Grad(sum(jvpNilOut))(x) }, []string{"transforms.CustomJVP", "nil"}},
		{"CustomJVP nil output JVP", func() { transforms.JVP(sum(jvpNilOut), x, x) }, []string{"transforms.CustomJVP", "nil"}},
		{"CustomJVP nil output under Vmap", func() { transforms.Vmap(transforms.Grad(sum(jvpNilOut)))(x) }, []string{"transforms.CustomJVP", "nil"}},
		{"CustomJVP nil tangent", func() { transforms.Jacfwd(func(x *T) *T { return jvpNilTan(x) })(x) }, []string{"transforms.CustomJVP", "nil tangent", "(the root)"}},
		{"CustomJVP nil tangent under Vmap", func() { transforms.Vmap(transforms.Grad(sum(jvpNilTan)))(x) }, []string{"transforms.CustomJVP", "nil"}},
		// Vmap under Grad: the custom primitive is batched (its rules
		// vmapped) before it is differentiated.
		{"CustomVJP nil output, Grad of Vmap", func() { transforms.Grad(rbSum1(transforms.Vmap(nilOut)))(x) }, []string{"transforms.CustomVJP", "fwd", "nil tensor"}},
		{"CustomVJP nil residual, Grad of Vmap", func() { transforms.Grad(rbSum1(transforms.Vmap(nilRes)))(x) }, []string{"peel.Mul", "nil tensor"}},
		{"CustomJVP nil output, Grad of Vmap", func() { transforms.Grad(rbSum1(transforms.Vmap(jvpNilOut)))(x) }, []string{"transforms.CustomJVP", "nil"}},
		{"CustomJVP nil tangent, JVP of Vmap", func() { transforms.JVP(transforms.Vmap(jvpNilTan), x, x) }, []string{"transforms.CustomJVP", "nil"}},
		{"CustomJVP nil f", func() { jvpNilF(x) }, []string{"transforms.CustomJVP", "nil tensor"}},
		{"CustomJVP nil functions", func() { transforms.CustomJVP[*T, *T](nil, nil) }, []string{"transforms.CustomJVP", "nil"}},
		{"CustomVJP nil functions", func() { transforms.CustomVJP(sq, nil, bwd) }, []string{"transforms.CustomVJP", "nil"}},
	}
	rbRun(t, cases)
}

type rbPair struct{ P, Q *T }

func TestVmapAxisSpecMismatch(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	id := func(x *T) *T { return x }
	pair := rbPair{P: x, Q: x}
	sl := []*T{x, x}
	mp := map[string]*T{"a": x, "b": x}
	cases := []rbCase{
		{"map spec for a tensor", func() { transforms.Vmap(id, transforms.InAxes(map[string]any{}))(x) }, []string{"transforms.Vmap", "in axes", "(the root)", "tensor"}},
		{"slice spec for a tensor", func() { transforms.Vmap(id, transforms.InAxes([]any{0}))(x) }, []string{"in axes", "(the root)", "tensor"}},
		{"out map spec for a tensor", func() { transforms.Vmap(id, transforms.OutAxes(map[string]any{"P": 0}))(x) }, []string{"out axes", "(the root)", "tensor"}},
		{"out slice spec for a tensor", func() { transforms.Vmap(id, transforms.OutAxes([]any{0}))(x) }, []string{"out axes", "(the root)"}},
		{"slice spec too long", func() {
			transforms.Vmap(func(s []*T) *T { return s[0] }, transforms.InAxes([]any{0, 0, 0}))(sl)
		}, []string{"in axes", "length 3", "length 2"}},
		{"slice spec too short", func() {
			transforms.Vmap(func(s []*T) *T { return s[0] }, transforms.InAxes([]any{0}))(sl)
		}, []string{"in axes", "length 1"}},
		{"map spec missing key", func() {
			transforms.Vmap(func(m map[string]*T) *T { return m["a"] }, transforms.InAxes(map[string]any{"a": 0}))(mp)
		}, []string{"in axes", `"b"`}},
		{"map spec extra key", func() {
			transforms.Vmap(func(m map[string]*T) *T { return m["a"] }, transforms.InAxes(map[string]any{"a": 0, "b": 1, "c": 0}))(mp)
		}, []string{"in axes", `"c"`}},
		{"struct spec missing field", func() {
			transforms.Vmap(func(p rbPair) *T { return p.P }, transforms.InAxes(map[string]any{"P": 0}))(pair)
		}, []string{"in axes", "Q"}},
		{"struct spec extra field", func() {
			transforms.Vmap(func(p rbPair) *T { return p.P }, transforms.InAxes(map[string]any{"P": 0, "Q": 0, "R": 0}))(pair)
		}, []string{"in axes", "R"}},
		{"struct spec unexported field", func() {
			transforms.Vmap(func(p rbStatic) *T { return p.W }, transforms.InAxes(map[string]any{"W": 0, "Cfg": nil, "name": 0}))(rbStatic{W: x})
		}, []string{"in axes", "name"}},
		{"map spec for a slice", func() {
			transforms.Vmap(func(s []*T) *T { return s[0] }, transforms.InAxes(map[string]any{"a": 0}))(sl)
		}, []string{"in axes", "(the root)"}},
		{"slice spec for a map", func() {
			transforms.Vmap(func(m map[string]*T) *T { return m["a"] }, transforms.InAxes([]any{0, 0}))(mp)
		}, []string{"in axes", "(the root)"}},
		{"nested mismatch", func() {
			transforms.Vmap(func(s []*T) *T { return s[0] }, transforms.InAxes([]any{0, []any{0}}))(sl)
		}, []string{"in axes", "[1]", "tensor"}},
		{"out struct spec missing field", func() {
			transforms.Vmap(func(x *T) rbPair { return rbPair{x, x} }, transforms.OutAxes(map[string]any{"Q": 0}))(x)
		}, []string{"out axes", "P"}},
		{"out slice spec too long", func() {
			transforms.Vmap(func(x *T) []*T { return []*T{x} }, transforms.OutAxes([]any{0, 1}))(x)
		}, []string{"out axes", "length 2"}},
		{"unsupported spec type", func() { transforms.Vmap(id, transforms.InAxes([]int{0}))(x) }, []string{"in axes", "[]int"}},
		{"axis for a subtree without tensors", func() {
			transforms.Vmap(func(p rbCfg) *T { return x }, transforms.InAxes(0))(rbCfg{})
		}, []string{"in axis 0", "holds no tensor"}},
	}
	rbRun(t, cases)
}

func TestVmapAxisRange(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	id := func(x *T) *T { return x }
	cases := []rbCase{
		{"in MinInt", func() { transforms.Vmap(id, transforms.InAxes(math.MinInt))(x) }, []string{"in axis", fmt.Sprint(math.MinInt), "(the root)", "rank 2"}},
		{"in MaxInt", func() { transforms.Vmap(id, transforms.InAxes(math.MaxInt))(x) }, []string{"in axis", "rank 2"}},
		{"in rank", func() { transforms.Vmap(id, transforms.InAxes(2))(x) }, []string{"in axis 2", "rank 2"}},
		{"in -rank-1", func() { transforms.Vmap(id, transforms.InAxes(-3))(x) }, []string{"in axis -3", "rank 2"}},
		{"in MinInt in a spec", func() {
			transforms.Vmap(func(p rbPair) *T { return p.P }, transforms.InAxes(map[string]any{"P": 0, "Q": math.MinInt}))(rbPair{x, x})
		}, []string{"in axis", ".Q", "rank 2"}},
		{"out MinInt", func() { transforms.Vmap(id, transforms.OutAxes(math.MinInt))(x) }, []string{"out axis", "(the root)", "rank 1"}},
		{"out too large", func() { transforms.Vmap(id, transforms.OutAxes(2))(x) }, []string{"out axis 2", "rank 1"}},
		{"out too negative", func() { transforms.Vmap(id, transforms.OutAxes(-3))(x) }, []string{"out axis -3", "rank 1"}},
		{"out in a spec", func() {
			transforms.Vmap(func(x *T) []*T { return []*T{x, x} }, transforms.OutAxes([]any{0, math.MinInt}))(x)
		}, []string{"out axis", "[1]", "rank 1"}},
		{"negative AxisSize", func() {
			transforms.Vmap(id, transforms.InAxes(transforms.NoAxis), transforms.AxisSize(-2))(x)
		}, []string{"AxisSize", "-2"}},
	}
	rbRun(t, cases)
	// Negative axes in range count from the end: in from the lane's
	// argument rank, out from the result's rank with the batch dimension.
	for _, c := range []struct{ in, out, inPos, outPos int }{
		{-1, -1, 1, 1}, {-2, 0, 0, 0}, {1, -2, 1, 0}, {0, 1, 0, 1},
	} {
		got := transforms.Vmap(func(v *T) *T { return peel.Mul(v, v) }, transforms.InAxes(c.in), transforms.OutAxes(c.out))(x)
		var lanes []*T
		for i := 0; i < x.Shape()[c.inPos]; i++ {
			v := peel.Select(x, c.inPos, i)
			lanes = append(lanes, peel.Mul(v, v))
		}
		want := peel.Stack(lanes, c.outPos)
		if fmt.Sprint(got.Shape()) != fmt.Sprint(want.Shape()) {
			t.Errorf("in %d out %d: shape %v, want %v", c.in, c.out, got.Shape(), want.Shape())
			continue
		}
		rbNear(t, fmt.Sprintf("in %d out %d", c.in, c.out), got.Float64s(), want.Float64s(), 1e-15)
	}
}

type rbStats struct {
	Pred  *T
	Count int
	Idx   *T // an integer tensor
	None  *T // nil: kept nil
}

// rbConcrete fails t if x is not a concrete tensor (a tracer escaped).
func rbConcrete(t *testing.T, what string, x *T) {
	t.Helper()
	if x == nil || !x.IsConcrete() {
		t.Fatalf("%s: aux leaf is not concrete: %v", what, x)
	}
}

func TestGradAuxConcrete(t *testing.T) {
	xs := []float64{0.3, -0.9, 1.7}
	x := peel.FromFloat64s(xs)
	loss := func(x *T) *T { return rbSum(peel.Mul(peel.Sin(x), x)) }
	wantG := fdGrad(loss, xs, 3)
	sinOf := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i := range v {
			out[i] = math.Sin(v[i])
		}
		return out
	}

	// A single tensor.
	g, aux := transforms.GradAux(func(x *T) (*T, *T) { return loss(x), peel.Sin(x) })(x)
	rbNear(t, "grad (tensor aux)", g.Float64s(), wantG, 1e-6)
	rbConcrete(t, "tensor", aux)
	rbNear(t, "tensor aux", aux.Float64s(), sinOf(xs), 1e-15)
	// aux is the argument itself.
	_, same := transforms.GradAux(func(x *T) (*T, *T) { return loss(x), x })(x)
	rbConcrete(t, "argument", same)
	rbNear(t, "argument aux", same.Float64s(), xs, 0)

	// A struct: float, integer, nil and static leaves.
	_, st := transforms.GradAux(func(x *T) (*T, rbStats) {
		return loss(x), rbStats{Pred: peel.Mul(x, 2.0), Count: 3, Idx: peel.ArgMax(x, 0)}
	})(x)
	rbConcrete(t, "struct Pred", st.Pred)
	rbConcrete(t, "struct Idx", st.Idx)
	rbNear(t, "struct Pred", st.Pred.Float64s(), []float64{0.6, -1.8, 3.4}, 1e-15)
	if st.Count != 3 || st.None != nil || st.Idx.Int64s()[0] != 2 {
		t.Errorf("struct aux: %+v", st)
	}

	// A map, with a pointer to a struct.
	_, mp := transforms.GradAux(func(x *T) (*T, map[string]any) {
		return loss(x), map[string]any{"sin": peel.Sin(x), "stats": &rbStats{Pred: peel.Exp(x)}, "name": "m"}
	})(x)
	rbConcrete(t, "map sin", mp["sin"].(*T))
	rbNear(t, "map sin", mp["sin"].(*T).Float64s(), sinOf(xs), 1e-15)
	p := mp["stats"].(*rbStats).Pred
	rbConcrete(t, "map stats", p)
	rbNear(t, "map stats", p.Float64s(), []float64{math.Exp(xs[0]), math.Exp(xs[1]), math.Exp(xs[2])}, 1e-15)
	if mp["name"] != "m" {
		t.Errorf("static aux lost: %v", mp["name"])
	}

	// A nil aux.
	_, na := transforms.GradAux(func(x *T) (*T, any) { return loss(x), nil })(x)
	if na != nil {
		t.Errorf("nil aux came back as %v", na)
	}
	_, np := transforms.GradAux(func(x *T) (*T, *rbStats) { return loss(x), nil })(x)
	if np != nil {
		t.Errorf("nil aux pointer came back as %v", np)
	}

	// Nested in GradAux: the outer aux is concrete too.
	_, outer := transforms.GradAux(func(x *T) (*T, *T) {
		g, aux := transforms.GradAux(func(x *T) (*T, *T) { return loss(x), peel.Sin(x) })(x)
		return rbSum(g), aux
	})(x)
	rbConcrete(t, "nested", outer)
	rbNear(t, "nested", outer.Float64s(), sinOf(xs), 1e-15)

	// Under an outer JVP the aux is a value of the outer level: its
	// tangent flows (only GradAux's own levels are unwrapped).
	v := peel.FromFloat64s([]float64{1, -2, 0.5})
	_, tan := transforms.JVP(func(x *T) *T {
		_, aux := transforms.GradAux(func(x *T) (*T, *T) { return loss(x), peel.Sin(x) })(x)
		return aux
	}, x, v)
	rbNear(t, "JVP of aux", tan.Float64s(), []float64{math.Cos(xs[0]) * 1, math.Cos(xs[1]) * -2, math.Cos(xs[2]) * 0.5}, 1e-12)
}

// TestVmapGradAux checks Vmap(GradAux(f)) against a loop over the rows.
func TestVmapGradAux(t *testing.T) {
	data := []float64{0.3, -0.9, 1.7, 0.2, 2.1, -0.4, 0.8, -1.3}
	xb := peel.FromFloat64s(data, 4, 2)
	w := peel.FromFloat64s([]float64{0.5, -1.5})
	type res struct {
		G   *T
		Aux map[string]*T
	}
	f := func(x *T) (*T, map[string]*T) {
		y := peel.Mul(peel.Tanh(x), w)
		return rbSum(peel.Mul(y, y)), map[string]*T{"y": y, "n": rbSum(x)}
	}
	got := transforms.Vmap(func(x *T) res {
		g, aux := transforms.GradAux(f)(x)
		return res{g, aux}
	})(xb)
	for _, k := range []string{"y", "n"} {
		rbConcrete(t, k, got.Aux[k])
	}
	var gs, ys, ns []float64
	for i := 0; i < 4; i++ {
		row := peel.Select(xb, 0, i)
		g, aux := transforms.GradAux(f)(row)
		gs = append(gs, g.Float64s()...)
		ys = append(ys, aux["y"].Float64s()...)
		ns = append(ns, aux["n"].Float64s()...)
		// The loop's gradient against finite differences.
		rbNear(t, fmt.Sprintf("row %d grad", i), g.Float64s(), fdGrad(func(x *T) *T { v, _ := f(x); return v }, row.Float64s(), 2), 1e-6)
	}
	rbNear(t, "grad", got.G.Float64s(), gs, 1e-12)
	rbNear(t, "aux y", got.Aux["y"].Float64s(), ys, 1e-12)
	rbNear(t, "aux n", got.Aux["n"].Float64s(), ns, 1e-12)
	if fmt.Sprint(got.Aux["y"].Shape()) != "[4 2]" || fmt.Sprint(got.Aux["n"].Shape()) != "[4]" {
		t.Errorf("aux shapes %v and %v", got.Aux["y"].Shape(), got.Aux["n"].Shape())
	}
}
