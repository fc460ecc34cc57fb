package interp

import (
	"reflect"

	"github.com/peel-ml/peel/backend"
)

// bufferID identifies a buffer's storage: the address of its first
// element for slice-backed buffers, the pointer for pointer-backed ones.
func bufferID(b backend.Buffer) uintptr {
	v := reflect.ValueOf(b)
	switch v.Kind() {
	case reflect.Slice, reflect.Pointer:
		return v.Pointer()
	}
	return 0
}

// stager is the staging interpreter: it records every primitive applied to
// its tracers into a Graph instead of executing it.
type stager struct {
	g      *Graph
	level  *Level
	nextID int
	consts map[*Tensor]*Var
	// viewed holds the tensors views were taken of while staging: an
	// in-place write into one would have to update its views.
	viewed map[*Tensor]bool
	// constVersion is the content version each constant was lifted at.
	constVersion map[*Tensor]uint64
	// watched are the bases of concrete constants, which tell this
	// stager before an in-place write changes their buffer.
	watched []*Tensor
	// decompose makes composites with Whole decompose too.
	decompose bool
}

// TraceOption configures Trace and TraceAvals.
type TraceOption func(*stager)

// Decompose makes the trace decompose every composite, including those
// marked Whole (user-defined ops), so the graph holds only primitives
// with kernels.
func Decompose() TraceOption { return func(s *stager) { s.decompose = true } }

// stageTracer is the payload of a tensor being staged: the graph var that
// holds its value.
type stageTracer struct {
	s *stager
	v *Var
}

func (t *stageTracer) Level() *Level { return t.s.level }

// IsStaged reports whether t is a value being recorded by a staging level
// (Trace), whose graph would record an in-place write as an equation.
func (t *Tensor) IsStaged() bool {
	_, ok := t.tr.(*stageTracer)
	return ok
}

func (s *stager) newVar(a Aval) *Var {
	v := &Var{ID: s.nextID, Aval: a}
	s.nextID++
	return v
}

// varOf returns the var holding t at this level, lifting lower-level
// tensors (concrete values or tracers of enclosing transforms) to
// constants.
//
// A constant is recorded by content, not by box: the graph keeps a new
// box holding t's current content, so a later Rebind of t (an
// interpreter's out-of-place mutation) does not change the graph, and a
// later in-place write into t's buffer at eval level first makes the graph
// keep a copy (see beforeWrite).
func (s *stager) varOf(t *Tensor) *Var {
	if st, ok := t.tr.(*stageTracer); ok && st.s == s {
		return st.v
	}
	if v, ok := s.consts[t]; ok && s.constVersion[t] == t.version {
		return v
	}
	v := s.newVar(t.Aval())
	s.consts[t] = v
	s.constVersion[t] = t.version
	s.g.Consts = append(s.g.Consts, v)
	s.g.ConstVals = append(s.g.ConstVals, t.NewBox())
	if t.tr == nil {
		base := BaseOf(t)
		base.watchers = append(base.watchers, s)
		s.watched = append(s.watched, base)
	}
	return v
}

// beforeWrite is called before an in-place write into base's buffer: the
// constants sharing that buffer are replaced by copies of their current
// values.
func (s *stager) beforeWrite(base *Tensor) {
	for i, c := range s.g.ConstVals {
		if c.tr == nil && sameStorage(c, base) {
			s.g.ConstVals[i] = copyOf(c)
		}
	}
}

// sameStorage reports whether the concrete tensor c may share base's
// buffer (same backend buffer value).
func sameStorage(c, base *Tensor) bool {
	return c.be == base.be && c.arr.Buf != nil && base.arr.Buf != nil && bufferID(c.arr.Buf) == bufferID(base.arr.Buf)
}

// copyOf returns a concrete copy of c in a fresh buffer.
func copyOf(c *Tensor) *Tensor {
	dst := backend.Array{Buf: c.be.Alloc(c.dtype, c.Size()), Shape: c.shape}
	c.be.Copy(dst, c.arr)
	return &Tensor{shape: c.shape, dtype: c.dtype, arr: dst, be: c.be}
}

// unwatch removes s from the watchers of the bases it watched.
func (s *stager) unwatch() {
	for _, b := range s.watched {
		ws := b.watchers[:0]
		for _, w := range b.watchers {
			if w != s {
				ws = append(ws, w)
			}
		}
		if len(ws) == 0 {
			ws = nil
		}
		b.watchers = ws
	}
	s.watched = nil
}

func (s *stager) tracer(v *Var) *Tensor {
	return NewTracer(v.Aval, &stageTracer{s: s, v: v})
}

// Process records p applied to args and returns tracers for the results.
func (s *stager) Process(l *Level, p *Prim, params any, args []*Tensor) []*Tensor {
	if p.Impl != nil && (!p.Whole || s.decompose) {
		return p.Impl(params, args)
	}
	var outs []Aval
	if o, ok := ElementwiseAval(p, args); ok {
		outs = []Aval{o}
	} else {
		outs = Abstract(p, params, args)
	}
	if p.Kind == Mutation {
		dst := args[0]
		st, ok := dst.tr.(*stageTracer)
		if !ok || st.s != s || dst.view != nil || s.viewed[dst] {
			panic(&Error{Prim: p.Name, Msg: "in-place write into a tensor that is not a value of the traced function, or through a view, is not supported by the staging interpreter; write the function out of place or wrap it in Functionalize", Operands: []string{dst.TypeString()}})
		}
	}
	vars := make([]*Var, len(args)+len(outs))
	e := &Eqn{Prim: p, Params: params, In: vars[:len(args):len(args)], Out: vars[len(args):]}
	for i, a := range args {
		e.In[i] = s.varOf(a)
	}
	var res []*Tensor
	if len(outs) == 1 {
		// One allocation for the var, the tracer, the box and the result.
		o := &stagedOne{v: Var{ID: s.nextID, Aval: outs[0]}}
		s.nextID++
		o.st = stageTracer{s: s, v: &o.v}
		o.t = Tensor{shape: shapeOf(outs[0].Shape), dtype: outs[0].DType, tr: &o.st}
		o.res[0] = &o.t
		e.Out[0] = &o.v
		res = o.res[:]
	} else {
		res = make([]*Tensor, len(outs))
		for i, o := range outs {
			e.Out[i] = s.newVar(o)
			res[i] = s.tracer(e.Out[i])
		}
	}
	s.g.Eqns = append(s.g.Eqns, e)
	switch p.Kind {
	case Mutation:
		// The destination box now holds the equation's result.
		args[0].tr = res[0].tr
		args[0].version++
		return args[:1]
	case ViewKind:
		base := BaseOf(args[0])
		res[0].view = &View{Base: base, Parent: args[0], Prim: p, Params: params, Gen: base.gen}
		s.viewed[base] = true
	}
	return res
}

// stagedOne is a one-result equation's output: var, tracer, box and the
// result slice in one allocation.
type stagedOne struct {
	v   Var
	st  stageTracer
	t   Tensor
	res [1]*Tensor
}

// Trace runs f on tracers shaped like example and records the primitives
// it applies into a Graph, which it returns after dead-code elimination.
// f's operations are recorded, not executed; tensors f captures from
// outside become the graph's constants. Trace panics with *Error if f
// mutates a tensor it did not compute or writes through a view (wrap such
// functions in Functionalize), or reads a traced value's data. A
// composite marked Whole (a user-defined op) is recorded as one equation
// unless opts include Decompose.
func Trace(f func(args []*Tensor) []*Tensor, example []*Tensor, opts ...TraceOption) *Graph {
	avals := make([]Aval, len(example))
	for i, x := range example {
		if x == nil {
			panic(&Error{Ops: []string{"interp.Trace"}, Msg: "example argument " + itoa(i) + " is nil"})
		}
		avals[i] = x.Aval()
	}
	return TraceAvals("trace", f, avals, opts...)
}

// TraceAvals is Trace for arguments given by shape and dtype; name is the
// transform named in errors raised at the staging level.
func TraceAvals(name string, f func(args []*Tensor) []*Tensor, avals []Aval, opts ...TraceOption) *Graph {
	s := &stager{g: &Graph{}, consts: map[*Tensor]*Var{}, viewed: map[*Tensor]bool{}, constVersion: map[*Tensor]uint64{}}
	for _, o := range opts {
		o(s)
	}
	s.level = NewLevel(name, s)
	defer s.level.End()
	defer s.unwatch()
	in := make([]*Tensor, len(avals))
	for i, a := range avals {
		v := s.newVar(a)
		s.g.In = append(s.g.In, v)
		in[i] = s.tracer(v)
	}
	outs := func() []*Tensor {
		defer annotateLevel(s.level)
		return f(in)
	}()
	for _, o := range outs {
		if o == nil {
			panic(&Error{Ops: []string{"interp.Trace"}, Msg: "traced function returned a nil tensor"})
		}
		s.g.Out = append(s.g.Out, s.varOf(o))
	}
	return s.g.DCE()
}
