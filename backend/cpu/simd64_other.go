//go:build !amd64 || purego

package cpu

// Portable stand-ins for the float64 SIMD kernels of simd64_amd64.go, for
// other architectures and the purego build tag: haveSIMD is false, so
// the dispatching loops never call these, and each is the scalar loop
// whose results the kernel reproduces.

func exp64Vec(d, a []float64)      { exp64Scalar(d, a) }
func tanh64Vec(d, a []float64)     { tanh64Scalar(d, a) }
func logistic64Vec(d, a []float64) { logistic64Scalar(d, a) }
