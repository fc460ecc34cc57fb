// Package cpu is peel's CPU backend: pure Go kernels over Go slices, with
// matrix products through gonum's BLAS (OpenBLAS when built with
// -tags openblas, which needs cgo and libopenblas). Importing the package
// installs it as the default backend (package peel imports it, so the
// default needs no setup; peel.UseBackend replaces it).
//
// Kernels receive contiguous inputs; elementwise kernels also accept a
// broadcast scalar without materializing it. Large kernels split their
// work across SetThreads goroutines (GOMAXPROCS by default).
package cpu
