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
