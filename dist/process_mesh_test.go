package dist_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/transforms"
	"github.com/peel-ml/peel/tree"
)

// TestWorldShardMap runs ShardMap on the mesh of the job's processes
// (under mpirun, one device per process, the collectives over MPI; one
// process otherwise): a data-parallel loss and its gradient, and five
// steps of data-parallel SGD with Pmean of the gradients, equal the
// unsharded computation on the whole batch in every process (f64,
// 1e-12). CI runs it with -np 2 and -np 3 (an uneven split of nothing:
// the batch is 6 rows per process).
func TestWorldShardMap(t *testing.T) {
	n := dist.World().Size()
	mesh := dist.NewProcessMesh(dist.MeshAxis("data", n))
	type params struct{ W, B *T }
	p := params{data(0.3, 4, 3), data(0.9, 3)}
	x, y := data(1.4, 6*n, 4), data(2.2, 6*n, 3)
	loss := func(p params, x, y *T) *T { return x.MatMul(p.W).Add(p.B).Tanh().Sub(y).Square().Mean() }
	sharded := transforms.ShardMap3(func(p params, x, y *T) *T { return dist.Pmean(loss(p, x, y), "data") },
		mesh, []any{dist.P(), dist.P("data", nil), dist.P("data", nil)}, dist.P())
	near(t, "loss", sharded(p, x, y), loss(p, x, y), 1e-13)
	g, w := transforms.Grad3(sharded)(p, x, y), transforms.Grad3(loss)(p, x, y)
	near(t, "Grad W", g.W, w.W, 1e-12)
	near(t, "Grad B", g.B, w.B, 1e-12)

	step := transforms.ShardMap3(func(p params, x, y *T) params {
		g := transforms.Grad3(loss)(p, x, y)
		g = tree.Map(func(g *T) *T { return dist.Pmean(g, "data") }, g)
		return tree.Map2(func(p, g *T) *T { return p.Sub(g.Mul(0.5)) }, p, g)
	}, mesh, []any{dist.P(), dist.P("data", nil), dist.P("data", nil)}, dist.P())
	ps, pw := p, p
	for k := range 5 {
		ps = step(ps, x, y)
		gw := transforms.Grad3(loss)(pw, x, y)
		pw = tree.Map2(func(p, g *T) *T { return p.Sub(g.Mul(0.5)) }, pw, gw)
		near(t, fmt.Sprintf("W after step %d", k), ps.W, pw.W, 1e-12)
		near(t, fmt.Sprintf("B after step %d", k), ps.B, pw.B, 1e-12)
	}
	// A result split over the processes is assembled on every one.
	rows := transforms.ShardMap(func(x *T) *T { return x.Mul(dist.AxisIndex("data").Add(1)) }, mesh, dist.P("data", nil), dist.P("data", nil))(x)
	scale := make([]float64, 6*n)
	for i := range scale {
		scale[i] = float64(i/6 + 1)
	}
	near(t, "rows scaled by their process's index", rows, x.Mul(peel.FromFloat64s(scale, 6*n, 1)), 0)
	// A result claimed equal on every process (out spec P()) that is
	// not: every process raises the same *peel.Error (before, a process
	// mesh took rank 0's copy unchecked).
	if n > 1 {
		err := peel.Catch(func() {
			transforms.ShardMap(func(x *T) *T { return x.Add(dist.AxisIndex("data")) }, mesh, dist.P(), dist.P())(x)
		})
		var pe *peel.Error
		if !errors.As(err, &pe) || !strings.Contains(pe.Error(), "claimed equal on devices [0] and [1]") {
			t.Fatalf("rank %d: got %v, want the *peel.Error of copies claimed equal that differ", dist.World().Rank(), err)
		}
	}
}

// TestWorldFault is run by CI under mpirun with PEEL_MPI_FAULT=1 (it
// skips otherwise): rank 1 panics inside a device of the process mesh
// while the others wait in a collective. The panic must end the whole
// job with a non-zero exit (Abort), within a bounded time, never a hang:
// CI checks mpirun's exit status and its timeout.
func TestWorldFault(t *testing.T) {
	if os.Getenv("PEEL_MPI_FAULT") == "" {
		t.Skip("run by CI under mpirun with PEEL_MPI_FAULT=1")
	}
	w := dist.World()
	mesh := dist.NewProcessMesh(dist.MeshAxis("data", w.Size()))
	mesh.Run(func(d int) {
		if d == 1 {
			panic("rank 1 fails on purpose")
		}
		dist.Psum(data(1, 4), "data")
	})
	t.Fatalf("rank %d: the job went on after rank 1 failed", w.Rank())
}
