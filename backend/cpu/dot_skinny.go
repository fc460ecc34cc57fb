package cpu

import (
	"unsafe"

	"github.com/peel-ml/peel/backend"
)

// Skinny products: at most skinnyMaxN columns (a classifier head, the
// last layer of an MLP). The packed GEMM's tiles are 8, 16 or 32 columns
// wide, so such a product pads every tile (10 columns on a 16-wide
// tile: 37% of the multiplications wasted), and computing the
// transpose instead needs A's rows packed as columns. The inner-product
// kernels (dot_skinny_amd64.s) instead run along k, A's rows (read in
// place when they are contiguous) and B's columns as the rows of Bᵀ, two rows by five columns at a
// time, and sum the vector's lanes at the end: no padding but a fifth
// column group's (10 columns: none). They need k long enough for the
// lanes' sums to pay (skinnyMinK).

const (
	skinnyMaxN = 16
	skinnyMinK = 64
)

// skinnyOn turns the inner-product path on (tests turn it off to check
// the packed GEMM on the same products).
var skinnyOn = true

// skinny reports whether batch products of p go by gemmSkinny: few
// columns, k long enough, the kernels present. It asks nothing of the
// operands' layouts or the thread count: a product takes the same path,
// and so gives the same bits, however its operands are laid out (a
// compiled program that copied an operand, or reads a broadcast one in
// place, agrees with the equation evaluated alone). With par, a product
// large enough splits its pairs of rows across the workers, its cost
// counted in vector FMAs as the packed tiles' is. Counted in
// multiplications, 128×256·256×10 was split in two and paid a worker's
// wake-up: slower at two threads (13.2–14.2 µs) than the packed GEMM's
// row ranges (10.1), which took such products at two threads until then.
// Now that product runs on one thread: float32 9.3–11.8 µs at two
// threads against 9.7–16.5 by the packed GEMM, float64 16.8–17.7
// against 16.8–18.1; 512 rows split run at 21.6–24.1 against 27.6–31.1
// and 36–54 against 52–59, 2048 rows at 93–107 against 101–108 and
// 158–172 against 190–203 (Zen 4, alternated in one binary).
//
// And only where the tiles pad more than the groups of five do: the
// packed GEMM's tiles are nr columns wide (the AVX2 kernels': 16 float32,
// 8 float64), so 16 float32 columns, or 8 or 16 float64 ones, fill them
// (an attention head of 16: the inner products were slower there).
func skinny(p *dotPlan, nr int) bool {
	return haveSkinny && skinnyOn && !p.acc && p.N <= skinnyMaxN && p.M >= 2 && p.K >= skinnyMinK &&
		padFraction(p.N, nr) > padFraction(p.N, 5)
}

// padFraction is the fraction of w-wide groups that n columns leave
// empty.
func padFraction(n, w int) float64 {
	g := (n + w - 1) / w * w
	return float64(g-n) / float64(g)
}

// gemmSkinny computes batch element bi of p into c (M×N, row-major) by
// inner products: B's columns are read in place where they are
// contiguous along k (B stored transposed), else packed as Bᵀ's rows
// first (N·K elements), and A's rows likewise; rows go in pairs, columns in groups of five, a
// pair or a group short of that repeating its last row or column (the
// repeats are computed and not stored); the last k mod lanes elements
// are added by a Go loop.
func gemmSkinny[T float32 | float64](p *dotPlan, bi int, c, a, b []T, bufs *gemmBufs[T], par bool) {
	M, N, K := p.M, p.N, p.K
	var z T
	kv := K &^ (32/int(unsafe.Sizeof(z)) - 1) // whole vectors of k
	bt, ldb := b[p.rhs.off(bi):], p.rhs.fs
	if p.rhs.cs != 1 {
		bufs.b = packRows(bufs.b, b, N, K, p.rhs.fs, p.rhs.cs, p.rhs.off(bi))
		bt, ldb = bufs.b, K
	}
	_ = bt[(N-1)*ldb+K-1]
	aoff, lda := p.lhs.off(bi), p.lhs.fs
	if p.lhs.cs != 1 {
		// A's rows packed likewise (A stored transposed, or broadcast).
		bufs.a = packRows(bufs.a, a, M, K, p.lhs.fs, p.lhs.cs, aoff)
		a, aoff, lda = bufs.a, 0, K
	}
	_ = a[aoff+(M-1)*lda+K-1]
	_ = c[M*N-1]
	// Pairs of rows split across the workers, each pair's cost its
	// vector FMAs (the packed tiles' measure).
	if pairs := (M + 1) / 2; par && !serial(pairs, 2*N*K/8) {
		parallelFor(pairs, 2*N*K/8, func(lo, hi int) {
			skinnyRows(c, a, bt, aoff, lda, ldb, 2*lo, min(M, 2*hi), N, K, kv)
		})
		return
	}
	skinnyRows(c, a, bt, aoff, lda, ldb, 0, M, N, K, kv)
}

// packRows returns buf, grown to rows·cols elements, holding the rows×cols
// matrix whose element (i, j) is src[off + i·rs + j·cs], row-major: by
// the strided copy and its transposes (the arrays' buffers unused: the
// slices are given).
func packRows[T float32 | float64](buf, src []T, rows, cols, rs, cs, off int) []T {
	buf = grow(buf, rows*cols)
	from := backend.Array{Shape: []int{rows, cols}, Strides: []int{rs, cs}, Offset: off}
	stridedCopySerial(buf, src, backend.Array{Shape: from.Shape}, from, false)
	return buf
}

// skinnyRows is gemmSkinny's rows r0 to r1 of c (N columns): A's rows
// at a[aoff+i·lda:], Bᵀ's at bt[j·ldb:], kv the elements of k the
// kernels take.
func skinnyRows[T float32 | float64](c, a, bt []T, aoff, lda, ldb, r0, r1, N, K, kv int) {
	var out [10]T
	var bp [5]*T
	// Column groups outside, rows inside: a group's five rows of Bᵀ are
	// set up once and stay in L1 while the rows of A stream past.
	for j0 := 0; j0 < N; j0 += 5 {
		for q := range bp {
			bp[q] = &bt[min(j0+q, N-1)*ldb]
		}
		cols := min(5, N-j0)
		for i := r0; i < r1; i += 2 {
			i1 := min(i+1, r1-1)
			ar0, ar1 := a[aoff+i*lda:aoff+i*lda+K], a[aoff+i1*lda:aoff+i1*lda+K]
			if kv > 0 {
				skinnyKernel(kv, &ar0[0], &ar1[0], &bp, &out) // writes all ten
			} else {
				out = [10]T{}
			}
			if kv < K {
				for q := range cols {
					bj := bt[(j0+q)*ldb : (j0+q)*ldb+K]
					s0, s1 := out[q], out[5+q]
					for k := kv; k < K; k++ {
						s0 += ar0[k] * bj[k]
						s1 += ar1[k] * bj[k]
					}
					out[q], out[5+q] = s0, s1
				}
			}
			// At most five each: loops, not calls to memmove.
			c0 := c[i*N+j0 : i*N+j0+cols]
			for q := range c0 {
				c0[q] = out[q]
			}
			if i1 > i {
				c1 := c[i1*N+j0 : i1*N+j0+cols]
				for q := range c1 {
					c1[q] = out[5+q]
				}
			}
		}
	}
}
