package transforms

import (
	"reflect"
	"sync/atomic"

	"github.com/peel-ml/peel/internal/treeimpl"
)

// Inspector looks into one compiled function: pass Inspect(&ins) to
// Compile (or Compile2 …), then read ins.Stats() and ins.Explain(args…).
// The zero Inspector is attached to nothing; its methods panic with
// *peel.Error until an Inspect option has attached it.
type Inspector struct {
	state atomic.Pointer[inspected]
}

type inspected struct {
	op      string
	impl    any // the compiled function (for the package's tests)
	stats   func() CompileStats
	explain func(args []any) string
	dot     func(args []any) string
}

// Inspect attaches ins to the compiled function it is an option of. It
// panics with *peel.Error when ins is nil, or when that Compile finds it
// attached to another compiled function already.
func Inspect(ins *Inspector) CompileOption {
	if ins == nil {
		treeErrorf("transforms.Inspect", "the Inspector is nil")
	}
	return compileOpt(func(c *compileConfig) { c.inspect = ins })
}

func (ins *Inspector) attach(op string, impl any, stats func() CompileStats, explain, dot func([]any) string) {
	if !ins.state.CompareAndSwap(nil, &inspected{op, impl, stats, explain, dot}) {
		treeErrorf(op, "the Inspector is attached to another compiled function (%s) already: use one Inspector per Compile", ins.state.Load().op)
	}
}

func (ins *Inspector) get(what string) *inspected {
	st := ins.state.Load()
	if st == nil {
		treeErrorf("transforms.Inspector."+what, "the Inspector is attached to no compiled function: pass Inspect(&ins) to Compile")
	}
	return st
}

// Stats returns the compiled function's cache statistics so far. It
// panics with *peel.Error when ins is attached to nothing.
func (ins *Inspector) Stats() CompileStats { return ins.get("Stats").stats() }

// Explain returns, for the signature of the positional arguments args
// (one per argument of the compiled function), the traced graph, the
// graph after each optimization pass that changed it, and the program
// that runs it (MakeGraph's notation): what was simplified, fused and
// how memory is reused. It traces anew and does not touch the cache. For
// a function with graph breaks it runs the function once on args, in
// segments, and lists each break: the read and the line of the caller.
// It panics with *peel.Error when ins is attached to nothing, or args
// has the wrong number or types of arguments.
func (ins *Inspector) Explain(args ...any) string { return ins.get("Explain").explain(args) }

// DOT returns the program the compiled function runs for the signature
// of args in Graphviz's language, to draw with `dot -Tsvg`: the inputs,
// the kernels and the interpreter's equations as boxes, each fused group
// as a cluster of its equations, and every value as an edge labelled
// with its type and where it lives (arena buffer, output, view). It
// panics as Explain does, and with *peel.Error when the function has
// graph breaks.
func (ins *Inspector) DOT(args ...any) string { return ins.get("DOT").dot(args) }

// packArgs makes the argument (the tuple of nargs positional arguments,
// or the one argument) of a compiled function from args.
func packArgs[A any](op string, nargs int, args []any) A {
	op += " (Inspector.Explain)"
	if len(args) != nargs {
		treeErrorf(op, "%d arguments for a function of %d", len(args), nargs)
	}
	var t A
	v := reflect.ValueOf(&t).Elem()
	put := func(dst reflect.Value, i int, a any) {
		if a == nil {
			return
		}
		av := reflect.ValueOf(a)
		if !av.Type().AssignableTo(dst.Type()) {
			treeErrorf(op, "argument %d is a %s, the function takes a %s", i, treeimpl.Describe(av.Type()), treeimpl.Describe(dst.Type()))
		}
		dst.Set(av)
	}
	if nargs == 1 {
		put(v, 0, args[0])
		return t
	}
	for i, a := range args {
		put(v.Field(i), i, a)
	}
	return t
}
