package interp

import (
	"testing"

	"github.com/peel-ml/peel/backend"
)

// TestReleasedGraphWriteCopiesNothing: once a graph's constants are
// released, a write into the tensor they were taken of stays in its own
// block (no copy), and the released graph refuses to run.
func TestReleasedGraphWriteCopiesNothing(t *testing.T) {
	be := DefaultBackend()
	w := concreteTensor(be, backend.Array{Buf: be.FromHost([]float64{1, 2, 3}), Shape: []int{3}})
	s := &stager{g: &Graph{}, consts: map[*Tensor]constRec{}, viewed: map[*Tensor]bool{}}
	s.varOf(w)
	if got := w.st.cur.refs.Load(); got != 1 {
		t.Fatalf("other users after lifting: %d, want 1", got)
	}
	s.g.ReleaseConstants()
	if got := w.st.cur.refs.Load(); got != 0 {
		t.Fatalf("other users after release: %d, want 0", got)
	}
	blk := w.st.cur
	w.st.unshare(be, w.dtype)
	if w.st.cur != blk {
		t.Errorf("a write after release copied the block")
	}
	if err := Catch(func() { s.g.Eval() }); err == nil {
		t.Errorf("a released graph ran")
	}
}
