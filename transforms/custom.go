package transforms

import (
	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
)

// Custom derivative rules are primitives whose Impl calls the user's
// function (so every interpreter without a rule simply runs it) and whose
// JVP rule calls the user's rule.

type customJVPParams struct {
	f   func([]*T) *T
	jvp func(primals, tangents []*T) (*T, *T)
}

func (customJVPParams) String() string { return "custom_jvp" }

var customJVPCall = func() *interp.Prim {
	p := interp.NewPrim("custom_jvp_call", interp.Pure, func(any, []interp.Aval) []interp.Aval {
		panic(interp.Errorf("custom_jvp_call has no shape rule: it is decomposed"))
	})
	p.Impl = func(params any, args []*T) []*T {
		return []*T{params.(customJVPParams).f(args)}
	}
	p.JVP = func(params any, primals, tangents []*T) ([]*T, []*T) {
		cp := params.(customJVPParams)
		ts := make([]*T, len(tangents))
		for i, t := range tangents {
			if t == nil {
				t = zerosLike(primals[i])
			}
			ts[i] = t
		}
		out, tout := cp.jvp(primals, ts)
		if out == nil || tout == nil || !tout.Aval().Equal(out.Aval()) {
			treeErrorf("transforms.CustomJVP", "the JVP rule must return the output and a tangent of the output's shape and dtype (got %s and %s)", out.TypeString(), tout.TypeString())
		}
		return []*T{out}, []*T{tout}
	}
	return p
}()

// CustomJVP returns f with its own forward-mode derivative rule: under
// every autodiff transform, jvp(primals, tangents) is used instead of
// differentiating f's operations. jvp must be linear in tangents (reverse
// mode transposes it) and written with peel operations, so it can itself
// be differentiated for higher orders. Outside autodiff the result is f.
func CustomJVP(f func(xs []*peel.Tensor) *peel.Tensor, jvp func(primals, tangents []*peel.Tensor) (out, tangentOut *peel.Tensor)) func(xs ...*peel.Tensor) *peel.Tensor {
	params := customJVPParams{f: f, jvp: jvp}
	return func(xs ...*peel.Tensor) *peel.Tensor {
		defer interp.Annotate("transforms.CustomJVP")
		return interp.Bind1(customJVPCall, params, xs...)
	}
}

type customVJPParams struct {
	f   func([]*T) *T
	fwd func([]*T) (*T, []*T)
	bwd func(res []*T, ct *T) []*T
}

func (customVJPParams) String() string { return "custom_vjp" }

// customVJPLin is the linear map a CustomVJP function contributes to a
// linearized program: it has no forward rule, and its transpose calls
// the user's bwd with the residuals saved by fwd.
type customVJPLinParams struct {
	bwd  func(res []*T, ct *T) []*T
	res  []*T
	out  interp.Aval
	in   []interp.Aval
	name string
}

func (customVJPLinParams) String() string { return "custom_vjp_bwd" }

var customVJPLin = func() *interp.Prim {
	p := interp.NewPrim("custom_vjp_lin", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
		return []interp.Aval{params.(customVJPLinParams).out}
	})
	p.Linear = []bool{true} // in every operand (prims.LinearIn repeats the last entry)
	p.NoEval = "forward-mode differentiation (JVP, Jacfwd, Linearize) of a CustomVJP function is not supported: give it a CustomJVP rule instead"
	p.Transpose = func(params any, cts []*T, args []*T, linear []bool) []*T {
		lp := params.(customVJPLinParams)
		if cts[0] == nil {
			return make([]*T, len(args))
		}
		got := lp.bwd(lp.res, cts[0])
		if len(got) != len(args) {
			treeErrorf("transforms.CustomVJP", "bwd returned %d cotangents for %d inputs", len(got), len(args))
		}
		out := make([]*T, len(args))
		for i := range args {
			if !linear[i] || got[i] == nil {
				continue
			}
			if !got[i].Aval().Equal(lp.in[i]) {
				treeErrorf("transforms.CustomVJP", "bwd's cotangent %d is %s, but the input is %s", i, got[i].TypeString(), lp.in[i])
			}
			out[i] = got[i]
		}
		return out
	}
	return p
}()

var customVJPCall = func() *interp.Prim {
	p := interp.NewPrim("custom_vjp_call", interp.Pure, func(any, []interp.Aval) []interp.Aval {
		panic(interp.Errorf("custom_vjp_call has no shape rule: it is decomposed"))
	})
	p.Impl = func(params any, args []*T) []*T {
		return []*T{params.(customVJPParams).f(args)}
	}
	p.JVP = func(params any, primals, tangents []*T) ([]*T, []*T) {
		cp := params.(customVJPParams)
		out, res := cp.fwd(primals)
		in := make([]interp.Aval, len(primals))
		ts := make([]*T, len(tangents))
		for i, t := range tangents {
			in[i] = primals[i].Aval()
			if t == nil {
				t = zerosLike(primals[i])
			}
			ts[i] = t
		}
		lp := customVJPLinParams{bwd: cp.bwd, res: res, out: out.Aval(), in: in}
		return []*T{out}, []*T{interp.Bind1(customVJPLin, lp, ts...)}
	}
	return p
}()

// CustomVJP returns f with its own reverse-mode rule: under reverse-mode
// transforms, fwd(xs) computes the output and saves residuals, and
// bwd(residuals, ct) maps the output's cotangent to one cotangent per
// input (nil for zero). bwd is written with peel operations, so
// differentiating through it (second order) uses the rule's own
// operations. Forward mode of a CustomVJP function panics with
// *peel.Error; outside autodiff the result is f.
func CustomVJP(f func(xs []*peel.Tensor) *peel.Tensor, fwd func(xs []*peel.Tensor) (out *peel.Tensor, residuals []*peel.Tensor), bwd func(residuals []*peel.Tensor, ct *peel.Tensor) []*peel.Tensor) func(xs ...*peel.Tensor) *peel.Tensor {
	params := customVJPParams{f: f, fwd: fwd, bwd: bwd}
	return func(xs ...*peel.Tensor) *peel.Tensor {
		defer interp.Annotate("transforms.CustomVJP")
		return interp.Bind1(customVJPCall, params, xs...)
	}
}
