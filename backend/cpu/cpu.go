package cpu

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// The compute dtypes' buffers (see buffer.go).
type (
	boolBuf = hostBuf[bool]
	i64Buf  = hostBuf[int64]
	f32Buf  = hostBuf[float32]
	f64Buf  = hostBuf[float64]
)

// kernel computes out from in. Inputs are contiguous (or, for kernels
// registered with splat, possibly a single broadcast element); outputs are
// fresh and contiguous.
type kernel func(params any, in, out []backend.Array)

type entry struct {
	fn kernel
	// splat: the kernel accepts inputs whose elements are all one memory
	// location (a broadcast scalar) without materializing them.
	splat bool
	// repeat: the kernel also accepts a contiguous block repeated along
	// leading zero-stride dimensions (see repeatBlock), and one element
	// per row broadcast along trailing ones (see rowSplat).
	repeat bool
	// strided: the kernel reads every operand through its strides (it
	// copies them with copyStrided), so Exec materializes none.
	strided bool
	// inPlace: the kernel reads each element of its first operand before
	// it writes the result element at that index and nothing else of it,
	// so out[0] may be in[0] (backend.InPlaceElementwise).
	inPlace bool
	// resolve, when set, returns the kernel's direct form for fixed
	// layouts, or nil (see Backend.Resolve and direct.go).
	resolve resolver
}

// registrations made by the kernel files' init functions.
var regs = map[*interp.Prim]entry{}

// register adds a kernel; it is called from init functions only.
func register(p *interp.Prim, splat bool, fn kernel) {
	if _, dup := regs[p]; dup {
		panic("cpu: kernel registered twice for " + p.Name)
	}
	regs[p] = entry{fn: fn, splat: splat}
}

// registerRepeat adds a binary elementwise kernel that reads splat and
// repeated-block operands in place.
func registerRepeat(p *interp.Prim, fn kernel) {
	register(p, true, fn)
	e := regs[p]
	e.repeat = true
	regs[p] = e
}

// registerStrided adds a kernel that reads operands of any layout.
func registerStrided(p *interp.Prim, fn kernel) {
	register(p, false, fn)
	e := regs[p]
	e.strided = true
	regs[p] = e
}

// setResolver gives p's registered kernel a resolver; it is called from
// init functions only, after register.
func setResolver(p *interp.Prim, r resolver) {
	e, ok := regs[p]
	if !ok {
		panic("cpu: resolver without a kernel for " + p.Name)
	}
	e.resolve = r
	regs[p] = e
}

// registerReferences gives every elementwise primitive with a
// prims.Reference and no kernel of its own the loop of its float64
// meaning (computed in float64, rounded to the result's dtype), so a new
// primitive needs no CPU code unless it wants a faster kernel. It runs
// once, when the kernel table is built, after every init function.
func registerReferences() {
	for _, p := range prims.References() {
		if _, ok := regs[p]; !ok {
			r, _ := prims.ReferenceOf(p)
			registerUnary(p, costHeavy, floatMapLoops(r.F))
		}
	}
}

// Backend is the CPU backend: pure Go kernels over Go slices, with BLAS
// from gonum (or OpenBLAS with -tags openblas). It is safe for concurrent
// use.
type Backend struct {
	once sync.Once
	// table is the kernel table indexed by primitive ID; RegisterKernel
	// replaces it with an extended copy (readers never lock).
	table atomic.Pointer[[]entry]
	mu    sync.Mutex
}

var (
	std     atomic.Pointer[Backend]
	threads atomic.Int64
)

// New returns the CPU backend. All calls return the same value.
func New() *Backend {
	if b := std.Load(); b != nil {
		return b
	}
	std.CompareAndSwap(nil, &Backend{})
	return std.Load()
}

// kernels returns the kernel table, built on first use: this file's init
// runs before the init functions of the kernel files, so New cannot build
// it.
func (b *Backend) kernels() []entry {
	if t := b.table.Load(); t != nil {
		return *t
	}
	return b.buildKernels()
}

// buildKernels builds the kernel table (kernels' slow path, apart so
// that kernels is inlined into Exec).
func (b *Backend) buildKernels() []entry {
	b.once.Do(func() {
		registerReferences()
		var n int
		for p := range regs {
			n = max(n, p.ID+1)
		}
		t := make([]entry, n)
		for p, e := range regs {
			t[p.ID] = e
		}
		b.table.Store(&t)
	})
	return *b.table.Load()
}

// RegisterKernel makes k the kernel of op, a primitive defined after the
// backend was built (the fused kernel of a customop.Define op). k receives
// contiguous row-major operands (Offset may be non-zero; Float64s and
// friends return their elements) and contiguous results, every element
// of which it must write.
// It must handle every compute dtype the op accepts: operands and results
// of a storage dtype (i32, u8, f16, bf16) reach it converted to their
// compute dtype (i64, f32), as every kernel's do (see storage.go). RegisterKernel panics with
// *interp.Error if op already has a kernel.
func (b *Backend) RegisterKernel(op backend.Op, k backend.Kernel) {
	b.mu.Lock()
	defer b.mu.Unlock()
	old := b.kernels()
	if op.ID < len(old) && old[op.ID].fn != nil {
		panic(&interp.Error{Prim: op.Name, Msg: "the cpu backend already has a kernel for this primitive"})
	}
	t := make([]entry, max(len(old), op.ID+1))
	copy(t, old)
	t[op.ID] = entry{fn: kernel(k)}
	b.table.Store(&t)
}

func init() {
	interp.SetDefaultBackend(New())
}

// SetThreads sets how many goroutines large kernels split their work
// across, and with -tags openblas how many threads OpenBLAS uses; n ≤ 0
// means runtime.GOMAXPROCS(0), the default.
func SetThreads(n int) {
	threads.Store(int64(n))
	setBLASThreads(Threads())
}

// Threads returns the number of goroutines large kernels use: the count
// last given to SetThreads, or by default runtime.GOMAXPROCS(0) (also
// after SetThreads(n) with n ≤ 0).
func Threads() int {
	if n := threads.Load(); n > 0 {
		return int(n)
	}
	return runtime.GOMAXPROCS(0)
}

// Threads returns the number of goroutines large kernels use (the
// package-level Threads; interp's blocked graph evaluation reads it).
func (*Backend) Threads() int { return Threads() }

// Name returns "cpu".
func (*Backend) Name() string { return "cpu" }

// Alloc returns a zeroed buffer of n elements. It panics with
// *interp.Error ("too large") when the buffer exceeds the allocation
// limit (backend.MaxAllocBytes), before any memory is touched.
func (*Backend) Alloc(dt backend.DType, n int) backend.Buffer {
	checkAlloc(dt, n)
	return makeBuf(dt, n)
}

// makeBuf returns a zeroed buffer of n elements of dt, unchecked (Alloc
// and the cache check the size first).
func makeBuf(dt backend.DType, n int) backend.Buffer {
	switch dt {
	case backend.Bool:
		return newBuf[bool](n)
	case backend.Int64:
		return newBuf[int64](n)
	case backend.Float32:
		return newBuf[float32](n)
	case backend.Float64:
		return newBuf[float64](n)
	}
	if b := allocStorage(dt, n); b != nil {
		return b
	}
	panic(fmt.Sprintf("cpu: alloc of dtype %v", dt))
}

// FromHost copies a []bool, []int64, []float32, []float64, []int32,
// []uint8, []backend.F16 or []backend.BF16. It panics
// with *interp.Error ("too large") when the copy exceeds the allocation
// limit, as Alloc does.
func (*Backend) FromHost(data any) backend.Buffer {
	switch d := data.(type) {
	case []bool:
		checkAlloc(backend.Bool, len(d))
		return copyBuf(d)
	case []int64:
		checkAlloc(backend.Int64, len(d))
		return copyBuf(d)
	case []float32:
		checkAlloc(backend.Float32, len(d))
		return copyBuf(d)
	case []float64:
		checkAlloc(backend.Float64, len(d))
		return copyBuf(d)
	}
	if b := storageFromHost(data, true); b != nil {
		return b
	}
	panic(fmt.Sprintf("cpu: FromHost of %T", data))
}

// HostView returns the slice of buf's elements (no copy), or nil
// for a buffer of another backend (backend.HostViewer).
func (*Backend) HostView(buf backend.Buffer) any {
	switch b := buf.(type) {
	case *boolBuf:
		return b.s
	case *i64Buf:
		return b.s
	case *f32Buf:
		return b.s
	case *f64Buf:
		return b.s
	case *i32Buf:
		return b.s
	case *u8Buf:
		return b.s
	case *f16Buf:
		return b.s
	case *bf16Buf:
		return b.s
	}
	return nil
}

// AdoptHost returns a host slice of a type FromHost takes as a buffer
// without copying it (backend.HostAdopter); it panics as FromHost
// does.
func (*Backend) AdoptHost(data any) backend.Buffer {
	switch d := data.(type) {
	case []bool:
		checkAlloc(backend.Bool, len(d))
		return &boolBuf{s: d}
	case []int64:
		checkAlloc(backend.Int64, len(d))
		return &i64Buf{s: d}
	case []float32:
		checkAlloc(backend.Float32, len(d))
		return &f32Buf{s: d}
	case []float64:
		checkAlloc(backend.Float64, len(d))
		return &f64Buf{s: d}
	}
	if b := storageFromHost(data, false); b != nil {
		return b
	}
	panic(fmt.Sprintf("cpu: AdoptHost of %T", data))
}

// checkAlloc panics with *interp.Error when a buffer of n elements of dt
// exceeds the allocation limit (or n is negative, which no checked shape
// gives).
func checkAlloc(dt backend.DType, n int) {
	if n < 0 {
		panic(&interp.Error{Msg: "cpu: buffer of negative size " + strconv.Itoa(n)})
	}
	if err := backend.CheckAlloc(dt, n); err != nil {
		panic(&interp.Error{Msg: err.Error()})
	}
}

// ToHost copies a's elements in row-major order.
func (b *Backend) ToHost(a backend.Array) any {
	n := a.Size()
	c := a
	if !a.IsContiguous() {
		c = backend.Array{Buf: b.Alloc(a.Buf.DType(), n), Shape: a.Shape}
		b.Copy(c, a)
	}
	lo, hi := c.Offset, c.Offset+n
	if n == 0 {
		lo, hi = 0, 0
	}
	switch buf := c.Buf.(type) {
	case *boolBuf:
		return append([]bool{}, buf.s[lo:hi]...)
	case *i64Buf:
		return append([]int64{}, buf.s[lo:hi]...)
	case *f32Buf:
		return append([]float32{}, buf.s[lo:hi]...)
	case *f64Buf:
		return append([]float64{}, buf.s[lo:hi]...)
	}
	if h := storageToHost(c.Buf, lo, hi); h != nil {
		return h
	}
	panic("cpu: foreign buffer")
}

// Copy copies src into dst element by element (both possibly strided).
// When src aliases dst it is first copied to a temporary.
func (b *Backend) Copy(dst, src backend.Array) {
	if dst.Size() == 0 {
		return
	}
	if sameBuffer(dst.Buf, src.Buf) && !(src.Offset == dst.Offset && equalInts(src.EffectiveStrides(), dst.EffectiveStrides())) {
		src = b.contiguous(src)
	}
	copyStrided(dst, src)
}

// Has reports whether op has a kernel.
func (b *Backend) Has(op backend.Op) bool {
	t := b.kernels()
	return op.ID < len(t) && t[op.ID].fn != nil
}

// Exec runs op's kernel, first materializing inputs the kernel cannot read
// in place. A kernel whose results all have no elements is not run: it has
// nothing to write, and the partial products of an empty shape's other
// dimensions, which its loops would take, may wrap (backend.CheckedSize).
func (b *Backend) Exec(op backend.Op, params any, in, out []backend.Array) {
	if allEmpty(out) {
		return
	}
	e := &b.kernels()[op.ID]
	if hasStorage(in, out) {
		b.execStorage(e, op, params, in, out)
		return
	}
	var scratch uint64 // bit i: in[i] is a copy from the cache
	for i := range in {
		a := &in[i]
		if e.strided || a.Strides == nil || a.IsContiguous() || (e.splat && a.IsSplat()) || (e.repeat && (repeatBlock(*a) > 0 || rowSplat(*a) > 0)) {
			continue
		}
		if i >= 64 { // past scratch's bits (no kernel takes so many)
			in[i] = b.contiguous(*a)
			continue
		}
		c, cached := scratchCopy(*a)
		if cached {
			scratch |= 1 << i
		}
		in[i] = c
	}
	if scratch == 0 {
		e.fn(params, in, out)
		return
	}
	execScratch(e, params, in, out, scratch)
}

// scratchCopy returns a contiguous copy of a for a kernel that cannot
// read it in place, in a buffer from the cache when it is of a cached
// size (and whether it is): the copy writes every element, so the
// buffer needs no zeroing, and it is dead once the kernel returns
// (execScratch recycles it). Fresh zeroed memory for each such copy was
// 7% of an unrolled RNN's eager gradient (rnn_unrolled_grad_f32).
func scratchCopy(a backend.Array) (backend.Array, bool) {
	n := a.Size()
	dt := a.Buf.DType()
	checkAlloc(dt, n)
	buf, cached := cache.get(dt, n)
	if !cached {
		buf = makeBuf(dt, n)
	}
	c := backend.Array{Buf: buf, Shape: a.Shape}
	copyStrided(c, a)
	return c, cached
}

// execScratch runs e's kernel and then returns to the cache the inputs
// that scratch marks, copies scratchCopy made for it (also when the
// kernel panics: the copies are the backend's, nothing else holds them).
func execScratch(e *entry, params any, in, out []backend.Array, scratch uint64) {
	defer func() {
		for i := range in {
			if scratch&(1<<i) != 0 {
				cache.put(in[i].Buf)
			}
		}
	}()
	e.fn(params, in, out)
}

// allEmpty reports whether there is at least one result and none has
// elements.
func allEmpty(out []backend.Array) bool {
	for _, o := range out {
		if !hasZero(o.Shape) {
			return false
		}
	}
	return len(out) > 0
}

func hasZero(shape []int) bool {
	for _, d := range shape {
		if d == 0 {
			return true
		}
	}
	return false
}

// contiguous returns a row-major copy of a in a buffer from b's
// allocator: how Exec materializes an operand its kernel cannot read in
// place, and how strided kernels (registerStrided) materialize the
// layouts they do not take.
func (b *Backend) contiguous(a backend.Array) backend.Array {
	c := backend.Array{Buf: b.Alloc(a.Buf.DType(), a.Size()), Shape: a.Shape}
	copyStrided(c, a)
	return c
}

// nonNegative returns a, or a contiguous copy of it when one of its
// strides is negative: for strided kernels (registerStrided) whose loops
// walk their operands forward.
func nonNegative(a backend.Array) backend.Array {
	if a.Strides == nil || !slices.ContainsFunc(a.Strides, func(s int) bool { return s < 0 }) {
		return a
	}
	return New().contiguous(a)
}

func equalInts(a, b []int) bool {
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

// sameBuffer reports whether two buffers share backing memory.
func sameBuffer(x, y backend.Buffer) bool {
	switch a := x.(type) {
	case *boolBuf:
		return sameElems(a.s, y)
	case *i64Buf:
		return sameElems(a.s, y)
	case *f32Buf:
		return sameElems(a.s, y)
	case *f64Buf:
		return sameElems(a.s, y)
	case *i32Buf:
		return sameElems(a.s, y)
	case *u8Buf:
		return sameElems(a.s, y)
	case *f16Buf:
		return sameElems(a.s, y)
	case *bf16Buf:
		return sameElems(a.s, y)
	}
	return false
}

// sameElems reports whether y is a buffer of elements of a's type that
// start where a does (two headers may hold the same elements: a host
// slice adopted twice).
func sameElems[T elem](a []T, y backend.Buffer) bool {
	b, ok := y.(*hostBuf[T])
	return ok && len(a) > 0 && len(b.s) > 0 && &a[0] == &b.s[0]
}

// SharesMemory reports whether the elements of buffers x and y overlap,
// and true when either is not a buffer of this backend
// (backend.MemorySharer).
func (*Backend) SharesMemory(x, y backend.Buffer) bool {
	lx, hx, okx := span(x)
	ly, hy, oky := span(y)
	if !okx || !oky {
		return true
	}
	return lx < hx && ly < hy && lx < hy && ly < hx
}

var _ backend.MemorySharer = (*Backend)(nil)

// ElementwiseInPlace reports whether op's kernel may write its result
// over its first operand (backend.InPlaceElementwise): the binary
// arithmetic kernels, whose loops (and whose materialized operands, which
// are copies) read an element of each operand before writing the result
// element at its index.
func (b *Backend) ElementwiseInPlace(op backend.Op) bool {
	t := b.kernels()
	return op.ID < len(t) && t[op.ID].inPlace
}

var _ backend.InPlaceElementwise = (*Backend)(nil)

// span returns the addresses of buf's first element and of the byte
// after its last, and false for a buffer of another backend.
func span(buf backend.Buffer) (lo, hi uintptr, ok bool) {
	switch b := buf.(type) {
	case *boolBuf:
		return elemSpan(b.s)
	case *i64Buf:
		return elemSpan(b.s)
	case *f32Buf:
		return elemSpan(b.s)
	case *f64Buf:
		return elemSpan(b.s)
	case *i32Buf:
		return elemSpan(b.s)
	case *u8Buf:
		return elemSpan(b.s)
	case *f16Buf:
		return elemSpan(b.s)
	case *bf16Buf:
		return elemSpan(b.s)
	}
	return 0, 0, false
}

func elemSpan[T elem](s []T) (lo, hi uintptr, ok bool) {
	var z T
	lo = uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return lo, lo + uintptr(len(s))*unsafe.Sizeof(z), true
}

// Slice accessors for contiguous arrays (honouring Offset).

// An empty array may carry any offset, so it maps to an empty slice.

func f64s(a backend.Array) []float64 { return contig(a.Buf.(*f64Buf).s, a) }
func f32s(a backend.Array) []float32 { return contig(a.Buf.(*f32Buf).s, a) }
func i64s(a backend.Array) []int64   { return contig(a.Buf.(*i64Buf).s, a) }
func bools(a backend.Array) []bool   { return contig(a.Buf.(*boolBuf).s, a) }

func contig[T any](buf []T, a backend.Array) []T {
	n := a.Size()
	if n == 0 {
		return buf[:0]
	}
	return buf[a.Offset : a.Offset+n]
}

// zero sets every element of contiguous array a to zero (false): kernels
// with nothing to compute still write their results, which may be reused
// buffers rather than fresh zeroed memory (the Exec contract).
func zero(a backend.Array) {
	switch buf := a.Buf.(type) {
	case *boolBuf:
		clear(contig(buf.s, a))
	case *i64Buf:
		clear(contig(buf.s, a))
	case *f32Buf:
		clear(contig(buf.s, a))
	case *f64Buf:
		clear(contig(buf.s, a))
	default:
		zeroStorage(a)
	}
}
