package prims_test

import (
	"math/rand/v2"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/prims"
)

// spdMatrix returns a symmetric positive-definite n×n matrix m·mᵀ + n·I.
func spdMatrix(r *rand.Rand, n int) *T {
	m := make([]float64, n*n)
	for i := range m {
		m[i] = 2*r.Float64() - 1
	}
	a := make([]float64, n*n)
	for i := range n {
		for j := range n {
			for k := range n {
				a[i*n+j] += m[i*n+k] * m[j*n+k]
			}
		}
		a[i*n+i] += float64(n)
	}
	return f64(a, n, n)
}

// diagDominant returns random matrices [..., n, n] in [-1, 1) plus
// n+1 on the diagonal.
func diagDominant(r *rand.Rand, shape ...int) *T {
	n := shape[len(shape)-1]
	d := make([]float64, backend.ShapeSize(shape))
	for k := range d {
		d[k] = 2*r.Float64() - 1
		if (k/n)%n == k%n {
			d[k] += float64(n + 1)
		}
	}
	return f64(d, shape...)
}

// linalgJVPCases are the linear-algebra primitives' JVP cases (the
// checks read each primitive's first result: cholesky's L, lu's packed
// factors, qr's q, eigh's eigenvalues, svd's singular values).
func linalgJVPCases(r *rand.Rand) []jvpCase {
	cs := []jvpCase{
		{prim: prims.Cholesky, args: []*T{spdMatrix(r, 3)}},
		{prim: prims.LU, args: []*T{diagDominant(r, 3, 3)}},
		{prim: prims.LU, args: []*T{diagDominant(r, 2, 2, 2)}},
		{prim: prims.QR, args: []*T{uniform(r, -2, 2, 4, 3)}},
		{prim: prims.QR, args: []*T{uniform(r, -2, 2, 2, 4)}},
		{prim: prims.Eigh, args: []*T{uniform(r, -2, 2, 3, 3)}},
		{prim: prims.SVD, params: prims.SVDParams{ComputeUV: true}, args: []*T{uniform(r, -2, 2, 3, 2)}},
		{prim: prims.SVD, params: prims.SVDParams{}, args: []*T{uniform(r, -2, 2, 2, 3)}},
		{prim: prims.Pinv, params: prims.PinvParams{RTol: 1e-12}, args: []*T{uniform(r, -2, 2, 4, 3)}},
		{prim: prims.Pinv, params: prims.PinvParams{RTol: 1e-12}, args: []*T{uniform(r, -2, 2, 2, 2, 3)}},
		{prim: prims.Det, args: []*T{uniform(r, -2, 2, 3, 3)}},
		{prim: prims.Det, args: []*T{uniform(r, -2, 2, 2, 2, 2)}},
		// Singular (a zero column): the adjugate's rank-1 form.
		{name: "singular", prim: prims.Det, args: []*T{f64([]float64{1, 0, 2, 3, 0, 1, -1, 0, 4}, 3, 3)}, noHVP: true},
	}
	for _, p := range triSolveConfigs() {
		b := uniform(r, -2, 2, 3, 2)
		if !p.LeftSide {
			b = uniform(r, -2, 2, 2, 3)
		}
		cs = append(cs, jvpCase{prim: prims.TriangularSolve, params: p, args: []*T{diagDominant(r, 3, 3), b}})
	}
	return cs
}

func triSolveConfigs() []prims.TriangularSolveParams {
	return []prims.TriangularSolveParams{
		{Lower: true, LeftSide: true},
		{LeftSide: true, TransposeA: true},
		{Lower: true, UnitDiagonal: true},
		{TransposeA: true},
	}
}

// linalgLinCases are triangular_solve's transpose cases (linear in b).
func linalgLinCases(r *rand.Rand) []linCase {
	var cs []linCase
	for _, p := range triSolveConfigs() {
		b := uniform(r, -2, 2, 2, 3, 2)
		if !p.LeftSide {
			b = uniform(r, -2, 2, 2, 2, 3)
		}
		cs = append(cs, linCase{prim: prims.TriangularSolve, params: p, args: []*T{diagDominant(r, 2, 3, 3), b}, linear: []bool{false, true}})
	}
	return cs
}
