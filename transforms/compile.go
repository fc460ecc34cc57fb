package transforms

import (
	"errors"
	"fmt"
	"hash/fnv"
	"log"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/compiler"
	"github.com/peel-ml/peel/customop"
	"github.com/peel-ml/peel/functionalize"
	"github.com/peel-ml/peel/internal/lru"
	"github.com/peel-ml/peel/internal/treeimpl"
	"github.com/peel-ml/peel/interp"
)

// Compile traces a function once per input signature, optimizes the
// traced graph and runs the optimized program on later calls with the
// same signature, with no tracing and no Bind: JAX's jit,
// torch.compile.
//
// The signature of a call is the argument tree's structure, each leaf's
// shape and dtype, the tree's static parts by value (numbers, strings
// and other values that hold no tensor), and which leaves alias (the
// same tensor twice, views of one tensor). Tensors the function only
// reads become constants of the program, by value; when one of them is
// written in place or rebound after tracing, the next call traces again
// (a cache miss naming it), so a compiled function never runs with
// stale captured values. Mutation inside f works on every call: f is
// functionalized on the way in, and the arguments and captured tensors
// f writes are inputs and outputs of the program, receiving their final
// values when each call returns, as eager code would see them, also
// when f writes them with values computed from no argument. Values f
// computes eagerly from captured tensors while it is traced are
// constants too, and a write into a tensor they came from makes the next
// call trace again.
//
// A cache miss records why (which leaf changed shape or dtype, which
// static value changed); beyond RecompileLimit signatures every further
// trace is reported through OnWarning (by default the standard logger),
// never silently run uncompiled. Stats counts calls, hits, misses and
// trace time.
//
// A function that reads a traced value (Item, Float64s, a Go if or
// loop on data, a hook that logs values) cannot be one program: it runs
// in segments instead (graph breaks). Every call runs f as Go code,
// recording its operations; each read ends a segment, which is compiled
// once per structure and run, and f goes on with concrete values.
// Stats.GraphBreaks and Explain list each break with the line that
// caused it; Strict makes a break an error. The first call of such a
// signature runs f's Go code up to the first break twice (the trace
// attempt, then the call in segments), so side effects before it happen
// twice on that call only. In-place writes are not supported in a
// function that breaks (*peel.Error).
//
// Called with tracers (under Grad, Vmap, … of the compiled function), the
// traced graph is evaluated with Bind, so a compiled function composes
// with every transform in both orders; Compile(Grad(f)) compiles the
// backward pass too. The compiled function is safe for concurrent use:
// calls that hit the cache take no lock.
//
// The compiled function is a Go function of f's signature; Compile2 …
// Compile5 compile functions of two to five arguments, and several
// results are one tree (a struct, or tree.Tuple2 …). Inspect attaches an
// Inspector, which reads the cache statistics (Stats) and shows the
// traced and optimized program (Explain). The compiled function panics
// as f does, and with *peel.Error for an invalid argument tree.
//
//	step := Compile3(func(p Params, s State, b Batch) tree.Tuple3[Params, State, *peel.Tensor] { … })
//	params, state, loss = step(params, state, batch).Unpack()
func Compile[A, R any](f func(A) R, opts ...CompileOption) func(A) R {
	return newCompiled("transforms.Compile", 1, f, opts).Call
}

// compiled is a function compiled by Compile; Call runs it.
type compiled[A, R any] struct {
	op    string
	nargs int
	f     func(A) R
	cfg   *compileConfig

	cache *lru.Cache[string, *compileEntry] // at most maxSignatures
	mu    sync.Mutex                        // held only while tracing a new signature
	stats compileCounters
}

// CompileStats are a compiled function's cache statistics.
type CompileStats struct {
	Calls, Hits, Misses int64
	// Uncompiled counts calls evaluated with Bind (tracer arguments).
	Uncompiled int64
	// Signatures is the number of signatures traced and kept.
	Signatures int
	// TraceTime is the total time spent tracing and optimizing.
	TraceTime time.Duration
	// LastMiss says why the last cache miss missed ("first call" for the
	// first).
	LastMiss string
	// GraphBreaks lists, for each signature that runs in segments, where
	// its first call broke the graph: the read and the caller (see
	// Compile).
	GraphBreaks []string
	// Remat totals the plans of the checkpoints (Checkpoint, Remat,
	// GradRemat) of the gradients traced in the function, over every
	// signature traced: the bytes their policies saved, and the bytes
	// and arithmetic their backward passes recompute (RematPlan's, for
	// the eager function).
	Remat RematStats
}

type compileCounters struct {
	calls, hits, misses, uncompiled, traceNs atomic.Int64
	lastMiss                                 atomic.Pointer[string]
}

// Stats returns the cache statistics so far.
func (c *compiled[A, R]) Stats() CompileStats {
	s := CompileStats{
		Calls: c.stats.calls.Load(), Hits: c.stats.hits.Load(), Misses: c.stats.misses.Load(),
		Uncompiled: c.stats.uncompiled.Load(), TraceTime: time.Duration(c.stats.traceNs.Load()),
	}
	s.Signatures = c.cache.Len()
	if d := c.cfg.grad; d != nil {
		s.Remat = RematStats{SavedBytes: d.saved.Load(), RecomputedBytes: d.recomputedBytes.Load(),
			RecomputedFLOPs: d.recomputedFLOPs.Load(), Recomputed: int(d.recomputed.Load())}
	}
	if p := c.stats.lastMiss.Load(); p != nil {
		s.LastMiss = *p
	}
	{
		var es []*compileEntry
		c.cache.Range(func(_ string, e *compileEntry) bool {
			if e.breaks {
				es = append(es, e)
			}
			return true
		})
		slices.SortFunc(es, func(a, b *compileEntry) int { return a.seq - b.seq })
		for _, e := range es {
			if p := e.causes.Load(); p != nil {
				s.GraphBreaks = append(s.GraphBreaks, *p...)
			}
		}
	}
	return s
}

// CompileOption configures Compile.
type CompileOption interface{ applyCompile(*compileConfig) }

type compileConfig struct {
	inspect *Inspector
	limit   int
	strict  bool
	warn    func(string)
	donate  []int
	static  []int
	fuse    []*customop.Op
	passes  []compiler.Pass // the pipeline, built once
	grad    *gradDefaults   // GradRemat, the data of the trace's levels
}

// gradDefaults are a compiled function's defaults for the gradients
// traced in it (GradRemat): the data of its levels, which a gradient
// finds through its values (interp.FindLevelData).
type gradDefaults struct {
	remat    SavePolicy
	rematSet bool       // GradRemat was given
	plans    *planCache // the checkpoint plans, shared by the function's gradients
	// saved … recomputed total the plans of the checkpoints traced in
	// the function (CompileStats.Remat).
	saved, recomputedBytes, recomputedFLOPs, recomputed atomic.Int64
}

// addPlan counts a checkpoint's plan traced in the function.
func (d *gradDefaults) addPlan(st RematStats) {
	d.saved.Add(st.SavedBytes)
	d.recomputedBytes.Add(st.RecomputedBytes)
	d.recomputedFLOPs.Add(st.RecomputedFLOPs)
	d.recomputed.Add(int64(st.Recomputed))
}

// traceOptions are the options of a compiled function's traces: its
// levels carry the GradRemat default.
func (c *compileConfig) traceOptions() []interp.TraceOption {
	if c.grad == nil {
		return nil
	}
	return []interp.TraceOption{interp.LevelData(c.grad)}
}

// compiledRemat returns the GradRemat policy of the innermost compiled
// function whose values ts are, and its plans, or nil.
func compiledRemat(ts ...*tensor) (*SavePolicy, *planCache) {
	if d, ok := interp.FindLevelData[*gradDefaults](ts...); ok && d.rematSet {
		return &d.remat, d.plans
	}
	return nil, nil
}

type compileOpt func(*compileConfig)

func (o compileOpt) applyCompile(c *compileConfig) { o(c) }

// RecompileLimit sets how many signatures a compiled function traces
// before each further trace is reported through OnWarning (default 8).
func RecompileLimit(n int) CompileOption { return compileOpt(func(c *compileConfig) { c.limit = n }) }

// OnWarning sets the function that receives a compiled function's
// warnings (a trace beyond RecompileLimit, with the reason of the miss);
// the default prints them with the standard logger.
func OnWarning(f func(msg string)) CompileOption {
	return compileOpt(func(c *compileConfig) { c.warn = f })
}

// Donate lets the compiled program reuse the buffers of the given
// positional arguments (0-based; negative counts from the end) for its
// results and intermediates: the caller gives them up, and must not read
// them after the call. By default no argument is donated. Compile panics
// with *peel.Error for an index out of range or repeated.
func Donate(argnums ...int) CompileOption {
	a := append([]int(nil), argnums...)
	return compileOpt(func(c *compileConfig) { c.donate = a })
}

// FuseOps makes the compiler look for the written-out composites of the
// given user-defined ops in the traced graph and replace each match by
// the op (compiler.ReplaceComposites): code written with the plain
// composite then runs the op's fused kernel, and its derivative is the
// op's (recomputed from the operands, saving nothing else). By default
// composites stay as written.
func FuseOps(ops ...*customop.Op) CompileOption {
	o := append([]*customop.Op(nil), ops...)
	return compileOpt(func(c *compileConfig) { c.fuse = append(c.fuse, o...) })
}

// Strict makes a graph break an error: a compiled function that reads a
// traced value (Item, Float64s, a Go if on data) panics with the read's
// *peel.Error instead of running in segments (torch's fullgraph=True).
// By default such a function runs in segments.
func Strict() CompileOption { return compileOpt(func(c *compileConfig) { c.strict = true }) }

// GradRemat makes policy the default of the gradients (Grad,
// ValueAndGrad, GradAux and their forms) traced in the compiled
// function: each that has no Remat option of its own saves what policy
// allows and recomputes the rest in its backward pass, as with
// Remat(policy). GradRemat(MinCut) makes the min-cut partitioner the
// choice for the whole program, as torch.compile does; without the
// option a gradient saves what linearize saves. A gradient finds the
// default through its values: arguments of the compiled function (or
// values computed from them) that it differentiates, or, when it only
// differentiates captured tensors, its function's result.
func GradRemat(policy SavePolicy) CompileOption {
	return compileOpt(func(c *compileConfig) { c.grad = &gradDefaults{remat: policy, rematSet: true, plans: newPlanCache()} })
}

// StaticArgnums makes the given positional arguments (0-based; negative
// counts from the end) static: their tensors are part of the signature
// by value (a call with other values traces again) and constants of the
// program. By default every argument's tensors are inputs of the
// program, part of the signature by shape and dtype only. Compile panics
// with *peel.Error for an index out of range or repeated.
func StaticArgnums(argnums ...int) CompileOption {
	a := append([]int(nil), argnums...)
	return compileOpt(func(c *compileConfig) { c.static = a })
}

func newCompiled[A, R any](op string, nargs int, f func(A) R, opts []CompileOption) *compiled[A, R] {
	cfg := &compileConfig{limit: 8, warn: func(m string) { log.Print(m) }}
	for _, o := range opts {
		o.applyCompile(cfg)
	}
	if cfg.grad == nil {
		// The levels carry the data anyway, for the checkpoint plans'
		// totals (CompileStats.Remat).
		cfg.grad = &gradDefaults{plans: newPlanCache()}
	}
	if f == nil {
		treeErrorf(op, "the function is nil")
	}
	if len(cfg.fuse) > 0 {
		ops := make([]compiler.Op, len(cfg.fuse))
		for i, o := range cfg.fuse {
			ops[i] = o
		}
		cfg.passes = append(cfg.passes, compiler.ReplaceComposites(ops...))
	}
	cfg.passes = append(cfg.passes, compiler.DefaultPasses()...)
	cfg.donate = normArgnums(op, "Donate", cfg.donate, nargs)
	cfg.static = normArgnums(op, "StaticArgnums", cfg.static, nargs)
	c := &compiled[A, R]{op: op, nargs: nargs, f: f, cfg: cfg, cache: lru.New[string, *compileEntry](maxSignatures)}
	if ins := cfg.inspect; ins != nil {
		ins.attach(op, c, c.Stats,
			func(args []any) string { return c.Explain(packArgs[A](op, nargs, args)) },
			func(args []any) string { return c.DOT(packArgs[A](op, nargs, args)) })
	}
	return c
}

// maxSignatures bounds the signatures a compiled function keeps traced:
// past it the least recently used is dropped (and traced again if it
// comes back), so a function called on ever new shapes holds bounded
// memory. RecompileLimit warns long before.
const maxSignatures = 256

// compileEntry is one traced signature.
type compileEntry struct {
	seq    int // order of tracing
	key    string
	sig    signature
	graph  *interp.Graph // optimized
	prog   program
	call   *callParams // compiled_call's parameters, for tracer arguments
	outDef *treeDef
	nOut   int
	// written are the input positions (in the graph's inputs) f writes:
	// the graph's outputs after the first nOut are their final values.
	written []int
	sources []interp.ConstSource
	// inputs maps the graph's first inputs to leaf indices (static
	// leaves are not inputs); inputRoot marks those that are the base of
	// the leaf (interp.BaseOf), whose alias group (the leaves that share
	// it, the signature's alias pattern) the trace rebuilds as views of
	// that one input.
	inputs    []int
	inputRoot []bool
	// captured are tensors f captures and writes: inputs after the
	// leaves', whose final values are written back as the arguments'.
	captured []*tensor
	// lifts are captured tensors the trace read as arguments (the same
	// memory as input Input): a call that no longer passes them there
	// traces again.
	lifts  []interp.InputLift
	donate []bool
	// writesArgs: f writes an argument leaf (one of the first inputs).
	writesArgs bool
	// lowered: a constant is a tracer of an enclosing transform, so the
	// graph is evaluated with Bind (and the entry is used once).
	lowered bool
	// breaks: the trace read a traced value; calls run f under the lazy
	// interpreter (lazy.go), whose compiled segments are cached in
	// segments; causes are the first such call's breaks.
	breaks   bool
	segments segmentCache
	causes   atomic.Pointer[[]string]
}

// signature is what a call's arguments are keyed by.
type signature struct {
	desc    string
	paths   []string
	avals   []interp.Aval
	statics []treeimpl.Static
	values  map[int]string // static leaves by value (StaticArgnums)
	// alias is the alias pattern: which leaves share a base and how
	// each is a view of it ("" when no two do).
	alias string
}

// Call runs the compiled function on x.
func (c *compiled[A, R]) Call(x A) R {
	c.stats.calls.Add(1)
	leaves, def, statics := treeimpl.FlattenStatics(c.op, x)
	static := c.staticLeaves(def)
	sig := signature{desc: def.Proto().Type().String(), paths: def.Paths(), statics: statics}
	concrete := true
	for i, l := range leaves {
		sig.avals = append(sig.avals, interp.AvalOf(l))
		if !l.IsConcrete() {
			concrete = false
		}
		if static[i] {
			if !l.IsConcrete() {
				treeErrorf(c.op, "static argument leaf %s is a tracer of a transform: static arguments must be concrete", def.LeafName("(the argument)", i))
			}
			if sig.values == nil {
				sig.values = map[int]string{}
			}
			sig.values[i] = contentKey(l)
		}
	}
	sig.alias = aliasPattern(leaves, static)
	key := sig.key()
	e := c.lookup(key, leaves)
	if e == nil && sig.alias != "" {
		e = c.lookupUnaliased(sig, leaves)
	}
	if e == nil {
		var first func() []*tensor
		e, first = c.trace(x, def, leaves, static, sig, key)
		if first != nil {
			return build[R](e.outDef, first())
		}
	} else {
		c.stats.hits.Add(1)
	}
	in := e.args(leaves)
	if e.breaks {
		return c.callInSegments(e, def, leaves, concrete)
	}
	var outs []*tensor
	if concrete && !e.lowered {
		outs = e.prog.Run(in, e.donate)
	} else if e.lowered {
		c.stats.uncompiled.Add(1)
		outs = e.graph.Eval(in...)
	} else {
		outs = interp.Bind(compiledCall, e.call, in...)
	}
	for k, j := range e.written {
		peel.CopyInto(in[j], outs[e.nOut+k])
	}
	return build[R](e.outDef, outs[:e.nOut])
}

// callInSegments runs a signature with graph breaks: under the lazy
// interpreter on concrete arguments, f itself otherwise (under an
// enclosing transform, whose tracers cannot be read either).
func (c *compiled[A, R]) callInSegments(e *compileEntry, def *treeDef, leaves []*tensor, concrete bool) R {
	var outDef *treeDef
	fl := flatFn(c.op, c.f, def, &outDef)
	if !concrete {
		c.stats.uncompiled.Add(1)
		return build[R](outDef, fl(leaves))
	}
	outs, causes := runLazy("compile (in segments)", &e.segments, fl, leaves)
	if e.causes.Load() == nil {
		e.causes.CompareAndSwap(nil, &causes)
	}
	return build[R](outDef, outs)
}

// tracedRead reports whether err is a read of a traced value under a
// compile level: a graph break. (Under the lazy interpreter a value of
// compile's own levels can be read; one of a transform inside f, such
// as Grad, fails there as it does eagerly.)
func tracedRead(err error) bool {
	var e *interp.Error
	return errors.As(err, &e) && slices.Contains(e.Within, "compile") && strings.HasPrefix(e.Msg, "cannot read the value of a traced tensor")
}

// lookup returns the entry for key when its captured tensors are
// unchanged (compileEntry.stale) for a call on leaves.
func (c *compiled[A, R]) lookup(key string, leaves []*tensor) *compileEntry {
	e, ok := c.cache.Load(key)
	if !ok || e.stale(leaves) != "" {
		return nil
	}
	return e
}

// lookupUnaliased returns the entry of sig without its alias pattern
// when it writes no argument, so aliasing among its arguments does not
// matter (a function that only reads tied weights is one program).
func (c *compiled[A, R]) lookupUnaliased(sig signature, leaves []*tensor) *compileEntry {
	sig.alias = ""
	if e := c.lookup(sig.key(), leaves); e != nil && !e.writesArgs {
		return e
	}
	return nil
}

// args returns the program's arguments for a call on leaves: the
// leaves' (the base of an alias group), then the captured tensors f
// writes.
func (e *compileEntry) args(leaves []*tensor) []*tensor {
	in := make([]*tensor, len(e.inputs), len(e.inputs)+len(e.captured))
	for j, i := range e.inputs {
		in[j] = leaves[i]
		if e.inputRoot[j] {
			in[j] = interp.BaseOf(leaves[i])
		}
	}
	return append(in, e.captured...)
}

// stale says why e cannot run a call on leaves, or "": a captured
// tensor changed since it was traced; a captured tensor the trace read
// as an argument is no longer passed there; or f writes an argument
// that shares memory with a captured tensor, which the program holds
// as a constant (the function's reads of it must see the write).
func (e *compileEntry) stale(leaves []*tensor) string {
	for k, s := range e.sources {
		if s.Changed() {
			switch {
			case !s.Derived():
				return fmt.Sprintf("captured tensor %d (%s) changed since it was traced", k, s.Tensor().TypeString())
			case s.Tensor() == nil:
				return "the program holds values computed eagerly, while it was traced, from more captured tensors than are tracked"
			default:
				return fmt.Sprintf("a captured tensor (%s) that values the program holds were computed from, eagerly while it was traced, changed since", s.Tensor().TypeString())
			}
		}
	}
	if len(e.lifts) == 0 && len(e.written) == 0 {
		return ""
	}
	in := e.args(leaves)
	for _, l := range e.lifts {
		if !interp.SameMemory(in[l.Input], l.Tensor) {
			return fmt.Sprintf("a captured tensor (%s) was traced as the argument it was passed as, and is not passed there now", l.Tensor.TypeString())
		}
	}
	for _, j := range e.written {
		for k, s := range e.sources {
			if interp.SameStorage(in[j], s.Tensor()) {
				return fmt.Sprintf("captured tensor %d (%s) shares memory with an argument the function writes", k, s.Tensor().TypeString())
			}
		}
	}
	return ""
}

// sharesBase reports whether two non-static leaves share a base: by
// pairs for a few leaves, with a set for many (every call asks).
func sharesBase(leaves []*tensor, static []bool) bool {
	if len(leaves) <= 16 {
		for i := 1; i < len(leaves); i++ {
			for j := 0; j < i; j++ {
				if !static[i] && !static[j] && interp.BaseOf(leaves[i]) == interp.BaseOf(leaves[j]) {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[*tensor]bool, len(leaves))
	for i, l := range leaves {
		if static[i] {
			continue
		}
		b := interp.BaseOf(l)
		if seen[b] {
			return true
		}
		seen[b] = true
	}
	return false
}

// aliasPattern describes which of the non-static leaves share a base
// (interp.BaseOf: the same tensor twice, views of one tensor) and how
// each is made from it, for the signature: a program traced for one
// pattern must not run a call with another, since a write through one
// leaf is seen through those that alias it. It is "" when no two leaves
// share a base.
func aliasPattern(leaves []*tensor, static []bool) string {
	if !sharesBase(leaves, static) {
		return ""
	}
	var b strings.Builder
	for i, l := range leaves {
		if static[i] {
			continue
		}
		first, n := -1, 0
		for j, m := range leaves {
			if !static[j] && interp.BaseOf(m) == interp.BaseOf(l) {
				if first < 0 {
					first = j
				}
				n++
			}
		}
		if n < 2 {
			continue
		}
		fmt.Fprintf(&b, "|%d~%d:%s", i, first, interp.BaseOf(l).TypeString())
		for x := l; interp.ViewInfo(x) != nil; x = interp.ViewInfo(x).Parent {
			v := interp.ViewInfo(x)
			fmt.Fprintf(&b, "<%s%v", v.Prim.Name, v.Params)
		}
	}
	return b.String()
}

// staticLeaves marks the leaves of static positional arguments.
func (c *compiled[A, R]) staticLeaves(def *treeDef) []bool {
	mark := make([]bool, def.NumLeaves())
	if len(c.cfg.static) == 0 {
		return mark
	}
	sel := make([]bool, c.nargs)
	for _, k := range c.cfg.static {
		sel[k] = true
	}
	for _, i := range c.argLeafIndices(def, sel) {
		mark[i] = true
	}
	return mark
}

// argLeafIndices returns the leaves of the selected positional
// arguments (all leaves of the one argument of a one-argument function).
func (c *compiled[A, R]) argLeafIndices(def *treeDef, sel []bool) []int {
	if c.nargs == 1 {
		if !sel[0] {
			return nil
		}
		idx := make([]int, def.NumLeaves())
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	return argLeaves(def, sel)
}

// trace traces f at x's signature (under the lock: one trace per new
// signature even when many goroutines miss at once) and caches it. When
// tracing made writes of the call (first is not nil), first completes
// the call: it returns f's results and makes the call's other writes.
func (c *compiled[A, R]) trace(x A, def *treeDef, leaves []*tensor, static []bool, sig signature, key string) (_ *compileEntry, first func() []*tensor) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.lookup(key, leaves); e != nil {
		c.stats.hits.Add(1)
		return e, nil
	}
	if e := c.lookupUnaliased(sig, leaves); sig.alias != "" && e != nil {
		c.stats.hits.Add(1)
		return e, nil
	}
	c.stats.misses.Add(1)
	reason := c.missReason(sig, key, leaves)
	c.stats.lastMiss.Store(&reason)
	n := c.cache.Len()
	if _, ok := c.cache.Load(key); ok {
		n-- // a retrace of a known signature replaces it
	}
	if n >= c.cfg.limit {
		c.cfg.warn(fmt.Sprintf("%s: tracing signature %d, past RecompileLimit(%d): %s", c.op, n+1, c.cfg.limit, reason))
	}
	start := time.Now()
	e := &compileEntry{key: key, sig: sig, seq: n}
	c.cache.Range(func(_ string, o *compileEntry) bool {
		e.seq = max(e.seq, o.seq+1)
		return true
	})
	seen := map[*tensor]bool{}
	for i, l := range leaves {
		if static[i] {
			continue
		}
		// One input per alias group: its base, when the group has
		// several leaves (the signature's alias pattern).
		root := interp.BaseOf(l)
		if seen[root] {
			continue
		}
		seen[root] = true
		shared := false
		for k := i + 1; k < len(leaves) && sig.alias != ""; k++ {
			shared = shared || (!static[k] && interp.BaseOf(leaves[k]) == root)
		}
		e.inputs = append(e.inputs, i)
		// The input is the leaf itself unless it is a view of a base
		// that other leaves share.
		e.inputRoot = append(e.inputRoot, shared && root != l)
	}
	var nOut int
	var traced *interp.Graph
	err := interp.Catch(func() {
		// A trace that finds f writing captured tensors takes them as
		// inputs and outputs of the program and traces again, linking
		// them from the start, so their writes are traced. Tensors
		// written with values computed from the arguments (found) were
		// not written by the first trace (functionalize's
		// OnCapturedWrite); tensors written with values that depend on
		// no argument (eager) were, by eval, while f was traced: then
		// the first trace's graph completes this call.
		link := make([]bool, len(e.inputs))
		for attempt := 0; ; attempt++ {
			var found, eager []*tensor
			traced = c.traceGraph(e, leaves, static, def, link, &found, &eager, &nOut)
			if len(found)+len(eager) == 0 && (sig.alias == "" || writesLeaves(traced, nOut, len(e.inputs))) {
				return
			}
			if len(found)+len(eager) == 0 {
				// Aliased arguments that f only reads: the program of
				// the signature without aliasing serves every pattern.
				e.inputs, e.inputRoot = e.inputs[:0], e.inputRoot[:0]
				for i := range leaves {
					if !static[i] {
						e.inputs = append(e.inputs, i)
						e.inputRoot = append(e.inputRoot, false)
					}
				}
				link = make([]bool, len(e.inputs)+len(e.captured))
				for k := range e.captured {
					link[len(e.inputs)+k] = true
				}
				sig.alias, e.sig.alias = "", ""
				key = sig.key()
				e.key = key
				continue
			}
			if attempt > 0 {
				w := append(found, eager...)[0]
				treeErrorf(c.op, "the function writes a captured tensor (%s) in a way the compiled program cannot replay on every call; pass it as an argument", w.TypeString())
			}
			in := e.args(leaves)
			if len(eager) > 0 {
				g, n, written := traced, nOut, found
				first = func() []*tensor {
					outs := g.Eval(in...)
					for j, a := range in {
						if g.Out[n+j] != g.In[j] {
							peel.CopyInto(a, outs[n+j])
						}
					}
					for k, w := range written {
						peel.CopyInto(w, outs[n+len(in)+k])
					}
					return outs[:n]
				}
			}
			for _, w := range append(found, eager...) {
				j := slices.IndexFunc(in, func(x *tensor) bool { return x == w || interp.SameMemory(x, w) })
				if j >= 0 && j < len(e.inputs) {
					link[j] = true // also passed as an argument
				} else if j < 0 {
					e.captured = append(e.captured, w)
					link = append(link, true)
				}
			}
		}
	})
	if err != nil {
		if c.cfg.strict || !tracedRead(err) {
			panic(err)
		}
		e.breaks = true
		c.stats.traceNs.Add(int64(time.Since(start)))
		c.cache.Store(key, e)
		return e, nil
	}
	e.nOut = nOut
	return c.finish(e, traced, def, key, start), first
}

// writesLeaves reports whether traced (nOut results, then the inputs'
// final values) writes one of its first n inputs (the leaves').
func writesLeaves(traced *interp.Graph, nOut, n int) bool {
	for j := range n {
		if traced.Out[nOut+j] != traced.In[j] {
			return true
		}
	}
	return false
}

// traceGraph traces f for entry e: the inputs are the leaves that are
// not static (an alias group's base once, its leaves rebuilt as views
// of it), then e's captured tensors; the results are f's (*nOut of
// them), then the inputs' final values. link marks the inputs whose
// caller's tensors f writes, linked from the start; found receives the
// captured tensors f writes with traced values that are not inputs yet
// (their final values are the graph's last outputs), eager those that
// eval wrote while f was traced (interp.WatchWrites).
func (c *compiled[A, R]) traceGraph(e *compileEntry, leaves []*tensor, static []bool, def *treeDef, link []bool, found, eager *[]*tensor, nOut *int) *interp.Graph {
	users := e.args(leaves)
	avals := make([]interp.Aval, len(users))
	for j, u := range users {
		avals[j] = interp.AvalOf(u)
	}
	e.lifts = nil
	opts := append(c.cfg.traceOptions(), interp.RecordConstSources(&e.sources), interp.InputTensors(users, &e.lifts), interp.WatchWrites(eager))
	return interp.TraceAvals("compile", func(in []*tensor) []*tensor {
		all := make([]*tensor, len(leaves))
		staged := map[*tensor]*tensor{} // a group's base → its input
		for j, i := range e.inputs {
			if e.inputRoot[j] {
				staged[interp.BaseOf(leaves[i])] = in[j]
			} else {
				all[i] = in[j]
				staged[leaves[i]] = in[j]
			}
		}
		for i, l := range leaves {
			switch {
			case static[i]:
				all[i] = l
			case all[i] == nil:
				all[i] = replayViews(l, staged)
			}
		}
		wrapUsers := append(append([]*tensor(nil), leaves...), e.captured...)
		wrapLink := make([]bool, len(wrapUsers))
		for j, i := range e.inputs {
			wrapLink[i] = link[j]
		}
		for k := range e.captured {
			wrapLink[len(leaves)+k] = true
		}
		fi := functionalize.New(false)
		var finals []*tensor
		fi.OnCapturedWrite = func(box, final *tensor) bool {
			if !box.IsConcrete() || !interp.IsStaged(final) {
				return false
			}
			*found = append(*found, box)
			finals = append(finals, final)
			return true
		}
		fl := flatFn(c.op, c.f, def, &e.outDef)
		outs := func() []*tensor {
			defer fi.End(nil, nil)
			w := fi.WrapInputs(append(all, in[len(e.inputs):]...), wrapUsers, wrapLink)
			outs := func() []*tensor {
				defer interp.AnnotateLevel(fi.Level())
				return fl(w[:len(leaves)])
			}()
			for i, o := range outs {
				outs[i] = fi.Unwrap(o)
			}
			return outs
		}()
		*nOut = len(outs)
		// The inputs' final values (functionalize wrote them back): an
		// input whose box now holds another value was written.
		return append(append(outs, in...), finals...)
	}, avals, opts...)
}

// replayViews returns leaf x rebuilt on the staged inputs: the input of
// x itself or its base, or x's view chain replayed on it (staged
// memoizes the boxes made).
func replayViews(x *tensor, staged map[*tensor]*tensor) *tensor {
	if s, ok := staged[x]; ok {
		return s
	}
	v := interp.ViewInfo(x)
	s := interp.Bind1(v.Prim, v.Params, replayViews(v.Parent, staged))
	staged[x] = s
	return s
}

// finish optimizes and builds the traced graph of entry e (nOut results
// then the inputs' final values), and publishes e.
func (c *compiled[A, R]) finish(e *compileEntry, traced *interp.Graph, def *treeDef, key string, start time.Time) *compileEntry {
	nOut := e.nOut
	for _, v := range traced.ConstVals {
		if !v.IsConcrete() {
			e.lowered = true
		}
	}
	g := *traced
	g.Out = append([]*interp.Var(nil), traced.Out[:nOut]...)
	for j, v := range traced.Out[nOut:] {
		if v != traced.In[j] {
			e.written = append(e.written, j)
			e.writesArgs = e.writesArgs || j < len(e.inputs)
			g.Out = append(g.Out, v)
		}
	}
	e.graph, _ = compiler.Optimize(g.DCE(), c.cfg.passes, false)
	e.call = newCallParams(c.op, e.graph)
	e.prog = e.call.prog
	e.donate = make([]bool, len(e.inputs)+len(e.captured))
	if len(c.cfg.donate) > 0 {
		sel := make([]bool, c.nargs)
		for _, k := range c.cfg.donate {
			sel[k] = true
		}
		donated := map[int]bool{}
		for _, i := range c.argLeafIndices(def, sel) {
			donated[i] = true
		}
		for j, i := range e.inputs {
			// A group's base holds other leaves too.
			e.donate[j] = donated[i] && !e.inputRoot[j]
		}
		// An input f writes receives its final value after the run, so
		// its buffer must not hold a result.
		for _, j := range e.written {
			e.donate[j] = false
		}
	}
	c.stats.traceNs.Add(int64(time.Since(start)))
	c.cache.Store(key, e)
	return e
}

// missReason says why key missed the cache: how the signature differs
// from the most similar one traced before.
func (c *compiled[A, R]) missReason(sig signature, key string, leaves []*tensor) string {
	if c.cache.Len() == 0 {
		return "first call"
	}
	if e, ok := c.cache.Load(key); ok {
		if why := e.stale(leaves); why != "" {
			return why
		}
	}
	var best []string
	bestSeq := -1
	c.cache.Range(func(_ string, e *compileEntry) bool {
		d := sig.diff(e.sig)
		// The fewest differences; among equals, the latest trace.
		if best == nil || len(d) < len(best) || (len(d) == len(best) && e.seq > bestSeq) {
			best, bestSeq = d, e.seq
		}
		return true
	})
	if len(best) > 3 {
		best = append(best[:3], fmt.Sprintf("and %d more", len(best)-3))
	}
	return strings.Join(best, "; ")
}

// key encodes the signature as a string.
func (s signature) key() string {
	var b strings.Builder
	b.WriteString(s.desc)
	for i, p := range s.paths {
		b.WriteByte('|')
		b.WriteString(p)
		b.WriteByte(':')
		b.WriteString(s.avals[i].String())
		if v, ok := s.values[i]; ok {
			b.WriteByte('=')
			b.WriteString(v)
		}
	}
	for _, st := range s.statics {
		b.WriteByte('|')
		b.WriteString(st.Path)
		b.WriteByte('=')
		b.WriteString(st.Value)
	}
	if s.alias != "" {
		b.WriteString("|alias")
		b.WriteString(s.alias)
	}
	return b.String()
}

// diff says how s differs from old, one phrase per difference.
func (s signature) diff(old signature) []string {
	if s.desc != old.desc || len(s.paths) != len(old.paths) {
		return []string{fmt.Sprintf("the argument's structure changed (%s with %d leaves, was %s with %d)", s.desc, len(s.paths), old.desc, len(old.paths))}
	}
	var d []string
	for i, p := range s.paths {
		if p != old.paths[i] {
			return []string{fmt.Sprintf("the argument's structure changed (leaf %s, was %s)", pathOr(p), pathOr(old.paths[i]))}
		}
		if !s.avals[i].Equal(old.avals[i]) {
			d = append(d, fmt.Sprintf("%s changed from %s to %s", leafPhrase(p), old.avals[i], s.avals[i]))
		}
		if s.values[i] != old.values[i] {
			d = append(d, fmt.Sprintf("the value of static %s changed", leafPhrase(p)))
		}
	}
	if len(s.statics) != len(old.statics) {
		return append(d, "the argument's static parts changed")
	}
	for i, st := range s.statics {
		if st != old.statics[i] {
			d = append(d, fmt.Sprintf("static value %s changed from %s to %s", pathOr(st.Path), old.statics[i].Value, st.Value))
		}
	}
	if s.alias != old.alias {
		d = append(d, "the arguments' aliasing changed (which leaves are the same tensor or views of one)")
	}
	if len(d) == 0 {
		d = append(d, "the signature changed")
	}
	return d
}

// leafPhrase names the leaf at path p of an argument.
func leafPhrase(p string) string {
	if p == "" {
		return "the argument"
	}
	return "leaf " + p
}

// contentKey identifies a concrete tensor's elements (a hash).
func contentKey(t *tensor) string {
	h := fnv.New64a()
	var buf [8]byte
	put := func(u uint64) {
		for k := range buf {
			buf[k] = byte(u >> (8 * k))
		}
		h.Write(buf[:])
	}
	switch t.DType() {
	case peel.Float64:
		for _, v := range t.Float64s() {
			put(math.Float64bits(v))
		}
	case peel.Float32, peel.Float16, peel.BFloat16: // f16, bf16 widen exactly (one to one)
		for _, v := range t.Float32s() {
			put(uint64(math.Float32bits(v)))
		}
	case peel.Int32:
		for _, v := range t.Int32s() {
			put(uint64(v))
		}
	case peel.Uint8:
		for _, v := range t.Uint8s() {
			put(uint64(v))
		}
	case peel.Int64:
		for _, v := range t.Int64s() {
			put(uint64(v))
		}
	case peel.Bool:
		for _, v := range t.Bools() {
			if v {
				put(1)
			} else {
				put(0)
			}
		}
	}
	return fmt.Sprintf("%x", h.Sum64())
}

// program is an executable form of a graph.
type program interface {
	Run(args []*tensor, donate []bool) []*tensor
}

// optimize runs the compiler's default passes on g.
func optimize(g *interp.Graph) *interp.Graph {
	out, _ := compiler.Optimize(g, compiler.DefaultPasses(), false)
	return out
}

// stage is one step of the compilation, for Explain.
type stage struct {
	name  string
	graph *interp.Graph
}

// optimizeStages runs the compiler's passes on g, recording each pass's
// result when record is set.
func optimizeStages(g *interp.Graph, passes []compiler.Pass, record bool) (*interp.Graph, []stage) {
	out, st := compiler.Optimize(g, passes, record)
	stages := make([]stage, len(st))
	for i, s := range st {
		stages[i] = stage{name: s.Pass, graph: s.Graph}
	}
	return out, stages
}

// buildProgram prepares g for repeated evaluation on concrete values.
// The sub-graphs of g's loops (a scan's body, a while's predicate and
// body) are compiled too, when they first run.
func buildProgram(g *interp.Graph) program { return buildProgramOn(g, nil) }

// buildProgramOn is buildProgram on backend be (compiler.BuildOn).
func buildProgramOn(g *interp.Graph, be backend.Backend) program {
	markCompiledLoops(g)
	return compiler.BuildOn(g, be)
}

// loopParams are the parameters of a loop primitive whose sub-graphs
// run as programs of their own when a compiled program holds the loop.
type loopParams interface{ markCompiled() }

// markCompiledLoops marks the loops of g, a graph a program is built
// for: their sub-graphs are compiled too, on first use.
func markCompiledLoops(g *interp.Graph) {
	for _, e := range g.Eqns {
		if l, ok := e.Params.(loopParams); ok {
			l.markCompiled()
		}
	}
}

// subProgram is the program of a loop's sub-graph (a scan's body, a
// while's predicate or body) when a compiled program holds the loop:
// built (optimized and planned) once, on first use, so that each step
// runs a planned, fused program instead of evaluating the graph
// equation by equation.
type subProgram struct {
	compiled atomic.Bool
	once     sync.Once
	prog     program
	be       backend.Backend // the backend prog runs on
}

// mark records that a compiled program holds the loop.
func (s *subProgram) mark() { s.compiled.Store(true) }

// loopTierSteps (a variable for tests only) is the number of steps after which an eager loop (a
// scan or a while evaluated on concrete operands outside a compiled
// program) compiles its sub-graphs, which it traced anyway, and runs its
// remaining steps by their programs: building a program costs about two
// or three eager steps of a small body (issue 41's Newton loop: 0.1 ms
// against 40 µs a step), so a loop of a step or two never pays for it
// and a longer one wins it back within a few steps. The programs compute
// the bits eager evaluation computes (the executor's contract), so when
// a loop tiers up is not observable but in its speed.
var loopTierSteps = 2

// subProgramsBuilt counts the sub-graph programs built (for tests).
var subProgramsBuilt atomic.Int64

// tier is get for an eager loop that has run steps steps so far: from
// loopTierSteps on, the loop is marked as compiled.
func (s *subProgram) tier(g *interp.Graph, be backend.Backend, steps int) program {
	if steps >= loopTierSteps {
		s.mark()
	}
	return s.get(g, be)
}

// get returns g's program for operands on backend be when the loop is
// marked; nil otherwise: when a constant of g is a tracer or lives on
// another backend, or for operands on another backend than the first
// use's (g is then evaluated).
func (s *subProgram) get(g *interp.Graph, be backend.Backend) program {
	if !s.compiled.Load() {
		return nil
	}
	s.once.Do(func() {
		for _, v := range g.ConstVals {
			if !v.IsConcrete() {
				return
			}
			if _, cb := interp.ArrayOf(v); cb != be {
				return
			}
		}
		s.be = be
		s.prog = buildProgramOn(optimize(g), be)
		subProgramsBuilt.Add(1)
	})
	if s.be != be {
		return nil
	}
	return s.prog
}

// traceSignature traces f for x's signature, as the cache would (static
// leaves as constants). It returns the tracing error of a function with
// graph breaks (a traced read) when the compile is not strict, and
// panics with any other.
func (c *compiled[A, R]) traceSignature(x A, opts ...interp.TraceOption) (*interp.Graph, error) {
	leaves, def, _ := treeimpl.FlattenStatics(c.op, x)
	static := c.staticLeaves(def)
	var in []interp.Aval
	var inputs []int
	for i, l := range leaves {
		if !static[i] {
			in = append(in, interp.AvalOf(l))
			inputs = append(inputs, i)
		}
	}
	var g *interp.Graph
	err := interp.Catch(func() {
		g = interp.TraceAvals("compile", func(vals []*tensor) []*tensor {
			all := append([]*tensor(nil), leaves...)
			for j, i := range inputs {
				all[i] = vals[j]
			}
			return Functionalize(flatFn(c.op, c.f, def, nil))(all)
		}, in, append(c.cfg.traceOptions(), opts...)...)
	})
	if err != nil {
		if c.cfg.strict || !tracedRead(err) {
			panic(err)
		}
		return nil, err
	}
	return g, nil
}

// DOT returns, for x's signature, the program that runs it in
// Graphviz's language (compiler.Program.DOT). It panics with *peel.Error
// when f has graph breaks (it has no one program).
func (c *compiled[A, R]) DOT(x A) string {
	g, err := c.traceSignature(x, interp.RecordSites())
	if err != nil {
		treeErrorf(c.op+" (Inspector.DOT)", "the function has graph breaks, so it runs as several programs: %v", err)
	}
	opt, _ := optimizeStages(g, c.cfg.passes, false)
	if p, ok := buildProgram(opt).(interface{ DOT(string) string }); ok {
		return p.DOT(strings.TrimPrefix(c.op, "transforms."))
	}
	return opt.DOT(c.op)
}

// Explain returns, for x's signature, the traced graph, the graph after
// each optimization pass that changed it, and the program that runs it
// (MakeGraph's notation): what was simplified, fused and how memory is
// reused. It traces anew and does not touch the cache. For a function
// with graph breaks it runs the function once on x, in segments, and
// lists each break: the read and the line of the caller.
func (c *compiled[A, R]) Explain(x A) string {
	g, err := c.traceSignature(x)
	if err != nil {
		// A graph break: run f in segments once (on x) to find them.
		leaves, def, _ := treeimpl.FlattenStatics(c.op, x)
		var b strings.Builder
		b.WriteString("the function reads traced values, so it runs in segments, compiled separately (graph breaks):\n")
		var segs segmentCache
		_, breaks := runLazy("compile (in segments)", &segs, flatFn(c.op, c.f, def, nil), leaves)
		for i, br := range breaks {
			fmt.Fprintf(&b, "  break %d: %s\n", i+1, br)
		}
		fmt.Fprintf(&b, "%d segments compiled\n", segs.Len())
		return b.String()
	}
	var b strings.Builder
	b.WriteString("traced:\n")
	b.WriteString(g.String())
	opt, stages := optimizeStages(g, c.cfg.passes, true)
	prev := g.String()
	for _, s := range stages {
		cur := s.graph.String()
		if cur == prev {
			continue
		}
		b.WriteString("\nafter " + s.name + ":\n")
		b.WriteString(cur)
		prev = cur
	}
	if p, ok := buildProgram(opt).(interface{ String() string }); ok {
		b.WriteString("\nprogram:\n")
		b.WriteString(p.String())
	}
	return b.String()
}
