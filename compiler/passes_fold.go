package compiler

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// MaxFoldElements is the largest result, in elements summed over an
// equation's results, that FoldConstants computes at compile time; a
// larger one (a scalar broadcast to a large shape, an iota over a large
// range) stays an equation, so the graph does not hold it in memory.
const MaxFoldElements = 1 << 16

// FoldConstants evaluates, at compile time, every equation whose inputs
// are all constants of the graph (or that has no inputs, such as iota)
// and whose results hold at most MaxFoldElements elements: its results
// become constants (a uniform result as a broadcast of one value, see
// SplatConstants). Broadcasts of one-element constants stay (fused code
// reads them as one value). Folding proceeds in order, so chains of such
// equations fold entirely. Equations are evaluated with interp.Bind on
// the constants' values, so a folded constant is exactly what evaluating
// the graph computes. Mutation equations, primitives that refuse
// evaluation (Prim.NoEval) or act outside their results (Prim.Effect), equations that read or define a value
// written in place, and equations whose evaluation fails are left as
// they are. Random numbers are computed from explicit keys, so a draw is
// folded only when its keys are themselves constants.
func FoldConstants(g *interp.Graph) *interp.Graph {
	constVal := make(map[*interp.Var]*interp.Tensor, len(g.Consts))
	for i, c := range g.Consts {
		constVal[c] = g.ConstVals[i]
	}
	mut := mutated(g)
	out := &interp.Graph{In: g.In, Out: g.Out, Consts: g.Consts, ConstVals: g.ConstVals}
	folded := false
	for _, e := range g.Eqns {
		if vals := foldEqn(e, constVal, mut); vals != nil {
			if !folded {
				out.Consts = append([]*interp.Var(nil), g.Consts...)
				out.ConstVals = append([]*interp.Tensor(nil), g.ConstVals...)
				folded = true
			}
			for i, v := range e.Out {
				constVal[v] = vals[i]
				out.Consts = append(out.Consts, v)
				out.ConstVals = append(out.ConstVals, vals[i])
			}
			continue
		}
		out.Eqns = append(out.Eqns, e)
	}
	if !folded {
		return g
	}
	// Folded results whose elements are all equal are kept as broadcasts
	// of one value, the form SplatConstants gives captured ones, so that
	// CSE sees them as equal to the same value's other broadcasts and a
	// second run of the pipeline changes nothing.
	return SplatConstants(out.DCE())
}

// foldEqn returns e's results computed from the constants' values, or
// nil when e is not folded.
func foldEqn(e *interp.Eqn, constVal map[*interp.Var]*interp.Tensor, mut map[*interp.Var]bool) (vals []*interp.Tensor) {
	if e.Prim.Kind == interp.Mutation || e.Prim.NoEval != "" || e.HasEffect() || touches(e, mut) {
		return nil
	}
	if e.Prim == prims.BroadcastInDim && e.In[0].Aval.Size() == 1 {
		return nil
	}
	n := 0
	for _, v := range e.Out {
		n += v.Aval.Size()
		if n > MaxFoldElements {
			return nil
		}
	}
	args := make([]*interp.Tensor, len(e.In))
	for i, v := range e.In {
		c, ok := constVal[v]
		if !ok {
			return nil
		}
		// A snapshot, as Graph.Eval passes constants: the evaluation may
		// not change the graph's values.
		args[i] = interp.Snapshot(c)
	}
	defer func() {
		if recover() != nil {
			vals = nil
		}
	}()
	res := interp.Bind(e.Prim, e.Params, args...)
	if len(res) != len(e.Out) {
		return nil
	}
	for i, r := range res {
		if r == nil || !r.IsConcrete() || !interp.AvalOf(r).Equal(e.Out[i].Aval) {
			return nil
		}
	}
	return res
}
