package cpu_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/prims"
)

// BenchmarkDotBatched times dot_general's kernel (Exec into a
// preallocated result) on the batched shapes of a compiled per-sample
// gradient (Vmap(Grad) of an MLP 784-128-10, batch 64): outer products
// with a batch dimension, batched matrix-vector and matrix-matrix
// products, and the plain matmuls around them.
//
//	go test ./backend/cpu/ -run '^$' -bench DotBatched -benchtime=200ms
func BenchmarkDotBatched(b *testing.B) {
	cases := []struct {
		name   string
		as, bs []int
		p      prims.DotParams
	}{
		{"outer_64x784x128", []int{64, 784}, []int{64, 128},
			prims.DotParams{LhsBatch: []int{0}, RhsBatch: []int{0}}},
		{"outer_64x128x10", []int{64, 128}, []int{64, 10},
			prims.DotParams{LhsBatch: []int{0}, RhsBatch: []int{0}}},
		{"matvec_64x128x784", []int{64, 128, 784}, []int{64, 784},
			prims.DotParams{LhsBatch: []int{0}, RhsBatch: []int{0}, LhsContract: []int{2}, RhsContract: []int{1}}},
		{"vecmat_64x784x128", []int{64, 784}, []int{64, 784, 128},
			prims.DotParams{LhsBatch: []int{0}, RhsBatch: []int{0}, LhsContract: []int{1}, RhsContract: []int{1}}},
		{"bmm_64x32x64x32", []int{64, 32, 64}, []int{64, 64, 32},
			prims.DotParams{LhsBatch: []int{0}, RhsBatch: []int{0}, LhsContract: []int{2}, RhsContract: []int{1}}},
		{"matmul_64x784x128", []int{64, 784}, []int{784, 128},
			prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}},
		{"matmulNT_64x10x128", []int{64, 10}, []int{128, 10},
			prims.DotParams{LhsContract: []int{1}, RhsContract: []int{1}}},
	}
	be := cpu.New()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
		for _, c := range cases {
			b.Run(fmt.Sprintf("%v/%s", dt, c.name), func(b *testing.B) {
				mk := func(shape []int) backend.Array {
					n := backend.ShapeSize(shape)
					var data any
					if dt == backend.Float32 {
						d := make([]float32, n)
						for i := range d {
							d[i] = float32(rng.NormFloat64())
						}
						data = d
					} else {
						d := make([]float64, n)
						for i := range d {
							d[i] = rng.NormFloat64()
						}
						data = d
					}
					return backend.Array{Buf: be.FromHost(data), Shape: shape}
				}
				x, y := mk(c.as), mk(c.bs)
				shape := prims.DotShape(c.p, c.as, c.bs)
				out := backend.Array{Buf: be.Alloc(dt, backend.ShapeSize(shape)), Shape: shape}
				in := make([]backend.Array, 2)
				outs := []backend.Array{out}
				b.ReportAllocs()
				for b.Loop() {
					in[0], in[1] = x, y
					be.Exec(prims.DotGeneral.Op, c.p, in, outs)
				}
			})
		}
	}
}
