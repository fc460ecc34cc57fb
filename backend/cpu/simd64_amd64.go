//go:build amd64 && !purego

package cpu

// AVX2+FMA float64 exp, tanh and logistic (simd64_amd64.s). They perform
// the operations of exp64Scalar, tanh64Scalar and logistic64Scalar
// (fastmath64.go) four lanes at a time and give bit-identical results.

// Assembly kernels; they process len(d) elements, reading a[:len(d)]
// without checking its length. Call them through the *Vec functions.

//go:noescape
func exp64AVX2(d, a []float64)

//go:noescape
func tanh64AVX2(d, a []float64)

//go:noescape
func logistic64AVX2(d, a []float64)

// exp64Vec, tanh64Vec and logistic64Vec set d[i] = f(a[i]) with the
// assembly kernels, chunk by chunk (unaryVec), and are called only when
// haveSIMD is true. They panic if len(a) < len(d).
func exp64Vec(d, a []float64)      { unaryVec(exp64AVX2, d, a) }
func tanh64Vec(d, a []float64)     { unaryVec(tanh64AVX2, d, a) }
func logistic64Vec(d, a []float64) { unaryVec(logistic64AVX2, d, a) }
