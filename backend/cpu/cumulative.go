package cpu

import (
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Kernels of cumsum (below, with the reductions' accumulation rules:
// float32 sums accumulate in float64) and of cumprod, cumlogsumexp,
// cummax and cummin: one sequential
// loop per line along the axis (from its end for a reverse scan), lines
// split across goroutines. float32 products and log-sum-exps accumulate
// in float64 and round each result.

func init() {
	register(prims.Cumsum, false, cumsumKernel)
	register(prims.Cumprod, false, cumprodKernel)
	register(prims.Cumlogsumexp, false, cumlogsumexpKernel)
	register(prims.Cummax, false, cumExtremumKernel(prims.Cummax, true))
	register(prims.Cummin, false, cumExtremumKernel(prims.Cummin, false))
}

// scanLine describes one line: its first element in scan order and the
// step to the next.
type scanLine struct{ start, step, n int }

// forLines calls body on every line of an outer×n×inner array along n,
// in parallel.
func forLines(p *interp.Prim, cp prims.CumsumParams, shape []int, body func(l scanLine)) {
	if cp.Axis < 0 || cp.Axis >= len(shape) {
		interp.Panicf("cpu: %s axis %d out of range for shape %v", p.Name, cp.Axis, shape)
	}
	outer, n, inner := axisSplit(shape, cp.Axis)
	if outer*n*inner == 0 {
		return
	}
	parallelFor(outer*inner, n, func(lo, hi int) {
		for q := lo; q < hi; q++ {
			l := scanLine{start: (q/inner)*n*inner + q%inner, step: inner, n: n}
			if cp.Reverse {
				l.start += (n - 1) * inner
				l.step = -inner
			}
			body(l)
		}
	})
}

func cumprodKernel(params any, in, out []backend.Array) {
	cp := params.(prims.CumsumParams)
	x := in[0]
	switch x.Buf.(type) {
	case *i64Buf:
		cumprodLines[int64, int64](cp, x.Shape, i64s(out[0]), i64s(x))
	case *f32Buf:
		cumprodLines[float32, float64](cp, x.Shape, f32s(out[0]), f32s(x))
	case *f64Buf:
		cumprodLines[float64, float64](cp, x.Shape, f64s(out[0]), f64s(x))
	default:
		badDType(prims.Cumprod, x.Buf.DType())
	}
}

func cumprodLines[T, A elemNum](cp prims.CumsumParams, shape []int, d, x []T) {
	forLines(prims.Cumprod, cp, shape, func(l scanLine) {
		acc := A(1)
		for j, k := 0, l.start; j < l.n; j, k = j+1, k+l.step {
			acc *= A(x[k])
			d[k] = T(acc)
		}
	})
}

func cumlogsumexpKernel(params any, in, out []backend.Array) {
	cp := params.(prims.CumsumParams)
	x := in[0]
	switch x.Buf.(type) {
	case *f32Buf:
		cumlogsumexpLines(cp, x.Shape, f32s(out[0]), f32s(x))
	case *f64Buf:
		cumlogsumexpLines(cp, x.Shape, f64s(out[0]), f64s(x))
	default:
		badDType(prims.Cumlogsumexp, x.Buf.DType())
	}
}

// logAddExp is log(exp(a) + exp(b)) = max + log1p(exp(−|a − b|)); where
// a − b is NaN (equal infinities, or a NaN) it is a, or b if b is NaN.
func logAddExp(a, b float64) float64 {
	d := a - b
	if d != d {
		if b != b {
			return b
		}
		return a
	}
	return max(a, b) + math.Log1p(math.Exp(-math.Abs(d)))
}

func cumlogsumexpLines[T float32 | float64](cp prims.CumsumParams, shape []int, d, x []T) {
	forLines(prims.Cumlogsumexp, cp, shape, func(l scanLine) {
		acc := float64(x[l.start])
		d[l.start] = T(acc)
		for j, k := 1, l.start+l.step; j < l.n; j, k = j+1, k+l.step {
			acc = logAddExp(acc, float64(x[k]))
			d[k] = T(acc)
		}
	})
}

func cumExtremumKernel(p *interp.Prim, isMax bool) kernel {
	return func(params any, in, out []backend.Array) {
		cp := params.(prims.CumsumParams)
		x := in[0]
		idx := i64s(out[1])
		switch x.Buf.(type) {
		case *boolBuf:
			xs, d := bools(x), bools(out[0])
			forLines(p, cp, x.Shape, func(l scanLine) {
				acc, at := xs[l.start], int64(0)
				for j, k := 0, l.start; j < l.n; j, k = j+1, k+l.step {
					if v := xs[k]; v != acc && v == isMax {
						acc, at = v, int64(j)
					}
					d[k], idx[k] = acc, position(cp.Reverse, l.n, at)
				}
			})
		case *i64Buf:
			cumExtremumLines(p, cp, x.Shape, i64s(out[0]), i64s(x), idx, isMax)
		case *f32Buf:
			cumExtremumLines(p, cp, x.Shape, f32s(out[0]), f32s(x), idx, isMax)
		case *f64Buf:
			cumExtremumLines(p, cp, x.Shape, f64s(out[0]), f64s(x), idx, isMax)
		default:
			badDType(p, x.Buf.DType())
		}
	}
}

// position converts the scan-order position at of a line of n to the
// position along the axis.
func position(reverse bool, n int, at int64) int64 {
	if reverse {
		return int64(n-1) - at
	}
	return at
}

// cumExtremumLines keeps the running extremum and where it was first
// seen; a NaN replaces any number and is never replaced.
func cumExtremumLines[T elemNum](p *interp.Prim, cp prims.CumsumParams, shape []int, d, x []T, idx []int64, isMax bool) {
	forLines(p, cp, shape, func(l scanLine) {
		acc, at := x[l.start], int64(0)
		for j, k := 0, l.start; j < l.n; j, k = j+1, k+l.step {
			v := x[k]
			if acc == acc && (v != v || (isMax && v > acc) || (!isMax && v < acc)) {
				acc, at = v, int64(j)
			}
			d[k], idx[k] = acc, position(cp.Reverse, l.n, at)
		}
	})
}

// ---------------------------------------------------------------------------
// cumsum

func cumsumKernel(params any, in, out []backend.Array) {
	cp := params.(prims.CumsumParams)
	x := in[0]
	if cp.Axis < 0 || cp.Axis >= len(x.Shape) {
		interp.Panicf("cpu: cumsum axis %d out of range for shape %v", cp.Axis, x.Shape)
	}
	_, n, inner := axisSplit(x.Shape, cp.Axis)
	switch x.Buf.(type) {
	case *i64Buf:
		runCumsum[int64, int64](i64s(out[0]), i64s(x), n, inner, cp.Reverse)
	case *f32Buf:
		runCumsum[float32, float64](f32s(out[0]), f32s(x), n, inner, cp.Reverse)
	case *f64Buf:
		runCumsum[float64, float64](f64s(out[0]), f64s(x), n, inner, cp.Reverse)
	default:
		badDType(prims.Cumsum, x.Buf.DType())
	}
}

// runCumsum computes the inclusive cumulative sum of x (outer×n×inner)
// along n into d, accumulating in A.
func runCumsum[T, A elemNum](d, x []T, n, inner int, reverse bool) {
	if len(d) == 0 {
		return
	}
	cols := len(d) / n // outer×inner columns
	parallelFor(cols, n, func(lo, hi int) {
		if inner == 1 {
			for q := lo; q < hi; q++ {
				cumsumRun[T, A](d[q*n:(q+1)*n], x[q*n:(q+1)*n], reverse)
			}
			return
		}
		acc := make([]A, min(inner, hi-lo))
		for q := lo; q < hi; {
			o, j := q/inner, q%inner
			m := min(inner-j, hi-q)
			base := o*n*inner + j
			a := acc[:m]
			clear(a)
			for k := range n {
				r := k
				if reverse {
					r = n - 1 - k
				}
				off := base + r*inner
				cumsumRow(d[off:off+m], x[off:off+m], a)
			}
			q += m
		}
	})
}

func cumsumRun[T, A elemNum](d, x []T, reverse bool) {
	x = x[:len(d)]
	var s A
	if reverse {
		for i := len(x) - 1; i >= 0; i-- {
			s += A(x[i])
			d[i] = T(s)
		}
		return
	}
	for i, v := range x {
		s += A(v)
		d[i] = T(s)
	}
}

func cumsumRow[T, A elemNum](d, x []T, acc []A) {
	x, acc = x[:len(d)], acc[:len(d)]
	for i, v := range x {
		acc[i] += A(v)
		d[i] = T(acc[i])
	}
}
