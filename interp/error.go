package interp

import (
	"fmt"
	"strings"
)

// Error is the error every misuse of peel panics with: a bad shape, axis,
// dtype or index, a tracer used after its transform returned, or an
// operation an interpreter cannot perform. Its message names the
// user-level op (and the chain of ops being decomposed, outermost first),
// the primitive that failed, the operands' shapes and dtypes, and the
// transform and level it happened under.
type Error struct {
	// Ops is the chain of user-level ops, innermost first, such as
	// ["peel.Add"]; empty when a primitive was bound directly.
	Ops []string
	// Prim is the primitive that failed, if any.
	Prim string
	// Operands describes the operands, such as "f64[2,3]".
	Operands []string
	// Transform and Level name the interpreter level the failure happened
	// under; Transform is empty for eager evaluation.
	Transform string
	Level     uint64
	// Msg says what was wrong.
	Msg string
	// Decomposing is the chain of composite ops (user-defined ops made
	// with customop.Define) being decomposed when the failure happened,
	// innermost first; the failing primitive came from their
	// definitions, possibly long after the user's call returned (in a
	// backward pass, under vmap).
	Decomposing []string
	// Within is the chain of transforms the failure happened under,
	// innermost first ("grad", "vmap" for an error in the function of
	// Vmap(Grad(f))), whichever level raised it; a transform made of
	// several levels is named once.
	Within []string
	// within holds the levels of Within, innermost (highest ID) first.
	within []*Level
}

// NoteLevel records that the failure happened under level l: the first
// level noted is the one it failed at (Transform and Level, when not
// set yet), and every level noted joins the chain of enclosing
// transforms (Within), kept innermost first. Interpreters call it as
// the panic leaves a level (Bind does for the level it dispatched to).
func (e *Error) NoteLevel(l *Level) {
	if e.Transform == "" {
		e.Transform, e.Level = l.name, l.id
	}
	i := 0
	for ; i < len(e.within); i++ {
		if e.within[i] == l {
			return
		}
		if e.within[i].id < l.id {
			break
		}
	}
	e.within = append(e.within, nil)
	copy(e.within[i+1:], e.within[i:])
	e.within[i] = l
	e.Within = e.Within[:0]
	for _, w := range e.within {
		// A transform of two levels (grad: staging and forward mode) is
		// named once.
		e.Within = pushName(e.Within, w.name)
	}
}

// ForgetLevels clears the transform and the chain of enclosing
// transforms (for an error raised under a level internal to an op,
// reported as the op's own).
func (e *Error) ForgetLevels() {
	e.Transform, e.Level, e.Within, e.within = "", 0, nil, nil
}

// Error formats the message: "peel.MatMul: dot_general: contracting
// dimensions differ (f64[2,3], f64[4,5]) [trace, level 3]", with the
// transforms enclosing that level ("[grad, level 4, inside vmap]"), or
// the whole chain when the failing level is not the innermost ("[vmap,
// level 2, under grad inside vmap]"), followed by "while decomposing mylib.op" when the
// failing primitive came from the definition of a composite op.
func (e *Error) Error() string {
	var b strings.Builder
	for i := len(e.Ops) - 1; i >= 0; i-- {
		b.WriteString(e.Ops[i])
		if i > 0 {
			b.WriteString(" > ")
		}
	}
	if len(e.Ops) > 0 {
		b.WriteString(": ")
	}
	if e.Prim != "" && (len(e.Ops) == 0 || e.Ops[0] != e.Prim) { // a user-defined op is its primitive
		b.WriteString(e.Prim)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if len(e.Operands) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(e.Operands, ", "))
		b.WriteString(")")
	}
	if e.Transform != "" {
		fmt.Fprintf(&b, " [%s, level %d", e.Transform, e.Level)
		switch chain := e.Within; {
		case len(chain) > 0 && chain[0] == e.Transform:
			for _, w := range chain[1:] {
				b.WriteString(", inside ")
				b.WriteString(w)
			}
		case len(chain) > 0:
			b.WriteString(", under ")
			b.WriteString(strings.Join(chain, " inside "))
		}
		b.WriteByte(']')
	}
	if len(e.Decomposing) > 0 {
		b.WriteString(" while decomposing ")
		for i := len(e.Decomposing) - 1; i >= 0; i-- {
			b.WriteString(e.Decomposing[i])
			if i > 0 {
				b.WriteString(" > ")
			}
		}
	}
	return b.String()
}

// Errorf returns an *Error with a formatted message.
func Errorf(format string, args ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// Panicf panics with an *Error with a formatted message.
func Panicf(format string, args ...any) {
	panic(Errorf(format, args...))
}

// WithOperands records the operands' shapes and dtypes in e and returns e.
func (e *Error) WithOperands(ts ...*Tensor) *Error {
	e.Operands = e.Operands[:0]
	for _, t := range ts {
		e.Operands = append(e.Operands, t.TypeString())
	}
	return e
}

// Annotate is deferred by every user-level op: when the op panics with an
// *Error, it appends name to the error's op chain and re-panics. Any other
// panic value is left alone.
//
//	func Add(x, y any) *Tensor {
//		defer interp.Annotate("peel.Add")
//		...
//	}
func Annotate(name string) {
	if r := recover(); r != nil {
		if e, ok := r.(*Error); ok {
			e.Ops = pushName(e.Ops, name)
		}
		panic(r)
	}
}

// Decomposing is deferred by the decomposition of a composite op: when
// it panics with an *Error, name is added to the error's chain of ops
// being decomposed (outermost last) and the panic continues.
func Decomposing(name string) {
	if r := recover(); r != nil {
		if e, ok := r.(*Error); ok {
			e.Decomposing = pushName(e.Decomposing, name)
		}
		panic(r)
	}
}

// pushName appends name to an innermost-first chain unless it is already
// the last entry (an op that calls itself through a helper is named once).
func pushName(chain []string, name string) []string {
	if len(chain) > 0 && chain[len(chain)-1] == name {
		return chain
	}
	return append(chain, name)
}

// Catch runs f and returns the *Error it panicked with, or nil. A panic
// with any other value propagates.
func Catch(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(*Error); ok {
				err = e
				return
			}
			panic(r)
		}
	}()
	f()
	return nil
}
