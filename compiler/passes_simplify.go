package compiler

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// A Rule is one algebraic rewrite of Simplify: for an equation applying
// Prim (with its inputs already simplified), Rewrite returns the var that
// holds the same value, or nil when the rule does not apply. It may emit
// new equations with b.Emit (which simplifies them in turn); the last
// one usually reuses the equation's own result var.
type Rule struct {
	Name    string
	Prim    *interp.Prim
	Rewrite func(b *Builder, e *interp.Eqn) *interp.Var
}

// SimplifyRules returns Simplify's rewrites, as data (a new slice each
// time). Each one keeps values bit for bit: they only compose or remove
// views and conversions.
func SimplifyRules() []Rule { return append([]Rule(nil), simplifyRules...) }

var simplifyRules = []Rule{
	{"reshape-identity", prims.Reshape, reshapeIdentity},
	{"reshape-reshape", prims.Reshape, reshapeReshape},
	{"reshape-splat", prims.Reshape, viewOfSplat},
	{"reshape-broadcast-units", prims.Reshape, reshapeBroadcastUnits},
	{"transpose-identity", prims.Transpose, transposeIdentity},
	{"transpose-transpose", prims.Transpose, transposeTranspose},
	{"transpose-splat", prims.Transpose, viewOfSplat},
	{"broadcast-identity", prims.BroadcastInDim, broadcastIdentity},
	{"broadcast-broadcast", prims.BroadcastInDim, broadcastBroadcast},
	{"broadcast-reshape-units", prims.BroadcastInDim, broadcastReshapeUnits},
	{"slice-identity", prims.Slice, sliceIdentity},
	{"slice-splat", prims.Slice, viewOfSplat},
	{"convert-identity", prims.ConvertElementType, convertIdentity},
}

// Simplify applies SimplifyRules to every equation, in order, until none
// applies: chains of reshapes, of transposes and of broadcasts become one
// view, views of a broadcast scalar become one broadcast of it, and
// identity reshapes, transposes, broadcasts, slices and conversions are
// removed. Equations left unused are dropped (DCE). Equations that read
// or define a value written in place are left as they are.
func Simplify(g *interp.Graph) *interp.Graph { return SimplifyWith(g, simplifyRules) }

// SimplifyWith is Simplify with the given rules.
func SimplifyWith(g *interp.Graph, rules []Rule) *interp.Graph {
	byPrim := map[*interp.Prim][]Rule{}
	for _, r := range rules {
		byPrim[r.Prim] = append(byPrim[r.Prim], r)
	}
	b := newBuilder(g)
	b.rules = byPrim
	for _, e := range g.Eqns {
		e = b.subst(e)
		if len(e.Out) != 1 || touches(e, b.mut) {
			b.append(e)
			continue
		}
		if v := b.Emit(e); v != e.Out[0] {
			b.sub[e.Out[0]] = v
		}
	}
	if !b.changed {
		return g
	}
	return b.graph().DCE()
}

// Builder builds the graph a pass rewrites into: equations are appended
// in order, vars may be substituted, and each var's producing equation
// is known.
type Builder struct {
	g       *interp.Graph
	eqns    []*interp.Eqn
	sub     map[*interp.Var]*interp.Var
	prod    map[*interp.Var]*interp.Eqn
	next    int
	rules   map[*interp.Prim][]Rule
	mut     map[*interp.Var]bool
	changed bool
	depth   int
	// consts and constVals are the constants the pass adds.
	consts    []*interp.Var
	constVals []*interp.Tensor
}

// Const returns a new constant var holding t, a concrete tensor.
func (b *Builder) Const(t *interp.Tensor) *interp.Var {
	v := b.NewVar(interp.AvalOf(t))
	b.consts = append(b.consts, v)
	b.constVals = append(b.constVals, t)
	return v
}

func newBuilder(g *interp.Graph) *Builder {
	return &Builder{g: g, sub: map[*interp.Var]*interp.Var{}, prod: map[*interp.Var]*interp.Eqn{}, next: g.IDBound(), mut: mutated(g)}
}

// Producer returns the equation of the new graph that defines v, or nil
// for inputs, constants, and equations that read or define a value
// written in place (rules must not look through those).
func (b *Builder) Producer(v *interp.Var) *interp.Eqn {
	if e := b.prod[v]; e != nil && !touches(e, b.mut) {
		return e
	}
	return nil
}

// NewVar returns a new var of type a.
func (b *Builder) NewVar(a interp.Aval) *interp.Var {
	v := &interp.Var{ID: b.next, Aval: a}
	b.next++
	return v
}

// Emit adds e to the new graph after simplifying it with the builder's
// rules, and returns the var holding e's (single) result: e.Out[0], or
// the var a rule replaced it with.
func (b *Builder) Emit(e *interp.Eqn) *interp.Var {
	if b.depth < 64 {
		for _, r := range b.rules[e.Prim] {
			b.depth++
			v := r.Rewrite(b, e)
			b.depth--
			if v != nil {
				b.changed = true
				return v
			}
		}
	}
	b.append(e)
	return e.Out[0]
}

func (b *Builder) append(e *interp.Eqn) {
	b.eqns = append(b.eqns, e)
	for _, v := range e.Out {
		b.prod[v] = e
	}
}

// subst returns e with its inputs substituted.
func (b *Builder) subst(e *interp.Eqn) *interp.Eqn {
	if in, ok := substitute(e.In, b.sub); ok {
		for i, v := range in {
			in[i] = resolve(v, b.sub)
		}
		return &interp.Eqn{Prim: e.Prim, Params: e.Params, In: in, Out: e.Out, Site: e.Site}
	}
	return e
}

// graph returns the new graph.
func (b *Builder) graph() *interp.Graph {
	out := make([]*interp.Var, len(b.g.Out))
	for i, v := range b.g.Out {
		out[i] = resolve(v, b.sub)
	}
	consts, vals := b.g.Consts, b.g.ConstVals
	if len(b.consts) > 0 {
		consts = append(consts[:len(consts):len(consts)], b.consts...)
		vals = append(vals[:len(vals):len(vals)], b.constVals...)
	}
	return &interp.Graph{In: b.g.In, Consts: consts, ConstVals: vals, Eqns: b.eqns, Out: out}
}

// producerOf returns the equation producing v if it applies p.
func (b *Builder) producerOf(v *interp.Var, p *interp.Prim) *interp.Eqn {
	if e := b.Producer(v); e != nil && e.Prim == p && len(e.Out) == 1 {
		return e
	}
	return nil
}

func isIota(perm []int) bool {
	for i, p := range perm {
		if p != i {
			return false
		}
	}
	return true
}

func reshapeIdentity(_ *Builder, e *interp.Eqn) *interp.Var {
	if interp.ShapeEqual(e.In[0].Aval.Shape, e.Out[0].Aval.Shape) {
		return e.In[0]
	}
	return nil
}

func reshapeReshape(b *Builder, e *interp.Eqn) *interp.Var {
	inner := b.producerOf(e.In[0], prims.Reshape)
	if inner == nil {
		return nil
	}
	return b.Emit(&interp.Eqn{Prim: prims.Reshape, Params: e.Params, In: []*interp.Var{inner.In[0]}, Out: e.Out})
}

// viewOfSplat rewrites a view (reshape, transpose, slice) of a broadcast
// of a one-element value into one broadcast of that value.
func viewOfSplat(b *Builder, e *interp.Eqn) *interp.Var {
	bc := b.producerOf(e.In[0], prims.BroadcastInDim)
	if bc == nil || bc.In[0].Aval.Size() != 1 {
		return nil
	}
	x := bc.In[0]
	if len(x.Aval.Shape) > 0 {
		s := b.NewVar(interp.Aval{Shape: []int{}, DType: x.Aval.DType})
		x = b.Emit(&interp.Eqn{Prim: prims.Reshape, Params: prims.ReshapeParams{Shape: []int{}}, In: []*interp.Var{x}, Out: []*interp.Var{s}})
	}
	shape := append([]int{}, e.Out[0].Aval.Shape...)
	return b.Emit(&interp.Eqn{Prim: prims.BroadcastInDim, Params: prims.BroadcastParams{Shape: shape, Dims: []int{}}, In: []*interp.Var{x}, Out: e.Out})
}

func transposeIdentity(_ *Builder, e *interp.Eqn) *interp.Var {
	if isIota(e.Params.(prims.TransposeParams).Perm) {
		return e.In[0]
	}
	return nil
}

func transposeTranspose(b *Builder, e *interp.Eqn) *interp.Var {
	inner := b.producerOf(e.In[0], prims.Transpose)
	if inner == nil {
		return nil
	}
	// Result dimension i is the inner result's dimension outer[i], which
	// is the operand's dimension inner[outer[i]].
	p1, p2 := inner.Params.(prims.TransposeParams).Perm, e.Params.(prims.TransposeParams).Perm
	perm := make([]int, len(p2))
	for i, q := range p2 {
		perm[i] = p1[q]
	}
	return b.Emit(&interp.Eqn{Prim: prims.Transpose, Params: prims.TransposeParams{Perm: perm}, In: []*interp.Var{inner.In[0]}, Out: e.Out})
}

func broadcastIdentity(_ *Builder, e *interp.Eqn) *interp.Var {
	p := e.Params.(prims.BroadcastParams)
	if interp.ShapeEqual(e.In[0].Aval.Shape, p.Shape) && isIota(p.Dims) {
		return e.In[0]
	}
	return nil
}

func broadcastBroadcast(b *Builder, e *interp.Eqn) *interp.Var {
	inner := b.producerOf(e.In[0], prims.BroadcastInDim)
	if inner == nil {
		return nil
	}
	// Operand dimension i goes to the inner result's dimension d1[i],
	// which goes to the result's dimension d2[d1[i]]: increasing, and a
	// dimension of size s ≠ 1 stays s all the way.
	d1, p2 := inner.Params.(prims.BroadcastParams).Dims, e.Params.(prims.BroadcastParams)
	dims := make([]int, len(d1))
	for i, d := range d1 {
		dims[i] = p2.Dims[d]
	}
	return b.Emit(&interp.Eqn{Prim: prims.BroadcastInDim, Params: prims.BroadcastParams{Shape: p2.Shape, Dims: dims}, In: []*interp.Var{inner.In[0]}, Out: e.Out})
}

func sliceIdentity(_ *Builder, e *interp.Eqn) *interp.Var {
	p := e.Params.(prims.SliceParams)
	for k, d := range e.In[0].Aval.Shape {
		if p.Start[k] != 0 || p.Limit[k] != d || (p.Stride[k] != 1 && d > 1) {
			return nil
		}
	}
	return e.In[0]
}

func convertIdentity(_ *Builder, e *interp.Eqn) *interp.Var {
	if e.Params.(prims.ConvertParams).DType == e.In[0].Aval.DType {
		return e.In[0]
	}
	return nil
}

// unitMap matches the dimensions of size ≠ 1 of from and to, which must
// have the same sizes in the same order (the shapes differ only by
// dimensions of size 1): it returns, for each dimension of from, the
// matching dimension of to, or -1 for a dimension of size 1.
func unitMap(from, to []int) ([]int, bool) {
	m := make([]int, len(from))
	j := 0
	for i, d := range from {
		m[i] = -1
		if d == 1 {
			continue
		}
		for j < len(to) && to[j] == 1 {
			j++
		}
		if j == len(to) || to[j] != d {
			return nil, false
		}
		m[i] = j
		j++
	}
	for ; j < len(to); j++ {
		if to[j] != 1 {
			return nil, false
		}
	}
	return m, true
}

// reshapeBroadcastUnits rewrites a reshape that only inserts or removes
// dimensions of size 1 of a broadcast into one broadcast, when every
// operand dimension of the broadcast goes to a dimension of size ≠ 1.
func reshapeBroadcastUnits(b *Builder, e *interp.Eqn) *interp.Var {
	bc := b.producerOf(e.In[0], prims.BroadcastInDim)
	if bc == nil {
		return nil
	}
	p := bc.Params.(prims.BroadcastParams)
	m, ok := unitMap(p.Shape, e.Out[0].Aval.Shape)
	if !ok {
		return nil
	}
	dims := make([]int, len(p.Dims))
	for i, d := range p.Dims {
		if dims[i] = m[d]; dims[i] < 0 {
			return nil
		}
	}
	shape := append([]int{}, e.Out[0].Aval.Shape...)
	return b.Emit(&interp.Eqn{Prim: prims.BroadcastInDim, Params: prims.BroadcastParams{Shape: shape, Dims: dims}, In: []*interp.Var{bc.In[0]}, Out: e.Out})
}

// broadcastReshapeUnits rewrites a broadcast of a reshape that only
// inserts or removes dimensions of size 1 into one broadcast of the
// reshape's operand, when that operand has no dimension of size 1.
func broadcastReshapeUnits(b *Builder, e *interp.Eqn) *interp.Var {
	r := b.producerOf(e.In[0], prims.Reshape)
	if r == nil {
		return nil
	}
	x := r.In[0]
	m, ok := unitMap(x.Aval.Shape, r.Out[0].Aval.Shape)
	if !ok {
		return nil
	}
	p := e.Params.(prims.BroadcastParams)
	dims := make([]int, len(m))
	for i, j := range m {
		if j < 0 {
			return nil
		}
		dims[i] = p.Dims[j]
	}
	return b.Emit(&interp.Eqn{Prim: prims.BroadcastInDim, Params: prims.BroadcastParams{Shape: p.Shape, Dims: dims}, In: []*interp.Var{x}, Out: e.Out})
}
