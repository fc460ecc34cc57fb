package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRowBlocks checks the row kernels, which run blocks of rows
// (rowBlock), bit for bit against the same kernels run one row at a
// time: softmax and log-softmax, layer_norm and rms_norm, and the
// tangent maps of softmax and the norms, float32 and float64, rows shorter than the SIMD loops
// take and longer, numbers of rows that leave a block short and that
// run in parallel.
func TestRowBlocks(t *testing.T) {
	t.Run("float32", func(t *testing.T) { testRowBlocks(t, rowOps32()) })
	t.Run("float64", func(t *testing.T) { testRowBlocks(t, rowOps64()) })
}

func testRowBlocks[T float32 | float64](t *testing.T, o rowOps[T]) {
	rng := rand.New(rand.NewPCG(11, 12))
	data := func(n int, lo, hi float64) []T {
		d := make([]T, n)
		for i := range d {
			d[i] = T(lo + (hi-lo)*rng.Float64())
		}
		return d
	}
	same := func(name string, rows, n int, got, want []T) {
		t.Helper()
		for i := range want {
			if math.Float64bits(float64(got[i])) != math.Float64bits(float64(want[i])) {
				t.Fatalf("%s, %d rows of %d: element %d is %v one row at a time, %v by blocks", name, rows, n, i, want[i], got[i])
			}
		}
	}
	for _, n := range []int{5, 31, 64, 100} {
		for _, rows := range []int{1, 7, rowBlock(n) + 3, 3000} {
			x, y := data(rows*n, -3, 3), data(rows*n, -2, 2)
			inv := data(rows, 0.5, 2)
			for _, log := range []bool{false, true} {
				got, want := make([]T, rows*n), make([]T, rows*n)
				softmaxLines(got, x, []int{rows, n}, 1, log, o)
				for i := range rows {
					softmaxRow(want[i*n:(i+1)*n], x[i*n:(i+1)*n], log, o)
				}
				same("softmax", rows, n, got, want)
			}
			for _, center := range []bool{false, true} {
				got, want := make([]T, rows*n), make([]T, rows*n)
				gi, wi := make([]T, rows), make([]T, rows)
				normRows(got, gi, x, n, 1e-5, center, o)
				for i := range rows {
					normRows(want[i*n:(i+1)*n], wi[i:i+1], x[i*n:(i+1)*n], n, 1e-5, center, o)
				}
				same("norm", rows, n, got, want)
				same("norm's inverse deviations", rows, n, gi, wi)
				if center {
					q, ss := make([]T, rows*n), make([]T, rows)
					softmaxLinLines(got, x, y, []int{rows, n}, 1, o)
					for i := range rows {
						softmaxLinRows(want[i*n:(i+1)*n], x[i*n:(i+1)*n], y[i*n:(i+1)*n], q[:n], ss[:1], n, o)
					}
					same("softmax_lin", rows, n, got, want)
				}
				normLinRows(got, x, y, inv, n, center, o)
				for i := range rows {
					normLinRows(want[i*n:(i+1)*n], x[i*n:(i+1)*n], y[i*n:(i+1)*n], inv[i:i+1], n, center, o)
				}
				same("norm_lin", rows, n, got, want)
			}
		}
	}
}
