package interp

import (
	"runtime"
	"slices"
	"strings"
)

// stager is the staging interpreter: it records every primitive applied to
// its tracers into a Graph instead of executing it.
type stager struct {
	g      *Graph
	level  *Level
	nextID int
	consts map[*Tensor]constRec
	// viewed holds the tensors views were taken of while staging: an
	// in-place write into one would have to update its views.
	viewed map[*Tensor]bool
	// decompose makes composites with Whole decompose too.
	decompose bool
	// body marks a trace of control flow's function (BodyTrace);
	// capture one that stages what it captures (CaptureTrace).
	body, capture bool
	// data is the level's data (LevelData).
	data any
	// sources, when set, receives the tensors the graph's constants were
	// lifted from (RecordConstSources); liftedFrom records them by var
	// (a tensor lifted again after a change has several).
	sources    *[]ConstSource
	liftedFrom map[*Var]*Tensor
	// inputs are the tensors the graph's inputs stand for (InputTensors):
	// lifting one of them (by its storage and layout) gives its input.
	inputs []*Tensor
	// inputLifts records each such lift (InputTensors).
	inputLifts *[]InputLift
	// written, when set, receives the tensors from before the trace
	// that eval wrote while it ran (WatchWrites); start is the epoch the
	// trace started at.
	written *[]*Tensor
	start   uint64
	// derived are the tensors from before the trace that lifted
	// constants were computed from eagerly (provenance.go); underived
	// says a lifted constant's provenance is unknown.
	derived   []*Tensor
	underived bool
	// sites: record each equation's Site (RecordSites).
	sites bool
}

// constRec is a lifted constant: its var, and the content it was lifted
// from (content version and storage block), so a tensor whose content
// changed since is lifted again.
type constRec struct {
	v       *Var
	version uint64
	blk     *block
}

// TraceOption configures Trace and TraceAvals.
type TraceOption func(*stager)

// RecordSites makes the trace record, on each equation, the user-level
// op and the line of the user's code that made it (Eqn.Site), for
// renderings (Graph.DOT, compiler.Program.DOT). It costs a stack walk
// per equation, so only traces made to be looked at ask for it.
func RecordSites() TraceOption { return func(s *stager) { s.sites = true } }

// DecomposeOps makes the trace decompose every composite, including those
// marked Whole (user-defined ops), so the graph holds only primitives
// with kernels. (transforms.Decompose is the user-facing form.)
func DecomposeOps() TraceOption { return func(s *stager) { s.decompose = true } }

// LevelData attaches v to the trace's level (Level.WithData).
func LevelData(v any) TraceOption { return func(s *stager) { s.data = v } }

// RecordConstSources makes the trace report, in *dst, where each constant
// of the returned graph came from (aligned with Graph.Consts), so that a
// cache of traced graphs can tell when a captured tensor has changed
// since (ConstSource.Changed).
func RecordConstSources(dst *[]ConstSource) TraceOption {
	return func(s *stager) { s.sources = dst }
}

// InputTensors tells the trace which tensors its inputs stand for (a
// compiled function's arguments): a tensor f captures that has the
// storage and layout of one of them is that input, not a constant, so
// the graph reads the argument's value of each call (a function that
// writes its argument and reads the same tensor captured sees the
// write). *lifts receives each such use, for the cache to check that
// the captured tensor is still passed at that position. ts is aligned
// with the graph's inputs; nil entries stand for nothing.
func InputTensors(ts []*Tensor, lifts *[]InputLift) TraceOption {
	return func(s *stager) { s.inputs, s.inputLifts = ts, lifts }
}

// WatchWrites makes the trace report, in *dst, the tensors it read
// (lifted) that existed before it started and that eval wrote in place
// while it ran: writes of values that depend on no traced value, which
// the function makes eagerly while it is traced, so the graph does not
// hold them (a compiled function must make them on every call). Each is
// reported once, as its base. A tensor written by another goroutine
// while the trace runs is reported too.
func WatchWrites(dst *[]*Tensor) TraceOption { return func(s *stager) { s.written = dst } }

// noteWritten reports concrete t (WatchWrites) when eval wrote its
// memory since the trace started and its base is older than the trace.
func (s *stager) noteWritten(t *Tensor) {
	if s.written == nil || t.tr != nil || t.st == nil || t.st.written <= s.start {
		return
	}
	b := BaseOf(t)
	if b.tr != nil || b.st != t.st || b.born >= s.start {
		return
	}
	s.reportWritten(b)
}

// reportWritten adds base b to the tensors from before the trace that
// eval wrote while it ran (WatchWrites), once.
func (s *stager) reportWritten(b *Tensor) {
	for _, w := range *s.written {
		if w == b {
			return
		}
	}
	*s.written = append(*s.written, b)
}

// noteNestedConst tells the traces of the calling goroutine that record
// their constants' sources (a compiled function being traced) and
// enclose trace s (a body of control flow, a ShardMap's device program,
// traced inside the compiled function) that s holds concrete t as a
// constant: the enclosing graph holds s's graph, so a later write into t
// (or into what t was computed from) must make it trace again, as a
// constant of its own would. Without this, a compiled function whose
// Scan body captured a tensor ran with the body's stale copy after the
// tensor was written in place.
func noteNestedConst(s *stager, t *Tensor) {
	for _, sc := range scopes() {
		w := sc.watch
		if w == nil || w == s || w.sources == nil || w.level.id >= s.level.id {
			continue
		}
		if b := BaseOf(t); b.born < w.start && b.tr == nil {
			// Captured from outside the compiled function (a view of
			// such a tensor: its base).
			if !containsTensor(w.derived, b) {
				w.derived = append(w.derived, b)
			}
			continue
		}
		if memFrom(t) != nil {
			from, unknown := derivedFrom(t, w.start)
			w.underived = w.underived || unknown
			for _, u := range from {
				if !containsTensor(w.derived, u) {
					w.derived = append(w.derived, u)
				}
			}
		}
	}
}

// InputLift is a captured tensor a trace read as its input Input
// (InputTensors).
type InputLift struct {
	Tensor *Tensor
	Input  int
}

// SameMemory reports whether a and b are concrete tensors over the same
// storage with the same layout (one box, or boxes given the same
// content).
func SameMemory(a, b *Tensor) bool {
	return a != nil && b != nil && a.tr == nil && b.tr == nil && a.st == b.st &&
		a.offset == b.offset && ShapeEqual(a.shape, b.shape) && slices.Equal(a.strides, b.strides)
}

// ConstSource is the tensor a graph constant was lifted from, and its
// content when it was.
type ConstSource struct {
	t       *Tensor
	version uint64
	blk     *block
	// gen is the base's count of writes, for a derived source: the
	// graph holds no snapshot of its memory, so a write into it makes
	// no copy to tell it by.
	gen     uint64
	derived bool
}

// Derived reports whether the graph holds no constant of the tensor
// itself but values computed from it eagerly while it was traced (see
// provenance.go); Tensor is nil when those values came from too many
// tensors to record, and Changed is then always true.
func (c ConstSource) Derived() bool { return c.derived }

// Tensor returns the tensor the constant was lifted from.
func (c ConstSource) Tensor() *Tensor { return c.t }

// Changed reports whether the tensor's content may differ from the
// constant's: it was written in place or rebound since, or it is a
// tracer (a value of a transform level, meaningful only while that level
// lives).
func (c ConstSource) Changed() bool {
	if c.t == nil || c.t.tr != nil {
		return true
	}
	return c.t.version != c.version || c.t.st.cur != c.blk || (c.derived && BaseOf(c.t).gen != c.gen)
}

// stageTracer is the payload of a tensor being staged: the graph var that
// holds its value.
type stageTracer struct {
	s *stager
	v *Var
}

func (t *stageTracer) Level() *Level { return t.s.level }

// IsStaged reports whether t is a value being recorded by a staging level
// (Trace), whose graph would record an in-place write as an equation.
func IsStaged(t *Tensor) bool {
	_, ok := t.tr.(*stageTracer)
	return ok
}

// stagedEqn is an equation of at most four operands and results and
// their vars' list, allocated together by the staging interpreter.
type stagedEqn struct {
	e    Eqn
	vars [4]*Var
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
// A constant is recorded by value: the graph keeps a snapshot of t
// (Snapshot), so neither a later Rebind of t (an interpreter's
// out-of-place mutation) nor a later in-place write into t's memory at
// eval level changes the graph. The snapshot shares t's buffer
// copy-on-write, so lifting copies nothing and touches nothing of t but
// its block's reference count. A tensor whose content changed since it
// was lifted is lifted again.
func (s *stager) varOf(t *Tensor) *Var {
	if st, ok := t.tr.(*stageTracer); ok && st.s == s {
		return st.v
	}
	var blk *block
	if t.tr == nil {
		blk = t.st.cur
	}
	if c, ok := s.consts[t]; ok && c.version == t.version && c.blk == blk {
		return c.v
	}
	if t.tr == nil {
		s.noteWritten(t)
		if s.written != nil && s.sources != nil && memFrom(t) != nil {
			from, unknown := derivedFrom(t, s.start)
			s.underived = s.underived || unknown
			for _, u := range from {
				if !containsTensor(s.derived, u) {
					s.derived = append(s.derived, u)
				}
			}
		}
		for k, in := range s.inputs {
			if SameMemory(t, in) {
				*s.inputLifts = append(*s.inputLifts, InputLift{Tensor: t, Input: k})
				return s.g.In[k]
			}
		}
	}
	v := s.newVar(AvalOf(t))
	s.consts[t] = constRec{v: v, version: t.version, blk: blk}
	if s.sources != nil {
		s.liftedFrom[v] = t
	}
	if t.tr == nil && watching.Load() != 0 {
		noteNestedConst(s, t)
	}
	s.g.Consts = append(s.g.Consts, v)
	s.g.ConstVals = append(s.g.ConstVals, Snapshot(t))
	return v
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
	var vars []*Var
	var e *Eqn
	if n := len(args) + len(outs); n <= len(stagedEqn{}.vars) {
		// The equation and its var lists in one allocation.
		se := &stagedEqn{}
		vars, e = se.vars[:n:n], &se.e
	} else {
		vars, e = make([]*Var, n), &Eqn{}
	}
	*e = Eqn{Prim: p, Params: params, In: vars[:len(args):len(args)], Out: vars[len(args):]}
	for i, a := range args {
		e.In[i] = s.varOf(a)
	}
	var res []*Tensor
	if len(outs) == 1 {
		// One allocation for the var, the tracer, the box and the result.
		o := &stagedOne{v: Var{ID: s.nextID, Aval: outs[0]}}
		s.nextID++
		o.st = stageTracer{s: s, v: &o.v}
		o.t = Tensor{shape: shapeOf(outs[0].Shape), dtype: outs[0].DType, tr: &o.st, born: born()}
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
	if s.sites {
		e.Site = callerSite()
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
// unless opts include DecomposeOps.
func Trace(f func(args []*Tensor) []*Tensor, example []*Tensor, opts ...TraceOption) *Graph {
	avals := make([]Aval, len(example))
	for i, x := range example {
		if x == nil {
			panic(&Error{Ops: []string{"interp.Trace"}, Msg: "example argument " + itoa(i) + " is nil"})
		}
		avals[i] = AvalOf(x)
	}
	return TraceAvals("trace", f, avals, opts...)
}

// TraceAvals is Trace for arguments given by shape and dtype; name is the
// transform named in errors raised at the staging level.
func TraceAvals(name string, f func(args []*Tensor) []*Tensor, avals []Aval, opts ...TraceOption) *Graph {
	s := &stager{g: &Graph{}, consts: map[*Tensor]constRec{}, viewed: map[*Tensor]bool{}}
	for _, o := range opts {
		o(s)
	}
	if s.sources != nil {
		s.liftedFrom = map[*Var]*Tensor{}
	}
	if s.written != nil {
		s.start = epoch.Add(1)
		if watching.Add(1) == 1 {
			watchFloor.Store(s.start)
		}
		defer watching.Add(-1)
	}
	s.level = NewLevel(name, s).WithData(s.data)
	defer s.level.End()
	if s.written != nil {
		defer beginWatch(s)()
	}
	if s.body {
		defer beginBody(s.level, s.capture)()
	}
	in := make([]*Tensor, len(avals))
	for i, a := range avals {
		v := s.newVar(a)
		s.g.In = append(s.g.In, v)
		in[i] = s.tracer(v)
	}
	outs := func() []*Tensor {
		defer AnnotateLevel(s.level)
		return f(in)
	}()
	for _, o := range outs {
		if o == nil {
			panic(&Error{Ops: []string{"interp.Trace"}, Msg: "traced function returned a nil tensor"})
		}
		s.g.Out = append(s.g.Out, s.varOf(o))
	}
	if s.written != nil {
		// A tensor written after it was read.
		for _, t := range s.liftedFrom {
			s.noteWritten(t)
		}
	}
	g := s.g.DCE()
	if s.sources != nil {
		// The sources' content as the trace ends: a tensor written while
		// it was traced (a buffer an interpreter accumulates into after
		// lifting it) is, from now on, unchanged unless written again.
		src := make([]ConstSource, len(g.Consts))
		for i, v := range g.Consts {
			t := s.liftedFrom[v]
			var blk *block
			if t.tr == nil {
				blk = t.st.cur
			}
			src[i] = ConstSource{t: t, version: t.version, blk: blk}
		}
		// The tensors constants were computed from eagerly, and the
		// constants of unknown provenance: a change of any of them
		// changes what the graph should compute.
		for _, t := range s.derived {
			var blk *block
			if t.st != nil {
				blk = t.st.cur
			}
			src = append(src, ConstSource{t: t, version: t.version, blk: blk, gen: BaseOf(t).gen, derived: true})
		}
		if s.underived {
			src = append(src, ConstSource{derived: true})
		}
		*s.sources = src
	}
	return g
}

// callerSite returns the site of the equation being staged: the first
// frame of the user's code on the stack (userFrame), and the last
// function of peel's module called before it (the user-level op), or
// nil when the stack holds no user frame.
func callerSite() *Site {
	var pcs [64]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	op := ""
	for {
		f, more := frames.Next()
		if userFrame(f) {
			if op == "" {
				return nil
			}
			s := &Site{Op: op, File: f.File, Line: f.Line, Func: f.Function}
			for more {
				if f, more = frames.Next(); !userFrame(f) {
					break
				}
				s.Func = f.Function
			}
			return s
		}
		if pkg := funcPackage(f.Function); pkg == modulePath || strings.HasPrefix(pkg, modulePath+"/") {
			op = shortFuncName(f.Function)
		}
		if !more {
			return nil
		}
	}
}

// shortFuncName is a function's name as a user writes it: without the
// module's path, type parameters and closure suffixes
// ("github.com/peel-ml/peel/transforms.Grad[...].func1" is
// "transforms.Grad", a method "optim.(*transformation[...]).Update" is
// "optim.transformation.Update", a Tensor method "Tensor.Tanh").
func shortFuncName(fn string) string {
	fn = strings.TrimPrefix(fn, modulePath+"/")
	fn = strings.TrimPrefix(fn, "github.com/peel-ml/")
	fn = strings.NewReplacer("[...]", "", "(*", "", ")", "", "interp.Tensor.", "Tensor.").Replace(fn)
	if i := strings.Index(fn, ".func"); i >= 0 {
		fn = fn[:i]
	}
	return fn
}
