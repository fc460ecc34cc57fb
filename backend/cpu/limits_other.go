//go:build !amd64 || purego

package cpu

// fmaLoop runs the portable loop: the portable kernels are scalar.
func fmaLoop(_ kernelPath, f64 bool, n int) float64 { return fmaLoopGo(f64, n) }

// triad sets a[i] = b[i] + s·c[i]; the slices have equal lengths.
func triad(a, b, c []float32, s float32) { triadGo(a, b, c, s) }
