package interp

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
}

// stageTracer is the payload of a tensor being staged: the graph var that
// holds its value.
type stageTracer struct {
	s *stager
	v *Var
}

func (t *stageTracer) Level() *Level { return t.s.level }

func (s *stager) newVar(a Aval) *Var {
	v := &Var{ID: s.nextID, Aval: a}
	s.nextID++
	return v
}

// varOf returns the var holding t at this level, lifting lower-level
// tensors (concrete values or tracers of enclosing transforms) to
// constants.
func (s *stager) varOf(t *Tensor) *Var {
	if st, ok := t.tr.(*stageTracer); ok && st.s == s {
		return st.v
	}
	if v, ok := s.consts[t]; ok {
		return v
	}
	v := s.newVar(t.Aval())
	s.consts[t] = v
	s.g.Consts = append(s.g.Consts, v)
	s.g.ConstVals = append(s.g.ConstVals, t)
	return v
}

func (s *stager) tracer(v *Var) *Tensor {
	return NewTracer(v.Aval, &stageTracer{s: s, v: v})
}

// Process records p applied to args and returns tracers for the results.
func (s *stager) Process(l *Level, p *Prim, params any, args []*Tensor) []*Tensor {
	outs := Abstract(p, params, args)
	if p.Kind == Mutation {
		dst := args[0]
		st, ok := dst.tr.(*stageTracer)
		if !ok || st.s != s || dst.view != nil || s.viewed[dst] {
			panic(&Error{Prim: p.Name, Msg: "in-place write into a tensor that is not a value of the traced function, or through a view, is not supported by the staging interpreter; write the function out of place or wrap it in Functionalize", Operands: []string{dst.TypeString()}})
		}
	}
	e := &Eqn{Prim: p, Params: params, In: make([]*Var, len(args)), Out: make([]*Var, len(outs))}
	for i, a := range args {
		e.In[i] = s.varOf(a)
	}
	res := make([]*Tensor, len(outs))
	for i, o := range outs {
		e.Out[i] = s.newVar(o)
		res[i] = s.tracer(e.Out[i])
	}
	s.g.Eqns = append(s.g.Eqns, e)
	switch p.Kind {
	case Mutation:
		// The destination box now holds the equation's result.
		args[0].tr = res[0].tr
		return args[:1]
	case ViewKind:
		base := BaseOf(args[0])
		res[0].view = &View{Base: base, Parent: args[0], Prim: p, Params: params, Gen: base.gen}
		s.viewed[base] = true
	}
	return res
}

// Trace runs f on tracers shaped like example and records the primitives
// it applies into a Graph, which it returns after dead-code elimination.
// f's operations are recorded, not executed; tensors f captures from
// outside become the graph's constants. Trace panics with *Error if f
// mutates a tensor it did not compute or writes through a view (wrap such
// functions in Functionalize), or reads a traced value's data.
func Trace(f func(args []*Tensor) []*Tensor, example []*Tensor) *Graph {
	s := &stager{g: &Graph{}, consts: map[*Tensor]*Var{}, viewed: map[*Tensor]bool{}}
	s.level = NewLevel("trace", s)
	defer s.level.End()
	in := make([]*Tensor, len(example))
	for i, x := range example {
		if x == nil {
			panic(&Error{Ops: []string{"interp.Trace"}, Msg: "example argument " + itoa(i) + " is nil"})
		}
		v := s.newVar(x.Aval())
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
