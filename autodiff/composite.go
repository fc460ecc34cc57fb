package autodiff

import (
	"strconv"
	"strings"

	"github.com/peel-ml/peel/compiler"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/internal/lru"
	"github.com/peel-ml/peel/interp"
)

// Autodiff of composites (user-defined ops, customop.Define) that have no
// JVP rule, or that have a VJP rule: the primal is computed by binding
// the op itself, so a fused kernel still runs and none of the
// composite's intermediates are computed or saved; the tangent is a
// linear primitive, composite_lin, whose first operands are the op's
// operands and results (residuals: constants of a linear graph, vars of
// a staged one, never parameters, which a trace would record holding
// its own tracers) and whose last operands are the tangents.
// Its forward map is the op's JVP rule or the JVP of the composite, its
// transpose the op's VJP rule or the VJP of the composite recomputed from
// the saved operands. Both are written with Bind (through JVP and
// Linearize), so derivatives of any order follow.

// CompositeParams are composite_lin's parameters: the op, its parameters,
// the number of operands and results of the primal call (composite_lin's
// first operands, then the tangents of the operands in diff, in order),
// and which results are floats (its results are their tangents).
type CompositeParams struct {
	p      *interp.Prim
	params any
	nIn    int
	nOut   int
	diff   []int
	fout   []int
	// primals and outs are the residual operands of one application
	// (set on a copy by the rules, never staged).
	primals []*tensor
	outs    []*tensor
}

// withOperands is c for composite_lin's operands args: the residuals set
// from them, and the tangents returned.
func (c CompositeParams) withOperands(args []*tensor) (CompositeParams, []*tensor) {
	c.primals = args[:c.nIn:c.nIn]
	c.outs = args[c.nIn : c.nIn+c.nOut : c.nIn+c.nOut]
	return c, args[c.nIn+c.nOut:]
}

func (c CompositeParams) String() string { return c.p.Name }

// Prim returns the composite primitive whose tangent this is.
func (c CompositeParams) Prim() *interp.Prim { return c.p }

// NumResiduals returns the number of composite_lin's leading operands
// that are the primal call's operands and results, saved by value: the
// backward pass recomputes the composite from them.
func (c CompositeParams) NumResiduals() int { return c.nIn + c.nOut }

// RuleKeyer is implemented by the parameters of a composite primitive
// whose value names its derivative rules (a compiled program): the
// staged and compiled JVP and VJP of such a composite are cached under
// the key, as those of a parameterless composite are. Composites with
// other parameters are differentiated without the cache.
type RuleKeyer interface {
	RuleKey() string
}

// CompositeLin is composite_lin, the linear primitive that is the tangent
// of a composite differentiated as a whole (see the package
// documentation); its parameters are CompositeParams.
var CompositeLin = newCompositeLin()

func newCompositeLin() *interp.Prim {
	p := graphio.ParamsWith[CompositeParams](interp.NewPrim("composite_lin", interp.Pure, func(params any, in []interp.Aval) []interp.Aval {
		c := params.(CompositeParams)
		if len(in) != c.nIn+c.nOut+len(c.diff) {
			panic(&interp.Error{Prim: "composite_lin", Msg: "takes " + strconv.Itoa(c.nIn+c.nOut+len(c.diff)) + " operands, got " + strconv.Itoa(len(in))})
		}
		for k, i := range c.diff {
			if t := in[c.nIn+c.nOut+k]; !t.Equal(in[i]) {
				panic(&interp.Error{Prim: "composite_lin", Msg: "the tangent of operand " + strconv.Itoa(i) + " is " + t.String() + ", the operand " + in[i].String()})
			}
		}
		out := make([]interp.Aval, len(c.fout))
		for k, i := range c.fout {
			out[k] = in[c.nIn+i]
		}
		return out
	}), encodeCompositeLin, decodeCompositeLin)
	// Linear in the tangents; the residuals are never tangents (they are
	// constants of a linear graph: the transpose gives them none).
	p.Linear = []bool{true}
	p.Whole = true // staged as one equation: linearize must not decompose it
	p.Impl = func(params any, args []*tensor) []*tensor {
		c, tangents := params.(CompositeParams).withOperands(args)
		defer interp.Decomposing(c.p.Name)
		if c.p.JVP != nil {
			full := make([]*tensor, len(c.primals))
			for k, i := range c.diff {
				full[i] = tangents[k]
			}
			_, touts := c.p.JVP(c.params, c.primals, full)
			res := make([]*tensor, len(c.fout))
			for k, i := range c.fout {
				res[k] = ZerosIfNil(touts[i], interp.AvalOf(c.outs[i]))
			}
			return res
		}
		if jg := c.compiledJVP(); jg != nil {
			return jg.Eval(append(append([]*tensor(nil), c.primals...), tangents...)...)
		}
		return c.jvp(c.primals, tangents)
	}
	p.Transpose = func(params any, cts []*tensor, args []*tensor, linear []bool) []*tensor {
		c, _ := params.(CompositeParams).withOperands(args)
		defer interp.Decomposing(c.p.Name)
		for i := range c.nIn + c.nOut {
			if linear[i] {
				panic(&interp.Error{Prim: "composite_lin", Msg: "a residual operand (the primal call's operand or result) is linear"})
			}
		}
		res := make([]*tensor, len(args))
		linear = linear[c.nIn+c.nOut:]
		lres := res[c.nIn+c.nOut:]
		full := make([]*tensor, len(c.outs))
		any := false
		for k, i := range c.fout {
			full[i] = cts[k]
			any = any || cts[k] != nil
		}
		if !any {
			return res
		}
		if c.p.VJP != nil {
			for i, ct := range full {
				if ct == nil && c.outs[i].DType().IsFloat() {
					full[i] = ZerosLike(c.outs[i])
				}
			}
			got := c.p.VJP(c.params, c.primals, c.outs, full)
			if len(got) != len(c.primals) {
				panic(&interp.Error{Prim: c.p.Name, Msg: "the VJP rule returned " + strconv.Itoa(len(got)) + " cotangents for " + strconv.Itoa(len(c.primals)) + " operands"})
			}
			for k, i := range c.diff {
				if got[i] != nil && !interp.AvalOf(got[i]).Equal(interp.AvalOf(c.primals[i])) {
					panic(&interp.Error{Prim: c.p.Name, Msg: "the VJP rule's cotangent " + strconv.Itoa(i) + " is " + got[i].TypeString() + ", but the operand is " + c.primals[i].TypeString()})
				}
				if linear[k] {
					lres[k] = got[i]
				}
			}
			return res
		}
		var got []*tensor
		if vg := c.compiledVJP(); vg != nil {
			in := append([]*tensor(nil), c.primals...)
			for k, i := range c.fout {
				in = append(in, ZerosIfNil(cts[k], interp.AvalOf(c.outs[i])))
			}
			got = vg.Eval(in...)
		} else {
			got = c.vjp(c.primals, cts)
		}
		for k := range c.diff {
			if linear[k] {
				lres[k] = got[k]
			}
		}
		return res
	}
	return p
}

// vjp is the VJP of the composite at primals (restricted to the operands
// with tangents) applied to the cotangents of the float results: the
// composite is linearized (recomputing its primal values) and the
// linear graph transposed.
func (c CompositeParams) vjp(primals, cts []*tensor) []*tensor {
	c.primals = primals
	lin := Linearize("vjp", c.restricted(), c.diffPrimals())
	defer lin.Release()
	cfull := make([]*tensor, len(lin.Outs))
	for k, i := range c.fout {
		cfull[i] = cts[k]
	}
	return lin.Transpose(cfull)
}

// compiledRule is a composite's rule staged into a graph and built into a
// compiler program: on concrete operands on the program's backend it runs
// as the program (fused, planned memory, no tracing); on tracers, or
// operands on another backend, it is evaluated with Graph.Eval, so a
// compiled rule is as transformable as its graph.
type compiledRule struct {
	g    *interp.Graph
	prog *compiler.Program
}

// compileRule builds g into a compiled rule.
// A graph the compiler cannot build (its constants are tracers of an
// enclosing trace, or live on different backends) keeps no program and is
// always evaluated with Graph.Eval.
func compileRule(g *interp.Graph) *compiledRule {
	c := &compiledRule{g: g}
	if interp.Catch(func() { c.prog = compiler.Build(g) }) != nil {
		c.prog = nil
	}
	return c
}

// Eval evaluates the rule on args: with its program when they are
// concrete operands of the graph's types on the program's backend, else
// with Graph.Eval. It panics with *interp.Error as Graph.Eval does.
func (c *compiledRule) Eval(args ...*tensor) []*tensor {
	if c.prog == nil || !c.runnable(args) {
		return c.g.Eval(args...)
	}
	return c.prog.Run(args, nil)
}

// runnable reports whether the program can run on args: concrete tensors
// (views of concrete bases) of the graph's input types, on the program's
// backend.
func (c *compiledRule) runnable(args []*tensor) bool {
	if len(args) != len(c.g.In) {
		return false
	}
	be := c.prog.Backend()
	for i, a := range args {
		if a == nil || !a.IsConcrete() || (interp.ViewInfo(a) != nil && !interp.ViewInfo(a).Base.IsConcrete()) || !interp.AvalOf(a).Equal(c.g.In[i].Aval) {
			return false
		}
		if _, abe := interp.ArrayOf(a); abe != be {
			return false
		}
	}
	return true
}

// compiledRules caches, per op, rule and operand types, the composite's
// JVP or VJP staged into a graph and compiled (compiledRule): the tangent
// or backward pass of a user-defined op then runs without tracing, as a
// compiler program with the compiler's fusion and memory planning. A composite that
// cannot be staged (it reads its operands' values) is recorded as such
// and differentiated eagerly. It holds at most maxCompiledRules entries
// (the least recently used are dropped and staged again when needed).
var compiledRules = lru.New[string, *compiledRule](maxCompiledRules)

// maxCompiledRules bounds compiledRules: 1024 compiled rules, a few KB
// each.
const maxCompiledRules = 1024

// compiled returns the cached compiled graph of rule (kind "jvp" or
// "vjp") on arguments of types extra appended to the primals' types, or
// nil.
func (c CompositeParams) compiled(kind string, extra []interp.Aval, rule func(primals, rest []*tensor) []*tensor) *compiledRule {
	var b strings.Builder
	b.WriteString(kind)
	b.WriteString(strconv.Itoa(c.p.ID))
	if c.params != nil {
		// Only parameterless ops (customop.Define) and parameters that
		// name their own rules (a compiled program) are cached.
		k, ok := c.params.(RuleKeyer)
		if !ok {
			return nil
		}
		b.WriteString(k.RuleKey())
	}
	avals := make([]interp.Aval, 0, len(c.primals)+len(extra))
	for _, x := range c.primals {
		avals = append(avals, interp.AvalOf(x))
	}
	avals = append(avals, extra...)
	b.WriteByte(':')
	b.WriteString(interp.AvalsKey(avals))
	for _, i := range c.diff {
		b.WriteByte(',')
		b.WriteString(strconv.Itoa(i))
	}
	key := b.String()
	if v, ok := compiledRules.Load(key); ok {
		return v
	}
	var g *interp.Graph
	np := len(c.primals)
	err := interp.Catch(func() {
		g = interp.TraceAvals(kind+" of "+c.p.Name, func(in []*tensor) []*tensor {
			return rule(in[:np], in[np:])
		}, avals)
	})
	var comp *compiledRule
	if err == nil {
		comp = compileRule(g)
	}
	v, _ := compiledRules.LoadOrStore(key, comp)
	return v
}

// compiledVJP is the compiled VJP of the composite: operands and result
// cotangents in, cotangents of the operands with tangents out.
func (c CompositeParams) compiledVJP() *compiledRule {
	extra := make([]interp.Aval, len(c.fout))
	for k, i := range c.fout {
		extra[k] = interp.AvalOf(c.outs[i])
	}
	return c.compiled("vjp", extra, func(primals, cts []*tensor) []*tensor {
		got := c.vjp(primals, cts)
		out := make([]*tensor, len(c.diff))
		for k, i := range c.diff {
			out[k] = got[k]
			if out[k] == nil {
				out[k] = ZerosLike(primals[i])
			}
		}
		return out
	})
}

// jvp is the JVP of the composite at primals: the tangents of the float
// results from the tangents of the operands in c.diff.
func (c CompositeParams) jvp(primals, tangents []*tensor) []*tensor {
	c.primals = primals
	_, touts := JVP("jvp", c.restricted(), c.diffPrimals(), tangents)
	res := make([]*tensor, len(c.fout))
	for k, i := range c.fout {
		res[k] = touts[i]
		if res[k] == nil {
			res[k] = Zeros(interp.AvalOf(c.outs[i]))
		}
	}
	return res
}

// compiledJVP is the compiled JVP of the composite: operands and the
// tangents of c.diff in, tangents of the float results out.
func (c CompositeParams) compiledJVP() *compiledRule {
	extra := make([]interp.Aval, len(c.diff))
	for k, i := range c.diff {
		extra[k] = interp.AvalOf(c.primals[i])
	}
	return c.compiled("jvp", extra, c.jvp)
}

// restricted is the composite as a function of the operands that have
// tangents, the others held at their primal values.
func (c CompositeParams) restricted() func([]*tensor) []*tensor {
	return func(xs []*tensor) []*tensor {
		args := append([]*tensor(nil), c.primals...)
		for k, i := range c.diff {
			args[i] = xs[k]
		}
		return c.p.Impl(c.params, args)
	}
}

func (c CompositeParams) diffPrimals() []*tensor {
	xs := make([]*tensor, len(c.diff))
	for k, i := range c.diff {
		xs[k] = c.primals[i]
	}
	return xs
}

// compositeJVP is the forward-mode rule of a composite with no JVP rule
// or with a VJP rule (see above). tangents[i] is nil for operands with a
// zero tangent; at least one is not.
func compositeJVP(p *interp.Prim, params any, primals, tangents []*tensor) (outs, touts []*tensor) {
	outs = interp.Bind(p, params, primals...)
	// The operands by value: the backward pass recomputes from them, and
	// a later in-place write into one (a compiled function that writes
	// a captured tensor it read) must not change it.
	saved := make([]*tensor, len(primals))
	for i, x := range primals {
		saved[i] = interp.Snapshot(x)
	}
	c := CompositeParams{p: p, params: params, nIn: len(saved), nOut: len(outs), primals: saved, outs: outs}
	var lt []*tensor
	for i, t := range tangents {
		if t != nil {
			c.diff = append(c.diff, i)
			lt = append(lt, t)
		}
	}
	for i, o := range outs {
		if o.DType().IsFloat() {
			c.fout = append(c.fout, i)
		}
	}
	touts = make([]*tensor, len(outs))
	if len(c.fout) == 0 {
		return outs, touts
	}
	args := append(append(saved, outs...), lt...)
	c.primals, c.outs = nil, nil
	ts := interp.Bind(CompositeLin, c, args...)
	for k, i := range c.fout {
		touts[i] = ts[k]
	}
	return outs, touts
}

// encodeCompositeLin writes composite_lin's parameters into an exported
// program (a compiled JVP of a user-defined op or a compiled call): the
// composite and its parameters, and the counts and index lists.
func encodeCompositeLin(w *graphio.Writer, c CompositeParams) {
	w.Prim(c.p, c.params)
	w.Int(c.nIn)
	w.Int(c.nOut)
	w.Ints(c.diff)
	w.Ints(c.fout)
}

func decodeCompositeLin(r *graphio.Reader) CompositeParams {
	p, params := r.Prim()
	c := CompositeParams{p: p, params: params, nIn: r.Int(), nOut: r.Int(), diff: r.Ints(), fout: r.Ints()}
	if r.Err() != nil {
		return CompositeParams{}
	}
	if p.Impl == nil {
		r.Failf("composite_lin of %s, which is not a composite", p.Name)
		return CompositeParams{}
	}
	if c.nIn < 0 || c.nOut < 0 || !increasing(c.diff, c.nIn) || !increasing(c.fout, c.nOut) {
		r.Failf("composite_lin of %s with malformed operand lists", p.Name)
		return CompositeParams{}
	}
	return c
}

// increasing reports whether xs are strictly increasing indices below n.
func increasing(xs []int, n int) bool {
	for i, x := range xs {
		if x < 0 || x >= n || i > 0 && x <= xs[i-1] {
			return false
		}
	}
	return true
}
