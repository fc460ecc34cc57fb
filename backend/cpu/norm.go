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
// composite, in its order, on rows in cache (a block of them at a time,
// rowBlock), so a program that fuses the definition by rows
// (compiler.ExpandRowOps) computes these bits.

func init() {
	register(prims.LayerNorm, false, normKernel(prims.LayerNorm, true))
	register(prims.RMSNorm, false, normKernel(prims.RMSNorm, false))
	register(prims.LayerNormLin, false, normLinKernel(prims.LayerNormLin, true))
	register(prims.RMSNormLin, false, normLinKernel(prims.RMSNormLin, false))
}

// normRowLen returns the length of the rows p normalizes in an operand
// of the given shape (its last np.Axes axes), and panics if it has
// fewer axes.
func normRowLen(p *interp.Prim, np prims.NormParams, shape []int) int {
	r := len(shape)
	if np.Axes < 1 || np.Axes > r {
		interp.Panicf("cpu: %s over the last %d axes of shape %v", p.Name, np.Axes, shape)
	}
	return backend.ShapeSize(shape[r-np.Axes:])
}

func normKernel(p *interp.Prim, center bool) kernel {
	return func(params any, in, out []backend.Array) {
		np := params.(prims.NormParams)
		x := in[0]
		n := normRowLen(p, np, x.Shape)
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
		b := min(rowBlock(n), hi-lo)
		q, ms := make([]T, b*n), make([]T, b)
		for i := lo; i < hi; i += b {
			e := min(i+b, hi)
			normBlock(d[i*n:e*n], inv[i:e], q[:(e-i)*n], ms[:e-i], x[i*n:e*n], n, eps, center, o)
		}
	}
	if serial(rows, n*costMath) {
		run(0, rows)
		return
	}
	parallelFor(rows, n*costMath, run)
}

// normBlock normalizes the len(inv) rows of n elements of x into d and
// their inverse deviations into inv (q and ms scratch): per row the mean
// and x − mean (with center), the mean of the squares, the inverse
// deviation, the scaling; the elementwise loops once over the block
// (rowOps).
func normBlock[T float32 | float64](d, inv, q, ms, x []T, n int, eps T, center bool, o rowOps[T]) {
	nT := T(n)
	src := x
	if center {
		for i := range ms {
			ms[i] = o.sum(x[i*n:(i+1)*n]) / nT
		}
		o.subRows(d, x, ms, n)
		src = d
	}
	o.mulVV(q, src, src)
	for i := range inv {
		v := o.sum(q[i*n:(i+1)*n]) / nT
		inv[i] = T(1 / math.Sqrt(float64(v+eps)))
	}
	o.mulRows(d, src, inv, n)
}

// Kernels of layer_norm_lin and rms_norm_lin (a norm's tangent map, and
// so its backward pass): per block of rows (rowBlock), the operations of
// the composite (prims.LayerNormLin's Impl) in its order, with the loops
// its kernels run, on rows in cache: mean(y·t) and mean(t) as reduce_sum
// and div compute them, t − mean(t) (the composite's t + (−mean(t)), the
// same bits), y·(−mean(y·t)) into a scratch row, their sum, and the
// scaling by r.

func normLinKernel(p *interp.Prim, center bool) kernel {
	return func(params any, in, out []backend.Array) {
		t := in[0]
		n := normRowLen(p, params.(prims.NormParams), t.Shape)
		switch t.Buf.(type) {
		case *f32Buf:
			normLinRows(f32s(out[0]), f32s(t), f32s(in[1]), f32s(in[2]), n, center, rowOps32())
		case *f64Buf:
			normLinRows(f64s(out[0]), f64s(t), f64s(in[1]), f64s(in[2]), n, center, rowOps64())
		default:
			badDType(p, t.Buf.DType())
		}
	}
}

// normLinRows sets each row of n elements of d to r·(t − mean(t) −
// y·mean(y·t)) (without mean(t) unless center) of the rows of t and y
// and the row's r, in parallel.
func normLinRows[T float32 | float64](d, t, y, inv []T, n int, center bool, o rowOps[T]) {
	if n == 0 {
		return
	}
	run := func(lo, hi int) {
		b := min(rowBlock(n), hi-lo)
		q, m1, m2 := make([]T, b*n), make([]T, b), make([]T, b)
		nT := T(n)
		for i := lo; i < hi; i += b {
			e := min(i+b, hi)
			db, tb, yb, qb := d[i*n:e*n], t[i*n:e*n], y[i*n:e*n], q[:(e-i)*n]
			o.mulVV(qb, yb, tb)
			for j := range e - i {
				m2[j] = -(o.sum(qb[j*n:(j+1)*n]) / nT) // −mean(y·t)
			}
			u := tb
			if center {
				for j := range e - i {
					m1[j] = o.sum(tb[j*n:(j+1)*n]) / nT
				}
				o.subRows(db, tb, m1[:e-i], n)
				u = db
			}
			o.mulRows(qb, yb, m2[:e-i], n)
			o.addVV(db, u, qb)
			o.mulRows(db, db, inv[i:e], n)
		}
	}
	rows := len(inv)
	if serial(rows, n*costCheap*6) {
		run(0, rows)
		return
	}
	parallelFor(rows, n*costCheap*6, run)
}
