package main

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
	"github.com/peel-ml/peel/tree"
)

// TestDataParallelEqualsOneDevice: training data-parallel on in-process
// meshes of 2 and 3 devices, with ShardMap and Pmean and with
// ddp.ValueAndGrad3, (the same program the MPI job runs, on
// goroutines) gives every epoch's loss and the final parameters of one
// device on the whole batch, to 1e-12 in float64 and 1e-6 in float32.
// CI also runs the program under mpirun -np 2 and -np 3 and compares its
// printed losses with one process's.
func TestDataParallelEqualsOneDevice(t *testing.T) {
	for _, dt := range []peel.DType{peel.Float64, peel.Float32} {
		tol := 1e-12
		if dt == peel.Float32 {
			tol = 1e-6
		}
		one, l1 := train(dist.NewMesh(dist.MeshAxis("data", 1)), dt, 2, false)
		for _, c := range []struct {
			n      int
			useDDP bool
		}{{1, true}, {2, false}, {2, true}, {3, false}, {3, true}} {
			n := c.n
			p, l := train(dist.NewMesh(dist.MeshAxis("data", n)), dt, 2, c.useDDP)
			for k := range l1 {
				if d := math.Abs(l[k] - l1[k]); d > tol*(1+math.Abs(l1[k])) {
					t.Errorf("%v, %d devices (ddp %v): epoch %d loss %v, one device %v", dt, n, c.useDDP, k, l[k], l1[k])
				}
			}
			a, b := tree.Leaves(p), tree.Leaves(one)
			for i := range a {
				x, y := peel.AsType(a[i], peel.Float64).Float64s(), peel.AsType(b[i], peel.Float64).Float64s()
				for j := range x {
					if d := math.Abs(x[j] - y[j]); d > tol*(1+math.Abs(y[j])) {
						t.Fatalf("%v, %d devices (ddp %v): parameter %s[%d] = %v, one device %v", dt, n, c.useDDP, tree.Paths(p)[i], j, x[j], y[j])
					}
				}
			}
		}
		if !(l1[1] < l1[0]) {
			t.Errorf("%v: the loss did not fall: %v", dt, l1)
		}
	}
}
