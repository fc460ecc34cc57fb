package transforms

import (
	"runtime"
	"strconv"
	"strings"

	"github.com/peel-ml/peel/internal/lru"
	"github.com/peel-ml/peel/interp"
)

// Graph breaks. A compiled function whose trace reads a traced value (a
// Go `if` on data: Item, Float64s, …) cannot be one program. Unless
// Strict, Compile runs it instead under the lazy interpreter: f runs as
// Go code on every call, each primitive is recorded into a pending
// segment instead of running, and reading a value (interp.Materializer)
// ends the segment there. The segment is compiled, keyed by its
// structure (cached per signature, so later calls that take the same
// path trace nothing and build nothing), and run; its values become
// concrete and f goes on. What f returns ends the last segment. Each
// break's cause is the read and the first caller outside peel, kept for
// Stats and Explain. Writes in place are not supported in this mode
// (a view's write would not reach its base): they are an *Error.

// lazyInterp is the lazy interpreter of one call.
type lazyInterp struct {
	level *interp.Level
	// segments caches compiled segments by structure (the entry's).
	segments *segmentCache
	breaks   []string
	// The pending segment: equations on constants (concrete tensors
	// and values of earlier segments), the tracers of its values.
	eqns      []*interp.Eqn
	consts    []*interp.Var
	constVals []*tensor
	constOf   map[*tensor]*interp.Var
	pending   []*lazyTracer
	next      int
}

// lazyTracer is a value of the lazy interpreter: pending (v in the
// segment) or computed (val).
type lazyTracer struct {
	l   *lazyInterp
	v   *interp.Var
	val *tensor
}

func (t *lazyTracer) Level() *interp.Level { return t.l.level }

// Materialize runs the pending segment when t is in it (a graph break)
// and returns t's value.
func (t *lazyTracer) Materialize() *tensor {
	if t.val == nil && t.v != nil {
		t.l.flush(breakCause())
	}
	return t.val
}

// segmentCache holds the compiled segments of one signature of a
// compiled function with graph breaks, by structure: at most
// lru.DefaultMax.
type segmentCache = lru.Cache[string, program]

func newLazy(name string, segments *segmentCache) *lazyInterp {
	l := &lazyInterp{segments: segments, constOf: map[*tensor]*interp.Var{}}
	l.level = interp.NewLevel(name, l)
	return l
}

// wrap returns a value of the interpreter holding the concrete x.
func (l *lazyInterp) wrap(x *tensor) *tensor {
	return interp.NewTracer(interp.AvalOf(x), &lazyTracer{l: l, val: x})
}

// value returns x's concrete value, running the pending segment if x is
// in it; tensors of other levels are returned as they are.
func (l *lazyInterp) value(x *tensor) *tensor {
	if tr, ok := interp.TracerOf(x).(*lazyTracer); ok && tr.l == l {
		if tr.val == nil {
			l.run()
		}
		return tr.val
	}
	return x
}

func (l *lazyInterp) newVar(a interp.Aval) *interp.Var {
	v := &interp.Var{ID: l.next, Aval: a}
	l.next++
	return v
}

// varOf returns the segment var standing for x: a pending value's own,
// or a constant for a computed value or any other tensor.
func (l *lazyInterp) varOf(x *tensor) *interp.Var {
	if tr, ok := interp.TracerOf(x).(*lazyTracer); ok && tr.l == l {
		if tr.val == nil {
			return tr.v
		}
		x = tr.val
	}
	if v, ok := l.constOf[x]; ok {
		return v
	}
	v := l.newVar(interp.AvalOf(x))
	l.constOf[x] = v
	l.consts = append(l.consts, v)
	l.constVals = append(l.constVals, interp.Snapshot(x))
	return v
}

// Process records p applied to args in the pending segment.
func (l *lazyInterp) Process(_ *interp.Level, p *interp.Prim, params any, args []*tensor) []*tensor {
	if p.Kind == interp.Mutation {
		panic(&interp.Error{Prim: p.Name, Msg: "in-place write in a compiled function with a graph break: write the function out of place, or avoid reading traced values in it (see Compile)"})
	}
	if p.Impl != nil && !p.Whole {
		return p.Impl(params, args)
	}
	avals := interp.Abstract(p, params, args)
	e := &interp.Eqn{Prim: p, Params: params, In: make([]*interp.Var, len(args)), Out: make([]*interp.Var, len(avals))}
	for i, a := range args {
		e.In[i] = l.varOf(a)
	}
	res := make([]*tensor, len(avals))
	for i, a := range avals {
		e.Out[i] = l.newVar(a)
		tr := &lazyTracer{l: l, v: e.Out[i]}
		l.pending = append(l.pending, tr)
		res[i] = interp.NewTracer(a, tr)
	}
	l.eqns = append(l.eqns, e)
	return res
}

// flush runs the pending segment at a graph break, recording cause.
func (l *lazyInterp) flush(cause string) {
	if len(l.eqns) > 0 {
		l.breaks = append(l.breaks, cause)
		l.run()
	}
}

// run compiles (or finds) and runs the pending segment, giving its
// values to their tracers.
func (l *lazyInterp) run() {
	if len(l.eqns) == 0 {
		return
	}
	g := &interp.Graph{In: l.consts, Eqns: l.eqns}
	for _, t := range l.pending {
		g.Out = append(g.Out, t.v)
	}
	var outs []*tensor
	var b strings.Builder
	concrete := true
	for _, c := range l.constVals {
		concrete = concrete && c.IsConcrete()
	}
	if concrete && structureKey(&b, g) {
		key := b.String()
		p, ok := l.segments.Load(key)
		if !ok {
			p, _ = l.segments.LoadOrStore(key, buildProgram(optimize(g)))
		}
		outs = p.Run(l.constVals, nil)
	} else {
		outs = (&interp.Graph{Consts: l.consts, ConstVals: l.constVals, Eqns: l.eqns, Out: g.Out}).Eval()
	}
	for i, t := range l.pending {
		t.val, t.v = outs[i], nil
	}
	l.eqns, l.consts, l.constVals, l.pending = nil, nil, nil, nil
	l.constOf = map[*tensor]*interp.Var{}
	l.next = 0
}

// breakCause names the read that ended a segment and the first caller
// outside peel's own packages.
func breakCause() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	read := ""
	for {
		f, more := frames.Next()
		name := f.Function
		inPeel := strings.HasPrefix(name, "github.com/peel-ml/peel.") || strings.HasPrefix(name, "github.com/peel-ml/peel/interp.") ||
			strings.HasPrefix(name, "github.com/peel-ml/peel/transforms.")
		if inPeel && strings.HasPrefix(name, "github.com/peel-ml/peel/interp.(*Tensor).") {
			read = name[strings.LastIndex(name, ".")+1:]
		}
		if !inPeel || !more {
			where := f.File + ":" + strconv.Itoa(f.Line)
			if read == "" {
				read = "a read"
			}
			return read + " of a traced value at " + where + " (" + name + ")"
		}
	}
}

// runLazy runs fl on leaves under a lazy interpreter and returns its
// concrete results and the breaks.
func runLazy(name string, segments *segmentCache, fl func([]*tensor) []*tensor, leaves []*tensor) ([]*tensor, []string) {
	l := newLazy(name, segments)
	defer l.level.End()
	in := make([]*tensor, len(leaves))
	for i, x := range leaves {
		in[i] = l.wrap(x)
	}
	outs := fl(in)
	res := make([]*tensor, len(outs))
	for i, o := range outs {
		res[i] = l.value(o)
	}
	// A value both pending and returned was run by the first value()
	// above; results of earlier segments are concrete already.
	return res, l.breaks
}

// Opaque returns f marked opaque to Compile: inside a compiled function
// it is not traced but always runs as Go code on concrete values (a
// graph break before it), so it may read its argument's values, call
// other libraries, or do I/O; outside Compile it is f. Its result is a
// constant to the segments after it. Under other transforms (Grad,
// Vmap) its argument's values cannot be read, and it panics with
// *peel.Error as a read does. The function it returns panics as f does.
func Opaque[A, R any](f func(A) R) func(A) R {
	const op = "transforms.Opaque"
	if f == nil {
		treeErrorf(op, "f must not be nil")
	}
	return func(a A) R {
		leaves, def := flatten(op, a)
		concrete := make([]*tensor, len(leaves))
		for i, x := range leaves {
			if tr, ok := interp.TracerOf(x).(*lazyTracer); ok {
				if tr.val == nil {
					tr.l.flush("opaque function " + breakCause())
				}
				concrete[i] = tr.val
				continue
			}
			if !x.IsConcrete() {
				interp.ArrayOf(x) // a traced read: a graph break under Compile, an *Error otherwise
			}
			concrete[i] = x
		}
		return f(build[A](def, concrete))
	}
}
