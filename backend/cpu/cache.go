package cpu

import (
	"math"
	"math/bits"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/peel-ml/peel/backend"
)

// The caching allocator (backend.BufferCache). Kernel results of at least
// cacheMinBytes come from size-classed free lists, one per dtype and
// class, and go back to them when the eval interpreter finds the storage
// holding them unreachable (a runtime.AddCleanup on the storage). A
// reused buffer is not zeroed: every kernel writes each element of its
// results. Smaller buffers (under a page) are left to Go's allocator,
// whose per-P caches serve them without a lock.
//
// Each list has its own mutex, held for a push or a pop, so goroutines
// allocating different sizes or dtypes never wait for each other and
// there is no lock common to every allocation.
//
// The cache is bounded: a buffer recycled while the cached bytes would
// exceed the limit is dropped to the collector. After a collection the
// cache also drops, in each list, the buffers that stayed unused for at
// least trimAge (the list's low-water mark over that time), so memory a
// program stopped using goes back to the collector, and through its
// scavenger to the operating system, within about trimAge and a cycle.
// Under a Go memory limit
// (debug.SetMemoryLimit, GOMEMLIMIT) the default cache limit is an
// eighth of it.

// cacheMinBytes is the smallest buffer the cache keeps: a page. Go's
// allocator serves smaller objects from per-P caches quickly, but every
// buffer it hands out is zeroed and counts toward the next collection,
// whose pacing (GOGC against a small live heap) then makes the allocating
// goroutine assist the collector: buffers of a few KiB (a vmapped loop
// over 1,024 lanes of float64, 8 KiB a value) spent half their step in
// mallocgc, most of it in assists. From the cache they come back
// unzeroed and the collections are the cache's own (gcEvery). At 32 KiB
// (Go's large-object threshold, the earlier bound) the vmapped Newton
// loop took 1.35–1.59 ms a step, at 4 KiB 1.11–1.22 (compiled: 1.28–1.44
// and 0.89–1.01).
const cacheMinBytes = 4 << 10

// gcEvery is the fewest bytes of cached sizes handed out between two
// collections the cache asks for. A collection of a small heap costs
// about a third of a millisecond; 32 MiB is where measured eager chains
// (peelbench chain_1m_f32, mlp_step_f32, coscos_grad_f32) ran fastest at
// one and two threads: fewer bytes pay more collections, more bytes
// leave more buffers in flight and fewer of them in the CPU's caches.
const gcEvery = 32 << 20

// trimAge is how long a cached buffer stays unused before a trim lets
// it go. It is a time, not a number of collections: the cache asks for
// a collection every gcEvery bytes, so a training step collects many
// times, and a buffer its backward pass needs stays unused through the
// forward pass's collections. Dropped at the collection after its last
// use (as it was), a GPT step (peelbench gpt_step_f32) took 219 of its
// 386 buffers fresh from Go's allocator, zeroed, 40 MB a step, and
// spent a tenth of its time zeroing and faulting them in.
const trimAge = time.Second

// classesPerDouble is how many size classes split each power of two:
// rounding a size up to its class wastes under a quarter of it.
const classesPerDouble = 4

// numClasses covers sizes up to 2^62 bytes.
const numClasses = 16 + (62-15+1)*classesPerDouble

type freeList struct {
	mu   sync.Mutex
	bufs []backend.Buffer
	// low is the fewest buffers the list held since the last trim.
	low int
	// inUse and cached are the bytes of the list's class handed out and
	// held (MemoryStats.ByDType), kept under mu, which get and put take
	// anyway: no atomic of their own on the allocation path.
	inUse, cached int64
}

type bufferCache struct {
	lists [backend.BFloat16 + 1][numClasses]freeList
	// held counts the buffers in each dtype's lists, so a trim skips
	// the dtypes (usually all: small workloads cache nothing) that hold
	// none without taking 208 locks each.
	held [backend.BFloat16 + 1]atomic.Int64

	inUse, cached, peak atomic.Int64
	limit               atomic.Int64
	// used marks the dtypes the cache has handed out, whose lists stats
	// sums.
	used                  [backend.BFloat16 + 1]atomic.Bool
	hits, misses, trimmed atomic.Int64
	// since counts the bytes handed out since the last collection;
	// past gcEvery bytes, and past GOGC percent of the bytes in use
	// before them (the collector's own pacing applied to cached
	// buffers), the allocating goroutine runs a collection (collecting
	// is true meanwhile), so the buffers that became unreachable come
	// back before fresh memory piles up. With collection off (GOGC=off)
	// it never does.
	since      atomic.Int64
	collecting atomic.Bool
	// lastTrim is when trim last dropped the buffers unused since the
	// trim before (time since trimEpoch); trims in between only let the
	// low-water marks fall.
	lastTrim atomic.Int64
	// poison, set by PEEL_CACHE_CHECK=1 (a testing mode), fills every
	// recycled buffer with a pattern and caches every size, so a
	// missing keep-alive (a buffer read after its storage was found
	// unreachable) shows as wrong values in any test.
	poison bool
	minB   int
}

var cache = newBufferCache()

func newBufferCache() *bufferCache {
	c := &bufferCache{minB: cacheMinBytes}
	if os.Getenv("PEEL_CACHE_CHECK") == "1" {
		c.poison, c.minB = true, 1
	}
	c.limit.Store(defaultCacheLimit())
	armTrim(c)
	return c
}

// defaultCacheLimit is an eighth of the physical memory or of the Go
// memory limit, whichever is less, and at most 2 GiB.
func defaultCacheLimit() int64 {
	l := backend.DefaultMaxAllocBytes() / 8
	if m := debug.SetMemoryLimit(-1); m > 0 && m < math.MaxInt64 {
		l = min(l, m/8)
	}
	return min(l, 2<<30)
}

// trimSentinel is the object whose collection runs a trim. It holds a
// pointer so that it is not a tiny allocation, which shares its memory
// block with other tiny objects and may live on with them.
type trimSentinel struct{ _ *byte }

// armTrim runs c.trim after the next collection, and again after each.
func armTrim(c *bufferCache) {
	runtime.AddCleanup(new(trimSentinel), func(c *bufferCache) {
		c.trim()
		armTrim(c)
	}, c)
}

// sizeClass returns the class of a buffer of b ≥ 1 bytes and the class's
// size in bytes: up to 32 KiB b is rounded up to a power of two (the
// buffers from a page to 32 KiB are mostly powers of two already: 1,024
// float64, 4,096 float32), and above to a quarter of its power of two.
func sizeClass(b int) (int, int) {
	if b <= 1<<15 {
		k := bits.Len(uint(b - 1))
		return k, 1 << k
	}
	k := bits.Len(uint(b-1)) - 1 // 2^k < b ≤ 2^(k+1)
	step := 1 << (k - 2)
	s := (b - 1<<k + step - 1) / step // 1..4
	return 16 + (k-15)*classesPerDouble + s - 1, 1<<k + s*step
}

// get returns a buffer of n elements of dt, not zeroed, and whether it is
// the cache's.
func (c *bufferCache) get(dt backend.DType, n int) (backend.Buffer, bool) {
	size := dt.Size()
	b := n * size
	if b < c.minB || int(dt) >= len(c.lists) || size == 0 {
		return nil, false
	}
	cl, cb := sizeClass(b)
	if backend.CheckAlloc(dt, cb/size) != nil {
		// Rounded up to its class, the buffer would pass the
		// allocation limit that its own size does not.
		return nil, false
	}
	if s := c.since.Add(int64(cb)); s > gcEvery && c.collecting.CompareAndSwap(false, true) {
		if gogc := gcPercent(); gogc >= 0 && s > (c.inUse.Load()-s)*gogc/100 {
			c.collect()
		} else {
			c.collecting.Store(false)
		}
	}
	if !c.used[dt].Load() {
		c.used[dt].Store(true)
	}
	l := &c.lists[dt][cl]
	l.mu.Lock()
	var buf backend.Buffer
	if k := len(l.bufs); k > 0 {
		buf = l.bufs[k-1]
		l.bufs[k-1] = nil
		l.bufs = l.bufs[:k-1]
		l.low = min(l.low, k-1)
		l.cached -= int64(cb)
		c.held[dt].Add(-1)
	}
	l.inUse += int64(cb)
	l.mu.Unlock()
	if buf != nil {
		c.hits.Add(1)
		c.cached.Add(-int64(cb))
	} else {
		c.misses.Add(1)
		buf = makeBuf(dt, cb/size)
	}
	notePeak(&c.peak, c.inUse.Add(int64(cb)))
	reslice(buf, n)
	return buf, true
}

// notePeak raises peak to v when v is larger.
func notePeak(peak *atomic.Int64, v int64) {
	for {
		p := peak.Load()
		if v <= p || peak.CompareAndSwap(p, v) {
			return
		}
	}
}

// resetPeak sets the peak to the bytes in use now.
func (c *bufferCache) resetPeak() { c.peak.Store(c.inUse.Load()) }

// put returns a buffer get gave to its list, or drops it when the cache
// is full.
func (c *bufferCache) put(buf backend.Buffer) {
	dt := buf.DType()
	full := bufCap(buf)
	cb := full * dt.Size()
	cl, _ := sizeClass(cb)
	l := &c.lists[dt][cl]
	c.inUse.Add(-int64(cb))
	if c.cached.Add(int64(cb)) > c.limit.Load() {
		c.cached.Add(-int64(cb))
		c.trimmed.Add(int64(cb))
		l.mu.Lock()
		l.inUse -= int64(cb)
		l.mu.Unlock()
		return
	}
	reslice(buf, full)
	if c.poison {
		poisonBuf(buf)
	}
	l.mu.Lock()
	l.bufs = append(l.bufs, buf)
	l.inUse -= int64(cb)
	l.cached += int64(cb)
	c.held[dt].Add(1)
	l.mu.Unlock()
}

// gcPercent returns the collector's GOGC setting (debug.SetGCPercent,
// the GOGC variable): -1 when collection is off, which the cache then
// respects by never asking for one.
func gcPercent() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100
	}
	v := s[0].Value.Uint64()
	if v > math.MaxInt32 {
		return -1
	}
	return int64(min(v, 1<<20)) // no overflow when scaling the bytes in use
}

// collect runs a collection, which finds the storages that became
// unreachable and so returns their buffers (see armTrim).
func (c *bufferCache) collect() {
	runtime.GC()
	c.since.Store(0)
	c.collecting.Store(false)
	// Let the cleanups the collection queued run, even on one P.
	runtime.Gosched()
}

// trimEpoch is the origin of bufferCache.lastTrim's times.
var trimEpoch = time.Now()

// trim drops from each list the buffers unused for trimAge (trimAt).
func (c *bufferCache) trim() { c.trimAt(time.Since(trimEpoch)) }

// trimAt is trim at time now (since trimEpoch): when trimAge has passed
// since the last trim that dropped, it drops from each list the buffers
// unused since then (the low-water mark) and starts the marks again;
// before that it drops nothing.
func (c *bufferCache) trimAt(now time.Duration) {
	c.since.Store(0)
	if last := time.Duration(c.lastTrim.Load()); now-last < trimAge || !c.lastTrim.CompareAndSwap(int64(last), int64(now)) {
		return
	}
	for d := range c.lists {
		if c.held[d].Load() == 0 {
			// Every list of d is empty, and so is its low-water mark.
			continue
		}
		for i := range c.lists[d] {
			l := &c.lists[d][i]
			l.mu.Lock()
			if drop := l.low; drop > 0 {
				var bytes int64
				for _, b := range l.bufs[:drop] {
					bytes += int64(bufCap(b) * b.DType().Size())
				}
				n := copy(l.bufs, l.bufs[drop:])
				clear(l.bufs[n:])
				l.bufs = l.bufs[:n]
				c.held[d].Add(-int64(drop))
				l.cached -= bytes
				c.cached.Add(-bytes)
				c.trimmed.Add(bytes)
			}
			l.low = len(l.bufs)
			l.mu.Unlock()
		}
	}
}

// empty drops every cached buffer.
func (c *bufferCache) empty() {
	for d := range c.lists {
		for i := range c.lists[d] {
			l := &c.lists[d][i]
			l.mu.Lock()
			var bytes int64
			for _, b := range l.bufs {
				bytes += int64(bufCap(b) * b.DType().Size())
			}
			c.held[d].Add(-int64(len(l.bufs)))
			l.bufs, l.low = nil, 0
			l.cached -= bytes
			l.mu.Unlock()
			c.cached.Add(-bytes)
			c.trimmed.Add(bytes)
		}
	}
}

func (c *bufferCache) stats() backend.MemoryStats {
	s := backend.MemoryStats{
		InUse: c.inUse.Load(), Cached: c.cached.Load(), Peak: c.peak.Load(), Limit: c.limit.Load(),
		Hits: c.hits.Load(), Misses: c.misses.Load(), Trimmed: c.trimmed.Load(),
	}
	for dt := range c.lists {
		if !c.used[dt].Load() {
			continue
		}
		var m backend.DTypeMemory
		for i := range c.lists[dt] {
			l := &c.lists[dt][i]
			l.mu.Lock()
			m.InUse += l.inUse
			m.Cached += l.cached
			l.mu.Unlock()
		}
		if m != (backend.DTypeMemory{}) {
			if s.ByDType == nil {
				s.ByDType = make(map[backend.DType]backend.DTypeMemory)
			}
			s.ByDType[backend.DType(dt)] = m
		}
	}
	return s
}

// bufCap returns the capacity of b, whose class put finds from it.
func bufCap(b backend.Buffer) int {
	switch b := b.(type) {
	case *boolBuf:
		return cap(b.s)
	case *i64Buf:
		return cap(b.s)
	case *f32Buf:
		return cap(b.s)
	case *f64Buf:
		return cap(b.s)
	case *i32Buf:
		return cap(b.s)
	case *u8Buf:
		return cap(b.s)
	case *f16Buf:
		return cap(b.s)
	case *bf16Buf:
		return cap(b.s)
	}
	panic("cpu: recycling a buffer of another backend")
}

// reslice sets the length of b, a buffer of the cache's, to n, in place:
// the buffer's header is the cache's while it holds it, and its user's
// after get, so no new header is allocated.
func reslice(b backend.Buffer, n int) {
	r, ok := b.(interface{ reslice(int) })
	if !ok {
		panic("cpu: recycling a buffer of another backend")
	}
	r.reslice(n)
}

// poisonBuf fills b with a value no test expects: NaN for floats, a
// large odd number for integers, true for booleans.
func poisonBuf(b backend.Buffer) {
	switch b := b.(type) {
	case *boolBuf:
		fillSlice(b.s, true)
	case *i64Buf:
		fillSlice(b.s, -0x5eed_dead_beef)
	case *f32Buf:
		fillSlice(b.s, float32(math.NaN()))
	case *f64Buf:
		fillSlice(b.s, math.NaN())
	case *i32Buf:
		fillSlice(b.s, -0x5eedbeef)
	case *u8Buf:
		fillSlice(b.s, 0xa5)
	case *f16Buf:
		fillSlice(b.s, 0x7e01)
	case *bf16Buf:
		fillSlice(b.s, 0x7fc1)
	}
}

// AllocUninit returns a buffer of n elements whose elements are
// unspecified, from the cache when it is of a cached size (at least 4
// KiB); it panics as Alloc does when the buffer exceeds the allocation
// limit (backend.BufferCache).
func (*Backend) AllocUninit(dt backend.DType, n int) (backend.Buffer, bool) {
	checkAlloc(dt, n)
	if buf, ok := cache.get(dt, n); ok {
		return buf, true
	}
	return makeBuf(dt, n), false
}

// Recycle returns a buffer AllocUninit gave from the cache, which nothing
// references any more (backend.BufferCache).
func (*Backend) Recycle(buf backend.Buffer) { cache.put(buf) }

// ResetPeakMemory sets the caching allocator's peak to the bytes in use
// now (backend.BufferCache).
func (*Backend) ResetPeakMemory() { cache.resetPeak() }

// MemoryStats returns the caching allocator's counters
// (backend.BufferCache).
func (*Backend) MemoryStats() backend.MemoryStats { return cache.stats() }

// SetCacheLimit sets the most bytes the caching allocator keeps for
// reuse and returns the previous limit; n < 0 only reports it, n = 0
// keeps nothing. Lowering it below the bytes cached drops them all
// (backend.BufferCache). The cache is the process's: every cpu Backend
// shares it. The default limit is an eighth of the physical memory or of
// the Go memory limit in force when the program starts (GOMEMLIMIT),
// whichever is less, and at most 2 GiB.
func (*Backend) SetCacheLimit(n int64) int64 {
	old := cache.limit.Load()
	if n < 0 {
		return old
	}
	cache.limit.Store(n)
	if cache.cached.Load() > n {
		cache.empty()
	}
	return old
}

// EmptyCache drops every buffer the caching allocator keeps, leaving
// them to the collector (backend.BufferCache).
func (*Backend) EmptyCache() { cache.empty() }
