package transforms

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/autodiff"
	"github.com/peel-ml/peel/batching"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/internal/lru"
	"github.com/peel-ml/peel/internal/treeimpl"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// While loops. WhileLoop traces its predicate and its body once, on the
// types of the carry leaves, into two graphs (closure-converted as a
// scan's body is: the tensors either captures become trailing inputs of
// both), and binds one primitive, while, on the carry leaves and the
// captured tensors. The cond graph returns one bool scalar; the body
// graph returns the new carry leaves. while is a composite marked Whole:
//
//   - eval (Impl) loops in Go: it evaluates the cond graph, reads the
//     concrete predicate and, while it is true, replaces the carry with
//     the body graph's results;
//   - staging (MakeGraph, Compile) records it as one equation,
//     while[cond={…} body={…}] with both graphs printed, which a compiled
//     program runs by its Impl: the loop is not unrolled and the compile
//     time does not depend on the trip count;
//   - its JVP rule runs a while over (primal, tangent) carries: its body
//     is the JVP of the body graph (every float carry has a tangent,
//     since a step may make a zero one nonzero), its predicate the cond
//     graph on the primals only. With concrete tangents (eager JVP) that
//     one loop gives the primals and the tangents. With traced tangents
//     (linearize, the front half of Grad, VJP, Jacrev and Jacfwd, whose
//     primals run eagerly while the tangents are recorded; a compiled
//     JVP whose tangents are arguments; the JVP graph a Scan, Cond or Checkpoint splits into known
//     and linear equations) the primals come from a while on the primals
//     and the tangents from while_lin: a linear primitive whose forward
//     map runs the JVP while (so Jacfwd and staged JVPs work; the primal
//     loop runs twice) and whose transpose raises *peel.Error, since the
//     number of steps, and so what a backward pass would save, is known
//     only when the loop has run (use MaxTrips, ForiLoop or Scan); a
//     loop bounded with MaxTrips is differentiated as fixed loops
//     instead (while_bounded.go);
//   - its batching rule finds which carry leaves are batched (those batched
//     initially, and those the body makes depend on a batched value, to a
//     fixed point) and whether the predicate depends on a batched value.
//     An unbatched predicate keeps one while whose graphs are vmapped
//     (the carry leaves that stay unbatched stay so). A batched predicate
//     makes every carry leaf batched and binds a while whose carry also
//     holds the lanes' predicates (computed once on the initial carry,
//     then by each step on its new carry), which runs until no lane's
//     predicate holds, and whose body runs the vmapped body on every lane
//     and keeps the old carry of each lane whose predicate is false (a
//     select by the lane's predicate), so each lane's result is that of
//     its own loop.

// whileParams are the while primitive's parameters: the cond graph (one
// bool scalar result) and the body graph (nCarry results), both with the
// inputs: nCarry carry leaves, then the captured tensors of both.
type whileParams struct {
	cond, body *interp.Graph
	nCarry     int
	// maxTrips, when positive, is MaxTrips's bound: the loop's carry
	// holds a trip counter its predicate reads, so it stops within
	// maxTrips steps, and the JVP rule runs the bounded formulation
	// (whileBoundedJVP), which reverse mode transposes.
	maxTrips int
	// boundedOnce makes bounded, whileBounded traced on the operands'
	// types, which the JVP rule differentiates at every call.
	boundedOnce sync.Once
	bounded     *interp.Graph
	// jvps caches the JVP while by tangent mask; batched the batched
	// while by layout.
	jvps    lru.Cache[string, *whileParams]
	batched lru.Cache[string, *batchedWhile]
	// condProg and bodyProg are the graphs' programs when a compiled
	// program holds the while (markCompiledLoops).
	condProg, bodyProg subProgram
	// quiet is this while without its debug prints (withoutPrints).
	quietOnce sync.Once
	quiet     *whileParams
}

// withoutPrints returns p with the debug prints of its graphs left out,
// or p when it has none: the tangents' loop of a staged JVP (while_lin),
// whose primals' loop prints already, so that a print in the body shows
// once per step under Jacfwd and staged JVPs too.
func (p *whileParams) withoutPrints() *whileParams {
	p.quietOnce.Do(func() {
		c, b := dropPrints(p.cond), dropPrints(p.body)
		if c == p.cond && b == p.body {
			p.quiet = p
			return
		}
		p.quiet = &whileParams{cond: c, body: b, nCarry: p.nCarry, maxTrips: p.maxTrips}
	})
	return p.quiet
}

// dropPrints returns g without its debug_print equations whose token no
// equation or output reads, or g itself when it has none.
func dropPrints(g *interp.Graph) *interp.Graph {
	used := map[*interp.Var]bool{}
	for _, e := range g.Eqns {
		for _, v := range e.In {
			used[v] = true
		}
	}
	for _, v := range g.Out {
		used[v] = true
	}
	drop := func(e *interp.Eqn) bool { return e.Prim == prims.DebugPrint && !used[e.Out[0]] }
	if !slices.ContainsFunc(g.Eqns, drop) {
		return g
	}
	c := *g
	c.Eqns = slices.DeleteFunc(slices.Clone(g.Eqns), drop)
	return &c
}

// HasEffect reports whether the predicate or the body acts outside its
// results (interp.Effectful).
func (w *whileParams) HasEffect() bool { return w.cond.HasEffect() || w.body.HasEffect() }

// markCompiled marks the while as held by a compiled program
// (markCompiledLoops).
func (w *whileParams) markCompiled() {
	w.condProg.mark()
	w.bodyProg.mark()
}

func (w *whileParams) String() string {
	return "cond=" + oneLine(w.cond) + " body=" + oneLine(w.body)
}

// oneLine is g printed on one line.
func oneLine(g *interp.Graph) string { return strings.Join(strings.Fields(g.String()), " ") }

func whileAbstract(params any, in []interp.Aval) []interp.Aval {
	w := params.(*whileParams)
	g := w.body
	if len(in) != len(g.In) {
		panic(interp.Errorf("while takes %d operands, got %d", len(g.In), len(in)))
	}
	for i, v := range g.In {
		if !in[i].Equal(v.Aval) {
			panic(interp.Errorf("while's operand %d must be %v, got %v", i, v.Aval, in[i]))
		}
	}
	return outAvals(g)
}

// whileRun is the loop on args (the carry leaves, then the captured
// tensors); it returns the final carry leaves. The predicate must be
// readable (concrete, or a value the running interpreter can read): a
// staging trace that decomposes every composite (MakeGraph with
// Decompose) gets *Error.
func whileRun(w *whileParams, args []*tensor) []*tensor {
	nC := w.nCarry
	in := append([]*tensor(nil), args...)
	for {
		p := w.cond.Eval(in...)[0]
		if interp.IsStaged(p) {
			e := interp.Errorf("a while loop cannot be decomposed into the primitives of its steps (MakeGraph with Decompose): its number of steps is known only when it runs")
			e.Ops = []string{"transforms.WhileLoop"}
			panic(e)
		}
		if p.Item() == 0 {
			return in[:nC:nC]
		}
		copy(in, w.body.Eval(in...))
	}
}

func whileImpl(params any, args []*tensor) []*tensor {
	defer interp.Decomposing("while")
	return whileRun(params.(*whileParams), args)
}

// whileEvalImpl is whileImpl on concrete operands: a while that a
// compiled program holds runs its predicate's and its body's programs at
// every step, each body step donating the carries the step before made
// (as a compiled scan's steps do); an eager one does so from its
// loopTierSteps-th step on (subProgram.tier).
func whileEvalImpl(params any, args []*tensor) []*tensor {
	defer interp.Decomposing("while")
	w := params.(*whileParams)
	be := interp.DefaultBackend()
	if len(args) > 0 {
		_, be = interp.ArrayOf(args[0])
	}
	nC := w.nCarry
	in := append([]*tensor(nil), args...)
	var donate, given []bool
	// programs returns the loop's programs (both or neither), preparing
	// the donation of carries and the constants on first success.
	programs := func(cond, body program) (program, program) {
		if cond == nil || body == nil {
			return nil, nil
		}
		donate, given = make([]bool, nC), make([]bool, nC)
		// A program copies an operand that is not contiguous on every
		// run: copy the constants once, before the compiled steps.
		for i := nC; i < len(in); i++ {
			if a, _ := interp.ArrayOf(in[i]); !a.IsContiguous() {
				in[i] = interp.Contiguous(in[i])
			}
		}
		return cond, body
	}
	cond, body := programs(w.condProg.get(w.cond, be), w.bodyProg.get(w.body, be))
	for step := 0; ; step++ {
		var p *tensor
		if cond != nil {
			p = cond.Run(in, nil)[0]
		} else {
			p = w.cond.Eval(in...)[0]
		}
		if p.Item() == 0 {
			return in[:nC:nC]
		}
		if body == nil {
			// The predicate of the step that tiers up was evaluated: a
			// loop ending there builds nothing.
			cond, body = programs(w.condProg.tier(w.cond, be, step), w.bodyProg.tier(w.body, be, step))
		}
		if body == nil {
			copy(in, w.body.Eval(in...))
			continue
		}
		out := body.Run(in, donate)
		copy(given, donate)
		for c := range donate {
			donate[c] = fresh(out[c], c, in, out, given)
		}
		copy(in, out)
	}
}

// whileLinParams are while_lin's parameters: the JVP while (its carries
// the primal carries, then the float carries' tangents) whose results
// lo to hi (the tangents) are while_lin's.
type whileLinParams struct {
	w      *whileParams
	lo, hi int
}

func (p *whileLinParams) String() string { return p.w.String() }

// markCompiled marks the JVP while that while_lin runs (markCompiledLoops).
func (p *whileLinParams) markCompiled() { p.w.markCompiled() }

func whileLinImpl(params any, args []*tensor) []*tensor {
	p := params.(*whileLinParams)
	return interp.Bind(whilePrim, p.w, args...)[p.lo:p.hi]
}

// whilePrim is while; whileLin maps the tangents of a while (see the top
// of the file): linear in its tangent operands, with a transpose that
// refuses.
var whilePrim, whileLin = func() (*interp.Prim, *interp.Prim) {
	p := graphio.ParamsWith[*whileParams](interp.NewPrim("while", interp.Pure, whileAbstract), encodeWhile, decodeWhile)
	p.Whole = true // one equation when staged
	p.Impl = whileImpl
	p.EvalImpl = whileEvalImpl
	l := graphio.ParamsWith[*whileLinParams](interp.NewPrim("while_lin", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
		lp := params.(*whileLinParams)
		return whileAbstract(lp.w, in)[lp.lo:lp.hi]
	}), encodeWhileLin, decodeWhileLin)
	l.Whole = true
	// Linear in its tangent operands; the primal ones are never tangents
	// (and the transpose refuses anyway).
	l.Linear = []bool{true}
	return p, l
}()

// whileReverseError is the error of reverse-mode differentiation through
// a WhileLoop.
func whileReverseError() *interp.Error {
	e := interp.Errorf("reverse-mode differentiation (Grad, VJP, Jacrev, Hessian) of a loop whose number of steps depends on values needs a bound: pass transforms.MaxTrips(n) to WhileLoop (the backward pass then stores O(√n) carries), or use transforms.ForiLoop (static bounds) or transforms.Scan (a fixed number of steps); forward mode (JVP, Jacfwd) needs no bound")
	e.Ops = []string{"transforms.WhileLoop"}
	return e
}

func whileLinTranspose(any, []*tensor, []*tensor, []bool) []*tensor {
	panic(whileReverseError())
}

// whileJVP is while's forward-mode rule (see the top of the file).
func whileJVP(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
	w := params.(*whileParams)
	if w.maxTrips > 0 {
		w.boundedOnce.Do(func() {
			in := make([]interp.Aval, len(w.body.In))
			for i, v := range w.body.In {
				in[i] = v.Aval
			}
			w.bounded = interp.TraceAvals("while", func(in []*tensor) []*tensor { return whileBounded(w, in) }, in)
		})
		return autodiff.JVP("while", func(in []*tensor) []*tensor { return w.bounded.Eval(in...) }, primals, tangents)
	}
	nC := w.nCarry
	has := make([]bool, len(primals))
	nFC := 0
	for i, p := range primals {
		has[i] = p.DType().IsFloat() && (i < nC || tangents[i] != nil)
		if has[i] && i < nC {
			nFC++
		}
	}
	touts := make([]*tensor, nC)
	if nFC == 0 {
		// No float carry: no result has a tangent.
		return interp.Bind(whilePrim, w, primals...), touts
	}
	j := w.jvp(has)
	args := append([]*tensor(nil), primals[:nC]...)
	traced := false
	for i, h := range has {
		if i == nC {
			args = append(args, primals[nC:]...)
		}
		if !h {
			continue
		}
		t := tangents[i]
		if t == nil {
			t = autodiff.ZerosLike(primals[i])
		}
		traced = traced || !t.IsConcrete()
		args = append(args, t)
	}
	if len(has) == nC {
		args = append(args, primals[nC:]...)
	}
	if !traced {
		// One loop for the primals and the tangents.
		outs := interp.Bind(whilePrim, j, args...)
		spreadFloat(touts, outs[:nC], outs[nC:])
		return outs[:nC], touts
	}
	// The primals by a loop of their own, so that a split of the
	// equations into known and linear ones (linearize, Scan's, Cond's and
	// Checkpoint's plans) finds them known.
	outs := interp.Bind(whilePrim, w, primals...)
	ts := interp.Bind(whileLin, &whileLinParams{w: j.withoutPrints(), lo: nC, hi: j.nCarry}, args...)
	spreadFloat(touts, outs, ts)
	return outs, touts
}

// jvp returns (once per tangent mask) the JVP while: carries the primal
// carries then the float carries' tangents, constants the captured
// tensors then their tangents present (has); its body is the body's JVP,
// its predicate the cond graph on the primals.
func (w *whileParams) jvp(has []bool) *whileParams {
	key := maskKey(has)
	if j, ok := w.jvps.Load(key); ok {
		return j
	}
	nC := w.nCarry
	n := len(has)
	in := w.body.In
	var avals []interp.Aval
	// pos[i] is the index of operand i's tangent in the JVP while's
	// inputs (-1: none); prim[i] that of its primal.
	pos, prim := make([]int, n), make([]int, n)
	add := func(i int, tangent bool) {
		if tangent {
			pos[i] = len(avals)
		} else {
			prim[i] = len(avals)
		}
		avals = append(avals, in[i].Aval)
	}
	for i := range pos {
		pos[i] = -1
	}
	for i := 0; i < nC; i++ {
		add(i, false)
	}
	for i := 0; i < nC; i++ {
		if has[i] {
			add(i, true)
		}
	}
	for i := nC; i < n; i++ {
		add(i, false)
	}
	for i := nC; i < n; i++ {
		if has[i] {
			add(i, true)
		}
	}
	split := func(xs []*tensor) (ps, ts []*tensor) {
		ps, ts = make([]*tensor, n), make([]*tensor, n)
		for i := range ps {
			ps[i] = xs[prim[i]]
			if pos[i] >= 0 {
				ts[i] = xs[pos[i]]
			}
		}
		return ps, ts
	}
	body := interp.TraceAvals("while", func(xs []*tensor) []*tensor {
		ps, ts := split(xs)
		// evalInlined with decompose, as Scan's and Checkpoint's J: a
		// composite without a JVP rule of its own (a user-defined op, a
		// compiled call) runs as its decomposition, since its derivative
		// (composite_lin) would hold values of this trace, dead once it
		// returns, in its parameters.
		outs, touts := autodiff.JVP("while", func(a []*tensor) []*tensor { return evalInlined(w.body, a, true) }, ps, ts)
		res := append([]*tensor(nil), outs...)
		for i := 0; i < nC; i++ {
			if has[i] {
				t := touts[i]
				if t == nil {
					t = autodiff.ZerosLike(outs[i])
				}
				res = append(res, t)
			}
		}
		return res
	}, avals)
	cond := interp.TraceAvals("while", func(xs []*tensor) []*tensor {
		ps, _ := split(xs)
		return w.cond.Eval(ps...)
	}, avals)
	nFC := 0
	for i := 0; i < nC; i++ {
		if has[i] {
			nFC++
		}
	}
	j, _ := w.jvps.LoadOrStore(key, &whileParams{cond: cond, body: body, nCarry: nC + nFC})
	return j
}

// dependsOn reports, for each of g's results, whether it depends on an
// input marked in dep (a sub-graph's equation counts as depending on all
// its operands).
func dependsOn(g *interp.Graph, dep []bool) []bool {
	d := make([]bool, g.IDBound())
	for i, v := range g.In {
		d[v.ID] = dep[i]
	}
	for _, e := range g.Eqns {
		any := false
		for _, v := range e.In {
			any = any || d[v.ID]
		}
		for _, v := range e.Out {
			d[v.ID] = any
		}
	}
	res := make([]bool, len(g.Out))
	for i, v := range g.Out {
		res[i] = d[v.ID]
	}
	return res
}

// vmappedAt is vmapped with out dims odims (0 or batching.NotMapped for
// a result that depends on no batched operand).
func vmappedAt(l lanes, dims, odims []int, fn func([]*tensor) []*tensor) func([]*tensor) []*tensor {
	axes := make([]int, len(dims))
	for i, d := range dims {
		axes[i] = d
		if d == batching.NotMapped {
			axes[i] = unmapped
		}
	}
	oax := make([]int, len(odims))
	for i, d := range odims {
		if d == batching.NotMapped {
			oax[i] = unmapped
		}
	}
	cfg := &vmapConfig{axisSize: l.size, axisName: l.axis}
	return func(in []*tensor) []*tensor {
		return vmapFlat("transforms.Vmap", cfg, fn, in, append([]int(nil), axes...), func([]*tensor) []int {
			return append([]int(nil), oax...)
		}, nil)
	}
}

// batchedWhile is a batched while: its parameters and, for a batched
// predicate, mask, the vmapped cond graph, which gives the lanes'
// predicates on the initial carry (the batched while's carry after the
// carry leaves).
type batchedWhile struct {
	p    *whileParams
	mask *interp.Graph
}

// operands are the batched while's operands: ops with the initial lane
// predicates after the nC carry leaves, when the predicate is batched.
func (b *batchedWhile) operands(nC int, ops []*tensor) []*tensor {
	if b.mask == nil {
		return ops
	}
	return slices.Concat(ops[:nC], b.mask.Eval(ops...), ops[nC:])
}

// batch is the batching rule's work for while and while_lin (see the top
// of the file): the batched while's parameters, its operands and the
// batch dims of its first results (the carry leaves; with a batched
// predicate, the lanes' predicates follow).
func (w *whileParams) batch(l lanes, vals []*tensor, dims []int) (*whileParams, []*tensor, []int) {
	size := l.size
	nC := w.nCarry
	bat := make([]bool, len(vals))
	for i, d := range dims {
		bat[i] = d != batching.NotMapped
	}
	for changed := true; changed; {
		changed = false
		for i, b := range dependsOn(w.body, bat) {
			if b && !bat[i] {
				bat[i], changed = true, true
			}
		}
	}
	predBatched := dependsOn(w.cond, bat)[0]
	ops := make([]*tensor, len(vals))
	in := make([]int, len(vals))
	out := make([]int, nC)
	for i, v := range vals {
		d := dims[i]
		if i < nC {
			d = batching.NotMapped
			if bat[i] || predBatched {
				v, d = batching.ToFront(v, dims[i], size), 0
			}
			out[i] = d
		}
		ops[i], in[i] = v, d
	}
	var b strings.Builder
	b.WriteString(strconv.Itoa(size))
	b.WriteString(l.axis)
	for _, d := range in {
		b.WriteByte(',')
		b.WriteString(strconv.Itoa(d))
	}
	b.WriteByte(':')
	avals := avalsOf(ops)
	b.WriteString(interp.AvalsKey(avals))
	key := b.String()
	if bw, ok := w.batched.Load(key); ok {
		return bw.p, bw.operands(nC, ops), out
	}
	pd := batching.NotMapped
	if predBatched {
		pd = 0
	}
	cond := interp.TraceAvals("while", vmappedAt(l, in, []int{pd}, func(xs []*tensor) []*tensor { return w.cond.Eval(xs...) }), avals)
	body := interp.TraceAvals("while", vmappedAt(l, in, out, func(xs []*tensor) []*tensor { return w.body.Eval(xs...) }), avals)
	bw := &batchedWhile{p: &whileParams{cond: cond, body: body, nCarry: nC, maxTrips: w.maxTrips}}
	if predBatched {
		// The lanes' predicates are one more carry: the loop runs while
		// some lane's holds, a lane whose predicate is false keeps its
		// carry, and each step computes the predicates of the new carry.
		bw.mask = cond
		mavals := slices.Concat(avals[:nC], []interp.Aval{cond.Out[0].Aval}, avals[nC:])
		bw.p = &whileParams{nCarry: nC + 1, maxTrips: w.maxTrips}
		bw.p.cond = interp.TraceAvals("while", func(xs []*tensor) []*tensor {
			return []*tensor{peel.Any(xs[nC])}
		}, mavals)
		bw.p.body = interp.TraceAvals("while", func(xs []*tensor) []*tensor {
			m, consts := xs[nC], xs[nC+1:]
			next := body.Eval(slices.Concat(xs[:nC], consts)...)
			for i, v := range next {
				bm := interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: v.Shape(), Dims: []int{0}}, m)
				next[i] = interp.Bind1(prims.Where, nil, bm, v, xs[i])
			}
			return append(next, cond.Eval(slices.Concat(next, consts)...)...)
		}, mavals)
	}
	bw, _ = w.batched.LoadOrStore(key, bw)
	return bw.p, bw.operands(nC, ops), out
}

func init() {
	whilePrim.JVP = whileJVP
	whileLin.Impl = whileLinImpl
	whileLin.JVP = func(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
		return autodiff.JVP("while", func(in []*tensor) []*tensor { return whileLinImpl(params, in) }, primals, tangents)
	}
	whileLin.Transpose = whileLinTranspose
	batching.RegisterNamed(whilePrim, func(axis string, size int, params any, vals []*tensor, dims []int) ([]*tensor, []int) {
		np, ops, out := params.(*whileParams).batch(lanes{size, axis}, vals, dims)
		return interp.Bind(whilePrim, np, ops...)[:len(out)], out
	})
	batching.RegisterNamed(whileLin, func(axis string, size int, params any, vals []*tensor, dims []int) ([]*tensor, []int) {
		lp := params.(*whileLinParams)
		np, ops, out := lp.w.batch(lanes{size, axis}, vals, dims)
		return interp.Bind(whileLin, &whileLinParams{w: np, lo: lp.lo, hi: lp.hi}, ops...), out[lp.lo:lp.hi]
	})
}

// WhileLoop is JAX's lax.while_loop: it returns
//
//	carry := init
//	for cond(carry) {
//		carry = body(carry)
//	}
//
// where cond returns a scalar tensor: a bool, or a number, true when
// nonzero (as Cond's pred). cond and body are traced once, on the types
// of init's leaves, and may capture tensors (captured tracers of an
// enclosing transform are differentiated and batched as operands are).
// body must return a carry of init's structure, with leaves of the same
// shapes and dtypes. Eagerly the loop runs in Go; under Compile and
// MakeGraph it is one while equation, not unrolled, whose number of
// steps is decided each time the program runs.
//
// Forward mode (JVP, Jacfwd) differentiates through the loop: a while
// over the primal and tangent carries, the predicate reading the
// primals (when the tangents are traced, as in Jacfwd or when a
// compiled function's argument is the tangent, the primals also run as
// a loop of their own, so the primal loop runs twice). Reverse mode
// (Grad, VJP, Jacrev, Hessian) needs a bound, MaxTrips(n): the number of
// steps, and so what to save for the backward pass, is known only when
// the loop has run, and with the bound the backward pass keeps the
// carries that start chunks of √n steps and recomputes each chunk (see
// MaxTrips). A gradient that reaches a WhileLoop without one panics
// with *peel.Error (eagerly when the backward pass runs, under Compile
// when it is traced) saying to pass MaxTrips or use ForiLoop (static
// bounds) or Scan (a fixed number of steps).
//
// Under Vmap, when the predicate depends on no batched value the loop
// stays one loop of the vmapped body. When it does, the loop runs until
// the predicate is false on every lane, and a lane whose predicate is
// already false keeps its carry while the others step, so each lane's
// result is that of running its own loop (the body runs on every lane
// at every step, so its effects happen for finished lanes too).
//
// A cond or body that writes in place into a tensor it makes works; a
// write into a tensor captured from outside it (whatever the written
// value) panics with *peel.Error naming the write and WhileLoop, as in
// Scan and Cond: traced once, the write would happen once, not at every
// step.
//
// init and the result are trees (see Grad). WhileLoop panics with
// *peel.Error when cond or body is nil, when cond returns nil or a
// tensor that is not a scalar (naming its shape and dtype), when body
// returns nil or a tree with a nil tensor, or when body's carry differs
// from init in structure, shape or dtype (naming the leaf path);
// otherwise it panics as cond and body do.
func WhileLoop[C any](cond func(C) *peel.Tensor, body func(C) C, init C, opts ...WhileOption) C {
	const op = "transforms.WhileLoop"
	defer interp.Annotate(op)
	if cond == nil {
		treeErrorf(op, "cond must not be nil")
	}
	if body == nil {
		treeErrorf(op, "body must not be nil")
	}
	var cfg whileConfig
	for _, o := range opts {
		o.applyWhile(&cfg)
	}
	if cfg.maxTrips > 0 {
		return boundedWhile(op, cond, body, init, cfg.maxTrips)
	}
	return whileLoop(op, cond, body, init, 0)
}

// whileLoop is WhileLoop with errors naming op, bounded by maxTrips
// when positive (the carry then holds the trip counter; see
// boundedWhile).
func whileLoop[C any](op string, cond func(C) *peel.Tensor, body func(C) C, init C, maxTrips int) C {
	cl, cdef := flatten(op, init)
	nC := len(cl)
	avals := avalsOf(cl)
	cg := interp.TraceAvals("while", func(in []*tensor) []*tensor {
		return []*tensor{predicate(op, cond(build[C](cdef, in)))}
	}, avals, interp.BodyTrace())
	cc := &userCall{op: op, in: cdef}
	bg := interp.TraceAvals("while", func(in []*tensor) []*tensor {
		return cc.outLeaves("body", body(build[C](cdef, in)))
	}, avals, interp.BodyTrace())
	if d := treeimpl.StructureDiff(cdef.Proto().Interface(), cc.out.Proto().Interface()); d != "" {
		treeErrorf(op, "body must return a carry of init's structure: %s", d)
	}
	for i := 0; i < nC; i++ {
		if got := bg.Out[i].Aval; !got.Equal(avals[i]) {
			treeErrorf(op, "body returns %v at carry path %s but init has %v: the carry must keep its shapes and dtypes", got, pathOr(cc.out.Paths()[i]), avals[i])
		}
	}
	cg, ccap := closureConvert(cg)
	bg, bcap := closureConvert(bg)
	// Both graphs take both captured lists: the cond's, then the body's
	// (each ignores the other's).
	cg = withInputs(cg, nC, nil, avalsOf(bcap))
	bg = withInputs(bg, nC, avalsOf(ccap), nil)
	w := &whileParams{cond: cg, body: bg, nCarry: nC, maxTrips: maxTrips}
	args := append(append(append([]*tensor(nil), cl...), ccap...), bcap...)
	return build[C](cc.out, interp.Bind(whilePrim, w, args...))
}

// predicate checks a loop's predicate p and returns it as a bool: a
// number is true when nonzero.
func predicate(op string, p *tensor) *tensor {
	if p == nil {
		treeErrorf(op, "cond returned a nil tensor")
	}
	if p.Rank() != 0 {
		treeErrorf(op, "cond must return a scalar (a bool, or a number: true when nonzero), got %s", p.TypeString())
	}
	if p.DType() != peel.Bool {
		p = peel.NotEqual(p, peel.AsType(peel.Scalar(0.0), p.DType()))
	}
	return p
}

// withInputs is g (its first n inputs the carry leaves, the rest its
// captured tensors) with inputs it does not read, of types before and
// after, around its captured ones.
func withInputs(g *interp.Graph, n int, before, after []interp.Aval) *interp.Graph {
	if len(before) == 0 && len(after) == 0 {
		return g
	}
	next := g.IDBound()
	fresh := func(as []interp.Aval) []*interp.Var {
		vs := make([]*interp.Var, len(as))
		for i, a := range as {
			vs[i] = &interp.Var{ID: next, Aval: a}
			next++
		}
		return vs
	}
	in := append([]*interp.Var(nil), g.In[:n]...)
	in = append(in, fresh(before)...)
	in = append(in, g.In[n:]...)
	in = append(in, fresh(after)...)
	return &interp.Graph{In: in, Consts: g.Consts, ConstVals: g.ConstVals, Eqns: g.Eqns, Out: g.Out}
}

// Map is JAX's lax.map: it applies f to each slice of xs along the
// leading axis of its leaves, which must all have the same leading size
// n, and stacks the results along a new axis 0:
//
//	for i := range n {
//		ys[i] = f(xs[i])
//	}
//
// It is a Scan whose step applies f (traced once), so it works under
// every transform as Scan does. With batchSize > 1 each step applies f
// vmapped to batchSize consecutive slices, and the last n mod batchSize
// slices are one more vmapped call after the scan; with batchSize <= 1
// each step applies f to one slice.
//
// xs and the result are trees (see Grad). Map panics with *peel.Error
// when f is nil, when xs has no tensor leaves, when an xs leaf is a
// scalar, when the xs leaves differ in leading size (naming the
// leaves), or when f writes in place into a tensor captured from outside
// it (as Scan); otherwise it panics as f does (f must return a tree of
// the same structure and types for every slice).
func Map[X, Y any](f func(X) Y, xs X, batchSize int) Y {
	const op = "transforms.Map"
	defer interp.Annotate(op)
	if f == nil {
		treeErrorf(op, "f must not be nil")
	}
	xl, xdef := flatten(op, xs)
	if len(xl) == 0 {
		treeErrorf(op, "xs has no tensor leaves: Map maps f over their leading axis")
	}
	xsLeaf := func(i int) string {
		if p := xdef.Paths()[i]; p != "" {
			return "xs leaf " + p
		}
		return "xs"
	}
	n := -1
	for i, x := range xl {
		if x.Rank() == 0 {
			treeErrorf(op, "%s is a scalar (%s): xs leaves are mapped along axis 0", xsLeaf(i), x.TypeString())
		}
		if n < 0 {
			n = x.Shape()[0]
		} else if m := x.Shape()[0]; m != n {
			treeErrorf(op, "the xs leaves must have one leading size: %s has %d but %s has %d", xsLeaf(0), n, xsLeaf(i), m)
		}
	}
	step := func(_ struct{}, x X) (struct{}, Y) { return struct{}{}, f(x) }
	if batchSize <= 1 || n == 0 {
		_, ys := Scan(step, struct{}{}, xs)
		return ys
	}
	q, r := n/batchSize, n%batchSize
	part := func(lo, hi int, reshape bool) []*tensor {
		leaves := make([]*tensor, len(xl))
		for i, x := range xl {
			s := x
			if lo != 0 || hi != n {
				s = peel.Slice(x, 0, lo, hi, 1)
			}
			if reshape {
				s = peel.Reshape(s, append([]int{q, batchSize}, x.Shape()[1:]...)...)
			}
			leaves[i] = s
		}
		return leaves
	}
	var parts [][]*tensor
	var ydef *treeDef
	if q > 0 {
		_, ys := Scan(func(_ struct{}, x X) (struct{}, Y) { return struct{}{}, Vmap(f)(x) }, struct{}{}, build[X](xdef, part(0, q*batchSize, true)))
		yl, d := flattenResult(op, ys)
		for i, y := range yl {
			yl[i] = peel.Reshape(y, append([]int{q * batchSize}, y.Shape()[2:]...)...)
		}
		parts, ydef = append(parts, yl), d
	}
	if r > 0 {
		yl, d := flattenResult(op, Vmap(f)(build[X](xdef, part(q*batchSize, n, false))))
		parts, ydef = append(parts, yl), d
	}
	if len(parts) == 1 {
		return build[Y](ydef, parts[0])
	}
	res := make([]*tensor, len(parts[0]))
	for i := range res {
		res[i] = peel.Concat([]*tensor{parts[0][i], parts[1][i]}, 0)
	}
	return build[Y](ydef, res)
}
