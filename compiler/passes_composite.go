package compiler

import (
	"sort"
	"strconv"
	"sync"

	"github.com/peel-ml/peel/internal/lru"
	"github.com/peel-ml/peel/interp"
)

// Op is a user-defined op as ReplaceComposites sees it: its primitive
// (what a match is replaced by), its number of operands, and its
// composite, the function of primitives whose staged graph is looked
// for. *customop.Op implements it; Prim returns nil for a nil op.
type Op interface {
	Prim() *interp.Prim
	Arity() int
	Composite(xs ...*interp.Tensor) *interp.Tensor
}

// maxPatternTraces bounds the operand types ReplaceComposites tries per
// op and graph (each is one trace of the op's composite, cached).
const maxPatternTraces = 256

// ReplaceComposites returns a pass that finds, in a graph, the equations
// computing an op's composite and replaces them with one equation of the
// op, so that code written with the plain composite gets the op's fused
// kernel (and its derived rules, under transforms).
//
// The composite is staged (interp.TraceAvals of Op.Composite) at operand
// types drawn from the graph's own values, and matched as a subgraph
// from its result backwards: the same primitives with equal parameters
// and the same dataflow, the composite's inputs bound to the values the
// matched equations read from outside, its constants to constants of
// equal value, bit for bit. A match is replaced only when the op accepts
// the bound operands with the matched result's type, none of the matched
// intermediates is used outside the match (or is an output of the graph),
// and no value involved is written in place. Matching is structural: an
// expression written in another order (x·2 for 2·x) is another
// subgraph. The pass should run first, on the graph as traced, since
// other passes may rewrite the composite's equations. It panics with
// *interp.Error if an op is nil. The pass is safe for concurrent use.
func ReplaceComposites(ops ...Op) Pass {
	for i, o := range ops {
		if o == nil || o.Prim() == nil {
			panic(&interp.Error{Ops: []string{"compiler.ReplaceComposites"}, Msg: "op " + strconv.Itoa(i) + " is nil"})
		}
	}
	c := &patterns{ops: ops, m: lru.New[patternKey, *pattern](maxPatterns)}
	return Pass{Name: "replace-composites", Run: c.run}
}

type patternKey struct {
	op    int
	avals string
}

// patterns caches the staged composites of a ReplaceComposites pass, at
// most maxPatterns (op, operand types) pairs.
type patterns struct {
	ops []Op
	mu  sync.Mutex // held while staging a missing pattern
	m   *lru.Cache[patternKey, *pattern]
}

// maxPatterns bounds a ReplaceComposites pass's staged composites: the
// least recently used are staged again when met.
const maxPatterns = 1024

// pattern is an op's composite staged at some operand types.
type pattern struct {
	op    Op
	g     *interp.Graph
	root  *interp.Eqn
	out   interp.Aval
	input map[*interp.Var]int
	konst map[*interp.Var]*interp.Tensor
	prod  map[*interp.Var]*interp.Eqn
	uses  map[*interp.Var]int
}

// get returns op i's composite staged at avals, or nil when it cannot be
// staged or matched (a composite that fails, mutates, ignores an operand
// or returns an operand or a constant, or whose op refuses these types).
func (c *patterns) get(i int, avals []interp.Aval) *pattern {
	k := patternKey{i, interp.AvalsKey(avals)}
	if p, ok := c.m.Load(k); ok {
		return p
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.m.Load(k); ok {
		return p
	}
	p := stagePattern(c.ops[i], avals)
	c.m.Store(k, p)
	return p
}

func stagePattern(op Op, avals []interp.Aval) (p *pattern) {
	defer func() {
		if recover() != nil {
			p = nil
		}
	}()
	out := op.Prim().Abstract(nil, avals)
	if len(out) != 1 {
		return nil
	}
	g := interp.TraceAvals("compiler.ReplaceComposites", func(xs []*interp.Tensor) []*interp.Tensor {
		return []*interp.Tensor{op.Composite(xs...)}
	}, avals)
	p = &pattern{op: op, g: g, out: out[0], input: map[*interp.Var]int{}, konst: map[*interp.Var]*interp.Tensor{},
		prod: map[*interp.Var]*interp.Eqn{}, uses: map[*interp.Var]int{}}
	for j, v := range g.In {
		p.input[v] = j
	}
	for j, v := range g.Consts {
		p.konst[v] = g.ConstVals[j]
	}
	for _, e := range g.Eqns {
		if e.Prim.Kind == interp.Mutation {
			return nil
		}
		for _, v := range e.In {
			p.uses[v]++
		}
		for _, v := range e.Out {
			p.prod[v] = e
		}
	}
	if len(g.Out) != 1 || !g.Out[0].Aval.Equal(out[0]) {
		return nil
	}
	p.root = p.prod[g.Out[0]]
	if p.root == nil || len(p.root.Out) != 1 {
		return nil
	}
	for _, v := range g.In {
		if p.uses[v] == 0 {
			return nil
		}
	}
	return p
}

// target is what matching needs to know about the graph searched.
type target struct {
	prod    map[*interp.Var]*interp.Eqn
	konst   map[*interp.Var]*interp.Tensor
	uses    map[*interp.Var]int
	out     map[*interp.Var]bool
	mut     map[*interp.Var]bool
	claimed map[*interp.Eqn]bool
}

func newTarget(g *interp.Graph) *target {
	t := &target{prod: map[*interp.Var]*interp.Eqn{}, konst: map[*interp.Var]*interp.Tensor{}, uses: map[*interp.Var]int{},
		out: map[*interp.Var]bool{}, mut: mutated(g), claimed: map[*interp.Eqn]bool{}}
	for i, v := range g.Consts {
		t.konst[v] = g.ConstVals[i]
	}
	for _, e := range g.Eqns {
		for _, v := range e.In {
			t.uses[v]++
		}
		for _, v := range e.Out {
			t.prod[v] = e
		}
	}
	for _, v := range g.Out {
		t.out[v] = true
	}
	return t
}

func (c *patterns) run(g *interp.Graph) *interp.Graph {
	// The operand types to try: every type a value of the graph has.
	var avals []interp.Aval
	seen := map[string]bool{}
	add := func(vs []*interp.Var) {
		for _, v := range vs {
			if k := interp.AvalsKey([]interp.Aval{v.Aval}); !seen[k] {
				seen[k] = true
				avals = append(avals, v.Aval)
			}
		}
	}
	add(g.In)
	add(g.Consts)
	for _, e := range g.Eqns {
		add(e.Out)
	}
	if len(avals) == 0 {
		return g
	}
	// Every pattern the graph could hold, the largest first: a match
	// claims its equations, so the one absorbing the most work wins.
	var pats []*pattern
	for i, op := range c.ops {
		n := op.Arity()
		if n == 0 {
			continue
		}
		idx := make([]int, n)
		for tries := 0; tries < maxPatternTraces; tries++ {
			tuple := make([]interp.Aval, n)
			for j, k := range idx {
				tuple[j] = avals[k]
			}
			if p := c.get(i, tuple); p != nil {
				pats = append(pats, p)
			}
			// The next tuple, in odometer order.
			j := n - 1
			for ; j >= 0; j-- {
				if idx[j]++; idx[j] < len(avals) {
					break
				}
				idx[j] = 0
			}
			if j < 0 {
				break
			}
		}
	}
	sort.SliceStable(pats, func(a, b int) bool { return len(pats[a].g.Eqns) > len(pats[b].g.Eqns) })
	t := newTarget(g)
	// replaced maps a matched root to the op's equation replacing it.
	replaced := map[*interp.Eqn]*interp.Eqn{}
	for _, p := range pats {
		for _, e := range g.Eqns {
			if r := t.match(p, e); r != nil {
				replaced[e] = r
			}
		}
	}
	if len(replaced) == 0 {
		return g
	}
	out := &interp.Graph{In: g.In, Consts: g.Consts, ConstVals: g.ConstVals, Out: g.Out}
	for _, e := range g.Eqns {
		if r, ok := replaced[e]; ok {
			out.Eqns = append(out.Eqns, r)
			continue
		}
		if !t.claimed[e] {
			out.Eqns = append(out.Eqns, e)
		}
	}
	return out.DCE()
}

// matcher is one attempt to match a pattern at a root equation.
type matcher struct {
	t    *target
	p    *pattern
	vmap map[*interp.Var]*interp.Var
	emap map[*interp.Eqn]*interp.Eqn
	used map[*interp.Eqn]bool
}

// match returns the op's equation that replaces the pattern matched with
// its root at e, claiming the matched equations, or nil.
func (t *target) match(p *pattern, e *interp.Eqn) *interp.Eqn {
	if e.Prim != p.root.Prim || t.claimed[e] || len(e.Out) != 1 || !e.Out[0].Aval.Equal(p.out) {
		return nil
	}
	m := &matcher{t: t, p: p, vmap: map[*interp.Var]*interp.Var{}, emap: map[*interp.Eqn]*interp.Eqn{}, used: map[*interp.Eqn]bool{}}
	if !m.eqn(p.root, e) || len(m.emap) != len(p.g.Eqns) {
		return nil
	}
	for pe, te := range m.emap {
		if touches(te, t.mut) {
			return nil
		}
		if pe == p.root {
			continue
		}
		for k, pv := range pe.Out {
			tv := te.Out[k]
			if t.out[tv] || t.uses[tv] != p.uses[pv] {
				return nil
			}
		}
	}
	in := make([]*interp.Var, len(p.g.In))
	for j, pv := range p.g.In {
		in[j] = m.vmap[pv]
		if in[j] == nil || t.mut[in[j]] {
			return nil
		}
	}
	for te := range m.used {
		t.claimed[te] = true
	}
	return &interp.Eqn{Prim: p.op.Prim(), In: in, Out: e.Out}
}

func (m *matcher) eqn(pe, te *interp.Eqn) bool {
	if prev, ok := m.emap[pe]; ok {
		return prev == te
	}
	if pe.Prim != te.Prim || len(pe.In) != len(te.In) || len(pe.Out) != len(te.Out) || m.used[te] || m.t.claimed[te] || !paramsEqual(pe.Params, te.Params) {
		return false
	}
	m.emap[pe], m.used[te] = te, true
	for k, pv := range pe.Out {
		if !pv.Aval.Equal(te.Out[k].Aval) {
			return false
		}
		m.vmap[pv] = te.Out[k]
	}
	for k, pv := range pe.In {
		if !m.value(pv, te.In[k]) {
			return false
		}
	}
	return true
}

func (m *matcher) value(pv, tv *interp.Var) bool {
	if w, ok := m.vmap[pv]; ok {
		return w == tv
	}
	if !pv.Aval.Equal(tv.Aval) {
		return false
	}
	if _, ok := m.p.input[pv]; ok {
		m.vmap[pv] = tv
		return true
	}
	if pc, ok := m.p.konst[pv]; ok {
		tc, ok := m.t.konst[tv]
		if !ok || !constEqual(pc, tc) {
			return false
		}
		m.vmap[pv] = tv
		return true
	}
	pe, te := m.p.prod[pv], m.t.prod[tv]
	if pe == nil || te == nil {
		return false
	}
	for k, v := range pe.Out {
		if v == pv && te.Out[k] != tv {
			return false
		}
	}
	return m.eqn(pe, te)
}

// constEqual reports whether two constants have one type and equal
// elements, bit for bit.
func constEqual(a, b *interp.Tensor) bool {
	if a == b {
		return true
	}
	if !interp.AvalOf(a).Equal(interp.AvalOf(b)) {
		return false
	}
	ka, okA := constBytes(a)
	kb, okB := constBytes(b)
	return okA && okB && ka == kb
}
