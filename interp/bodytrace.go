package interp

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Body traces. Control flow (Cond's branches, Scan's and WhileLoop's
// bodies) traces a function once into a graph that runs any number of
// times (or not at all). Dispatch follows the operands' levels, so an
// in-place write whose operands are all of levels below the trace (a
// tensor the function captured, written with a constant or another
// captured tensor) is not seen by the trace: it would happen once, while
// tracing, instead of at every run of the graph. A trace made with
// BodyTrace is registered for its goroutine while f runs, and Bind
// refuses such a write (checkBodyWrite): a mutation handled below a body
// trace of the calling goroutine, into a tensor made before the trace
// began (its box's birth stamp, born, is older than the trace's epoch),
// is a *Error. A write into a tensor made inside the function is
// allowed: the function makes it afresh at every run, so running the
// write once, while tracing, is what every run would do.
//
// Go has no goroutine-local storage: the registry is keyed by the
// goroutine's id, read from runtime.Stack's header. Only Bind of a
// mutation primitive reads it, and only while some goroutine is in a
// body trace (bodyTraces > 0): an eager in-place op otherwise pays one
// atomic load, and every other primitive nothing.

var (
	// bodyTraces counts the body traces in progress, in any goroutine;
	// captureTraces those of them made with CaptureTrace.
	bodyTraces, captureTraces atomic.Int64
	// bodyScopes maps a goroutine's id to its *goScopes, which only that
	// goroutine reads and writes.
	bodyScopes sync.Map
)

// goScopes are one goroutine's body traces in progress, innermost last.
type goScopes struct{ s []*bodyScope }

// bodyScope is one body trace in progress: its level, its epoch (the
// boxes made since have born ≥ epoch) and whether it captures
// (CaptureTrace).
type bodyScope struct {
	level   *Level
	epoch   uint64
	capture bool
	// watch is set for a trace that watches eager writes (WatchWrites)
	// instead of refusing them: a write below it into a tensor from
	// before it is reported to it (its written list), so a compiled
	// program takes the tensor in and makes the write on every call,
	// also when the function never reads the tensor again.
	watch *stager
}

// EpochMark moves the epoch on and returns it: every box made from now
// on is born at or after the mark, every box made before it before
// (BornBefore).
func EpochMark() uint64 { return epoch.Add(1) }

// BornBefore reports whether t's box was made before mark (EpochMark).
func BornBefore(t *Tensor, mark uint64) bool { return t.born < mark }

// born is the birth stamp of a box made now.
func born() uint64 { return epoch.Load() }

// BodyTrace makes the trace a body of control flow (Cond's branches,
// Scan's and WhileLoop's bodies: a graph traced once and run any number
// of times): an in-place write, while f runs, into a tensor made before
// the trace and handled below it panics with *Error instead of happening
// once. Without it (the default) such a write happens once, while f is
// traced.
func BodyTrace() TraceOption { return func(s *stager) { s.body = true } }

// beginBody registers the body trace of level l for the calling
// goroutine and returns the function that ends it.
func beginBody(l *Level, capture bool) func() {
	return beginScope(&bodyScope{level: l, epoch: epoch.Add(1), capture: capture})
}

// beginWatch registers the watching trace s (WatchWrites) for the
// calling goroutine, from its start epoch, and returns the function that
// ends it.
func beginWatch(s *stager) func() {
	return beginScope(&bodyScope{level: s.level, epoch: s.start, watch: s})
}

func beginScope(sc *bodyScope) func() {
	capture := sc.capture
	g := goid()
	v, _ := bodyScopes.LoadOrStore(g, &goScopes{})
	gs := v.(*goScopes)
	gs.s = append(gs.s, sc)
	bodyTraces.Add(1)
	if capture {
		captureTraces.Add(1)
	}
	return func() {
		if capture {
			captureTraces.Add(-1)
		}
		bodyTraces.Add(-1)
		gs.s = gs.s[:len(gs.s)-1]
		if len(gs.s) == 0 {
			bodyScopes.Delete(g)
		}
	}
}

// scopes returns the calling goroutine's body traces in progress.
func scopes() []*bodyScope {
	v, ok := bodyScopes.Load(goid())
	if !ok {
		return nil
	}
	return v.(*goScopes).s
}

// CaptureTrace is BodyTrace that also stages, into this trace, every
// primitive the function applies to tensors of lower levels (values of
// enclosing transforms it captured), as JAX's tracing of a branch does:
// without it, dispatch by the operands' levels runs such a primitive
// outside the trace, once, whether the branch is taken or not (Cond's
// branches use it, so that what a branch computes from a captured tracer
// is selected, and differentiated, with the branch).
func CaptureTrace() TraceOption { return func(s *stager) { s.body, s.capture = true, true } }

// captureLevel returns the level of the innermost capturing body trace
// of the calling goroutine above top, or nil: Bind hands it the
// primitive whose highest operand level is top.
func captureLevel(top *Level) *Level {
	if st, ok := top.interp.(*stager); ok && st.capture {
		return nil // already that trace's (or an inner one's) primitive
	}
	s := scopes()
	for i := len(s) - 1; i >= 0; i-- {
		if sc := s[i]; sc.capture && sc.level.id > top.id {
			return sc.level
		}
	}
	return nil
}

// checkBodyWrite panics with *Error when mutation p, handled at level top
// (nil: eval), writes dst, a tensor made before a body trace of the
// calling goroutine that runs above top.
func checkBodyWrite(p *Prim, top *Level, dst *Tensor) {
	var hit *bodyScope
	b := BaseOf(dst)
	ss := scopes()
	for _, sc := range ss {
		if sc.watch == nil && (top == nil || sc.level.id > top.id) && b.born < sc.epoch {
			hit = sc
			break
		}
	}
	if hit == nil {
		// Watching traces the write runs below, outermost first, hear
		// of a concrete tensor from before them.
		if b.tr == nil {
			for _, sc := range ss {
				if sc.watch != nil && (top == nil || sc.level.id > top.id) && b.born < sc.epoch {
					sc.watch.reportWritten(b)
				}
			}
		}
		return
	}
	panic(&Error{Prim: p.Name, Msg: "in-place write into a tensor captured from outside a traced " + hit.level.name +
		" (a loop body, a branch, a predicate): the traced function runs many times, or not at all, but this write would happen once, while tracing; " +
		"pass the tensor in (as a carry or an operand) and return its new value, or write only tensors the function makes",
		Operands: []string{dst.TypeString()}, Transform: hit.level.name, Level: hit.level.id})
}

// goid returns the calling goroutine's id, from the header
// "goroutine N [" that runtime.Stack writes first.
func goid() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	const prefix = len("goroutine ")
	var id uint64
	for _, c := range buf[prefix:n] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
