// Package cpu is peel's CPU backend: Go kernels (with AVX2+FMA assembly
// for hot loops) over Go slices, with matrix products through peel's
// packed GEMM and gonum's BLAS (OpenBLAS for all of them when built with
// -tags openblas, which needs cgo and libopenblas). Importing the package
// installs it as the default backend (package peel imports it, so the
// default needs no setup; peel.UseBackend replaces it).
//
// Kernels receive contiguous inputs; elementwise kernels also accept a
// broadcast scalar without materializing it. Large kernels split their
// work across SetThreads goroutines (GOMAXPROCS by default).
package cpu
