package transforms

import (
	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/batching"
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
		return []*T{out}, []*T{tout}
	}
	return p
}()

// CustomJVP returns f with its own forward-mode derivative rule: under
// every autodiff transform, jvp(primals, tangents) is used instead of
// differentiating f's operations. jvp must be linear in tangents (reverse
// mode transposes it) and written with peel operations, so it can itself
// be differentiated for higher orders. Outside autodiff the result is f.
//
// CustomJVP panics with *peel.Error when f or jvp is nil; the function it
// returns panics with *peel.Error when f returns a nil tensor or jvp a
// nil output or tangent, or a tangent of another shape or dtype than the
// output.
func CustomJVP(f func(xs []*peel.Tensor) *peel.Tensor, jvp func(primals, tangents []*peel.Tensor) (out, tangentOut *peel.Tensor)) func(xs ...*peel.Tensor) *peel.Tensor {
	const op = "transforms.CustomJVP"
	if f == nil || jvp == nil {
		treeErrorf(op, "f and jvp must not be nil (f nil: %v, jvp nil: %v)", f == nil, jvp == nil)
	}
	params := customJVPParams{
		f: checkedF(op, f),
		jvp: func(primals, tangents []*T) (*T, *T) {
			out, tout := jvp(primals, tangents)
			if out == nil || tout == nil || !tout.Aval().Equal(out.Aval()) {
				treeErrorf(op, "the JVP rule must return the output and a tangent of the output's shape and dtype (got %s and %s)", out.TypeString(), tout.TypeString())
			}
			return out, tout
		},
	}
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
//
// CustomVJP panics with *peel.Error when f, fwd or bwd is nil; the
// function it returns panics with *peel.Error when f returns a nil
// tensor, fwd a nil output or a nil residual, or bwd the wrong number of
// cotangents or one of the wrong shape or dtype.
func CustomVJP(f func(xs []*peel.Tensor) *peel.Tensor, fwd func(xs []*peel.Tensor) (out *peel.Tensor, residuals []*peel.Tensor), bwd func(residuals []*peel.Tensor, ct *peel.Tensor) []*peel.Tensor) func(xs ...*peel.Tensor) *peel.Tensor {
	const op = "transforms.CustomVJP"
	if f == nil || fwd == nil || bwd == nil {
		treeErrorf(op, "f, fwd and bwd must not be nil (f nil: %v, fwd nil: %v, bwd nil: %v)", f == nil, fwd == nil, bwd == nil)
	}
	params := customVJPParams{
		f: checkedF(op, f),
		fwd: func(xs []*T) (*T, []*T) {
			out, res := fwd(xs)
			if out == nil {
				treeErrorf(op, "fwd returned a nil output")
			}
			for i, r := range res {
				if r == nil {
					treeErrorf(op, "fwd returned residual %d as a nil tensor (of %d residuals)", i, len(res))
				}
			}
			return out, res
		},
		bwd: bwd,
	}
	return func(xs ...*peel.Tensor) *peel.Tensor {
		defer interp.Annotate("transforms.CustomVJP")
		return interp.Bind1(customVJPCall, params, xs...)
	}
}

// checkedF wraps the user's f of a custom rule so that a nil result is
// *Error naming op.
func checkedF(op string, f func([]*T) *T) func([]*T) *T {
	return func(xs []*T) *T {
		out := f(xs)
		if out == nil {
			treeErrorf(op, "f returned a nil tensor")
		}
		return out
	}
}

// Custom rules under vmap: the primitive is bound again below with the
// user's functions vmapped (so the custom rule still applies to the
// batched computation), as JAX batches custom_jvp and custom_vjp.

// vmapped returns fn vectorized over a batch of size with the given
// operand batch dims (batching.NotMapped for unbatched), every result
// batched at 0.
func vmapped(size int, dims []int, fn func([]*T) []*T) func([]*T) []*T {
	axes := make([]int, len(dims))
	for i, d := range dims {
		axes[i] = d
		if d == batching.NotMapped {
			axes[i] = unmapped
		}
	}
	cfg := &vmapConfig{axisSize: size}
	return func(in []*T) []*T {
		return vmapFlat("transforms.Vmap", cfg, fn, in, append([]int(nil), axes...), func(outs []*T) []int {
			return make([]int, len(outs))
		}, nil)
	}
}

// laneAval is the type of one lane of physical value x batched at dim.
func laneAval(x *T, dim int) interp.Aval {
	if dim == batching.NotMapped {
		return x.Aval()
	}
	shape := append(append([]int{}, x.Shape()[:dim]...), x.Shape()[dim+1:]...)
	return interp.Aval{Shape: shape, DType: x.DType()}
}

func init() {
	batching.Register(customJVPCall, func(size int, params any, vals []*T, dims []int) ([]*T, []int) {
		cp := params.(customJVPParams)
		n := len(vals)
		f := vmapped(size, dims, func(xs []*T) []*T { return []*T{cp.f(xs)} })
		jvp := vmapped(size, append(append([]int{}, dims...), dims...), func(xs []*T) []*T {
			o, t := cp.jvp(xs[:n], xs[n:])
			return []*T{o, t}
		})
		bp := customJVPParams{
			f: func(xs []*T) *T { return f(xs)[0] },
			jvp: func(p, t []*T) (*T, *T) {
				r := jvp(append(append([]*T{}, p...), t...))
				return r[0], r[1]
			},
		}
		return interp.Bind(customJVPCall, bp, vals...), []int{0}
	})
	batching.Register(customVJPCall, func(size int, params any, vals []*T, dims []int) ([]*T, []int) {
		cp := params.(customVJPParams)
		f := vmapped(size, dims, func(xs []*T) []*T { return []*T{cp.f(xs)} })
		fwd := vmapped(size, dims, func(xs []*T) []*T {
			o, res := cp.fwd(xs)
			return append([]*T{o}, res...)
		})
		bp := customVJPParams{
			f: func(xs []*T) *T { return f(xs)[0] },
			fwd: func(xs []*T) (*T, []*T) {
				r := fwd(xs)
				return r[0], r[1:]
			},
			bwd: func(res []*T, ct *T) []*T {
				bdims := make([]int, len(res)+1) // residuals and ct batched at 0
				bwd := vmapped(size, bdims, func(xs []*T) []*T {
					cts := cp.bwd(xs[:len(xs)-1], xs[len(xs)-1])
					if len(cts) != len(vals) {
						treeErrorf("transforms.CustomVJP", "bwd returned %d cotangents for %d inputs", len(cts), len(vals))
					}
					cts = append([]*T(nil), cts...) // the user's slice is theirs
					for i, c := range cts {
						if c == nil {
							cts[i] = zeros(laneAval(vals[i], dims[i]))
						}
					}
					return cts
				})
				cts := bwd(append(append([]*T{}, res...), ct))
				// An operand shared by every lane gets the sum of the
				// lanes' cotangents.
				for i, d := range dims {
					if d == batching.NotMapped {
						cts[i] = peel.Sum(cts[i], 0)
					} else if d != 0 {
						cts[i] = batching.MoveDim(cts[i], 0, d)
					}
				}
				return cts
			},
		}
		return interp.Bind(customVJPCall, bp, vals...), []int{0}
	})
}
