package ddp_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/dist/ddp"
	"github.com/peel-ml/peel/transforms"
)

// TestWorldDataParallel checks ValueAndGrad3 over the job's processes
// (World: MPI with the mpi build tag, run under mpirun -np 2 and -np 3 by
// CI; a job of one process otherwise), eager and compiled, overlapped
// and not, with one bucket per leaf and default buckets: each process's
// loss and gradient equal the whole batch's on one process (float64, to
// 1e-12: MPI may add the members' parts in another order).
func TestWorldDataParallel(t *testing.T) {
	const rows = 12
	w := dist.World()
	r, n := w.Rank(), w.Size()
	x, y := batch(peel.Float64, rows)
	p := newMLP(peel.Float64)
	wantL, wantG := transforms.ValueAndGrad3(loss)(p, x, y)
	per := rows / n
	xb, yb := peel.Narrow(x, 0, r*per, per), peel.Narrow(y, 0, r*per, per)
	for _, compiled := range []bool{false, true} {
		for _, c := range []struct {
			name string
			o    []ddp.Option
		}{{"default", nil}, {"bucket-per-leaf", []ddp.Option{ddp.FirstBucketBytes(1), ddp.BucketBytes(1)}}, {"no-overlap", []ddp.Option{ddp.NoOverlap()}}} {
			t.Run(fmt.Sprintf("compiled=%v/%s", compiled, c.name), func(t *testing.T) {
				f := ddp.ValueAndGrad3(loss, w, c.o...)
				if compiled {
					f = uncompile(transforms.Compile3(tuple(f)))
				}
				for step := range 2 {
					l, g := f(p, xb, yb)
					if e := math.Abs(l.Item() - wantL.Item()); e > 1e-12 {
						t.Errorf("rank %d of %d, step %d: loss %v, want %v", r, n, step, l.Item(), wantL.Item())
					}
					if e := maxDiff(t, g, wantG); e > 1e-12 {
						t.Errorf("rank %d of %d, step %d: gradient differs from one process's by %g", r, n, step, e)
					}
				}
				w.Barrier()
			})
		}
	}
}
