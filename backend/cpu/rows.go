package cpu

import (
	"math"
	"sync"
)

// rowOps are the loops the row kernels (softmax, log_softmax, layer_norm,
// rms_norm) run on one contiguous row: reduce_sum's sum of a contiguous
// run (sumWiden32 for float32 where the CPU has the SIMD kernel,
// pairwise for float64), reduce_max's, and the elementwise loops the
// kernels of sub, add, mul, div, exp and log run (the SIMD ones where the CPU
// has them and the row is long enough, simdMin; the portable ones, the
// same bits, otherwise). So a row kernel computes the bits of the
// composite it replaces, and a program that fuses the composite by rows
// (compiler.ExpandRowOps) computes the kernel's.
type rowOps[T float32 | float64] struct {
	sum, max            func(s []T) T
	subVS, mulVS, divVS func(d, a []T, s T)
	addVV, mulVV        func(d, a, b []T)
	exp                 func(d, a []T)
	log                 func(v T) T
}

// rowOps32 and rowOps64 are built once: the SIMD choice is made at
// start-up (PEEL_CPU), and closures built per call would be allocated.
var (
	rowOps32 = sync.OnceValue(func() rowOps[float32] {
		port := rowOps[float32]{
			sum:   func(s []float32) float32 { return float32(sumSeg(0.0, s)) },
			max:   func(s []float32) float32 { return maxSeg(s[0], s) },
			subVS: subVS[float32], mulVS: mulVS[float32], divVS: divVS[float32],
			addVV: addVV[float32], mulVV: mulVV[float32],
			exp: exp32Loop,
			log: func(v float32) float32 {
				x := [1]float32{v}
				log32Loop(x[:], x[:])
				return x[0]
			},
		}
		if !haveSIMD {
			return port
		}
		o := port
		o.sum = func(s []float32) float32 { return float32(sumWiden32(0, s)) }
		o.max = func(s []float32) float32 { return maxSeg32(s[0], s) }
		o.subVS = func(d, a []float32, s float32) { simdVS(subVS32Vec, subVS[float32], d, a, s) }
		o.mulVS = func(d, a []float32, s float32) { simdVS(mulVS32Vec, mulVS[float32], d, a, s) }
		o.divVS = func(d, a []float32, s float32) { simdVS(divVS32Vec, divVS[float32], d, a, s) }
		o.addVV = func(d, a, b []float32) { simdVV(addVV32Vec, addVV[float32], d, a, b) }
		o.mulVV = func(d, a, b []float32) { simdVV(mulVV32Vec, mulVV[float32], d, a, b) }
		return o
	})
	rowOps64 = sync.OnceValue(func() rowOps[float64] {
		port := rowOps[float64]{
			sum:   func(s []float64) float64 { return sumSegPairwise(0, s) },
			max:   func(s []float64) float64 { return maxSeg(s[0], s) },
			subVS: subVS[float64], mulVS: mulVS[float64], divVS: divVS[float64],
			addVV: addVV[float64], mulVV: mulVV[float64],
			exp: exp64Loop,
			log: math.Log,
		}
		if !haveSIMD {
			return port
		}
		o := port
		o.subVS = func(d, a []float64, s float64) { simdVS(subVS64Vec, subVS[float64], d, a, s) }
		o.mulVS = func(d, a []float64, s float64) { simdVS(mulVS64Vec, mulVS[float64], d, a, s) }
		o.divVS = func(d, a []float64, s float64) { simdVS(divVS64Vec, divVS[float64], d, a, s) }
		o.addVV = func(d, a, b []float64) { simdVV(addVV64Vec, addVV[float64], d, a, b) }
		o.mulVV = func(d, a, b []float64) { simdVV(mulVV64Vec, mulVV[float64], d, a, b) }
		return o
	})
)

// simdVS and simdVV run vec on rows of at least simdMin elements, port
// on shorter ones.
func simdVS[T float32 | float64](vec, port func(d, a []T, s T), d, a []T, s T) {
	if len(d) >= simdMin {
		vec(d, a, s)
		return
	}
	port(d, a, s)
}

func simdVV[T float32 | float64](vec, port func(d, a, b []T), d, a, b []T) {
	if len(d) >= simdMin {
		vec(d, a, b)
		return
	}
	port(d, a, b)
}
