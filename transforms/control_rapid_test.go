package transforms_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// Random control-flow programs: a Scan whose body computes each new
// carry leaf as tanh of a random pointwise expression of the carry
// leaves, the xs slice and a captured weight (the tanh keeps the loop
// bounded), optionally through a Cond on the sign of the slice's first
// element (never near zero, so every evaluation takes one branch), with
// the first new carry leaf as the step's y; after the loop, a Cond on
// the sign of a drawn scalar picks one of two sums of the results. Each
// program runs with Scan and Cond, and as the oracle: a Go loop whose
// branches are Go ifs on concrete values (and Cond on the Go loop where
// the oracle is differentiated).

// ctlExpr is a random pointwise expression over the values v (the
// inputs, then one more per step): its result is the last value.
type ctlExpr []progStep

func drawCtlExpr(t *rapid.T, nIn int, label string) ctlExpr {
	n := rapid.IntRange(1, 4).Draw(t, label+" steps")
	var e ctlExpr
	for i := 0; i < n; i++ {
		s := progStep{op: rapid.IntRange(0, len(smoothOps)-1).Draw(t, label+" op"), a: rapid.IntRange(0, nIn+i-1).Draw(t, label+" a")}
		if smoothOps[s.op].f2 != nil {
			s.b = rapid.IntRange(0, nIn+i-1).Draw(t, label+" b")
		}
		e = append(e, s)
	}
	return e
}

func (e ctlExpr) eval(in []*T) *T {
	v := append([]*T(nil), in...)
	for _, s := range e {
		o := smoothOps[s.op]
		if o.f2 != nil {
			v = append(v, o.f2(v[s.a], v[s.b]))
		} else {
			v = append(v, o.f1(v[s.a]))
		}
	}
	return v[len(v)-1]
}

func (e ctlExpr) format(names []string) string {
	v := append([]string(nil), names...)
	for _, s := range e {
		o := smoothOps[s.op]
		if o.f2 != nil {
			v = append(v, fmt.Sprintf("%s(%s, %s)", o.name, v[s.a], v[s.b]))
		} else {
			v = append(v, fmt.Sprintf("%s(%s)", o.name, v[s.a]))
		}
	}
	return v[len(v)-1]
}

// ctlProgram is one random program.
type ctlProgram struct {
	nC     int
	shape  []int
	length int
	// next[i] computes carry leaf i; with cond[i], alt[i] is the
	// expression taken when the slice's first element is negative.
	next, alt []ctlExpr
	cond      []bool
	reverse   bool
	unroll    int
	// after: the two sums the final Cond picks from.
	after [2]ctlExpr
}

func drawCtlProgram(t *rapid.T) ctlProgram {
	p := ctlProgram{
		nC:      rapid.IntRange(1, 3).Draw(t, "carries"),
		length:  rapid.IntRange(1, 5).Draw(t, "length"),
		reverse: rapid.Bool().Draw(t, "reverse"),
	}
	p.unroll = rapid.IntRange(1, p.length+1).Draw(t, "unroll")
	p.shape = make([]int, rapid.IntRange(0, 1).Draw(t, "rank"))
	for i := range p.shape {
		p.shape[i] = rapid.IntRange(1, 3).Draw(t, "dim")
	}
	nIn := p.nC + 2 // carries, x, w
	for i := 0; i < p.nC; i++ {
		p.next = append(p.next, drawCtlExpr(t, nIn, fmt.Sprintf("carry %d", i)))
		c := rapid.Bool().Draw(t, "cond")
		p.cond = append(p.cond, c)
		var alt ctlExpr
		if c {
			alt = drawCtlExpr(t, nIn, fmt.Sprintf("carry %d alt", i))
		}
		p.alt = append(p.alt, alt)
	}
	for k := range p.after {
		p.after[k] = drawCtlExpr(t, p.nC+1, fmt.Sprintf("after %d", k))
	}
	return p
}

func (p ctlProgram) String() string {
	names := []string{"x", "w"}
	for i := p.nC - 1; i >= 0; i-- {
		names = append([]string{fmt.Sprintf("c%d", i)}, names...)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "scan length %d reverse %v unroll %d shape %v:", p.length, p.reverse, p.unroll, p.shape)
	for i := range p.next {
		if p.cond[i] {
			fmt.Fprintf(&b, " c%d' = tanh(x₀ > 0 ? %s : %s);", i, p.next[i].format(names), p.alt[i].format(names))
		} else {
			fmt.Fprintf(&b, " c%d' = tanh(%s);", i, p.next[i].format(names))
		}
	}
	fmt.Fprintf(&b, " then s > 0 ? Σ %s : Σ %s", p.after[1].format(append(names[:p.nC:p.nC], "ys")), p.after[0].format(append(names[:p.nC:p.nC], "ys")))
	return b.String()
}

// brancher picks between two functions of the operands on pred (a float
// scalar tensor): transforms.Cond, or a Go if on its concrete value.
type brancher func(pred *T, f, g func([]*T) *T, ops []*T) *T

func withCond(pred *T, f, g func([]*T) *T, ops []*T) *T {
	return transforms.Cond(peel.Greater(pred, 0.0), f, g, ops)
}

func withGoIf(pred *T, f, g func([]*T) *T, ops []*T) *T {
	if pred.Item() > 0 {
		return f(ops)
	}
	return g(ops)
}

// step is the body: the new carry leaves and the y.
func (p ctlProgram) step(br brancher, c []*T, x, w *T) ([]*T, *T) {
	in := append(append([]*T(nil), c...), x, w)
	next := make([]*T, p.nC)
	for i, e := range p.next {
		// A pointwise expression may not use every input: broadcast to
		// the carry's shape.
		f := func(e ctlExpr) func([]*T) *T {
			return func(in []*T) *T { return peel.Add(e.eval(in), peel.ZerosLike(in[i])) }
		}
		var v *T
		if p.cond[i] {
			first := x
			if x.Rank() > 0 {
				first = peel.Index(x, 0)
			}
			v = br(first, f(e), f(p.alt[i]), in)
		} else {
			v = f(e)(in)
		}
		next[i] = peel.Tanh(v)
	}
	return next, next[0]
}

type ctlArgs struct {
	Init []*T
	Xs   *T
	W    *T
	S    *T // the final Cond's scalar
}

// finish is the final Cond: one of two sums of the final carries and
// the stacked ys.
func (p ctlProgram) finish(br brancher, c []*T, ys, s *T) *T {
	in := append(append([]*T(nil), c...), peel.Sum(ys))
	sum := func(e ctlExpr) func([]*T) *T { return func(in []*T) *T { return peel.Sum(e.eval(in)) } }
	return br(s, sum(p.after[1]), sum(p.after[0]), in)
}

// results runs the program with Scan and Cond: the final carries and the
// ys.
func (p ctlProgram) results(a ctlArgs) ([]*T, *T) {
	opts := []peel.ScanOption{transforms.Unroll(p.unroll)}
	if p.reverse {
		opts = append(opts, peel.Reverse())
	}
	return transforms.Scan(func(c []*T, x *T) ([]*T, *T) { return p.step(withCond, c, x, a.W) }, a.Init, a.Xs, opts...)
}

func (p ctlProgram) loss(a ctlArgs) *T {
	c, ys := p.results(a)
	return p.finish(withCond, c, ys, a.S)
}

// goResults is the oracle's loop, branching with br.
func (p ctlProgram) goResults(br brancher, a ctlArgs) ([]*T, *T) {
	c := a.Init
	ys := make([]*T, p.length)
	for k := 0; k < p.length; k++ {
		i := k
		if p.reverse {
			i = p.length - 1 - k
		}
		c, ys[i] = p.step(br, c, peel.Index(a.Xs, i), a.W)
	}
	return c, peel.Stack(ys, 0)
}

func (p ctlProgram) goLoss(br brancher) func(a ctlArgs) *T {
	return func(a ctlArgs) *T {
		c, ys := p.goResults(br, a)
		return p.finish(br, c, ys, a.S)
	}
}

// drawAway draws n values in ±[0.1, 1.5]: signs a branch can be chosen
// on.
func drawAway(t *rapid.T, name string, n int) []float64 {
	v := rapid.SliceOfN(rapid.Float64Range(0.1, 1.5), n, n).Draw(t, name)
	for i := range v {
		if rapid.Bool().Draw(t, name+" sign") {
			v[i] = -v[i]
		}
	}
	return v
}

func drawCtlArgs(t *rapid.T, p ctlProgram, lanes int) ctlArgs {
	var lead []int
	if lanes > 0 {
		lead = []int{lanes}
	}
	var a ctlArgs
	for i := 0; i < p.nC; i++ {
		a.Init = append(a.Init, ctlTensor(t, fmt.Sprintf("init %d", i), append(lead, p.shape...)))
	}
	xshape := append(append(lead, p.length), p.shape...)
	n := 1
	for _, d := range xshape {
		n *= d
	}
	a.Xs = peel.Reshape(peel.FromFloat64s(drawAway(t, "xs", n)), xshape...)
	a.W = ctlTensor(t, "w", p.shape)
	a.S = peel.Scalar(drawAway(t, "s", 1)[0])
	return a
}

// ctlTensor is drawTensor, a scalar for the empty shape.
func ctlTensor(t *rapid.T, name string, shape []int) *T {
	x := drawTensor(t, name, shape)
	if len(shape) == 0 {
		return peel.Reshape(x)
	}
	return x
}

func ctlNear(t *rapid.T, what string, got, want *T, tol float64) {
	t.Helper()
	if g, w := got.TypeString(), want.TypeString(); g != w {
		t.Fatalf("%s: %s, want %s", what, g, w)
	}
	gv, wv := got.Float64s(), want.Float64s()
	for i := range gv {
		if math.Abs(gv[i]-wv[i]) > tol*math.Max(1, math.Abs(wv[i])) {
			t.Fatalf("%s: element %d is %v, want %v (all: %v vs %v)", what, i, gv[i], wv[i], gv, wv)
		}
	}
}

func ctlArgsNear(t *rapid.T, what string, got, want ctlArgs, tol float64) {
	t.Helper()
	for i := range want.Init {
		ctlNear(t, fmt.Sprintf("%s init %d", what, i), got.Init[i], want.Init[i], tol)
	}
	ctlNear(t, what+" xs", got.Xs, want.Xs, tol)
	ctlNear(t, what+" w", got.W, want.W, tol)
	ctlNear(t, what+" s", got.S, want.S, tol)
}

// TestRapidControlEval: Scan and Cond compute what the Go loop with Go
// ifs does: the same ops in the same order, to 1e-14.
func TestRapidControlEval(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawCtlProgram(t)
		a := drawCtlArgs(t, p, 0)
		t.Logf("%s", p)
		c, ys := p.results(a)
		wc, wys := p.goResults(withGoIf, a)
		for i := range wc {
			ctlNear(t, fmt.Sprintf("carry %d", i), c[i], wc[i], 1e-14)
		}
		ctlNear(t, "ys", ys, wys, 1e-14)
		ctlNear(t, "loss", p.loss(a), p.goLoss(withGoIf)(a), 1e-14)
	})
}

// TestRapidControlGrad: Grad through Scan and Cond is Grad of the Go
// loop (with Cond, which differentiates the taken branch), to 1e-10
// relative: the scan's transpose sums the weight's cotangents over the
// steps in its own order.
func TestRapidControlGrad(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawCtlProgram(t)
		a := drawCtlArgs(t, p, 0)
		t.Logf("%s", p)
		ctlArgsNear(t, "grad", transforms.Grad(p.loss)(a), transforms.Grad(p.goLoss(withCond))(a), 1e-10)
	})
}

// TestRapidControlVmap: Vmap over lanes of the initial carries and the
// xs (the weight and the final Cond's scalar shared) is the loop over
// lanes, to 1e-13; with a batched predicate the Cond in the body runs
// both branches and selects per lane.
func TestRapidControlVmap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawCtlProgram(t)
		lanes := rapid.IntRange(1, 3).Draw(t, "lanes")
		a := drawCtlArgs(t, p, lanes)
		t.Logf("%s, %d lanes", p, lanes)
		type lane struct {
			Init []*T
			Xs   *T
		}
		f := func(l lane) *T { return p.loss(ctlArgs{Init: l.Init, Xs: l.Xs, W: a.W, S: a.S}) }
		got := transforms.Vmap(f)(lane{Init: a.Init, Xs: a.Xs})
		var want []*T
		for k := 0; k < lanes; k++ {
			l := lane{Xs: peel.Index(a.Xs, k)}
			for _, c := range a.Init {
				l.Init = append(l.Init, peel.Index(c, k))
			}
			want = append(want, p.goLoss(withGoIf)(ctlArgs{Init: l.Init, Xs: l.Xs, W: a.W, S: a.S}))
		}
		ctlNear(t, "vmap", got, peel.Stack(want, 0), 1e-13)
	})
}

// TestRapidControlCompile: compiled, the program and its gradient are
// the uncompiled ones, to 1e-12 (fusion may round differently).
func TestRapidControlCompile(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawCtlProgram(t)
		a := drawCtlArgs(t, p, 0)
		t.Logf("%s", p)
		ctlNear(t, "compiled", transforms.Compile(p.loss)(a), p.loss(a), 1e-12)
		ctlArgsNear(t, "compiled grad", transforms.Compile(transforms.Grad(p.loss))(a), transforms.Grad(p.loss)(a), 1e-12)
	})
}
