//go:build amd64 && !purego

package cpu

import (
	"math"

	xcpu "golang.org/x/sys/cpu"
)

// SIMD kernels (simd_amd64.s): AVX2+FMA assembly for the hot float32 and
// float64 loops. The *Vec functions below have the contract of the
// portable loops they replace (d[i] = f(a[i]) for i < len(d); the
// operands must be at least as long as d, or they panic) and are called
// only when haveSIMD is true; simd_other.go defines them as those
// portable loops for other architectures and the purego build tag.
//
// The arithmetic kernels are exact IEEE operations, bit-identical to the
// Go loops. The float32 exp, logistic and tanh kernels evaluate in
// float32 with FMA, sin and cos in float64 (four lanes at a time, rounded
// once to float32), leaving NaN, ±Inf and arguments of 2^20 or more to
// the portable loop; measured in simd_test.go against math.* in float64
// over every float32 input, all are within 1 ulp of the correctly rounded
// result, with NaN, ±Inf, signed zeros, subnormal results and overflow
// handled exactly.

// bestPath is the widest kernel path the CPU and OS support: AVX-512
// with AVX-512F (beside AVX2 and FMA), AVX2 with AVX2 and FMA.
func bestPath() kernelPath {
	switch {
	case !xcpu.X86.HasAVX2 || !xcpu.X86.HasFMA:
		return pathPurego
	case xcpu.X86.HasAVX512F:
		return pathAVX512
	}
	return pathAVX2
}

// haveSIMD reports whether the kernels use the AVX2 and FMA instructions:
// the CPU and OS support them and PEEL_CPU does not ask for purego.
var haveSIMD = cpuPath >= pathAVX2

// haveAVX512 reports whether the kernels also use AVX-512F (the wide GEMM
// micro-kernels and copies).
var haveAVX512 = cpuPath >= pathAVX512

// Assembly kernels. They read and write through their slices' pointers
// without checking lengths: the unary ones process len(d) elements, the
// arithmetic ones len(d) rounded down to whole vectors (8 float32 or 4
// float64). Call them through the *Vec functions.

//go:noescape
func tanh32AVX2(d, a []float32)

//go:noescape
func exp32AVX2(d, a []float32)

//go:noescape
func logistic32AVX2(d, a []float32)

// geluTanh32AVX2 and geluTanhGrad32AVX2 set d[i] to GELUTanh(a[i]) and
// GELUTanh′(a[i]) (prims.GELUTanh, prims.GELUTanhGrad), as
// logistic32AVX2 sets the logistic: x·σ(2u) and σ(2u) + 2x·σ(2u)σ(−2u)·u′
// with the same logistic (simd_amd64.s).
//
//go:noescape
func geluTanh32AVX2(d, a []float32)

//go:noescape
func geluTanhGrad32AVX2(d, a []float32)

// sinCos32AVX2 stops before the first block of 8 holding NaN, ±Inf or
// |x| ≥ 2^20 and returns the number of elements done.
//
//go:noescape
func sinCos32AVX2(d, a []float32, q uint64) int

//go:noescape
func addVV32AVX2(d, a, b []float32)

//go:noescape
func subVV32AVX2(d, a, b []float32)

//go:noescape
func mulVV32AVX2(d, a, b []float32)

//go:noescape
func divVV32AVX2(d, a, b []float32)

//go:noescape
func addVS32AVX2(d, a []float32, s float32)

//go:noescape
func subVS32AVX2(d, a []float32, s float32)

//go:noescape
func subSV32AVX2(d, a []float32, s float32)

//go:noescape
func mulVS32AVX2(d, a []float32, s float32)

//go:noescape
func divVS32AVX2(d, a []float32, s float32)

//go:noescape
func divSV32AVX2(d, a []float32, s float32)

// xorVS32AVX2 and xorVS64AVX2 set d[i] to the bits of a[i] XOR those
// of s (simd_amd64.s): with s = −0, −a[i].
//
//go:noescape
func xorVS32AVX2(d, a []float32, s float32)

//go:noescape
func xorVS64AVX2(d, a []float64, s float64)

//go:noescape
func addVV64AVX2(d, a, b []float64)

//go:noescape
func subVV64AVX2(d, a, b []float64)

//go:noescape
func mulVV64AVX2(d, a, b []float64)

//go:noescape
func divVV64AVX2(d, a, b []float64)

//go:noescape
func addVS64AVX2(d, a []float64, s float64)

//go:noescape
func subVS64AVX2(d, a []float64, s float64)

//go:noescape
func subSV64AVX2(d, a []float64, s float64)

//go:noescape
func mulVS64AVX2(d, a []float64, s float64)

//go:noescape
func divVS64AVX2(d, a []float64, s float64)

//go:noescape
func divSV64AVX2(d, a []float64, s float64)

//go:noescape
func addRowsVS32AVX2(d, a, s []float32, k int)

//go:noescape
func subRowsVS32AVX2(d, a, s []float32, k int)

//go:noescape
func subRowsSV32AVX2(d, a, s []float32, k int)

//go:noescape
func mulRowsVS32AVX2(d, a, s []float32, k int)

//go:noescape
func divRowsVS32AVX2(d, a, s []float32, k int)

//go:noescape
func divRowsSV32AVX2(d, a, s []float32, k int)

//go:noescape
func addRowsVS64AVX2(d, a, s []float64, k int)

//go:noescape
func subRowsVS64AVX2(d, a, s []float64, k int)

//go:noescape
func subRowsSV64AVX2(d, a, s []float64, k int)

//go:noescape
func mulRowsVS64AVX2(d, a, s []float64, k int)

//go:noescape
func divRowsVS64AVX2(d, a, s []float64, k int)

//go:noescape
func divRowsSV64AVX2(d, a, s []float64, k int)

// simdChunk is the number of elements one assembly call processes (16
// KiB of float32, some microseconds of work). Assembly is never
// preempted asynchronously: a goroutine inside a long assembly loop keeps
// the garbage collector waiting, and the collector signals its thread
// every few microseconds until it leaves. The *Vec functions therefore
// call the assembly chunk by chunk through a non-inlined Go function,
// whose prologue honors a pending preemption request. (Unchunked, the
// signal storm made a 1<<20-element float32 add through the dispatch path
// take 1.0 ns/elem instead of 0.43, slower than the Go loop.)
const simdChunk = 1 << 12

type simdFloat interface{ float32 | float64 }

//go:noescape
func addWiden32AVX2(acc []float64, s []float32)

//go:noescape
func sumWiden32AVX2(s []float32) float64

// sumWiden32 returns acc plus the sum of s, each element converted to
// float64 (a float32 sum's contiguous run), in chunks like the kernels
// below.
func sumWiden32(acc float64, s []float32) float64 {
	n := len(s) &^ 15
	for lo := 0; lo < n; lo += simdChunk {
		acc += sumWiden32AVX2(s[lo:min(lo+simdChunk, n)])
	}
	return sumSeg(acc, s[n:])
}

//go:noescape
func maxKey32AVX2(s []float32) (m float32, nan bool)

// maxSeg32 is maxSeg of float32 (the larger of acc and s's elements, +0
// above -0, NaN if any is) with the AVX2 kernel, the same bits: the
// maximum of numbers does not depend on the order they are taken in, and
// a NaN, in acc or s, leaves the choice of which NaN to the Go loop (its
// bits depend on the order of the comparisons).
// softmax's rows and reduce_max's runs take it: the Go loop, whose max
// branches on NaNs and zeros, was 2.2 ns an element.
func maxSeg32(acc float32, s []float32) float32 {
	n := len(s) &^ 15
	if n == 0 || acc != acc {
		return maxSeg(acc, s)
	}
	for _, v := range s[n:] {
		if v != v {
			return maxSeg(acc, s)
		}
	}
	m := acc
	for lo := 0; lo < n; lo += simdChunk {
		k, nan := maxKey32AVX2(s[lo:min(lo+simdChunk, n)])
		if nan {
			return maxSeg(acc, s)
		}
		m = max(m, k)
	}
	return maxSeg(m, s[n:])
}

//go:noinline
func callWiden(acc []float64, s []float32) { addWiden32AVX2(acc, s) }

// addWiden32Vec sets acc[i] += float64(s[i]) (len(s) ≥ len(acc)), in
// chunks like the kernels below: a float32 sum's rows folded into its
// float64 accumulators.
func addWiden32Vec(acc []float64, s []float32) {
	s = s[:len(acc)]
	n := len(acc) &^ 7
	for lo := 0; lo < n; lo += simdChunk {
		hi := min(lo+simdChunk, n)
		callWiden(acc[lo:hi], s[lo:hi])
	}
	for i := n; i < len(acc); i++ {
		acc[i] += float64(s[i])
	}
}

// callUnary, callVV and callVS call an assembly kernel; being non-inlined
// non-leaf functions, they check for preemption on entry.
//
//go:noinline
func callUnary[T simdFloat](f func(d, a []T), d, a []T) { f(d, a) }

//go:noinline
func callVV[T simdFloat](f func(d, a, b []T), d, a, b []T) { f(d, a, b) }

//go:noinline
func callVS[T simdFloat](f func(d, a []T, s T), d, a []T, s T) { f(d, a, s) }

//go:noinline
func callRows[T simdFloat](f func(d, a, s []T, k int), d, a, s []T, k int) { f(d, a, s, k) }

// rowsVec runs the row kernel f (simd_amd64.s, ROWVS and ROWSV: d's
// row r is op(a's row r, s[r]) for rows of k) over len(s) rows of k, as
// many rows a call as fit in simdChunk elements (one at least), when k
// is a multiple of 8; the tensor-scalar loop vs row by row otherwise.
// One call a row cost more than the row's arithmetic on the rows of 64
// of a GPT's norms and attention: 95,000 calls a step.
func rowsVec[T simdFloat](f func(d, a, s []T, k int), vs func(d, a []T, s T), d, a, s []T, k int) {
	if k%8 != 0 {
		rowsLoop(vs, d, a, s, k)
		return
	}
	per := max(1, simdChunk/k)
	for lo := 0; lo < len(s); lo += per {
		hi := min(lo+per, len(s))
		callRows(f, d[lo*k:hi*k], a[lo*k:hi*k], s[lo:hi], k)
	}
}

// unaryVec runs the kernel f over d and a[:len(d)] in chunks.
func unaryVec[T simdFloat](f func(d, a []T), d, a []T) {
	a = a[:len(d)]
	for lo := 0; lo < len(d); lo += simdChunk {
		hi := min(lo+simdChunk, len(d))
		callUnary(f, d[lo:hi], a[lo:hi])
	}
}

// vvVec runs the kernel f over d, a[:len(d)] and b[:len(d)] in chunks,
// and the portable loop tail over the last len(d) mod 8 elements.
func vvVec[T simdFloat](f, tail func(d, a, b []T), d, a, b []T) {
	a, b = a[:len(d)], b[:len(d)]
	n := len(d) &^ 7
	if n <= simdChunk {
		// One chunk: this function's prologue is the preemption point.
		f(d[:n], a[:n], b[:n])
	} else {
		for lo := 0; lo < n; lo += simdChunk {
			hi := min(lo+simdChunk, n)
			callVV(f, d[lo:hi], a[lo:hi], b[lo:hi])
		}
	}
	if n < len(d) {
		tail(d[n:], a[n:], b[n:])
	}
}

// vsVec runs the kernel f over d and a[:len(d)] with the scalar s in
// chunks, and the portable loop tail over the last len(d) mod 8 elements.
func vsVec[T simdFloat](f, tail func(d, a []T, s T), d, a []T, s T) {
	a = a[:len(d)]
	n := len(d) &^ 7
	if n <= simdChunk {
		f(d[:n], a[:n], s)
	} else {
		for lo := 0; lo < n; lo += simdChunk {
			hi := min(lo+simdChunk, n)
			callVS(f, d[lo:hi], a[lo:hi], s)
		}
	}
	if n < len(d) {
		tail(d[n:], a[n:], s)
	}
}

// rsub and rdiv are the portable s - a and s / a with vsVec's signature.
func rsub[T simdFloat](d, a []T, s T) { subSV(d, s, a) }
func rdiv[T simdFloat](d, a []T, s T) { divSV(d, s, a) }

func tanh32Vec(d, a []float32)     { unaryVec(tanh32AVX2, d, a) }
func exp32Vec(d, a []float32)      { unaryVec(exp32AVX2, d, a) }
func logistic32Vec(d, a []float32) { unaryVec(logistic32AVX2, d, a) }

// geluTanh32Vec and geluTanhGrad32Vec set d[i] to GELUTanh(a[i]) and
// GELUTanh′(a[i]) with the assembly kernels, chunk by chunk.
func geluTanh32Vec(d, a []float32)     { unaryVec(geluTanh32AVX2, d, a) }
func geluTanhGrad32Vec(d, a []float32) { unaryVec(geluTanhGrad32AVX2, d, a) }
func sin32Vec(d, a []float32)          { sinCos32Vec(d, a, 0) }
func cos32Vec(d, a []float32)          { sinCos32Vec(d, a, 1) }

//go:noinline
func callSinCos(d, a []float32, q uint64) int { return sinCos32AVX2(d, a, q) }

// sinCos32Vec sets d[i] = sin a[i] (q = 0) or cos a[i] (q = 1) in
// chunks. Where the kernel stops at a block holding NaN, ±Inf or a huge
// argument, that block goes through the portable loop (which takes
// math.Sin or math.Cos for those elements) and the kernel resumes after
// it.
func sinCos32Vec(d, a []float32, q uint64) {
	a = a[:len(d)]
	for lo := 0; lo < len(d); {
		hi := min(lo+simdChunk, len(d))
		lo += callSinCos(d[lo:hi], a[lo:hi], q)
		if lo < hi {
			e := min(lo+8, hi)
			sinCos32(d[lo:e], a[lo:e], q)
			lo = e
		}
	}
}

func addRowsVS32Vec(d, a, s []float32, k int) { rowsVec(addRowsVS32AVX2, addVS32Vec, d, a, s, k) }
func subRowsVS32Vec(d, a, s []float32, k int) { rowsVec(subRowsVS32AVX2, subVS32Vec, d, a, s, k) }
func subRowsSV32Vec(d, a, s []float32, k int) {
	rowsVec(subRowsSV32AVX2, func(d, a []float32, v float32) { subSV32Vec(d, v, a) }, d, a, s, k)
}
func mulRowsVS32Vec(d, a, s []float32, k int) { rowsVec(mulRowsVS32AVX2, mulVS32Vec, d, a, s, k) }
func divRowsVS32Vec(d, a, s []float32, k int) { rowsVec(divRowsVS32AVX2, divVS32Vec, d, a, s, k) }
func divRowsSV32Vec(d, a, s []float32, k int) {
	rowsVec(divRowsSV32AVX2, func(d, a []float32, v float32) { divSV32Vec(d, v, a) }, d, a, s, k)
}
func addRowsVS64Vec(d, a, s []float64, k int) { rowsVec(addRowsVS64AVX2, addVS64Vec, d, a, s, k) }
func subRowsVS64Vec(d, a, s []float64, k int) { rowsVec(subRowsVS64AVX2, subVS64Vec, d, a, s, k) }
func subRowsSV64Vec(d, a, s []float64, k int) {
	rowsVec(subRowsSV64AVX2, func(d, a []float64, v float64) { subSV64Vec(d, v, a) }, d, a, s, k)
}
func mulRowsVS64Vec(d, a, s []float64, k int) { rowsVec(mulRowsVS64AVX2, mulVS64Vec, d, a, s, k) }
func divRowsVS64Vec(d, a, s []float64, k int) { rowsVec(divRowsVS64AVX2, divVS64Vec, d, a, s, k) }
func divRowsSV64Vec(d, a, s []float64, k int) {
	rowsVec(divRowsSV64AVX2, func(d, a []float64, v float64) { divSV64Vec(d, v, a) }, d, a, s, k)
}

func addVV32Vec(d, a, b []float32) { vvVec(addVV32AVX2, addVV[float32], d, a, b) }
func subVV32Vec(d, a, b []float32) { vvVec(subVV32AVX2, subVV[float32], d, a, b) }
func mulVV32Vec(d, a, b []float32) { vvVec(mulVV32AVX2, mulVV[float32], d, a, b) }
func divVV32Vec(d, a, b []float32) { vvVec(divVV32AVX2, divVV[float32], d, a, b) }

func addVS32Vec(d, a []float32, s float32)           { vsVec(addVS32AVX2, addVS[float32], d, a, s) }
func subVS32Vec(d, a []float32, s float32)           { vsVec(subVS32AVX2, subVS[float32], d, a, s) }
func subSV32Vec(d []float32, s float32, b []float32) { vsVec(subSV32AVX2, rsub[float32], d, b, s) }
func mulVS32Vec(d, a []float32, s float32)           { vsVec(mulVS32AVX2, mulVS[float32], d, a, s) }
func divVS32Vec(d, a []float32, s float32)           { vsVec(divVS32AVX2, divVS[float32], d, a, s) }
func divSV32Vec(d []float32, s float32, b []float32) { vsVec(divSV32AVX2, rdiv[float32], d, b, s) }

// neg32Vec and neg64Vec set d[i] = −a[i] (the sign bit flipped, as
// negLoop does) with the XOR kernels where the CPU has AVX2.
func neg32Vec(d, a []float32) {
	if !haveSIMD {
		negLoop(d, a)
		return
	}
	vsVec(xorVS32AVX2, negTail[float32], d, a, float32(math.Copysign(0, -1)))
}

func neg64Vec(d, a []float64) {
	if !haveSIMD {
		negLoop(d, a)
		return
	}
	vsVec(xorVS64AVX2, negTail[float64], d, a, math.Copysign(0, -1))
}

// negTail is negLoop with vsVec's tail signature.
func negTail[T simdFloat](d, a []T, _ T) { negLoop(d, a) }

func addVV64Vec(d, a, b []float64) { vvVec(addVV64AVX2, addVV[float64], d, a, b) }
func subVV64Vec(d, a, b []float64) { vvVec(subVV64AVX2, subVV[float64], d, a, b) }
func mulVV64Vec(d, a, b []float64) { vvVec(mulVV64AVX2, mulVV[float64], d, a, b) }
func divVV64Vec(d, a, b []float64) { vvVec(divVV64AVX2, divVV[float64], d, a, b) }

func addVS64Vec(d, a []float64, s float64)           { vsVec(addVS64AVX2, addVS[float64], d, a, s) }
func subVS64Vec(d, a []float64, s float64)           { vsVec(subVS64AVX2, subVS[float64], d, a, s) }
func subSV64Vec(d []float64, s float64, b []float64) { vsVec(subSV64AVX2, rsub[float64], d, b, s) }
func mulVS64Vec(d, a []float64, s float64)           { vsVec(mulVS64AVX2, mulVS[float64], d, a, s) }
func divVS64Vec(d, a []float64, s float64)           { vsVec(divVS64AVX2, divVS[float64], d, a, s) }
func divSV64Vec(d []float64, s float64, b []float64) { vsVec(divSV64AVX2, rdiv[float64], d, b, s) }
