//go:build amd64 && !purego

package cpu

// AVX2+FMA float64 exp, tanh and logistic (simd64_amd64.s). They perform
// the operations of exp64Scalar, tanh64Scalar and logistic64Scalar
// (fastmath64.go) four lanes at a time and give bit-identical results.
// erf32AVX2 evaluates the float32 erf in float64 lanes with its own
// method (not erf32Scalar's table), within 1 ulp as erf32Scalar is.

// Assembly kernels; they process len(d) elements, reading a[:len(d)]
// without checking its length. Call them through the *Vec functions.

//go:noescape
func exp64AVX2(d, a []float64)

//go:noescape
func tanh64AVX2(d, a []float64)

//go:noescape
func logistic64AVX2(d, a []float64)

// erf32AVX2 sets d[i] = erf(a[i]) for i below len(d) rounded down to a
// multiple of 4, in float64 (simd64_amd64.s).
//
//go:noescape
func erf32AVX2(d, a []float32)

// gelu32AVX2 sets d[i] to GELU(a[i]) like erf32AVX2 (GELU′'s kernels
// are in gelugrad_amd64.go).
//
//go:noescape
func gelu32AVX2(d, a []float32)

// gelu32AVX512 is gelu32AVX2 on eight lanes (len(d) a multiple of 8),
// the same bits: the kernel where the CPU has AVX-512 (haveAVX512).
//
//go:noescape
func gelu32AVX512(d, a []float32)

// exp64Vec, tanh64Vec and logistic64Vec set d[i] = f(a[i]) with the
// assembly kernels, chunk by chunk (unaryVec), and are called only when
// haveSIMD is true. They panic if len(a) < len(d).
func exp64Vec(d, a []float64)      { unaryVec(exp64AVX2, d, a) }
func tanh64Vec(d, a []float64)     { unaryVec(tanh64AVX2, d, a) }
func logistic64Vec(d, a []float64) { unaryVec(logistic64AVX2, d, a) }

// erf32Vec sets d[i] = erf(a[i]): the kernel for whole groups of four,
// erf32Scalar for the last few. It panics if len(a) < len(d).
func erf32Vec(d, a []float32) {
	a = a[:len(d)]
	n := len(d) &^ 3
	unaryVec(erf32AVX2, d[:n], a[:n])
	erf32Scalar(d[n:], a[n:])
}

// gelu32Vec is erf32Vec's kind of loop for GELU, its last few elements
// through the portable loop. Where the CPU has AVX-512 the eight-lane
// kernel takes the multiples of 8 and the four-lane one at most a group
// of four after them.
func gelu32Vec(d, a []float32) { geluLoop(gelu32AVX512, gelu32AVX2, gelu32Scalar, d, a) }

func geluLoop(k8, k4, scalar func(d, a []float32), d, a []float32) {
	a = a[:len(d)]
	n := 0
	if haveAVX512 {
		n = len(d) &^ 7
		unaryVec(k8, d[:n], a[:n])
	}
	m := len(d) &^ 3
	unaryVec(k4, d[n:m], a[n:m])
	scalar(d[m:], a[m:])
}
