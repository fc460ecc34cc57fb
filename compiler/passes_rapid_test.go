package compiler_test

import (
	"slices"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/compiler"
	"github.com/peel-ml/peel/examples/customop/mylib"
	"github.com/peel-ml/peel/internal/optest"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/transforms"
)

// entry is one op applied to operands typed like args: a registry op
// (optest.All) at one of its samples, or one of passOps.
type entry struct {
	name string
	f    func(args []*T) *T
	args []*T
}

// passOps are compositions the passes rewrite, mixed into the random
// programs alongside the registry.
var passOps = []entry{
	{"reshape∘reshape", func(a []*T) *T { return peel.Reshape(peel.Reshape(a[0], 6), 3, 2) }, []*T{seq(2, 3)}},
	{"reshape∘reshape back", func(a []*T) *T { return peel.Reshape(peel.Reshape(a[0], 6), 2, 3) }, []*T{seq(2, 3)}},
	{"transpose∘transpose", func(a []*T) *T { return peel.Transpose(peel.Transpose(a[0], 1, 2, 0), 2, 1, 0) }, []*T{seq(2, 3, 4)}},
	{"transpose∘transpose back", func(a []*T) *T { return peel.Transpose(peel.Transpose(a[0])) }, []*T{seq(2, 3)}},
	{"x·wᵀ", func(a []*T) *T { return peel.MatMul(a[0], peel.Transpose(a[1])) }, []*T{seq(2, 3), peel.Cos(seq(2, 3))}},
	{"xᵀ·w", func(a []*T) *T { return peel.MatMul(peel.Transpose(a[0]), a[1]) }, []*T{seq(2, 3), peel.Cos(seq(2, 3))}},
	{"batched x·wᵀ", func(a []*T) *T { return peel.MatMul(a[0], peel.Transpose(a[1], 0, 2, 1)) }, []*T{seq(2, 3, 4), seq(2, 3, 4)}},
	{"broadcast∘broadcast", func(a []*T) *T { return peel.BroadcastTo(peel.BroadcastTo(a[0], 3, 4), 2, 3, 4) }, []*T{seq(4)}},
	{"reshape of a splat", func(a []*T) *T { return peel.Reshape(peel.BroadcastTo(a[0], 2, 3), 3, 2) }, []*T{peel.Scalar(0.5)}},
	{"gelu by hand", func(a []*T) *T { return geluByHand(a[0], geluC) }, []*T{seq(2, 3)}},
	{"gelu", func(a []*T) *T { return mylib.Gelu.Call(a[0]) }, []*T{seq(2, 3)}},
	{"uniform", func(a []*T) *T { return peel.Uniform(a[0], peel.Float64, 2, 3) }, []*T{peel.Key(3)}},
	{"split", func(a []*T) *T { return peel.SplitKeys(a[0], 2)[1] }, []*T{peel.Key(3)}},
}

var (
	entriesOnce sync.Once
	entries     []entry
)

// allEntries returns passOps and every registry op at each of its
// samples of at most 64 elements per operand that it evaluates eagerly.
func allEntries() []entry {
	entriesOnce.Do(func() {
		entries = append(entries, passOps...)
		for _, op := range optest.All() {
			for _, s := range op.Samples() {
				small := true
				for _, a := range s.Args {
					small = small && a.Size() <= 64
				}
				if !small || peel.Catch(func() { op.F(s.Args) }) != nil {
					continue
				}
				entries = append(entries, entry{op.Name + "/" + s.Name, op.F, s.Args})
			}
		}
	})
	return entries
}

// source is where a step's operand comes from: a value of the program
// (pool index) or a constant.
type source struct {
	pool  int
	konst *T
}

// event is one step of a random program: a new input appended to the
// pool (e == nil), or an entry applied to sources.
type event struct {
	e    *entry
	srcs []source
}

// program is a random composition of entries over its inputs.
type program struct {
	events []event
	outs   []int
	inputs []*T
	desc   []string
}

// drawProgram draws a program, running it eagerly to learn the types of
// its values (steps that fail eagerly are dropped).
func drawProgram(t *rapid.T) *program {
	es := allEntries()
	p := &program{}
	var pool []*T
	steps := rapid.IntRange(1, 8).Draw(t, "steps")
	for range steps {
		e := &es[rapid.IntRange(0, len(es)-1).Draw(t, "entry")]
		srcs := make([]source, len(e.args))
		args := make([]*T, len(e.args))
		var added []event
		for j, a := range e.args {
			var cands []int
			for k, v := range pool {
				if interp.AvalOf(v).Equal(interp.AvalOf(a)) {
					cands = append(cands, k)
				}
			}
			switch c := rapid.IntRange(0, len(cands)+1).Draw(t, "source"); {
			case c < len(cands):
				srcs[j] = source{pool: cands[c]}
			case c == len(cands):
				srcs[j] = source{pool: -1, konst: a}
			default:
				pool = append(pool, a)
				p.inputs = append(p.inputs, a)
				added = append(added, event{})
				srcs[j] = source{pool: len(pool) - 1}
			}
			if srcs[j].konst != nil {
				args[j] = a
			} else {
				args[j] = pool[srcs[j].pool]
			}
		}
		p.events = append(p.events, added...)
		var r *T
		if peel.Catch(func() { r = e.f(args) }) != nil {
			continue
		}
		p.events = append(p.events, event{e: e, srcs: srcs})
		p.desc = append(p.desc, e.name)
		pool = append(pool, r)
	}
	if len(pool) == 0 {
		return nil
	}
	p.outs = []int{len(pool) - 1}
	for range rapid.IntRange(0, 2).Draw(t, "extra outputs") {
		p.outs = append(p.outs, rapid.IntRange(0, len(pool)-1).Draw(t, "output"))
	}
	return p
}

// run replays the program on its inputs xs.
func (p *program) run(xs []*T) []*T {
	var pool []*T
	next := 0
	for _, ev := range p.events {
		if ev.e == nil {
			pool = append(pool, xs[next])
			next++
			continue
		}
		args := make([]*T, len(ev.srcs))
		for j, s := range ev.srcs {
			if s.konst != nil {
				args[j] = s.konst
			} else {
				args[j] = pool[s.pool]
			}
		}
		pool = append(pool, ev.e.f(args))
	}
	out := make([]*T, len(p.outs))
	for i, k := range p.outs {
		out[i] = pool[k]
	}
	return out
}

// constify returns g with the inputs marked in fixed turned into
// constants of the given values, and the remaining arguments.
func constify(g *interp.Graph, args []*T, fixed []bool) (*interp.Graph, []*T) {
	ng := &interp.Graph{Consts: slices.Clone(g.Consts), ConstVals: slices.Clone(g.ConstVals), Eqns: g.Eqns, Out: g.Out}
	var rest []*T
	for i, v := range g.In {
		if fixed[i] {
			ng.Consts = append(ng.Consts, v)
			ng.ConstVals = append(ng.ConstVals, args[i])
		} else {
			ng.In = append(ng.In, v)
			rest = append(rest, args[i])
		}
	}
	return ng, rest
}

// rapidPasses are the passes checked on random programs, with whether
// running one twice must change nothing the second time.
var rapidPasses = []struct {
	name       string
	run        func(*interp.Graph) *interp.Graph
	idempotent bool
}{
	{"dce", compiler.DCE, true},
	{"cse", compiler.CSE, true},
	{"fold-constants", compiler.FoldConstants, true},
	{"simplify", compiler.Simplify, true},
	{"fold-transpose-into-dot", compiler.FoldTransposeIntoDot, true},
	{"replace-composites", compiler.ReplaceComposites(mylib.Gelu).Run, true},
	{"default pipeline", func(g *interp.Graph) *interp.Graph {
		g, _ = compiler.Optimize(g, compiler.DefaultPasses(), false)
		return g
	}, true},
	{"full pipeline", func(g *interp.Graph) *interp.Graph {
		g, _ = compiler.Optimize(g, append([]compiler.Pass{compiler.ReplaceComposites(mylib.Gelu)}, compiler.DefaultPasses()...), false)
		return g
	}, true},
}

// TestPassesRapid checks every pass, and the pipelines, on random
// programs over the registry (traced with interp.Trace, some inputs
// turned into constants so that folding has work): the optimized graph's
// results equal the original's bit for bit, the pass leaves its argument
// as it was, and a second run changes nothing. (No pass reorders float
// arithmetic on these programs: their matrix products are small enough
// for the kernel's plain loop, where FoldTransposeIntoDot is exact too;
// TestFoldTransposeIntoDotNumerics covers GEMM-sized ones.)
func TestPassesRapid(t *testing.T) {
	rewrote := map[string]int{}
	programs := 0
	defer func() { t.Logf("%d programs traced; rewritten by each pass: %v", programs, rewrote) }()
	rapid.Check(t, func(t *rapid.T) {
		p := drawProgram(t)
		if p == nil {
			return
		}
		var g *interp.Graph
		if peel.Catch(func() { g = interp.Trace(p.run, p.inputs) }) != nil {
			// Staging refuses some programs eager runs (an in-place write
			// into a clone of a constant, which Clone computed eagerly).
			return
		}
		programs++
		fixed := make([]bool, len(g.In))
		for i := range fixed {
			fixed[i] = rapid.Bool().Draw(t, "constant input")
		}
		g, args := constify(g, p.inputs, fixed)
		before := g.String()
		for _, ps := range rapidPasses {
			var ng *interp.Graph
			if err := peel.Catch(func() { ng = ps.run(g) }); err != nil {
				t.Fatalf("%s: %v\nprogram %v\n%v", ps.name, err, p.desc, g)
			}
			if ng.String() != before {
				rewrote[ps.name]++
			}
			if g.String() != before {
				t.Fatalf("%s modified its argument:\n%s\nnow\n%v", ps.name, before, g)
			}
			var msg string
			if err := peel.Catch(func() { msg = sameResults(ng, g, args) }); err != nil {
				t.Fatalf("%s: evaluating: %v\nprogram %v\nbefore:\n%v\nafter:\n%v", ps.name, err, p.desc, g, ng)
			}
			if msg != "" {
				t.Fatalf("%s: %s\nprogram %v\nbefore:\n%v\nafter:\n%v", ps.name, msg, p.desc, g, ng)
			}
			if ps.idempotent {
				if again := ps.run(ng); again.String() != ng.String() {
					t.Fatalf("%s is not idempotent:\n%v\nthen\n%v", ps.name, ng, again)
				}
			}
		}
	})
}

// TestPassesRapidGrad is TestPassesRapid on the gradients of random
// programs (the sum of squares of their float results, by every input),
// whose graphs hold the transposes, broadcasts and reshapes reverse mode
// makes.
func TestPassesRapidGrad(t *testing.T) {
	rewrote := map[string]int{}
	programs := 0
	defer func() { t.Logf("%d gradients traced; rewritten by each pass: %v", programs, rewrote) }()
	rapid.Check(t, func(t *rapid.T) {
		p := drawProgram(t)
		if p == nil || len(p.inputs) == 0 {
			return
		}
		loss := func(xs []*T) *T {
			s := peel.Scalar(0.0)
			for _, o := range p.run(xs) {
				if o.DType().IsFloat() {
					o = peel.AsType(o, peel.Float64)
					s = peel.Add(s, peel.Sum(peel.Mul(o, o)))
				}
			}
			return s
		}
		var g *interp.Graph
		if peel.Catch(func() {
			g = interp.Trace(func(xs []*T) []*T {
				var out []*T
				for _, d := range transforms.Grad(loss)(xs) {
					if d != nil {
						out = append(out, d)
					}
				}
				return append(out, loss(xs))
			}, p.inputs)
		}) != nil {
			return
		}
		programs++
		for _, ps := range rapidPasses {
			ng := ps.run(g)
			if ng.String() != g.String() {
				rewrote[ps.name]++
			}
			if msg := sameResults(ng, g, p.inputs); msg != "" {
				t.Fatalf("%s: %s\nprogram %v\nbefore:\n%v\nafter:\n%v", ps.name, msg, p.desc, g, ng)
			}
			if ps.idempotent {
				if again := ps.run(ng); again.String() != ng.String() {
					t.Fatalf("%s is not idempotent:\n%v\nthen\n%v", ps.name, ng, again)
				}
			}
		}
	})
}
