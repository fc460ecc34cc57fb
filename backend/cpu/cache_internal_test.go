package cpu

import (
	"runtime"
	"testing"
	"time"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/prims"
	"pgregory.net/rapid"
)

// TestSizeClass checks the classes: a class holds its size, rounds up by
// less than a quarter above 32 KiB, and sizes map to classes in order.
func TestSizeClass(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.IntRange(1, 1<<40).Draw(t, "bytes")
		cl, cb := sizeClass(b)
		if cl < 0 || cl >= numClasses {
			t.Fatalf("sizeClass(%d) = class %d, outside [0, %d)", b, cl, numClasses)
		}
		if cb < b {
			t.Fatalf("sizeClass(%d): class size %d is smaller", b, cb)
		}
		if b > 1<<15 && 4*(cb-b) >= cb {
			t.Fatalf("sizeClass(%d): class size %d wastes a quarter or more", b, cb)
		}
		if cl2, cb2 := sizeClass(cb); cl2 != cl || cb2 != cb {
			t.Fatalf("sizeClass(%d) = %d, %d but its class size maps to %d, %d", b, cl, cb, cl2, cb2)
		}
		c := rapid.IntRange(1, 1<<40).Draw(t, "other")
		if cl3, _ := sizeClass(c); (c < b && cl3 > cl) || (c > b && cl3 < cl) {
			t.Fatalf("sizeClass out of order: %d → %d, %d → %d", b, cl, c, cl3)
		}
	})
}

// TestCacheCounts checks a private cache's lists and counters through
// misses, hits, the limit, trims and emptying.
func TestCacheCounts(t *testing.T) {
	c := &bufferCache{minB: cacheMinBytes}
	c.limit.Store(1 << 20)
	if _, ok := c.get(backend.Float32, 100); ok {
		t.Fatal("a 400-byte buffer came from the cache")
	}
	a, ok := c.get(backend.Float32, 10000) // 40000 bytes: class 40 KiB
	if !ok || a.Len() != 10000 || bufCap(a) != 10240 {
		t.Fatalf("get(f32, 10000) = len %d cap %d, %v", a.Len(), bufCap(a), ok)
	}
	st := c.stats()
	if st.InUse != 40960 || st.Cached != 0 || st.Misses != 1 || st.Hits != 0 || st.Peak != 40960 {
		t.Fatalf("after a miss: %+v", st)
	}
	a.(*f32Buf).s[9999] = 7
	c.put(a)
	if st = c.stats(); st.InUse != 0 || st.Cached != 40960 {
		t.Fatalf("after a put: %+v", st)
	}
	b, _ := c.get(backend.Float32, 9000) // same class
	if &b.(*f32Buf).s[0] != &a.(*f32Buf).s[0] || b.Len() != 9000 {
		t.Fatal("a buffer of the same class was not reused")
	}
	if st = c.stats(); st.Hits != 1 || st.InUse != 40960 || st.Cached != 0 {
		t.Fatalf("after a hit: %+v", st)
	}
	if d, _ := c.get(backend.Float64, 5000); c.stats().Misses != 2 || d.DType() != backend.Float64 {
		t.Fatal("another dtype was served from the f32 list")
	} else {
		c.put(d)
	}
	// Over the limit: dropped.
	big, _ := c.get(backend.Float64, 1<<17) // 1 MiB
	c.put(b)
	c.put(big)
	if st = c.stats(); st.Cached != 2*40960 || st.Trimmed != 1<<20 {
		t.Fatalf("a put over the limit: %+v", st)
	}
	// A trim drops what stayed unused for trimAge: a trim sooner than
	// that after the last one that dropped lets nothing go, however
	// many collections ran meanwhile (a training step's backward pass
	// reuses what its forward pass left through many of them).
	now := trimAge
	c.trimAt(now) // low-water marks start at zero: nothing goes
	if st = c.stats(); st.Cached != 2*40960 {
		t.Fatalf("first trim: %+v", st)
	}
	checkHeld(t, c)
	for _, dt := range []time.Duration{1, trimAge / 2, trimAge - 1} {
		c.trimAt(now + dt) // unused, but not for trimAge yet
		if st = c.stats(); st.Cached != 2*40960 {
			t.Fatalf("a trim %v after the last dropped buffers unused for less than trimAge: %+v", dt, st)
		}
	}
	now += trimAge
	c.trimAt(now) // the buffers were not taken since
	if st = c.stats(); st.Cached != 0 || st.Trimmed != 1<<20+2*40960 {
		t.Fatalf("second trim: %+v", st)
	}
	e, _ := c.get(backend.Float32, 10000)
	c.put(e)
	now += trimAge
	c.trimAt(now)
	x, _ := c.get(backend.Float32, 10000) // taken between trims: kept
	c.put(x)
	now += trimAge
	c.trimAt(now)
	if st = c.stats(); st.Cached != 40960 {
		t.Fatalf("a buffer reused between trims was dropped: %+v", st)
	}
	y, _ := c.get(backend.Float32, 10000) // taken, and back before a trim
	c.put(y)
	c.trimAt(now + trimAge/2) // too soon: the mark stays at zero
	c.trimAt(now + trimAge)
	if st = c.stats(); st.Cached != 40960 {
		t.Fatalf("a buffer reused within the window was dropped: %+v", st)
	}
	checkHeld(t, c)
	c.empty()
	if st = c.stats(); st.Cached != 0 {
		t.Fatalf("after empty: %+v", st)
	}
	checkHeld(t, c)
}

// checkHeld checks each dtype's count of cached buffers, which lets a
// trim skip the dtypes that hold none, against its lists.
func checkHeld(t *testing.T, c *bufferCache) {
	t.Helper()
	for d := range c.lists {
		n := 0
		for i := range c.lists[d] {
			n += len(c.lists[d][i].bufs)
		}
		if h := c.held[d].Load(); h != int64(n) {
			t.Errorf("dtype %v: held %d, lists hold %d", backend.DType(d), h, n)
		}
	}
}

// TestCacheStorageDTypes checks every dtype's buffers through the cache.
func TestCacheStorageDTypes(t *testing.T) {
	c := &bufferCache{minB: 1, poison: true}
	c.limit.Store(1 << 30)
	for _, dt := range []backend.DType{backend.Bool, backend.Int64, backend.Float32, backend.Float64, backend.Int32, backend.Uint8, backend.Float16, backend.BFloat16} {
		b, ok := c.get(dt, 3)
		if !ok || b.Len() != 3 || b.DType() != dt {
			t.Fatalf("%v: get = %v (len %d, %v)", dt, ok, b.Len(), b.DType())
		}
		c.put(b)
		b2, _ := c.get(dt, 2)
		if b2.Len() != 2 || b2.DType() != dt {
			t.Fatalf("%v: reuse gave len %d %v", dt, b2.Len(), b2.DType())
		}
	}
}

// TestExecScratchCopies checks the copies Exec makes of operands a
// kernel cannot read in place (a transposed operand of an elementwise
// kernel): the result is right, the copy of a cached size comes from
// the cache and goes back to it when the kernel returns (the cache's
// bytes in use are as before), so a second call reuses it; also when
// the kernel panics.
func TestExecScratchCopies(t *testing.T) {
	if cache.poison {
		t.Skip("PEEL_CACHE_CHECK caches every size")
	}
	be := New()
	const n = 64 // f32[64,64]: 16 KiB, a cached size
	x := make([]float32, n*n)
	for i := range x {
		x[i] = float32(i)
	}
	xt := backend.Array{Buf: be.FromHost(x), Shape: []int{n, n}, Strides: []int{1, n}} // the transpose
	out := backend.Array{Buf: be.Alloc(backend.Float32, n*n), Shape: []int{n, n}}
	// Earlier tests' garbage recycled now, not during the checks.
	for range 3 {
		runtime.GC()
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	inUse := cache.inUse.Load()
	hits := cache.hits.Load()
	for round := range 2 {
		be.Exec(prims.Add.Op, nil, []backend.Array{xt, xt}, []backend.Array{out})
		got := out.Buf.(*f32Buf).s
		for i := range n {
			for j := range n {
				if want := 2 * x[j*n+i]; got[i*n+j] != want {
					t.Fatalf("round %d: (xᵀ+xᵀ)[%d,%d] = %v, want %v", round, i, j, got[i*n+j], want)
				}
			}
		}
		if u := cache.inUse.Load(); u != inUse {
			t.Fatalf("round %d: the cache's bytes in use went %d → %d: a scratch copy was not recycled", round, inUse, u)
		}
	}
	if h := cache.hits.Load(); h < hits+2 {
		t.Errorf("the second call's copies missed the cache: %d hits, want at least %d", h-hits, 2)
	}
	// A kernel that panics (results of the wrong shape) still recycles.
	bad := backend.Array{Buf: be.Alloc(backend.Float32, 1), Shape: []int{1}}
	func() {
		defer func() { _ = recover() }()
		be.Exec(prims.Add.Op, nil, []backend.Array{xt, xt}, []backend.Array{bad})
	}()
	if u := cache.inUse.Load(); u != inUse {
		t.Fatalf("after a panicking kernel the cache's bytes in use went %d → %d", inUse, u)
	}
}
