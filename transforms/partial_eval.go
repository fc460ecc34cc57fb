package transforms

import (
	"slices"
	"strconv"

	"github.com/peel-ml/peel/autodiff"
	"github.com/peel-ml/peel/interp"
)

// Partial evaluation of a JVP graph under a save policy, which
// checkpoint, cond (a branch's linearization) and scan (a step's) share:
// J, the graph of primals and tangents, is split into the equations the
// forward pass computes (known) and those the backward pass recomputes
// from what the policy saves (ckptPlan, newPlan), as JAX's
// partial_eval_jaxpr_nounits with a remat policy.

// splitJVP returns the plan of g (nArgs of its inputs the argument's
// leaves, the rest captured tensors) for the inputs with tangents (has)
// under policy: J traced and split (see ckptPlan). Unlike a
// checkpoint's plans (ckptParams.plan) it is not cached.
func splitJVP(g *interp.Graph, nArgs int, policy SavePolicy, has []bool) *ckptPlan {
	return newPlan(jvpGraph(g, has), len(has), len(g.Out), nArgs, policy)
}

// jvpGraph traces J for the inputs with tangents (has): inputs are all
// primals then the tangents of has, outputs the primal results then the
// tangents of the float results (zeros where symbolic).
func jvpGraph(g *interp.Graph, has []bool) *interp.Graph {
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
