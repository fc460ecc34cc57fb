package transforms_test

import (
	"os"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// TestGradSumsCotangentsInPlace: the backward pass adds the cotangents of
// a value read many times (a weight read by every step of an unrolled
// loop) into one buffer: each further read costs the buffers of its own
// product and cotangent, not a new buffer for the running sum too. The
// gradient is the sum all the same, and the tensors the sum started from
// (a rule's cotangent, the caller's) are never written.
func TestGradSumsCotangentsInPlace(t *testing.T) {
	const n = 128 // 64 KiB of float32: buffers the cache hands out
	w := peel.AsType(ckRandom(41, n, n), peel.Float32)
	xs := peel.AsType(ckRandom(42, 24, n, n), peel.Float32)
	loss := func(steps int) func(*T) *T {
		return func(w *T) *T {
			s := peel.Sum(peel.Mul(w, peel.Index(xs, 0)))
			for t := 1; t < steps; t++ {
				s = peel.Add(s, peel.Sum(peel.Mul(w, peel.Index(xs, t))))
			}
			return s
		}
	}
	handedOut := func(steps int) int64 {
		g := transforms.Grad(loss(steps))
		g(w) // warm
		m0 := peel.MemoryStats()
		got := g(w)
		m1 := peel.MemoryStats()
		want := peel.Sum(peel.Narrow(xs, 0, 0, steps), 0)
		near(t, "gradient", peel.AsType(got, peel.Float64).Float64s(), peel.AsType(want, peel.Float64).Float64s(), 1e-5)
		return m1.Hits + m1.Misses - (m0.Hits + m0.Misses)
	}
	few, many := handedOut(4), handedOut(24)
	// Per further step: the product w·x_t and its cotangent x_t·ct (the
	// cache's checking mode caches the scalars too).
	if per := float64(many-few) / 20; per > 2 && os.Getenv("PEEL_CACHE_CHECK") != "1" {
		t.Errorf("each further read of w costs %.2f buffers, want 2: the cotangents' running sum takes a new buffer each time", per)
	}

	// The caller's cotangents: VJP of w ↦ (w, w, w) sums them.
	cts := []*T{peel.Ones(peel.Float32, n, n), peel.Full(peel.Float32, 2, n, n), peel.Full(peel.Float32, 4, n, n)}
	_, pb := transforms.VJP(func(w *T) []*T { return []*T{w, w, w} }, w)
	got := pb(cts)
	for i, v := range []float64{1, 2, 4} {
		if s := peel.Sum(peel.AsType(cts[i], peel.Float64)).Item(); s != v*n*n {
			t.Fatalf("the caller's cotangent %d was written: sums to %v, want %v", i, s, v*n*n)
		}
	}
	if s := peel.Sum(peel.AsType(got, peel.Float64)).Item(); s != 7*n*n {
		t.Fatalf("the cotangents' sum sums to %v, want %v", s, 7*n*n)
	}
}
