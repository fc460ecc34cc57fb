package interp

import (
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/peel-ml/peel/backend"
)

// DType is the element type of a tensor.
type DType = backend.DType

// The supported dtypes.
const (
	Bool    = backend.Bool
	Int64   = backend.Int64
	Float32 = backend.Float32
	Float64 = backend.Float64

	Int32    = backend.Int32
	Uint8    = backend.Uint8
	Float16  = backend.Float16
	BFloat16 = backend.BFloat16
)

// Aval is the abstract value of a tensor: what shape and dtype rules see.
type Aval struct {
	Shape []int
	DType DType
}

// String formats a as "f64[2,3]".
func (a Aval) String() string { return a.DType.String() + backend.FormatShapeCompact(a.Shape) }

// Size returns the number of elements.
func (a Aval) Size() int { return backend.ShapeSize(a.Shape) }

// Equal reports whether a and b have the same shape and dtype.
func (a Aval) Equal(b Aval) bool { return a.DType == b.DType && ShapeEqual(a.Shape, b.Shape) }

// AvalsEqual reports whether a and b hold equal avals in order.
func AvalsEqual(a, b []Aval) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// AvalsKey returns a string naming the avals in order ("f64[2,3];i64[];"),
// for caches keyed by operand types.
func AvalsKey(avals []Aval) string {
	var b strings.Builder
	for _, a := range avals {
		b.WriteString(a.String())
		b.WriteByte(';')
	}
	return b.String()
}

// ShapeEqual reports whether two shapes are equal.
func ShapeEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Tracer is the payload of a tensor that belongs to an interpreter level.
// Each interpreter defines its own tracer type; the payload typically wraps
// tensors of lower levels.
type Tracer interface {
	// Level returns the level the tracer belongs to.
	Level() *Level
}

// Wrapper is implemented by tracers that hold tensors of lower levels
// (a primal and a tangent, a batched value, a current value): Wrapped
// appends them to dst and returns it, for FindLevelData to look through.
type Wrapper interface {
	Wrapped(dst []*Tensor) []*Tensor
}

// FindLevelData returns the data (Level.WithData) of type D of the
// highest live level among the levels of ts and of the tensors their
// tracers wrap, all the way down; ok is false when no such level holds
// one. A transform uses it to find settings of an enclosing transform
// whose values it is given.
func FindLevelData[D any](ts ...*Tensor) (d D, ok bool) {
	// An explicit stack and a seen list on the stack: a gradient calls
	// this for its arguments on every call, under Vmap with tracers.
	var stackBuf, seenBuf [16]*Tensor
	stack, seen := append(stackBuf[:0], ts...), seenBuf[:0]
	var best *Level
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if t == nil || t.tr == nil || slices.Contains(seen, t) {
			continue
		}
		seen = append(seen, t)
		l := t.tr.Level()
		if _, is := l.data.(D); is && l.Alive() && (best == nil || l.id > best.id) {
			best = l
		}
		if w, is := t.tr.(Wrapper); is {
			stack = w.Wrapped(stack)
		}
	}
	if best == nil {
		return d, false
	}
	return best.data.(D), true
}

// Snapshotter is implemented by tracers whose content their interpreter
// updates in place when a mutation is answered (vmap writes a batched
// value's physical tensor below; functionalize replaces a box's current
// value in its payload): Snapshot returns a payload holding the current
// content that later writes do not reach (Snapshot).
type Snapshotter interface {
	Snapshot() Tracer
}

// SnapshotReleaser is implemented by Snapshotter payloads that hold
// snapshots of lower tensors: ReleaseSnapshot gives up their use of
// memory when the snapshot is no longer needed (Graph.ReleaseConstants),
// and does nothing for a payload that is not a snapshot.
type SnapshotReleaser interface {
	ReleaseSnapshot()
}

// ReleaseSnapshot gives up snapshot t's use of its memory, so the tensor
// it was taken of is written without a copy; t must not be used
// afterwards. Interpreters' snapshot payloads (SnapshotReleaser) call it
// on the snapshots they hold.
func ReleaseSnapshot(t *Tensor) { t.release() }

// ShowsSnapshot reports whether t shows the content of live snapshot
// snap (of a concrete tensor): both concrete, over the same memory block
// with the same layout. While the snapshot lives, a write into that
// memory first moves the writer to a copy, so its block keeps the values
// it had when the snapshot was taken: a cache keyed by snapshots (the
// prefetched all-gathers of package dist/ddp) tells a tensor whose
// values it holds from one written or replaced since.
func ShowsSnapshot(snap, t *Tensor) bool {
	return snap != nil && t != nil && snap.tr == nil && t.tr == nil && snap.st != nil && t.st != nil &&
		snap.st.cur != nil && snap.st.cur == t.st.cur && snap.offset == t.offset &&
		ShapeEqual(snap.shape, t.shape) && slices.Equal(snap.strides, t.strides) && snap.dtype == t.dtype
}

// Materializer is implemented by tracers whose value can be computed on
// demand (the lazy interpreter of a compiled function with graph
// breaks): reading such a tracer's elements (Item, Float64s, Array, …)
// reads the concrete tensor Materialize returns instead of failing. A
// nil result means the value cannot be known, and the read fails as
// for any tracer.
type Materializer interface {
	Materialize() *Tensor
}

// materialized returns the concrete value of t's tracer when it has one
// (Materializer), or nil.
func (t *Tensor) materialized() *Tensor {
	if m, ok := t.tr.(Materializer); ok {
		if c := m.Materialize(); c != nil && c.tr == nil {
			return c
		}
	}
	return nil
}

// Tensor is the one value type of peel. A *Tensor is a box with identity:
// its content is either a concrete array on a backend or a tracer payload of
// exactly one level. Shape and DType always report the logical shape. A
// tensor made by a view primitive records its base and the view that made
// it (see View). Shapes returned by Shape are shared: do not modify them.
//
// Its methods are the user's (peel.Tensor is this type). What
// interpreters do to a box — read its tracer or array (TracerOf,
// ArrayOf, AvalOf), replace its content (Rebind), record and follow views
// (SetViewInfo, ViewInfo, Generation, BumpGeneration, Version), snapshot
// it (Snapshot, ReleaseSnapshot) — are package functions of interp, so
// `go doc peel.Tensor` lists only the user's API.
type Tensor struct {
	shape []int
	dtype DType
	// Concrete content (tr == nil): the layout over shape (strides, nil
	// when contiguous, and offset) and the memory it indexes (st's
	// current block; see array).
	strides []int
	offset  int
	st      *storage
	be      backend.Backend
	// Tracer content.
	tr Tracer
	// view is non-nil when the tensor was made by a view primitive.
	view *View
	// gen counts mutations of this tensor when it is a base of views.
	gen uint64
	// version counts Rebinds: a change of content.
	version uint64
	// born is the epoch (see epoch) when the box was made: a body
	// trace refuses writes into boxes born before it (checkBodyWrite),
	// and a watching trace reports eager writes only into tensors born
	// before it (noteWritten).
	born uint64
}

// storage is the memory that aliasing concrete tensors share: a base,
// its views, and boxes given the same content (NewBox, Rebind) point to
// one storage, so a write through any of them is seen by all. The
// storage's buffer belongs to its current block; a block may also be
// used by other storages (snapshots: graph constants and values an
// interpreter saved), which must not see later writes. A write through a
// storage whose block is shared first moves the storage to a private
// copy in a new block (copy-on-write), so the snapshots keep the values
// they were taken at. Nothing here is a list of readers: taking a
// snapshot is one atomic increment on the block, so goroutines sharing a
// tensor never write a common field except that counter. The buffer is
// kept in the storage itself, so reading it is one load from the tensor.
type storage struct {
	buf   backend.Buffer
	cur   *block
	first block // cur points here until the first copy-on-write
	// written is the epoch of eval's last write into the storage,
	// stamped only while a trace watches eager writes (WatchWrites).
	written uint64
	// from is the provenance of memory computed or written eagerly
	// while a trace watched eager writes (provenance.go); nil otherwise.
	// It belongs to the memory, so every view of it shares it.
	from *provenance
}

// epoch is the one clock that orders tensors against traces: every box
// records it when made (Tensor.born); the traces that must tell tensors
// from before them from tensors made while they run (body traces,
// watching traces) move it on when they start, and so do eager writes
// while a trace watches them. watching counts the live traces that
// watch eager writes. epoch is read once per box made and watching once
// per eager operation; both are written only while tracing.
var (
	epoch    atomic.Uint64
	watching atomic.Int32
	// watchFloor is the start of the earliest watching trace alive
	// (only meaningful while watching > 0).
	watchFloor atomic.Uint64
)

// block stands for one buffer: the number of storages using it besides
// the first (zero: one user, so a fresh block needs no atomic store).
type block struct {
	refs atomic.Int64
}

// newStorage returns a storage holding buf (a fresh buffer no other
// storage uses).
func newStorage(buf backend.Buffer) *storage {
	s := &storage{}
	s.init(buf)
	return s
}

func (s *storage) init(buf backend.Buffer) {
	s.buf = buf
	s.cur = &s.first
}

// unshare gives s a private copy of its block's buffer when other
// storages use the block, before s is written.
func (s *storage) unshare(be backend.Backend, dt DType) {
	b := s.cur
	if b.refs.Load() <= 0 {
		return
	}
	n := s.buf.Len()
	nb := be.Alloc(dt, n)
	be.Copy(backend.Array{Buf: nb, Shape: []int{n}}, backend.Array{Buf: s.buf, Shape: []int{n}})
	s.buf, s.cur = nb, new(block)
	b.refs.Add(-1)
}

// release gives up a snapshot's use of its block, so the block's other
// users write without copying. The box must not be used afterwards.
func (t *Tensor) release() {
	if r, ok := t.tr.(SnapshotReleaser); ok {
		r.ReleaseSnapshot()
		return
	}
	if t.tr == nil && t.st != nil && t.st.cur != nil {
		t.st.cur.refs.Add(-1)
		t.st.buf, t.st.cur = nil, nil
	}
}

// concreteTensor returns a concrete tensor with layout arr in a new
// storage holding arr.Buf.
func concreteTensor(be backend.Backend, arr backend.Array) *Tensor {
	return &Tensor{shape: shapeOf(arr.Shape), dtype: arr.Buf.DType(), strides: arr.Strides, offset: arr.Offset, st: newStorage(arr.Buf), be: be, born: born()}
}

// array returns the concrete array: the layout over the storage's
// current buffer.
func (t *Tensor) array() backend.Array {
	return backend.Array{Buf: t.st.buf, Shape: t.shape, Strides: t.strides, Offset: t.offset}
}

// arrayInto stores array() into *dst field by field: building the array
// in a temporary and copying it would read back, in wide loads, the
// narrow stores just made (a store-forwarding stall on every operand).
func (t *Tensor) arrayInto(dst *backend.Array) {
	dst.Buf = t.st.buf
	dst.Shape = t.shape
	dst.Strides = t.strides
	dst.Offset = t.offset
}

// Snapshot returns a new box holding t's current content such that
// later in-place writes into t (or any alias of it) are not seen through
// the snapshot, and writes into the snapshot are not seen through t. For
// a concrete t no data is copied now: the buffer is shared copy-on-write,
// and the first write through either side copies it. A tracer's snapshot
// is a new box holding the same tracer, or, for a tracer whose content
// its interpreter updates in place (a Snapshotter: vmap writes its
// physical value, functionalize replaces its current value), the
// tracer's own snapshot. Staging uses snapshots for graph constants, so a
// Graph keeps the values its constants had when they were traced.
func Snapshot(t *Tensor) *Tensor {
	if t.tr != nil {
		tr := t.tr
		if s, ok := tr.(Snapshotter); ok {
			tr = s.Snapshot()
		}
		return &Tensor{shape: t.shape, dtype: t.dtype, tr: tr, born: born()}
	}
	b := t.st.cur
	b.refs.Add(1)
	st := &storage{buf: t.st.buf, cur: b}
	if watching.Load() != 0 {
		// While a compiled function is traced, a snapshot remembers what
		// it was taken of (provenance.go), so a trace nested in it that
		// holds the snapshot as a constant makes the compiled function
		// depend on the original (noteNestedConst).
		p := &provenance{}
		p.add(t)
		st.from = p
	}
	return &Tensor{shape: t.shape, dtype: t.dtype, strides: t.strides, offset: t.offset, st: st, be: t.be, born: born()}
}

// View records how a view tensor was made from its base, so interpreters
// that cannot share memory (functionalize, staging) can replay the view
// from the base, and write an updated view back into it.
type View struct {
	// Base is the tensor the view chain starts from (never itself a view).
	Base *Tensor
	// Parent is the tensor the view primitive was applied to (Base or
	// another view of it).
	Parent *Tensor
	Prim   *Prim
	Params any
	// Gen is the base's generation when the view's content was last
	// computed.
	Gen uint64
}

// NewConcrete returns a tensor holding arr on backend be. The tensor takes
// ownership of arr; shape is arr.Shape.
func NewConcrete(be backend.Backend, arr backend.Array) *Tensor {
	return concreteTensor(be, arr)
}

// AliasOf returns a concrete tensor with arr's layout over t's storage:
// arr must index t's current buffer (a compiled program's result
// computed into a donated input's memory). The result shares t's
// memory as a view does, so the memory lives, and is not recycled, as
// long as either does. It panics with *Error if t is not concrete.
func AliasOf(t *Tensor, arr backend.Array) *Tensor {
	if t.tr != nil || t.st == nil {
		panic(&Error{Msg: "AliasOf: not a concrete tensor", Operands: []string{t.TypeString()}})
	}
	return &Tensor{shape: shapeOf(arr.Shape), dtype: arr.Buf.DType(), strides: arr.Strides, offset: arr.Offset, st: t.st, be: t.be, born: born()}
}

// NewTracer returns a tensor whose content is tracer tr with the given
// logical abstract value. It panics with *Error if tr is nil (a tensor
// known only by its type is a Placeholder).
func NewTracer(a Aval, tr Tracer) *Tensor {
	if tr == nil {
		panic(&Error{Ops: []string{"interp.NewTracer"}, Msg: "nil tracer payload (use interp.Placeholder for a tensor known only by its shape and dtype)", Operands: []string{a.String()}})
	}
	return &Tensor{shape: shapeOf(a.Shape), dtype: a.DType, tr: tr, born: born()}
}

// TracerValue returns, by value, the box NewTracer would allocate, for
// interpreters that allocate the box together with their payload.
func TracerValue(a Aval, tr Tracer) Tensor {
	return Tensor{shape: shapeOf(a.Shape), dtype: a.DType, tr: tr, born: born()}
}

// scalarShape is the shape of every rank-0 tensor: empty but not nil, so
// that FromFloat64s(data, t.Shape()...) keeps rank 0 (a nil variadic shape
// means 1-D there).
var scalarShape = []int{}

func shapeOf(s []int) []int {
	if s == nil {
		return scalarShape
	}
	return s
}

// Shape returns the logical shape (never nil; empty for rank 0). The
// slice is shared: do not modify it.
func (t *Tensor) Shape() []int { return t.shape }

// DType returns the element type.
func (t *Tensor) DType() DType { return t.dtype }

// Rank returns the number of dimensions.
func (t *Tensor) Rank() int { return len(t.shape) }

// Size returns the number of elements.
func (t *Tensor) Size() int { return backend.ShapeSize(t.shape) }

// AvalOf returns the tensor's shape and dtype.
func AvalOf(t *Tensor) Aval { return Aval{t.shape, t.dtype} }

// TypeString formats the shape and dtype as "f64[2,3]".
func (t *Tensor) TypeString() string {
	if t == nil {
		return "nil"
	}
	return AvalOf(t).String()
}

// IsConcrete reports whether the content is a concrete array.
func (t *Tensor) IsConcrete() bool { return t.tr == nil }

// TracerOf returns the tracer payload, or nil for a concrete tensor.
func TracerOf(t *Tensor) Tracer { return t.tr }

// ArrayOf returns the concrete array and its backend. It panics with *Error
// if t is a tracer.
//
// The array's buffer stays t's only while t is reachable: once the
// collector finds t's storage unreachable, a cached buffer goes back to
// its backend's cache (backend.BufferCache) and may be handed out again.
// A caller that reads or writes the array after its last use of t
// keeps t alive until it is done (runtime.KeepAlive(t)), or holds the
// buffer through a tensor (NewConcrete does not: it makes a new
// storage).
func ArrayOf(t *Tensor) (backend.Array, backend.Backend) {
	if t.tr != nil {
		if c := t.materialized(); c != nil {
			return ArrayOf(c)
		}
		panic(t.tracedReadError("read"))
	}
	return t.array(), t.be
}

// ViewInfo returns how t was made from its base, or nil if t is not a view.
func ViewInfo(t *Tensor) *View { return t.view }

// SetViewInfo records that t is a view. Interpreters call it on the result
// of a view primitive.
func SetViewInfo(t *Tensor, v *View) { t.view = v }

// Generation returns the number of times t (as a base) has been mutated.
func Generation(t *Tensor) uint64 { return t.gen }

// Version counts the times t's content was replaced (Rebind): with the
// base's Generation it tells whether a value derived from t is stale.
func Version(t *Tensor) uint64 { return t.version }

// BumpGeneration records a mutation of base t.
func BumpGeneration(t *Tensor) { t.gen++ }

// NewBox returns a new box holding t's current content (concrete array or
// tracer), without t's view record. Interpreters that adopt a box use it
// to keep the content the box had below their level.
func NewBox(t *Tensor) *Tensor {
	return &Tensor{shape: t.shape, dtype: t.dtype, strides: t.strides, offset: t.offset, st: t.st, be: t.be, tr: t.tr, born: born()}
}

// Rebind replaces t's content with src's content (concrete array or
// tracer). It is how a mutation performed out of place by an interpreter
// becomes visible through the box t. The logical shape and dtype must
// agree.
func Rebind(t *Tensor, src *Tensor) {
	if !ShapeEqual(t.shape, src.shape) || t.dtype != src.dtype {
		panic(Errorf("rebind: shape or dtype changes from %s to %s", t.TypeString(), src.TypeString()))
	}
	t.strides, t.offset, t.st, t.be, t.tr = src.strides, src.offset, src.st, src.be, src.tr
	t.version++
}

func (t *Tensor) tracedReadError(what string) *Error {
	l := t.tr.Level()
	return &Error{
		Msg:       "cannot " + what + " the value of a traced tensor: its value is not known while the function is being transformed; for Go control flow on tensor values use transforms.Cond or transforms.Switch (a branch), transforms.Scan or transforms.ForiLoop (a loop of a known number of steps) and transforms.WhileLoop (a loop while a condition on values holds), whose bodies every transform sees",
		Operands:  []string{t.TypeString()},
		Transform: l.Name(),
		Level:     l.ID(),
	}
}

// host returns the concrete elements as a host slice.
func (t *Tensor) host(op string) any {
	if t.tr != nil {
		if c := t.materialized(); c != nil {
			return c.host(op)
		}
		e := t.tracedReadError("read")
		e.Ops = []string{op}
		panic(e)
	}
	h := t.be.ToHost(t.array())
	runtime.KeepAlive(t) // its buffer is read until ToHost returns
	return h
}

// Float64s returns a copy of the elements as float64s in row-major order.
// It panics with *Error if t is not a float64 tensor or is a tracer.
func (t *Tensor) Float64s() []float64 {
	t.checkRead("Float64s", Float64)
	return t.host("Float64s").([]float64)
}

// Float32s returns a copy of the elements of a float32 tensor, or the
// elements of a float16 or bfloat16 tensor widened (exactly) to float32.
// It panics with *Error if t has another dtype or is a tracer.
func (t *Tensor) Float32s() []float32 {
	if t != nil && (t.dtype == Float16 || t.dtype == BFloat16) {
		return t.widened("Float32s")
	}
	t.checkRead("Float32s", Float32)
	return t.host("Float32s").([]float32)
}

// Int64s returns a copy of the elements of an int64 tensor.
// It panics with *Error if t is not an int64 tensor or is a tracer.
func (t *Tensor) Int64s() []int64 {
	t.checkRead("Int64s", Int64)
	return t.host("Int64s").([]int64)
}

// Bools returns a copy of the elements of a bool tensor.
// It panics with *Error if t is not a bool tensor or is a tracer.
func (t *Tensor) Bools() []bool {
	t.checkRead("Bools", Bool)
	return t.host("Bools").([]bool)
}

func (t *Tensor) checkRead(op string, dt DType) {
	if t == nil {
		panic(&Error{Ops: []string{op}, Msg: "nil tensor"})
	}
	if t.dtype != dt {
		panic(&Error{Ops: []string{op}, Msg: "tensor has dtype " + t.dtype.String() + ", not " + dt.String() + " (convert it with AsType first)", Operands: []string{t.TypeString()}})
	}
}

// Item returns the single element of a size-1 tensor as a float64 (bools
// give 0 or 1). It panics with *Error if t has more than one element or
// is a tracer.
func (t *Tensor) Item() float64 {
	if t == nil {
		panic(&Error{Ops: []string{"Item"}, Msg: "nil tensor"})
	}
	if t.Size() != 1 {
		panic(&Error{Ops: []string{"Item"}, Msg: "tensor has " + strconv.Itoa(t.Size()) + " elements, not 1", Operands: []string{t.TypeString()}})
	}
	h := t.host("Item")
	if f, ok := storageItem(h); ok {
		return f
	}
	switch v := h.(type) {
	case []float64:
		return v[0]
	case []float32:
		return float64(v[0])
	case []int64:
		return float64(v[0])
	case []bool:
		if v[0] {
			return 1
		}
		return 0
	}
	panic(&Error{Ops: []string{"Item"}, Msg: "unsupported dtype"})
}

// OwnValue returns a box holding v's value that shares no writable
// memory with another tensor: a concrete broadcast view (several
// elements on one location, as a Fill's scalar source) is materialized,
// any other concrete value is a Snapshot; a tracer is returned as it is
// (interpreters answer writes into tracers out of place). Interpreters
// use it to give a box written out of place its final value.
func OwnValue(v *Tensor) *Tensor {
	if v.tr != nil {
		return v
	}
	if v.array().Overlaps() {
		dst := backend.Array{Buf: v.be.Alloc(v.dtype, v.Size()), Shape: v.shape}
		v.be.Copy(dst, v.array())
		runtime.KeepAlive(v)
		return concreteTensor(v.be, dst)
	}
	return Snapshot(v)
}

// Donatable reports whether t's buffer may be taken over by a caller
// that was given t to consume: t is concrete, contiguous from offset 0
// over its whole buffer, and no snapshot (a graph constant, a saved
// value) shares its memory.
func Donatable(t *Tensor) bool {
	if t == nil || t.tr != nil || t.st == nil || t.st.buf == nil || t.st.cur == nil {
		return false
	}
	a := t.array()
	return a.IsContiguous() && a.Offset == 0 && a.Buf.Len() == a.Size() && t.st.cur.refs.Load() <= 0
}

// SameStorage reports whether two concrete tensors share memory through
// one storage (a base and its views, boxes of one content).
func SameStorage(a, b *Tensor) bool { return a != nil && b != nil && a.st != nil && a.st == b.st }
