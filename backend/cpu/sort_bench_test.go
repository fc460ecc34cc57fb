package cpu_test

import (
	"math/rand/v2"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// BenchmarkSortRows sorts the rows of a 1000×1000 f64 matrix.
func BenchmarkSortRows(b *testing.B) {
	be := cpu.New()
	d := make([]float64, 1000*1000)
	for i := range d {
		d[i] = rand.Float64()
	}
	x := interp.NewConcrete(be, backend.Array{Buf: be.FromHost(d), Shape: []int{1000, 1000}})
	b.ResetTimer()
	for range b.N {
		interp.Bind1(prims.Sort, prims.SortParams{Axis: 1}, x)
	}
}
