package transforms_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/testsize"
	"github.com/peel-ml/peel/transforms"
)

// raceEnabled is set by race_test.go when the race detector is on: its
// shadow memory and slower calls make heap measurements and 10⁵-call
// loops meaningless there.
var raceEnabled bool

// TestMemoryStable calls each transform memCalls = 10⁵ times on a small
// function capturing a tensor c (x of shape [4]) — also Grad and VJP
// followed by an in-place write into c, as an optimizer's step does,
// before the pullback in VJP's case — and measures HeapAlloc
// after two runtime.GC calls once memWarm = 10⁴ calls are done and again
// at the end: the heap may grow by at most memBound = 1 MiB between the
// two (a leak of a single 16-byte allocation per call would be 1.4 MiB
// over the 9·10⁴ calls). Each call's result is read and checked against
// the first call's, so nothing is optimized away and a transform that
// drifts is caught too. Skipped under the race detector. Those are the
// counts with PEEL_FULL set; by default memCalls = 25,000 and memWarm =
// 5,000, which catches a leak of 53 bytes per call.
func TestMemoryStable(t *testing.T) {
	if raceEnabled {
		t.Skip("heap measurements are meaningless under the race detector")
	}
	var (
		memCalls = testsize.Pick(25_000, 100_000)
		memWarm  = testsize.Pick(5_000, 10_000)
	)
	const memBound = 1 << 20
	c := peel.FromFloat64s([]float64{0.5, -1, 1.5, 2}, 4)
	vec := func(x *T) *T { return peel.Mul(peel.Sin(x), c) }
	loss := func(x *T) *T { return peel.Sum(peel.Mul(peel.Sin(x), c)) }
	mutating := func(x *T) *T {
		y := peel.Clone(x)
		peel.MulInPlace(y, c)
		peel.AddInPlace(peel.Narrow(y, 0, 1, 2), 1.0)
		return peel.Sin(y)
	}
	x := peel.FromFloat64s([]float64{0.1, -0.2, 0.3, 0.7}, 4)
	xs := peel.Stack([]*T{x, peel.Mul(x, 2.0), peel.Add(x, 1.0)}, 0)
	v := peel.FromFloat64s([]float64{1, -1, 0.5, 2}, 4)
	cases := []struct {
		name string
		run  func() []*T
	}{
		{"Grad", func() []*T { return []*T{transforms.Grad(loss)(x)} }},
		{"ValueAndGrad", func() []*T {
			y, g := transforms.ValueAndGrad(loss)(x)
			return []*T{y, g}
		}},
		{"VJP+pullback", func() []*T {
			y, pb := transforms.VJP(vec, x)
			return []*T{y, pb(v)}
		}},
		{"JVP", func() []*T {
			y, tan := transforms.JVP(vec, x, v)
			return []*T{y, tan}
		}},
		{"Jacrev", func() []*T { return []*T{transforms.Jacrev(vec)(x)} }},
		{"Jacfwd", func() []*T { return []*T{transforms.Jacfwd(vec)(x)} }},
		{"Vmap", func() []*T { return []*T{transforms.Vmap(vec)(xs)} }},
		{"Vmap(Grad)", func() []*T { return []*T{transforms.Vmap(transforms.Grad(loss))(xs)} }},
		{"Functionalize", func() []*T { return []*T{transforms.Functionalize(mutating)(x)} }},
		{"MakeGraph+Eval", func() []*T { return transforms.MakeGraph(vec, x).Eval(x) }},
		{"Hessian", func() []*T { return []*T{transforms.Hessian(loss)(x)} }},
		// An optimizer's step: the captured tensor is written in place
		// after each gradient (by a value that leaves it unchanged, so
		// every call's result is the same).
		{"Grad+in-place step", func() []*T {
			g := transforms.Grad(loss)(x)
			peel.AddInPlace(c, peel.Mul(g, 0.0))
			return []*T{g}
		}},
		{"VJP+in-place step+pullback", func() []*T {
			y, pb := transforms.VJP(vec, x)
			peel.MulInPlace(c, 1.0)
			return []*T{y, pb(v)}
		}},
	}
	values := func(ts []*T) []float64 {
		var out []float64
		for _, r := range ts {
			out = append(out, r.Float64s()...)
		}
		return out
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var want []float64
			if err := catchAll(func() { want = values(tc.run()) }); err != nil {
				t.Fatalf("first call: %v", err)
			}
			start := time.Now()
			var warm uint64
			for i := 1; i < memCalls; i++ {
				if i == memWarm {
					warm = heapAfterGC()
				}
				got := values(tc.run())
				if i%1000 == 0 {
					if msg := ipSame(got, want, 0); msg != "" {
						t.Fatalf("call %d differs from the first: %s", i, msg)
					}
				}
			}
			end := heapAfterGC()
			grow := int64(end) - int64(warm)
			t.Logf("%d calls in %v (%v per call); HeapAlloc after %d calls %d, after %d calls %d (%+d bytes)",
				memCalls, time.Since(start).Round(time.Millisecond), (time.Since(start) / time.Duration(memCalls)).Round(time.Microsecond/10), memWarm, warm, memCalls, end, grow)
			if grow > memBound {
				t.Errorf("HeapAlloc grew by %d bytes between call %d and call %d, more than %d", grow, memWarm, memCalls, memBound)
			}
		})
	}
}

// heapAfterGC returns the live heap after collections, without the
// caching allocator's buffers (a cache bounded by its limit, not a
// leak): the results found unreachable are recycled by cleanups that run
// after a collection, so it collects, lets them run and empties the
// cache three times over before the last collections.
func heapAfterGC() uint64 {
	for range 3 {
		runtime.GC()
		runtime.Gosched()
		time.Sleep(time.Millisecond)
		peel.EmptyCache()
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
