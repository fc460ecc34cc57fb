package transforms_test

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// Tests that every cache keyed by shapes stays bounded (issue 25, item
// 16): each is driven over more distinct shapes than it may hold, must
// hold no more than its bound (counted in entries), and every result —
// also for a shape seen again after its entry was evicted — must equal an
// oracle computed without the cache.

// cacheShapes returns a float64 vector of n elements in [-2, 2].
func cacheShapes(n int) *T { return peel.Linspace(peel.Float64, -2, 2, n) }

// TestBackwardProgramsCacheBounded: the compiled backward programs of
// CompileBackward, keyed by the linearized graph's structure and types.
func TestBackwardProgramsCacheBounded(t *testing.T) {
	const bound = 4
	defer transforms.SetBackwardProgramsMax(bound)()
	f := func(x *T) *T { return peel.Sum(peel.Mul(peel.Sin(x), x)) }
	grad := transforms.Grad(f, transforms.CompileBackward())
	for _, n := range append(sizesUpTo(1, 3*bound), 1, 2, 3) {
		x := cacheShapes(n)
		want := make([]float64, n)
		for i, v := range x.Float64s() {
			want[i] = math.Cos(v)*v + math.Sin(v)
		}
		near(t, "Grad(f, CompileBackward()) on "+x.TypeString(), grad(x).Float64s(), want, 1e-12)
		if got := transforms.BackwardProgramsLen(); got > bound {
			t.Fatalf("after %d elements: %d backward programs cached, over the bound %d", n, got, bound)
		}
	}
	if transforms.BackwardProgramsLen() == 0 {
		t.Fatal("no backward program cached: the test does not exercise the cache")
	}
}

// TestCompileSignaturesBounded: a compiled function called on ever new
// shapes keeps at most its bound of traced signatures, and a signature
// evicted and met again is traced again, not answered wrongly.
func TestCompileSignaturesBounded(t *testing.T) {
	f := func(x *T) *T { return peel.Add(peel.Mul(x, x), 1.0) }
	var cIns transforms.Inspector
	c := transforms.Compile(f, transforms.RecompileLimit(1<<20), transforms.Inspect(&cIns))
	bound := transforms.SignatureMax[*T, *T](&cIns)
	for _, n := range sizesUpTo(1, bound+20) {
		x := cacheShapes(n)
		near(t, "Compile(f) on "+x.TypeString(), c(x).Float64s(), f(x).Float64s(), 0)
	}
	if s := cIns.Stats(); s.Signatures > bound || s.Signatures < bound/2 {
		t.Fatalf("%d signatures kept after %d shapes; the bound is %d", s.Signatures, bound+20, bound)
	}
	misses := cIns.Stats().Misses
	x := cacheShapes(1) // the least recently used: evicted
	near(t, "Compile(f) on an evicted signature", c(x).Float64s(), f(x).Float64s(), 0)
	if got := cIns.Stats().Misses; got != misses+1 {
		t.Fatalf("the first signature was still cached (misses %d → %d): the test does not exercise eviction", misses, got)
	}
}

// TestVmapOfCompiledBounded: Vmap of a compiled function over ever new
// batch sizes keeps a bounded number of batched programs, each checked
// against a per-lane eager loop.
func TestVmapOfCompiledBounded(t *testing.T) {
	f := func(x *T) *T { return peel.Mul(peel.Sin(x), peel.Sum(x)) }
	var cIns transforms.Inspector
	c := transforms.Compile(f, transforms.Inspect(&cIns))
	var bound int
	for size := 1; size <= 80; size++ {
		xs := peel.Reshape(cacheShapes(3*size), size, 3)
		got := transforms.Vmap(c)(xs)
		for i := range size {
			near(t, "Vmap(Compile(f)) lane", peel.Select(got, 0, i).Float64s(), f(peel.Select(xs, 0, i)).Float64s(), 1e-15)
		}
		n, max := transforms.CallBatchedLens[*T, *T](&cIns)
		if n > max {
			t.Fatalf("after batch size %d: %d batched programs, over the bound %d", size, n, max)
		}
		bound = max
	}
	if n, _ := transforms.CallBatchedLens[*T, *T](&cIns); n == 0 || bound >= 80 {
		t.Fatalf("%d batched programs with bound %d after 80 batch sizes: the test does not exercise eviction", n, bound)
	}
}

// sizesUpTo returns lo, lo+1, …, hi.
func sizesUpTo(lo, hi int) []int {
	var s []int
	for i := lo; i <= hi; i++ {
		s = append(s, i)
	}
	return s
}
