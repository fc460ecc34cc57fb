package compiler

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// ExpandRowOps rewrites softmax and log_softmax along the last axis,
// whose rows fit in a fused block (interp.FuseBlock elements), into the
// row reductions and elementwise equations of their definition:
//
//	softmax:     m = max(x), d = x − m, e = exp(d), s = Σ e, y = e / s
//	log_softmax: m = max(x), d = x − m, s = Σ exp(d),   y = d − log(s)
//
// (the maxima and sums per row, broadcast back along the last axis). The
// fuser runs them in row mode with the equations around them (a scale
// and a mask before an attention's softmax) as one group: one pass over
// memory where the primitive's kernel would add one of its own. The
// values are the kernel's bits: the kernel runs the same reductions
// (reduce_max's and reduce_sum's loops) and elementwise loops, row by
// row. Longer rows, other axes and equations touching a value written in
// place are left to the kernel.
func ExpandRowOps(g *interp.Graph) *interp.Graph {
	b := newBuilder(g)
	for _, e := range g.Eqns {
		e = b.subst(e)
		if v := expandRowOp(b, e); v != nil {
			b.sub[e.Out[0]] = v
			b.changed = true
			continue
		}
		b.append(e)
	}
	if !b.changed {
		return g
	}
	return b.graph()
}

// expandRowOp emits the expansion of e when it is a softmax or
// log_softmax ExpandRowOps expands, and returns the var of its result;
// nil otherwise (nothing emitted).
func expandRowOp(b *Builder, e *interp.Eqn) *interp.Var {
	if (e.Prim != prims.Softmax && e.Prim != prims.LogSoftmax) || len(e.In) != 1 || len(e.Out) != 1 || touches(e, b.mut) {
		return nil
	}
	x := e.In[0]
	shape := x.Aval.Shape
	r := len(shape)
	if ap, ok := e.Params.(prims.AxisParams); !ok || r == 0 || ap.Axis != r-1 || shape[r-1] == 0 || shape[r-1] > interp.FuseBlock {
		return nil
	}
	dt := x.Aval.DType
	full := x.Aval
	rows := interp.Aval{Shape: append([]int{}, shape[:r-1]...), DType: dt}
	kept := make([]int, r-1)
	for i := range kept {
		kept[i] = i
	}
	emit := func(p *interp.Prim, params any, a interp.Aval, in ...*interp.Var) *interp.Var {
		v := b.NewVar(a)
		b.append(&interp.Eqn{Prim: p, Params: params, In: in, Out: []*interp.Var{v}, Site: e.Site})
		return v
	}
	back := func(v *interp.Var) *interp.Var {
		return emit(prims.BroadcastInDim, prims.BroadcastParams{Shape: append([]int{}, shape...), Dims: kept}, full, v)
	}
	axes := prims.ReduceParams{Axes: []int{r - 1}}
	m := emit(prims.ReduceMax, axes, rows, x)
	d := emit(prims.Sub, nil, full, x, back(m))
	ex := emit(prims.Exp, nil, full, d)
	s := emit(prims.ReduceSum, axes, rows, ex)
	if e.Prim == prims.Softmax {
		return emit(prims.Div, nil, full, ex, back(s))
	}
	return emit(prims.Sub, nil, full, d, back(emit(prims.Log, nil, rows, s)))
}
