package functionalize

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Store is how an interpreter level holds the values of its own boxes.
// Aliases runs the aliasing algorithm over it; the functionalize
// interpreter keeps values below (a box's value is a tensor of a lower
// level), the autodiff interpreters keep them in their own boxes (a box
// is its own value, so view and scatter primitives bound on it are
// differentiated too).
type Store interface {
	// Own reports whether box x belongs to the store's level.
	Own(x *T) bool
	// Value returns the tensor that stands for own box x when view and
	// scatter primitives are bound.
	Value(x *T) *T
	// Set makes v (computed by binding on Values) own box x's value.
	Set(x, v *T)
	// Adopt makes lower box x a box of the level that holds x's current
	// content.
	Adopt(x *T)
}

// Aliases keeps the boxes of one interpreter level coherent when they
// alias: it is the one implementation of writes through views for every
// interpreter that answers mutations out of place. A view box records
// its base, parent, view primitive and the base's generation
// (interp.View). A write through a view becomes an update of its parent
// through the view's inverse (ScatterView), recursively up to the base,
// whose generation moves on; any alias whose recorded generation is
// stale is recomputed from its base the next time it is used (Use). A
// lower box that aliases a base of this level (a concrete view taken
// before the base was written here) is adopted when used, so it too is
// recomputed rather than read from an old buffer.
type Aliases struct {
	Store Store
	// CopyViews makes every view and scatter result a copy, so no value
	// aliases another (functionalize's RemoveViews).
	CopyViews bool
}

// View binds view primitive p on parent value v (a Value of the store).
func (a *Aliases) View(p *interp.Prim, params any, v *T) *T {
	y := interp.Bind1(p, params, v)
	if a.CopyViews {
		y = interp.Bind1(prims.Copy, nil, y)
	}
	return y
}

// MarkView records that own box r is the view p(x) (interp.MarkView),
// so that writes through it reach x's base and writes into the base
// reach r.
func (a *Aliases) MarkView(p *interp.Prim, params any, x, r *T) {
	interp.MarkView(p, params, x, r)
}

// Use returns the value that stands for box x as an operand: the
// up-to-date value of an own box (a stale view recomputed from its
// base), x itself for a lower box that aliases nothing of this level.
// A lower alias of a base of this level is adopted first.
func (a *Aliases) Use(x *T) *T {
	if !a.Store.Own(x) {
		if v := interp.ViewInfo(x); v == nil || !a.Store.Own(v.Base) {
			return x
		}
		a.Adopt(x)
	}
	return a.Current(x)
}

// Current returns own box x's value, recomputing it from its base first
// when x is a view whose base was written since.
func (a *Aliases) Current(x *T) *T {
	v := interp.ViewInfo(x)
	if v == nil || v.Gen == interp.Generation(v.Base) {
		return a.Store.Value(x)
	}
	parent := a.Current(v.Parent)
	a.Store.Set(x, a.View(v.Prim, v.Params, parent))
	v.Gen = interp.Generation(v.Base)
	return a.Store.Value(x)
}

// staleGen marks a view whose value must be recomputed from its base.
const staleGen = ^uint64(0)

// Adopt makes lower box x (and, for a view, its parent chain) a box of
// this level holding its current content. A view of a base that is
// already this level's was taken before the base was written here, so
// it is marked stale.
func (a *Aliases) Adopt(x *T) {
	if a.Store.Own(x) {
		return
	}
	if v := interp.ViewInfo(x); v != nil {
		stale := a.Store.Own(v.Base)
		a.Adopt(v.Parent)
		v.Gen = interp.Generation(v.Base)
		if stale {
			v.Gen = staleGen
		}
	}
	a.Store.Adopt(x)
}

// Write answers mutation p on args out of place: the destination is
// adopted when it is a lower box, its new value is computed with the
// out-of-place primitive on the operands' current values, and it is
// assigned through the destination's view chain.
func (a *Aliases) Write(p *interp.Prim, params any, args []*T) {
	dst := args[0]
	a.Adopt(dst)
	vals := make([]*T, len(args))
	for i, x := range args {
		vals[i] = a.Use(x)
		if vals[i] == x && !a.Store.Own(x) {
			// A lower box written into dst (copy_'s source) is taken
			// by value: a later write into that box, or its adoption
			// by this level, must not change dst.
			vals[i] = interp.Snapshot(x)
		}
	}
	a.Assign(p, dst, interp.OutOfPlace(p, params, vals))
}

// Assign sets own box x to v, writing through x's view chain into its
// base with each view's inverse, and moves the base's generation on so
// every other alias is recomputed when next used. p, the mutation, is
// named in errors.
func (a *Aliases) Assign(p *interp.Prim, x, v *T) {
	vi := interp.ViewInfo(x)
	if vi == nil {
		a.Store.Set(x, v)
		interp.BumpGeneration(x)
		return
	}
	parent := a.Current(vi.Parent)
	newParent := ScatterView(p, vi.Prim, vi.Params, parent, v)
	if a.CopyViews {
		newParent = interp.Bind1(prims.Copy, nil, newParent)
	}
	a.Assign(p, vi.Parent, newParent)
	a.Store.Set(x, v)
	vi.Gen = interp.Generation(vi.Base)
}
