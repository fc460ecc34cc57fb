package interp

import "sync/atomic"

// Interpreter processes primitives applied to tracers of its level.
//
// Process is called by Bind when l is the highest live level among args.
// It unwraps its own tracers, applies its rule for p (which calls Bind
// again on values of lower levels) and wraps the results as tracers of l.
// Operands of lower levels are lifted: treated as constants at l.
// For a mutation primitive, Process must make the mutation visible through
// the destination box args[0] (by writing below, or by Rebind) and return
// args[0].
type Interpreter interface {
	Process(l *Level, p *Prim, params any, args []*Tensor) []*Tensor
}

var levelCounter atomic.Uint64

// Level is one live invocation of a transform. Levels created later have
// higher IDs, so a transform entered inside another's function is higher.
// A tracer whose level has ended is escaped, and using it panics.
type Level struct {
	id     uint64
	name   string
	interp Interpreter
	dead   atomic.Bool
	data   any
	// axes is the axis names the level binds (BindAxes).
	axes atomic.Pointer[[]AxisFrame]
}

// NewLevel starts a level of the named transform run by in. The caller
// must call End when the transform's function returns.
func NewLevel(name string, in Interpreter) *Level {
	return &Level{id: levelCounter.Add(1), name: name, interp: in}
}

// ID returns the level's ID; higher is more deeply nested.
func (l *Level) ID() uint64 { return l.id }

// Name returns the transform's name, such as "trace" or "vmap".
func (l *Level) Name() string { return l.name }

// Interpreter returns the level's interpreter.
func (l *Level) Interpreter() Interpreter { return l.interp }

// WithData attaches v to the level, for transforms running inside it to
// find with FindLevelData (a compiled function's defaults for the
// gradients traced in it), and returns l. It must be called before the
// level has tracers.
func (l *Level) WithData(v any) *Level { l.data = v; return l }

// End marks the level as finished: its tracers are escaped from now on.
func (l *Level) End() { l.dead.Store(true) }

// Alive reports whether the level has not ended.
func (l *Level) Alive() bool { return !l.dead.Load() }

// WriteAdopter is implemented by interpreters whose levels accept an
// in-place write of one of their values into a box of a lower level: the
// box is adopted (it holds a tracer of the level while the level lives)
// and gets its final value, one of the lower level, when the level ends
// (the autodiff interpreters give it its final primal). Interpreters
// that write back a mutation made above them (functionalize) bind the
// write for such levels and rebind the box otherwise.
type WriteAdopter interface {
	AdoptsWrites()
}

// AdoptsWrites reports whether t is a tracer of a live level whose
// interpreter is a WriteAdopter.
func AdoptsWrites(t *Tensor) bool {
	if t.tr == nil {
		return false
	}
	l := t.tr.Level()
	_, ok := l.interp.(WriteAdopter)
	return ok && l.Alive()
}

// placeholderLevel is the level of every placeholder: it never ends, and
// its interpreter refuses every primitive, so a placeholder can never
// reach a kernel.
var placeholderLevel = NewLevel("placeholder", placeholderInterp{})

type placeholderInterp struct{}

func (placeholderInterp) Process(l *Level, p *Prim, params any, args []*Tensor) []*Tensor {
	var ops []string
	for _, a := range args {
		ops = append(ops, a.TypeString())
	}
	panic(&Error{Prim: p.Name, Msg: "an operand is a placeholder, which has a shape and dtype but no value (a transpose rule used the value of its linear operand)", Operands: ops})
}

type placeholderTracer struct{}

func (placeholderTracer) Level() *Level { return placeholderLevel }

// Placeholder returns a tensor known only by its shape and dtype, which
// stands for an operand whose value does not exist (a linear operand
// handed to a transpose rule). It is not concrete; binding a primitive
// on it panics with *Error, and so does reading its value.
func Placeholder(a Aval) *Tensor { return NewTracer(a, placeholderTracer{}) }

// IsPlaceholder reports whether t was made by Placeholder.
func IsPlaceholder(t *Tensor) bool {
	_, ok := t.tr.(placeholderTracer)
	return ok
}
