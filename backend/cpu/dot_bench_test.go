package cpu_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// BenchmarkMatMul512 times a 512×512 by 512×512 product through peel's
// dispatch (Bind → eval → dot_general kernel, result allocation
// included) and, side by side, a direct GEMM call of the BLAS the build
// selected (gonum by default, OpenBLAS with -tags openblas) on the same
// data. Both report GFLOPS = 2·n³ / time.
//
//	go test ./backend/cpu/ -run '^$' -bench MatMul512 -benchtime=200ms
//	go test -tags openblas ./backend/cpu/ -run '^$' -bench MatMul512 -benchtime=200ms
func BenchmarkMatMul512(b *testing.B) {
	const n = 512
	rng := rand.New(rand.NewPCG(7, 8))
	a64, b64 := make([]float64, n*n), make([]float64, n*n)
	for i := range a64 {
		a64[i], b64[i] = rng.NormFloat64(), rng.NormFloat64()
	}
	a32, b32 := make([]float32, n*n), make([]float32, n*n)
	for i := range a64 {
		a32[i], b32[i] = float32(a64[i]), float32(b64[i])
	}
	be := cpu.New()
	tensor := func(data any) *interp.Tensor {
		return interp.NewConcrete(be, backend.Array{Buf: be.FromHost(data), Shape: []int{n, n}})
	}
	matmul := prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}
	lim := cpu.MeasureLimits(cpu.Threads())
	gflops := func(b *testing.B) {
		gf := 2 * n * n * n * float64(b.N) / b.Elapsed().Seconds() / 1e9
		b.ReportMetric(gf, "GFLOPS")
		b.ReportMetric(100*gf/lim.Peak(strings.HasPrefix(b.Name(), "BenchmarkMatMul512/f64")), "%peak")
	}

	b.Run("f64/peel", func(b *testing.B) {
		x, y := tensor(a64), tensor(b64)
		for b.Loop() {
			interp.Bind1(prims.DotGeneral, matmul, x, y)
		}
		gflops(b)
	})
	b.Run("f64/"+cpu.BLAS(), func(b *testing.B) {
		x := blas64.General{Rows: n, Cols: n, Stride: n, Data: a64}
		y := blas64.General{Rows: n, Cols: n, Stride: n, Data: b64}
		z := blas64.General{Rows: n, Cols: n, Stride: n, Data: make([]float64, n*n)}
		for b.Loop() {
			blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, x, y, 0, z)
		}
		gflops(b)
	})
	b.Run("f32/peel", func(b *testing.B) {
		x, y := tensor(a32), tensor(b32)
		for b.Loop() {
			interp.Bind1(prims.DotGeneral, matmul, x, y)
		}
		gflops(b)
	})
	b.Run("f32/"+cpu.BLAS(), func(b *testing.B) {
		x := blas32.General{Rows: n, Cols: n, Stride: n, Data: a32}
		y := blas32.General{Rows: n, Cols: n, Stride: n, Data: b32}
		z := blas32.General{Rows: n, Cols: n, Stride: n, Data: make([]float32, n*n)}
		for b.Loop() {
			blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, x, y, 0, z)
		}
		gflops(b)
	})
}

// BenchmarkMatVec times a 1024×1024 matrix by vector product through peel
// and through a direct GEMV call (f64).
//
//	go test ./backend/cpu/ -run '^$' -bench MatVec -benchtime=200ms
func BenchmarkMatVec(b *testing.B) {
	const n = 1024
	rng := rand.New(rand.NewPCG(9, 10))
	a, v := make([]float64, n*n), make([]float64, n)
	for i := range a {
		a[i] = rng.NormFloat64()
	}
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	be := cpu.New()
	x := interp.NewConcrete(be, backend.Array{Buf: be.FromHost(a), Shape: []int{n, n}})
	y := interp.NewConcrete(be, backend.Array{Buf: be.FromHost(v), Shape: []int{n}})
	gflops := func(b *testing.B) {
		b.ReportMetric(2*n*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
	}
	b.Run("peel", func(b *testing.B) {
		for b.Loop() {
			interp.Bind1(prims.DotGeneral, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}, x, y)
		}
		gflops(b)
	})
	b.Run("peel-vecmat", func(b *testing.B) {
		for b.Loop() {
			interp.Bind1(prims.DotGeneral, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}}, y, x)
		}
		gflops(b)
	})
	b.Run(cpu.BLAS(), func(b *testing.B) {
		m := blas64.General{Rows: n, Cols: n, Stride: n, Data: a}
		out := make([]float64, n)
		for b.Loop() {
			blas64.Gemv(blas.NoTrans, 1, m, blas64.Vector{N: n, Inc: 1, Data: v}, 0, blas64.Vector{N: n, Inc: 1, Data: out})
		}
		gflops(b)
	})
}

// BenchmarkGEMMKernels times the packed GEMM with each micro-kernel
// (AVX2, and AVX-512 where the CPU has it) on one thread, on a square
// product and the MLP layers' shapes; GFLOPS = 2·m·k·n / time.
//
//	go test ./backend/cpu/ -run '^$' -bench GEMMKernels -benchtime=200ms
func BenchmarkGEMMKernels(b *testing.B) {
	defer cpu.SetThreads(cpu.Threads())
	cpu.SetThreads(1)
	defer cpu.SetWideGEMM(cpu.SetWideGEMM(false))
	be := cpu.New()
	rng := rand.New(rand.NewPCG(9, 10))
	matmul := prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}
	// Each micro-kernel against the peak of its own vector width.
	peaks := map[[2]bool]float64{}
	for _, k := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		peaks[k] = cpu.PeakGFLOPS(k[0], k[1])
	}
	for _, s := range [][3]int{{512, 512, 512}, {64, 784, 128}, {128, 256, 10}, {128, 256, 20}, {128, 256, 40}, {32, 128, 128}, {128, 128, 128}, {128, 128, 512}} {
		m, k, n := s[0], s[1], s[2]
		for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
			data := func(size int) any {
				v := make([]float64, size)
				for i := range v {
					v[i] = rng.NormFloat64()
				}
				if dt == backend.Float32 {
					return stCastF32(v)
				}
				return v
			}
			x := interp.NewConcrete(be, backend.Array{Buf: be.FromHost(data(m * k)), Shape: []int{m, k}})
			y := interp.NewConcrete(be, backend.Array{Buf: be.FromHost(data(k * n)), Shape: []int{k, n}})
			for _, wide := range []bool{false, true} {
				if wide && !cpu.HasWideGEMM() {
					continue
				}
				name := fmt.Sprintf("%v/%dx%dx%d/avx2", dt, m, k, n)
				if wide {
					name = name[:len(name)-4] + "avx512"
				}
				b.Run(name, func(b *testing.B) {
					cpu.SetWideGEMM(wide)
					for b.Loop() {
						interp.Bind1(prims.DotGeneral, matmul, x, y)
					}
					gf := 2 * float64(m*k*n) * float64(b.N) / b.Elapsed().Seconds() / 1e9
					b.ReportMetric(gf, "GFLOPS")
					b.ReportMetric(100*gf/peaks[[2]bool{wide, dt == backend.Float64}], "%peak")
				})
			}
		}
	}
}

func stCastF32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}
