package autodiff

import (
	"github.com/peel-ml/peel/backend"
	pool "github.com/peel-ml/peel/internal/workers"
	"github.com/peel-ml/peel/interp"
	"runtime"
)

// compiledGraph is a graph prepared for repeated evaluation: the
// compiled rules of composites (see compiledRules). A graph whose
// equations are all elementwise over one shape (the backward pass of an
// elementwise composite, for example) runs block by block on concrete
// operands: every equation's kernel is applied to a cache-sized block of
// the operands before the next block is read, intermediates live in
// per-worker block buffers that are reused, and blocks are spread over
// the backend's threads. Memory traffic drops from one pass over the
// data per equation to one pass in all. Any other graph, or operands
// that are tracers, are evaluated with Graph.Eval (equation by equation
// with Bind), so a compiled graph is as transformable as its Graph.
type compiledGraph struct {
	g *interp.Graph
	// fused: every equation is elementwise over shape, of size n.
	fused bool
	shape []int
	n     int
	// ids is g.IDBound(), computed once.
	ids int
}

// The blocks' size (interp.FuseBlock) and the smallest array for which
// the blocked evaluation pays (interp.FuseMin) are interp's, shared with
// the compiler's fused groups.
const (
	fuseBlock = interp.FuseBlock
	fuseMin   = interp.FuseMin
)

// compileGraph prepares g for repeated evaluation (see compiledGraph).
func compileGraph(g *interp.Graph) *compiledGraph {
	c := &compiledGraph{g: g, ids: g.IDBound()}
	if len(g.Eqns) == 0 || len(g.Out) == 0 {
		return c
	}
	shape := g.Out[0].Aval.Shape
	same := func(vs []*interp.Var) bool {
		for _, v := range vs {
			if !interp.ShapeEqual(v.Aval.Shape, shape) {
				return false
			}
		}
		return true
	}
	if !same(g.In) || !same(g.Consts) || !same(g.Out) {
		return c
	}
	for _, e := range g.Eqns {
		if e.Prim.Elementwise == nil || e.Prim.Impl != nil || len(e.Out) != 1 || !same(e.In) || !same(e.Out) {
			return c
		}
	}
	c.shape, c.n = shape, backend.ShapeSize(shape)
	c.fused = c.n >= fuseMin
	return c
}

// graph returns the compiled graph.
func (c *compiledGraph) graph() *interp.Graph { return c.g }

// Eval evaluates the graph on args, blocked when it can (see
// compiledGraph), else with Graph.Eval. It panics with *interp.Error as
// Graph.Eval does.
func (c *compiledGraph) Eval(args ...*tensor) []*tensor {
	be, ok := c.blockable(args)
	if !ok {
		return c.g.Eval(args...)
	}
	return c.run(be, args)
}

// blockable reports whether args are concrete operands of the graph's
// types on one backend, as are the constants, and the backend has a
// kernel for every equation.
func (c *compiledGraph) blockable(args []*tensor) (backend.Backend, bool) {
	if !c.fused || len(args) != len(c.g.In) {
		return nil, false
	}
	var be backend.Backend
	check := func(t *tensor, v *interp.Var) bool {
		if t == nil || !t.IsConcrete() || (interp.ViewInfo(t) != nil && !interp.ViewInfo(t).Base.IsConcrete()) || !interp.AvalOf(t).Equal(v.Aval) {
			return false
		}
		_, tbe := interp.ArrayOf(t)
		if be == nil {
			be = tbe
		}
		return tbe == be
	}
	for i, a := range args {
		if !check(a, c.g.In[i]) {
			return nil, false
		}
	}
	for i, k := range c.g.ConstVals {
		if !check(k, c.g.Consts[i]) {
			return nil, false
		}
	}
	if be == nil {
		return nil, false
	}
	// A primitive the backend has no kernel for is reported by Graph.Eval.
	for _, e := range c.g.Eqns {
		if !be.Has(e.Prim.Op) {
			return nil, false
		}
	}
	return be, true
}

// blockArray returns the whole-array form a block is cut from: a itself
// when it is contiguous or a broadcast scalar, else a contiguous copy.
func blockArray(t *tensor) backend.Array {
	a, _ := interp.ArrayOf(t)
	if a.IsContiguous() || a.IsSplat() {
		return a
	}
	a, _ = interp.ArrayOf(interp.Contiguous(t))
	return a
}

// run evaluates the fused graph block by block.
func (c *compiledGraph) run(be backend.Backend, args []*tensor) []*tensor {
	g := c.g
	maxID := c.ids - 1
	// whole[id] is the whole array of an input, constant or output var;
	// scratch[id] marks the equation results that only live in blocks.
	whole := make([]backend.Array, maxID+1)
	has := make([]bool, maxID+1)
	for i, v := range g.In {
		whole[v.ID], has[v.ID] = blockArray(args[i]), true
	}
	for i, v := range g.Consts {
		whole[v.ID], has[v.ID] = blockArray(g.ConstVals[i]), true
	}
	res := make([]*tensor, len(g.Out))
	for i, v := range g.Out {
		if !has[v.ID] {
			whole[v.ID], has[v.ID] = backend.Array{Buf: be.Alloc(v.Aval.DType, c.n), Shape: c.shape}, true
		}
		res[i] = interp.NewConcrete(be, backend.Array{Buf: whole[v.ID].Buf, Shape: c.shape, Offset: whole[v.ID].Offset, Strides: whole[v.ID].Strides})
	}
	for i, a := range args {
		for j, v := range g.Out {
			if v == g.In[i] {
				res[j] = a
			}
		}
	}
	for i, k := range g.ConstVals {
		for j, v := range g.Out {
			if v == g.Consts[i] {
				res[j] = interp.Snapshot(k)
			}
		}
	}
	blocks := (c.n + fuseBlock - 1) / fuseBlock
	workers := min(interp.BackendThreads(be), blocks)
	work := func(w int) {
		scratch := make([]backend.Array, maxID+1)
		for _, e := range g.Eqns {
			v := e.Out[0]
			if !has[v.ID] {
				scratch[v.ID] = backend.Array{Buf: be.Alloc(v.Aval.DType, fuseBlock)}
			}
		}
		var inBuf [4]backend.Array
		var outBuf [1]backend.Array
		shapes := [2][]int{{fuseBlock}, {c.n % fuseBlock}}
		for b := w; b < blocks; b += workers {
			lo := b * fuseBlock
			shape := shapes[0]
			if lo+fuseBlock > c.n {
				shape = shapes[1]
			}
			arr := func(v *interp.Var) backend.Array {
				if has[v.ID] {
					return interp.CutBlock(whole[v.ID], lo, shape)
				}
				return backend.Array{Buf: scratch[v.ID].Buf, Shape: shape}
			}
			for _, e := range g.Eqns {
				in := inBuf[:0]
				if len(e.In) > len(inBuf) {
					in = make([]backend.Array, 0, len(e.In))
				}
				for _, v := range e.In {
					in = append(in, arr(v))
				}
				outBuf[0] = arr(e.Out[0])
				be.Exec(e.Prim.Op, e.Params, in, outBuf[:])
			}
		}
	}
	// The pool re-panics a worker's panic here, after every worker ends.
	pool.Run(workers, work)
	// The inputs' arrays (whole) were read until the workers ended.
	runtime.KeepAlive(args)
	return res
}
