package peel

import (
	"io"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// DebugPrint prints fmt.Sprintf(format, xs...) and a newline to the
// debug output (os.Stdout unless SetDebugOutput says otherwise), with
// the values xs have where the print runs, as JAX's jax.debug.print:
// eagerly at once; in a compiled function each time it runs (not when
// it is traced), in the order the prints were written; under
// transforms.Vmap once per lane, in lane order, each line starting with
// its lane ("[lane 1] "; nested Vmaps name the outer lane first); under
// Grad with the primal values, once (a print adds nothing to a
// derivative, so a Checkpoint's recomputation for the backward pass
// leaves it out). The tensors format as their String does (%v). It
// panics with *Error when an x is nil.
func DebugPrint(format string, xs ...*Tensor) {
	const op = "peel.DebugPrint"
	defer interp.Annotate(op)
	for _, x := range xs {
		checkTensor(op, x)
	}
	interp.Bind(prims.DebugPrint, prims.DebugParams{Format: format}, xs...)
}

// SetDebugOutput makes DebugPrint write to w (a test's buffer, a log
// file), or to os.Stdout as it is when a print runs if w is nil (the
// default), and returns the writer it wrote to before (nil for the
// default), to restore it with.
func SetDebugOutput(w io.Writer) io.Writer { return prims.SetDebugOutput(w) }

// Callback calls fn, a Go function of concrete tensors, on the values
// args have where the call runs, and returns its results, which must
// have the shapes and dtypes of results (example tensors, whose values
// are not read), as JAX's jax.pure_callback: eagerly at once; in a
// compiled function each time it runs, in the order written; under
// transforms.Vmap once per lane, in lane order, the lanes' results
// stacked (fn sees one lane's values). fn must not call transforms.
// Callback has no derivative: differentiating through it panics with
// *Error, unless transforms.CustomVJP or CustomJVP around the call gives
// one. It panics with *Error when fn is nil, an arg or result is nil, or
// fn returns another number of results or results of other types.
func Callback(fn func(args []*Tensor) []*Tensor, results []*Tensor, args ...*Tensor) []*Tensor {
	const op = "peel.Callback"
	defer interp.Annotate(op)
	if fn == nil {
		errorf(op, "fn is nil")
	}
	for _, a := range args {
		checkTensor(op, a)
	}
	out := make([]interp.Aval, len(results))
	for i, r := range results {
		checkTensor(op, r)
		out[i] = interp.AvalOf(r)
	}
	res := interp.Bind(prims.Callback, prims.CallbackParams{CallbackFunc: &prims.CallbackFunc{Name: op, Fn: fn, Out: out}}, args...)
	return res[:len(out)]
}
