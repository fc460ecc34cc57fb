package ddp_test

import (
	"fmt"
	"testing"

	"github.com/peel-ml/peel/dist"
)

// TestWorldZeRO checks ZeRO-1 over the job's processes (World: MPI with
// the mpi build tag, run under mpirun -np 2 and -np 3 by CI; a job of one
// process otherwise), eagerly and compiled, with SGD with momentum and
// with Adam: after each of three steps every process's parameters equal
// the whole optimizer's on one device with the mean gradient, which each
// process computes from every rank's part of the batch (to 1e-12: MPI
// may add the members' gradients in another order than the oracle), and
// its state holds only its shard.
func TestWorldZeRO(t *testing.T) {
	const rows, steps = 12, 3 // 12 rows split evenly on 1, 2 and 3 processes
	w := dist.World()
	r, n := w.Rank(), w.Size()
	t.Logf("rank %d of %d (MPI build: %v)", r, n, dist.MPIEnabled)
	if rows%n != 0 {
		t.Skipf("%d rows do not split among %d processes", rows, n)
	}
	x, y := zbatch(rows)
	p := newZMLP()
	for _, o := range zeroOpts {
		want := unsharded(o, p, x, y, n, steps)
		for _, compiled := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/compiled=%v", o.name, compiled), func(t *testing.T) {
				got := shardedSteps(t, o, w, compiled, p, x, y, steps)
				for s := range steps {
					if e := zeroDiff(got[s], want[s]); e > 1e-12 {
						t.Errorf("rank %d of %d, step %d: parameters differ from the unsharded optimizer's by %g", r, n, s+1, e)
					}
				}
				w.Barrier()
			})
		}
	}
}
