package interp

import (
	"runtime"
	"sync"

	"github.com/peel-ml/peel/backend"
)

// Eval is the eval interpreter: it runs p on concrete operands with their
// backend's kernel. Bind calls it when no operand is a tracer; interpreters
// never need to call it directly.
//
// View primitives return a tensor sharing the operand's buffer; mutation
// primitives write into the destination's buffer, so a mutation through a
// view is visible through the base and every other alias.
func Eval(p *Prim, params any, args []*Tensor) []*Tensor {
	if watching.Load() != 0 && p.Kind == Pure {
		outs := eval(p, params, args)
		noteProvenance(args, outs)
		return outs
	}
	return eval(p, params, args)
}

// eval is Eval without the provenance of traced compiled functions.
func eval(p *Prim, params any, args []*Tensor) []*Tensor {
	if p.Impl != nil && !hasKernel(p, args) {
		// Copied so that args (often the caller's variadic slice) stays
		// on the stack on the kernel path.
		if p.EvalImpl != nil {
			return p.EvalImpl(params, append([]*Tensor(nil), args...))
		}
		return p.Impl(params, append([]*Tensor(nil), args...))
	}
	if p.NoEval != "" {
		panic(&Error{Prim: p.Name, Msg: p.NoEval})
	}
	if p.Impl == nil && p.EvalImpl != nil {
		// A primitive whose evaluation is Go code rather than a kernel
		// (the collectives: a device's communicator answers them).
		return p.EvalImpl(params, append([]*Tensor(nil), args...))
	}
	be := evalBackend(p, args)
	if out, ok := ElementwiseAval(p, args); ok {
		return evalOne(be, p, params, args, out)
	}
	outs := Abstract(p, params, args)
	switch p.Kind {
	case ViewKind:
		return evalView(be, p, params, args[0], outs[0])
	case Mutation:
		return []*Tensor{evalMutation(be, p, params, args)}
	}
	if len(outs) == 1 {
		return evalOne(be, p, params, args, outs[0])
	}
	checkKernel(be, p)
	f := newFrame(args)
	res := make([]*Tensor, len(outs))
	out := make([]backend.Array, len(outs))
	var few [4]bool // no allocation for the usual few results
	cached := few[:0]
	if len(outs) > len(few) {
		cached = make([]bool, 0, len(outs))
	}
	cached = cached[:len(outs)]
	for i, o := range outs {
		var buf backend.Buffer
		buf, cached[i] = allocResult(be, o.DType, o.Shape)
		out[i] = backend.Array{Buf: buf, Shape: o.Shape}
	}
	be.Exec(p.Op, params, f.ins(len(args)), out)
	runtime.KeepAlive(args)
	f.release()
	for i := range outs {
		res[i] = concreteTensor(be, out[i])
		if cached[i] {
			recycleWhenUnreachable(res[i].st, be, out[i].Buf)
		}
	}
	return res
}

// hasKernel reports whether the backend of a composite's concrete
// operands has a (fused) kernel for it. Whole or not: Whole is how
// staging records the composite, and one that staged graphs see
// decomposed (prims.Linear) may still have a kernel eagerly. Such a
// composite whose operands live on different backends decomposes, as
// before it had a kernel (a Whole one is refused, as it always was).
func hasKernel(p *Prim, args []*Tensor) bool {
	if p.Whole {
		return evalBackend(p, args).Has(p.Op)
	}
	var be backend.Backend
	for _, a := range args {
		switch {
		case be == nil:
			be = a.be
		case a.be != be:
			return false
		}
	}
	if be == nil {
		be = DefaultBackend()
	}
	return be.Has(p.Op)
}

// ElementwiseAval checks the operands of an elementwise primitive against
// its rule (data, no allocation) and returns the result's type. It
// returns false when p is not elementwise or the operands are bad, in
// which case Abstract runs and reports the error.
func ElementwiseAval(p *Prim, args []*Tensor) (Aval, bool) {
	r := p.Elementwise
	if r == nil || len(args) != r.Arity {
		return Aval{}, false
	}
	a0 := args[0]
	for _, a := range args[1:] {
		if a.dtype != a0.dtype || !ShapeEqual(a.shape, a0.shape) {
			return Aval{}, false
		}
	}
	if !r.Accepts(a0.dtype) {
		return Aval{}, false
	}
	d := r.Result
	if d == backend.Invalid {
		d = a0.dtype
	}
	return Aval{a0.shape, d}, true
}

func checkKernel(be backend.Backend, p *Prim) {
	if !be.Has(p.Op) {
		panic(&Error{Prim: p.Name, Msg: "backend " + be.Name() + " has no kernel for this primitive"})
	}
}

// frame holds the operand arrays handed to a kernel. Frames are recycled
// through a sync.Pool (per-P caches, no global lock), which the Backend
// contract allows: Exec does not retain its slices.
type frame struct {
	in  [4]backend.Array
	out [1]backend.Array
	big []backend.Array
}

var frames = sync.Pool{New: func() any { return new(frame) }}

func newFrame(args []*Tensor) *frame {
	f := frames.Get().(*frame)
	if len(args) > len(f.in) {
		f.big = make([]backend.Array, len(args))
	}
	in := f.in[:]
	if f.big != nil {
		in = f.big
	}
	for i, a := range args {
		a.arrayInto(&in[i])
	}
	return f
}

// release clears f's references and returns it to the pool.
func (f *frame) release() {
	*f = frame{}
	frames.Put(f)
}

func (f *frame) ins(n int) []backend.Array {
	if f.big != nil {
		return f.big
	}
	return f.in[:n]
}

// result is a one-result Bind answer: the tensor, its storage and the
// slice holding it in one allocation.
type result struct {
	t   Tensor
	st  storage
	res [1]*Tensor
}

// evalOne runs a pure primitive with one result.
func evalOne(be backend.Backend, p *Prim, params any, args []*Tensor, o Aval) []*Tensor {
	checkKernel(be, p)
	f := newFrame(args)
	buf, cached := allocResult(be, o.DType, o.Shape)
	f.out[0] = backend.Array{Buf: buf, Shape: o.Shape}
	be.Exec(p.Op, params, f.ins(len(args)), f.out[:])
	// The operands' storages stay reachable until their kernel is done:
	// a cached operand buffer found unreachable during Exec would be
	// handed out again while the kernel reads it.
	runtime.KeepAlive(args)
	r := &result{t: Tensor{shape: shapeOf(o.Shape), dtype: o.DType, strides: f.out[0].Strides, offset: f.out[0].Offset, be: be, born: born()}}
	r.st.init(f.out[0].Buf)
	r.t.st = &r.st
	r.res[0] = &r.t
	if cached {
		recycleWhenUnreachable(&r.st, be, buf)
	}
	f.release()
	return r.res[:]
}

func evalBackend(p *Prim, args []*Tensor) backend.Backend {
	var be backend.Backend
	for _, a := range args {
		if be == nil {
			be = a.be
		} else if a.be != be {
			panic(&Error{Prim: p.Name, Msg: "operands live on different backends (" + be.Name() + ", " + a.be.Name() + ")"})
		}
	}
	if be == nil {
		be = DefaultBackend()
	}
	return be
}

// BaseOf returns the base of a view chain (t itself if t is not a view).
func BaseOf(t *Tensor) *Tensor {
	if t.view != nil {
		return t.view.Base
	}
	return t
}

func evalView(be backend.Backend, p *Prim, params any, x *Tensor, out Aval) []*Tensor {
	arr, ok := p.ViewArray(params, x.array())
	if !ok {
		// No strided view exists: the result is a copy, not an alias
		// (like torch's reshape of a non-contiguous tensor).
		c := Contiguous(x)
		arr, _ = p.ViewArray(params, c.array())
		return []*Tensor{{shape: shapeOf(out.Shape), dtype: out.DType, strides: arr.Strides, offset: arr.Offset, st: c.st, be: be, born: born()}}
	}
	base := BaseOf(x)
	// The tensor, its View and the result list in one allocation: a view
	// lives as long as its tensor.
	r := &viewResult{
		t: Tensor{shape: shapeOf(out.Shape), dtype: out.DType, strides: arr.Strides, offset: arr.Offset, st: x.st, be: be, born: born()},
		v: View{Base: base, Parent: x, Prim: p, Params: params, Gen: base.gen},
	}
	r.t.view = &r.v
	r.res[0] = &r.t
	return r.res[:]
}

// viewResult is evalView's answer: the view tensor, its View and the
// result list holding it.
type viewResult struct {
	t   Tensor
	v   View
	res [1]*Tensor
}

// Contiguous returns a concrete tensor with x's elements in a fresh
// contiguous buffer (x itself if it already owns a contiguous layout).
func Contiguous(x *Tensor) *Tensor {
	arr, be := ArrayOf(x)
	if arr.IsContiguous() && arr.Offset == 0 && arr.Buf.Len() == arr.Size() {
		return x
	}
	// The copy writes every element: the buffer comes from the cache,
	// not zeroed, when the backend has one.
	buf, cached := allocResult(be, x.dtype, x.shape)
	dst := backend.Array{Buf: buf, Shape: x.shape}
	be.Copy(dst, arr)
	runtime.KeepAlive(x)
	t := concreteTensor(be, dst)
	if cached {
		recycleWhenUnreachable(t.st, be, buf)
	}
	return t
}

func evalMutation(be backend.Backend, p *Prim, params any, args []*Tensor) *Tensor {
	dst := args[0]
	if dst.array().Overlaps() {
		panic(&Error{Prim: p.Name, Msg: "the destination is a broadcast view: more than one of its elements refers to the same memory location (clone it before writing)", Operands: []string{dst.TypeString()}})
	}
	// The value written: copy_'s source itself (Copy reads it in place,
	// through a temporary where it overlaps the destination), else the
	// pure primitive's result.
	val := OutOfPlace(p, params, args)
	// Snapshots of this memory (graph constants, saved values) keep the
	// values they were taken at: the write goes to a private copy.
	dst.st.unshare(be, dst.dtype)
	if watching.Load() != 0 {
		dst.st.written = epoch.Add(1)
		noteWrittenProvenance(dst, args[1:])
	}
	be.Copy(dst.array(), val.array())
	runtime.KeepAlive(val)
	runtime.KeepAlive(args)
	BaseOf(dst).gen++
	return dst
}

// UpdateInPlace computes the elementwise primitive p of dst and args
// into dst's own memory, as if dst were replaced by Bind(p, params, dst,
// args...)'s result, and reports whether it did. It does so only where
// that is unobservable but through dst: dst and args are concrete (no
// transform is tracing them), p's result has dst's shape and dtype, dst
// is a whole contiguous buffer that no snapshot shares (Donatable) and
// no operand shares memory with, and dst's backend lets p's kernel write
// over its first operand (backend.InPlaceElementwise). Otherwise it
// does nothing and the caller binds p as usual.
//
// The caller vouches that nothing else holds dst or a view of it: a
// tensor it made itself and has given to no one, as the backward pass's
// running sums of cotangents (autodiff.TransposeGraph), which so reuse
// one buffer where each sum took a new one.
func UpdateInPlace(p *Prim, params any, dst *Tensor, args ...*Tensor) bool {
	if dst.view != nil || !Donatable(dst) {
		return false
	}
	be := dst.be
	ip, ok := be.(backend.InPlaceElementwise)
	if !ok || !be.Has(p.Op) || !ip.ElementwiseInPlace(p.Op) {
		return false
	}
	ms, _ := be.(backend.MemorySharer)
	for _, a := range args {
		if a == nil || a.tr != nil || a.be != be || a.st == nil || a.st.buf == nil || a.view != nil && a.view.Base.tr != nil || a.st == dst.st {
			return false
		}
		if ms == nil || ms.SharesMemory(a.st.buf, dst.st.buf) {
			return false
		}
	}
	all := make([]*Tensor, 0, 4)
	all = append(append(all, dst), args...)
	o, ok := ElementwiseAval(p, all)
	if !ok || o.DType != dst.dtype || !ShapeEqual(o.Shape, dst.shape) {
		return false
	}
	f := newFrame(all)
	out := f.ins(len(all))[0]
	be.Exec(p.Op, params, f.ins(len(all)), []backend.Array{out})
	runtime.KeepAlive(all)
	if watching.Load() != 0 {
		dst.st.written = epoch.Add(1)
		noteWrittenProvenance(dst, args)
	}
	dst.gen++
	f.release()
	return true
}

// allocCheckMin is the element count from which eval checks the
// allocation limit itself, naming the shape.
const allocCheckMin = 1 << 14

// alloc allocates a result buffer of the given type, refusing with
// *Error a buffer whose bytes exceed the allocation limit
// (backend.SetMaxAllocBytes) before any memory is touched, so the
// message names the shape.
func alloc(be backend.Backend, dt DType, shape []int) backend.Buffer {
	// Result shapes come from shape rules, which check their sizes
	// (backend.CheckedSize); only the byte limit is left to check. Small
	// buffers are left to the backend's own check (which cannot name the
	// shape), so the per-op path of small tensors stays as short as it
	// was.
	n := backend.ShapeSize(shape)
	if n < allocCheckMin {
		return be.Alloc(dt, n)
	}
	if err := backend.CheckAlloc(dt, n); err != nil {
		if ae, ok := err.(*backend.AllocError); ok {
			ae.Shape = shape
		}
		panic(&Error{Msg: err.Error()})
	}
	return be.Alloc(dt, n)
}

// AllocResult allocates a buffer for a result of n elements whose every
// element the caller will write (a compiled program's output): from the
// backend's cache when it has one, not zeroed, else zeroed by Alloc. When cached is set, the caller must make
// the buffer's one tensor with NewResult, which gives the buffer back to
// the cache when that tensor's storage becomes unreachable. It panics
// with *Error ("too large") above the allocation limit.
func AllocResult(be backend.Backend, dt DType, n int) (buf backend.Buffer, cached bool) {
	return allocResultN(be, dt, n, nil)
}

// NewResult returns a concrete tensor over arr, whose buffer AllocResult
// gave from the cache and which nothing else uses: the buffer goes back
// to the cache once the tensor's storage is unreachable.
func NewResult(be backend.Backend, arr backend.Array) *Tensor {
	t := concreteTensor(be, arr)
	recycleWhenUnreachable(t.st, be, arr.Buf)
	return t
}

// allocResult allocates a kernel result's buffer: from the backend's
// cache when it has one (backend.BufferCache; the elements are then
// unspecified, which a kernel result allows), else zeroed by Alloc.
// cached reports a buffer the caller must hand to recycleWhenUnreachable
// with the storage that holds it. It refuses a buffer above the
// allocation limit as alloc does.
func allocResult(be backend.Backend, dt DType, shape []int) (buf backend.Buffer, cached bool) {
	return allocResultN(be, dt, backend.ShapeSize(shape), shape)
}

// allocResultN is allocResult of n elements; shape, when known, names
// the buffer in the error above the allocation limit.
func allocResultN(be backend.Backend, dt DType, n int, shape []int) (buf backend.Buffer, cached bool) {
	c, ok := be.(backend.BufferCache)
	if !ok {
		if shape == nil {
			return be.Alloc(dt, n), false
		}
		return alloc(be, dt, shape), false
	}
	if n >= allocCheckMin {
		if err := backend.CheckAlloc(dt, n); err != nil {
			if ae, ok := err.(*backend.AllocError); ok && shape != nil {
				ae.Shape = shape
			}
			panic(&Error{Msg: err.Error()})
		}
	}
	return c.AllocUninit(dt, n)
}

// recycled is what a storage's cleanup needs: the cache and the buffer.
type recycled struct {
	c   backend.BufferCache
	buf backend.Buffer
}

// recycleWhenUnreachable gives buf back to be's cache once s, the
// storage made to hold it, is unreachable. Every holder of buf's memory
// keeps s reachable: the boxes, views and NewBox copies of the storage
// point to s, snapshots to its first block (a field of s), and code that
// reads a tensor's array (ArrayOf) keeps the tensor alive until it is
// done (runtime.KeepAlive).
func recycleWhenUnreachable(s *storage, be backend.Backend, buf backend.Buffer) {
	runtime.AddCleanup(s, recycle, recycled{be.(backend.BufferCache), buf})
}

func recycle(r recycled) { r.c.Recycle(r.buf) }

// MarkView records on r, the result of view primitive p applied to x at
// an interpreter level, that r is an alias of x (View: base, parent,
// primitive, the base's generation), when eager evaluation would make r
// an alias of x. A view primitive that no strides can express on the
// layout eager gives x (reshaping a transpose) copies at eval, so r is
// then a value of its own and nothing is recorded. Every interpreter
// whose view results stand for aliases calls it (functionalize, the
// autodiff levels, vmap), so a level above that adopts r, or writes
// through it, finds its base.
func MarkView(p *Prim, params any, x, r *Tensor) {
	// Every view primitive has strides on a contiguous layout, the one
	// eager gives any value that is not itself a view, so only a view
	// of a view (or of a concrete tensor) needs its layout worked out.
	if x.view != nil || x.tr == nil {
		if _, ok := p.ViewArray(params, eagerLayout(x)); !ok {
			return
		}
	}
	base := BaseOf(x)
	r.view = &View{Base: base, Parent: x, Prim: p, Params: params, Gen: base.gen}
}

// eagerLayout returns the layout (shape, strides, offset; no buffer)
// that eager evaluation gives x: a concrete tensor's own, a view's from
// its parent's through its view primitive, and contiguous for any other
// value (every primitive but a view makes a fresh contiguous result).
func eagerLayout(x *Tensor) backend.Array {
	if x.tr == nil {
		arr := x.array()
		arr.Buf = nil
		return arr
	}
	if v := x.view; v != nil {
		if arr, ok := v.Prim.ViewArray(v.Params, eagerLayout(v.Parent)); ok {
			return arr
		}
	}
	return backend.Array{Shape: x.shape}
}
