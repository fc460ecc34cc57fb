//go:build !openblas

package cpu

// BLAS names the BLAS implementation dot_general calls: "gonum" (gonum's
// pure Go BLAS) in the default build, "openblas" when built with
// -tags openblas.
func BLAS() string { return "gonum" }

// setBLASThreads is a no-op: gonum's BLAS splits work across GOMAXPROCS.
func setBLASThreads(int) {}

// packedGEMM makes dot_general's float GEMMs use peel's packed
// micro-kernels (dot_gemm.go) where the CPU has them: gonum's GEMM is
// several times slower.
const packedGEMM = true
