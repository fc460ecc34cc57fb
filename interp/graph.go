package interp

import (
	"path/filepath"
	"strconv"
	"strings"
)

// Var is a value in a Graph: an input, a constant, or the result of an
// equation. Each Var is assigned exactly once.
type Var struct {
	// ID is unique within the graph and orders vars by creation.
	ID   int
	Aval Aval
}

// Eqn is one primitive application in a Graph.
type Eqn struct {
	Prim   *Prim
	Params any
	In     []*Var
	Out    []*Var
	// Site is where the user's code made the equation, when the trace
	// recorded it (RecordSites); passes that keep an equation's meaning
	// keep its site.
	Site *Site
}

// Site is where an equation came from: the user-level op, the outermost
// of peel's functions that the user's code called ("nn.Linear",
// "peel.MatMul", "transforms.Grad"), and the user's file and line.
type Site struct {
	Op   string
	File string
	Line int
	// Func is the function a transform was given: the outermost of the
	// user's functions on the stack above the first one of peel's
	// ("main.predict" for predict under Vmap, where the op is in a helper
	// predict calls).
	Func string
}

// String formats s as "nn.Linear main.go:150".
func (s *Site) String() string {
	if s == nil {
		return ""
	}
	return s.Op + " " + filepath.Base(s.File) + ":" + strconv.Itoa(s.Line)
}

// Graph is a small SSA program: inputs, constants, equations and outputs.
// It is what the staging interpreter records, and what linearization,
// compilation and compiled backward passes work on. A Graph is immutable
// once built; methods that transform it return a new one. Its constants
// are snapshots (Snapshot): in-place writes into the tensors they
// were traced from, made after tracing, do not change the graph.
type Graph struct {
	In     []*Var
	Consts []*Var
	// ConstVals holds the value of each constant (tensors of lower levels
	// met while tracing, lifted to constants).
	ConstVals []*Tensor
	Eqns      []*Eqn
	Out       []*Var
	// released is set by ReleaseConstants.
	released bool
}

// ReleaseConstants gives up the graph's hold on its constants' memory
// (see Snapshot), so that a later in-place write into a tensor it
// captured copies nothing. Transforms call it on graphs they built and
// no longer need (the linear graph of a gradient, once transposed).
// Afterwards the graph must not be used: Eval panics with *Error.
func (g *Graph) ReleaseConstants() {
	g.released = true
	for _, c := range g.ConstVals {
		c.release()
	}
}

// Eval runs the graph on args by binding each equation's primitive in
// order. Because it uses Bind, evaluating a graph under a transform
// transforms it. It panics with *Error if the arguments' shapes or dtypes
// differ from the graph's inputs.
func (g *Graph) Eval(args ...*Tensor) []*Tensor { return g.EvalHook(nil, args...) }

// EvalHook is Eval with a hook that may answer an equation itself: it
// gets the equation's primitive, parameters and operands, and returns
// the results and true, or false to let Bind answer (a device answers
// its collectives this way, without looking up its goroutine's axis
// bindings). A nil hook is Eval.
func (g *Graph) EvalHook(hook func(p *Prim, params any, in []*Tensor) ([]*Tensor, bool), args ...*Tensor) []*Tensor {
	if g.released {
		panic(&Error{Ops: []string{"Graph.Eval"}, Msg: "the graph's constants were released (ReleaseConstants)"})
	}
	if len(args) != len(g.In) {
		panic(&Error{Ops: []string{"Graph.Eval"}, Msg: "graph takes " + strconv.Itoa(len(g.In)) + " inputs, got " + strconv.Itoa(len(args))})
	}
	env := make(map[*Var]*Tensor, len(g.In)+len(g.Consts)+len(g.Eqns))
	for i, v := range g.In {
		a := args[i]
		if a == nil || !AvalOf(a).Equal(v.Aval) {
			panic(&Error{Ops: []string{"Graph.Eval"}, Msg: "input " + strconv.Itoa(i) + " must be " + v.Aval.String(), Operands: []string{a.TypeString()}})
		}
		env[v] = a
	}
	for i, v := range g.Consts {
		// A snapshot, so that a result aliasing a constant (the constant
		// itself, or a view of it) can be written without changing the
		// graph.
		env[v] = Snapshot(g.ConstVals[i])
	}
	in := make([]*Tensor, 0, 4)
	for _, e := range g.Eqns {
		in = in[:0]
		for _, v := range e.In {
			in = append(in, env[v])
		}
		var outs []*Tensor
		answered := false
		if hook != nil {
			outs, answered = hook(e.Prim, e.Params, in)
		}
		if !answered {
			outs = Bind(e.Prim, e.Params, in...)
		}
		for i, v := range e.Out {
			env[v] = outs[i]
		}
	}
	res := make([]*Tensor, len(g.Out))
	for i, v := range g.Out {
		res[i] = env[v]
	}
	return res
}

// Effectful is implemented by the parameters of a primitive that runs a
// graph of its own (control flow, a checkpoint, a compiled call): it
// reports whether that graph acts outside its results, which makes the
// equation do so too.
type Effectful interface{ HasEffect() bool }

// HasEffect reports whether e acts outside its results: its primitive
// is an effect (Prim.Effect), or its parameters hold a graph with one
// (Effectful). No pass folds, merges or drops such an equation.
func (e *Eqn) HasEffect() bool {
	if e.Prim.Effect {
		return true
	}
	p, ok := e.Params.(Effectful)
	return ok && p.HasEffect()
}

// HasEffect reports whether an equation of g acts outside its results
// (Eqn.HasEffect).
func (g *Graph) HasEffect() bool {
	for _, e := range g.Eqns {
		if e.HasEffect() {
			return true
		}
	}
	return false
}

// DCE returns the graph without equations whose results are never used
// and constants that are never read. Mutation equations are kept (they
// have effects on their destination), and so are those that act outside
// their results (Eqn.HasEffect).
func (g *Graph) DCE() *Graph {
	live := map[*Var]bool{}
	for _, v := range g.Out {
		live[v] = true
	}
	keep := make([]bool, len(g.Eqns))
	for i := len(g.Eqns) - 1; i >= 0; i-- {
		e := g.Eqns[i]
		used := e.Prim.Kind == Mutation || e.HasEffect()
		for _, v := range e.Out {
			used = used || live[v]
		}
		if !used {
			continue
		}
		keep[i] = true
		for _, v := range e.In {
			live[v] = true
		}
	}
	out := &Graph{In: g.In, Out: g.Out}
	for i, e := range g.Eqns {
		if keep[i] {
			out.Eqns = append(out.Eqns, e)
		}
	}
	for i, v := range g.Consts {
		if live[v] {
			out.Consts = append(out.Consts, v)
			out.ConstVals = append(out.ConstVals, g.ConstVals[i])
		}
	}
	return out
}

// IDBound returns one more than the largest ID of a var g uses, so that
// a slice of that length can be indexed by var ID (vars are numbered
// densely when traced).
func (g *Graph) IDBound() int {
	n := 0
	see := func(vs []*Var) {
		for _, v := range vs {
			n = max(n, v.ID+1)
		}
	}
	see(g.In)
	see(g.Consts)
	for _, e := range g.Eqns {
		see(e.In)
		see(e.Out)
	}
	see(g.Out)
	return n
}

// varName names the n-th var printed: a, b, …, z, ba, bb, ….
func varName(id int) string {
	var b []byte
	for {
		b = append([]byte{byte('a' + id%26)}, b...)
		id /= 26
		if id == 0 {
			break
		}
	}
	return string(b)
}

// String prints the graph one equation per line with types, like a jaxpr:
//
//	{ lambda a:f64[3] ; b:f64[2,3] .
//	  let c:f64[2,3] = broadcast_in_dim[shape=[2 3] dims=[1]] a
//	      d:f64[2,3] = add b c
//	  in (d) }
//
// Constants come before the semicolon, inputs after it; vars are named in
// the order they are printed.
func (g *Graph) String() string {
	var b strings.Builder
	names := map[*Var]string{}
	name := func(v *Var) string {
		if n, ok := names[v]; ok {
			return n
		}
		n := varName(len(names))
		names[v] = n
		return n
	}
	decl := func(vs []*Var) {
		for i, v := range vs {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(name(v))
			b.WriteByte(':')
			b.WriteString(v.Aval.String())
		}
	}
	b.WriteString("{ lambda ")
	decl(g.Consts)
	if len(g.Consts) > 0 {
		b.WriteByte(' ')
	}
	b.WriteString("; ")
	decl(g.In)
	b.WriteString(" .\n")
	for i, e := range g.Eqns {
		if i == 0 {
			b.WriteString("  let ")
		} else {
			b.WriteString("      ")
		}
		decl(e.Out)
		b.WriteString(" = ")
		b.WriteString(e.Prim.Name)
		if ps := FormatParams(e.Params); ps != "" {
			b.WriteByte('[')
			b.WriteString(ps)
			b.WriteByte(']')
		}
		for _, v := range e.In {
			b.WriteByte(' ')
			b.WriteString(name(v))
		}
		b.WriteByte('\n')
	}
	b.WriteString("  in (")
	for i, v := range g.Out {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(name(v))
	}
	b.WriteString(") }")
	return b.String()
}

// Released reports whether g's constants were released
// (ReleaseConstants), after which it must not be evaluated or compiled.
func (g *Graph) Released() bool { return g.released }
