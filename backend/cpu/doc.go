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
//
// The kernels have three paths: portable Go loops ("purego", what other
// architectures run), AVX2+FMA assembly ("avx2") and, beside it, the
// AVX-512 GEMM micro-kernels and copies ("avx512"). A process runs the
// widest its CPU supports (Path), or a narrower one named by the
// PEEL_CPU environment variable (PEEL_CPU=avx2 on an AVX-512 machine
// tests and times the AVX2 kernels); the backend's initialization panics
// with a *peel.Error when PEEL_CPU names an unknown path or one the CPU
// lacks. MeasureLimits measures what bounds the kernels on this machine
// (the FMA peak and the memory bandwidth), against which the benchmarks
// report their rates. The GEMM's block sizes come from the CPU's cache
// sizes.
package cpu
