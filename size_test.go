package peel_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/peel-ml/peel"
)

// catchAny runs f and returns what it panicked with (nil if it returned).
// Unlike peel.Catch it also recovers panics that are not *peel.Error, so a
// test can report them instead of crashing.
func catchAny(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// wantSizeError checks that f panics with a *peel.Error whose message
// contains every fragment.
func wantSizeError(t *testing.T, f func(), fragments ...string) {
	t.Helper()
	r := catchAny(f)
	if r == nil {
		t.Fatalf("no panic; want a *peel.Error mentioning %q", fragments)
	}
	e, ok := r.(*peel.Error)
	if !ok {
		t.Fatalf("panicked with %T %v, not *peel.Error", r, r)
	}
	for _, s := range fragments {
		if !strings.Contains(e.Error(), s) {
			t.Errorf("message %q does not mention %q", e.Error(), s)
		}
	}
}

// TestSizeOverflowRefused is the regression table for sizes that overflow
// int or exceed the allocation limit: every case must panic with a
// *peel.Error naming the op and saying "too large" (or naming the bad
// argument), never with a runtime panic, a wrong shape or an exhausted
// memory.
func TestSizeOverflowRefused(t *testing.T) {
	key := peel.Key(1)
	idx2 := peel.FromInt64s([]int64{0, 1})
	idx1 := peel.FromInt64s([]int64{0})
	x23 := peel.Ones(peel.Float64, 2, 3)
	huge := func(n int) *peel.Tensor { return peel.BroadcastTo(peel.Scalar(1.0), n) }
	cases := []struct {
		name string
		f    func()
		want []string
	}{
		// The reported repros.
		{"Zeros 2^32 x 2^32", func() { peel.Zeros(peel.Float64, 1<<32, 1<<32) }, []string{"peel.Zeros", "too large"}},
		{"Reshape empty to 2^62 x 4", func() { peel.Reshape(peel.Zeros(peel.Float64, 0), 1<<62, 4) }, []string{"peel.Reshape", "too large"}},
		{"OneHot MaxInt classes", func() { peel.OneHot(idx2, math.MaxInt, peel.Float64) }, []string{"peel.OneHot", "too large"}},
		{"OneHot MaxInt classes one index", func() { peel.OneHot(idx1, math.MaxInt, peel.Float64) }, []string{"peel.OneHot", "too large"}},
		{"SplitKeysStacked MaxInt", func() { peel.SplitKeysStacked(key, math.MaxInt) }, []string{"peel.SplitKeysStacked", "too large"}},
		{"Zeros MaxInt x 3", func() { peel.Zeros(peel.Float64, math.MaxInt, 3) }, []string{"peel.Zeros", "too large"}},
		{"Pad by 2^62", func() { peel.Pad(peel.Ones(peel.Float64, 2), [][2]int{{1 << 62, 0}}, 0) }, []string{"peel.Pad", "too large"}},
		{"Pad by 2^62 both sides", func() { peel.Pad(peel.Ones(peel.Float64, 2), [][2]int{{1 << 62, 1 << 62}}, 0) }, []string{"peel.Pad", "too large"}},
		{"Pad by MaxInt", func() { peel.Pad(peel.Ones(peel.Float64, 2), [][2]int{{math.MaxInt, 1}}, 0) }, []string{"peel.Pad", "too large"}},
		{"Pad by MinInt", func() { peel.Pad(peel.Ones(peel.Float64, 2), [][2]int{{math.MinInt, 0}}, 0) }, []string{"peel.Pad", "removes more"}},
		{"Pad by MinInt and MaxInt", func() { peel.Pad(peel.Ones(peel.Float64, 2), [][2]int{{math.MinInt, math.MaxInt}}, 0) }, []string{"peel.Pad", "removes more"}},
		{"Linspace 2^40", func() { peel.Linspace(peel.Float64, 0, 1, 1<<40) }, []string{"peel.Linspace", "too large"}},

		// Products that overflow by exactly one bit (2^63 = MaxInt+1).
		{"Zeros 2^31 x 2^32", func() { peel.Zeros(peel.Float32, 1<<31, 1<<32) }, []string{"peel.Zeros", "too large"}},
		{"Ones 2^62 x 2", func() { peel.Ones(peel.Float64, 1<<62, 2) }, []string{"peel.Ones", "too large"}},
		{"Full 2 x 2^62", func() { peel.Full(peel.Int64, 1, 2, 1<<62) }, []string{"peel.Full", "too large"}},
		{"Zeros MinInt", func() { peel.Zeros(peel.Float64, math.MinInt) }, []string{"peel.Zeros", "negative"}},
		{"Zeros MaxInt MaxInt 1", func() { peel.Zeros(peel.Float64, math.MaxInt, math.MaxInt, 1) }, []string{"peel.Zeros", "too large"}},
		{"Reshape wraps to 6", func() { peel.Reshape(peel.Ones(peel.Float64, 6), 2305843009213693955, 4611686018427387906) }, []string{"peel.Reshape", "too large"}},
		{"Reshape infer wraps", func() { peel.Reshape(peel.Zeros(peel.Float64, 0), -1, 1<<62, 4) }, []string{"peel.Reshape", "too large"}},
		{"Reshape MinInt", func() { peel.Reshape(x23, math.MinInt) }, []string{"peel.Reshape", "negative"}},
		{"BroadcastTo overflow", func() { peel.BroadcastTo(peel.Scalar(1.0), 1<<32, 1<<31) }, []string{"peel.BroadcastTo", "too large"}},
		{"BroadcastTo MinInt", func() { peel.BroadcastTo(peel.Scalar(1.0), math.MinInt) }, []string{"peel.BroadcastTo", "negative"}},
		{"Tile overflow", func() { peel.Tile(x23, 1<<62, 1<<62) }, []string{"peel.Tile", "too large"}},
		{"Tile MaxInt", func() { peel.Tile(x23, math.MaxInt) }, []string{"peel.Tile", "too large"}},
		{"Tile MinInt", func() { peel.Tile(x23, math.MinInt) }, []string{"peel.Tile", "negative"}},
		{"Concat sum overflow", func() { peel.Concat([]*peel.Tensor{huge(math.MaxInt), huge(1)}, 0) }, []string{"peel.Concat", "too large"}},
		{"Stack overflow", func() { peel.Stack([]*peel.Tensor{huge(1 << 62), huge(1 << 62)}, 0) }, []string{"peel.Stack", "too large"}},
		{"Outer overflow", func() { peel.Outer(huge(1<<32), huge(1<<32)) }, []string{"peel.Outer", "too large"}},
		{"MatMul huge result", func() {
			peel.MatMul(peel.BroadcastTo(peel.Scalar(1.0), 1<<40, 1), peel.BroadcastTo(peel.Scalar(1.0), 1, 1<<40))
		}, []string{"peel.MatMul", "too large"}},
		{"Add broadcast overflow", func() {
			peel.Add(peel.BroadcastTo(peel.Scalar(1.0), 1<<40, 1), huge(1<<40))
		}, []string{"peel.Add", "too large"}},
		{"Take huge indices", func() {
			peel.Take(peel.BroadcastTo(peel.Scalar(1.0), 1<<40, 2), peel.BroadcastTo(peel.Scalar(int64(0)), 1<<40), 1)
		}, []string{"peel.Take", "too large"}},
		{"Uniform overflow", func() { peel.Uniform(key, peel.Float64, math.MaxInt, 2) }, []string{"peel.Uniform", "too large"}},
		{"Normal too large", func() { peel.Normal(key, peel.Float32, 1<<62) }, []string{"peel.Normal", "too large"}},
		{"Bernoulli MinInt", func() { peel.Bernoulli(key, 0.5, math.MinInt) }, []string{"peel.Bernoulli", "negative"}},
		{"Arange too large", func() { peel.Arange(peel.Float64, 0, 1<<50, 1) }, []string{"peel.Arange", "too large"}},
		{"Arange 2^62", func() { peel.Arange(peel.Float64, 0, 1<<62, 1) }, []string{"peel.Arange", "too large"}},
		{"Eye MaxInt", func() { peel.Eye(peel.Float64, math.MaxInt) }, []string{"peel.Eye", "too large"}},
		{"Eye 2^32", func() { peel.Eye(peel.Bool, 1<<32) }, []string{"peel.Eye", "too large"}},
		{"Eye MinInt", func() { peel.Eye(peel.Bool, math.MinInt) }, []string{"peel.Eye", "negative"}},
		{"Linspace MaxInt", func() { peel.Linspace(peel.Float32, 0, 1, math.MaxInt) }, []string{"peel.Linspace", "too large"}},
		{"Linspace MinInt", func() { peel.Linspace(peel.Float32, 0, 1, math.MinInt) }, []string{"peel.Linspace", "negative"}},
		{"FromFloat64s overflow", func() { peel.FromFloat64s([]float64{1}, 1<<32, 1<<32, 1) }, []string{"peel.FromFloat64s", "too large"}},
		{"FromInt64s wraps to 6", func() { peel.FromInt64s(make([]int64, 6), 2305843009213693955, 4611686018427387906) }, []string{"peel.FromInt64s", "too large"}},
		{"Clone of huge view", func() { peel.Clone(huge(1 << 62)) }, []string{"peel.Clone", "too large"}},
		{"Sum of huge view", func() { peel.Sum(huge(1 << 62)) }, []string{"peel.Sum", "too large"}},

		// Slice, Narrow and friends with extreme arguments.
		{"Slice start MinInt", func() { peel.Slice(x23, 1, math.MinInt, 3, 1) }, []string{"peel.Slice", "start"}},
		{"Slice stop MaxInt", func() { peel.Slice(x23, 1, 0, math.MaxInt, 1) }, []string{"peel.Slice", "stop"}},
		{"Slice step 0", func() { peel.Slice(x23, 1, 0, 3, 0) }, []string{"peel.Slice", "step"}},
		{"Slice step MinInt", func() { peel.Slice(x23, 1, 0, 3, math.MinInt) }, []string{"peel.Slice", "step"}},
		{"Slice axis MinInt", func() { peel.Slice(x23, math.MinInt, 0, 1, 1) }, []string{"peel.Slice", "axis"}},
		{"Narrow length MaxInt", func() { peel.Narrow(x23, 1, 1, math.MaxInt) }, []string{"peel.Narrow", "length"}},
		{"Narrow start MinInt", func() { peel.Narrow(x23, 1, math.MinInt, 1) }, []string{"peel.Narrow", "start"}},
		{"Narrow start MaxInt", func() { peel.Narrow(x23, 1, math.MaxInt, 1) }, []string{"peel.Narrow", "start"}},
		{"Select MinInt", func() { peel.Select(x23, 0, math.MinInt) }, []string{"peel.Select", "index"}},
		{"Index MaxInt", func() { peel.Index(x23, math.MaxInt) }, []string{"peel.Index", "index"}},
		{"Unsqueeze MinInt", func() { peel.Unsqueeze(x23, math.MinInt) }, []string{"peel.Unsqueeze", "axis"}},
		{"MoveAxis MaxInt", func() { peel.MoveAxis(x23, 0, math.MaxInt) }, []string{"peel.MoveAxis", "axis"}},
		{"Transpose MinInt", func() { peel.Transpose(x23, math.MinInt, 0) }, []string{"peel.Transpose", "axis"}},
		{"Squeeze MinInt", func() { peel.Squeeze(x23, math.MinInt) }, []string{"peel.Squeeze", "axis"}},
		{"Split sizes overflow", func() { peel.Split(x23, []int{math.MaxInt, math.MaxInt, 4}, 1) }, []string{"peel.Split", "sizes"}},
		{"Split negative", func() { peel.Split(x23, []int{math.MinInt, 3}, 1) }, []string{"peel.Split", "negative"}},
		{"DynamicSlice MinInt", func() {
			peel.DynamicSlice(x23, []*peel.Tensor{peel.Scalar(0), peel.Scalar(0)}, []int{math.MinInt, 1})
		}, []string{"peel.DynamicSlice", "size"}},
		{"OneHot MinInt", func() { peel.OneHot(idx2, math.MinInt, peel.Float64) }, []string{"peel.OneHot", "negative"}},
		{"SplitKeysStacked MinInt", func() { peel.SplitKeysStacked(key, math.MinInt) }, []string{"peel.SplitKeysStacked", "negative"}},
		{"Take axis MinInt", func() { peel.Take(x23, idx1, math.MinInt) }, []string{"peel.Take", "axis"}},
		{"Concat axis MaxInt", func() { peel.Concat([]*peel.Tensor{x23, x23}, math.MaxInt) }, []string{"peel.Concat", "axis"}},
		{"Stack axis MinInt", func() { peel.Stack([]*peel.Tensor{x23, x23}, math.MinInt) }, []string{"peel.Stack", "axis"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantSizeError(t, c.f, c.want...) })
	}
}

// TestSliceHugeStep is the regression test for Slice with a step near
// MaxInt, which used to give a negative dimension: a step larger than the
// axis keeps the first element only, as Python's x[0:3:sys.maxsize].
func TestSliceHugeStep(t *testing.T) {
	x := peel.Reshape(peel.Arange(peel.Float64, 0, 6, 1), 2, 3)
	for _, step := range []int{3, 4, 1 << 62, math.MaxInt - 1, math.MaxInt} {
		y := peel.Slice(x, 1, 0, 3, step)
		if got := fmt.Sprint(y.Shape()); got != "[2 1]" {
			t.Fatalf("step %d: shape %s, want [2 1]", step, got)
		}
		if got := fmt.Sprint(peel.Clone(y).Float64s()); got != "[0 3]" {
			t.Errorf("step %d: elements %s, want [0 3]", step, got)
		}
		z := peel.Slice(x, 1, 1, 3, step)
		if got := fmt.Sprint(peel.Clone(z).Float64s()); got != "[1 4]" {
			t.Errorf("step %d from 1: elements %s, want [1 4]", step, got)
		}
	}
}

// TestNearLimitShapesAccepted checks that shapes whose sizes are large but
// representable are still accepted where no memory is needed (views and
// empty tensors), so the checks refuse only what cannot work.
func TestNearLimitShapesAccepted(t *testing.T) {
	v := peel.BroadcastTo(peel.Scalar(2.0), 1<<31, 1<<31)
	if v.Size() != 1<<62 {
		t.Fatalf("size %d, want 2^62", v.Size())
	}
	if v = peel.BroadcastTo(peel.Scalar(2.0), math.MaxInt); v.Size() != math.MaxInt {
		t.Fatalf("size %d, want MaxInt", v.Size())
	}
	if s := peel.Slice(v, 0, 0, math.MaxInt, math.MaxInt); s.Size() != 1 {
		t.Fatalf("slice of MaxInt view by MaxInt: size %d, want 1", s.Size())
	}
	if s := peel.Narrow(v, 0, math.MaxInt-1, 1); s.Size() != 1 {
		t.Fatalf("narrow at MaxInt-1: size %d, want 1", s.Size())
	}
	e := peel.Zeros(peel.Float64, 0, 1<<62)
	if e.Size() != 0 {
		t.Fatalf("size %d, want 0", e.Size())
	}
	if r := peel.Reshape(e, 1<<62, 0); fmt.Sprint(r.Shape()) != fmt.Sprint([]int{1 << 62, 0}) {
		t.Fatalf("reshape of an empty tensor: shape %v", r.Shape())
	}
}

// TestAllocationLimit checks SetMaxAllocBytes: an allocation above the
// limit panics with a *peel.Error naming the shape, dtype, bytes and
// limit before any memory is used, and a negative argument only reports
// the limit.
func TestAllocationLimit(t *testing.T) {
	old := peel.SetMaxAllocBytes(1 << 20)
	defer peel.SetMaxAllocBytes(old)
	if got := peel.SetMaxAllocBytes(-1); got != 1<<20 {
		t.Fatalf("SetMaxAllocBytes(-1) = %d, want %d", got, 1<<20)
	}
	if got := peel.MaxAllocBytes(); got != 1<<20 {
		t.Fatalf("MaxAllocBytes() = %d, want %d", got, 1<<20)
	}
	peel.Zeros(peel.Float64, 128, 1024) // exactly 1 MiB
	wantSizeError(t, func() { peel.Zeros(peel.Float64, 128, 1025) }, "peel.Zeros", "too large", "f64[128,1025]", "1049600 bytes", "1048576")
	wantSizeError(t, func() { peel.Ones(peel.Float32, 1<<18+1) }, "peel.Ones", "too large", "f32[262145]")
	wantSizeError(t, func() { peel.Full(peel.Bool, 1, 1<<20+1) }, "peel.Full", "too large", "bool[1048577]")
	wantSizeError(t, func() { peel.Eye(peel.Float64, 363) }, "peel.Eye", "too large", "f64[363,363]")
	wantSizeError(t, func() { peel.Arange(peel.Int64, 0, 1<<17+1, 1) }, "peel.Arange", "too large")
	wantSizeError(t, func() { peel.Linspace(peel.Float64, 0, 1, 1<<17+1) }, "peel.Linspace", "too large")
	wantSizeError(t, func() { peel.FromFloat64s(make([]float64, 1<<17+1)) }, "peel.FromFloat64s", "too large")
	v := peel.BroadcastTo(peel.Scalar(1.0), 1<<17+1) // a view: no memory
	wantSizeError(t, func() { peel.Clone(v) }, "peel.Clone", "too large", "f64", "1048584 bytes", "1048576")
	wantSizeError(t, func() { peel.Exp(v) }, "peel.Exp", "too large")
	wantSizeError(t, func() { peel.Uniform(peel.Key(0), peel.Float32, 1<<18+1) }, "peel.Uniform", "too large")
	if r := catchAny(func() { peel.Exp(peel.BroadcastTo(peel.Scalar(1.0), 1<<17)) }); r != nil {
		t.Fatalf("an allocation at the limit failed: %v", r)
	}
}

// TestAllocationLimitDefault checks that the default limit is positive
// and refuses an allocation no machine can hold.
func TestAllocationLimitDefault(t *testing.T) {
	if n := peel.MaxAllocBytes(); n <= 0 {
		t.Fatalf("default limit %d", n)
	}
	err := peel.Catch(func() { peel.Zeros(peel.Float64, 1<<61) })
	var e *peel.Error
	if !errors.As(err, &e) || !strings.Contains(e.Error(), "too large") {
		t.Fatalf("Zeros of 2^64 bytes: %v", err)
	}
}

func ExampleSetMaxAllocBytes() {
	old := peel.SetMaxAllocBytes(1 << 20) // 1 MiB
	defer peel.SetMaxAllocBytes(old)
	err := peel.Catch(func() { peel.Zeros(peel.Float64, 1024, 1024) })
	fmt.Println(err)
	// Output: peel.Zeros: too large: f64[1024,1024] needs 8388608 bytes, over the allocation limit of 1048576 bytes (see peel.SetMaxAllocBytes) at size_test.go:239
}

// TestOpResultTooLargeNamesShape: an operation whose result exceeds the
// allocation limit is refused before allocating, naming the result's
// shape (a broadcast view of a huge shape costs nothing; its copy is
// refused).
func TestOpResultTooLargeNamesShape(t *testing.T) {
	old := peel.SetMaxAllocBytes(1 << 20)
	defer peel.SetMaxAllocBytes(old)
	v := peel.BroadcastTo(peel.Ones(1), 1<<20, 1<<10)
	err := peel.Catch(func() { peel.Clone(v) })
	if err == nil || !strings.Contains(err.Error(), "too large") || !strings.Contains(err.Error(), "[1048576,1024]") {
		t.Fatalf("Clone of f64[1048576,1024] under a 1 MiB limit: %v", err)
	}
}

// waitCache runs collections (and lets the cleanups they queue run)
// until pred holds of the cache's counters, or gives up.
func waitCache(pred func(peel.CacheStats) bool) bool {
	for range 50 {
		runtime.GC()
		runtime.Gosched()
		if pred(peel.MemoryStats()) {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// TestCacheRecyclesUnreachableResults checks that an eager result of a
// cached size goes back to the cache once unreachable, and that the next
// result of its size reuses it. The collections that recycle it may also
// trim it (a buffer left unused for a whole cycle is let go, and other
// tests' garbage keeps the collector busy), so a round where it was
// trimmed rather than kept is tried again.
func TestCacheRecyclesUnreachableResults(t *testing.T) {
	skipInCheckMode(t)
	x := peel.Full(peel.Float32, 1, 1<<16)
	for range 5 {
		y := peel.Exp(x) // 256 KiB: a cached size
		if got := y.Float32s()[0]; got != float32(math.E) {
			t.Fatalf("exp(1) = %v", got)
		}
		before := peel.MemoryStats()
		y = nil
		_ = y
		if !waitCache(func(s peel.CacheStats) bool { return s.Cached+s.Trimmed >= before.Cached+before.Trimmed+256<<10 }) {
			t.Fatalf("an unreachable result was not recycled: %+v → %+v", before, peel.MemoryStats())
		}
		mid := peel.MemoryStats()
		if mid.Trimmed > before.Trimmed {
			continue // a trim meanwhile, which may have let it go
		}
		z := peel.Mul(x, peel.Scalar(float32(3)))
		if peel.MemoryStats().Hits <= mid.Hits {
			t.Fatalf("a result of a recycled size missed the cache: %+v", peel.MemoryStats())
		}
		for i, v := range z.Float32s() {
			if v != 3 {
				t.Fatalf("reused buffer: z[%d] = %v, want 3", i, v)
			}
		}
		return
	}
	t.Errorf("the recycled result was trimmed in every round: %+v", peel.MemoryStats())
}

// TestReshapeCopyFromCache checks that the copy a reshape makes of a
// layout no view can express (a transposed matrix flattened) takes its
// buffer from the cache, not zeroed, as a kernel's result does (it was
// zeroed fresh memory), and that the copy and a reshape of it read the
// right elements.
func TestReshapeCopyFromCache(t *testing.T) {
	const n = 128 // 128×128 f32: 64 KiB, a cached size
	x := peel.Reshape(peel.Arange(peel.Float32, 0, n*n, 1), n, n)
	xt := peel.Transpose(x, 1, 0)
	before := peel.MemoryStats()
	flat := peel.Reshape(xt, n*n)
	after := peel.MemoryStats()
	if got := (after.Hits + after.Misses) - (before.Hits + before.Misses); got != 1 {
		t.Errorf("reshape's copy took %d buffers from the cache, want 1", got)
	}
	vals := flat.Float32s()
	for i := range n {
		for j := range n {
			if got, want := vals[i*n+j], float32(j*n+i); got != want {
				t.Fatalf("flat[%d] = %v, want %v", i*n+j, got, want)
			}
		}
	}
	if got := peel.Reshape(flat, n, n).Float32s()[n+2]; got != float32(2*n+1) {
		t.Errorf("reshape of the copy: [1,2] = %v, want %v", got, 2*n+1)
	}
}

// TestCacheKeepsAliasedMemory checks that memory still reachable through
// a view, a snapshot or a box sharing the storage is never handed out
// again, however many results of its size are made and dropped.
func TestCacheKeepsAliasedMemory(t *testing.T) {
	const n = 1 << 15 // 256 KiB of f64
	x := peel.Arange(peel.Float64, 0, n, 1)
	y := peel.Add(x, peel.Scalar(1.0)) // cached
	v := peel.Reshape(y, 2, n/2)       // a view of y's memory
	c := peel.Clone(v)                 // a copy, for the other case below
	w := peel.Add(x, peel.Scalar(2.0))
	s := peel.StopGradient(w) // may share w's memory
	peel.AddInPlace(c, peel.Scalar(1.0))
	y, w = nil, nil
	for range 20 {
		for range 8 {
			r := peel.Mul(x, peel.Scalar(-1.0)) // same size: takes any recycled buffer
			_ = r
		}
		runtime.GC()
		runtime.Gosched()
	}
	got := v.Float64s()
	gs := s.Float64s()
	gc := c.Float64s()
	for i := range n {
		if got[i] != float64(i)+1 || gs[i] != float64(i)+2 || gc[i] != float64(i)+2 {
			t.Fatalf("element %d: view %v (want %v), stop-gradient %v (want %v), clone %v (want %v)", i, got[i], float64(i)+1, gs[i], float64(i)+2, gc[i], float64(i)+2)
		}
	}
}

// TestCacheLimit checks SetCacheLimit and EmptyCache.
func TestCacheLimit(t *testing.T) {
	old := peel.SetCacheLimit(-1)
	defer peel.SetCacheLimit(old)
	if old <= 0 {
		t.Fatalf("default cache limit %d", old)
	}
	skipInCheckMode(t)
	peel.SetCacheLimit(0)
	x := peel.Full(peel.Float32, 1, 1<<16) // 256 KiB results
	// cycle makes a result, drops it, collects and lets the cleanups
	// run: with a cache, the next result of the size can reuse it.
	cycle := func() {
		_ = peel.Exp(x)
		runtime.GC()
		runtime.Gosched()
	}
	hits := peel.MemoryStats().Hits
	for range 10 {
		cycle()
	}
	if st := peel.MemoryStats(); st.Cached != 0 || st.Limit != 0 || st.Hits != hits {
		t.Fatalf("a cache of limit 0 holds %d bytes or served %d hits: %+v", st.Cached, st.Hits-hits, st)
	}
	peel.SetCacheLimit(old)
	reused := false
	for range 50 {
		if cycle(); peel.MemoryStats().Hits > hits {
			reused = true
			break
		}
	}
	if !reused {
		t.Fatalf("with the limit restored, no result was reused: %+v", peel.MemoryStats())
	}
	_ = peel.Exp(x)
	waitCache(func(s peel.CacheStats) bool { return s.Cached > 0 })
	before := peel.MemoryStats()
	peel.EmptyCache()
	// Cleanups may put buffers back at any time: what EmptyCache held
	// is let go.
	if st := peel.MemoryStats(); st.Trimmed < before.Trimmed+before.Cached {
		t.Fatalf("EmptyCache let go of %d bytes of %d cached: %+v", st.Trimmed-before.Trimmed, before.Cached, st)
	}
}

// TestMemoryStatsPeakAndDTypes checks ResetPeakMemory and the counters
// by dtype: a float64 result held live raises the float64 bytes in use
// and the peak by its size, leaves float32's alone, and stays in the
// peak after it is recycled until the next reset; the dtypes add up to
// the totals.
func TestMemoryStatsPeakAndDTypes(t *testing.T) {
	skipInCheckMode(t)
	const size = 1 << 20 // bytes of the float64 result
	x := peel.Full(peel.Float64, 1, size/8)
	// consistent: the dtypes add up to the totals (cleanups recycle
	// buffers at any time, so a read between two of their updates is
	// read again).
	consistent := func() peel.CacheStats {
		for range 100 {
			s := peel.MemoryStats()
			var in, cached int64
			for _, d := range s.ByDType {
				in += d.InUse
				cached += d.Cached
			}
			if in == s.InUse && cached == s.Cached && s.InUse <= s.Peak {
				return s
			}
			runtime.Gosched()
		}
		t.Fatalf("the dtypes' counters do not add up to the totals: %+v", peel.MemoryStats())
		return peel.CacheStats{}
	}
	runtime.GC()
	peel.ResetPeakMemory()
	s0 := consistent()
	y := peel.Exp(x) // float64, cached
	s1 := consistent()
	f0, f1 := s0.ByDType[peel.Float64], s1.ByDType[peel.Float64]
	if f1.InUse < f0.InUse+size || s1.Peak < s0.InUse+size {
		t.Fatalf("a live %d-byte float64 result: %+v → %+v", size, s0, s1)
	}
	if g0, g1 := s0.ByDType[peel.Float32], s1.ByDType[peel.Float32]; g1.InUse > g0.InUse {
		t.Fatalf("a float64 result moved float32's bytes in use: %+v → %+v", g0, g1)
	}
	runtime.KeepAlive(y)
	y = nil
	_ = y
	if !waitCache(func(s peel.CacheStats) bool { return s.ByDType[peel.Float64].InUse <= f1.InUse-size }) {
		t.Fatalf("the dropped result was not recycled: %+v", peel.MemoryStats())
	}
	s2 := consistent()
	if s2.Peak < s0.InUse+size {
		t.Fatalf("the peak fell when the result was recycled: %+v → %+v", s1, s2)
	}
	// The bytes in use are the result's fewer than when it lived, and
	// a reset brings the peak down to them (cleanups may lower them
	// further after it, never raise them).
	peel.ResetPeakMemory()
	if s3 := consistent(); s3.Peak >= s1.InUse {
		t.Fatalf("ResetPeakMemory left the peak at the dropped result's: %+v → %+v", s1, s3)
	}
}

// skipInCheckMode skips a test of the cache's counters under
// PEEL_CACHE_CHECK=1, which caches every result, however small, so the
// whole suite's garbage is recycled and trimmed in the background and the
// process-wide counters say nothing about one test's buffers (the plain
// test run checks them).
func skipInCheckMode(t *testing.T) {
	if os.Getenv("PEEL_CACHE_CHECK") == "1" {
		t.Skip("the cache's counters are the whole suite's in the checking mode")
	}
}

// Results of 4 KiB and more come from the caching allocator, and go
// back to it when the collector finds them unreachable.
func ExampleMemoryStats() {
	x := peel.Full(peel.Float32, 1, 1<<16)
	y := peel.Exp(x) // a 256 KiB result
	st := peel.MemoryStats()
	fmt.Println(st.InUse >= 256<<10, st.Limit > 0, st.ByDType[peel.Float32].InUse >= 256<<10)
	runtime.KeepAlive(y)
	// Output: true true true
}

// The peak of the bytes in use over a stretch of code, as torch's
// reset_peak_memory_stats and max_memory_allocated give it.
func ExampleResetPeakMemory() {
	x := peel.Full(peel.Float32, 1, 1<<16)
	peel.ResetPeakMemory()
	before := peel.MemoryStats().InUse
	y := peel.Exp(peel.Mul(x, x)) // two 256 KiB results
	grew := peel.MemoryStats().Peak - before
	fmt.Println(grew >= 256<<10)
	runtime.KeepAlive(y)
	// Output: true
}

// TestCacheRespectsGCOff checks that the cache, which asks for a
// collection after handing out 32 MiB, never does while the program has
// turned collection off.
func TestCacheRespectsGCOff(t *testing.T) {
	old := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(old)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.NumGC
	x := peel.Full(peel.Float32, 1, 1<<18) // 1 MiB results
	for range 48 {
		_ = peel.Exp(x)
	}
	runtime.ReadMemStats(&ms)
	if ms.NumGC != before {
		t.Errorf("%d collections ran with collection off", ms.NumGC-before)
	}
	debug.SetGCPercent(old)
	runtime.ReadMemStats(&ms)
	before = ms.NumGC
	for range 48 {
		_ = peel.Exp(x)
	}
	runtime.ReadMemStats(&ms)
	if ms.NumGC == before {
		t.Errorf("no collection after 48 MiB of cached results")
	}
}

// TestCacheTrimsIdleBuffers checks that buffers nothing reuses leave the
// cache at a collection about a second (the cache's trimAge) after their
// last use.
func TestCacheTrimsIdleBuffers(t *testing.T) {
	skipInCheckMode(t)
	x := peel.Full(peel.Float32, 1, 3<<16) // 768 KiB: a class of its own here
	for range 4 {
		_ = peel.Exp(x)
	}
	if !waitCache(func(s peel.CacheStats) bool { return s.Cached >= 3<<18 }) {
		t.Fatalf("nothing cached: %+v", peel.MemoryStats())
	}
	trimmed := peel.MemoryStats().Trimmed
	deadline := time.Now().Add(5 * time.Second)
	for peel.MemoryStats().Trimmed < trimmed+3<<18 {
		if time.Now().After(deadline) {
			t.Fatalf("idle buffers stayed cached for 5 s of collections: %+v", peel.MemoryStats())
		}
		runtime.GC()
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
}
