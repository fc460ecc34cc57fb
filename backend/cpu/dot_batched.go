package cpu

// Outer products: a dot_general with no contracting dimensions (K == 1),
// batched or not, such as the per-example weight gradient x ⊗ δ of a
// Vmap(Grad) of a dense layer ([B, M] × [B, N] → [B, M, N]). There is
// nothing to sum, so each result row (batch element b, lhs free index i)
// is the rhs row of b scaled by one lhs element: one streaming write of
// the result, which a GEMM call per batch element (with its fixed cost
// and, in gonum, goroutines per block) does far more slowly. Every
// element is the product a·b exactly, as a GEMM with K == 1 computes it
// up to the sign of a zero product (GEMM sums it onto +0).

// outerSIMD is the row length from which a row is scaled by the assembly
// kernels (when the CPU has them) rather than by the Go loop, whose lack
// of call overhead wins on short rows.
const outerSIMD = 32

// dotOuter computes the outer products of p (p.K == 1) into c; the rhs
// rows must be contiguous (p.rhs.fs == 1 or p.N == 1). scale sets one
// result row (scaleRow or its SIMD form). Rows run in parallel when the
// result is large enough to pay.
func dotOuter[T int64 | float32 | float64](p *dotPlan, c, a, b []T, scale func(d, v []T, s T)) {
	rows := p.B * p.M
	if serial(rows, p.N) {
		outerRows(p, c, a, b, scale, 0, rows)
		return
	}
	parallelFor(rows, p.N, func(lo, hi int) { outerRows(p, c, a, b, scale, lo, hi) })
}

// outerRows computes result rows [lo, hi) of dotOuter.
func outerRows[T int64 | float32 | float64](p *dotPlan, c, a, b []T, scale func(d, v []T, s T), lo, hi int) {
	M, N := p.M, p.N
	lhs, rhs := &p.lhs, &p.rhs
	bi, i := lo/M, lo%M
	ao, bo := lhs.off(bi)+i*lhs.fs, rhs.off(bi)
	for r := lo; r < hi; r++ {
		if N < outerSIMD {
			// Short rows: the loop inline, without a call per row.
			row, av := c[r*N:r*N+N], a[ao]
			for j, x := range b[bo : bo+N] {
				row[j] = av * x
			}
		} else {
			scale(c[r*N:r*N+N], b[bo:bo+N], a[ao])
		}
		if i++; i == M {
			bi, i = bi+1, 0
			if r+1 < hi {
				ao, bo = lhs.off(bi), rhs.off(bi)
			}
		} else {
			ao += lhs.fs
		}
	}
}

// scaleRow sets d[j] = s·v[j] (v at least as long as d).
func scaleRow[T int64 | float32 | float64](d, v []T, s T) {
	v = v[:len(d)]
	for j, x := range v {
		d[j] = s * x
	}
}
