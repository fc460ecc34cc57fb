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
	level   *interp.Level
	aliases Aliases
	// adopted are lower-level boxes that mutations made values of this
	// level, in adoption order, with their content below.
	adopted []*T
	below   map[*T]*T
}

// New starts a functionalize level. removeViews makes views copies
// below (torch's remove="mutations_and_views").
func New(removeViews bool) *Interp {
	in := &Interp{below: map[*T]*T{}}
	in.aliases = Aliases{Store: store{in}, CopyViews: removeViews}
	in.level = interp.NewLevel("functionalize", in)
	return in
}

// store holds each box's value below, in its tracer.
type store struct{ f *Interp }

func (s store) Own(x *T) bool { return s.f.own(x) }
func (s store) Value(x *T) *T { return x.Tracer().(*tracer).val }
func (s store) Set(x, v *T)   { x.Tracer().(*tracer).val = v }
func (s store) Adopt(x *T) {
	below := x.NewBox()
	x.Rebind(interp.NewTracer(x.Aval(), &tracer{level: s.f.level, val: below}))
	s.f.adopted = append(s.f.adopted, x)
	s.f.below[x] = below
}

// Level returns the interpreter's level.
func (f *Interp) Level() *interp.Level { return f.level }

// Wrap returns x as a value of this level (an input of the function).
func (f *Interp) Wrap(x *T) *T {
	return interp.NewTracer(x.Aval(), &tracer{level: f.level, val: x})
}

// Unwrap returns the value below of a result of the function.
func (f *Interp) Unwrap(x *T) *T {
	// A lower alias of a base written here (a view taken before the
	// write) is recomputed from the base too.
	return f.aliases.Use(x)
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
			// The final value is a tracer (of an enclosing level) or
			// the box's content was: written back at that level, so
			// an enclosing autodiff level adopts the box and gives it
			// its final primal when it ends.
			box.Rebind(below)
			writeBack(box, final)
		}
	}
}

// writeBack gives the caller's tensor orig the value v: written with
// copy_ at orig's own level when v is concrete or of orig's level (eval
// writes orig's buffer, vmap its physical value), so orig's aliases see
// it, or at v's level when that level adopts written boxes
// (interp.WriteAdopter: an autodiff level gives orig its final primal
// when it ends); rebound otherwise (orig is being staged, so the graph
// records no mutation, or a concrete orig receives a value only a
// higher level can hold).
func writeBack(orig, v *T) {
	if orig.IsStaged() || (orig.IsConcrete() && !v.IsConcrete() && !interp.AdoptsWrites(v)) {
		orig.Rebind(v)
		return
	}
	interp.Bind(prims.CopyInPlace, nil, orig, v)
}

func (f *Interp) own(x *T) bool {
	tr, ok := x.Tracer().(*tracer)
	return ok && tr.level == f.level
}

// current returns own box x's value below, regenerating a stale view
// from its base.
func (f *Interp) current(x *T) *T { return f.aliases.Current(x) }

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
		vals[i] = f.aliases.Use(a)
	}
	var outs []*T
	if p.Kind == interp.ViewKind {
		outs = []*T{f.aliases.View(p, params, vals[0])}
	} else {
		outs = interp.Bind(p, params, vals...)
	}
	res := make([]*T, len(outs))
	for i, o := range outs {
		res[i] = interp.NewTracer(o.Aval(), &tracer{level: f.level, val: o})
	}
	if p.Kind == interp.ViewKind {
		f.aliases.MarkView(p, params, args[0], res[0])
	}
	return res
}

// mutate answers dst ← op(dst, srcs…) out of place (Aliases.Write):
// the new value of dst is computed below with the out-of-place
// primitive and written back through dst's view chain into its base,
// whose generation moves on so every other alias regenerates when next
// used.
func (f *Interp) mutate(p *interp.Prim, params any, args []*T) []*T {
	f.aliases.Write(p, params, args)
	return args[:1]
}

// Wrapped appends the tracer's current value below (interp.Wrapper).
func (t *tracer) Wrapped(dst []*T) []*T { return append(dst, t.val) }
