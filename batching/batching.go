package batching

import (
	"fmt"
	"log"
	"sync"
	"sync/atomic"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// T is a tensor.
type T = interp.Tensor

// NotMapped is the batch dimension of a value that is not batched.
const NotMapped = -1

// Rule is a batching rule: given the batch size, the primitive's
// parameters, the operands' physical values (tensors of the level below)
// and their batch dimensions (NotMapped for unbatched operands; at least
// one is batched), it returns the results' physical values and batch
// dimensions. Rules apply primitives with interp.Bind, so they are
// themselves transformable.
type Rule func(size int, params any, args []*T, dims []int) (outs []*T, outDims []int)

var (
	rulesMu sync.RWMutex
	rules   = map[*interp.Prim]Rule{}
	// table is rules indexed by primitive ID, rebuilt on registration.
	table atomic.Pointer[[]Rule]
)

// Register sets p's batching rule. Registration is meant for package
// initialization; it replaces an earlier rule for p.
func Register(p *interp.Prim, r Rule) {
	rulesMu.Lock()
	defer rulesMu.Unlock()
	rules[p] = r
	storeTable(rules, &table)
}

// storeTable stores in t the rules of m indexed by primitive ID, so that
// the lookup on the dispatch path takes no lock.
func storeTable[R any](m map[*interp.Prim]R, t *atomic.Pointer[[]R]) {
	n := 0
	for q := range m {
		n = max(n, q.ID+1)
	}
	s := make([]R, n)
	for q, r := range m {
		s[q.ID] = r
	}
	t.Store(&s)
}

// NamedRule is a batching rule that also receives the axis name of the
// level ("" for a level without one): the collectives reduce over the
// batch when they name it, and the primitives that vmap a body of their
// own (control flow, compiled calls) bind the same name at the body's
// level, so a collective inside the body sees the same axis.
type NamedRule func(axis string, size int, params any, args []*T, dims []int) (outs []*T, outDims []int)

var (
	namedRules = map[*interp.Prim]NamedRule{} // under rulesMu
	// namedTable is namedRules indexed by primitive ID, rebuilt on
	// registration, so the lookup on the dispatch path takes no lock.
	namedTable atomic.Pointer[[]NamedRule]
)

// RegisterNamed sets p's named batching rule, which takes precedence
// over a Rule. Registration is meant for package initialization.
func RegisterNamed(p *interp.Prim, r NamedRule) {
	rulesMu.Lock()
	defer rulesMu.Unlock()
	namedRules[p] = r
	storeTable(namedRules, &namedTable)
}

// NamedRuleFor returns p's named batching rule, or nil.
func NamedRuleFor(p *interp.Prim) NamedRule {
	t := namedTable.Load()
	if t == nil || p.ID >= len(*t) {
		return nil
	}
	return (*t)[p.ID]
}

// RuleFor returns p's batching rule, or nil.
func RuleFor(p *interp.Prim) Rule {
	t := table.Load()
	if t == nil || p.ID >= len(*t) {
		return nil
	}
	return (*t)[p.ID]
}

// Fallback modes for primitives with no batching rule.
const (
	// FallbackWarn runs the primitive once per lane and stacks the
	// results, logging a warning the first time per primitive.
	FallbackWarn int32 = iota
	// FallbackError panics with *interp.Error instead.
	FallbackError
)

var (
	fallbackMode atomic.Int32
	warned       sync.Map
	logger       atomic.Pointer[log.Logger]
)

// SetFallback sets what happens to a primitive with no batching rule and
// returns the previous mode. The default is FallbackWarn, as is every
// mode other than FallbackError. Tests set FallbackError so every
// built-in primitive is proven to have a real rule.
func SetFallback(mode int32) int32 { return fallbackMode.Swap(mode) }

// SetLogger sets where fallback warnings go; nil restores the standard
// logger, the default.
func SetLogger(l *log.Logger) { logger.Store(l) }

func warnOnce(p *interp.Prim) {
	if _, dup := warned.LoadOrStore(p, true); dup {
		return
	}
	msg := fmt.Sprintf("peel: vmap has no batching rule for %s: running it once per lane (slow)", p.Name)
	if l := logger.Load(); l != nil {
		l.Print(msg)
		return
	}
	log.Print(msg)
}

// tracer is the payload of a batched value: its physical value, a
// tensor of the level below with one more dimension, and where that
// dimension is.
type tracer struct {
	level *interp.Level
	val   *T
	bdim  int
	// detached marks the result of a view primitive whose physical value
	// is a copy, not an alias (e.g. a reshape that no strides express):
	// writing through it would not reach its base.
	detached bool
	// snapshot marks a payload made by Snapshot, whose physical value
	// is a snapshot it may release.
	snapshot bool
}

func (t *tracer) Level() *interp.Level { return t.level }

// Nested returns the physical value (interp.Nested: collectives find the
// axis names of its levels).
func (t *tracer) Nested() []*T { return []*T{t.val} }

// Snapshot returns a payload whose physical value is a snapshot of t's
// (interp.Snapshotter): a later write into the batched value, performed
// on the physical value below, does not reach it.
func (t *tracer) Snapshot() interp.Tracer {
	return &tracer{level: t.level, val: interp.Snapshot(t.val), bdim: t.bdim, detached: t.detached, snapshot: true}
}

// ReleaseSnapshot releases a snapshot payload's physical value
// (interp.SnapshotReleaser).
func (t *tracer) ReleaseSnapshot() {
	if t.snapshot {
		interp.ReleaseSnapshot(t.val)
	}
}

// Interp is the vmap interpreter of one level.
type Interp struct {
	level *interp.Level
	size  int
	// name is the axis name the level binds ("" for none): collectives
	// over it reduce or exchange across the batch (NamedRule).
	name string
	// bcast caches concrete unbatched operands of elementwise primitives
	// broadcast to the batch and materialized (from their second use), by
	// operand and batch dim,
	// with the base generation and content version they were made at (a
	// write below or a rebind makes the entry stale).
	bcast map[bcastKey]bcastEntry
}

// maxCachedOperand is the largest operand (in elements) broadcastOperand
// caches: the cache pays where per-operation overhead dominates (a small
// constant used by many operations: 1.18 → 0.66 µs per op on the vmapped
// tiny chain), and measured slower on one-shot large operands.
const maxCachedOperand = 64

type bcastKey struct {
	t *T
	d int
}

type bcastEntry struct {
	val          *T // nil until the operand's second use
	gen, version uint64
}

// broadcastOperand returns unbatched operand x broadcast to the batch at
// d. A small concrete operand used a second time in the level (or a
// tiny one, at its first use) is materialized then and reused: a constant used by many operations (a
// weight, a bias) is read as a contiguous operand instead of being
// broadcast each time. Its first use reads the broadcast view (the
// kernels read repeated blocks in place), so a one-shot operand, the
// common case of a vmapped backward pass, costs no copy.
func (b *Interp) broadcastOperand(x *T, d int) *T {
	if !x.IsConcrete() || x.Size() > maxCachedOperand {
		return BroadcastBatch(x, b.size, d)
	}
	k := bcastKey{x, d}
	gen, version := interp.Generation(interp.BaseOf(x)), interp.Version(x)
	e, ok := b.bcast[k]
	switch {
	case ok && e.gen == gen && e.version == version && e.val != nil:
		return e.val
	case ok && e.gen == gen && e.version == version:
		e.val = interp.Bind1(prims.Copy, nil, BroadcastBatch(x, b.size, d))
		b.bcast[k] = e
		return e.val
	}
	if b.bcast == nil {
		b.bcast = map[bcastKey]bcastEntry{}
	}
	e = bcastEntry{gen: gen, version: version}
	if x.Size()*b.size <= eagerMaterialize {
		e.val = interp.Bind1(prims.Copy, nil, BroadcastBatch(x, b.size, d))
	}
	b.bcast[k] = e
	if e.val != nil {
		return e.val
	}
	return BroadcastBatch(x, b.size, d)
}

// eagerMaterialize is the broadcast size (elements) up to which an
// operand is materialized on its first use: copying it costs less than
// one more view and a repeated-block read of it (the vmapped tiny chain,
// 16 lanes of 8-element constants: 65 → 60 µs), while a larger one-shot
// operand is read as a view (jacrev_32's 32×32 broadcasts).
const eagerMaterialize = 256

// New starts a vmap level of batch size size. The caller must call End.
func New(size int) *Interp {
	in := &Interp{size: size}
	in.level = interp.NewLevel("vmap", in)
	return in
}

// NewNamed starts a vmap level of batch size size that binds the axis
// name (JAX's vmap(axis_name=name)): collectives over name see the whole
// batch. The level carries the axis frame (Frame, interp.Level.BindAxes),
// which collectives find from their operands in any goroutine; the
// caller also pushes it (interp.PushAxis) for the goroutine that runs
// the function (AxisIndex, and values that do not vary along the axis),
// and must call End.
func NewNamed(size int, name string) *Interp {
	in := &Interp{size: size, name: name}
	in.level = interp.NewLevel("vmap", in)
	in.level.BindAxes(interp.AxisFrame{Name: name, Size: size, Level: in.level, Index: in.Index()})
	return in
}

// Frame returns the axis frame a named level binds (NewNamed): its name,
// size, level and index. It panics with *interp.Error for an unnamed
// level.
func (b *Interp) Frame() interp.AxisFrame {
	fs := b.level.Axes()
	if len(fs) == 0 {
		interp.Panicf("vmap level of size %d binds no axis name", b.size)
	}
	return fs[0]
}

// AxisName returns the axis name the level binds, or "".
func (b *Interp) AxisName() string { return b.name }

// Index returns the axis index of the level's lanes: the i64 scalar
// that is i in lane i (a batched iota), what AxisIndex over the level's
// name returns.
func (b *Interp) Index() *T { return b.Batched(iotaI64(b.size), 0) }

// Level returns the interpreter's level.
func (b *Interp) Level() *interp.Level { return b.level }

// Size returns the batch size.
func (b *Interp) Size() int { return b.size }

// End ends the level.
func (b *Interp) End() { b.level.End() }

// Batched returns the tensor of this level whose lanes are x's slices
// along dimension bdim.
func (b *Interp) Batched(x *T, bdim int) *T {
	if bdim == NotMapped {
		return x
	}
	return &b.batchedBox(x, bdim).t
}

// batchedBox allocates the payload, box, small shape and a one-result
// slice of a batched value together.
func (b *Interp) batchedBox(x *T, bdim int) *batchedBox {
	o := &batchedBox{tr: tracer{level: b.level, val: x, bdim: bdim}}
	xs := x.Shape()
	var shape []int
	if len(xs)-1 <= len(o.shape) {
		shape = o.shape[:0]
	} else {
		shape = make([]int, 0, len(xs)-1)
	}
	shape = append(shape, xs[:bdim]...)
	shape = append(shape, xs[bdim+1:]...)
	o.t = interp.TracerValue(interp.Aval{Shape: shape, DType: x.DType()}, &o.tr)
	o.res[0] = &o.t
	return o
}

type batchedBox struct {
	tr    tracer
	t     T
	shape [4]int
	res   [1]*T
}

// elementwise is the fast path for elementwise primitives with up to four
// operands of valid types: the same alignment as the elementwise rule
// (operands share the batched operands' common batch dimension, else 0;
// unbatched ones are broadcast there), with the operand lists on the
// stack. It applies to primitives that have a registered rule (so a
// primitive without one still reaches the fallback) and reports false
// when it does not apply.
func (b *Interp) elementwise(p *interp.Prim, params any, args []*T) ([]*T, bool) {
	if p.Elementwise == nil || len(args) > 4 || p.Impl != nil || RuleFor(p) == nil {
		return nil, false
	}
	if _, ok := interp.ElementwiseAval(p, args); !ok {
		return nil, false
	}
	var vb [4]*T
	var db [4]int
	vals, dims := vb[:len(args)], db[:len(args)]
	for i, a := range args {
		vals[i], dims[i] = b.unpack(a)
	}
	d, ok := FirstBatched(dims)
	if d == NotMapped {
		return nil, false
	}
	if !ok {
		d = 0
	}
	for i := range vals {
		switch {
		case dims[i] == NotMapped:
			vals[i] = b.broadcastOperand(vals[i], d)
		case dims[i] != d:
			vals[i] = MoveDim(vals[i], dims[i], d)
		}
	}
	out := interp.Bind1(p, params, vals...)
	return b.batchedBox(out, d).res[:], true
}

// Unbatched returns x's physical value with the batch dimension moved to
// outDim, broadcasting values that are not batched at this level.
func (b *Interp) Unbatched(x *T, outDim int) *T {
	v, d := b.unpack(x)
	if d == NotMapped {
		return BroadcastBatch(v, b.size, outDim)
	}
	return MoveDim(v, d, outDim)
}

func (b *Interp) unpack(x *T) (*T, int) {
	if tr, ok := interp.TracerOf(x).(*tracer); ok && tr.level == b.level {
		if tr.detached {
			tr = b.refresh(x, tr)
		}
		return tr.val, tr.bdim
	}
	return x, NotMapped
}

// refresh returns the payload of detached view x (whose physical value
// is a copy, not an alias of its base's), recomputed from its base
// (interp.Replay) when the base was written since x was computed (its
// generation moved on, see mutate), so reading x sees the write as an
// eager alias would.
func (b *Interp) refresh(x *T, tr *tracer) *tracer {
	v := interp.ViewInfo(x)
	if v == nil || v.Gen == interp.Generation(v.Base) {
		return tr
	}
	interp.Rebind(x, interp.Replay(x))
	v.Gen = interp.Generation(v.Base)
	return interp.TracerOf(x).(*tracer)
}

// Process applies p's batching rule to the operands' physical values.
func (b *Interp) Process(l *interp.Level, p *interp.Prim, params any, args []*T) []*T {
	if r, ok := b.elementwise(p, params, args); ok {
		return r
	}
	vals := make([]*T, len(args))
	dims := make([]int, len(args))
	any := false
	for i, a := range args {
		vals[i], dims[i] = b.unpack(a)
		any = any || dims[i] != NotMapped
	}
	if !any {
		return interp.Bind(p, params, vals...)
	}
	if p.Kind == interp.Mutation {
		return b.mutate(p, params, args, vals, dims)
	}
	if p.Impl == nil {
		// The rules assume valid operands: check the logical ones with
		// p's own shape rule, so errors name the shapes the caller sees.
		if _, ok := interp.ElementwiseAval(p, args); !ok {
			interp.Abstract(p, params, args)
		}
	}
	if nr := NamedRuleFor(p); nr != nil {
		outs, odims := nr(b.name, b.size, params, vals, dims)
		res := make([]*T, len(outs))
		for i, o := range outs {
			res[i] = b.Batched(o, odims[i])
		}
		return res
	}
	r := RuleFor(p)
	if r == nil {
		if p.Impl != nil {
			return p.Impl(params, args)
		}
		if fallbackMode.Load() == FallbackError {
			panic(&interp.Error{Prim: p.Name, Msg: "no batching rule (the loop fallback is disabled)"})
		}
		warnOnce(p)
		r = loopRule(p)
	}
	outs, odims := r(b.size, params, vals, dims)
	res := make([]*T, len(outs))
	for i, o := range outs {
		res[i] = b.Batched(o, odims[i])
	}
	if p.Kind == interp.ViewKind {
		b.markDetached(args[0], vals[0], res[0])
		if tr, ok := interp.TracerOf(res[0]).(*tracer); ok && tr.level == b.level {
			// The result is an alias of its operand, as eager's view
			// is: a level above that adopts it, or writes through it,
			// must reach its base (interp.MarkView).
			interp.MarkView(p, params, args[0], res[0])
		}
	}
	return res
}

// markDetached flags a view result that does not alias its operand at
// eval level, so that an in-place write through it is refused rather than
// lost.
func (b *Interp) markDetached(arg, val, res *T) {
	tr, ok := interp.TracerOf(res).(*tracer)
	if !ok || tr.level != b.level {
		return
	}
	if at, ok := interp.TracerOf(arg).(*tracer); ok && at.level == b.level && at.detached {
		tr.detached = true
		return
	}
	if val.IsConcrete() && tr.val.IsConcrete() && interp.ViewInfo(tr.val) == nil && tr.val != val {
		tr.detached = true
	}
}

// mutate performs an in-place primitive on batched values: the
// destination must be batched at this level; the sources are moved to its
// batch dimension and written with the same primitive below, so writes
// through views reach every alias.
func (b *Interp) mutate(p *interp.Prim, params any, args, vals []*T, dims []int) []*T {
	if tr, ok := interp.TracerOf(args[0]).(*tracer); ok && tr.level == b.level && tr.detached {
		panic(&interp.Error{Prim: p.Name, Msg: "in-place write through a view that vmap could not keep as an alias (its batched layout needed a copy): the write would not reach the base; wrap the function in Functionalize", Operands: []string{args[0].TypeString()}})
	}
	if dims[0] == NotMapped {
		panic(&interp.Error{Prim: p.Name, Msg: "in-place write of a batched value into a destination that is not batched at this level (a tensor created inside the vmapped function but outside Functionalize has one value for all lanes; one captured from outside Vmap cannot hold a value per lane even under Functionalize); write out of place, or wrap the function in Functionalize", Operands: []string{args[0].TypeString()}})
	}
	phys := make([]*T, len(vals))
	phys[0] = vals[0]
	for i := 1; i < len(vals); i++ {
		if dims[i] == NotMapped {
			phys[i] = BroadcastBatch(vals[i], b.size, dims[0])
		} else {
			phys[i] = MoveDim(vals[i], dims[i], dims[0])
		}
	}
	interp.Bind(p, params, phys...)
	// Aliases of the destination's base see the write through their
	// physical values, except detached views (copies): the generation
	// tells them to recompute (refresh).
	interp.BumpGeneration(interp.BaseOf(args[0]))
	return args[:1]
}

// loopRule runs p once per lane and stacks the results along 0.
func loopRule(p *interp.Prim) Rule {
	return func(size int, params any, args []*T, dims []int) ([]*T, []int) {
		lanes := runLanes(p, size, func(int) any { return params }, args, dims)
		outs := make([]*T, len(lanes[0]))
		odims := make([]int, len(outs))
		for j := range outs {
			outs[j] = stackLanes(lanes, j)
		}
		return outs, odims
	}
}

// runLanes binds p once per lane, in lane order, with params(i) on lane
// i of the batched operands (the others as they are), and returns each
// lane's results.
func runLanes(p *interp.Prim, size int, params func(i int) any, args []*T, dims []int) [][]*T {
	lanes := make([][]*T, size)
	for i := range lanes {
		in := make([]*T, len(args))
		for k, a := range args {
			in[k] = a
			if dims[k] != NotMapped {
				in[k] = Lane(a, dims[k], i)
			}
		}
		lanes[i] = interp.Bind(p, params(i), in...)
	}
	return lanes
}

// stackLanes stacks result j of every lane along a new leading axis (at
// least one lane).
func stackLanes(lanes [][]*T, j int) *T {
	parts := make([]*T, len(lanes))
	for i := range parts {
		parts[i] = BroadcastBatch(lanes[i][j], 1, 0)
	}
	return interp.Bind1(prims.Concatenate, prims.AxisParams{Axis: 0}, parts...)
}

// Wrapped appends the tracer's physical value (interp.Wrapper).
func (t *tracer) Wrapped(dst []*interp.Tensor) []*interp.Tensor { return append(dst, t.val) }
