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
	// in is set on the box of an argument root (WrapInputs).
	in *input
}

// input is one root of the function's arguments: a lower tensor orig
// (a leaf, or the base that several leaves are views of) wrapped as
// box, and the caller's tensor user it stands for.
type input struct {
	box, orig *T
	// user is the caller's tensor: orig itself, or the tensor a
	// staging input stands for (Compile). On the first write into box
	// it is linked (it shares box's payload until the level ends), so
	// the function's own reads of the caller's tensor (captured, as
	// well as passed) see the write, as eager code does.
	user    *T
	userOld *T // user's content before it was linked
	linked  bool
	written bool
}

func (t *tracer) Level() *interp.Level { return t.level }

// Nested returns the value below (interp.Nested: collectives find the
// axis names of its levels).
func (t *tracer) Nested() []*T { return []*T{t.val} }

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
	// start is the epoch the level began at: a box born before it is a
	// tensor from outside the function (OnCapturedWrite).
	start uint64
	// adopted are lower-level boxes that mutations made values of this
	// level, in adoption order, with their content below.
	adopted Adopted
	// inputs are the argument roots (WrapInputs).
	inputs []*input
	// OnCapturedWrite, when set, is offered every adopted base (a
	// tensor from outside the function that it wrote, not a view: one
	// made before the level began, never a temporary the function
	// made) whose final value or content is not concrete, when the
	// level ends; returning true
	// takes the write over: the box keeps its content from before the
	// function and is not written back (Compile makes such a tensor an
	// input and an output of its program).
	OnCapturedWrite func(box, final *T) bool
}

// New starts a functionalize level. removeViews makes views copies
// below (torch's remove="mutations_and_views").
func New(removeViews bool) *Interp {
	in := &Interp{}
	in.aliases = Aliases{Store: store{in}, CopyViews: removeViews}
	in.level = interp.NewLevel("functionalize", in)
	in.start = interp.EpochMark()
	return in
}

// store holds each box's value below, in its tracer.
type store struct{ f *Interp }

func (s store) Own(x *T) bool { return s.f.own(x) }
func (s store) Value(x *T) *T { return interp.TracerOf(x).(*tracer).val }
func (s store) Set(x, v *T) {
	tr := interp.TracerOf(x).(*tracer)
	tr.val = v
	if in := tr.in; in != nil {
		// An argument root, or the caller's tensor linked to it: both
		// boxes hold this payload, and the views of each see the write
		// (Aliases.Assign moves x's generation on, this the other's).
		in.written = true
		s.f.link(in)
		if x == in.user {
			interp.BumpGeneration(in.box)
		} else if in.linked {
			interp.BumpGeneration(in.user)
		}
	}
}
func (s store) Adopt(x *T) {
	for _, in := range s.f.inputs {
		if in.user == x && interp.ViewInfo(x) == nil {
			// The caller's tensor of an argument, written as captured:
			// it is that argument.
			if s.f.link(in); s.f.own(x) {
				return
			}
		}
	}
	below := interp.NewBox(x)
	interp.Rebind(x, interp.NewTracer(interp.AvalOf(x), &tracer{level: s.f.level, val: below}))
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
	return interp.NewTracer(interp.AvalOf(x), &tracer{level: f.level, val: x})
}

// WrapInputs returns the function's argument leaves as values of this
// level. Leaves that alias — the same tensor twice, or views of one
// base (interp.BaseOf) — become boxes over one base of this level, each
// view replayed from it, so a write through one is seen through the
// others as eager code sees it (tied weights, a slice of another
// argument). users, when not nil, are the caller's tensors the leaves
// stand for (Compile passes staging inputs as leaves; nil: the leaves
// stand for themselves); link, when not nil, marks the leaves whose
// caller's tensor is linked from the start, not on the first write
// (Compile's captured tensors the function writes). End gives the roots
// their final values.
func (f *Interp) WrapInputs(leaves, users []*T, link []bool) []*T {
	out := make([]*T, len(leaves))
	roots := make([]*T, len(leaves))
	for i, l := range leaves {
		roots[i] = interp.BaseOf(l)
	}
	if !shareRoots(roots) {
		for i, l := range leaves {
			user := l
			if users != nil {
				user = users[i]
			}
			in := f.wrapInput(l, user)
			out[i] = in.box
			if link != nil && link[i] {
				f.link(in)
			}
		}
		return out
	}
	done := make([]bool, len(leaves))
	for i, l := range leaves {
		if done[i] {
			continue
		}
		var members []int
		for j := i; j < len(leaves); j++ {
			if !done[j] && roots[j] == roots[i] {
				members = append(members, j)
			}
		}
		user := l
		if users != nil {
			user = users[i]
		}
		if len(members) == 1 {
			// The common case: a leaf that aliases no other leaf is its
			// own root (a view of a tensor f does not see is written
			// back through its own strides).
			in := f.wrapInput(l, user)
			out[i], done[i] = in.box, true
			if link != nil && link[i] {
				f.link(in)
			}
			continue
		}
		root := roots[i]
		rootUser := interp.BaseOf(user)
		in := f.wrapInput(root, rootUser)
		wrapped := map[*T]*T{root: in.box}
		for _, j := range members {
			out[j] = f.replayView(leaves[j], wrapped)
			done[j] = true
			if link != nil && link[j] {
				f.link(in)
			}
		}
	}
	return out
}

// shareRoots reports whether two of roots are the same box: by pairs
// for a few, with a set for many.
func shareRoots(roots []*T) bool {
	if len(roots) <= 16 {
		for i := 1; i < len(roots); i++ {
			for j := 0; j < i; j++ {
				if roots[i] == roots[j] {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[*T]bool, len(roots))
	for _, r := range roots {
		if seen[r] {
			return true
		}
		seen[r] = true
	}
	return false
}

func (f *Interp) wrapInput(orig, user *T) *input {
	in := &input{orig: orig, user: user}
	val := orig
	if user == orig && interp.ViewInfo(orig) == nil {
		// orig may be linked (its box then holds this level's value), so
		// the value below is a box of its content: copy_'s result is
		// its source itself, and values below must not change.
		val = interp.NewBox(orig)
	}
	in.box = interp.NewTracer(interp.AvalOf(orig), &tracer{level: f.level, val: val, in: in})
	f.inputs = append(f.inputs, in)
	return in
}

// replayView returns leaf x as a value of this level: its root's box,
// or its view chain replayed on it (wrapped memoizes the boxes made).
func (f *Interp) replayView(x *T, wrapped map[*T]*T) *T {
	if w, ok := wrapped[x]; ok {
		return w
	}
	v := interp.ViewInfo(x)
	w := interp.Bind1(v.Prim, v.Params, f.replayView(v.Parent, wrapped))
	wrapped[x] = w
	return w
}

// link makes the caller's tensor of argument root in share its box's
// payload until the level ends, so the function's reads of that tensor
// (a captured reference to an argument) see its writes. Only a tensor
// that is no view and not already a value of this level is linked; the
// caller's tensor is written by the function, so changing its box for
// the call is what eager code does to it too.
func (f *Interp) link(in *input) {
	u := in.user
	if in.linked || u == nil || u == in.box || interp.ViewInfo(u) != nil || f.own(u) {
		return
	}
	in.linked = true
	in.userOld = interp.NewBox(u)
	interp.Rebind(u, in.box)
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
	f.endInputs()
	for i, in := range inputs {
		tr, ok := interp.TracerOf(in).(*tracer)
		if !ok || tr.level != f.level || tr.val == originals[i] {
			continue // never written
		}
		WriteBack(originals[i], f.current(in))
	}
	f.adopted.End(f.current, func(box, final *T) bool {
		// A tensor from before the function that it wrote with a value
		// that is not concrete: a program tracing the function may take
		// the write over (OnCapturedWrite).
		return interp.ViewInfo(box) == nil && !(box.IsConcrete() && final.IsConcrete()) &&
			interp.BornBefore(box, f.start) && f.OnCapturedWrite != nil && f.OnCapturedWrite(box, final)
	})
}

// endInputs gives the argument roots of WrapInputs their final values:
// a linked caller's tensor gets its own content back first; a written
// root is written back, which its views see (they share its memory, or
// are recomputed from it at its level).
func (f *Interp) endInputs() {
	finals := make([]*T, len(f.inputs))
	for i, in := range f.inputs {
		if in.written {
			finals[i] = f.current(in.box)
		}
	}
	f.unlinkInputs()
	for i, in := range f.inputs {
		if !in.written {
			continue
		}
		WriteBack(in.orig, finals[i])
	}
}

// unlinkInputs gives each linked caller's tensor its own content back.
func (f *Interp) unlinkInputs() {
	for _, in := range f.inputs {
		if in.linked {
			interp.Rebind(in.user, in.userOld)
		}
	}
}

func (f *Interp) own(x *T) bool {
	tr, ok := interp.TracerOf(x).(*tracer)
	return ok && tr.level == f.level
}

// Abort ends the level after the function panicked: every adopted box
// gets its content below back and nothing is written (Adopted.Restore).
func (f *Interp) Abort() {
	defer f.level.End()
	f.unlinkInputs()
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
		res[i] = interp.NewTracer(interp.AvalOf(o), &tracer{level: f.level, val: o})
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
