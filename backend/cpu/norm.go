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
		case *f32Buf:
			normRows(f32s(out[0]), f32s(out[1]), f32s(x), n, float32(np.Eps), center, rowOps32())
		case *f64Buf:
			normRows(f64s(out[0]), f64s(out[1]), f64s(x), n, np.Eps, center, rowOps64())
		default:
			badDType(p, x.Buf.DType())
		}
	}
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
