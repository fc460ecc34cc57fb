package compiler

import (
	"math"
	"reflect"
	"strconv"

	"github.com/peel-ml/peel/interp"
)

// A Pass rewrites a graph into an equivalent one: same inputs, outputs
// and results. Run must not modify its argument (graphs are immutable);
// it returns the graph itself when there is nothing to rewrite.
type Pass struct {
	Name string
	Run  func(*interp.Graph) *interp.Graph
}

// Stage is one pass's result in an Optimize run, for printing the graph
// after each pass (the graph before the first pass is Optimize's
// argument).
type Stage struct {
	Pass  string
	Graph *interp.Graph
}

// DefaultPasses returns the passes transforms.Compile gives Optimize, in
// order: SplatConstants, Simplify, ExpandRowOps, FoldTransposeIntoDot, FoldConstants,
// CSE and DCE (Optimize itself runs only the passes it is given). Fused
// user-defined ops are recovered only when asked for (ReplaceComposites,
// which names the ops), and should run before the others, on the graph
// as traced.
func DefaultPasses() []Pass {
	return []Pass{
		{Name: "splat-constants", Run: SplatConstants},
		{Name: "simplify", Run: Simplify},
		{Name: "expand-row-ops", Run: ExpandRowOps},
		{Name: "fold-transpose-into-dot", Run: FoldTransposeIntoDot},
		{Name: "fold-constants", Run: FoldConstants},
		{Name: "cse", Run: CSE},
		{Name: "dce", Run: DCE},
	}
}

// Optimize runs passes over g in order and returns the result; it has no
// default passes (see DefaultPasses), so with none it returns g itself.
// With record set it also returns each pass's result, in order, for
// printing (Graph.String before and after each pass); without it the
// stages are nil. Optimize panics with
// *interp.Error when g is nil, a pass has no Run function, or a pass
// returns nil or a graph whose inputs or outputs differ in number or
// type from its argument's.
func Optimize(g *interp.Graph, passes []Pass, record bool) (*interp.Graph, []Stage) {
	if g == nil {
		panic(&interp.Error{Ops: []string{"compiler.Optimize"}, Msg: "nil graph"})
	}
	var stages []Stage
	for i, p := range passes {
		if p.Run == nil {
			panic(&interp.Error{Ops: []string{"compiler.Optimize"}, Msg: "pass " + strconv.Itoa(i) + " (" + strconv.Quote(p.Name) + ") has no Run function"})
		}
		ng := p.Run(g)
		if msg := sameSignature(g, ng); msg != "" {
			panic(&interp.Error{Ops: []string{"compiler.Optimize"}, Msg: "pass " + strconv.Quote(p.Name) + " " + msg})
		}
		g = ng
		if record {
			stages = append(stages, Stage{Pass: p.Name, Graph: g})
		}
	}
	return g, stages
}

// sameSignature says how ng's inputs or outputs differ from g's, or "".
func sameSignature(g, ng *interp.Graph) string {
	if ng == nil {
		return "returned a nil graph"
	}
	if len(ng.In) != len(g.In) || len(ng.Out) != len(g.Out) {
		return "changed the number of inputs or outputs"
	}
	for i, v := range g.In {
		if !ng.In[i].Aval.Equal(v.Aval) {
			return "changed the type of input " + strconv.Itoa(i)
		}
	}
	for i, v := range g.Out {
		if !ng.Out[i].Aval.Equal(v.Aval) {
			return "changed the type of output " + strconv.Itoa(i)
		}
	}
	return ""
}

// DCE removes equations whose results are never used and constants that
// are never read (Graph.DCE); mutation equations are kept.
func DCE(g *interp.Graph) *interp.Graph { return g.DCE() }

// mutated returns the destinations of g's mutation equations and their
// results: values whose memory is written in place. Passes leave the
// equations that read or define them alone, since moving, merging or
// aliasing such a read could make it see a write it did not see before.
func mutated(g *interp.Graph) map[*interp.Var]bool {
	var m map[*interp.Var]bool
	for _, e := range g.Eqns {
		if e.Prim.Kind != interp.Mutation {
			continue
		}
		if m == nil {
			m = map[*interp.Var]bool{}
		}
		m[e.In[0]] = true
		for _, v := range e.Out {
			m[v] = true
		}
	}
	return m
}

// touches reports whether e reads or defines a var of m.
func touches(e *interp.Eqn, m map[*interp.Var]bool) bool {
	if m == nil {
		return false
	}
	for _, v := range e.In {
		if m[v] {
			return true
		}
	}
	for _, v := range e.Out {
		if m[v] {
			return true
		}
	}
	return false
}

// substitute returns vs with each var replaced by its entry in sub, and
// whether anything changed; vs itself is never modified.
func substitute(vs []*interp.Var, sub map[*interp.Var]*interp.Var) ([]*interp.Var, bool) {
	var out []*interp.Var
	for i, v := range vs {
		w, ok := sub[v]
		if !ok {
			continue
		}
		if out == nil {
			out = append([]*interp.Var(nil), vs...)
		}
		out[i] = w
	}
	if out == nil {
		return vs, false
	}
	return out, true
}

// resolve follows sub from v to the var that finally holds its value.
func resolve(v *interp.Var, sub map[*interp.Var]*interp.Var) *interp.Var {
	for {
		w, ok := sub[v]
		if !ok {
			return v
		}
		v = w
	}
}

// paramsEqual reports whether two primitives' parameters are equal:
// same type and equal values, where nil and empty slices are equal,
// floats are compared by bits (so 0 and -0 differ, and NaN equals the
// same NaN), and pointers, maps, channels and functions are equal only
// when they are the same (a function only when both are nil).
func paramsEqual(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return valueEqual(reflect.ValueOf(a), reflect.ValueOf(b))
}

func valueEqual(a, b reflect.Value) bool {
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.Complex64, reflect.Complex128:
		x, y := a.Complex(), b.Complex()
		return math.Float64bits(real(x)) == math.Float64bits(real(y)) && math.Float64bits(imag(x)) == math.Float64bits(imag(y))
	case reflect.String:
		return a.String() == b.String()
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !valueEqual(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if !valueEqual(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() && b.IsNil()
		}
		return valueEqual(a.Elem(), b.Elem())
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.UnsafePointer:
		return a.Pointer() == b.Pointer()
	case reflect.Func:
		return a.IsNil() && b.IsNil()
	}
	return false
}
