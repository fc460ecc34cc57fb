package transforms

import (
	"cmp"
	"slices"
	"strings"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// The MemoryBudget policy. The candidates to save are the known values
// the backward pass reads (required, as for MinCut) and their known
// ancestors that no cheap recomputation makes (matrix products,
// convolutions, random draws: not recomputable). The cost of a choice is
// the arithmetic (eqnFLOPs) of the equations the backward pass then
// recomputes: those on a path from a required value back to a saved or
// free one. Greedily, the candidate that lowers that cost most per byte
// and fits is saved, until none does; then the saved values the others
// have made unreachable are dropped, giving their bytes back, and the
// greedy step runs again. A budget of zero saves nothing; one holding
// every required value saves them and recomputes nothing. On graphs too large for the
// greedy step's cost (candidates² × equations past budgetWork) the
// candidates go by their own equation's arithmetic per byte instead.

// budgetWork bounds the greedy step's work.
const budgetWork = 1 << 25

// budgetCut returns the known vars of J (n primal inputs, nOut primal
// results; known and producer as in newPlan) to save within budget
// bytes.
func budgetCut(j *interp.Graph, n, nOut int, known []bool, producer map[*interp.Var]int, budget int64) map[*interp.Var]bool {
	free := make(map[*interp.Var]bool, n+len(j.Consts))
	for _, v := range j.In[:n] {
		free[v] = true
	}
	for _, v := range j.Consts {
		free[v] = true
	}
	// produced reports a var a known equation computes (not free).
	produced := func(v *interp.Var) bool {
		k, ok := producer[v]
		return ok && known[k] && !free[v]
	}
	var required []*interp.Var
	isRequired := make(map[*interp.Var]bool)
	backwardReads(j, nOut, known, func(v *interp.Var) {
		if produced(v) && !isRequired[v] {
			isRequired[v] = true
			required = append(required, v)
		}
	})
	// Room for every value the backward pass reads: save them, and
	// recompute nothing.
	var all int64
	for _, v := range required {
		all += avalBytes(v.Aval)
	}
	if all <= budget {
		cut := make(map[*interp.Var]bool, len(required))
		for _, v := range required {
			cut[v] = true
		}
		return cut
	}
	var cands []*interp.Var
	seen := make(map[*interp.Var]bool)
	var visit func(v *interp.Var)
	visit = func(v *interp.Var) {
		if seen[v] || !produced(v) {
			return
		}
		seen[v] = true
		e := j.Eqns[producer[v]]
		if isRequired[v] || !recomputable(e.Prim) {
			cands = append(cands, v)
		}
		for _, u := range e.In {
			visit(u)
		}
	}
	for _, v := range required {
		visit(v)
	}
	flops := func(v *interp.Var) int64 { return eqnFLOPs(j.Eqns[producer[v]]) }
	saved := make(map[*interp.Var]bool)
	// walk visits the equations the backward pass recomputes with saved
	// as chosen, calling reach on each var it needs; it returns their
	// arithmetic.
	walk := func(reach func(v *interp.Var)) int64 {
		done := make(map[int]bool)
		var total int64
		var need func(v *interp.Var)
		need = func(v *interp.Var) {
			if reach != nil {
				reach(v)
			}
			if saved[v] || !produced(v) {
				return
			}
			k := producer[v]
			if done[k] {
				return
			}
			done[k] = true
			total += eqnFLOPs(j.Eqns[k])
			for _, u := range j.Eqns[k].In {
				need(u)
			}
		}
		for _, v := range required {
			need(v)
		}
		return total
	}
	left := budget
	greedy := len(cands)*len(cands)*max(1, len(j.Eqns)) <= budgetWork
	if !greedy {
		// By the candidate's own arithmetic per byte.
		slices.SortStableFunc(cands, func(a, b *interp.Var) int {
			wa := float64(flops(a)) / float64(max(1, avalBytes(a.Aval)))
			wb := float64(flops(b)) / float64(max(1, avalBytes(b.Aval)))
			return cmp.Compare(wb, wa)
		})
	}
	for round := 0; round < len(cands)+1; round++ {
		if greedy {
			cur := walk(nil)
			for cur > 0 {
				var best *interp.Var
				var bestGain int64
				bestScore := -1.0
				for _, c := range cands {
					b := avalBytes(c.Aval)
					if saved[c] || b > left {
						continue
					}
					saved[c] = true
					gain := cur - walk(nil)
					delete(saved, c)
					if gain <= 0 {
						continue
					}
					if score := float64(gain) / float64(max(1, b)); score > bestScore {
						best, bestGain, bestScore = c, gain, score
					}
				}
				if best == nil {
					break
				}
				saved[best] = true
				left -= avalBytes(best.Aval)
				cur -= bestGain
			}
		} else {
			for _, c := range cands {
				if b := avalBytes(c.Aval); !saved[c] && b <= left {
					saved[c] = true
					left -= b
				}
			}
		}
		// Drop the saved values nothing reaches any more.
		reached := make(map[*interp.Var]bool)
		walk(func(v *interp.Var) { reached[v] = true })
		dropped := false
		for v := range saved {
			if !reached[v] {
				delete(saved, v)
				left += avalBytes(v.Aval)
				dropped = true
			}
		}
		if !dropped {
			break
		}
	}
	return saved
}

// avalBytes is the memory of a value of type a.
func avalBytes(a interp.Aval) int64 { return int64(a.Size()) * int64(a.DType.Size()) }

// eqnFLOPs estimates the arithmetic of an equation: a matrix product's
// multiply-adds (2 per element of the result and contracted element), a
// convolution's likewise (the kernel's input features and taps), one
// operation per result element for anything else.
func eqnFLOPs(e *interp.Eqn) int64 {
	var out int64
	for _, v := range e.Out {
		out += int64(v.Aval.Size())
	}
	switch e.Prim {
	case prims.DotGeneral:
		p, ok := e.Params.(prims.DotParams)
		if !ok {
			return out
		}
		k := int64(1)
		for _, d := range p.LhsContract {
			k *= int64(e.In[0].Aval.Shape[d])
		}
		return 2 * out * k
	case prims.ConvGeneralDilated:
		// The kernel's elements per output feature: input features of
		// a group times the taps.
		w := e.In[1].Aval.Shape
		k := int64(1)
		for _, d := range w[1:] {
			k *= int64(d)
		}
		return 2 * out * k
	}
	return out
}

// RematStats is what the checkpoints of a reverse-mode gradient trade
// (RematPlan): the bytes of the values their policies save, and the
// values and arithmetic their backward passes recompute instead.
type RematStats struct {
	// SavedBytes is the memory of the values the policies saved (the
	// checkpointed functions' arguments, held anyway, are not counted).
	SavedBytes int64
	// RecomputedBytes and RecomputedFLOPs are the results and the
	// estimated arithmetic of the equations recomputed.
	RecomputedBytes, RecomputedFLOPs int64
	// Recomputed counts those equations.
	Recomputed int
}

// RematPlan returns what the checkpoints (Checkpoint, Remat) of a
// reverse-mode gradient of f at x save and recompute: with
// SavedResiduals and Recomputed, the plan a policy such as MemoryBudget
// chose, in totals. It panics as VJP does.
func RematPlan[A, R any](f func(A) R, x A) RematStats {
	const op = "transforms.RematPlan"
	defer interp.Annotate(op)
	lin := linearizeAt(op, f, x)
	defer lin.Release()
	var st RematStats
	for _, e := range lin.Graph.Eqns {
		p, ok := e.Params.(*ckptLinParams)
		if !ok {
			continue
		}
		for i, t := range p.graph.ConstVals {
			if strings.HasPrefix(p.sources[i], savedByPolicy) {
				st.SavedBytes += avalBytes(interp.AvalOf(t))
			}
		}
		recomputedIn(p.graph, st.addRecomputed)
	}
	return st
}

// addRecomputed counts an equation recomputed.
func (st *RematStats) addRecomputed(e *interp.Eqn) {
	st.Recomputed++
	st.RecomputedFLOPs += eqnFLOPs(e)
	for _, v := range e.Out {
		st.RecomputedBytes += avalBytes(v.Aval)
	}
}

// stats is the plan's RematStats: the values its policy saved, the
// equations its backward pass recomputes.
func (p *ckptPlan) stats() RematStats {
	var st RematStats
	for i, v := range p.consts {
		if strings.HasPrefix(p.sources[i], savedByPolicy) {
			st.SavedBytes += avalBytes(v.Aval)
		}
	}
	for k, e := range p.j.Eqns {
		if p.recompute[k] {
			st.addRecomputed(e)
		}
	}
	return st
}
