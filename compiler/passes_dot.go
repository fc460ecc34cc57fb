package compiler

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// FoldTransposeIntoDot removes transposes around dot_general. A
// transpose of a dot's result (used only there) that swaps the lhs free
// dimensions with the rhs free ones, batch dimensions first and in
// place, is the dot with its operands swapped: per-sample weight
// gradients (outer products under vmap, laid out as the weights) no
// longer pay a copy of the whole result. And a transpose feeding
// dot_general is removed by
// renumbering the dot's dimensions: the dot reads the transpose's
// operand directly, its batch and contracting dimensions mapped through
// the permutation. dot_general takes any dimension numbers, and the CPU
// kernel reads such an operand in place, choosing the GEMM transpose
// flag from its strides, whereas the backend copies a transposed
// (non-contiguous) operand into a contiguous buffer before every call:
// MatMul(x, Transpose(w)) pays no copy of w after the pass (measured:
// BenchmarkFoldTransposeIntoDot). The rewrite applies only when the
// result's layout is kept: the dot orders an operand's free dimensions
// by number, so the permutation must keep the free dimensions in order
// (it may reorder batch and contracting dimensions freely). Chains of
// transposes fold entirely. MatMul(x, Transpose(w)), MatMul(Transpose(x),
// w) and their batched forms with the last two dimensions swapped all
// qualify. Equations that read or define a value written in place are
// left as they are.
//
// Values: integer products, and float products small enough for the
// kernel's plain loop, are bit for bit the same; a float product on the
// GEMM path may round differently (the BLAS accumulates a transposed
// operand in another order), within the GEMM's usual error bound.
func FoldTransposeIntoDot(g *interp.Graph) *interp.Graph {
	b := newBuilder(g)
	uses := useCounts(g)
	for _, e := range g.Eqns {
		e = b.subst(e)
		if e.Prim == prims.Transpose && !touches(e, b.mut) {
			if d := b.producerOf(e.In[0], prims.DotGeneral); d != nil && uses[e.In[0]] == 1 && !touches(d, b.mut) {
				if np, ok := swappedDot(d.Params.(prims.DotParams), e.Params.(prims.TransposeParams).Perm, len(d.In[0].Aval.Shape), len(d.In[1].Aval.Shape)); ok {
					// A transpose that swaps the dot's two groups of free
					// dimensions is the dot with its operands swapped.
					b.changed = true
					b.append(&interp.Eqn{Prim: prims.DotGeneral, Params: np, In: []*interp.Var{d.In[1], d.In[0]}, Out: e.Out})
					continue
				}
			}
		}
		if e.Prim != prims.DotGeneral || touches(e, b.mut) {
			b.append(e)
			continue
		}
		p := e.Params.(prims.DotParams)
		in := e.In
		lhs, lc, lb, okL := foldDotOperand(b, in[0], p.LhsContract, p.LhsBatch)
		rhs, rc, rb, okR := foldDotOperand(b, in[1], p.RhsContract, p.RhsBatch)
		if !okL && !okR {
			b.append(e)
			continue
		}
		b.changed = true
		np := prims.DotParams{LhsContract: lc, RhsContract: rc, LhsBatch: lb, RhsBatch: rb}
		b.append(&interp.Eqn{Prim: prims.DotGeneral, Params: np, In: []*interp.Var{lhs, rhs}, Out: e.Out})
	}
	if !b.changed {
		return g
	}
	return b.graph().DCE()
}

// foldDotOperand returns, for a dot operand v made by a transpose that
// can be folded, the transpose's operand and the contracting and batch
// dimensions renumbered to it; otherwise v and the dimensions as they
// are, and false.
func foldDotOperand(b *Builder, v *interp.Var, contract, batch []int) (*interp.Var, []int, []int, bool) {
	folded := false
	for {
		t := b.producerOf(v, prims.Transpose)
		if t == nil {
			return v, contract, batch, folded
		}
		nc, nb, ok := renumberDot(t.Params.(prims.TransposeParams).Perm, contract, batch)
		if !ok {
			return v, contract, batch, folded
		}
		v, contract, batch, folded = t.In[0], nc, nb, true
	}
}

// renumberDot maps a dot operand's contracting and batch dimensions
// through the transpose that made it (operand dimension i is the
// transpose's operand dimension perm[i]), or reports false when the
// free dimensions, in increasing order, would not stay in increasing
// order.
func renumberDot(perm, contract, batch []int) (nc, nb []int, ok bool) {
	used := make([]bool, len(perm))
	mapDims := func(dims []int) []int {
		out := make([]int, len(dims))
		for i, d := range dims {
			out[i] = perm[d]
			used[d] = true
		}
		return out
	}
	nc, nb = mapDims(contract), mapDims(batch)
	last := -1
	for d, u := range used {
		if u {
			continue
		}
		if perm[d] < last {
			return nil, nil, false
		}
		last = perm[d]
	}
	return nc, nb, true
}

// useCounts counts the equations and outputs reading each var.
func useCounts(g *interp.Graph) map[*interp.Var]int {
	n := map[*interp.Var]int{}
	for _, e := range g.Eqns {
		for _, v := range e.In {
			n[v]++
		}
	}
	for _, v := range g.Out {
		n[v]++
	}
	return n
}

// swappedDot returns the parameters of dot_general(rhs, lhs) when perm,
// applied to the result of dot_general(lhs, rhs) with p (of operand
// ranks lr and rr), keeps the batch dimensions first and in place and
// swaps the groups of lhs and rhs free dimensions, keeping their order.
func swappedDot(p prims.DotParams, perm []int, lr, rr int) (prims.DotParams, bool) {
	nb := len(p.LhsBatch)
	nl := lr - nb - len(p.LhsContract)
	nr := rr - nb - len(p.RhsContract)
	if nl == 0 || nr == 0 || len(perm) != nb+nl+nr {
		return prims.DotParams{}, false
	}
	for i := 0; i < nb; i++ {
		if perm[i] != i {
			return prims.DotParams{}, false
		}
	}
	for i := 0; i < nr; i++ {
		if perm[nb+i] != nb+nl+i {
			return prims.DotParams{}, false
		}
	}
	for i := 0; i < nl; i++ {
		if perm[nb+nr+i] != nb+i {
			return prims.DotParams{}, false
		}
	}
	return prims.DotParams{LhsContract: p.RhsContract, RhsContract: p.LhsContract, LhsBatch: p.RhsBatch, RhsBatch: p.LhsBatch}, true
}
