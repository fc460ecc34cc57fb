package cpu

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Kernels of softmax and log_softmax: one pass per row for the maximum,
// one for the shifted exponentials (the exp kernel's loop, in place in
// the result) and their sum (float32 accumulating in float64, rounded
// as reduce_sum's result is), one for the normalization. So a row costs
// what the composite's five kernels cost in arithmetic, with the row in
// cache after its first pass and no intermediate buffers. A line along
// an inner axis is copied into a scratch row first, so every layout
// computes the bits of the contiguous one.

func init() {
	register(prims.Softmax, false, softmaxKernel(prims.Softmax, false))
	register(prims.LogSoftmax, false, softmaxKernel(prims.LogSoftmax, true))
	register(prims.SoftmaxLin, false, softmaxLinKernel)
}

// softmaxLinKernel is softmax_lin's (softmax's tangent map, and so its
// backward pass): per row y·(t − Σ y·t), the composite's operations in
// its order (y·t, reduce_sum's sum, t + (−s), the product by y), the
// same bits, rows along an inner axis copied into scratch lines first.
func softmaxLinKernel(params any, in, out []backend.Array) {
	axis := params.(prims.AxisParams).Axis
	t := in[0]
	if axis < 0 || axis >= len(t.Shape) {
		interp.Panicf("cpu: softmax_lin axis %d out of range for shape %v", axis, t.Shape)
	}
	switch t.Buf.(type) {
	case *f32Buf:
		softmaxLinLines(f32s(out[0]), f32s(t), f32s(in[1]), t.Shape, axis, rowOps32())
	case *f64Buf:
		softmaxLinLines(f64s(out[0]), f64s(t), f64s(in[1]), t.Shape, axis, rowOps64())
	default:
		badDType(prims.SoftmaxLin, t.Buf.DType())
	}
}

// softmaxLinLines runs softmaxLinRows on every line of t and y along the
// axis, a block of contiguous rows at a time, in parallel.
func softmaxLinLines[T float32 | float64](d, t, y []T, shape []int, axis int, o rowOps[T]) {
	outer, n, inner := axisSplit(shape, axis)
	lines := outer * inner
	if lines*n == 0 {
		return
	}
	run := func(lo, hi int) {
		b := min(rowBlock(n), hi-lo)
		if inner > 1 {
			b = 1
		}
		q, ss := make([]T, b*n), make([]T, b)
		if inner == 1 {
			for i := lo; i < hi; i += b {
				e := min(i+b, hi)
				softmaxLinRows(d[i*n:e*n], t[i*n:e*n], y[i*n:e*n], q[:(e-i)*n], ss[:e-i], n, o)
			}
			return
		}
		ts, ys, ds := make([]T, n), make([]T, n), make([]T, n)
		for i := lo; i < hi; i++ {
			start := (i/inner)*n*inner + i%inner
			for j, k := 0, start; j < n; j, k = j+1, k+inner {
				ts[j], ys[j] = t[k], y[k]
			}
			softmaxLinRows(ds, ts, ys, q, ss, n, o)
			for j, k := 0, start; j < n; j, k = j+1, k+inner {
				d[k] = ds[j]
			}
		}
	}
	if serial(lines, n*costCheap*4) {
		run(0, lines)
		return
	}
	parallelFor(lines, n*costCheap*4, run)
}

// softmaxLinRows sets the len(ss) rows of n elements of d to y·(t − Σ
// y·t) of t's and y's (q and ss scratch).
func softmaxLinRows[T float32 | float64](d, t, y, q, ss []T, n int, o rowOps[T]) {
	o.mulVV(q, y, t)
	for i := range ss {
		ss[i] = o.sum(q[i*n : (i+1)*n])
	}
	o.subRows(d, t, ss, n)
	o.mulVV(d, y, d)
}

func softmaxKernel(p *interp.Prim, log bool) kernel {
	return func(params any, in, out []backend.Array) {
		axis := params.(prims.AxisParams).Axis
		x := in[0]
		if axis < 0 || axis >= len(x.Shape) {
			interp.Panicf("cpu: %s axis %d out of range for shape %v", p.Name, axis, x.Shape)
		}
		switch x.Buf.(type) {
		case *f32Buf:
			softmaxLines(f32s(out[0]), f32s(x), x.Shape, axis, log, rowOps32())
		case *f64Buf:
			softmaxLines(f64s(out[0]), f64s(x), x.Shape, axis, log, rowOps64())
		default:
			badDType(p, x.Buf.DType())
		}
	}
}

// softmaxLines runs row (softmax or log-softmax of one contiguous line)
// on every line of x (outer×n×inner) along n, in parallel.
func softmaxLines[T float32 | float64](d, x []T, shape []int, axis int, log bool, o rowOps[T]) {
	outer, n, inner := axisSplit(shape, axis)
	lines := outer * inner
	if lines*n == 0 {
		return
	}
	if inner == 1 {
		run := func(lo, hi int) {
			b := min(rowBlock(n), hi-lo)
			ms, ss := make([]T, b), make([]T, b)
			for q := lo; q < hi; q += b {
				e := min(q+b, hi)
				softmaxRows(d[q*n:e*n], x[q*n:e*n], n, log, o, ms[:e-q], ss[:e-q])
			}
		}
		if serial(lines, n*costMath) {
			run(0, lines)
			return
		}
		parallelFor(lines, n*costMath, run)
		return
	}
	parallelFor(lines, n*costMath, func(lo, hi int) {
		xs, ds := make([]T, n), make([]T, n)
		for q := lo; q < hi; q++ {
			start := (q/inner)*n*inner + q%inner
			for j, k := 0, start; j < n; j, k = j+1, k+inner {
				xs[j] = x[k]
			}
			softmaxRow(ds, xs, log, o)
			for j, k := 0, start; j < n; j, k = j+1, k+inner {
				d[k] = ds[j]
			}
		}
	})
}

// softmaxRows sets the rows of n elements of d to softmax of x's (to
// log-softmax with log set), len(ms) contiguous rows, with ms and ss
// scratch for their maxima and sums: softmaxRow's operations, the
// elementwise ones once over the block (rowOps).
func softmaxRows[T float32 | float64](d, x []T, n int, log bool, o rowOps[T], ms, ss []T) {
	for i := range ms {
		ms[i] = o.max(x[i*n : (i+1)*n])
	}
	o.subRows(d, x, ms, n)
	o.exp(d, d)
	for i := range ss {
		ss[i] = o.sum(d[i*n : (i+1)*n])
	}
	if !log {
		o.divRows(d, d, ss, n)
		return
	}
	o.subRows(d, x, ms, n)
	for i, s := range ss {
		ss[i] = o.log(s)
	}
	o.subRows(d, d, ss, n)
}

// softmaxRow sets d to softmax(x) (log-softmax with log set), x one
// contiguous row.
func softmaxRow[T float32 | float64](d, x []T, log bool, o rowOps[T]) {
	m := o.max(x)
	o.subVS(d, x, m)
	o.exp(d, d)
	s := o.sum(d)
	if !log {
		o.divVS(d, d, s)
		return
	}
	o.subVS(d, x, m)
	o.subVS(d, d, o.log(s))
}
