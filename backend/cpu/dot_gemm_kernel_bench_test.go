package cpu

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkMicroKernels times each GEMM micro-kernel alone on panels
// that stay in cache (6×kc of A, packed or, for the Rows kernels, read
// in place from rows 512 elements apart; kc×NR of B), against the FMA
// peak of its vector width: the inner loop's share of the roofline,
// apart from packing, blocking and threads.
//
//	go test ./backend/cpu/ -run '^$' -bench MicroKernels
func BenchmarkMicroKernels(b *testing.B) {
	type kernel struct {
		name   string
		mr     int
		wide   bool
		f64    bool
		nr     int
		run32  func(k int, a, b, c *float32, ldc, lda, ldb int, add bool)
		run64  func(k int, a, b, c *float64, ldc, lda, ldb int, add bool)
		usable bool
	}
	ks := []kernel{
		{"sgemm6x16AVX2", 6, false, false, 16, sgemm6x16AVX2, nil, cpuPath >= pathAVX2},
		{"dgemm6x8AVX2", 6, false, true, 8, nil, dgemm6x8AVX2, cpuPath >= pathAVX2},
		{"sgemm8x32AVX512", 8, true, false, 32, sgemm8x32AVX512, nil, haveAVX512},
		{"dgemm8x16AVX512", 8, true, true, 16, nil, dgemm8x16AVX512, haveAVX512},
		{"sgemm8x32AVX512Rows", 8, true, false, 32, sgemm8x32AVX512Rows, nil, haveAVX512},
		{"dgemm8x16AVX512Rows", 8, true, true, 16, nil, dgemm8x16AVX512Rows, haveAVX512},
	}
	for _, k := range ks {
		if !k.usable {
			continue
		}
		// The Rows kernels read A in place: 6 rows of a row-major
		// matrix 512 elements wide, as a 512² product's.
		lda, rows := k.mr, strings.HasSuffix(k.name, "Rows")
		if rows {
			lda = 512
		}
		p := pathAVX2
		if k.wide {
			p = pathAVX512
		}
		pk := peak(p, k.f64, 1)
		for _, kc := range []int{64, 256} {
			b.Run(fmt.Sprintf("%s/k=%d", k.name, kc), func(b *testing.B) {
				if k.f64 {
					a, bb, c := make([]float64, k.mr*max(kc, lda)), make([]float64, kc*k.nr), make([]float64, k.mr*k.nr)
					for i := range a {
						a[i] = 1e-3
					}
					for b.Loop() {
						k.run64(kc, &a[0], &bb[0], &c[0], k.nr, lda, k.nr, true)
					}
				} else {
					a, bb, c := make([]float32, k.mr*max(kc, lda)), make([]float32, kc*k.nr), make([]float32, k.mr*k.nr)
					for i := range a {
						a[i] = 1e-3
					}
					for b.Loop() {
						k.run32(kc, &a[0], &bb[0], &c[0], k.nr, lda, k.nr, true)
					}
				}
				gf := 2 * float64(k.mr*k.nr*kc) * float64(b.N) / b.Elapsed().Seconds() / 1e9
				b.ReportMetric(gf, "GFLOPS")
				b.ReportMetric(100*gf/pk, "%peak")
			})
		}
	}
}
