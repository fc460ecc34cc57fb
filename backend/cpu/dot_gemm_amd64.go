//go:build amd64 && !purego

package cpu

// GEMM micro-kernels (dot_gemm_amd64.s); see dot_gemm.go. They read k
// columns of a, lda elements apart, and k rows of b, ldb apart, and
// write a 6×16 (float32) or 6×8 (float64) tile of c with rows ldc
// elements apart, adding to it when add is set.

//go:noescape
func sgemm6x16AVX2(k int, a, b, c *float32, ldc, lda, ldb int, add bool)

//go:noescape
func dgemm6x8AVX2(k int, a, b, c *float64, ldc, lda, ldb int, add bool)

// The same micro-kernels reading the A panel in place from 6 rows lda
// elements apart (A row-major: each row's k elements contiguous), so a
// row-major A is never packed.

//go:noescape
func sgemm6x16AVX2Rows(k int, a, b, c *float32, ldc, lda, ldb int, add bool)

//go:noescape
func dgemm6x8AVX2Rows(k int, a, b, c *float64, ldc, lda, ldb int, add bool)

// Tap micro-kernels (dot_gemm_amd64.s, dot_gemm512_amd64.s): an MR×NR
// tile of C (rows ldc apart, overwritten) = the sum over ntaps taps of a
// packed A panel (MR rows, k columns, at a + t·astride) times k rows of
// B (ldb apart, at b + offs[t]); strides and offsets in elements.

//go:noescape
func sgemm6x16AVX2Taps(ntaps, k int, a, b *float32, offs *int, astride, ldb int, c *float32, ldc int)

//go:noescape
func dgemm6x8AVX2Taps(ntaps, k int, a, b *float64, offs *int, astride, ldb int, c *float64, ldc int)

// The AVX-512 ones (dot_gemm512_amd64.s) take 8-row panels of A.

//go:noescape
func sgemm8x32AVX512Taps(ntaps, k int, a, b *float32, offs *int, astride, ldb int, c *float32, ldc int)

//go:noescape
func dgemm8x16AVX512Taps(ntaps, k int, a, b *float64, offs *int, astride, ldb int, c *float64, ldc int)

// The AVX-512 micro-kernels (dot_gemm512_amd64.s): 8×32 float32 and 8×16
// float64 tiles, used where the CPU and OS support AVX-512F (haveAVX512),
// and their twins that read A's 8 rows in place.

//go:noescape
func sgemm8x32AVX512(k int, a, b, c *float32, ldc, lda, ldb int, add bool)

//go:noescape
func dgemm8x16AVX512(k int, a, b, c *float64, ldc, lda, ldb int, add bool)

//go:noescape
func sgemm8x32AVX512Rows(k int, a, b, c *float32, ldc, lda, ldb int, add bool)

//go:noescape
func dgemm8x16AVX512Rows(k int, a, b, c *float64, ldc, lda, ldb int, add bool)
