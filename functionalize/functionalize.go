package functionalize

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// T is a tensor.
type T = interp.Tensor

// tracer is the payload of a value at a functionalize level: its current
// value below. A view box also carries an interp.View record (base,
// parent, primitive, base generation when val was computed).
type tracer struct {
	level *interp.Level
	val   *T
}

func (t *tracer) Level() *interp.Level { return t.level }

// Interp is the functionalize interpreter of one level: it answers every
// mutation out of place and keeps aliases coherent by replaying views
// from their base, so nothing below it is ever mutated.
type Interp struct {
	level *interp.Level
	// removeViews copies the result of every view primitive bound below,
	// so no value below aliases another.
	removeViews bool
	// adopted are lower-level boxes that mutations made values of this
	// level, in adoption order, with their content below.
	adopted []*T
	below   map[*T]*T
}

// New starts a functionalize level. removeViews makes views copies
// below (torch's remove="mutations_and_views").
func New(removeViews bool) *Interp {
	in := &Interp{removeViews: removeViews, below: map[*T]*T{}}
	in.level = interp.NewLevel("functionalize", in)
	return in
}

// Level returns the interpreter's level.
func (f *Interp) Level() *interp.Level { return f.level }

// Wrap returns x as a value of this level (an input of the function).
func (f *Interp) Wrap(x *T) *T {
	return interp.NewTracer(x.Aval(), &tracer{level: f.level, val: x})
}

// Unwrap returns the value below of a result of the function.
func (f *Interp) Unwrap(x *T) *T {
	if f.own(x) {
		return f.current(x)
	}
	return x
}

// End gives the function's inputs (the boxes Wrap returned, with the
// caller's originals) and every adopted box their final values, then ends
// the level. A concrete tensor given a concrete value is written in place
// below — the function's effect, seen by its aliases; anything else is
// rebound, so a staging level below records no mutation.
func (f *Interp) End(inputs []*T, originals []*T) {
	defer f.level.End()
	for i, in := range inputs {
		tr, ok := in.Tracer().(*tracer)
		if !ok || tr.level != f.level || tr.val == originals[i] {
			continue // never written
		}
		writeBack(originals[i], f.current(in))
	}
	finals := make([]*T, len(f.adopted))
	for i, box := range f.adopted {
		finals[i] = f.current(box)
	}
	for i, box := range f.adopted {
		below, final := f.below[box], finals[i]
		switch {
		case box.ViewInfo() != nil && below.IsConcrete():
			box.Rebind(below) // aliases its base's buffer, written below
		case box.ViewInfo() == nil && below.IsConcrete() && final.IsConcrete():
			writeBack(below, final)
			box.Rebind(below)
		default:
			box.Rebind(final)
		}
	}
}

// writeBack gives the caller's tensor orig the value v: rebound when
// orig is being staged (so the graph records no mutation) or when a
// concrete orig would receive a traced value; written with copy_
// otherwise, at orig's own level (eval writes its buffer, vmap its
// physical value), so orig's aliases see it.
func writeBack(orig, v *T) {
	if orig.IsStaged() || (orig.IsConcrete() && !v.IsConcrete()) {
		orig.Rebind(v)
		return
	}
	interp.Bind(prims.CopyInPlace, nil, orig, v)
}

func (f *Interp) own(x *T) bool {
	tr, ok := x.Tracer().(*tracer)
	return ok && tr.level == f.level
}

// current returns x's value below, regenerating a stale view from its
// base.
func (f *Interp) current(x *T) *T {
	tr := x.Tracer().(*tracer)
	v := x.ViewInfo()
	if v == nil || v.Gen == v.Base.Generation() {
		return tr.val
	}
	parent := f.current(v.Parent)
	tr.val = f.applyView(v.Prim, v.Params, parent)
	v.Gen = v.Base.Generation()
	return tr.val
}

func (f *Interp) applyView(p *interp.Prim, params any, x *T) *T {
	y := interp.Bind1(p, params, x)
	if f.removeViews {
		y = interp.Bind1(prims.Copy, nil, y)
	}
	return y
}

// adopt makes a lower box (and, for a view, its parent chain) a value of
// this level holding its current content.
func (f *Interp) adopt(x *T) {
	if f.own(x) {
		return
	}
	if v := x.ViewInfo(); v != nil {
		stale := f.own(v.Base) // the base was written after this view was made
		f.adopt(v.Parent)
		v.Gen = v.Base.Generation()
		if stale {
			v.Gen = staleGen
		}
	}
	below := x.NewBox()
	x.Rebind(interp.NewTracer(x.Aval(), &tracer{level: f.level, val: below}))
	f.adopted = append(f.adopted, x)
	f.below[x] = below
}

// staleGen marks a view whose value must be recomputed from its base.
const staleGen = ^uint64(0)

func (f *Interp) unpack(x *T) *T {
	if !f.own(x) {
		if v := x.ViewInfo(); v == nil || !f.own(v.Base) {
			return x
		}
		f.adopt(x) // a lower alias of a base written here
	}
	return f.current(x)
}

// Process applies p to the operands' current values below.
func (f *Interp) Process(l *interp.Level, p *interp.Prim, params any, args []*T) []*T {
	if p.Kind == interp.Mutation {
		return f.mutate(p, params, args)
	}
	if p.Impl != nil && p.ImplMutates {
		// A composite whose definition writes in place: decomposed here,
		// so its writes are answered out of place.
		return p.Impl(params, args)
	}
	vals := make([]*T, len(args))
	for i, a := range args {
		vals[i] = f.unpack(a)
	}
	var outs []*T
	if p.Kind == interp.ViewKind {
		outs = []*T{f.applyView(p, params, vals[0])}
	} else {
		outs = interp.Bind(p, params, vals...)
	}
	res := make([]*T, len(outs))
	for i, o := range outs {
		res[i] = interp.NewTracer(o.Aval(), &tracer{level: f.level, val: o})
	}
	if p.Kind == interp.ViewKind {
		x := args[0]
		base := interp.BaseOf(x)
		res[0].SetViewInfo(&interp.View{Base: base, Parent: x, Prim: p, Params: params, Gen: base.Generation()})
	}
	return res
}

// mutate answers dst ← op(dst, srcs…) out of place: the new value of dst
// is computed below with the out-of-place primitive and written back
// through dst's view chain into its base, whose generation moves on so
// every other alias regenerates when next used.
func (f *Interp) mutate(p *interp.Prim, params any, args []*T) []*T {
	dst := args[0]
	f.adopt(dst)
	vals := make([]*T, len(args))
	for i, a := range args {
		vals[i] = f.unpack(a)
	}
	f.assign(p, dst, interp.OutOfPlace(p, params, vals))
	return args[:1]
}

// assign sets box x (of this level) to v, writing through its view chain.
func (f *Interp) assign(p *interp.Prim, x, v *T) {
	tr := x.Tracer().(*tracer)
	vi := x.ViewInfo()
	if vi == nil {
		tr.val = v
		x.BumpGeneration()
		return
	}
	parent := f.current(vi.Parent)
	newParent := ScatterView(p, vi.Prim, vi.Params, parent, v)
	if f.removeViews {
		newParent = interp.Bind1(prims.Copy, nil, newParent)
	}
	f.assign(p, vi.Parent, newParent)
	tr.val = v
	vi.Gen = vi.Base.Generation()
}
