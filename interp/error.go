package interp

import (
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
)

// Error is the error every misuse of peel panics with: a bad shape, axis,
// dtype or index, a tracer used after its transform returned, or an
// operation an interpreter cannot perform. Its message names the
// user-level op (and the chain of ops being decomposed, outermost first),
// the primitive that failed, the operands' shapes and dtypes, the chain
// of transforms it happened under ("in vmap ∘ grad") and the user's call
// site ("at train.go:42").
type Error struct {
	// Ops is the chain of user-level ops, innermost first, such as
	// ["peel.Add"]; empty when a primitive was bound directly.
	Ops []string
	// Prim is the primitive that failed, if any.
	Prim string
	// Operands describes the operands, such as "f64[2,3]".
	Operands []string
	// Transform and Level name the interpreter level the failure happened
	// under; Transform is empty for eager evaluation. Level is the
	// level's internal ID (it grows with every transform call), for
	// debugging only: the message names transforms, never IDs.
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
	// File and Line locate the user's call that led to the failure: the
	// innermost stack frame outside peel's packages (module
	// github.com/peel-ml/peel, whose _test.go files and examples count
	// as the user's), or "" and 0 when none was on the stack. They are
	// captured when the error is built or first passes one of peel's
	// recovery points, never on the success path.
	File string
	Line int
	// within holds the levels of Within, innermost (highest ID) first.
	within []*Level
}

// modulePath is the import path of peel's module.
const modulePath = "github.com/peel-ml/peel"

// captureSite records in e the user's call site (File and Line) if it is
// not known yet and the current goroutine's stack holds a frame outside
// peel. It is called only where an error is built or recovered, where
// the panicking stack is still intact.
func (e *Error) captureSite() {
	if e.File != "" {
		return
	}
	var pcs [256]uintptr
	n := runtime.Callers(2, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if userFrame(f) {
			e.File, e.Line = f.File, f.Line
			return
		}
		if !more {
			return
		}
	}
}

// userFrame reports whether f is a frame of the user's code: not the Go
// runtime's or the reflection a transform calls the user's function
// through, and not one of peel's packages (except their _test.go files
// and the examples).
func userFrame(f runtime.Frame) bool {
	pkg := funcPackage(f.Function)
	switch {
	case pkg == "" || pkg == "runtime" || pkg == "reflect" || pkg == "sync" || strings.HasPrefix(pkg, "internal/"):
		return false
	case strings.HasSuffix(f.File, "_test.go"):
		return true
	case pkg == modulePath || strings.HasPrefix(pkg, modulePath+"/"):
		return strings.HasPrefix(pkg, modulePath+"/examples/")
	}
	return true
}

// funcPackage returns the import path of the package of the function
// named fn as runtime.Frame.Function spells it
// ("github.com/peel-ml/peel/transforms.Vmap[...].func1").
func funcPackage(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return ""
	}
	return fn[:slash+1+dot]
}

// NoteLevel records that the failure happened under level l: the first
// level noted is the one it failed at (Transform and Level, when not
// set yet), and every level noted joins the chain of enclosing
// transforms (Within), kept innermost first. Interpreters call it as
// the panic leaves a level (Bind does for the level it dispatched to).
// It also records the user's call site when the error has none yet.
func (e *Error) NoteLevel(l *Level) {
	e.captureSite()
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
	var group []int
	e.Within, group = e.Within[:0], transformOf(e.within)
	for k, w := range e.within {
		if k == 0 || group[k] != group[k-1] {
			e.Within = append(e.Within, w.name)
		}
	}
}

// transformOf returns, for each of levels (innermost first), the index
// in the chain of transforms (innermost first) of the transform it
// belongs to. A transform made of two levels — grad and linearize are a
// staging level with a forward-mode level inside it — is one transform:
// a level joins the one just outside it when both have the same name and
// different interpreters and that one has not joined another already. So
// Grad(Grad(f)) is two transforms of two levels each and Vmap(Vmap(f))
// two of one level each.
func transformOf(levels []*Level) []int {
	group := make([]int, len(levels))
	n, joined := 0, false
	for k := len(levels) - 1; k >= 0; k-- { // outermost first
		if k < len(levels)-1 {
			outer, l := levels[k+1], levels[k]
			if !joined && l.name == outer.name && reflect.TypeOf(l.interp) != reflect.TypeOf(outer.interp) {
				joined = true
			} else {
				n, joined = n+1, false
			}
		}
		group[k] = n
	}
	for k := range group { // number innermost first
		group[k] = n - group[k]
	}
	return group
}

// ForgetLevels clears the transform and the chain of enclosing
// transforms (for an error raised under a level internal to an op,
// reported as the op's own).
func (e *Error) ForgetLevels() {
	e.Transform, e.Level, e.Within, e.within = "", 0, nil, nil
}

// Error formats the message: "peel.MatMul: dot_general: contracting
// dimensions differ (f64[2,3], f64[4,5]) [in vmap ∘ grad] at
// train.go:42". The bracket names the transforms the failure happened
// under, outermost first, as they compose (Vmap(Grad(f)) is "vmap ∘
// grad"), followed by ", raised by vmap" when the transform that raised
// it is not the innermost one ("raised by the first vmap" when the name
// repeats, counted from the outermost).
// "while decomposing mylib.op" follows when the failing
// primitive came from the definition of a composite op, and "at
// file.go:line" gives the user's call site when it is known.
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
	e.writeTransforms(&b)
	if len(e.Decomposing) > 0 {
		b.WriteString(" while decomposing ")
		for i := len(e.Decomposing) - 1; i >= 0; i-- {
			b.WriteString(e.Decomposing[i])
			if i > 0 {
				b.WriteString(" > ")
			}
		}
	}
	if e.File != "" {
		b.WriteString(" at ")
		b.WriteString(filepath.Base(e.File))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	return b.String()
}

// writeTransforms writes " [in outer ∘ … ∘ inner]" naming the chain of
// transforms (Within, or just Transform when no chain was recorded) and,
// when the raising transform is not the innermost, which one raised it.
func (e *Error) writeTransforms(b *strings.Builder) {
	chain := e.Within
	if len(chain) == 0 {
		if e.Transform == "" {
			return
		}
		chain = []string{e.Transform}
	}
	b.WriteString(" [in ")
	for i := len(chain) - 1; i >= 0; i-- {
		b.WriteString(chain[i])
		if i > 0 {
			b.WriteString(" ∘ ")
		}
	}
	if raiser, nth, same := e.raiser(chain); raiser != "" {
		b.WriteString(", raised by ")
		if same > 1 {
			b.WriteString("the ")
			b.WriteString(ordinal(nth))
			b.WriteByte(' ')
		}
		b.WriteString(raiser)
	}
	b.WriteByte(']')
}

// raiser returns the name of the transform that raised e when it is not
// the innermost of chain (innermost first), with its position among the
// transforms of that name counted from the outermost (1 for the first)
// and how many of chain have that name; "" when it is the innermost.
func (e *Error) raiser(chain []string) (name string, nth, same int) {
	if e.Transform == "" {
		return "", 0, 0
	}
	at := -1 // the raising transform's index in chain, if recorded
	if len(e.within) > 0 {
		group := transformOf(e.within)
		for k, l := range e.within {
			if l.id == e.Level {
				at = group[k]
			}
		}
	}
	switch {
	case at == 0:
		return "", 0, 0
	case at < 0 && e.Transform == chain[0]:
		return "", 0, 0 // no recorded levels: assume the innermost raised it
	case at < 0:
		return e.Transform, 0, 0 // a level outside the chain (one that has returned)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		if chain[i] != e.Transform {
			continue
		}
		same++
		if i == at {
			nth = same
		}
	}
	return e.Transform, nth, same
}

// ordinal spells n ≥ 1 as "first", "second", … ("11th" past ten).
func ordinal(n int) string {
	words := [...]string{"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"}
	if n >= 1 && n <= len(words) {
		return words[n-1]
	}
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

// Errorf returns an *Error with a formatted message and the user's call
// site (see Error.File).
func Errorf(format string, args ...any) *Error {
	e := &Error{Msg: fmt.Sprintf(format, args...)}
	e.captureSite()
	return e
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
		AddOp(r, name)
		panic(r)
	}
}

// AddOp appends name to the op chain of r, a recovered panic value, when
// r is an *Error (and records the user's call site if it is not known
// yet); any other value is left alone. It is what Annotate does with the
// value it recovers, for forwarders in other packages (peel.Annotate),
// which must call recover themselves: recover works only in the deferred
// function itself.
func AddOp(r any, name string) {
	if e, ok := r.(*Error); ok {
		e.Ops = pushName(e.Ops, name)
		e.captureSite()
	}
}

// Decomposing is deferred by the decomposition of a composite op: when
// it panics with an *Error, name is added to the error's chain of ops
// being decomposed (outermost last) and the panic continues.
func Decomposing(name string) {
	if r := recover(); r != nil {
		if e, ok := r.(*Error); ok {
			e.Decomposing = pushName(e.Decomposing, name)
			e.captureSite()
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
				e.captureSite()
				err = e
				return
			}
			panic(r)
		}
	}()
	f()
	return nil
}
