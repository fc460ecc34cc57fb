package interp

import (
	"sync/atomic"

	"github.com/peel-ml/peel/backend"
)

var defaultBackend atomic.Pointer[backend.Backend]

// SetDefaultBackend sets the backend that constructors and operations
// without concrete operands use. backend/cpu installs itself when
// imported; users switch with peel.UseBackend, which documents what the
// switch means for existing tensors.
func SetDefaultBackend(b backend.Backend) { defaultBackend.Store(&b) }

// DefaultBackend returns the default backend. It panics with *Error if
// none is installed (import backend/cpu, or package peel, which does).
func DefaultBackend() backend.Backend {
	p := defaultBackend.Load()
	if p == nil {
		panic(Errorf("no backend installed: import github.com/peel-ml/peel/backend/cpu"))
	}
	return *p
}

// Bind applies primitive p to args. It finds the highest live level among
// the arguments and hands the call to that level's interpreter; with no
// tracer among the arguments the eval interpreter runs the backend kernel.
// Dispatch depends only on the arguments, so independent computations may
// run concurrently in different goroutines.
//
// Bind panics with *Error when an argument is nil or an escaped tracer, or
// when the primitive rejects its operands.
func Bind(p *Prim, params any, args ...*Tensor) []*Tensor {
	var top *Level
	var replayed []*Tensor
	for i, a := range args {
		if a == nil {
			panic(&Error{Prim: p.Name, Msg: "operand " + itoa(i) + " is nil"})
		}
		if a.view != nil && a.view.Base.tr != nil {
			if l := staleViewLevel(a); l != nil {
				// A view whose base a level above the view's own took
				// over (a write made the base a tracer of that level):
				// the view's content (a buffer, or a vmap level's
				// physical value) is stale, so the base's level handles
				// the operation. A level that keeps aliases coherent
				// (WriteAdopter: functionalize, autodiff) recomputes the
				// view itself; for any other (vmap, staging) the view is
				// replayed here from the base, as a value of its level.
				if _, ok := l.interp.(WriteAdopter); !ok {
					if replayed == nil {
						replayed = append([]*Tensor(nil), args...)
					}
					replayed[i] = Replay(a)
				}
				if top == nil || l.id > top.id {
					top = l
				}
			}
		}
		if a.tr != nil {
			l := a.tr.Level()
			if l.dead.Load() {
				panic(&Error{Prim: p.Name, Msg: "escaped tracer: operand " + itoa(i) + " belongs to a " + l.name + " that has already returned (a tensor computed inside a transformed function was used after the transform returned, or a tensor from outside it was written there with such a value: a tensor captured from outside Vmap that received a per-lane value)", Operands: []string{a.TypeString()}, Transform: l.name, Level: l.id})
			}
			if top == nil || l.id > top.id {
				top = l
			}
		}
	}
	if p.Kind == Mutation && bodyTraces.Load() != 0 {
		checkBodyWrite(p, top, args[0])
	}
	if top != nil && captureTraces.Load() != 0 {
		// A branch being traced stages what it computes from the
		// tracers it captured (CaptureTrace).
		if l := captureLevel(top); l != nil {
			top = l
		}
	}
	if top == nil {
		return Eval(p, params, args)
	}
	defer AnnotateLevel(top)
	if replayed != nil {
		return top.interp.Process(top, p, params, replayed)
	}
	// The interpreter may keep args; the caller's (often a variadic
	// slice on its stack) stays there on the eager path.
	return top.interp.Process(top, p, params, append([]*Tensor(nil), args...))
}

// staleViewLevel returns the live level of view a's base when it is
// above a's own level (the base was taken over by a write at that
// level), or nil.
func staleViewLevel(a *Tensor) *Level {
	l := a.view.Base.tr.Level()
	if l.dead.Load() {
		return nil
	}
	if a.tr != nil && a.tr.Level().id >= l.id {
		return nil
	}
	return l
}

// Replay returns view x recomputed from its base: x's view chain bound
// again on the base's current content, so the result is a value of the
// base's level (and records its view, interp.MarkView, where that level
// keeps views). Bind uses it for a view whose base a level that does not
// keep aliases coherent has taken over.
func Replay(x *Tensor) *Tensor {
	v := x.view
	if v == nil {
		return x
	}
	parent := v.Parent
	if parent != v.Base {
		parent = Replay(parent)
	}
	return Bind1(v.Prim, v.Params, parent)
}

// Bind1 is Bind for a primitive with one result.
func Bind1(p *Prim, params any, args ...*Tensor) *Tensor {
	return Bind(p, params, args...)[0]
}

// AnnotateLevel is deferred by an interpreter around code that runs at
// level l (a user's function, a rule): when that code panics with an
// *Error, it records l in the error (Error.NoteLevel) and panics again
// with it; any other panic passes through unchanged.
func AnnotateLevel(l *Level) {
	r := recover()
	if r == nil {
		return
	}
	if e, ok := r.(*Error); ok {
		e.NoteLevel(l)
	}
	panic(r)
}

// Abstract runs p's shape and dtype rule on args, filling in the failing
// primitive and the operands in the error it may panic with.
func Abstract(p *Prim, params any, args []*Tensor) []Aval {
	var buf [4]Aval
	in := buf[:0]
	for _, a := range args {
		in = append(in, Aval{a.shape, a.dtype})
	}
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(*Error); ok {
				if e.Prim == "" {
					e.Prim = p.Name
				}
				if len(e.Operands) == 0 {
					e.WithOperands(args...)
				}
			}
			panic(r)
		}
	}()
	return p.Abstract(params, in)
}

func itoa(i int) string {
	if i >= 0 && i < 10 {
		return string(rune('0' + i))
	}
	var b [20]byte
	n := len(b)
	neg := i < 0
	if neg {
		i = -i
	}
	for i > 0 || n == len(b) {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		n--
		b[n] = '-'
	}
	return string(b[n:])
}
