package ddp_test

import (
	"fmt"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/dist/ddp"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// TestWorldZeRO checks ZeRO-1 over the job's processes (World: MPI with
// the mpi build tag, run under mpirun -np 2 and -np 3 by CI; a job of one
// process otherwise), eagerly and compiled, with SGD with momentum and
// with Adam: after each of three steps every process's parameters equal
// the whole optimizer's on one device with the mean gradient, which each
// process computes from every rank's part of the batch (to 1e-12: MPI
// may add the members' gradients in another order than the oracle), and
// its state holds only its shard.
func TestWorldZeRO(t *testing.T) { testWorldEqualsUnsharded(t, shardedSteps) }

// testWorldEqualsUnsharded checks a sharded training over the job's
// processes, eagerly and compiled, with each optimizer of zeroOpts: after
// each of three steps every process's parameters equal the whole
// optimizer's on one device with the mean gradient, to 1e-12.
func testWorldEqualsUnsharded(t *testing.T, run shardedRun) {
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
				got := run(t, o, w, compiled, p, x, y, steps)
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

// TestWorldZeROGatherScatter: over the job's processes, a ZeRO state
// gathered after two steps (the same on every process) and scattered
// back is each process's own shard, bit for bit, and its steps go on as
// before.
func TestWorldZeROGatherScatter(t *testing.T) {
	w := dist.World()
	x, y := zbatch(12)
	for _, o := range zeroOpts {
		z := ddp.ShardOptimizer[zmlp](o.flat, w)
		p := newZMLP()
		st := z.Init(p)
		xr, yr := part(x, y, w.Rank(), w.Size())
		for range 2 {
			p, st = z.Step(p, transforms.Grad3(zloss)(p, xr, yr), st)
		}
		whole := z.GatherState(p, st)
		back := z.ScatterState(p, whole)
		for k := range st {
			a, b := tree.Leaves(st[k]), tree.Leaves(back[k])
			for i := range a {
				if d := peel.Max(peel.Abs(peel.Sub(peel.AsType(a[i], peel.Float64), peel.AsType(b[i], peel.Float64)))).Item(); d != 0 {
					t.Fatalf("%s rank %d: dtype %d leaf %d differs by %g after GatherState and ScatterState", o.name, w.Rank(), k, i, d)
				}
			}
		}
		p1, _ := z.Step(p, transforms.Grad3(zloss)(p, xr, yr), st)
		p2, _ := z.Step(p, transforms.Grad3(zloss)(p, xr, yr), back)
		for i, l := range tree.Leaves(p1) {
			if d := peel.Max(peel.Abs(peel.Sub(peel.AsType(l, peel.Float64), peel.AsType(tree.Leaves(p2)[i], peel.Float64)))).Item(); d != 0 {
				t.Fatalf("%s rank %d: the step after resuming differs by %g at leaf %d", o.name, w.Rank(), d, i)
			}
		}
	}
}
