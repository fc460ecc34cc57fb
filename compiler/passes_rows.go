package compiler

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// ExpandRowOps rewrites softmax and log_softmax along the last axis, and
// layer_norm and rms_norm over the last axis alone, whose rows fit in a
// fused block (FuseBlock elements), into the row reductions and
// elementwise equations of their definition:
//
//	softmax:     m = max(x), d = x − m, e = exp(d), s = Σ e, y = e / s
//	log_softmax: m = max(x), d = x − m, s = Σ exp(d),   y = d − log(s)
//	layer_norm:  d = x − Σx/n, r = rsqrt(Σd²/n + ε),    y = d·r
//	rms_norm:                  r = rsqrt(Σx²/n + ε),    y = x·r
//
// (the reductions per row, broadcast back along the last axis). The
// fuser runs them in row mode with the equations around them (a scale
// and a mask before an attention's softmax, a norm's scale and shift
// after it) as one group: one pass over memory where the primitive's
// kernel would add one of its own. The values are the kernels' bits:
// the kernels run the same reductions (reduce_max's and reduce_sum's
// loops) and elementwise loops, row by row. Longer rows, other axes and
// equations touching a value written in place are left to the kernels,
// as are f16 and bf16 operands (their kernels compute in float32).
func ExpandRowOps(g *interp.Graph) *interp.Graph {
	b := newBuilder(g)
	for _, e := range g.Eqns {
		e = b.subst(e)
		if vs := expandRowOp(b, e); vs != nil {
			for i, v := range vs {
				b.sub[e.Out[i]] = v
			}
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

// expandRowOp emits the expansion of e when it is an equation
// ExpandRowOps expands, and returns the vars of its results; nil
// otherwise (nothing emitted).
func expandRowOp(b *Builder, e *interp.Eqn) []*interp.Var {
	if len(e.In) != 1 || touches(e, b.mut) {
		return nil
	}
	x := e.In[0]
	shape := x.Aval.Shape
	r := len(shape)
	if dt := x.Aval.DType; r == 0 || shape[r-1] == 0 || shape[r-1] > FuseBlock || (dt != backend.Float32 && dt != backend.Float64) {
		// (f16 and bf16 operands run the kernel in float32.)
		return nil
	}
	switch e.Prim {
	case prims.Softmax, prims.LogSoftmax:
		if ap, ok := e.Params.(prims.AxisParams); !ok || ap.Axis != r-1 {
			return nil
		}
	case prims.LayerNorm, prims.RMSNorm:
		if np, ok := e.Params.(prims.NormParams); !ok || np.Axes != 1 {
			return nil
		}
	default:
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
	perRow := func(c float64) *interp.Var {
		k := b.Const(scalar(dt, c))
		return emit(prims.BroadcastInDim, prims.BroadcastParams{Shape: append([]int{}, rows.Shape...), Dims: []int{}}, rows, k)
	}
	axes := prims.ReduceParams{Axes: []int{r - 1}}
	switch e.Prim {
	case prims.Softmax, prims.LogSoftmax:
		m := emit(prims.ReduceMax, axes, rows, x)
		d := emit(prims.Sub, nil, full, x, back(m))
		ex := emit(prims.Exp, nil, full, d)
		s := emit(prims.ReduceSum, axes, rows, ex)
		if e.Prim == prims.Softmax {
			return []*interp.Var{emit(prims.Div, nil, full, ex, back(s))}
		}
		return []*interp.Var{emit(prims.Sub, nil, full, d, back(emit(prims.Log, nil, rows, s)))}
	}
	n := perRow(float64(shape[r-1]))
	d := x
	if e.Prim == prims.LayerNorm {
		m := emit(prims.Div, nil, rows, emit(prims.ReduceSum, axes, rows, x), n)
		d = emit(prims.Sub, nil, full, x, back(m))
	}
	v := emit(prims.Div, nil, rows, emit(prims.ReduceSum, axes, rows, emit(prims.Mul, nil, full, d, d)), n)
	inv := emit(prims.Rsqrt, nil, rows, emit(prims.Add, nil, rows, v, perRow(e.Params.(prims.NormParams).Eps)))
	return []*interp.Var{emit(prims.Mul, nil, full, d, back(inv)), inv}
}

// scalar is a concrete scalar of float dtype dt holding v (rounded to
// dt), on the default backend.
func scalar(dt interp.DType, v float64) *interp.Tensor {
	be := interp.DefaultBackend()
	var host any = []float64{v}
	if dt == backend.Float32 {
		host = []float32{float32(v)}
	}
	return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(host), Shape: []int{}})
}
