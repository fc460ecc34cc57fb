package transforms

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// The MinCut policy: AOTAutograd's partitioner on J's known equations.
// The backward pass reads some known values (the required ones: operands
// of the unknown equations). Saving a value costs its bytes; the
// arguments and J's constants cost nothing (they are held anyway). A
// value not saved is recomputed from its operands, which must then be
// saved or recomputed in turn, and only cheap equations (elementwise,
// shape, the reductions the compiler fuses) may be recomputed. The
// cheapest set to save is a minimum vertex cut between what is free and
// what is required, found as a maximum flow on the split graph: each
// value v is an edge in(v) → out(v) of capacity its bytes, each
// equation's operand u an edge out(u) → in(v) of infinite capacity, the
// source feeds out(v) of free values and in(v) of values that cannot be
// recomputed, and out(v) of required values feeds the sink.

// recomputable reports whether the backward pass may recompute an
// equation of p: one that costs a pass over memory and fuses with its
// neighbours, not a matrix product, a random draw or an indexing op.
func recomputable(p *interp.Prim) bool {
	if p.Elementwise != nil || p.Kind == interp.ViewKind || p == namePrim {
		return true
	}
	switch p {
	case prims.BroadcastInDim, prims.Reshape, prims.Transpose, prims.ConvertElementType,
		prims.ReduceSum, prims.ReduceMax, prims.Where:
		return true
	}
	return false
}

// minCut returns the known vars of J (n primal inputs, nOut primal
// results; known and producer as in newPlan) to save.
func minCut(j *interp.Graph, n, nOut int, known []bool, producer map[*interp.Var]int) map[*interp.Var]bool {
	// The vars involved: those required and their known ancestors.
	free := make(map[*interp.Var]bool, n+len(j.Consts))
	for _, v := range j.In[:n] {
		free[v] = true
	}
	for _, v := range j.Consts {
		free[v] = true
	}
	index := make(map[*interp.Var]int)
	var vars []*interp.Var
	var visit func(v *interp.Var)
	visit = func(v *interp.Var) {
		if _, ok := index[v]; ok {
			return
		}
		k, produced := producer[v]
		if produced && !known[k] {
			return
		}
		if !produced && !free[v] {
			return // a tangent input
		}
		index[v] = len(vars)
		vars = append(vars, v)
		if produced {
			for _, u := range j.Eqns[k].In {
				visit(u)
			}
		}
	}
	var required []*interp.Var
	backwardReads(j, nOut, known, func(v *interp.Var) {
		visit(v)
		if _, ok := index[v]; ok {
			required = append(required, v)
		}
	})
	// The split graph: in(v) = 2i, out(v) = 2i+1, then source and sink.
	f := newFlow(2*len(vars) + 2)
	src, sink := 2*len(vars), 2*len(vars)+1
	for i, v := range vars {
		in, out := 2*i, 2*i+1
		if free[v] {
			// Available in the backward pass at no cost.
			f.edge(src, in, infCap)
			f.edge(in, out, 0)
			continue
		}
		f.edge(in, out, avalBytes(v.Aval))
		e := j.Eqns[producer[v]]
		if !recomputable(e.Prim) || e.Prim.Kind == interp.Mutation {
			f.edge(src, in, infCap)
			continue
		}
		for _, u := range e.In {
			if k, ok := index[u]; ok {
				f.edge(2*k+1, in, infCap)
			}
		}
	}
	for _, v := range required {
		f.edge(2*index[v]+1, sink, infCap)
	}
	f.maxFlow(src, sink)
	reach := f.reachable(src)
	save := make(map[*interp.Var]bool)
	for i, v := range vars {
		if !free[v] && reach[2*i] && !reach[2*i+1] {
			save[v] = true
		}
	}
	return save
}

const infCap = int64(1) << 62

// flow is a flow network for Dinic's maximum-flow algorithm: edges are
// stored in pairs (an edge and its reverse, index^1).
type flow struct {
	head       [][]int
	to         []int
	cap        []int64
	level, cur []int
}

func newFlow(n int) *flow { return &flow{head: make([][]int, n)} }

func (f *flow) edge(a, b int, c int64) {
	f.head[a] = append(f.head[a], len(f.to))
	f.to, f.cap = append(f.to, b), append(f.cap, c)
	f.head[b] = append(f.head[b], len(f.to))
	f.to, f.cap = append(f.to, a), append(f.cap, 0)
}

// bfs levels the residual graph from s and reports whether t is reached.
func (f *flow) bfs(s, t int) bool {
	f.level = make([]int, len(f.head))
	for i := range f.level {
		f.level[i] = -1
	}
	f.level[s] = 0
	queue := []int{s}
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		for _, e := range f.head[a] {
			if b := f.to[e]; f.cap[e] > 0 && f.level[b] < 0 {
				f.level[b] = f.level[a] + 1
				queue = append(queue, b)
			}
		}
	}
	return f.level[t] >= 0
}

// push sends up to c units from a toward t along level-increasing edges.
func (f *flow) push(a, t int, c int64) int64 {
	if a == t {
		return c
	}
	for ; f.cur[a] < len(f.head[a]); f.cur[a]++ {
		e := f.head[a][f.cur[a]]
		b := f.to[e]
		if f.cap[e] <= 0 || f.level[b] != f.level[a]+1 {
			continue
		}
		if d := f.push(b, t, min(c, f.cap[e])); d > 0 {
			f.cap[e] -= d
			f.cap[e^1] += d
			return d
		}
	}
	return 0
}

// maxFlow saturates the network from s to t.
func (f *flow) maxFlow(s, t int) int64 {
	var total int64
	for f.bfs(s, t) {
		f.cur = make([]int, len(f.head))
		for {
			d := f.push(s, t, infCap)
			if d == 0 {
				break
			}
			total += d
		}
	}
	return total
}

// reachable marks the nodes reachable from s in the residual graph: the
// source side of the minimum cut.
func (f *flow) reachable(s int) []bool {
	seen := make([]bool, len(f.head))
	seen[s] = true
	stack := []int{s}
	for len(stack) > 0 {
		a := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range f.head[a] {
			if b := f.to[e]; f.cap[e] > 0 && !seen[b] {
				seen[b] = true
				stack = append(stack, b)
			}
		}
	}
	return seen
}
