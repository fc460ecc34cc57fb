package transforms

import (
	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/autodiff"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// The Laplacian by forward propagation (the forward Laplacian, a
// collapsed form of Taylor mode). f is traced once, through
// Functionalize, into a graph, and each value v of the graph is carried
// as (v, V, L): its d first derivatives along the input's d coordinates,
// stacked on a leading axis (V[i] = ∂v/∂x_i), and its Laplacian L =
// Σ_i ∂²v/∂x_i². An equation y = p(u) gives
//
//	V_y[i] = J_p(u)·V_u[i]
//	L_y    = J_p(u)·L_u + Σ_i ∂²p(u)[V_u[i], V_u[i]]
//
// where J_p is p's Jacobian and ∂²p(u)[t, t] its second derivative along
// t: the JVP of p's JVP (t fixed) at u along t. One rule, from the JVP
// rules every primitive has, serves every primitive (elementwise,
// products, reductions, shapes, control flow): the d directions are a
// Vmap of the nested JVP, and their second derivatives are summed as
// they are made, so the second-order information is one tensor per
// value, not d (Jacfwd of Jacrev's Hessian keeps d² numbers and needs d
// reverse passes). A primitive linear in its only operand with
// derivatives has no second-order term and skips it.

// Laplacian returns the function computing the Laplacian of f at x: for
// each element of f's value, Σ_i ∂²f/∂x_i² over every element x_i of x,
// the trace of its Hessian in x, by forward propagation of the d first
// derivatives and the Laplacian itself through f (JAX's jet, the
// forward Laplacian of physics-informed networks and variational Monte
// Carlo). The result has f's value's shape. f is traced, once per call,
// through Functionalize (in-place writes are allowed); x must be float.
// An effect in f (a debug print, a callback) runs once for the values
// and again for the derivatives of each equation it is in.
// It panics with *peel.Error when f is nil or x is not float; the
// function it returns panics as f does.
func Laplacian(f func(*peel.Tensor) *peel.Tensor) func(*peel.Tensor) *peel.Tensor {
	const op = "transforms.Laplacian"
	needFunc(op, f)
	return func(x *peel.Tensor) *peel.Tensor {
		defer interp.Annotate(op)
		if x == nil {
			treeErrorf(op, "the argument is a nil tensor")
		}
		if !x.DType().IsFloat() {
			treeErrorf(op, "the argument is %s: a Laplacian is taken in a float argument", x.TypeString())
		}
		pure := Functionalize(f)
		g := interp.TraceAvals("laplacian", func(in []*tensor) []*tensor {
			y := pure(in[0])
			if y == nil {
				treeErrorf(op, "f returned a nil tensor")
			}
			return []*tensor{y}
		}, []interp.Aval{interp.AvalOf(x)}).DCE()
		d := x.Size()
		eye := peel.Reshape(peel.Eye(x.DType(), d), append([]int{d}, x.Shape()...)...)
		env := make(map[*interp.Var]lapValue, len(g.Eqns)+2)
		env[g.In[0]] = lapValue{v: x, V: eye}
		for i, c := range g.Consts {
			env[c] = lapValue{v: g.ConstVals[i]}
		}
		for _, e := range g.Eqns {
			in := make([]lapValue, len(e.In))
			for i, v := range e.In {
				in[i] = env[v]
			}
			for i, o := range lapEqn(e, in) {
				env[e.Out[i]] = o
			}
		}
		y := env[g.Out[0]]
		if y.L == nil {
			return autodiff.ZerosLike(y.v)
		}
		return y.L
	}
}

// lapValue is a value of the graph with its d first derivatives along
// the input's coordinates (V, stacked on axis 0) and its Laplacian (L);
// nil V or L is zero.
type lapValue struct {
	v, V, L *tensor
}

// lapEqn carries an equation's operands' values, derivatives and
// Laplacians to its results' (see the top of the file).
func lapEqn(e *interp.Eqn, in []lapValue) []lapValue {
	vs := make([]*tensor, len(in))
	var withV []int // the operands with derivatives
	linear := true
	for i, a := range in {
		vs[i] = a.v
		if a.V != nil {
			withV = append(withV, i)
			linear = linear && prims.LinearIn(e.Prim, i)
		}
	}
	bind := func(args []*tensor) []*tensor { return interp.Bind(e.Prim, e.Params, args...) }
	if len(withV) == 0 {
		return valuesOf(bind(vs))
	}
	linear = linear && len(withV) == 1
	// tangents places the derivatives ts of the operands withV.
	tangents := func(ts []*tensor) []*tensor {
		full := make([]*tensor, len(vs))
		for k, i := range withV {
			full[i] = ts[k]
		}
		return full
	}
	// jvp is p's JVP at u along the operands withV's ts.
	jvp := func(u, ts []*tensor) []*tensor {
		_, t := autodiff.JVP("laplacian", bind, u, tangents(ts))
		return t
	}
	// The results, and the operands' Laplacians through the Jacobian
	// (J·L) when an operand has one: one JVP gives both.
	var ls []*tensor
	anyL := false
	for _, i := range withV {
		ls = append(ls, in[i].L)
		anyL = anyL || in[i].L != nil
	}
	var outs, jl []*tensor
	if anyL {
		for k, i := range withV {
			if ls[k] == nil {
				ls[k] = autodiff.ZerosLike(in[i].v)
			}
		}
		outs, jl = autodiff.JVP("laplacian", bind, vs, tangents(ls))
	} else {
		outs = bind(vs)
	}
	res := valuesOf(outs)
	stack := make([]*tensor, len(withV))
	for k, i := range withV {
		stack[k] = in[i].V
	}
	nOut := len(outs)
	// By direction: the first derivatives and, unless linear, the
	// second-order terms, from one nested JVP per direction.
	lanes := Vmap(func(ts []*tensor) []*tensor {
		if linear {
			return zerosForNil(jvp(vs, ts), outs)
		}
		first, second := autodiff.JVP("laplacian", func(u []*tensor) []*tensor {
			return zerosForNil(jvp(u, ts), outs)
		}, vs, tangents(ts))
		return append(first, zerosForNil(second, outs)...)
	})(stack)
	for j, o := range outs {
		if !o.DType().IsFloat() {
			continue
		}
		res[j].V = lanes[j]
		var l *tensor
		if !linear {
			l = peel.Sum(lanes[nOut+j], 0)
		}
		if jl != nil && jl[j] != nil {
			if l == nil {
				l = jl[j]
			} else {
				l = peel.Add(l, jl[j])
			}
		}
		res[j].L = l
	}
	return res
}

// valuesOf returns results with no derivatives.
func valuesOf(outs []*tensor) []lapValue {
	res := make([]lapValue, len(outs))
	for i, o := range outs {
		res[i].v = o
	}
	return res
}

// zerosForNil returns ts with each nil entry (a symbolic zero tangent
// or cotangent) replaced by zeros shaped like the matching one of outs.
func zerosForNil(ts, outs []*tensor) []*tensor {
	res := make([]*tensor, len(outs))
	for i, o := range outs {
		if i < len(ts) && ts[i] != nil {
			res[i] = ts[i]
		} else {
			res[i] = autodiff.ZerosLike(o)
		}
	}
	return res
}
