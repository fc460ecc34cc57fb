package functionalize

import (
	"github.com/peel-ml/peel/interp"
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

// Snapshot returns a payload holding t's current value
// (interp.Snapshotter): a later write, which replaces the value in t, does
// not reach it.
func (t *tracer) Snapshot() interp.Tracer { return &tracer{level: t.level, val: t.val} }

// Interp is the functionalize interpreter of one level: it answers every
// mutation out of place and keeps aliases coherent by replaying views
// from their base, so nothing below it is ever mutated.
type Interp struct {
	level   *interp.Level
	aliases Aliases
	// adopted are lower-level boxes that mutations made values of this
	// level, in adoption order, with their content below.
	adopted Adopted
}

// New starts a functionalize level. removeViews makes views copies
// below (torch's remove="mutations_and_views").
func New(removeViews bool) *Interp {
	in := &Interp{}
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
	s.f.adopted.Add(x, below)
}

// AdoptsWrites marks the functionalize interpreter as adopting lower
// boxes written with its values (interp.WriteAdopter): a level below
// that writes back into a lower box a value of this level binds the
// write here, and this level writes the box back when it ends.
func (f *Interp) AdoptsWrites() {}

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
// caller's originals) and every adopted box their final values
// (WriteBack, Adopted.End), then ends the level: a write at the
// original's own level, the function's effect, seen by its aliases.
func (f *Interp) End(inputs []*T, originals []*T) {
	defer f.level.End()
	for i, in := range inputs {
		tr, ok := in.Tracer().(*tracer)
		if !ok || tr.level != f.level || tr.val == originals[i] {
			continue // never written
		}
		WriteBack(originals[i], f.current(in))
	}
	f.adopted.End(f.current)
}

func (f *Interp) own(x *T) bool {
	tr, ok := x.Tracer().(*tracer)
	return ok && tr.level == f.level
}

// Abort ends the level after the function panicked: every adopted box
// gets its content below back and nothing is written (Adopted.Restore).
func (f *Interp) Abort() {
	defer f.level.End()
	f.adopted.Restore()
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
