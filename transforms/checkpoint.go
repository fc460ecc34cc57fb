package transforms

import (
	"fmt"
	"slices"
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
		c := &customCall{op: op, in: def}
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

// closureConvert turns g's constants (the tensors f captured) into
// trailing inputs, returned with the tensors to pass for them: a
// transform outside the checkpoint sees the tracers among them as
// operands (their tangents, their batch dimension), and the graph, its
// JVP and their plan depend on no value, so calls of one checkpointed
// function share them.
func closureConvert(g *interp.Graph) (*interp.Graph, []*tensor) {
	if len(g.Consts) == 0 {
		return g, nil
	}
	ng := &interp.Graph{In: append(append([]*interp.Var(nil), g.In...), g.Consts...), Eqns: g.Eqns, Out: g.Out}
	return ng, append([]*tensor(nil), g.ConstVals...)
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

func outAvals(g *interp.Graph) []interp.Aval {
	out := make([]interp.Aval, len(g.Out))
	for i, v := range g.Out {
		out[i] = v.Aval
	}
	return out
}

// evalInlined evaluates g with Bind, as Graph.Eval does, but runs the
// checkpoints it holds as their graphs: inside a checkpoint being
// differentiated, the outer policy decides for everything (an inner
// checkpoint_lin would hold values of the trace of J). With decompose
// (tracing J) it also runs composites without a JVP rule (user-defined
// ops, compiled calls) as their decompositions: their derivative,
// composite_lin, would hold values of the trace of J as parameters.
func evalInlined(g *interp.Graph, args []*tensor, decompose bool) []*tensor {
	env := make(map[*interp.Var]*tensor, len(g.In)+len(g.Consts)+len(g.Eqns))
	for i, v := range g.In {
		env[v] = args[i]
	}
	for i, v := range g.Consts {
		env[v] = g.ConstVals[i]
	}
	for _, e := range g.Eqns {
		in := make([]*tensor, len(e.In))
		for i, v := range e.In {
			in[i] = env[v]
		}
		var outs []*tensor
		switch {
		case e.Prim == checkpointPrim:
			outs = evalInlined(e.Params.(*ckptParams).graph, in, decompose)
		case decompose && e.Prim.Whole && e.Prim.Impl != nil && (e.Prim.JVP == nil || e.Prim.VJP != nil):
			outs = e.Prim.Impl(e.Params, in)
		default:
			outs = interp.Bind(e.Prim, e.Params, in...)
		}
		for i, v := range e.Out {
			env[v] = outs[i]
		}
	}
	res := make([]*tensor, len(g.Out))
	for i, v := range g.Out {
		res[i] = env[v]
	}
	return res
}

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
	j := c.jvpGraph(has)
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

// maskKey is a tangent mask as a cache key.
func maskKey(has []bool) string {
	b := make([]byte, len(has))
	for i, h := range has {
		b[i] = '0'
		if h {
			b[i] = '1'
		}
	}
	return string(b)
}

// jvpGraph traces J for the inputs with tangents (has): inputs are all
// primals then the tangents of has, outputs the primal results then the
// tangents of the float results (zeros where symbolic).
func (c *ckptParams) jvpGraph(has []bool) *interp.Graph {
	g := c.graph
	n := len(g.In)
	avals := make([]interp.Aval, 0, 2*n)
	for _, v := range g.In {
		avals = append(avals, v.Aval)
	}
	for i, v := range g.In {
		if has[i] {
			avals = append(avals, v.Aval)
		}
	}
	return interp.TraceAvals("checkpoint", func(in []*tensor) []*tensor {
		tangents := make([]*tensor, n)
		k := n
		for i := range tangents {
			if has[i] {
				tangents[i] = in[k]
				k++
			}
		}
		outs, touts := autodiff.JVP("checkpoint", func(xs []*tensor) []*tensor { return evalInlined(g, xs, true) }, in[:n], tangents)
		res := append([]*tensor(nil), outs...)
		for i, t := range touts {
			if !outs[i].DType().IsFloat() {
				continue
			}
			if t == nil {
				t = autodiff.Zeros(interp.AvalOf(outs[i]))
			}
			res = append(res, t)
		}
		return res
	}, avals)
}

// backwardReads calls read on each value of J (nOut primal results;
// known as in newPlan) that the backward pass reads: the operands of the
// equations that depend on a tangent, then J's results past the primal
// ones, in order, repeats included.
func backwardReads(j *interp.Graph, nOut int, known []bool, read func(v *interp.Var)) {
	for k, e := range j.Eqns {
		if !known[k] {
			for _, v := range e.In {
				read(v)
			}
		}
	}
	for _, v := range j.Out[nOut:] {
		read(v)
	}
}

// savedByPolicy begins the source of a value a checkpoint's policy
// saved (Residual.Source).
const savedByPolicy = "checkpoint: saved by the policy: "

// ckptPlan is what a checkpoint's JVP rule does for one tangent mask,
// decided from J's structure and the policy alone.
type ckptPlan struct {
	j       *interp.Graph
	n, nOut int // primal inputs, primal results
	// known[k]: J's equation k depends on no tangent. forward[k]: the
	// forward pass evaluates it (a known equation the results or a
	// saved value need; the others, such as derivative coefficients
	// recomputed in the backward pass, it skips). recompute[k]: L holds
	// it.
	known, forward, recompute []bool
	// consts are L's constants (by var ID), sources where they come
	// from; keep marks them and the results, which the forward pass
	// keeps; lastUse is the index of the last forward equation reading a
	// var, after which the others are dropped.
	consts  []*interp.Var
	sources []string
	keep    map[*interp.Var]bool
	lastUse map[*interp.Var]int
	// inline: J holds a linear equation whose parameters hold values
	// of J's trace (a CustomVJP's residuals), which L could not carry:
	// the checkpoint is differentiated inline, without remat.
	inline bool
}

// newPlan splits J (n primal inputs, the first nArgs the argument's
// leaves and the rest captured tensors; nOut primal results) and
// applies the policy.
func newPlan(j *interp.Graph, n, nOut, nArgs int, policy SavePolicy) *ckptPlan {
	p := &ckptPlan{j: j, n: n, nOut: nOut, known: make([]bool, len(j.Eqns)), recompute: make([]bool, len(j.Eqns))}
	for _, e := range j.Eqns {
		if e.Prim == customVJPLin || e.Prim == autodiff.CompositeLin {
			p.inline = true
			return p
		}
	}
	unknown := make(map[*interp.Var]bool)
	for _, v := range j.In[n:] {
		unknown[v] = true
	}
	producer := make(map[*interp.Var]int, len(j.Eqns))
	for k, e := range j.Eqns {
		u := false
		for _, v := range e.In {
			u = u || unknown[v]
		}
		for _, v := range e.Out {
			producer[v] = k
			if u {
				unknown[v] = true
			}
		}
		p.known[k] = !u
	}
	argIndex := make(map[*interp.Var]int, n)
	for i, v := range j.In[:n] {
		argIndex[v] = i
	}
	isConst := make(map[*interp.Var]bool, len(j.Consts))
	for _, v := range j.Consts {
		isConst[v] = true
	}
	save := func(v *interp.Var, e *interp.Eqn) bool { return policy.saves(candidate(e, v)) }
	if policy.minCut {
		cut := minCut(j, n, nOut, p.known, producer)
		save = func(v *interp.Var, _ *interp.Eqn) bool { return cut[v] }
	}
	if policy.hasBudget {
		cut := budgetCut(j, n, nOut, p.known, producer, policy.budget)
		save = func(v *interp.Var, _ *interp.Eqn) bool { return cut[v] }
	}
	// Walk back from the unknown equations' known operands (and known
	// tangent results): a var is a constant of L (an argument, a
	// constant of J, or a saved value) or recomputed.
	constOf := make(map[*interp.Var]bool)
	var need func(v *interp.Var)
	need = func(v *interp.Var) {
		if constOf[v] {
			return
		}
		k, ok := producer[v]
		if !ok || !p.known[k] {
			if _, arg := argIndex[v]; arg || isConst[v] {
				constOf[v] = true
			}
			return
		}
		if p.recompute[k] {
			return
		}
		e := j.Eqns[k]
		if save(v, e) && e.Prim.Kind != interp.Mutation {
			constOf[v] = true
			return
		}
		p.recompute[k] = true
		for _, u := range e.In {
			need(u)
		}
	}
	backwardReads(j, nOut, p.known, need)
	for v := range constOf {
		p.consts = append(p.consts, v)
	}
	sortVars(p.consts)
	p.sources = make([]string, len(p.consts))
	for i, v := range p.consts {
		switch k, ok := producer[v]; {
		case ok:
			p.sources[i] = savedByPolicy + j.Eqns[k].Prim.Name
		case isConst[v]:
			p.sources[i] = "checkpoint: constant"
		case argIndex[v] < nArgs:
			p.sources[i] = "checkpoint: argument leaf " + strconv.Itoa(argIndex[v])
		default:
			p.sources[i] = "checkpoint: captured tensor " + strconv.Itoa(argIndex[v]-nArgs)
		}
	}
	// The forward pass: the known equations the results and the saved
	// values need.
	p.keep = make(map[*interp.Var]bool, len(p.consts)+nOut)
	p.forward = make([]bool, len(j.Eqns))
	var want func(v *interp.Var)
	want = func(v *interp.Var) {
		k, ok := producer[v]
		if !ok || !p.known[k] || p.forward[k] {
			return
		}
		p.forward[k] = true
		for _, u := range j.Eqns[k].In {
			want(u)
		}
	}
	for _, v := range j.Out[:nOut] {
		p.keep[v] = true
		want(v)
	}
	for _, v := range p.consts {
		p.keep[v] = true
		want(v)
	}
	// An effect runs in the forward pass whether or not its results are
	// needed (a print, a collective), as it would without the checkpoint.
	for k, e := range j.Eqns {
		if p.known[k] && e.HasEffect() {
			for _, v := range e.Out {
				want(v)
			}
		}
	}
	p.lastUse = make(map[*interp.Var]int)
	for k, e := range j.Eqns {
		if p.forward[k] {
			for _, v := range e.In {
				p.lastUse[v] = k
			}
		}
	}
	return p
}

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

// spreadFloat stores ts, the tangents of outs's float results in
// order (a linear primitive's results), into touts at those results'
// positions; the others stay nil (no tangent).
func spreadFloat(touts, outs, ts []*tensor) {
	k := 0
	for i, o := range outs {
		if o.DType().IsFloat() {
			touts[i] = ts[k]
			k++
		}
	}
}

// candidate describes the known var v (an output of equation e) for the
// policy.
func candidate(e *interp.Eqn, v *interp.Var) SaveCandidate {
	c := SaveCandidate{Prim: e.Prim.Name, Params: e.Params, Shape: v.Aval.Shape, DType: v.Aval.DType}
	if e.Prim == namePrim {
		c.Name = e.Params.(nameParams).name
	}
	return c
}

func sortVars(vs []*interp.Var) {
	slices.SortFunc(vs, func(a, b *interp.Var) int { return a.ID - b.ID })
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
	c := &customCall{op: op, in: def}
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
