package transforms

import (
	"github.com/peel-ml/peel/functionalize"
	"github.com/peel-ml/peel/interp"
)

// Functionalize returns f with its mutations made pure: every in-place
// operation is answered out of place, views are replayed from their base
// so every alias sees a write the next time it is used, and nothing below
// is mutated while f runs. Tensors f creates and then writes (Zeros then
// CopyInto a slice of it) work under every transform, so
// Vmap(Functionalize(f)) vectorizes code that Vmap alone refuses. When f
// writes its argument's tensors, the caller's tensors receive the final
// values once, when f returns; a graph traced through Functionalize
// (MakeGraph) contains no mutation primitive. Argument leaves that alias
// (the same tensor twice, views of one tensor) stay aliases: a write
// through one is seen through the others, and f's own reads of an
// argument it writes, captured rather than passed, see the write.
func Functionalize[A, B any](f func(A) B, opts ...FunctionalizeOption) func(A) B {
	needFunc("transforms.Functionalize", f)
	return functionalizeAs("transforms.Functionalize", f, opts)
}

// functionalizeAs is Functionalize with errors naming op.
func functionalizeAs[A, B any](op string, f func(A) B, opts []FunctionalizeOption) func(A) B {
	cfg := &functionalizeConfig{}
	for _, o := range opts {
		o.applyFunctionalize(cfg)
	}
	return func(x A) B {
		leaves, def := flatten(op, x)
		var outDef *treeDef
		outs := runFunctionalized(functionalize.New(cfg.removeViews), flatFn(op, f, def, &outDef), leaves)
		return build[B](outDef, outs)
	}
}

// runFunctionalized runs fl on in under the functionalize level fi,
// which it ends (aborts on a panic), and returns fl's results unwrapped.
func runFunctionalized(fi *functionalize.Interp, fl func([]*tensor) []*tensor, in []*tensor) []*tensor {
	w := fi.WrapInputs(in, nil, nil)
	ended := false
	defer func() {
		if !ended {
			fi.Abort()
		}
	}()
	outs := func() []*tensor {
		defer interp.AnnotateLevel(fi.Level())
		return fl(w)
	}()
	for i, o := range outs {
		outs[i] = fi.Unwrap(o)
	}
	ended = true
	func() {
		defer interp.AnnotateLevel(fi.Level())
		fi.End(nil, nil)
	}()
	return outs
}
