package transforms

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/autodiff"
	"github.com/peel-ml/peel/batching"
	"github.com/peel-ml/peel/functionalize"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/internal/lru"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Checkpointing (rematerialization). A gradient normally saves, from
// the forward pass, every value its backward pass reads (the residuals:
// the constants of the linear graph). Checkpoint(f, policy) makes f's
// gradient save only the values the policy allows and recompute the
// others in the backward pass, from f's arguments and the saved values.
//
// It is the partial evaluation JAX does, on peel's graphs. f is traced
// into a graph G, bound as the checkpoint primitive. Its JVP rule traces
// the JVP of G into a graph J whose inputs are the primals and the
// tangents, and splits J's equations into the known ones (no tangent
// reaches them: the forward computation and the derivative coefficients
// of the JVP rules, such as tanh's 1 − y²) and the unknown ones (linear
// in the tangents). The known equations are evaluated at once (the
// forward pass). The unknown ones, with the known equations that compute
// the residuals the policy does not save, become one linear graph L:
// its constants are f's arguments and the saved residuals, and it holds
// the recomputation as equations on them. L is bound as checkpoint_lin,
// one linear equation whose transpose is L's (autodiff.TransposeGraph evaluates
// L's equations on constants, the recomputation, before transposing the
// rest), so the recomputation runs in the backward pass, and with Bind:
// checkpointed gradients compose with Vmap, Jacrev and Grad(Grad).

// SaveCandidate describes a value a checkpointed function computes on
// the way to its result or to its derivative, for a SavePolicy to
// decide.
type SaveCandidate struct {
	// Prim is the name of the primitive that computes the value
	// ("dot_general", "tanh", …; "name" for a value marked with Name).
	Prim string
	// Params are the primitive's parameters (prims.DotParams for a
	// dot_general).
	Params any
	// Name is the name given with Name, for a marked value.
	Name  string
	Shape []int
	DType peel.DType
}

// A SavePolicy decides which values a checkpointed function's gradient
// saves rather than recomputes in the backward pass. The function's
// arguments are always saved. The zero SavePolicy is NothingSaveable.
type SavePolicy struct {
	name   string
	save   func(SaveCandidate) bool // nil: save nothing
	minCut bool
	// budget, when hasBudget, is MemoryBudget's: the most bytes of
	// residuals saved.
	budget    int64
	hasBudget bool
	// builtin marks the policies of this package (by name in an
	// exported program); names are SaveOnlyNames's.
	builtin bool
	names   []string
}

func (p SavePolicy) String() string {
	if p.name == "" {
		return "NothingSaveable"
	}
	return p.name
}

// saves reports whether the policy saves c (for a per-value policy).
func (p SavePolicy) saves(c SaveCandidate) bool { return p.save != nil && p.save(c) }

var (
	// NothingSaveable saves nothing but the arguments: the backward pass
	// recomputes the whole forward computation (JAX's nothing_saveable,
	// the default).
	NothingSaveable = SavePolicy{name: "NothingSaveable"}
	// EverythingSaveable saves every residual, as a gradient without
	// Checkpoint does.
	EverythingSaveable = SaveIf("EverythingSaveable", func(SaveCandidate) bool { return true })
	// DotsSaveable saves the results of matrix products (dot_general)
	// and recomputes the rest, which is cheap next to them.
	DotsSaveable = SaveIf("DotsSaveable", func(c SaveCandidate) bool { return c.Prim == prims.DotGeneral.Name })
	// DotsWithNoBatchDimsSaveable saves the results of matrix products
	// without batch dimensions.
	DotsWithNoBatchDimsSaveable = SaveIf("DotsWithNoBatchDimsSaveable", func(c SaveCandidate) bool {
		p, ok := c.Params.(prims.DotParams)
		return c.Prim == prims.DotGeneral.Name && ok && len(p.LhsBatch) == 0
	})
	// MinCut saves the residuals that cost least memory, AOTAutograd's
	// choice: the smallest set, in bytes, from which every value the
	// backward pass reads can be recomputed with cheap operations
	// (elementwise and shape operations and reductions, which fuse),
	// never recomputing a matrix product or a random draw (they are saved
	// where they are read, or something computed from them is). The
	// arguments cost nothing to save (the caller holds them).
	MinCut = SavePolicy{name: "MinCut", minCut: true}
)

// MemoryBudget returns the policy that saves at most bytes of residuals
// per call of the checkpointed function (its arguments, held by the
// caller, cost nothing) and recomputes the rest, choosing what to save
// for the least recomputation: values by the work recomputing them would
// cost per byte they take, matrix products and convolutions first, then
// the values the backward pass reads, while they fit (torch's activation
// memory budget, in bytes). MemoryBudget(0) is NothingSaveable; a budget
// of at least what EverythingSaveable saves recomputes nothing.
// RematStats reports the plan. It panics with *peel.Error when bytes is
// negative.
func MemoryBudget(bytes int64) SavePolicy {
	if bytes < 0 {
		treeErrorf("transforms.MemoryBudget", "the budget is %d bytes: it must not be negative", bytes)
	}
	return SavePolicy{name: fmt.Sprintf("MemoryBudget(%d)", bytes), budget: bytes, hasBudget: true}
}

// SaveIf returns the policy that saves the values for which save
// returns true; name is its String.
func SaveIf(name string, save func(SaveCandidate) bool) SavePolicy {
	return SavePolicy{name: name, save: save}
}

// SaveOnlyNames saves the values marked with Name under one of the given
// names, and recomputes everything else.
func SaveOnlyNames(names ...string) SavePolicy {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	p := SaveIf("SaveOnlyNames"+fmt.Sprint(names), func(c SaveCandidate) bool { return c.Prim == namePrim.Name && set[c.Name] })
	p.names = append([]string{}, names...)
	return p
}

// builtinPolicies are the policies an exported program names.
var builtinPolicies = func() map[string]*SavePolicy {
	m := map[string]*SavePolicy{}
	for _, p := range []*SavePolicy{&NothingSaveable, &EverythingSaveable, &DotsSaveable, &DotsWithNoBatchDimsSaveable, &MinCut} {
		p.builtin = true
		m[p.name] = p
	}
	return m
}()

// encodePolicy writes a policy into an exported program: by name, or
// SaveOnlyNames's names; a policy of the user's own (SaveIf) holds a Go
// function, which a file cannot.
func encodePolicy(w *graphio.Writer, p SavePolicy) {
	switch {
	case p.name == "" || p.builtin:
		w.Uint(1)
		w.Text(p.String())
	case p.names != nil:
		w.Uint(2)
		w.Uint(uint64(len(p.names)))
		for _, n := range p.names {
			w.Text(n)
		}
	case p.hasBudget:
		w.Uint(3)
		w.Int(int(p.budget))
	default:
		w.Fail("the checkpoint policy " + p.name + " is a Go function (SaveIf): only the policies of package transforms and SaveOnlyNames can be exported")
	}
}

func decodePolicy(r *graphio.Reader) SavePolicy {
	switch r.Uint() {
	case 1:
		name := r.Text()
		if p, ok := builtinPolicies[name]; ok {
			return *p
		}
		r.Failf("unknown checkpoint policy %q", name)
	case 2:
		names := make([]string, r.Len())
		for i := range names {
			names[i] = r.Text()
		}
		return SaveOnlyNames(names...)
	case 3:
		b := r.Int()
		if b < 0 {
			r.Failf("a checkpoint memory budget of %d bytes", b)
			return SavePolicy{}
		}
		return MemoryBudget(int64(b))
	default:
		r.Failf("a malformed checkpoint policy")
	}
	return SavePolicy{}
}

// encodeCheckpoint writes the checkpoint primitive's parameters into an
// exported program: its graph, the number of argument leaves and the
// policy.
func encodeCheckpoint(w *graphio.Writer, c *ckptParams) {
	w.Graph(c.graph)
	w.Int(c.nArgs)
	encodePolicy(w, c.policy)
}

func decodeCheckpoint(r *graphio.Reader) *ckptParams {
	g := r.Graph()
	n := r.Int()
	policy := decodePolicy(r)
	if r.Err() != nil {
		return nil
	}
	if n < 0 || n > len(g.In) {
		r.Failf("a checkpoint of %d argument leaves with %d inputs", n, len(g.In))
		return nil
	}
	return &ckptParams{graph: g, policy: policy, nArgs: n, shared: newPlanCache()}
}

func encodeName(w *graphio.Writer, p nameParams) { w.Text(p.name) }

func decodeName(r *graphio.Reader) nameParams { return nameParams{r.Text()} }

// Checkpoint returns f whose gradients save only what policy allows of
// the values f computes, and recompute the rest in the backward pass
// from f's argument (JAX's jax.checkpoint, torch's
// torch.utils.checkpoint): memory for time. The zero policy is
// NothingSaveable. Outside reverse-mode autodiff the result is f's; it
// composes with every transform (under Vmap the batched function is
// checkpointed; under Compile the recomputation is compiled with the
// rest of the backward pass). A Checkpoint inside another one is
// recomputed by the outer one's policy.
//
// The argument and result are trees (see Grad). f may capture tensors;
// captured tensors of an enclosing transform are differentiated as
// arguments are. f may write in place (through views, into tensors it
// makes, into its argument's tensors and into tensors it captures,
// which receive the writes once per call): it is traced through
// Functionalize, as Compile traces it.
//
// Checkpoint panics with *peel.Error when f is nil; the
// function it returns panics as f does, and with *peel.Error when f
// returns nil or a tree with a nil tensor.
func Checkpoint[A, R any](f func(A) R, policy SavePolicy) func(A) R {
	return checkpointAs("transforms.Checkpoint", f, policy)
}

// checkpointAs is Checkpoint with errors naming op.
func checkpointAs[A, R any](op string, f func(A) R, policy SavePolicy) func(A) R {
	if f == nil {
		treeErrorf(op, "f must not be nil")
	}
	plans := newPlanCache()
	return func(a A) R {
		defer interp.Annotate(op)
		leaves, def := flatten(op, a)
		c := &userCall{op: op, in: def}
		fl := checkpointFlat(func(in []*tensor) []*tensor { return c.outLeaves("f", f(build[A](def, in))) }, policy, plans)
		return result[R](c, fl(leaves))
	}
}

// checkpointFlat is Checkpoint of a function of leaves. plans, shared
// by the calls of one checkpointed function, caches their plans by the
// structure of f's graph (see ckptParams.plan).
func checkpointFlat(f func([]*tensor) []*tensor, policy SavePolicy, plans *planCache) func([]*tensor) []*tensor {
	return func(leaves []*tensor) []*tensor {
		avals := make([]interp.Aval, len(leaves))
		for i, l := range leaves {
			avals[i] = interp.AvalOf(l)
		}
		// f is traced through Functionalize, as Compile traces it, so
		// in-place writes (through views, into tensors f makes, into
		// its arguments, into tensors it captures) become pure
		// equations; the final values of the arguments and of the
		// captured tensors f wrote are extra results of the graph,
		// written back below, once per call, at the caller's level (so
		// a transform around the checkpoint sees the writes as it sees
		// f's).
		nOut := 0
		var capturedBoxes []*tensor
		traced := interp.TraceAvals("checkpoint", func(in []*tensor) []*tensor {
			fi := functionalize.New(false)
			var finals []*tensor
			fi.OnCapturedWrite = func(box, final *tensor) bool {
				capturedBoxes = append(capturedBoxes, box)
				finals = append(finals, final)
				return true
			}
			outs := func() []*tensor {
				defer fi.End(nil, nil)
				w := fi.WrapInputs(in, nil, nil)
				outs := func() []*tensor {
					defer interp.AnnotateLevel(fi.Level())
					return f(w)
				}()
				for i, o := range outs {
					outs[i] = fi.Unwrap(o)
				}
				return outs
			}()
			nOut = len(outs)
			return append(append(outs, in...), finals...)
		}, avals)
		g := *traced
		g.Out = append([]*interp.Var(nil), traced.Out[:nOut]...)
		var written []int
		for j, v := range traced.Out[nOut : nOut+len(leaves)] {
			if v != traced.In[j] {
				written = append(written, j)
				g.Out = append(g.Out, v)
			}
		}
		g.Out = append(g.Out, traced.Out[nOut+len(leaves):]...)
		cg, captured := closureConvert(&g)
		p := &ckptParams{graph: cg, policy: policy, nArgs: len(leaves), shared: plans}
		outs := interp.Bind(checkpointPrim, p, append(leaves, captured...)...)
		for k, j := range written {
			peel.CopyInto(leaves[j], outs[nOut+k])
		}
		for k, box := range capturedBoxes {
			peel.CopyInto(box, outs[nOut+len(written)+k])
		}
		return outs[:nOut]
	}
}

// ckptParams are the checkpoint primitive's parameters: f's graph (its
// inputs the argument's leaves, then captured tracers) and the policy.
type ckptParams struct {
	graph  *interp.Graph
	policy SavePolicy
	// nArgs is the number of the graph's inputs that are the argument's
	// leaves (the rest are captured tensors); shared caches plans across
	// the calls of one checkpointed function, by structure.
	nArgs  int
	shared *planCache
	// jvps caches the plans (J and its split) by which inputs have
	// tangents; batched the batched checkpoints by layout.
	jvps    lru.Cache[string, *ckptPlan]
	batched lru.Cache[string, *ckptParams]
}

func (*ckptParams) String() string { return "checkpoint" }

// HasEffect reports whether the checkpointed graph acts outside its
// results (interp.Effectful).
func (c *ckptParams) HasEffect() bool { return c.graph.HasEffect() }

var checkpointPrim = graphio.ParamsWith[*ckptParams](interp.NewPrim("checkpoint", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
	g := params.(*ckptParams).graph
	checkOperands("checkpoint", g, in)
	return outAvals(g)
}), encodeCheckpoint, decodeCheckpoint)

// plan returns the checkpoint's plan for the inputs with tangents
// (has), made once per mask: J, its split, and what the forward pass
// computes and keeps (see ckptPlan).
func (c *ckptParams) plan(has []bool) *ckptPlan {
	var b strings.Builder
	b.WriteString(maskKey(has))
	key := b.String()
	if p, ok := c.jvps.Load(key); ok {
		return p
	}
	// Calls of one checkpointed function share plans when their graphs
	// have one structure (a graph holds no values: closureConvert).
	var shared string
	if c.shared != nil && structureKey(&b, c.graph) {
		shared = b.String()
		if p, ok := c.shared.Load(shared); ok {
			c.jvps.Store(key, p)
			return p
		}
	}
	j := jvpGraph(c.graph, has)
	p := newPlan(j, len(has), len(c.graph.Out), c.nArgs, c.policy)
	v, _ := c.jvps.LoadOrStore(key, p)
	if shared != "" {
		c.shared.LoadOrStore(shared, v)
	}
	return v
}

// planCache holds the checkpoint plans shared by the calls of one
// checkpointed function, by graph structure: at most lru.DefaultMax.
type planCache = lru.Cache[string, *ckptPlan]

// newPlanCache returns an empty planCache.
func newPlanCache() *planCache { return new(planCache) }

// checkpointJVP is the checkpoint's forward-mode rule (see the top of
// the file).
func checkpointJVP(params any, primals, tangents []*tensor) (outs, touts []*tensor) {
	c := params.(*ckptParams)
	n := len(primals)
	has := make([]bool, n)
	var lt []*tensor
	for i, t := range tangents {
		if t != nil {
			has[i] = true
			lt = append(lt, t)
		}
	}
	p := c.plan(has)
	if p.inline {
		return autodiff.JVP("checkpoint", func(xs []*tensor) []*tensor { return evalInlined(c.graph, xs, false) }, primals, tangents)
	}
	if d, ok := interp.FindLevelData[*gradDefaults](primals...); ok {
		d.addPlan(p.stats())
	}
	j := p.j
	// The forward pass: the planned known equations at the primals,
	// dropping each value after its last use unless it is kept.
	env := make(map[*interp.Var]*tensor, len(j.Eqns))
	for i := range n {
		env[j.In[i]] = primals[i]
	}
	for i, v := range j.Consts {
		env[v] = j.ConstVals[i]
	}
	for k, e := range j.Eqns {
		if !p.forward[k] {
			continue
		}
		in := make([]*tensor, len(e.In))
		for i, v := range e.In {
			in[i] = env[v]
		}
		res := interp.Bind(e.Prim, e.Params, in...)
		for i, v := range e.Out {
			env[v] = res[i]
		}
		for _, v := range e.In {
			if p.lastUse[v] == k && !p.keep[v] {
				delete(env, v)
			}
		}
	}
	nOut := p.nOut
	outs = make([]*tensor, nOut)
	for i, v := range j.Out[:nOut] {
		outs[i] = env[v]
	}
	touts = make([]*tensor, nOut)
	if len(j.Out) == nOut {
		return outs, touts
	}
	lin := &interp.Graph{In: j.In[n:], Out: j.Out[nOut:], Consts: p.consts}
	for _, v := range p.consts {
		// Snapshots, as traced constants are: a later in-place write
		// into an argument does not reach the backward pass.
		lin.ConstVals = append(lin.ConstVals, interp.Snapshot(env[v]))
	}
	for k, e := range j.Eqns {
		if p.recompute[k] || !p.known[k] {
			lin.Eqns = append(lin.Eqns, e)
		}
	}
	ts := interp.Bind(checkpointLin, &ckptLinParams{graph: lin, sources: p.sources}, lt...)
	spreadFloat(touts, outs, ts)
	return outs, touts
}

// ckptLinParams are checkpoint_lin's parameters: L, and where each of
// its constants comes from (for SavedResiduals).
type ckptLinParams struct {
	graph   *interp.Graph
	sources []string
}

func (p *ckptLinParams) String() string {
	return "checkpoint_lin[saves " + strconv.Itoa(len(p.graph.Consts)) + "]"
}

var checkpointLin = func() *interp.Prim {
	p := interp.NewPrim("checkpoint_lin", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
		return outAvals(params.(*ckptLinParams).graph)
	})
	p.Linear = []bool{true} // in every operand
	p.Whole = true          // one equation of the enclosing linear graph, transposed whole
	p.Impl = func(params any, tangents []*tensor) []*tensor {
		defer interp.Decomposing("checkpoint")
		return params.(*ckptLinParams).graph.Eval(tangents...)
	}
	p.Transpose = func(params any, cts []*tensor, args []*tensor, linear []bool) []*tensor {
		defer interp.Decomposing("checkpoint")
		got := autodiff.TransposeGraph(withBarriers(params.(*ckptLinParams).graph), cts)
		res := make([]*tensor, len(args))
		for i := range args {
			if linear[i] {
				res[i] = got[i]
			}
		}
		return res
	}
	return p
}()

// withBarriers returns L with its tracer constants read through
// prims.OptimizationBarrier when L recomputes anything, else L: under a
// trace (Compile), CSE could otherwise merge the recomputation with the
// forward pass's equal equations, and the program would keep the
// forward's values alive instead of recomputing them.
func withBarriers(l *interp.Graph) *interp.Graph {
	traced := false
	for _, c := range l.ConstVals {
		traced = traced || !c.IsConcrete()
	}
	if !traced {
		return l
	}
	recomputes := false
	recomputedIn(l, func(*interp.Eqn) { recomputes = true })
	if !recomputes {
		return l
	}
	h := *l
	h.ConstVals = make([]*tensor, len(l.ConstVals))
	for i, c := range l.ConstVals {
		h.ConstVals[i] = c
		if !c.IsConcrete() {
			h.ConstVals[i] = interp.Bind1(prims.OptimizationBarrier, nil, c)
		}
	}
	return &h
}

// nameParams are the name marker's parameters.
type nameParams struct{ name string }

func (p nameParams) String() string { return strconv.Quote(p.name) }

// namePrim marks a value for SaveOnlyNames: the identity, staged as its
// own equation.
var namePrim = graphio.ParamsWith[nameParams](interp.NewPrim("name", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
	return []interp.Aval{in[0]}
}), encodeName, decodeName)

// Name marks x with a name, for a checkpoint's SaveOnlyNames policy
// (JAX's checkpoint_name): the value is x. Outside a traced function
// (the eager case, where no checkpoint can see the mark) it returns x
// itself. Name panics with *peel.Error when x is nil.
func Name(x *peel.Tensor, name string) *peel.Tensor {
	if x == nil {
		treeErrorf("transforms.Name", "x must not be nil")
	}
	if x.IsConcrete() {
		return x
	}
	defer interp.Annotate("transforms.Name")
	return interp.Bind1(namePrim, nameParams{name}, x)
}

func init() {
	checkpointPrim.Impl = func(params any, args []*tensor) []*tensor {
		defer interp.Decomposing("checkpoint")
		return evalInlined(params.(*ckptParams).graph, args, false)
	}
	checkpointPrim.JVP = checkpointJVP
	namePrim.Whole = true // staged as itself, not as the copy of its Impl
	namePrim.Impl = func(params any, args []*tensor) []*tensor {
		return []*tensor{interp.Bind1(prims.Copy, nil, args[0])}
	}
	namePrim.JVP = func(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
		return interp.Bind(namePrim, params, primals[0]), []*tensor{tangents[0]}
	}
	batching.Register(namePrim, func(size int, params any, vals []*tensor, dims []int) ([]*tensor, []int) {
		return interp.Bind(namePrim, params, vals[0]), dims
	})
	batching.RegisterNamed(checkpointPrim, func(axis string, size int, params any, vals []*tensor, dims []int) ([]*tensor, []int) {
		c := params.(*ckptParams)
		bp := batchedParams(&c.batched, "checkpoint", lanes{size, axis}, vals, dims, func(xs []*tensor) []*tensor { return evalInlined(c.graph, xs, false) },
			func(g *interp.Graph) *ckptParams { return &ckptParams{graph: g, policy: c.policy, nArgs: len(vals)} })
		outs := interp.Bind(checkpointPrim, bp, vals...)
		return outs, make([]int, len(outs))
	})
}

// Residual is one value a gradient saves in its forward pass for its
// backward pass.
type Residual struct {
	Shape []int
	DType peel.DType
	// Source says where it comes from: "saved by the linearization" for
	// a value the backward pass of plain code reads, or, for one saved
	// by a Checkpoint, "checkpoint: argument leaf i" (of the checkpointed
	// function), "checkpoint: saved by the policy: prim" or
	// "checkpoint: constant" (one its derivative rules made).
	Source string
	// Splat: the value is one element broadcast to Shape (a view), and
	// holds one element's memory.
	Splat bool
}

// Bytes is the memory the residual holds.
func (r Residual) Bytes() int {
	if r.Splat {
		return r.DType.Size()
	}
	return interp.Aval{Shape: r.Shape, DType: r.DType}.Size() * r.DType.Size()
}

func (r Residual) String() string {
	s := interp.Aval{Shape: r.Shape, DType: r.DType}.String() + " " + r.Source
	if r.Splat {
		s += " (one value, broadcast)"
	}
	return s
}

// isSplat reports whether t is a concrete broadcast of one element.
func isSplat(t *tensor) bool {
	if !t.IsConcrete() || t.Rank() == 0 {
		return false
	}
	arr, _ := interp.ArrayOf(t)
	if len(arr.Strides) != len(arr.Shape) {
		return false
	}
	for _, s := range arr.Strides {
		if s != 0 {
			return false
		}
	}
	return true
}

// SavedResiduals returns the values a reverse-mode gradient of f at x
// (Grad, VJP, Jacrev) saves from its forward pass for its backward pass,
// in the order the linearization captured them (JAX's
// print_saved_residuals): what a Checkpoint policy changes. Values a
// user-defined op's rule keeps are listed as its operands. It panics as
// VJP does.
func SavedResiduals[A, R any](f func(A) R, x A) []Residual {
	const op = "transforms.SavedResiduals"
	defer interp.Annotate(op)
	lin := linearizeAt(op, f, x)
	defer lin.Release()
	var res []Residual
	add := func(t *tensor, source string) {
		res = append(res, Residual{Shape: t.Shape(), DType: t.DType(), Source: source, Splat: isSplat(t)})
	}
	// A composite's residual operands (its call's operands and results)
	// are constants of the linear graph, named by the composite.
	source := map[*interp.Var]string{}
	for _, e := range lin.Graph.Eqns {
		if p, ok := e.Params.(autodiff.CompositeParams); ok {
			for _, v := range e.In[:p.NumResiduals()] {
				if _, seen := source[v]; !seen {
					source[v] = "operand or result of " + p.Prim().Name + " (its backward pass recomputes from them)"
				}
			}
		}
	}
	for i, t := range lin.Graph.ConstVals {
		s, ok := source[lin.Graph.Consts[i]]
		if !ok {
			s = "saved by the linearization"
		}
		add(t, s)
	}
	for _, e := range lin.Graph.Eqns {
		if p, ok := e.Params.(*ckptLinParams); ok {
			for i, t := range p.graph.ConstVals {
				add(t, p.sources[i])
			}
		}
	}
	return res
}

// Recomputed returns the primitives a reverse-mode gradient of f at x
// runs again in its backward pass because a Checkpoint (or Remat) did
// not save their results, one name per equation, in order: with
// SavedResiduals, what a policy trades. It panics as VJP does.
func Recomputed[A, R any](f func(A) R, x A) []string {
	const op = "transforms.Recomputed"
	defer interp.Annotate(op)
	lin := linearizeAt(op, f, x)
	defer lin.Release()
	var names []string
	for _, e := range lin.Graph.Eqns {
		if p, ok := e.Params.(*ckptLinParams); ok {
			recomputedIn(p.graph, func(q *interp.Eqn) { names = append(names, q.Prim.Name) })
		}
	}
	return names
}

// linearizeAt linearizes f at x (for SavedResiduals, Recomputed and
// RematPlan, which read the linear graph); errors name op.
func linearizeAt[A, R any](op string, f func(A) R, x A) *autodiff.Linearized {
	leaves, def := flatten(op, x)
	c := &userCall{op: op, in: def}
	return autodiff.Linearize(op, func(in []*tensor) []*tensor { return c.outLeaves("f", f(build[A](def, in))) }, leaves)
}

// recomputedIn calls fn on each equation of a checkpoint_lin graph L
// that is not linear in L's inputs: the recomputation, which the
// transpose evaluates first.
func recomputedIn(l *interp.Graph, fn func(q *interp.Eqn)) {
	linear := make(map[*interp.Var]bool)
	for _, v := range l.In {
		linear[v] = true
	}
	for _, q := range l.Eqns {
		lin := false
		for _, v := range q.In {
			lin = lin || linear[v]
		}
		if lin {
			for _, v := range q.Out {
				linear[v] = true
			}
			continue
		}
		fn(q)
	}
}
