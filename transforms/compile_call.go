package transforms

import (
	"strconv"
	"sync/atomic"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/batching"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/internal/lru"
	"github.com/peel-ml/peel/interp"
)

// A compiled function is a primitive to the interpreters above it:
// compiled_call, a composite (Whole) whose parameters are one traced and
// optimized graph and its program. Eval runs the program; vmap binds the
// call of a batched program, traced and compiled once per batch layout;
// autodiff treats it as it treats a user-defined op (transforms/
// composite.go): the primal is the call itself, so the compiled forward
// runs, and the tangent is composite_lin, whose JVP and VJP are those of
// the graph, staged and compiled once per program. Staging records it as
// one equation, so a compiled function inside another stays one call.

// callParams are compiled_call's parameters.
type callParams struct {
	id    int64
	name  string
	graph *interp.Graph
	prog  program
	// batched caches the batched programs by layout.
	batched lru.Cache[string, *callParams]
}

// HasEffect reports whether the compiled graph acts outside its results
// (interp.Effectful).
func (c *callParams) HasEffect() bool { return c.graph.HasEffect() }

var callIDs atomic.Int64

// newCallParams prepares g's program, unless a constant is a tracer (of
// an enclosing transform): that graph is only ever evaluated with Bind.
func newCallParams(name string, g *interp.Graph) *callParams { return newCallParamsOn(name, g, nil) }

// newCallParamsOn is newCallParams for a program on backend be (the
// backend of g's constants, else the default, when nil).
func newCallParamsOn(name string, g *interp.Graph, be backend.Backend) *callParams {
	c := &callParams{id: callIDs.Add(1), name: name, graph: g}
	for _, v := range g.ConstVals {
		if !v.IsConcrete() {
			return c
		}
	}
	c.prog = buildProgramOn(g, be)
	return c
}

func (c *callParams) String() string { return c.name + "#" + strconv.FormatInt(c.id, 10) }

// RuleKey identifies the program for the cache of compiled derivative
// rules of composites (autodiff.RuleKeyer).
func (c *callParams) RuleKey() string { return "compiled#" + strconv.FormatInt(c.id, 10) }

var compiledCall = func() *interp.Prim {
	p := graphio.ParamsWith[*callParams](interp.NewPrim("compiled_call", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
		g := params.(*callParams).graph
		checkOperands("compiled_call", g, in)
		out := make([]interp.Aval, len(g.Out))
		for i, v := range g.Out {
			out[i] = v.Aval
		}
		return out
	}), encodeCall, decodeCall)
	p.Whole = true
	p.Impl = func(params any, args []*tensor) []*tensor {
		c := params.(*callParams)
		defer interp.Decomposing(c.name)
		return c.graph.Eval(args...)
	}
	p.EvalImpl = func(params any, args []*tensor) []*tensor {
		c := params.(*callParams)
		if c.prog == nil {
			return c.graph.Eval(args...)
		}
		return c.prog.Run(args, nil)
	}
	return p
}()

func init() {
	batching.RegisterNamed(compiledCall, func(axis string, size int, params any, vals []*tensor, dims []int) ([]*tensor, []int) {
		c := params.(*callParams)
		bp := batchedParams(&c.batched, "compile", lanes{size, axis}, vals, dims, func(xs []*tensor) []*tensor { return c.graph.Eval(xs...) },
			func(g *interp.Graph) *callParams { return newCallParams(c.name, optimize(g)) })
		outs := interp.Bind(compiledCall, bp, vals...)
		return outs, make([]int, len(outs))
	})
}
