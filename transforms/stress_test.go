package transforms_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// TestStressConcurrentTransforms runs stressGoroutines goroutines, each
// making stressCalls transform calls, all sharing the captured W [8,8]
// and b [8]: Grad of Σ tanh(W p + b), Vmap of that Grad over 3 inputs,
// Jacrev and JVP of p ↦ tanh(W p + b), MakeGraph + Eval of it, Eval of
// one graph traced beforehand and shared by every goroutine, Grad of
// Σ W p (linear), and Functionalize of a program that reads W and writes
// a clone of its input. Every result must equal, exactly, the value
// computed once for the same input on one goroutine before the
// goroutines start (the transforms are deterministic: same primitives,
// same shapes, same kernels); W and b must be unchanged at the end.
//
// Heap: HeapAlloc after two runtime.GC calls, measured after a warm-up
// pass and again after the goroutines end, may grow by at most
// stressHeapBound (4 MiB): everything a call allocates is garbage once it
// returns, so what stays is caches with a bound.
//
// Sized for `go test -race ./transforms/ -run Stress` on 2 cores (each
// call is a few microseconds of work on [8]-vectors).
func TestStressConcurrentTransforms(t *testing.T) {
	const (
		stressGoroutines = 16
		stressCalls      = 1000
		stressHeapBound  = 4 << 20
	)
	wData := make([]float64, 64)
	for i := range wData {
		wData[i] = 0.3 * float64((i*37)%17-8) / 8
	}
	bData := []float64{0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, -0.8}
	W := peel.FromFloat64s(append([]float64{}, wData...), 8, 8)
	b := peel.FromFloat64s(append([]float64{}, bData...), 8)

	vec := func(p *T) *T { return peel.Tanh(peel.Add(peel.MatMul(W, p), b)) }
	loss := func(p *T) *T { return peel.Sum(vec(p)) }
	linear := func(p *T) *T { return peel.Sum(peel.MatMul(W, p)) }
	mutating := func(p *T) *T {
		y := peel.Clone(p)
		peel.AddInPlace(y, peel.MatMul(W, p))
		peel.MulInPlace(peel.Narrow(y, 0, 2, 4), b.Float64s()[0]+2)
		return y
	}
	const ninputs = 4
	input := func(k int) *T {
		d := make([]float64, 8)
		for i := range d {
			d[i] = 0.25*float64(i-4) + 0.1*float64(k)
		}
		return peel.FromFloat64s(d, 8)
	}
	batch := func(k int) *T { return peel.Stack([]*T{input(k), input(k + 1), input(k + 2)}, 0) }
	tangent := peel.FromFloat64s([]float64{1, -1, 0.5, 0.25, -0.5, 2, 0, 1}, 8)
	shared := transforms.MakeGraph(vec, input(0))

	type op struct {
		name string
		run  func(k int) []*T
	}
	ops := []op{
		{"Grad", func(k int) []*T { return []*T{transforms.Grad(loss)(input(k))} }},
		{"Grad(linear)", func(k int) []*T { return []*T{transforms.Grad(linear)(input(k))} }},
		{"Vmap(Grad)", func(k int) []*T { return []*T{transforms.Vmap(transforms.Grad(loss))(batch(k))} }},
		{"Jacrev", func(k int) []*T { return []*T{transforms.Jacrev(vec)(input(k))} }},
		{"JVP", func(k int) []*T {
			p, tan := transforms.JVP(vec, input(k), tangent)
			return []*T{p, tan}
		}},
		{"MakeGraph+Eval", func(k int) []*T { return transforms.MakeGraph(vec, input(0)).Eval(input(k)) }},
		{"shared Graph.Eval", func(k int) []*T { return shared.Eval(input(k)) }},
		{"Functionalize", func(k int) []*T { return []*T{transforms.Functionalize(mutating)(input(k))} }},
	}
	// The reference values, computed on this goroutine.
	want := make([][][]float64, len(ops))
	for i, o := range ops {
		want[i] = make([][]float64, ninputs)
		for k := 0; k < ninputs; k++ {
			var res []*T
			if err := catchAll(func() { res = o.run(k) }); err != nil {
				t.Fatalf("%s on input %d, alone: %v", o.name, k, err)
			}
			for _, r := range res {
				want[i][k] = append(want[i][k], r.Float64s()...)
			}
		}
	}

	before := heapAfterGC()

	var (
		mu       sync.Mutex
		failures []string
		nfail    int
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		nfail++
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < stressGoroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for c := 0; c < stressCalls; c++ {
				i := (g + c) % len(ops)
				k := (g*7 + c) % ninputs
				var res []*T
				if err := catchAll(func() { res = ops[i].run(k) }); err != nil {
					fail("goroutine %d call %d: %s on input %d: %v", g, c, ops[i].name, k, err)
					continue
				}
				var got []float64
				for _, r := range res {
					if !r.IsConcrete() {
						fail("goroutine %d call %d: %s on input %d returned a tracer %s", g, c, ops[i].name, k, r.TypeString())
						got = nil
						break
					}
					got = append(got, r.Float64s()...)
				}
				if got == nil {
					continue
				}
				if msg := ipSame(got, want[i][k], 0); msg != "" {
					fail("goroutine %d call %d: %s on input %d differs from the value computed alone: %s", g, c, ops[i].name, k, msg)
				}
			}
		}(g)
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, f := range failures {
		t.Error(f)
	}
	if nfail > len(failures) {
		t.Errorf("… %d failures in all", nfail)
	}
	if msg := ipSame(W.Float64s(), wData, 0); msg != "" {
		t.Errorf("captured W changed: %s", msg)
	}
	if msg := ipSame(b.Float64s(), bData, 0); msg != "" {
		t.Errorf("captured b changed: %s", msg)
	}
	after := heapAfterGC()
	grow := int64(after) - int64(before)
	t.Logf("%d goroutines × %d calls in %v; HeapAlloc %d → %d bytes (%+d)", stressGoroutines, stressCalls, elapsed, before, after, grow)
	if grow > stressHeapBound {
		t.Errorf("HeapAlloc grew by %d bytes over %d calls, more than %d", grow, stressGoroutines*stressCalls, stressHeapBound)
	}
}
