package batching_test

import (
	"bytes"
	"log"
	"strings"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/batching"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// TestLoopFallback removes cumsum's rule for a moment: in warn mode the
// primitive runs once per lane (same result as the rule, one warning), in
// error mode it panics with *interp.Error.
func TestLoopFallback(t *testing.T) {
	be := cpu.New()
	phys := interp.NewConcrete(be, backend.Array{Buf: be.FromHost([]float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6}), Shape: []int{2, 3}})
	run := func() []float64 {
		in := batching.New(3)
		defer in.End()
		y := interp.Bind1(prims.Cumsum, prims.CumsumParams{Axis: 0}, in.Batched(phys, 1))
		return in.Unbatched(y, 0).Float64s()
	}
	want := run()
	orig := batching.RuleFor(prims.Cumsum)
	batching.Register(prims.Cumsum, nil)
	defer batching.Register(prims.Cumsum, orig)

	var buf bytes.Buffer
	batching.SetLogger(log.New(&buf, "", 0))
	defer batching.SetLogger(nil)
	prev := batching.SetFallback(batching.FallbackWarn)
	defer batching.SetFallback(prev)
	for i := 0; i < 2; i++ {
		got := run()
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("fallback %v, rule %v", got, want)
			}
		}
	}
	if n := strings.Count(buf.String(), "no batching rule for cumsum"); n != 1 {
		t.Errorf("%d warnings, want 1: %q", n, buf.String())
	}

	batching.SetFallback(batching.FallbackError)
	err := interp.Catch(func() { run() })
	if err == nil || !strings.Contains(err.Error(), "cumsum: no batching rule") || !strings.Contains(err.Error(), "[in vmap]") {
		t.Errorf("error mode: %v", err)
	}
}

// TestBroadcastCacheSeesWrites checks that an unbatched constant written
// in place (or rebound) between two uses at one vmap level is read anew.
func TestBroadcastCacheSeesWrites(t *testing.T) {
	be := cpu.New()
	mk := func(v ...float64) *interp.Tensor {
		return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(v), Shape: []int{len(v)}})
	}
	phys := interp.NewConcrete(be, backend.Array{Buf: be.FromHost([]float64{1, 2, 3, 4}), Shape: []int{2, 2}})
	c := mk(10, 20)
	in := batching.New(2)
	defer in.End()
	x := in.Batched(phys, 0)
	first := in.Unbatched(interp.Bind1(prims.Add, nil, x, c), 0).Float64s()
	interp.Bind(prims.CopyInPlace, nil, c, mk(100, 200)) // a write below
	second := in.Unbatched(interp.Bind1(prims.Add, nil, x, c), 0).Float64s()
	interp.Rebind(c, mk(1000, 2000)) // a content change without a write
	third := in.Unbatched(interp.Bind1(prims.Add, nil, x, c), 0).Float64s()
	for i, w := range [][]float64{{11, 22, 13, 24}, {101, 202, 103, 204}, {1001, 2002, 1003, 2004}} {
		got := [][]float64{first, second, third}[i]
		for k := range w {
			if got[k] != w[k] {
				t.Fatalf("use %d: %v, want %v", i, got, w)
			}
		}
	}
}
