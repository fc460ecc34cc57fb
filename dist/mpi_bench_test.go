//go:build mpi

package dist_test

import (
	"fmt"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/dist"
)

// BenchmarkWorldAllReduceSizes is the cost of AllReduce through peel's MPI
// communicator (a job of one process when run without mpirun: MPI's own
// cost is then a copy, so this is mostly peel's overhead).
func BenchmarkWorldAllReduceSizes(b *testing.B) {
	w := dist.World()
	for _, n := range []int{1 << 10, 1 << 18} {
		x := peel.Zeros(peel.Float32, n)
		b.Run(fmt.Sprint(n*4, "B"), func(b *testing.B) {
			b.SetBytes(int64(n * 4))
			b.ReportAllocs()
			for b.Loop() {
				w.AllReduce(x, dist.Sum)
			}
		})
	}
}
