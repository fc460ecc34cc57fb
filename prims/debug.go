package prims

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// Looking inside a transformed function: debug_print formats its
// operands' values where it is evaluated (eagerly, or when a compiled
// program runs), and callback calls a Go function on them there. Both
// are effects (interp.Prim.Effect), so no compiler pass folds, merges,
// drops or moves one past another, and each returns a token (a bool
// scalar) that nothing needs to use. Under Vmap both run once per lane
// (batching/debug.go); a debug print has no derivative to add (its
// tangent rule prints the primal values), and a callback has none, so
// differentiating through one is refused.

// DebugParams are debug_print's: the fmt format, the lanes of the Vmap
// levels it was batched over ("[lane 1] "), and where the text goes.
type DebugParams struct {
	Format string
	Lanes  string
}

func (p DebugParams) String() string { return fmt.Sprintf("%q%s", p.Format, p.Lanes) }

// DebugPrint prints fmt.Sprintf(Format, operands...) (with Lanes before
// it) and a newline to the debug output (SetDebugOutput; os.Stdout by
// default), and returns a bool token.
var DebugPrint = interp.NewPrim("debug_print", interp.Pure, func(params any, in []aval) []aval {
	return []aval{{DType: backend.Bool}}
})

// CallbackParams are callback's: the Go function, the results' types,
// and the lanes of the Vmap levels it was batched over.
type CallbackParams struct {
	*CallbackFunc
	Lanes string
}

// CallbackFunc is a callback's Go function and its results' types, held
// by pointer so that equations compare it by identity.
type CallbackFunc struct {
	Name string // the user-level op, for errors
	Fn   func(args []*tensor) []*tensor
	Out  []aval
}

func (p CallbackParams) String() string { return p.Name + p.Lanes }

// Callback calls Fn on its operands' concrete values where it is
// evaluated and returns its results, checked against Out, and a bool
// token last.
var Callback = interp.NewPrim("callback", interp.Pure, func(params any, in []aval) []aval {
	p := params.(CallbackParams)
	return append(append([]aval{}, p.Out...), aval{DType: backend.Bool})
})

// Debugging are the primitives that act outside their results (a print,
// a call of Go code): their rules are tested where their effects can be
// watched, in package peel (TestDebugPrint, TestCallback: eager,
// compiled, under Vmap, Grad and their compositions).
var Debugging = []*interp.Prim{DebugPrint, Callback}

var (
	debugMu  sync.Mutex
	debugOut io.Writer // nil: os.Stdout, as it is when the print runs
)

// SetDebugOutput makes debug_print write to w, or to os.Stdout as it is
// when a print runs if w is nil (the default), and returns the writer it
// wrote to before (nil for the default).
func SetDebugOutput(w io.Writer) io.Writer {
	debugMu.Lock()
	defer debugMu.Unlock()
	old := debugOut
	debugOut = w
	return old
}

func token() []*tensor { return []*tensor{full(1, aval{DType: backend.Bool})} }

func init() {
	DebugPrint.Effect = true
	DebugPrint.EvalImpl = func(params any, args []*tensor) []*tensor {
		p := params.(DebugParams)
		vals := make([]any, len(args))
		for i, a := range args {
			vals[i] = a
		}
		text := p.Lanes + fmt.Sprintf(p.Format, vals...) + "\n"
		debugMu.Lock()
		w := debugOut
		if w == nil {
			w = os.Stdout
		}
		_, err := io.WriteString(w, text)
		debugMu.Unlock()
		if err != nil {
			interp.Panicf("debug output: %v", err)
		}
		return token()
	}
	DebugPrint.JVP = func(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
		return interp.Bind(DebugPrint, params, primals...), []*tensor{nil}
	}
	Callback.Effect = true
	Callback.EvalImpl = func(params any, args []*tensor) []*tensor {
		p := params.(CallbackParams)
		outs := p.Fn(args)
		if len(outs) != len(p.Out) {
			interp.Panicf("%s: the function returned %d tensors, but %d result types were declared", p.Name, len(outs), len(p.Out))
		}
		for i, o := range outs {
			if o == nil || !o.IsConcrete() || !interp.AvalOf(o).Equal(p.Out[i]) {
				got := "nil"
				if o != nil {
					got = o.TypeString()
				}
				interp.Panicf("%s: result %d is %s, but %s was declared", p.Name, i, got, p.Out[i])
			}
		}
		return append(outs, token()...)
	}
	Callback.JVP = func(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
		for _, t := range tangents {
			if t != nil {
				interp.Panicf("%s has no derivative: give it one with transforms.CustomVJP or transforms.CustomJVP around the call, or differentiate with respect to other inputs", params.(CallbackParams).Name)
			}
		}
		outs := interp.Bind(Callback, params, primals...)
		return outs, make([]*tensor, len(outs))
	}
}
