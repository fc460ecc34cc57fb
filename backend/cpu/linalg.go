package cpu

import (
	"math"

	"gonum.org/v1/gonum/blas"
	blasgonum "gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/lapack"
	lapackgonum "gonum.org/v1/gonum/lapack/gonum"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Kernels of the linear-algebra primitives: cholesky, triangular_solve,
// lu, qr, eigh and svd, by gonum's LAPACK (row-major, float64) on each
// matrix of the batch in turn, the batch split across threads. Float32
// operands are converted to float64 on the way in and rounded back on
// the way out. Iterative decompositions (eigh, svd) of a matrix holding
// Inf or NaN, and factorizations that fail, give NaN results.

func init() {
	register(prims.Cholesky, false, choleskyKernel)
	register(prims.TriangularSolve, false, triangularSolveKernel)
	register(prims.LU, false, luKernel)
	register(prims.QR, false, qrKernel)
	register(prims.Eigh, false, eighKernel)
	register(prims.SVD, false, svdKernel)
}

var lapackImpl lapackgonum.Implementation

// floatMats reads and writes the float64 or float32 elements of a
// contiguous array as float64.
type floatMats struct {
	f64 []float64
	f32 []float32
}

func floatMatsOf(a backend.Array) floatMats {
	switch a.Buf.(type) {
	case *f64Buf:
		return floatMats{f64: f64s(a)}
	case *f32Buf:
		return floatMats{f32: f32s(a)}
	}
	interp.Panicf("cpu: no linear-algebra kernel for dtype %v", a.Buf.DType())
	return floatMats{}
}

// load copies len(dst) elements starting at off into dst.
func (m floatMats) load(dst []float64, off int) {
	if m.f64 != nil {
		copy(dst, m.f64[off:off+len(dst)])
		return
	}
	for i, v := range m.f32[off : off+len(dst)] {
		dst[i] = float64(v)
	}
}

// store copies src into the elements starting at off.
func (m floatMats) store(src []float64, off int) {
	if m.f64 != nil {
		copy(m.f64[off:off+len(src)], src)
		return
	}
	d := m.f32[off : off+len(src)]
	for i, v := range src {
		d[i] = float32(v)
	}
}

// fill sets n elements starting at off to v.
func (m floatMats) fill(v float64, off, n int) {
	if m.f64 != nil {
		fillSlice(m.f64[off:off+n], v)
		return
	}
	fillSlice(m.f32[off:off+n], float32(v))
}

// matBatch returns the number of matrices and the last two sizes of a
// stack of matrices.
func matBatch(shape []int) (batch, m, n int) {
	r := len(shape)
	m, n = shape[r-2], shape[r-1]
	batch = 1
	for _, d := range shape[:r-2] {
		batch *= d
	}
	return batch, m, n
}

// forMatrices runs body for matrices lo…hi−1 of a batch, in parallel
// chunks; cost is the work of one matrix.
func forMatrices(batch, cost int, body func(lo, hi int)) {
	parallelFor(batch, max(cost, 1), body)
}

func allFinite(x []float64) bool {
	for _, v := range x {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return false
		}
	}
	return true
}

func choleskyKernel(_ any, in, out []backend.Array) {
	batch, n, _ := matBatch(in[0].Shape)
	src, dst := floatMatsOf(in[0]), floatMatsOf(out[0])
	nn := n * n
	forMatrices(batch, nn*n, func(lo, hi int) {
		a := make([]float64, nn)
		for b := lo; b < hi; b++ {
			src.load(a, b*nn)
			if n > 0 && !lapackImpl.Dpotrf(blas.Lower, n, a, n) {
				dst.fill(math.NaN(), b*nn, nn)
				continue
			}
			for i := range n {
				for j := i + 1; j < n; j++ {
					a[i*n+j] = 0
				}
			}
			dst.store(a, b*nn)
		}
	})
}

func triangularSolveKernel(params any, in, out []backend.Array) {
	p := params.(prims.TriangularSolveParams)
	batch, m, _ := matBatch(in[0].Shape)
	_, rows, cols := matBatch(in[1].Shape)
	as, bs, dst := floatMatsOf(in[0]), floatMatsOf(in[1]), floatMatsOf(out[0])
	mm, bn := m*m, rows*cols
	side, uplo, trans, diag := blas.Right, blas.Upper, blas.NoTrans, blas.NonUnit
	if p.LeftSide {
		side = blas.Left
	}
	if p.Lower {
		uplo = blas.Lower
	}
	if p.TransposeA {
		trans = blas.Trans
	}
	if p.UnitDiagonal {
		diag = blas.Unit
	}
	forMatrices(batch, mm*max(rows, cols), func(lo, hi int) {
		a, x := make([]float64, mm), make([]float64, bn)
		for b := lo; b < hi; b++ {
			bs.load(x, b*bn)
			if bn > 0 {
				as.load(a, b*mm)
				blasgonum.Implementation{}.Dtrsm(side, uplo, trans, diag, rows, cols, 1, a, max(m, 1), x, max(cols, 1))
			}
			dst.store(x, b*bn)
		}
	})
}

func luKernel(_ any, in, out []backend.Array) {
	batch, n, _ := matBatch(in[0].Shape)
	src, dst := floatMatsOf(in[0]), floatMatsOf(out[0])
	piv, perm := i64s(out[1]), i64s(out[2])
	nn := n * n
	forMatrices(batch, nn*n, func(lo, hi int) {
		a, ipiv, pr := make([]float64, nn), make([]int, n), make([]int64, n)
		for b := lo; b < hi; b++ {
			src.load(a, b*nn)
			if n > 0 {
				lapackImpl.Dgetrf(n, n, a, n, ipiv)
			}
			for i := range pr {
				pr[i] = int64(i)
			}
			for i, j := range ipiv {
				piv[b*n+i] = int64(j)
				pr[i], pr[j] = pr[j], pr[i]
			}
			copy(perm[b*n:(b+1)*n], pr)
			dst.store(a, b*nn)
		}
	})
}

// workSize returns the optimal workspace LAPACK reports for a query.
func workSize(query func(work []float64)) int {
	w := []float64{0}
	query(w)
	return max(int(w[0]), 1)
}

func qrKernel(_ any, in, out []backend.Array) {
	batch, m, n := matBatch(in[0].Shape)
	k := min(m, n)
	src, qd, rd := floatMatsOf(in[0]), floatMatsOf(out[0]), floatMatsOf(out[1])
	forMatrices(batch, m*n*k, func(lo, hi int) {
		a, tau := make([]float64, m*n), make([]float64, k)
		q, r := make([]float64, m*k), make([]float64, k*n)
		var work []float64
		if k > 0 {
			lw := max(workSize(func(w []float64) { lapackImpl.Dgeqrf(m, n, a, n, tau, w, -1) }),
				workSize(func(w []float64) { lapackImpl.Dorgqr(m, k, k, a, n, tau, w, -1) }))
			work = make([]float64, lw)
		}
		for b := lo; b < hi; b++ {
			src.load(a, b*m*n)
			if k > 0 {
				lapackImpl.Dgeqrf(m, n, a, n, tau, work, len(work))
			}
			for i := range k {
				for j := range n {
					if j >= i {
						r[i*n+j] = a[i*n+j]
					} else {
						r[i*n+j] = 0
					}
				}
			}
			if k > 0 {
				lapackImpl.Dorgqr(m, k, k, a, n, tau, work, len(work))
			}
			for i := range m {
				copy(q[i*k:(i+1)*k], a[i*n:i*n+k])
			}
			qd.store(q, b*m*k)
			rd.store(r, b*k*n)
		}
	})
}

func eighKernel(_ any, in, out []backend.Array) {
	batch, n, _ := matBatch(in[0].Shape)
	src, wd, vd := floatMatsOf(in[0]), floatMatsOf(out[0]), floatMatsOf(out[1])
	nn := n * n
	forMatrices(batch, 4*nn*n, func(lo, hi int) {
		a, w := make([]float64, nn), make([]float64, n)
		var work []float64
		if n > 0 {
			work = make([]float64, workSize(func(wk []float64) { lapackImpl.Dsyev(lapack.EVCompute, blas.Lower, n, a, n, w, wk, -1) }))
		}
		for b := lo; b < hi; b++ {
			src.load(a, b*nn)
			if n > 0 {
				// Only the lower triangle is the operand.
				for i := range n {
					for j := i + 1; j < n; j++ {
						a[i*n+j] = a[j*n+i]
					}
				}
				if !allFinite(a) || !lapackImpl.Dsyev(lapack.EVCompute, blas.Lower, n, a, n, w, work, len(work)) {
					wd.fill(math.NaN(), b*n, n)
					vd.fill(math.NaN(), b*nn, nn)
					continue
				}
			}
			wd.store(w, b*n)
			vd.store(a, b*nn)
		}
	})
}

func svdKernel(params any, in, out []backend.Array) {
	uv := params.(prims.SVDParams).ComputeUV
	batch, m, n := matBatch(in[0].Shape)
	k := min(m, n)
	src, sd := floatMatsOf(in[0]), floatMatsOf(out[0])
	var ud, vd floatMats
	job := lapack.SVDNone
	if uv {
		ud, vd = floatMatsOf(out[1]), floatMatsOf(out[2])
		job = lapack.SVDStore
	}
	forMatrices(batch, 8*m*n*k, func(lo, hi int) {
		a, s := make([]float64, m*n), make([]float64, k)
		var u, vt, work []float64
		if uv {
			u, vt = make([]float64, m*k), make([]float64, k*n)
		}
		ldu, ldvt := max(k, 1), max(n, 1)
		if k > 0 {
			work = make([]float64, workSize(func(w []float64) {
				lapackImpl.Dgesvd(job, job, m, n, a, n, s, u, ldu, vt, ldvt, w, -1)
			}))
		}
		for b := lo; b < hi; b++ {
			src.load(a, b*m*n)
			if k > 0 && (!allFinite(a) || !lapackImpl.Dgesvd(job, job, m, n, a, n, s, u, ldu, vt, ldvt, work, len(work))) {
				sd.fill(math.NaN(), b*k, k)
				if uv {
					ud.fill(math.NaN(), b*m*k, m*k)
					vd.fill(math.NaN(), b*k*n, k*n)
				}
				continue
			}
			sd.store(s, b*k)
			if uv {
				ud.store(u, b*m*k)
				vd.store(vt, b*k*n)
			}
		}
	})
}
