package prims

import (
	"fmt"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

// Linear-algebra primitives: matrix factorizations and the triangular
// solve, each acting on the last two dimensions of its operands and
// batched over the leading ones (every leading dimension is a batch
// dimension, so vmap moves its dimension to the front). Operands are
// floating-point; the CPU kernels compute in float64 (float32 operands
// are converted at the kernel's edge and the results rounded back).
//
// Their results on degenerate operands are values, never panics: a
// factorization that does not exist (a Cholesky factor of a matrix that
// is not positive definite) or does not converge is all NaN, a singular
// matrix gives an LU factor with zeros on its diagonal (solves with it
// give ±Inf or NaN). Their derivatives are those of the factorization
// where it is a smooth function of the operand; where it is not
// (repeated eigenvalues or singular values, rank-deficient operands),
// the tangents are ±Inf or NaN.

// TriangularSolveParams are the parameters of triangular_solve: which
// triangle of a is read (Lower, else upper), whether a is on the left
// (op(a)·x = b, else x·op(a) = b), whether op transposes a, and whether
// a's diagonal is taken as ones (and not read).
type TriangularSolveParams struct {
	Lower, LeftSide, TransposeA, UnitDiagonal bool
}

func (p TriangularSolveParams) String() string {
	return fmt.Sprintf("lower=%v left_side=%v transpose_a=%v unit_diagonal=%v", p.Lower, p.LeftSide, p.TransposeA, p.UnitDiagonal)
}

// SVDParams are the parameters of svd: whether the singular vectors are
// computed (results s, u, vt) or only the singular values (result s).
type SVDParams struct{ ComputeUV bool }

func (p SVDParams) String() string { return fmt.Sprintf("compute_uv=%v", p.ComputeUV) }

// checkMatrices checks that a is a stack of matrices of a floating-point
// dtype (rank ≥ 2), square when square is set, and returns its last two
// sizes.
func checkMatrices(a aval, square bool) (m, n int) {
	r := len(a.Shape)
	if r < 2 {
		interp.Panicf("operand of rank %d is not a matrix (want rank ≥ 2, matrices in the last two dimensions)", r)
	}
	checkClass(floats, a)
	m, n = a.Shape[r-2], a.Shape[r-1]
	if square && m != n {
		interp.Panicf("operand matrices are %d×%d, not square", m, n)
	}
	return m, n
}

// withLast returns batch (the leading dimensions) followed by dims.
func withLast(batch []int, dims ...int) []int {
	return append(append(make([]int, 0, len(batch)+len(dims)), batch...), dims...)
}

// Cholesky is the Cholesky factorization of symmetric positive-definite
// matrices [..., n, n]: the lower-triangular L with L·Lᵀ = a (zeros above
// the diagonal). Only a's lower triangle is read. A matrix that is not
// positive definite gives a factor of NaNs.
var Cholesky = interp.NewPrim("cholesky", interp.Pure, func(_ any, in []aval) []aval {
	checkArity(in, 1)
	checkMatrices(in[0], true)
	return one(in[0])
})

// TriangularSolve solves op(a)·x = b (LeftSide) or x·op(a) = b for x,
// where a [..., m, m] is triangular (see TriangularSolveParams) and b is
// [..., m, n] (left) or [..., n, m] (right), with a's batch dimensions.
// The result has b's shape. A zero on a's diagonal gives ±Inf or NaN.
var TriangularSolve = graphio.Params[TriangularSolveParams](interp.NewPrim("triangular_solve", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 2)
	p := params.(TriangularSolveParams)
	m, _ := checkMatrices(in[0], true)
	checkMatrices(in[1], false)
	if in[0].DType != in[1].DType {
		interp.Panicf("operands must have one dtype")
	}
	ra, rb := len(in[0].Shape), len(in[1].Shape)
	if ra != rb || !interp.ShapeEqual(in[0].Shape[:ra-2], in[1].Shape[:rb-2]) {
		interp.Panicf("a %v and b %v must have equal batch dimensions", in[0].Shape, in[1].Shape)
	}
	k := in[1].Shape[rb-2]
	if !p.LeftSide {
		k = in[1].Shape[rb-1]
	}
	if k != m {
		side := "rows"
		if !p.LeftSide {
			side = "columns"
		}
		interp.Panicf("b %v has %d %s, a is %d×%d", in[1].Shape, k, side, m, m)
	}
	return one(in[1])
}))

// LU is the LU factorization with partial pivoting of square matrices
// [..., n, n]: P·a = L·U with L unit lower triangular and U upper
// triangular. Its results are lu [..., n, n] (L below the diagonal, U on
// and above it), pivots [..., n] (i64: row i was exchanged with row
// pivots[i], in order, LAPACK's ipiv counted from 0) and permutation
// [..., n] (i64: row i of P·a is row permutation[i] of a). A singular
// matrix gives zeros on U's diagonal.
var LU = interp.NewPrim("lu", interp.Pure, func(_ any, in []aval) []aval {
	checkArity(in, 1)
	_, n := checkMatrices(in[0], true)
	r := len(in[0].Shape)
	idx := aval{Shape: withLast(in[0].Shape[:r-2], n), DType: backend.Int64}
	return []aval{in[0], idx, idx}
})

// QR is the reduced QR factorization of matrices [..., m, n]: q [..., m,
// k] with orthonormal columns and upper-triangular r [..., k, n], k =
// min(m, n), q·r = a (LAPACK's Householder convention: r's diagonal may
// be negative).
var QR = interp.NewPrim("qr", interp.Pure, func(_ any, in []aval) []aval {
	checkArity(in, 1)
	m, n := checkMatrices(in[0], false)
	r := len(in[0].Shape)
	k := min(m, n)
	b := in[0].Shape[:r-2]
	return []aval{{Shape: withLast(b, m, k), DType: in[0].DType}, {Shape: withLast(b, k, n), DType: in[0].DType}}
})

// Eigh is the eigendecomposition of symmetric matrices [..., n, n]:
// eigenvalues w [..., n] in ascending order and eigenvectors v [..., n,
// n] (orthonormal columns, a·v = v·diag(w), each column's sign as LAPACK
// leaves it). Only a's lower triangle is read. If the iteration does not
// converge the results are NaN.
var Eigh = interp.NewPrim("eigh", interp.Pure, func(_ any, in []aval) []aval {
	checkArity(in, 1)
	_, n := checkMatrices(in[0], true)
	r := len(in[0].Shape)
	return []aval{{Shape: withLast(in[0].Shape[:r-2], n), DType: in[0].DType}, in[0]}
})

// SVD is the reduced singular value decomposition of matrices [..., m,
// n]: singular values s [..., k] in descending order (k = min(m, n))
// and, with SVDParams.ComputeUV, u [..., m, k] and vt [..., k, n] with
// orthonormal columns and rows, u·diag(s)·vt = a. If the iteration does
// not converge the results are NaN.
var SVD = graphio.Params[SVDParams](interp.NewPrim("svd", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 1)
	m, n := checkMatrices(in[0], false)
	r := len(in[0].Shape)
	k := min(m, n)
	b := in[0].Shape[:r-2]
	s := aval{Shape: withLast(b, k), DType: in[0].DType}
	if !params.(SVDParams).ComputeUV {
		return []aval{s}
	}
	return []aval{s, {Shape: withLast(b, m, k), DType: in[0].DType}, {Shape: withLast(b, k, n), DType: in[0].DType}}
}))

// ---------------------------------------------------------------------------
// Matrix helpers of the rules (Bind only, so the rules are transformable).

// mT swaps the last two dimensions.
func mT(x *tensor) *tensor {
	r := x.Rank()
	perm := make([]int, r)
	for i := range perm {
		perm[i] = i
	}
	perm[r-2], perm[r-1] = r-1, r-2
	return transpose(x, perm)
}

// mm is the matrix product of stacks of matrices with equal batch
// dimensions.
func mm(a, b *tensor) *tensor {
	r := a.Rank()
	batch := make([]int, r-2)
	for i := range batch {
		batch[i] = i
	}
	return interp.Bind1(DotGeneral, DotParams{LhsContract: []int{r - 1}, RhsContract: []int{r - 2}, LhsBatch: batch, RhsBatch: batch}, a, b)
}

// bandMask returns the bool mask of shape (matrices in the last two
// dimensions) holding lo ≤ j − i ≤ hi.
func bandMask(shape []int, lo, hi int) *tensor {
	r := len(shape)
	m, n := shape[r-2], shape[r-1]
	ip := IotaParams{DType: backend.Int64, Shape: []int{m, n}, Dim: 0}
	i := interp.Bind1(Iota, ip)
	ip.Dim = 1
	j := interp.Bind1(Iota, ip)
	d := sub(j, i)
	mask := interp.Bind1(And, nil,
		interp.Bind1(Ge, nil, d, constLike(float64(lo), d)),
		interp.Bind1(Le, nil, d, constLike(float64(hi), d)))
	return broadcastInDim(mask, shape, []int{r - 2, r - 1})
}

const farBand = 1 << 60

// tril keeps the elements on and below diagonal k (j − i ≤ k), zeros
// elsewhere (by select, so Inf and NaN elsewhere do not leak).
func tril(x *tensor, k int) *tensor {
	return sel(bandMask(x.Shape(), -farBand, k), x, zerosLike(interp.AvalOf(x)))
}

// triu keeps the elements on and above diagonal k (j − i ≥ k).
func triu(x *tensor, k int) *tensor {
	return sel(bandMask(x.Shape(), k, farBand), x, zerosLike(interp.AvalOf(x)))
}

// diagPart returns the diagonals [..., min(m, n)] of matrices [..., m, n].
func diagPart(x *tensor) *tensor {
	s := x.Shape()
	r := len(s)
	k := min(s[r-2], s[r-1])
	sq := x
	if s[r-2] != k || s[r-1] != k {
		lim := append([]int{}, s...)
		lim[r-2], lim[r-1] = k, k
		sq = interp.Bind1(Slice, SliceParams{Start: make([]int, r), Limit: lim, Stride: ones(r)}, x)
	}
	d := sel(bandMask(sq.Shape(), 0, 0), sq, zerosLike(interp.AvalOf(sq)))
	return reduceSum(d, []int{r - 1})
}

// diagEmbed returns the square matrices [..., n, n] with diagonals v
// [..., n] and zeros elsewhere.
func diagEmbed(v *tensor) *tensor {
	s := v.Shape()
	r := len(s)
	shape := append(append([]int{}, s...), s[r-1])
	dims := make([]int, r)
	for i := range dims {
		dims[i] = i
	}
	b := broadcastInDim(v, shape, dims)
	return sel(bandMask(shape, 0, 0), b, zerosLike(interp.AvalOf(b)))
}

// eyeLike returns identity matrices of x's shape and dtype (square).
func eyeLike(x *tensor) *tensor {
	return sel(bandMask(x.Shape(), 0, 0), constLike(1, x), zerosLike(interp.AvalOf(x)))
}

// rowVec broadcasts v [..., k] to [..., m, k] (v's element j in column
// j of every row); colVec to [..., k, m] (element i in row i).
func rowVec(v *tensor, m int) *tensor {
	s := v.Shape()
	r := len(s)
	dims := make([]int, r)
	for i := range dims {
		dims[i] = i
	}
	dims[r-1] = r
	return broadcastInDim(v, withLast(s[:r-1], m, s[r-1]), dims)
}

func colVec(v *tensor, m int) *tensor {
	s := v.Shape()
	r := len(s)
	dims := make([]int, r)
	for i := range dims {
		dims[i] = i
	}
	return broadcastInDim(v, withLast(s[:r-1], s[r-1], m), dims)
}

func ones(r int) []int {
	o := make([]int, r)
	for i := range o {
		o[i] = 1
	}
	return o
}

// lastCols slices columns lo…hi−1 of matrices.
func lastCols(x *tensor, lo, hi int) *tensor {
	s := x.Shape()
	r := len(s)
	start := make([]int, r)
	start[r-1] = lo
	lim := append([]int{}, s...)
	lim[r-1] = hi
	return interp.Bind1(Slice, SliceParams{Start: start, Limit: lim, Stride: ones(r)}, x)
}

// symLower is the symmetric matrix whose lower triangle is x's: what the
// kernels reading only the lower triangle see.
func symLower(x *tensor) *tensor {
	return add(tril(x, 0), mT(tril(x, -1)))
}

func triSolve(p TriangularSolveParams, a, b *tensor) *tensor {
	return interp.Bind1(TriangularSolve, p, a, b)
}

// ---------------------------------------------------------------------------
// Rules.

func init() {
	defJVP(Cholesky, choleskyJVP)
	defJVP(TriangularSolve, triangularSolveJVP)
	defTranspose(TriangularSolve, []bool{false, true}, triangularSolveTranspose)
	LU.JVP = luJVP
	QR.JVP = qrJVP
	Eigh.JVP = eighJVP
	SVD.JVP = svdJVP
	Pinv.JVP = pinvJVP
	Det.JVP = detJVP
}

// choleskyJVP: with S the symmetric tangent the kernel sees and X =
// L⁻¹·S·L⁻ᵀ, dL = L·Φ(X), Φ keeping the strict lower triangle and half
// the diagonal.
func choleskyJVP(_ any, _, t []*tensor, l *tensor) *tensor {
	s := symLower(t[0])
	lower := TriangularSolveParams{Lower: true, LeftSide: true}
	x := triSolve(lower, l, s)
	lower.LeftSide, lower.TransposeA = false, true
	x = triSolve(lower, l, x)
	phi := add(tril(x, -1), scale(0.5, diagEmbed(diagPart(x))))
	return mm(l, phi)
}

// triangleOf is the part of a that triangular_solve reads, as a full
// matrix (zeros elsewhere).
func triangleOf(p TriangularSolveParams, a *tensor) *tensor {
	k := 0
	if p.UnitDiagonal {
		k = 1
	}
	if p.Lower {
		return tril(a, -k)
	}
	return triu(a, k)
}

// triangularSolveJVP: linear in b; in a, op(a)·x = b gives op(a)·dx =
// −op(da)·x (left) and dx·op(a) = −x·op(da) (right), da restricted to
// the triangle read.
func triangularSolveJVP(params any, x, t []*tensor, out *tensor) *tensor {
	p := params.(TriangularSolveParams)
	var res *tensor
	if t[1] != nil {
		res = triSolve(p, x[0], t[1])
	}
	if t[0] != nil {
		da := triangleOf(p, t[0])
		if p.TransposeA {
			da = mT(da)
		}
		var rhs *tensor
		if p.LeftSide {
			rhs = mm(da, out)
		} else {
			rhs = mm(out, da)
		}
		res = addNil(res, neg(triSolve(p, x[0], rhs)))
	}
	return res
}

// triangularSolveTranspose: x = op(a)⁻¹·b gives b̄ = op(a)⁻ᵀ·x̄, and x =
// b·op(a)⁻¹ gives b̄ = x̄·op(a)⁻ᵀ: the same solve with op transposed.
func triangularSolveTranspose(params any, ct *tensor, args []*tensor, linear []bool) []*tensor {
	if linear[0] {
		interp.Panicf("triangular_solve is not linear in a")
	}
	p := params.(TriangularSolveParams)
	p.TransposeA = !p.TransposeA
	return []*tensor{nil, triSolve(p, args[0], ct)}
}

// permutationMatrix returns P [..., n, n] (dtype dt) with P[i, j] = 1
// where perm[i] = j: P·a takes row perm[i] of a into row i.
func permutationMatrix(perm *tensor, dt backend.DType) *tensor {
	s := perm.Shape()
	r := len(s)
	n := s[r-1]
	shape := withLast(s[:r-1], n, n)
	dims := make([]int, r)
	for i := range dims {
		dims[i] = i
	}
	pb := broadcastInDim(perm, shape, dims)
	j := interp.Bind1(Iota, IotaParams{DType: backend.Int64, Shape: shape, Dim: r})
	return convert(eq(pb, j), dt)
}

// luJVP: with P·a = L·U and X = L⁻¹·P·da·U⁻¹, dL = L·strict_lower(X) and
// dU = upper(X)·U; the packed tangent is their sum.
func luJVP(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
	outs := interp.Bind(LU, params, primals...)
	if tangents[0] == nil {
		return outs, make([]*tensor, 3)
	}
	lu, perm := outs[0], outs[2]
	pda := mm(permutationMatrix(perm, lu.DType()), tangents[0])
	x := triSolve(TriangularSolveParams{Lower: true, LeftSide: true, UnitDiagonal: true}, lu, pda)
	x = triSolve(TriangularSolveParams{}, lu, x)
	l := add(tril(lu, -1), eyeLike(lu))
	u := triu(lu, 0)
	dlu := add(mm(l, tril(x, -1)), mm(triu(x, 0), u))
	return outs, []*tensor{dlu, nil, nil}
}

// qrJVP: for m ≥ n, with C = qᵀ·da·r⁻¹ and Ω = tril(C, −1) −
// tril(C, −1)ᵀ, dq = q·(Ω − C) + da·r⁻¹ and dr = (C − Ω)·r. For m < n
// the factorization of the leading m columns a₁ = q·r₁ determines dq and
// dr₁, and dr₂ = qᵀ·(da₂ − dq·r₂).
func qrJVP(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
	outs := interp.Bind(QR, params, primals...)
	if tangents[0] == nil {
		return outs, make([]*tensor, 2)
	}
	q, r := outs[0], outs[1]
	da := tangents[0]
	s := da.Shape()
	m, n := s[len(s)-2], s[len(s)-1]
	if m >= n {
		dq, dr := qrSquareJVP(q, r, da)
		return outs, []*tensor{dq, dr}
	}
	r1, r2 := lastCols(r, 0, m), lastCols(r, m, n)
	da1, da2 := lastCols(da, 0, m), lastCols(da, m, n)
	dq, dr1 := qrSquareJVP(q, r1, da1)
	dr2 := mm(mT(q), sub(da2, mm(dq, r2)))
	dr := interp.Bind1(Concatenate, AxisParams{Axis: len(s) - 1}, dr1, dr2)
	return outs, []*tensor{dq, dr}
}

func qrSquareJVP(q, r, da *tensor) (dq, dr *tensor) {
	dar := triSolve(TriangularSolveParams{}, r, da) // da·r⁻¹
	c := mm(mT(q), dar)
	low := tril(c, -1)
	omega := sub(low, mT(low))
	dq = add(mm(q, sub(omega, c)), dar)
	dr = mm(sub(c, omega), r)
	return dq, dr
}

// eighJVP: with S the symmetric tangent the kernel sees and C = vᵀ·S·v,
// dw = diag(C) and dv = v·(F ∘ C), F[i, j] = 1/(w[j] − w[i]) off the
// diagonal and 0 on it (±Inf for repeated eigenvalues).
func eighJVP(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
	outs := interp.Bind(Eigh, params, primals...)
	if tangents[0] == nil {
		return outs, make([]*tensor, 2)
	}
	w, v := outs[0], outs[1]
	n := w.Shape()[w.Rank()-1]
	c := mm(mT(v), mm(symLower(tangents[0]), v))
	dw := diagPart(c)
	eye := eyeLike(v)
	diff := add(sub(rowVec(w, n), colVec(w, n)), eye)
	f := sub(div(constLike(1, diff), diff), eye)
	dv := mm(v, mul(f, c))
	return outs, []*tensor{dw, dv}
}

// svdJVP (reduced): with dP = uᵀ·da·v, ds = diag(dP); F[i, j] =
// 1/(s[j]² − s[i]²) off the diagonal, du = u·(F ∘ (dP·S + S·dPᵀ)) and
// dv = v·(F ∘ (S·dP + dPᵀ·S)), plus, for m > n, (I − u·uᵀ)·da·v·S⁻¹ in
// du, for n > m, (I − v·vᵀ)·daᵀ·u·S⁻¹ in dv.
func svdJVP(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
	p := params.(SVDParams)
	outs := interp.Bind(SVD, params, primals...)
	if tangents[0] == nil {
		return outs, make([]*tensor, len(outs))
	}
	all := outs
	if !p.ComputeUV {
		all = interp.Bind(SVD, SVDParams{ComputeUV: true}, primals...)
	}
	s, u, vt := all[0], all[1], all[2]
	v := mT(vt)
	da := tangents[0]
	dp := mm(mT(u), mm(da, v))
	ds := diagPart(dp)
	if !p.ComputeUV {
		return outs, []*tensor{ds}
	}
	sh := da.Shape()
	m, n := sh[len(sh)-2], sh[len(sh)-1]
	k := min(m, n)
	sRow, sCol := rowVec(s, k), colVec(s, k)
	eye := eyeLike(dp)
	diffs := add(mul(add(sRow, sCol), sub(sRow, sCol)), eye)
	f := sub(div(constLike(1, diffs), diffs), eye)
	dss := mul(sRow, dp)
	sds := mul(sCol, dp)
	du := mm(u, mul(f, add(dss, mT(dss))))
	dv := mm(v, mul(f, add(sds, mT(sds))))
	if m > n {
		dav := mm(da, v)
		du = add(du, div(sub(dav, mm(u, mm(mT(u), dav))), rowVec(s, m)))
	}
	if n > m {
		dau := mm(mT(da), u)
		dv = add(dv, div(sub(dau, mm(v, mm(vt, dau))), rowVec(s, n)))
	}
	return outs, []*tensor{ds, du, mT(dv)}
}

// PinvParams are the parameters of pinv: singular values at most RTol
// times the largest are taken as zero, so the zero value zeros only
// those that are 0 (linalg.Pinv passes 10·max(m, n)·ε).
type PinvParams struct{ RTol float64 }

func (p PinvParams) String() string { return fmt.Sprintf("rtol=%g", p.RTol) }

// Pinv is the Moore–Penrose pseudo-inverse [..., n, m] of matrices [...,
// m, n], a composite of svd: v·diag(s⁺)·uᵀ, where s⁺ inverts the singular
// values above RTol·max(s) and zeros the others. Its JVP rule is Golub
// and Pereyra's, dp = −p·da·p + p·pᵀ·daᵀ·(I − a·p) + (I − p·a)·daᵀ·pᵀ·p,
// which holds wherever the rank is locally constant, repeated singular
// values included (the derivative through svd's vectors does not exist
// there). Pinv and Det are marked Whole, and have batching rules, so
// staging and Vmap keep them one primitive with its own JVP rule.
var Pinv = func() *interp.Prim {
	p := graphio.Params[PinvParams](interp.NewPrim("pinv", interp.Pure, func(_ any, in []aval) []aval {
		checkArity(in, 1)
		m, n := checkMatrices(in[0], false)
		r := len(in[0].Shape)
		return one(aval{Shape: withLast(in[0].Shape[:r-2], n, m), DType: in[0].DType})
	}))
	p.Impl = pinvImpl
	p.Whole = true
	return p
}()

func pinvImpl(params any, args []*tensor) []*tensor {
	a := args[0]
	sh := a.Shape()
	r := len(sh)
	m, n := sh[r-2], sh[r-1]
	res := interp.Bind(SVD, SVDParams{ComputeUV: true}, a)
	s, u, vt := res[0], res[1], res[2]
	if min(m, n) == 0 {
		return []*tensor{zerosLike(aval{Shape: withLast(sh[:r-2], n, m), DType: a.DType()})}
	}
	smax := interp.Bind1(ReduceMax, ReduceParams{Axes: []int{r - 2}}, s)
	cut := mul(broadcastInDim(smax, s.Shape(), seqInts(r-2)), constLike(params.(PinvParams).RTol, s))
	keep := interp.Bind1(Gt, nil, s, cut)
	sinv := sel(keep, div(constLike(1, s), sel(keep, s, constLike(1, s))), zerosLike(interp.AvalOf(s)))
	return []*tensor{mm(mul(mT(vt), rowVec(sinv, n)), mT(u))}
}

func seqInts(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func pinvJVP(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
	outs := interp.Bind(Pinv, params, primals...)
	if tangents[0] == nil {
		return outs, []*tensor{nil}
	}
	a, p, da := primals[0], outs[0], tangents[0]
	dat := mT(da)
	pt := mT(p)
	t1 := neg(mm(p, mm(da, p)))
	t2 := mm(mm(p, pt), mm(dat, sub(eyeLike(mm(a, p)), mm(a, p))))
	pa := mm(p, a)
	t3 := mm(sub(eyeLike(pa), pa), mm(dat, mm(pt, p)))
	return outs, []*tensor{add(t1, add(t2, t3))}
}

// Det is the determinant [...] of square matrices [..., n, n], a
// composite of lu: the product of U's diagonal times the sign of the
// pivots' permutation (1 for n = 0). Its JVP rule is tr(adj(a)·da) with
// the adjugate from the LU factors, finite at singular matrices:
// adj(a) = sign·adj(U)·L⁻¹·P, where adj(U) is det(U)·U⁻¹ without a zero
// pivot, c·U′⁻¹·e_k·e_kᵀ·U′⁻¹ with one zero pivot u_kk (U′ = U with u_kk
// replaced by 1, c the product of the other pivots) and 0 with more.
var Det = func() *interp.Prim {
	p := interp.NewPrim("det", interp.Pure, func(_ any, in []aval) []aval {
		checkArity(in, 1)
		checkMatrices(in[0], true)
		r := len(in[0].Shape)
		return one(aval{Shape: withLast(in[0].Shape[:r-2]), DType: in[0].DType})
	})
	p.Impl = func(_ any, args []*tensor) []*tensor {
		res := interp.Bind(LU, nil, args[0])
		d := diagPart(res[0])
		r := d.Rank()
		return []*tensor{mul(interp.Bind1(ReduceProd, ReduceParams{Axes: []int{r - 1}}, d), pivotSign(res[1], d.DType()))}
	}
	p.Whole = true
	return p
}()

// pivotSign returns (−1)^(number of exchanges) of LU pivots [..., n] in
// dtype dt.
func pivotSign(piv *tensor, dt backend.DType) *tensor {
	s := piv.Shape()
	r := len(s)
	ids := interp.Bind1(Iota, IotaParams{DType: backend.Int64, Shape: s, Dim: r - 1})
	swaps := reduceSum(convert(interp.Bind1(Ne, nil, piv, ids), backend.Int64), []int{r - 1})
	odd := convert(interp.Bind1(Rem, nil, swaps, constLike(2, swaps)), dt)
	return sub(constLike(1, odd), scale(2, odd))
}

func detJVP(params any, primals, tangents []*tensor) ([]*tensor, []*tensor) {
	outs := interp.Bind(Det, params, primals...)
	if tangents[0] == nil {
		return outs, []*tensor{nil}
	}
	a := primals[0]
	sh := a.Shape()
	r := len(sh)
	if sh[r-1] == 0 {
		return outs, []*tensor{zerosLike(interp.AvalOf(outs[0]))}
	}
	res := interp.Bind(LU, nil, a)
	lu, piv, perm := res[0], res[1], res[2]
	dt := lu.DType()
	d := diagPart(lu)
	zero := eq(d, zerosLike(interp.AvalOf(d)))
	nz := reduceSum(convert(zero, backend.Int64), []int{r - 2})
	// c = the product of the nonzero pivots; U′ = U with zero pivots 1.
	d1 := sel(zero, constLike(1, d), d)
	c := interp.Bind1(ReduceProd, ReduceParams{Axes: []int{r - 2}}, d1)
	u1 := add(triu(lu, 1), diagEmbed(d1))
	eye := eyeLike(lu)
	ui := triSolve(TriangularSolveParams{LeftSide: true}, u1, eye) // U′⁻¹
	batchDims := seqInts(r - 2)
	toMat := func(x *tensor) *tensor { return broadcastInDim(x, sh, batchDims) }
	rank1 := mm(ui, mul(colVec(convert(zero, dt), sh[r-1]), ui)) // U′⁻¹·E·U′⁻¹
	adjU := sel(toMat(eq(nz, constLike(0, nz))), ui,
		sel(toMat(eq(nz, constLike(1, nz))), rank1, zerosLike(interp.AvalOf(ui))))
	adjU = mul(adjU, toMat(mul(c, pivotSign(piv, dt))))
	lp := triSolve(TriangularSolveParams{Lower: true, LeftSide: true, UnitDiagonal: true}, lu, permutationMatrix(perm, dt)) // L⁻¹·P
	adj := mm(adjU, lp)
	return outs, []*tensor{reduceSum(mul(mT(adj), tangents[0]), []int{r - 2, r - 1})}
}
