package cpu

import (
	"math"

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
		case f32Buf:
			softmaxLines(f32s(out[0]), f32s(x), x.Shape, axis, log, softmaxRow32)
		case f64Buf:
			softmaxLines(f64s(out[0]), f64s(x), x.Shape, axis, log, softmaxRow64)
		default:
			badDType(p, x.Buf.DType())
		}
	}
}

// softmaxLines runs row (softmax or log-softmax of one contiguous line)
// on every line of x (outer×n×inner) along n, in parallel.
func softmaxLines[T float32 | float64](d, x []T, shape []int, axis int, log bool, row func(d, x []T, log bool)) {
	outer, n, inner := axisSplit(shape, axis)
	lines := outer * inner
	if lines*n == 0 {
		return
	}
	if inner == 1 {
		if serial(lines, n*costMath) {
			for q := 0; q < lines; q++ {
				row(d[q*n:(q+1)*n], x[q*n:(q+1)*n], log)
			}
			return
		}
		parallelFor(lines, n*costMath, func(lo, hi int) {
			for q := lo; q < hi; q++ {
				row(d[q*n:(q+1)*n], x[q*n:(q+1)*n], log)
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
			row(ds, xs, log)
			for j, k := 0, start; j < n; j, k = j+1, k+inner {
				d[k] = ds[j]
			}
		}
	})
}

// The row functions of softmaxLines: the SIMD loops where the CPU runs
// them and rows are long enough (simdMin), the portable ones otherwise
// (the same bits); the sums are reduce_sum's (sumWiden32 for float32
// where the CPU has the SIMD kernel, pairwise for float64), so a
// program that fuses softmax's definition by rows (compiler.ExpandRowOps)
// computes these bits.
func softmaxRow32(d, x []float32, log bool) {
	simd := haveSIMD && len(x) >= simdMin
	m := maxSeg(x[0], x)
	if simd {
		subVS32Vec(d, x, m)
	} else {
		subVS(d, x, m)
	}
	exp32Loop(d, d)
	var s float64
	if haveSIMD {
		s = sumWiden32(0, d)
	} else {
		s = sumSeg(0.0, d)
	}
	s32 := float32(s)
	if !log {
		if simd {
			divVS32Vec(d, d, s32)
		} else {
			divVS(d, d, s32)
		}
		return
	}
	var ls [1]float32
	ls[0] = s32
	log32Loop(ls[:], ls[:])
	if simd {
		subVS32Vec(d, x, m)
		subVS32Vec(d, d, ls[0])
		return
	}
	for i, v := range x {
		d[i] = (v - m) - ls[0]
	}
}

func softmaxRow64(d, x []float64, log bool) {
	simd := haveSIMD && len(x) >= simdMin
	m := maxSeg(x[0], x)
	if simd {
		subVS64Vec(d, x, m)
	} else {
		subVS(d, x, m)
	}
	exp64Loop(d, d)
	s := sumSegPairwise(0, d)
	if !log {
		if simd {
			divVS64Vec(d, d, s)
		} else {
			divVS(d, d, s)
		}
		return
	}
	ls := math.Log(s)
	if simd {
		subVS64Vec(d, x, m)
		subVS64Vec(d, d, ls)
		return
	}
	for i, v := range x {
		d[i] = (v - m) - ls
	}
}
