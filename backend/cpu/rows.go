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
//
// The row kernels run blocks of rows (rowBlock): the sums and maxima
// row by row, the elementwise loops once over the block (subRows,
// mulRows and divRows with a scalar per row): the same operations on
// the same elements, so the same bits, in a third of the calls (on rows
// of 64, a GPT's, the calls cost more than the arithmetic).
type rowOps[T float32 | float64] struct {
	sum, max                  func(s []T) T
	subVS, mulVS, divVS       func(d, a []T, s T)
	subRows, mulRows, divRows func(d, a, s []T, k int)
	addVV, mulVV              func(d, a, b []T)
	exp                       func(d, a []T)
	log                       func(v T) T
}

// rowBlock returns how many rows of n elements a row kernel takes at a
// time: about 2048 elements (8 KiB of float32, in the L1 with its
// operands), at least one row. The kernels size their scratch rows by
// the rows they have when fewer.
func rowBlock(n int) int { return max(1, 2048/max(n, 1)) }

// rowsOf returns vs applied row by row (rowsLoop).
func rowsOf[T float32 | float64](vs func(d, a []T, s T)) func(d, a, s []T, k int) {
	return func(d, a, s []T, k int) { rowsLoop(vs, d, a, s, k) }
}

// rowsLoop sets d's row r to vs(a's row r, s[r]) for the len(s) rows of
// k: the row operations one call a row, where no row kernel takes them.
func rowsLoop[T float32 | float64](vs func(d, a []T, s T), d, a, s []T, k int) {
	for r, v := range s {
		vs(d[r*k:(r+1)*k], a[r*k:(r+1)*k], v)
	}
}

// rowOps32 and rowOps64 are built once: the SIMD choice is made at
// start-up (PEEL_CPU), and closures built per call would be allocated.
var (
	rowOps32 = sync.OnceValue(func() rowOps[float32] {
		port := rowOps[float32]{
			sum:   func(s []float32) float32 { return float32(sumSeg(0.0, s)) },
			max:   func(s []float32) float32 { return maxSeg(s[0], s) },
			subVS: subVS[float32], mulVS: mulVS[float32], divVS: divVS[float32],
			subRows: rowsOf(subVS[float32]), mulRows: rowsOf(mulVS[float32]), divRows: rowsOf(divVS[float32]),
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
		o.subRows = func(d, a, s []float32, k int) { simdRows(subRowsVS32Vec, port.subRows, d, a, s, k) }
		o.mulRows = func(d, a, s []float32, k int) { simdRows(mulRowsVS32Vec, port.mulRows, d, a, s, k) }
		o.divRows = func(d, a, s []float32, k int) { simdRows(divRowsVS32Vec, port.divRows, d, a, s, k) }
		o.addVV = func(d, a, b []float32) { simdVV(addVV32Vec, addVV[float32], d, a, b) }
		o.mulVV = func(d, a, b []float32) { simdVV(mulVV32Vec, mulVV[float32], d, a, b) }
		return o
	})
	rowOps64 = sync.OnceValue(func() rowOps[float64] {
		port := rowOps[float64]{
			sum:   func(s []float64) float64 { return sumSegPairwise(0, s) },
			max:   func(s []float64) float64 { return maxSeg(s[0], s) },
			subVS: subVS[float64], mulVS: mulVS[float64], divVS: divVS[float64],
			subRows: rowsOf(subVS[float64]), mulRows: rowsOf(mulVS[float64]), divRows: rowsOf(divVS[float64]),
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
		o.subRows = func(d, a, s []float64, k int) { simdRows(subRowsVS64Vec, port.subRows, d, a, s, k) }
		o.mulRows = func(d, a, s []float64, k int) { simdRows(mulRowsVS64Vec, port.mulRows, d, a, s, k) }
		o.divRows = func(d, a, s []float64, k int) { simdRows(divRowsVS64Vec, port.divRows, d, a, s, k) }
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

// simdRows runs the row kernel vec on rows of at least simdMin
// elements, port on shorter ones.
func simdRows[T float32 | float64](vec, port func(d, a, s []T, k int), d, a, s []T, k int) {
	if k >= simdMin {
		vec(d, a, s, k)
		return
	}
	port(d, a, s, k)
}

func simdVV[T float32 | float64](vec, port func(d, a, b []T), d, a, b []T) {
	if len(d) >= simdMin {
		vec(d, a, b)
		return
	}
	port(d, a, b)
}
