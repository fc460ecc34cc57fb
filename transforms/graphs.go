package transforms

import (
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/peel-ml/peel/batching"
	"github.com/peel-ml/peel/internal/lru"
	"github.com/peel-ml/peel/interp"
)

// The helpers the higher-order primitives share (cond.go, scan.go,
// while.go, checkpoint.go, custom.go, shardmap.go, compile_call.go), as
// JAX keeps them in control_flow/common.py: the shape rule's check of
// operands against a held graph's inputs, closure conversion of a traced
// body, the avals of a graph's results, a graph evaluated with
// nested checkpoints inlined (a hook of Graph.EvalHook), tangent masks
// as cache keys, the lanes of a vmap level as a body's batching rule
// sees them, and the trees of a call of a user's function. A primitive's
// file uses these and the package's other files, never another
// primitive's file (internal/archtest checks it); the split of a JVP
// graph into what the forward pass computes and what the backward pass
// recomputes, which checkpoint, cond and scan share, is partial_eval.go.

// closureConvert turns g's constants (the tensors f captured) into
// trailing inputs, returned with the tensors to pass for them: a
// transform outside the checkpoint sees the tracers among them as
// operands (their tangents, their batch dimension), and the graph, its
// JVP and their plan depend on no value, so calls of one checkpointed
// function share them.
func closureConvert(g *interp.Graph) (*interp.Graph, []*tensor) {
	if len(g.Consts) == 0 {
		return g, nil
	}
	ng := &interp.Graph{In: append(append([]*interp.Var(nil), g.In...), g.Consts...), Eqns: g.Eqns, Out: g.Out}
	return ng, append([]*tensor(nil), g.ConstVals...)
}

func outAvals(g *interp.Graph) []interp.Aval {
	out := make([]interp.Aval, len(g.Out))
	for i, v := range g.Out {
		out[i] = v.Aval
	}
	return out
}

// evalInlined evaluates g with Bind, as Graph.Eval does (Graph.EvalHook
// with a hook), but runs the checkpoints it holds as their graphs:
// inside a checkpoint being
// differentiated, the outer policy decides for everything (an inner
// checkpoint_lin would hold values of the trace of J). With decompose
// (tracing J) it also runs composites without a JVP rule (user-defined
// ops, compiled calls) as their decompositions: their derivative,
// composite_lin, would hold values of the trace of J as parameters.
func evalInlined(g *interp.Graph, args []*tensor, decompose bool) []*tensor {
	var inline func(p *interp.Prim, params any, in []*tensor) ([]*tensor, bool)
	inline = func(p *interp.Prim, params any, in []*tensor) ([]*tensor, bool) {
		switch {
		case p == checkpointPrim:
			return params.(*ckptParams).graph.EvalHook(inline, in...), true
		case decompose && p.Whole && p.Impl != nil && (p.JVP == nil || p.VJP != nil):
			return p.Impl(params, slices.Clone(in)), true
		}
		return nil, false
	}
	return g.EvalHook(inline, args...)
}

// maskKey is a tangent mask as a cache key.
func maskKey(has []bool) string {
	b := make([]byte, len(has))
	for i, h := range has {
		b[i] = '0'
		if h {
			b[i] = '1'
		}
	}
	return string(b)
}

// spreadFloat stores ts, the tangents of outs's float results in
// order (a linear primitive's results), into touts at those results'
// positions; the others stay nil (no tangent).
func spreadFloat(touts, outs, ts []*tensor) {
	k := 0
	for i, o := range outs {
		if o.DType().IsFloat() {
			touts[i] = ts[k]
			k++
		}
	}
}

func avalsOf(xs []*tensor) []interp.Aval {
	a := make([]interp.Aval, len(xs))
	for i, x := range xs {
		a[i] = interp.AvalOf(x)
	}
	return a
}

// userCall is the state of one call of a user's function that a
// primitive holds (CustomJVP's and CustomVJP's functions, Checkpoint's,
// Cond's branches, loop bodies): the argument's tree definition, and
// those of the result and (CustomVJP) the residuals, recorded when the
// user's functions run (they run inside the primitive's rules, possibly
// at other levels, before the call rebuilds its result).
type userCall struct {
	op     string
	in     *treeDef
	out    *treeDef
	res    *treeDef
	resNil bool // fwd returned a nil residual tree
}

// outLeaves flattens r, the result of the user's function who, recording
// its definition (a nil tensor in it is an empty subtree); a nil tree, or
// a nil tensor as the whole result, is *Error.
func (c *userCall) outLeaves(who string, r any) []*tensor {
	rv := reflect.ValueOf(r)
	switch {
	case !rv.IsValid():
		treeErrorf(c.op, "%s returned nil, not a tree of tensors", who)
	case rv.Type() == tensorType && rv.IsNil():
		treeErrorf(c.op, "%s returned a nil tensor at result path (the root)", who)
	}
	leaves, def := flattenResult(c.op, r)
	c.out = def
	return leaves
}

// result rebuilds the call's result from its leaves.
func result[R any](c *userCall, leaves []*tensor) R {
	if c.out == nil {
		treeErrorf(c.op, "internal error: the result was computed without running the user's function")
	}
	return build[R](c.out, leaves)
}

// vmapped returns fn vectorized over a batch of size with the given
// operand batch dims (batching.NotMapped for unbatched), every result
// batched at 0.
func vmapped(l lanes, dims []int, fn func([]*tensor) []*tensor) func([]*tensor) []*tensor {
	axes := make([]int, len(dims))
	for i, d := range dims {
		axes[i] = d
		if d == batching.NotMapped {
			axes[i] = unmapped
		}
	}
	cfg := &vmapConfig{axisSize: l.size, axisName: l.axis}
	return func(in []*tensor) []*tensor {
		return vmapFlat("transforms.Vmap", cfg, fn, in, append([]int(nil), axes...), func(outs []*tensor) []int {
			return make([]int, len(outs))
		}, nil)
	}
}

// fresh reports whether out[c] is memory of its step alone: it shares
// memory with none of the step's operands in (but the carries given
// up to the step, given, whose memory the step may have reused) and
// other results out.
func fresh(t *tensor, c int, in, out []*tensor, given []bool) bool {
	for j, u := range in {
		if j < len(given) && given[j] {
			continue
		}
		if sharesMemory(u, t) {
			return false
		}
	}
	for j, u := range out {
		if j != c && sharesMemory(u, t) {
			return false
		}
	}
	return true
}

// lanes is a vmap level's batch as the batching rule of a primitive
// holding a body sees it: the batch size and the axis name the level
// binds (""  for none), which the body's own vmap level binds too, so a
// collective in the body sees the same axis.
type lanes struct {
	size int
	axis string
}

// batchedParams is the batching rule of a primitive holding a graph
// (compiled_call, checkpoint): the parameters build makes of fn vmapped
// over vals at dims, traced once per batch size and axis name, dims and
// operand types and cached in cache; the rule binds the primitive again
// with them, its results batched at 0.
func batchedParams[P any](cache *lru.Cache[string, P], name string, l lanes, vals []*tensor, dims []int, fn func([]*tensor) []*tensor, build func(*interp.Graph) P) P {
	var b strings.Builder
	b.WriteString(strconv.Itoa(l.size))
	b.WriteString(strconv.Quote(l.axis))
	avals := make([]interp.Aval, len(vals))
	for i, v := range vals {
		b.WriteByte(',')
		b.WriteString(strconv.Itoa(dims[i]))
		avals[i] = interp.AvalOf(v)
	}
	b.WriteByte(':')
	b.WriteString(interp.AvalsKey(avals))
	key := b.String()
	if p, ok := cache.Load(key); ok {
		return p
	}
	p, _ := cache.LoadOrStore(key, build(interp.TraceAvals(name, vmapped(l, dims, fn), avals)))
	return p
}

// checkOperands panics with *interp.Error unless in are the types of
// g's inputs: the shape rule of a primitive that runs g on its operands.
func checkOperands(name string, g *interp.Graph, in []interp.Aval) {
	if len(in) != len(g.In) {
		panic(interp.Errorf("%s takes %d operands, got %d", name, len(g.In), len(in)))
	}
	for i, v := range g.In {
		if !in[i].Equal(v.Aval) {
			panic(interp.Errorf("%s's operand %d must be %v, got %v", name, i, v.Aval, in[i]))
		}
	}
}
