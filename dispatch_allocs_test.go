//go:build !race

package peel_test

import (
	"testing"

	"github.com/peel-ml/peel"
)

// TestEagerAllocsPerOp bounds the heap allocations of an eager op on a
// small tensor (a chain of 100 elementwise ops on f32[16], as peelbench's
// tiny_chain_100): two — the result tensor and its buffer, whose header
// and elements the CPU backend allocates as one object, and which a
// backend.Buffer holds without boxing, being a pointer (issue 41; three
// before, with the buffer's interface box). The bound catches a dispatch
// path that starts allocating per op. (Not under the race detector,
// whose instrumentation allocates, nor in the cache's checking mode.)
func TestEagerAllocsPerOp(t *testing.T) {
	skipInCheckMode(t) // the checking mode tracks every buffer it hands out
	a := peel.Full(peel.Float32, 0.5, 16)
	b := peel.Full(peel.Float32, 0.25, 16)
	const ops = 100
	chain := func() {
		x := a
		for range ops / 4 {
			x = peel.Tanh(peel.Sub(peel.Mul(peel.Add(x, b), a), b))
		}
	}
	chain()
	perOp := testing.AllocsPerRun(20, chain) / ops
	t.Logf("%.2f allocations per op", perOp)
	if perOp > 2.05 {
		t.Errorf("%.2f heap allocations per eager op on f32[16], want at most 2", perOp)
	}
}

// BenchmarkEagerChain100 times and counts the allocations of the chain
// of TestEagerAllocsPerOp.
func BenchmarkEagerChain100(b *testing.B) {
	x0 := peel.Full(peel.Float32, 0.5, 16)
	y := peel.Full(peel.Float32, 0.25, 16)
	b.ReportAllocs()
	for b.Loop() {
		x := x0
		for range 25 {
			x = peel.Tanh(peel.Sub(peel.Mul(peel.Add(x, y), x0), y))
		}
	}
}

// TestEagerViewAllocs counts the heap allocations of eager views: the
// view tensor, its View and the result list are one allocation (they
// were three), and a slice's three parameter lists one (they were
// three): a Reshape allocates 6 times, an Index 14 and a Select 15,
// where they allocated 8, 20 and 21.
func TestEagerViewAllocs(t *testing.T) {
	skipInCheckMode(t)
	x := peel.Full(peel.Float32, 0.5, 4, 4)
	for _, c := range []struct {
		name string
		f    func()
		max  float64
	}{
		{"Reshape", func() { peel.Reshape(x, 16) }, 6},
		{"Index", func() { peel.Index(x, 1) }, 14},
		{"Select", func() { peel.Select(x, 1, 1) }, 15},
	} {
		if n := testing.AllocsPerRun(100, c.f); n > c.max {
			t.Errorf("an eager %s allocates %.0f times, want at most %.0f", c.name, n, c.max)
		}
	}
}
