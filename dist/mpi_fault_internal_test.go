//go:build mpi

package dist

import (
	"os"
	"testing"
	"time"

	"github.com/peel-ml/peel"
)

// TestWorldFaultHangWait is run by CI under mpirun with
// PEEL_MPI_FAULT=hang-wait and PEEL_DIST_TIMEOUT=3s (it skips
// otherwise): rank 1 agrees on an IAllReduce (the guard every rank makes
// before MPI sees the call) but never starts it, while the others start
// it and wait for it in Request.Wait (with a progress goroutine,
// PEEL_MPI_PROGRESS=thread, or without: the reduction deferred to the
// Wait). Their watchdog reports the Wait and aborts the job after 3s; CI
// checks the exit status, the time and the report.
func TestWorldFaultHangWait(t *testing.T) {
	if os.Getenv("PEEL_MPI_FAULT") != "hang-wait" {
		t.Skip("run by CI under mpirun with PEEL_MPI_FAULT=hang-wait")
	}
	w := World().(*mpiComm)
	x := peel.FromFloat64s([]float64{1, 2, 3, 4}, 4)
	if w.Rank() == 1 {
		w.agree(callOf(cIAllReduce, Sum, x))
		time.Sleep(time.Hour)
	}
	w.IAllReduce(x, Sum).Wait()
	t.Fatalf("rank %d: the IAllReduce completed without rank 1", w.Rank())
}

// TestBFloat16Wire: a contiguous bfloat16 operand goes to MPI as its own
// 16-bit elements (the datatype code of the user-defined reductions),
// read in place, not widened to f32; a view is copied and travels as
// f32, its result f32 too.
func TestBFloat16Wire(t *testing.T) {
	x := peel.AsType(peel.FromFloat64s([]float64{1, 2.5, -3, 1e30}), peel.BFloat16)
	h := toHost(x)
	if h.dt != 5 || h.keep != x {
		t.Fatalf("a bfloat16 operand travels as datatype %d (kept in place: %v), want 5 in place", h.dt, h.keep == x)
	}
	if o := h.like(4); o.dt != 5 || o.buf == nil {
		t.Fatalf("its result buffer: datatype %d, backend buffer %v", o.dt, o.buf != nil)
	}
	v := peel.Transpose(peel.Reshape(x, 2, 2)) // a strided view
	if h := toHost(v); h.dt != 1 || h.like(4).dt != 1 {
		t.Fatalf("a bfloat16 view travels as datatype %d, its result as %d; want 1 (f32) for both", h.dt, h.like(4).dt)
	}
}
