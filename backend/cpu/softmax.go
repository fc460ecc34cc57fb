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
		if serial(lines, n*costMath) {
			for q := 0; q < lines; q++ {
				softmaxRow(d[q*n:(q+1)*n], x[q*n:(q+1)*n], log, o)
			}
			return
		}
		parallelFor(lines, n*costMath, func(lo, hi int) {
			for q := lo; q < hi; q++ {
				softmaxRow(d[q*n:(q+1)*n], x[q*n:(q+1)*n], log, o)
			}
		})
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
