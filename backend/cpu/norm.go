package cpu

import (
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Kernels of layer_norm and rms_norm: per row (the last Axes axes, which
// a contiguous operand lays out contiguously) the mean by reduce_sum's
// loop and a division, the centered values in the result, their squares
// in a scratch row and their mean, the inverse deviation as rsqrt's loop
// computes it, and the scaling in place: the operations of the
// composite, in its order, on a row in cache, so a program that fuses
// the definition by rows (compiler.ExpandRowOps) computes these bits.

func init() {
	register(prims.LayerNorm, false, normKernel(prims.LayerNorm, true))
	register(prims.RMSNorm, false, normKernel(prims.RMSNorm, false))
}

func normKernel(p *interp.Prim, center bool) kernel {
	return func(params any, in, out []backend.Array) {
		np := params.(prims.NormParams)
		x := in[0]
		r := len(x.Shape)
		if np.Axes < 1 || np.Axes > r {
			interp.Panicf("cpu: %s over the last %d axes of shape %v", p.Name, np.Axes, x.Shape)
		}
		n := backend.ShapeSize(x.Shape[r-np.Axes:])
		switch x.Buf.(type) {
		case f32Buf:
			normRows(f32s(out[0]), f32s(out[1]), f32s(x), n, float32(np.Eps), center, rowOps32())
		case f64Buf:
			normRows(f64s(out[0]), f64s(out[1]), f64s(x), n, np.Eps, center, rowOps64())
		default:
			badDType(p, x.Buf.DType())
		}
	}
}

// rowOps are the loops a normalization runs on a row: reduce_sum's sum
// of a contiguous run, and the elementwise loops the kernels of sub and
// mul run (the SIMD ones where the CPU has them and the row is long
// enough, simdMin; the portable ones, the same bits, otherwise).
type rowOps[T float32 | float64] struct {
	sum          func([]T) T
	subVS, mulVS func(d, a []T, s T)
	mulVV        func(d, a, b []T)
}

func rowOps32() rowOps[float32] {
	o := rowOps[float32]{sum: func(s []float32) float32 { return float32(sumSeg(0.0, s)) }, subVS: subVS[float32], mulVS: mulVS[float32], mulVV: mulVV[float32]}
	if haveSIMD {
		o.sum = func(s []float32) float32 { return float32(sumWiden32(0, s)) }
		o.subVS = func(d, a []float32, s float32) { simdVS(subVS32Vec, subVS[float32], d, a, s) }
		o.mulVS = func(d, a []float32, s float32) { simdVS(mulVS32Vec, mulVS[float32], d, a, s) }
		o.mulVV = func(d, a, b []float32) {
			if len(d) >= simdMin {
				mulVV32Vec(d, a, b)
				return
			}
			mulVV(d, a, b)
		}
	}
	return o
}

func rowOps64() rowOps[float64] {
	o := rowOps[float64]{sum: func(s []float64) float64 { return sumSegPairwise(0, s) }, subVS: subVS[float64], mulVS: mulVS[float64], mulVV: mulVV[float64]}
	if haveSIMD {
		o.subVS = func(d, a []float64, s float64) { simdVS(subVS64Vec, subVS[float64], d, a, s) }
		o.mulVS = func(d, a []float64, s float64) { simdVS(mulVS64Vec, mulVS[float64], d, a, s) }
		o.mulVV = func(d, a, b []float64) {
			if len(d) >= simdMin {
				mulVV64Vec(d, a, b)
				return
			}
			mulVV(d, a, b)
		}
	}
	return o
}

// simdVS runs vec on rows of at least simdMin elements, port on shorter
// ones.
func simdVS[T float32 | float64](vec, port func(d, a []T, s T), d, a []T, s T) {
	if len(d) >= simdMin {
		vec(d, a, s)
		return
	}
	port(d, a, s)
}

// normRows normalizes the rows of n elements of x into d, their inverse
// deviations into inv, in parallel.
func normRows[T float32 | float64](d, inv, x []T, n int, eps T, center bool, o rowOps[T]) {
	rows := len(inv)
	if n == 0 {
		// The mean of an empty row is 0/0.
		for i := range inv {
			inv[i] = T(math.NaN())
		}
		return
	}
	run := func(lo, hi int) {
		q := make([]T, n)
		for i := lo; i < hi; i++ {
			inv[i] = normRow(d[i*n:(i+1)*n], q, x[i*n:(i+1)*n], eps, center, o)
		}
	}
	if serial(rows, n*costMath) {
		run(0, rows)
		return
	}
	parallelFor(rows, n*costMath, run)
}

// normRow normalizes one row x into d (q is scratch) and returns its
// inverse deviation.
func normRow[T float32 | float64](d, q, x []T, eps T, center bool, o rowOps[T]) T {
	nT := T(len(x))
	src := x
	if center {
		m := o.sum(x) / nT
		o.subVS(d, x, m)
		src = d
	}
	o.mulVV(q, src, src)
	v := o.sum(q) / nT
	r := T(1 / math.Sqrt(float64(v+eps)))
	o.mulVS(d, src, r)
	return r
}
