package transforms

import (
	"strconv"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// linearized is the result of linearizing a function at a point: the
// primal outputs, computed eagerly, and the tangent map as a linear graph
// from input tangents to output tangents.
type linearized struct {
	outs []*tensor
	g    *interp.Graph
	in   []interp.Aval // input tangent types
	// zeroOut marks outputs whose tangent is identically zero.
	zeroOut []bool
}

// linearizeFlat linearizes f at primals. A staging level is entered
// first and a forward-mode level inside it; the input tangents are the
// staging level's inputs, so every tangent operation is recorded while
// every primal operation (which involves no staging tracer) runs eagerly.
// Only float inputs get tangents.
func linearizeFlat(name string, f func([]*tensor) []*tensor, primals []*tensor) *linearized {
	lin := &linearized{in: make([]interp.Aval, len(primals))}
	for i, p := range primals {
		lin.in[i] = p.Aval()
	}
	lin.g = interp.TraceAvals(name, func(tin []*tensor) []*tensor {
		tangents := make([]*tensor, len(tin))
		for i, t := range tin {
			if primals[i].DType().IsFloat() {
				tangents[i] = t
			}
		}
		outs, touts := jvpFlat(name, f, primals, tangents)
		lin.outs = outs
		lin.zeroOut = make([]bool, len(outs))
		res := make([]*tensor, len(outs))
		for i, t := range touts {
			if t == nil {
				lin.zeroOut[i] = true
				t = zeros(outs[i].Aval())
			}
			res[i] = t
		}
		return res
	}, lin.in)
	return lin
}

// release gives up the linear graph's hold on the memory of the values
// it saved (interp.Graph.ReleaseConstants): called when the graph is no
// longer needed, so a later in-place write into a captured tensor (an
// optimizer step) copies nothing.
func (l *linearized) release() { l.g.ReleaseConstants() }

// apply evaluates the tangent map (forward).
func (l *linearized) apply(tangents []*tensor) []*tensor {
	return l.g.Eval(tangents...)
}

// transpose runs the linear graph backward: given output cotangents (nil
// for zero) it returns input cotangents (nil for zero). Each equation's
// transpose rule is applied with Bind, so the backward pass is itself
// transformable.
func (l *linearized) transpose(cts []*tensor) []*tensor {
	return transposeGraph(l.g, cts)
}

// transposeGraph transposes a graph that is linear in its inputs. Vars
// are indexed by ID (dense within a graph) rather than hashed.
func transposeGraph(g *interp.Graph, cts []*tensor) []*tensor {
	n := g.IDBound()
	linear := make([]bool, n)
	env := make([]*tensor, n)
	ct := make([]*tensor, n)
	for _, v := range g.In {
		linear[v.ID] = true
	}
	for i, v := range g.Consts {
		env[v.ID] = g.ConstVals[i]
	}
	// The linear vars, from the structure alone; then when each value
	// computed here is last read: by the non-linear equations of the
	// forward sweep (lastFwd) and by the transpose rules of the backward
	// sweep (firstLin, the smallest index: that sweep runs backward).
	eqLinear := make([]bool, len(g.Eqns))
	for k, e := range g.Eqns {
		for _, v := range e.In {
			if linear[v.ID] {
				eqLinear[k] = true
			}
		}
		if eqLinear[k] {
			for _, v := range e.Out {
				linear[v.ID] = true
			}
		}
	}
	lastFwd, firstLin := make([]int32, n), make([]int32, n)
	for i := range firstLin {
		lastFwd[i], firstLin[i] = -1, -1
	}
	for k, e := range g.Eqns {
		for _, v := range e.In {
			switch {
			case linear[v.ID]:
			case eqLinear[k]:
				if firstLin[v.ID] < 0 {
					firstLin[v.ID] = int32(k)
				}
			default:
				lastFwd[v.ID] = int32(k)
			}
		}
	}
	// Forward: evaluate the non-linear equations (a checkpoint's
	// recomputation), dropping each value once neither sweep reads it.
	for k, e := range g.Eqns {
		if eqLinear[k] {
			continue
		}
		in := make([]*tensor, len(e.In))
		for i, v := range e.In {
			in[i] = env[v.ID]
		}
		outs := interp.Bind(e.Prim, e.Params, in...)
		for i, v := range e.Out {
			env[v.ID] = outs[i]
		}
		for _, v := range e.In {
			if lastFwd[v.ID] == int32(k) && firstLin[v.ID] < 0 {
				env[v.ID] = nil
			}
		}
	}
	accum := func(v *interp.Var, c *tensor) {
		if c == nil {
			return
		}
		if old := ct[v.ID]; old != nil {
			c = interp.Bind1(prims.Add, nil, old, c)
		}
		ct[v.ID] = c
	}
	for i, v := range g.Out {
		if linear[v.ID] {
			accum(v, cts[i])
		}
	}
	var args []*tensor
	var lin []bool
	var outCts []*tensor
	for k := len(g.Eqns) - 1; k >= 0; k-- {
		if !eqLinear[k] {
			continue
		}
		e := g.Eqns[k]
		outCts = outCts[:0]
		anyCt := false
		for _, v := range e.Out {
			outCts = append(outCts, ct[v.ID])
			anyCt = anyCt || ct[v.ID] != nil
			ct[v.ID] = nil
		}
		if !anyCt {
			continue
		}
		if e.Prim.Transpose == nil {
			panic(&interp.Error{Prim: e.Prim.Name, Msg: "no transpose rule: reverse-mode differentiation through this primitive is not supported"})
		}
		args, lin = args[:0], lin[:0]
		for i, v := range e.In {
			if linear[v.ID] {
				if !prims.LinearIn(e.Prim, i) {
					panic(&interp.Error{Prim: e.Prim.Name, Msg: "operand " + strconv.Itoa(i) + " depends on a tangent but the primitive is not linear in it: a JVP rule is not linear in its tangents"})
				}
				args = append(args, placeholder(v))
				lin = append(lin, true)
			} else {
				args = append(args, env[v.ID])
				lin = append(lin, false)
			}
		}
		inCts := e.Prim.Transpose(e.Params, outCts, args, lin)
		for i, v := range e.In {
			if lin[i] && i < len(inCts) {
				accum(v, inCts[i])
			}
		}
		for i, v := range e.In {
			if !lin[i] && firstLin[v.ID] == int32(k) {
				args[i] = nil
				env[v.ID] = nil // its last reader in this sweep
			}
		}
	}
	res := make([]*tensor, len(g.In))
	for i, v := range g.In {
		res[i] = ct[v.ID]
	}
	return res
}

// placeholder stands for a linear operand in a transpose rule: its shape
// and dtype only (see the transpose contract in prims/helpers.go).
func placeholder(v *interp.Var) *tensor { return interp.Placeholder(v.Aval) }
