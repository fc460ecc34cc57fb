package interp

import (
	"runtime"

	"github.com/peel-ml/peel/backend"
	pool "github.com/peel-ml/peel/internal/workers"
)

// Compiled is a graph prepared for repeated evaluation. A graph whose
// equations are all elementwise over one shape (the backward pass of an
// elementwise composite, for example) runs block by block on concrete
// operands: every equation's kernel is applied to a cache-sized block of
// the operands before the next block is read, intermediates live in
// per-worker block buffers that are reused, and blocks are spread over
// the backend's threads. Memory traffic drops from one pass over the
// data per equation to one pass in all. Any other graph, or operands
// that are tracers, are evaluated with Graph.Eval (equation by equation
// with Bind), so a Compiled graph is as transformable as its Graph.
type Compiled struct {
	g *Graph
	// fused: every equation is elementwise over shape, of size n.
	fused bool
	shape []int
	n     int
	// ids is g.IDBound(), computed once.
	ids int
}

// fuseBlock is the number of elements per block: small enough that a
// few dozen intermediates of one block stay in a core's L2 cache, large
// enough that per-block dispatch is negligible.
const fuseBlock = 4096

// fuseMin is the smallest array for which the blocked evaluation pays.
const fuseMin = 4 * fuseBlock

// Compile prepares g for repeated evaluation (see Compiled).
func (g *Graph) Compile() *Compiled {
	c := &Compiled{g: g, ids: g.IDBound()}
	if len(g.Eqns) == 0 || len(g.Out) == 0 {
		return c
	}
	shape := g.Out[0].Aval.Shape
	same := func(vs []*Var) bool {
		for _, v := range vs {
			if !ShapeEqual(v.Aval.Shape, shape) {
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

// Graph returns the compiled graph.
func (c *Compiled) Graph() *Graph { return c.g }

// Eval evaluates the graph on args, blocked when it can (see Compiled),
// else with Graph.Eval. It panics with *Error as Graph.Eval does.
func (c *Compiled) Eval(args ...*Tensor) []*Tensor {
	be, ok := c.blockable(args)
	if !ok {
		return c.g.Eval(args...)
	}
	return c.run(be, args)
}

// blockable reports whether args are concrete operands of the graph's
// types on one backend, as are the constants, and the backend has a
// kernel for every equation.
func (c *Compiled) blockable(args []*Tensor) (backend.Backend, bool) {
	if !c.fused || len(args) != len(c.g.In) {
		return nil, false
	}
	var be backend.Backend
	check := func(t *Tensor, v *Var) bool {
		if t == nil || t.tr != nil || (t.view != nil && t.view.Base.tr != nil) || !t.Aval().Equal(v.Aval) {
			return false
		}
		if be == nil {
			be = t.be
		}
		return t.be == be
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
func blockArray(be backend.Backend, t *Tensor) backend.Array {
	a := t.array()
	if a.IsContiguous() || a.IsSplat() {
		return a
	}
	return Contiguous(t).array()
}

// cut returns elements [lo, lo+m) of whole array a (contiguous or splat)
// as a one-dimensional array.
func cut(a backend.Array, lo int, shape []int) backend.Array {
	if a.Strides != nil && a.IsSplat() && a.Size() > 1 {
		return backend.Array{Buf: a.Buf, Shape: shape, Strides: zeroStride, Offset: a.Offset}
	}
	return backend.Array{Buf: a.Buf, Shape: shape, Offset: a.Offset + lo}
}

var zeroStride = []int{0}

// run evaluates the fused graph block by block.
func (c *Compiled) run(be backend.Backend, args []*Tensor) []*Tensor {
	g := c.g
	maxID := c.ids - 1
	// whole[id] is the whole array of an input, constant or output var;
	// scratch[id] marks the equation results that only live in blocks.
	whole := make([]backend.Array, maxID+1)
	has := make([]bool, maxID+1)
	for i, v := range g.In {
		whole[v.ID], has[v.ID] = blockArray(be, args[i]), true
	}
	for i, v := range g.Consts {
		whole[v.ID], has[v.ID] = blockArray(be, g.ConstVals[i]), true
	}
	res := make([]*Tensor, len(g.Out))
	for i, v := range g.Out {
		if !has[v.ID] {
			whole[v.ID], has[v.ID] = backend.Array{Buf: be.Alloc(v.Aval.DType, c.n), Shape: c.shape}, true
		}
		res[i] = concreteTensor(be, backend.Array{Buf: whole[v.ID].Buf, Shape: c.shape, Offset: whole[v.ID].Offset, Strides: whole[v.ID].Strides})
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
				res[j] = k.Snapshot()
			}
		}
	}
	blocks := (c.n + fuseBlock - 1) / fuseBlock
	workers := min(threadsOf(be), blocks)
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
			arr := func(v *Var) backend.Array {
				if has[v.ID] {
					return cut(whole[v.ID], lo, shape)
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
	return res
}

// threadsOf returns how many goroutines a backend's kernels use: its
// Threads method if it has one, else GOMAXPROCS.
func threadsOf(be backend.Backend) int {
	if t, ok := be.(interface{ Threads() int }); ok {
		return max(1, t.Threads())
	}
	return runtime.GOMAXPROCS(0)
}
