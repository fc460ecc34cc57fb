package interp_test

import (
	"sync"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/internal/interptest"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

func f64s(t *interp.Tensor) []float64 { return t.Float64s() }

func sameF64(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

// TestGraphConstantsByValue: a graph keeps the values its constants had
// when traced, whatever is written into the traced-from tensors later,
// directly, through a view, or through another box sharing the memory
// (issue 11, D6).
func TestGraphConstantsByValue(t *testing.T) {
	f64 := interptest.Aval(backend.Float64, 3)
	x := interptest.Tensor([]float64{1, 2, 3}, 3)
	for name, write := range interptest.Writes() {
		t.Run(name, func(t *testing.T) {
			w := interptest.Tensor([]float64{1, 1, 1}, 3)
			g := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
				return []*interp.Tensor{interptest.Bind(prims.Mul, a[0], w)}
			}, f64)
			write(w)
			sameF64(t, "Graph.Eval after the write", f64s(g.Eval(x)[0]), []float64{1, 2, 3})
			sameF64(t, "the written tensor", f64s(w), []float64{10, 10, 10})
		})
	}
}

// TestConstantWrittenBetweenUses: a tensor used as a constant, written in
// place, then used again is two constants with the two values (issue 11,
// D11: staging cached constants per box by a version that in-place writes
// did not change).
func TestConstantWrittenBetweenUses(t *testing.T) {
	w := interptest.Tensor([]float64{1, 1, 1}, 3)
	g := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
		e := interptest.Bind(prims.Mul, a[0], w)
		interp.Bind(prims.AddInPlace, nil, w, interptest.Splat([]float64{3}, 3))
		return []*interp.Tensor{interptest.Bind(prims.Add, e, interptest.Bind(prims.Mul, w, a[0]))}
	}, interptest.Aval(backend.Float64, 3))
	x := interptest.Tensor([]float64{1, 2, 3}, 3)
	sameF64(t, "Graph.Eval", f64s(g.Eval(x)[0]), []float64{5, 10, 15})
	if len(g.Consts) != 2 {
		t.Errorf("graph has %d constants, want 2:\n%v", len(g.Consts), g)
	}
}

// TestSnapshotCopyOnWrite: a snapshot shares memory until either side is
// written; each side's writes are its own, and views follow their base.
func TestSnapshotCopyOnWrite(t *testing.T) {
	w := interptest.Tensor([]float64{1, 2, 3, 4}, 4)
	view := interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: []int{2, 2}}, w)
	s := interp.Snapshot(w)
	interp.Bind(prims.MulInPlace, nil, view, interptest.Splat([]float64{2}, 2, 2))
	sameF64(t, "base after a write through its view", f64s(w), []float64{2, 4, 6, 8})
	sameF64(t, "snapshot", f64s(s), []float64{1, 2, 3, 4})
	interp.Bind(prims.AddInPlace, nil, s, interptest.Splat([]float64{1}, 4))
	sameF64(t, "snapshot after its own write", f64s(s), []float64{2, 3, 4, 5})
	sameF64(t, "base after the snapshot's write", f64s(w), []float64{2, 4, 6, 8})
	interp.Bind(prims.AddInPlace, nil, w, interptest.Splat([]float64{1}, 4))
	sameF64(t, "view after a write into its base", f64s(view), []float64{3, 5, 7, 9})
}

// TestConcurrentTracesShareConstant: goroutines tracing functions that
// capture one tensor write nothing shared but an atomic count (run under
// -race), and every graph keeps its value.
func TestConcurrentTracesShareConstant(t *testing.T) {
	w := interptest.Tensor([]float64{1, 2, 3}, 3)
	x := interptest.Tensor([]float64{1, 1, 1}, 3)
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				g := interptest.Trace(func(a []*interp.Tensor) []*interp.Tensor {
					return []*interp.Tensor{interptest.Bind(prims.Mul, a[0], w)}
				}, interptest.Aval(backend.Float64, 3))
				got := f64s(g.Eval(x)[0])
				if got[0] != 1 || got[1] != 2 || got[2] != 3 {
					errs <- "wrong value"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
