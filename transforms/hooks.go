package transforms

import (
	"sync/atomic"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/batching"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Backward hooks (torch's Tensor.register_hook, made functional): Hook
// returns a value equal to x whose cotangent, in the backward pass of
// every reverse-mode transform, goes through a function that may replace
// it. It is the primitive hook: the identity on values; its JVP binds
// hook_lin on the tangent, a linear primitive whose forward map is the
// identity (hooks are for the backward pass) and whose transpose calls
// the function. The backward pass is autodiff.TransposeGraph, eager or traced
// under Compile, so a hook runs at the same point in both: once per
// backward pass, when the cotangent of its value is complete (every use
// of the value has contributed), in reverse order of the computation.

// hookParams are hook's and hook_lin's parameters.
type hookParams struct {
	id int64
	fn func(ct *peel.Tensor) *peel.Tensor
}

func (p *hookParams) String() string { return "hook" }

var hookIDs atomic.Int64

var hookPrim = interp.NewPrim("hook", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
	return []interp.Aval{in[0]}
})

var hookLin = interp.NewPrim("hook_lin", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
	return []interp.Aval{in[0]}
})

func init() {
	hookPrim.Whole = true // staged as itself: a Hook inside Compile still runs
	// Evaluated (a compiled forward pass without autodiff): a copy, as a
	// primitive's result is a new value.
	hookPrim.Impl = func(params any, args []*tensor) []*tensor {
		return []*tensor{interp.Bind1(prims.Copy, nil, args[0])}
	}
	hookPrim.JVP = func(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
		return []*tensor{primals[0]}, interp.Bind(hookLin, params, tangents[0])
	}
	batching.Register(hookPrim, func(size int, params any, vals []*tensor, dims []int) ([]*tensor, []int) {
		return interp.Bind(hookPrim, params, vals[0]), dims
	})
	hookLin.Linear = []bool{true}
	hookLin.TransposeEarly = true // the user's function sees the cotangent as soon as it is complete
	hookLin.Whole = true          // one equation of the linear graph, transposed whole
	hookLin.Impl = func(params any, args []*tensor) []*tensor {
		return []*tensor{interp.Bind1(prims.Copy, nil, args[0])}
	}
	hookLin.Transpose = func(params any, cts []*tensor, args []*tensor, linear []bool) []*tensor {
		if cts[0] == nil {
			return []*tensor{nil}
		}
		defer interp.Annotate("transforms.Hook")
		ct := cts[0]
		r := params.(*hookParams).fn(ct)
		if r == nil {
			return []*tensor{ct}
		}
		if !interp.AvalOf(r).Equal(interp.AvalOf(ct)) {
			treeErrorf("transforms.Hook", "the hook returned %s for a cotangent of %s: it must return a tensor of the cotangent's shape and dtype, or nil to keep it", r.TypeString(), ct.TypeString())
		}
		return []*tensor{r}
	}
	batching.Register(hookLin, func(size int, params any, vals []*tensor, dims []int) ([]*tensor, []int) {
		return interp.Bind(hookLin, params, vals[0]), dims
	})
}

// Hook returns a tensor equal to x whose cotangent passes through fn in
// the backward pass of Grad, VJP, Jacrev and the other reverse-mode
// transforms (torch's register_hook): fn receives the cotangent of the
// returned value, complete (summed over every use), and returns the
// cotangent to propagate instead, or nil to keep it. Use the returned
// tensor where x would be used. Hooks run in the backward pass's order
// (the reverse of the computation), once per backward pass; forward mode
// (JVP, Jacfwd) does not run them. A hook written with peel operations
// is differentiated, vmapped and compiled with the backward pass (under
// Compile it is traced into the program); a hook running other Go code
// (logging, reading values with Float64s) runs as it is in eager
// gradients, while under Compile and Vmap it receives traced values,
// whose data cannot be read. Outside any transform Hook returns x
// itself. Hook panics with *peel.Error when x or fn is nil; the backward
// pass panics with *peel.Error when fn returns a tensor of another shape
// or dtype.
func Hook(x *peel.Tensor, fn func(ct *peel.Tensor) *peel.Tensor) *peel.Tensor {
	const op = "transforms.Hook"
	if x == nil || fn == nil {
		treeErrorf(op, "x and fn must not be nil (x nil: %v, fn nil: %v)", x == nil, fn == nil)
	}
	if x.IsConcrete() {
		return x
	}
	defer interp.Annotate(op)
	return interp.Bind1(hookPrim, &hookParams{id: hookIDs.Add(1), fn: fn}, x)
}

// OnGradient calls fn on each leaf's final gradient, after the backward
// pass, in leaf order (tree.Leaves order), with the leaf's path: a hook
// on a parameter's accumulated gradient (torch's
// register_post_accumulate_grad_hook); fn may return a replacement of
// the same shape and dtype, or nil to keep it. With several OnGradient
// options they run in the order given.
func OnGradient(fn func(path string, g *peel.Tensor) *peel.Tensor) BackwardOption {
	return gradOpt(func(c *gradConfig) {
		if fn != nil {
			c.onGrad = append(c.onGrad, fn)
		}
	})
}

// runGradHooks applies the OnGradient hooks to the gradients of leaves
// named by name (leaf paths).
func runGradHooks(op string, cfg *gradConfig, grads []*tensor, path func(i int) string) {
	for _, fn := range cfg.onGrad {
		for i, g := range grads {
			r := fn(path(i), g)
			if r == nil {
				continue
			}
			if !interp.AvalOf(r).Equal(interp.AvalOf(g)) {
				treeErrorf(op, "the OnGradient hook returned %s for the gradient of %s (%s): it must return a tensor of the gradient's shape and dtype, or nil", r.TypeString(), path(i), g.TypeString())
			}
			grads[i] = r
		}
	}
}
