//go:build !amd64 || purego

package cpu

// Without the assembly micro-kernels haveSIMD is false and dot_general's
// GEMMs go to the BLAS; these are never called.

func sgemm6x16AVX2(k int, a, b, c *float32, ldc, lda, ldb int, add bool) {
	panic("cpu: no GEMM micro-kernel")
}

func dgemm6x8AVX2(k int, a, b, c *float64, ldc, lda, ldb int, add bool) {
	panic("cpu: no GEMM micro-kernel")
}

func sgemm8x32AVX512(k int, a, b, c *float32, ldc, lda, ldb int, add bool) {
	panic("cpu: no GEMM micro-kernel")
}

func dgemm8x16AVX512(k int, a, b, c *float64, ldc, lda, ldb int, add bool) {
	panic("cpu: no GEMM micro-kernel")
}

func sgemm6x16AVX2Rows(k int, a, b, c *float32, ldc, lda, ldb int, add bool) {
	panic("cpu: no GEMM micro-kernel")
}

func dgemm6x8AVX2Rows(k int, a, b, c *float64, ldc, lda, ldb int, add bool) {
	panic("cpu: no GEMM micro-kernel")
}

func sgemm8x32AVX512Rows(k int, a, b, c *float32, ldc, lda, ldb int, add bool) {
	panic("cpu: no GEMM micro-kernel")
}

func dgemm8x16AVX512Rows(k int, a, b, c *float64, ldc, lda, ldb int, add bool) {
	panic("cpu: no GEMM micro-kernel")
}

func sgemm6x16AVX2Taps(ntaps, k int, a, b *float32, offs *int, astride, ldb int, c *float32, ldc int) {
	panic("cpu: no GEMM micro-kernel")
}

func dgemm6x8AVX2Taps(ntaps, k int, a, b *float64, offs *int, astride, ldb int, c *float64, ldc int) {
	panic("cpu: no GEMM micro-kernel")
}

func sgemm8x32AVX512Taps(ntaps, k int, a, b *float32, offs *int, astride, ldb int, c *float32, ldc int) {
	panic("cpu: no GEMM micro-kernel")
}

func dgemm8x16AVX512Taps(ntaps, k int, a, b *float64, offs *int, astride, ldb int, c *float64, ldc int) {
	panic("cpu: no GEMM micro-kernel")
}
