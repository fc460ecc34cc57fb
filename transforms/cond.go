package transforms

import (
	"strconv"
	"strings"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/autodiff"
	"github.com/peel-ml/peel/batching"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/internal/lru"
	"github.com/peel-ml/peel/internal/treeimpl"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Control flow. Switch (and Cond, a Switch of two branches) traces every
// branch into a graph over the operand leaves (closure-converted: the
// tensors a branch captures become trailing operands, so outer
// transforms see tracers among them as operands) and binds one
// primitive, cond, whose operands are the index, the operand leaves and
// every branch's captured tensors. cond is a composite marked Whole:
//
//   - eval reads the concrete index and evaluates the taken branch's
//     graph with Graph.Eval, so the transforms outside see its ops;
//   - staging (MakeGraph, Compile) records it as one equation,
//     cond[n branches], which a compiled program runs by its Impl (the
//     taken branch only);
//   - its JVP rule differentiates the taken branch inline when the index
//     is concrete (eager Grad, JVP, Jacrev, Hessian: only the taken
//     branch runs, and its linear ops are what reverse mode transposes).
//     When the index is a tracer (under Compile, or in a Vmap with a
//     batched predicate) it does JAX's partial evaluation of cond: each
//     branch's JVP graph is split, as a checkpoint saving everything
//     splits it (ckptParams.plan), into its known equations and its
//     linear ones. A forward cond (branches: the known equations,
//     returning the results and every branch's residuals, zeros for the
//     branches not taken) computes the primals, and cond_lin (branches:
//     the linear equations on the residuals and the tangents), marked
//     linear, maps the tangents. cond_lin's transpose is a cond of the
//     transposed branches, so a compiled gradient runs one branch
//     forward and one backward. Should a branch's JVP hold a linear
//     equation with values in its parameters (a CustomVJP's, which no
//     graph can return; traced branches hold none today), the rule
//     computes every branch's JVP and selects the results by the index
//     instead, where, as with jnp.where, a branch not taken whose
//     derivative is NaN at the operands can make the gradient NaN;
//   - its batching rule binds cond again with the branches vmapped when
//     the index is not batched; with a batched index every branch runs
//     vmapped on every lane and the results are selected lane by lane
//     (so the effects of every branch happen, as in JAX).

// condParams are the cond primitive's parameters: one graph per branch,
// each with the same inputs (the operand leaves, then every branch's
// captured tensors) and results of the same types.
type condParams struct {
	branches []*interp.Graph
	// batched caches, per branch, the branch vmapped by batch layout
	// (an unbatched index).
	batched []lru.Cache[string, *interp.Graph]
	// jvps caches the partial evaluation of the JVP by tangent mask (a
	// traced index).
	jvps lru.Cache[string, *condPlan]
	// transposes caches cond_lin's transposed branches by linear and
	// cotangent masks.
	transposes lru.Cache[string, *condParams]
	// progs are the branches' programs when a compiled program holds the
	// cond (markCompiledLoops), as a loop's body: a cond in a compiled
	// scan's step runs its branch planned and fused, not equation by
	// equation, at every step.
	progs []subProgram
}

// markCompiled marks the cond as held by a compiled program.
func (p *condParams) markCompiled() {
	for i := range p.progs {
		p.progs[i].mark()
	}
}

func (p *condParams) String() string { return strconv.Itoa(len(p.branches)) + " branches" }

// HasEffect reports whether a branch acts outside its results
// (interp.Effectful).
func (p *condParams) HasEffect() bool {
	for _, g := range p.branches {
		if g.HasEffect() {
			return true
		}
	}
	return false
}

func newCondParams(gs []*interp.Graph) *condParams {
	return &condParams{branches: gs, batched: make([]lru.Cache[string, *interp.Graph], len(gs)), progs: make([]subProgram, len(gs))}
}

func condAbstract(params any, in []interp.Aval) []interp.Aval {
	c := params.(*condParams)
	g := c.branches[0]
	if len(in) != 1+len(g.In) {
		panic(interp.Errorf("cond takes %d operands (the index and %d more), got %d", 1+len(g.In), len(g.In), len(in)))
	}
	if len(in[0].Shape) != 0 || in[0].DType != interp.Int64 {
		panic(interp.Errorf("cond's index must be an int64 scalar, got %v", in[0]))
	}
	for i, v := range g.In {
		if !in[1+i].Equal(v.Aval) {
			panic(interp.Errorf("cond's operand %d must be %v, got %v", 1+i, v.Aval, in[1+i]))
		}
	}
	return outAvals(g)
}

func condImpl(params any, args []*tensor) []*tensor {
	defer interp.Decomposing("cond")
	c := params.(*condParams)
	if k, ok := concreteBranch(args[0], len(c.branches)); ok {
		return c.branches[k].Eval(args[1:]...)
	}
	// A traced index (a trace that decomposes every composite): every
	// branch, selected.
	outs := make([][]*tensor, len(c.branches))
	for k, g := range c.branches {
		outs[k] = g.Eval(args[1:]...)
	}
	return selectBranches(args[0], outs)
}

// condEvalImpl is condImpl on concrete operands: the branch's program
// when a compiled program holds the cond.
func condEvalImpl(params any, args []*tensor) []*tensor {
	c := params.(*condParams)
	if k, ok := concreteBranch(args[0], len(c.branches)); ok && k < len(c.progs) {
		be := interp.DefaultBackend()
		if len(args) > 1 {
			_, be = interp.ArrayOf(args[1])
		}
		if prog := c.progs[k].get(c.branches[k], be); prog != nil {
			defer interp.Decomposing("cond")
			return prog.Run(args[1:], nil)
		}
	}
	return condImpl(params, args)
}

// condPrim is cond; condLin is cond on branches that are linear in the
// operands after the index and the residuals (see condJVP): the same
// primitive for every interpreter, but marked linear, with a transpose
// rule (a cond of the transposed branches).
var condPrim, condLin = func() (*interp.Prim, *interp.Prim) {
	p := graphio.ParamsWith[*condParams](interp.NewPrim("cond", interp.Pure, condAbstract), encodeCond, decodeCond)
	p.Whole = true // one equation when staged
	p.Impl = condImpl
	p.EvalImpl = condEvalImpl
	l := graphio.ParamsWith[*condParams](interp.NewPrim("cond_lin", interp.Pure, condAbstract), encodeCond, decodeCond)
	l.Whole = true
	l.Impl = condImpl
	l.EvalImpl = condEvalImpl
	l.Linear = []bool{false, true} // linear in every operand but the index
	return p, l
}()

// concreteBranch returns the branch a concrete index selects, clamped to
// [0, n-1]; ok is false when the index is a tracer.
func concreteBranch(idx *tensor, n int) (int, bool) {
	if !idx.IsConcrete() {
		return 0, false
	}
	v := idx.Item()
	switch {
	case v <= 0:
		return 0, true
	case v >= float64(n-1):
		return n - 1, true
	}
	return int(v), true
}

// selectBranches merges the branches' results by idx, an int64 tensor
// in [0, n-1] (a scalar, or the physical index of a batching rule,
// batched at 0): result leaf i is outs[k][i] where idx is k, idx being
// broadcast along the leaf's leading dimensions.
func selectBranches(idx *tensor, outs [][]*tensor) []*tensor {
	res := make([]*tensor, len(outs[0]))
	dims := make([]int, idx.Rank())
	for d := range dims {
		dims[d] = d
	}
	masks := make([]*tensor, len(outs))
	for k := 1; k < len(outs); k++ {
		masks[k] = peel.Equal(idx, peel.AsType(peel.Scalar(int64(k)), idx.DType()))
	}
	for i := range res {
		r := outs[0][i]
		for k := 1; k < len(outs); k++ {
			m := interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: r.Shape(), Dims: dims}, masks[k])
			r = interp.Bind1(prims.Where, nil, m, outs[k][i], r)
		}
		res[i] = r
	}
	return res
}

// condJVP is cond's forward-mode rule (see the top of the file).
func condJVP(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
	c := params.(*condParams)
	idx, ops, tops := primals[0], primals[1:], tangents[1:]
	branchJVP := func(g *interp.Graph) ([]*tensor, []*tensor) {
		return autodiff.JVP("cond", func(xs []*tensor) []*tensor { return g.Eval(xs...) }, ops, tops)
	}
	if k, ok := concreteBranch(idx, len(c.branches)); ok {
		return branchJVP(c.branches[k])
	}
	has := make([]bool, len(tops))
	var lt []*tensor
	for i, t := range tops {
		if t != nil {
			has[i] = true
			lt = append(lt, t)
		}
	}
	if p := c.plan(has); !p.inline {
		// The forward cond computes the results and every branch's
		// residuals (zeros but for the taken branch's); the linear one
		// maps the tangents with the taken branch's residuals.
		fwd := interp.Bind(condPrim, p.fwd, primals...)
		outs := fwd[:p.nOut]
		touts := make([]*tensor, p.nOut)
		if len(p.lin.branches[0].Out) == 0 {
			return outs, touts
		}
		ts := interp.Bind(condLin, p.lin, append(append([]*tensor{idx}, fwd[p.nOut:]...), lt...)...)
		spreadFloat(touts, outs, ts)
		return outs, touts
	}
	n := len(c.branches)
	outs := make([][]*tensor, n)
	touts := make([][]*tensor, n)
	for k, g := range c.branches {
		outs[k], touts[k] = branchJVP(g)
	}
	res := selectBranches(idx, outs)
	// The tangents, selected where some branch has one (zeros for the
	// others).
	tres := make([]*tensor, len(res))
	for i, o := range res {
		if !o.DType().IsFloat() {
			continue
		}
		var ts [][]*tensor
		some := false
		for k := range touts {
			some = some || touts[k][i] != nil
		}
		if !some {
			continue
		}
		for k := range touts {
			t := touts[k][i]
			if t == nil {
				t = autodiff.ZerosLike(outs[k][i])
			}
			ts = append(ts, []*tensor{t})
		}
		tres[i] = selectBranches(idx, ts)[0]
	}
	return res, tres
}

// condPlan is the partial evaluation of a cond's JVP for one tangent
// mask: fwd's branches map the primals to the results and the residuals
// of every branch (each branch gives zeros for the others'), lin's map
// the residuals and the tangents present to the float results'
// tangents, linearly in the tangents. inline: a branch's JVP holds a
// linear equation whose parameters hold values (a CustomVJP's
// residuals), which no graph of fwd can return: the JVP selects instead.
type condPlan struct {
	inline   bool
	fwd, lin *condParams
	nOut     int
}

// plan splits each branch's JVP graph J into its known equations (no
// tangent reaches them: fwd) and the others (lin), as a checkpoint that
// saves everything does (ckptParams.plan, newPlan).
func (c *condParams) plan(has []bool) *condPlan {
	key := maskKey(has)
	if p, ok := c.jvps.Load(key); ok {
		return p
	}
	n, nIn := len(c.branches), len(has)
	plans := make([]*ckptPlan, n)
	for k, g := range c.branches {
		plans[k] = splitJVP(g, nIn, EverythingSaveable, has)
		if plans[k].inline {
			p, _ := c.jvps.LoadOrStore(key, &condPlan{inline: true})
			return p
		}
	}
	nOut := plans[0].nOut
	fwd := make([]*interp.Graph, n)
	lin := make([]*interp.Graph, n)
	for k, p := range plans {
		j := p.j
		next := j.IDBound()
		fresh := func(a interp.Aval) *interp.Var {
			v := &interp.Var{ID: next, Aval: a}
			next++
			return v
		}
		f := &interp.Graph{In: j.In[:nIn], Consts: append([]*interp.Var(nil), j.Consts...), ConstVals: append([]*tensor(nil), j.ConstVals...), Out: append([]*interp.Var(nil), j.Out[:nOut]...)}
		for e, eq := range j.Eqns {
			if p.forward[e] {
				f.Eqns = append(f.Eqns, eq)
			}
		}
		l := &interp.Graph{Out: j.Out[nOut:]}
		for m, q := range plans {
			if m == k {
				f.Out = append(f.Out, p.consts...)
				l.In = append(l.In, p.consts...)
				continue
			}
			// Zeros for branch m's residuals: a broadcast scalar.
			for _, v := range q.consts {
				z := fresh(interp.Aval{DType: v.Aval.DType})
				f.Consts = append(f.Consts, z)
				f.ConstVals = append(f.ConstVals, autodiff.Zeros(z.Aval))
				if len(v.Aval.Shape) > 0 {
					bz := fresh(v.Aval)
					f.Eqns = append(f.Eqns, &interp.Eqn{Prim: prims.BroadcastInDim, Params: prims.BroadcastParams{Shape: v.Aval.Shape, Dims: []int{}}, In: []*interp.Var{z}, Out: []*interp.Var{bz}})
					z = bz
				}
				f.Out = append(f.Out, z)
				l.In = append(l.In, fresh(v.Aval))
			}
		}
		l.In = append(l.In, j.In[nIn:]...)
		for e, eq := range j.Eqns {
			if p.recompute[e] || !p.known[e] {
				l.Eqns = append(l.Eqns, eq)
			}
		}
		fwd[k], lin[k] = f, l
	}
	p, _ := c.jvps.LoadOrStore(key, &condPlan{fwd: newCondParams(fwd), lin: newCondParams(lin), nOut: nOut})
	return p
}

// condLinTranspose is cond_lin's transpose: a cond whose branches are
// the transposes of its branches, on the index, the constant operands
// (the residuals) and the nonzero cotangents, so only the taken branch's
// backward pass runs.
func condLinTranspose(params any, cts []*tensor, args []*tensor, linear []bool) []*tensor {
	defer interp.Decomposing("cond")
	c := params.(*condParams)
	res := make([]*tensor, len(args))
	var consts, ctIn []*tensor
	var constPos, linPos, ctPos []int
	for i := 1; i < len(args); i++ {
		if linear[i] {
			linPos = append(linPos, i-1)
		} else {
			constPos = append(constPos, i-1)
			consts = append(consts, args[i])
		}
	}
	for i, ct := range cts {
		if ct != nil {
			ctPos = append(ctPos, i)
			ctIn = append(ctIn, ct)
		}
	}
	if len(ctIn) == 0 || len(linPos) == 0 {
		return res
	}
	var b strings.Builder
	for i := 1; i < len(args); i++ {
		b.WriteByte(mask(linear[i]))
	}
	b.WriteByte(':')
	for _, ct := range cts {
		b.WriteByte(mask(ct != nil))
	}
	key := b.String()
	tp, ok := c.transposes.Load(key)
	if !ok {
		avals := append(avalsOf(consts), avalsOf(ctIn)...)
		gs := make([]*interp.Graph, len(c.branches))
		for k, g := range c.branches {
			t := interp.TraceAvals("cond", func(in []*tensor) []*tensor {
				h := &interp.Graph{Eqns: g.Eqns, Out: g.Out, Consts: append([]*interp.Var(nil), g.Consts...), ConstVals: append([]*tensor(nil), g.ConstVals...)}
				for j, i := range constPos {
					h.Consts = append(h.Consts, g.In[i])
					h.ConstVals = append(h.ConstVals, in[j])
				}
				for _, i := range linPos {
					h.In = append(h.In, g.In[i])
				}
				full := make([]*tensor, len(g.Out))
				for j, o := range ctPos {
					full[o] = in[len(consts)+j]
				}
				got := autodiff.TransposeGraph(h, full)
				for j, ct := range got {
					if ct == nil {
						got[j] = autodiff.Zeros(h.In[j].Aval)
					}
				}
				return got
			}, avals)
			// Its constants are values its rules made (concrete): the
			// operands it reads are inputs.
			for _, v := range t.ConstVals {
				if !v.IsConcrete() {
					panic(interp.Errorf("internal error: cond_lin's transpose captured a traced tensor"))
				}
			}
			gs[k] = t
		}
		tp, _ = c.transposes.LoadOrStore(key, newCondParams(gs))
	}
	outs := interp.Bind(condPrim, tp, append(append([]*tensor{args[0]}, consts...), ctIn...)...)
	for j, i := range linPos {
		res[i+1] = outs[j]
	}
	return res
}

func init() {
	condPrim.JVP = condJVP
	condLin.JVP = condJVP
	condLin.Transpose = condLinTranspose
	batching.RegisterNamed(condPrim, condBatch(condPrim))
	batching.RegisterNamed(condLin, condBatch(condLin))
}

// condBatch is the batching rule of cond and cond_lin (see the top of
// the file).
func condBatch(prim *interp.Prim) batching.NamedRule {
	return func(axis string, size int, params any, vals []*tensor, dims []int) ([]*tensor, []int) {
		l := lanes{size, axis}
		c := params.(*condParams)
		ops, odims := vals[1:], dims[1:]
		if dims[0] == batching.NotMapped {
			gs := make([]*interp.Graph, len(c.branches))
			for k, g := range c.branches {
				gs[k] = batchedParams(&c.batched[k], "cond", l, ops, odims, func(xs []*tensor) []*tensor { return g.Eval(xs...) },
					func(b *interp.Graph) *interp.Graph { return b })
			}
			outs := interp.Bind(prim, newCondParams(gs), vals...)
			return outs, make([]int, len(outs))
		}
		// A batched index (a scalar: its physical value is [size]):
		// every branch on every lane, selected per lane.
		idx := batching.ToFront(vals[0], dims[0], size)
		outs := make([][]*tensor, len(c.branches))
		for k, g := range c.branches {
			in, indims := untakenStopped(idx, k, len(c.branches), size, ops, odims)
			outs[k] = vmapped(l, indims, func(xs []*tensor) []*tensor { return g.Eval(xs...) })(in)
		}
		res := selectBranches(idx, outs)
		return res, make([]int, len(res))
	}
}

// untakenStopped returns branch k's operands for a batched index idx
// (physical, [size]): each float operand, batched at 0, with its lanes
// where idx is not k replaced by their StopGradient (JAX's where-trick,
// as lax.cond's batching rule does). Every branch runs on every lane, and
// the output select gives a lane not taken a zero cotangent, which the
// branch's backward pass would multiply into its derivative there: an
// infinite or NaN one (Sqrt at 0, Log at 0, a division by 0) makes it
// NaN. With the operand stopped on those lanes no cotangent flows back
// through them, so their NaN never reaches the operands' gradients: the
// gradient of a batched Cond is that of the branches taken.
func untakenStopped(idx *tensor, k, n, size int, ops []*tensor, dims []int) ([]*tensor, []int) {
	if n == 1 {
		return ops, dims
	}
	in, indims := make([]*tensor, len(ops)), append([]int(nil), dims...)
	var taken *tensor
	for i, v := range ops {
		if !v.DType().IsFloat() {
			in[i] = v
			continue
		}
		if taken == nil {
			taken = peel.Equal(idx, peel.AsType(peel.Scalar(int64(k)), idx.DType()))
		}
		v = batching.ToFront(v, dims[i], size)
		m := interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: v.Shape(), Dims: []int{0}}, taken)
		in[i], indims[i] = interp.Bind1(prims.Where, nil, m, v, interp.Bind1(prims.StopGradient, nil, v)), 0
	}
	return in, indims
}

// Cond returns trueFn(operands) when pred is true and falseFn(operands)
// otherwise (JAX's lax.cond). pred is a scalar tensor: a bool, or a
// number, true when nonzero. Both functions are traced on the operands'
// types, must return trees of the same structure with leaves of the same
// shapes and dtypes, and may capture tensors (captured tracers of an
// enclosing transform are differentiated and batched as operands are).
//
// Eagerly (a concrete pred) only the branch taken runs, and its
// derivative is the derivative of the result. Under Compile, pred is a
// value of the program, which records one cond equation that runs the
// taken branch; a gradient there is a cond of the branches' forward
// passes and a cond of their backward passes, and runs one branch of
// each. Under Vmap with a batched pred both branches run on every lane
// and the results are selected lane by lane, so the effects of both
// happen; the gradient is that of the branch each lane takes (a branch
// not taken sees its operands through StopGradient on that lane, so an
// infinite derivative there, such as Sqrt's at 0, does not make it NaN;
// what a branch computes from a captured tracer of an enclosing
// transform is traced into the branch, so this holds for it too).
//
// A CustomJVP or CustomVJP inside a branch keeps its rule (staging
// records the call as one equation).
//
// A branch may write in place into tensors it makes; a write into a
// tensor captured from outside the branch panics with *peel.Error naming
// the write and Cond (or Switch), whichever branch is taken: every
// branch is traced, so the write would happen while tracing, once, taken
// or not. Return the new value instead.
//
// The operands are a tree (see Grad). Cond panics with *peel.Error when
// pred is nil or not a scalar, when a function is nil or returns nil or
// a tree with a nil tensor, or when the two results differ in structure,
// shape or dtype (naming the function and the leaf path); otherwise it
// panics as the functions do.
func Cond[A, R any](pred *peel.Tensor, trueFn, falseFn func(A) R, operands A) R {
	const op = "transforms.Cond"
	defer interp.Annotate(op)
	if pred == nil {
		treeErrorf(op, "pred must not be nil")
	}
	if pred.Rank() != 0 {
		treeErrorf(op, "pred must be a scalar, got %s", pred.TypeString())
	}
	b := pred
	if b.DType() != peel.Bool {
		b = peel.NotEqual(pred, peel.AsType(peel.Scalar(0.0), pred.DType()))
	}
	idx := peel.AsType(b, peel.Int64)
	return switchTree(op, idx, []func(A) R{falseFn, trueFn}, []string{"falseFn", "trueFn"}, operands)
}

// Switch returns branches[index](operands) (JAX's lax.switch). index is
// an int64 scalar tensor, clamped to [0, len(branches)-1]. Every
// branch is traced on the operands' types and must return a tree of the
// same structure with leaves of the same shapes and dtypes; branches may
// capture tensors (but not write into them, as in Cond). Eagerly only
// the branch taken runs; under Compile, autodiff with a traced index,
// and Vmap with a batched index it behaves as Cond does.
//
// Switch panics with *peel.Error when index is nil, not a scalar or not
// int64, when branches is empty, when a branch is nil or returns nil
// or a tree with a nil tensor, or when two branches' results differ in
// structure, shape or dtype (naming the branch and the leaf path);
// otherwise it panics as the branches do.
func Switch[A, R any](index *peel.Tensor, branches []func(A) R, operands A) R {
	const op = "transforms.Switch"
	defer interp.Annotate(op)
	if index == nil {
		treeErrorf(op, "index must not be nil")
	}
	if index.Rank() != 0 || index.DType() != peel.Int64 {
		treeErrorf(op, "index must be an int64 scalar, got %s", index.TypeString())
	}
	if len(branches) == 0 {
		treeErrorf(op, "branches must not be empty")
	}
	idx := index
	if len(branches) > 1 {
		idx = peel.Clip(idx, peel.Scalar(int64(0)), peel.Scalar(int64(len(branches)-1)))
	}
	names := make([]string, len(branches))
	for k := range names {
		names[k] = "branch " + strconv.Itoa(k)
	}
	return switchTree(op, idx, branches, names, operands)
}

// switchTree traces the branches on the operands' leaves, checks that
// their results agree and binds cond with idx, an int64 scalar in range.
func switchTree[A, R any](op string, idx *tensor, branches []func(A) R, names []string, operands A) R {
	for k, b := range branches {
		if b == nil {
			treeErrorf(op, "%s must not be nil", names[k])
		}
	}
	leaves, def := flatten(op, operands)
	avals := make([]interp.Aval, len(leaves))
	for i, l := range leaves {
		avals[i] = interp.AvalOf(l)
	}
	n := len(branches)
	calls := make([]*userCall, n)
	graphs := make([]*interp.Graph, n)
	captured := make([][]*tensor, n)
	for k, b := range branches {
		c := &userCall{op: op, in: def}
		calls[k] = c
		g := interp.TraceAvals("cond", func(in []*tensor) []*tensor {
			return c.outLeaves(names[k], b(build[A](def, in)))
		}, avals, interp.CaptureTrace())
		graphs[k], captured[k] = closureConvert(g)
		if k == 0 {
			continue
		}
		if d := treeimpl.StructureDiff(calls[0].out.Proto().Interface(), c.out.Proto().Interface()); d != "" {
			treeErrorf(op, "%s and %s must return trees of one structure: %s", names[0], names[k], d)
		}
		g0 := graphs[0]
		for i, v := range graphs[k].Out {
			if w := g0.Out[i].Aval; !v.Aval.Equal(w) {
				treeErrorf(op, "%s returns %v at result path %s but %s returns %v: the branches must return the same shapes and dtypes", names[k], v.Aval, pathOr(c.out.Paths()[i]), names[0], w)
			}
		}
	}
	// Every branch takes every branch's captured tensors: those of the
	// others are inputs it does not read.
	var all []*tensor
	for _, cs := range captured {
		all = append(all, cs...)
	}
	for k, g := range graphs {
		next := g.IDBound()
		in := append([]*interp.Var(nil), g.In[:len(leaves)]...)
		for j, cs := range captured {
			if j == k {
				in = append(in, g.In[len(leaves):]...)
				continue
			}
			for _, t := range cs {
				in = append(in, &interp.Var{ID: next, Aval: interp.AvalOf(t)})
				next++
			}
		}
		graphs[k] = &interp.Graph{In: in, Consts: g.Consts, ConstVals: g.ConstVals, Eqns: g.Eqns, Out: g.Out}
	}
	args := append(append([]*tensor{idx}, leaves...), all...)
	return result[R](calls[0], interp.Bind(condPrim, newCondParams(graphs), args...))
}

// mask is '1' for true and '0' for false, for cache keys.
func mask(b bool) byte {
	if b {
		return '1'
	}
	return '0'
}
