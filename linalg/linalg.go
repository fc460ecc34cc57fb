package linalg

import (
	"fmt"
	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

func errorf(op, format string, args ...any) {
	e := interp.Errorf(format, args...)
	e.Ops = []string{op}
	panic(e)
}

// matrixArg checks that a is a stack of matrices (square when square is
// set) and returns it as floats (integers and bools as float64).
func matrixArg(op string, a *peel.Tensor, square bool) *peel.Tensor {
	if a == nil {
		errorf(op, "nil tensor")
	}
	r := a.Rank()
	if r < 2 {
		errorf(op, "operand %s has rank %d; want a matrix (rank ≥ 2, batched over the leading dimensions)", a.TypeString(), r)
	}
	s := a.Shape()
	if square && s[r-2] != s[r-1] {
		errorf(op, "operand %s: the matrices are %d×%d, not square", a.TypeString(), s[r-2], s[r-1])
	}
	return floats(a)
}

// floats converts integer and bool tensors to float64.
func floats(a *peel.Tensor) *peel.Tensor {
	if a.DType().IsFloat() {
		return a
	}
	return peel.AsType(a, peel.Float64)
}

// mT swaps the last two dimensions.
func mT(x *peel.Tensor) *peel.Tensor {
	r := x.Rank()
	perm := make([]int, r)
	for i := range perm {
		perm[i] = i
	}
	perm[r-2], perm[r-1] = r-1, r-2
	return peel.Transpose(x, perm...)
}

// broadcastBatch broadcasts the leading dimensions of a and b (all but
// their last ka and kb) against each other, numpy style.
func broadcastBatch(op string, a, b *peel.Tensor, ka, kb int) (*peel.Tensor, *peel.Tensor) {
	as, bs := a.Shape(), b.Shape()
	ba, bb := as[:len(as)-ka], bs[:len(bs)-kb]
	n := max(len(ba), len(bb))
	batch := make([]int, n)
	for i := range n {
		da, db := 1, 1
		if j := i - (n - len(ba)); j >= 0 {
			da = ba[j]
		}
		if j := i - (n - len(bb)); j >= 0 {
			db = bb[j]
		}
		switch {
		case da == db, db == 1:
			batch[i] = da
		case da == 1:
			batch[i] = db
		default:
			errorf(op, "batch dimensions of %s and %s do not broadcast", a.TypeString(), b.TypeString())
		}
	}
	wa := append(append([]int{}, batch...), as[len(as)-ka:]...)
	wb := append(append([]int{}, batch...), bs[len(bs)-kb:]...)
	return peel.BroadcastTo(a, wa...), peel.BroadcastTo(b, wb...)
}

// sameFloat promotes a and b to one float dtype.
func sameFloat(a, b *peel.Tensor) (*peel.Tensor, *peel.Tensor) {
	d := peel.PromoteTypes(a.DType(), b.DType())
	if !d.IsFloat() {
		d = peel.Float64
	}
	return peel.AsType(a, d), peel.AsType(b, d)
}

// symmetrize returns (a + aᵀ)/2, so the factorizations of symmetric
// matrices see every element and their derivatives hold for any
// perturbation.
func symmetrize(a *peel.Tensor) *peel.Tensor {
	return peel.Mul(peel.Add(a, mT(a)), 0.5)
}

// diagonal returns the diagonals [..., n] of square matrices [..., n, n].
func diagonal(a *peel.Tensor) *peel.Tensor { return peel.Einsum("...ii->...i", a) }

// Cholesky returns the lower-triangular Cholesky factor L of the
// symmetric positive-definite matrices a [..., n, n]: L·Lᵀ = a, zeros
// above the diagonal. a is symmetrized first ((a + aᵀ)/2, as JAX does),
// so its derivative holds for any perturbation. A matrix that is not
// positive definite gives a factor of NaNs (no panic). Cholesky panics
// with *peel.Error when a is nil, of rank below 2 or not square.
func Cholesky(a *peel.Tensor) *peel.Tensor {
	const op = "linalg.Cholesky"
	defer interp.Annotate(op)
	a = matrixArg(op, a, true)
	return interp.Bind1(prims.Cholesky, nil, symmetrize(a))
}

// Triangle says which triangle of a triangular matrix TriangularSolve
// reads, and how it solves; combine with |, as
// linalg.Lower|linalg.Transposed. Exactly one of Lower and Upper must be
// given.
type Triangle uint8

const (
	// Lower reads a's lower triangle (with the diagonal).
	Lower Triangle = 1 << iota
	// Upper reads a's upper triangle (with the diagonal).
	Upper
	// RightSide solves x·op(a) = b instead of op(a)·x = b.
	RightSide
	// Transposed solves with op(a) = aᵀ instead of a.
	Transposed
	// UnitDiagonal takes a's diagonal as ones (it is not read).
	UnitDiagonal
)

// TriangularSolve solves op(a)·x = b for x (x·op(a) = b with RightSide),
// where a [..., m, m] is triangular: the triangle tri names (Lower or
// Upper) is read and the other never is; op(a) is aᵀ with Transposed,
// and UnitDiagonal takes a's diagonal as ones. b is [..., m, n] (or
// [..., n, m] with RightSide); the batch dimensions broadcast. A zero on
// the diagonal gives ±Inf or NaN. The result is linear in b. As
// jax.scipy.linalg.solve_triangular(L, b, lower=True):
// linalg.TriangularSolve(L, b, linalg.Lower). TriangularSolve panics
// with *peel.Error when an operand is nil or of rank below 2, a is not
// square, the sizes do not fit, the batch dimensions do not broadcast,
// or tri does not name exactly one of Lower and Upper.
func TriangularSolve(a, b *peel.Tensor, tri Triangle) *peel.Tensor {
	const op = "linalg.TriangularSolve"
	defer interp.Annotate(op)
	if (tri&Lower != 0) == (tri&Upper != 0) || tri >= UnitDiagonal<<1 {
		errorf(op, "say which triangle of a to read: linalg.Lower or linalg.Upper (got %s)", tri)
	}
	lower, leftSide, transposeA, unitDiagonal := tri&Lower != 0, tri&RightSide == 0, tri&Transposed != 0, tri&UnitDiagonal != 0
	a = matrixArg(op, a, true)
	b = matrixArg(op, b, false)
	m := a.Shape()[a.Rank()-1]
	k := b.Shape()[b.Rank()-2]
	if !leftSide {
		k = b.Shape()[b.Rank()-1]
	}
	if k != m {
		errorf(op, "a %s and b %s do not fit (left side %v)", a.TypeString(), b.TypeString(), leftSide)
	}
	a, b = sameFloat(a, b)
	a, b = broadcastBatch(op, a, b, 2, 2)
	p := prims.TriangularSolveParams{Lower: lower, LeftSide: leftSide, TransposeA: transposeA, UnitDiagonal: unitDiagonal}
	return interp.Bind1(prims.TriangularSolve, p, a, b)
}

// LU returns the LU factorization with partial pivoting of the square
// matrices a [..., n, n], as jax.lax.linalg.lu: lu [..., n, n] holding L
// (unit lower triangular, its diagonal not stored) below the diagonal
// and U on and above it, pivots [..., n] (i64, row i was exchanged with
// row pivots[i], in order) and permutation [..., n] (i64: row i of P·a
// is row permutation[i] of a), with P·a = L·U. A singular matrix gives
// zeros on U's diagonal (no panic). LU panics with *peel.Error when a is
// nil, of rank below 2 or not square.
func LU(a *peel.Tensor) (lu, pivots, permutation *peel.Tensor) {
	const op = "linalg.LU"
	defer interp.Annotate(op)
	a = matrixArg(op, a, true)
	r := interp.Bind(prims.LU, nil, a)
	return r[0], r[1], r[2]
}

// luSolve solves a·x = b from a's LU factors, b [..., n, k] with a's
// batch dimensions.
func luSolve(lu, perm, b *peel.Tensor) *peel.Tensor {
	pb := peel.TakeAlongAxis(b, peel.Unsqueeze(perm, perm.Rank()), b.Rank()-2)
	y := interp.Bind1(prims.TriangularSolve, prims.TriangularSolveParams{Lower: true, LeftSide: true, UnitDiagonal: true}, lu, pb)
	return interp.Bind1(prims.TriangularSolve, prims.TriangularSolveParams{LeftSide: true}, lu, y)
}

// Solve returns the solution x of a·x = b for the square matrices a
// [..., n, n]: b is one vector [n] when it is 1-D (numpy 2's rule; the
// result is then [..., n]), otherwise matrices [..., n, k] whose batch
// dimensions broadcast with a's. It is a composite of LU and two
// triangular solves. A singular a gives ±Inf or NaN (no panic), and so
// does its derivative. Solve panics with *peel.Error when an operand is
// nil, a is not a stack of square matrices, b's rows are not a's size
// or the batch dimensions do not broadcast.
func Solve(a, b *peel.Tensor) *peel.Tensor {
	const op = "linalg.Solve"
	defer interp.Annotate(op)
	a = matrixArg(op, a, true)
	if b == nil {
		errorf(op, "nil tensor")
	}
	n := a.Shape()[a.Rank()-1]
	vector := b.Rank() == 1
	if b.Rank() == 0 {
		errorf(op, "b %s is a scalar; want a vector [n] or matrices [..., n, k]", b.TypeString())
	}
	if vector {
		b = peel.Unsqueeze(b, 1)
	}
	if b.Shape()[b.Rank()-2] != n {
		errorf(op, "a %s and b %s do not fit: b needs %d rows", a.TypeString(), b.TypeString(), n)
	}
	a, b = sameFloat(a, floats(b))
	a, b = broadcastBatch(op, a, b, 2, 2)
	lu, _, perm := LU(a)
	x := luSolve(lu, perm, b)
	if vector {
		x = peel.Squeeze(x, x.Rank()-1)
	}
	return x
}

// Inv returns the inverses of the square matrices a [..., n, n]: Solve(a,
// I). A singular matrix gives ±Inf or NaN (no panic). Inv panics with
// *peel.Error when a is nil, of rank below 2 or not square.
func Inv(a *peel.Tensor) *peel.Tensor {
	const op = "linalg.Inv"
	defer interp.Annotate(op)
	a = matrixArg(op, a, true)
	n := a.Shape()[a.Rank()-1]
	eye := peel.BroadcastTo(peel.Eye(a.DType(), n), a.Shape()...)
	lu, _, perm := LU(a)
	return luSolve(lu, perm, eye)
}

// luSign returns the sign (±1, a's dtype) of the permutation of LU's
// pivots [..., n].
func luSign(pivots *peel.Tensor, dt peel.DType) *peel.Tensor {
	n := pivots.Shape()[pivots.Rank()-1]
	swaps := peel.Sum(peel.AsType(peel.NotEqual(pivots, peel.Arange(peel.Int64, 0, float64(n), 1)), peel.Int64), pivots.Rank()-1)
	odd := peel.AsType(peel.Rem(swaps, int64(2)), dt)
	return peel.Sub(1.0, peel.Mul(odd, 2.0))
}

// Det returns the determinants of the square matrices a [..., n, n]
// (1 for n = 0), from the LU factorization: the product of U's diagonal
// times the pivots' sign. A singular matrix gives 0 (or a value of the
// size of the rounding error). Its derivative is tr(adj(a)·da)
// (det·tr(a⁻¹·da) where a is invertible), with the adjugate computed
// from the LU factors so that it is finite at singular matrices too
// (exactly zero pivots: one gives the rank-1 adjugate, more give 0); the
// second derivative at a singular matrix may be NaN. Det panics with
// *peel.Error when a is nil, of rank below 2 or not square.
func Det(a *peel.Tensor) *peel.Tensor {
	const op = "linalg.Det"
	defer interp.Annotate(op)
	a = matrixArg(op, a, true)
	return interp.Bind1(prims.Det, nil, a)
}

// Slogdet returns the sign (−1, 0 or 1) and the natural logarithm of the
// absolute value of the determinants of the square matrices a [..., n,
// n], as numpy.linalg.slogdet: det = sign·exp(logabsdet), without the
// overflow of Det. A singular matrix gives sign 0 and logabsdet −Inf.
// The sign has a zero derivative. Slogdet panics with *peel.Error when a
// is nil, of rank below 2 or not square.
func Slogdet(a *peel.Tensor) (sign, logabsdet *peel.Tensor) {
	const op = "linalg.Slogdet"
	defer interp.Annotate(op)
	a = matrixArg(op, a, true)
	lu, piv, _ := LU(a)
	d := diagonal(lu)
	last := d.Rank() - 1
	sign = peel.Mul(peel.Prod(peel.Sign(d), last), luSign(piv, a.DType()))
	logabsdet = peel.Sum(peel.Log(peel.Abs(d)), last)
	return sign, logabsdet
}

// QR returns the reduced QR factorization of the matrices a [..., m, n]:
// q [..., m, k] with orthonormal columns and upper-triangular r [..., k,
// n], k = min(m, n), q·r = a. The signs are LAPACK's (Householder
// reflections; r's diagonal may be negative), as in numpy and JAX. The
// derivative needs r's leading k×k block invertible (a of full rank);
// otherwise it is ±Inf or NaN. QR panics with *peel.Error when a is nil
// or of rank below 2.
func QR(a *peel.Tensor) (q, r *peel.Tensor) {
	const op = "linalg.QR"
	defer interp.Annotate(op)
	a = matrixArg(op, a, false)
	res := interp.Bind(prims.QR, nil, a)
	return res[0], res[1]
}

// Eigh returns the eigenvalues w [..., n], in ascending order, and the
// eigenvectors v [..., n, n] (orthonormal columns: a·v = v·diag(w)) of
// the symmetric matrices a [..., n, n], which are symmetrized first
// ((a + aᵀ)/2). Each eigenvector's sign is arbitrary (LAPACK's). The
// derivative of w is defined everywhere; that of v is ±Inf or NaN where
// eigenvalues repeat (the eigenvectors are not unique there), as in JAX.
// A matrix holding Inf or NaN gives NaN results. Eigh panics with
// *peel.Error when a is nil, of rank below 2 or not square.
func Eigh(a *peel.Tensor) (w, v *peel.Tensor) {
	const op = "linalg.Eigh"
	defer interp.Annotate(op)
	a = matrixArg(op, a, true)
	res := interp.Bind(prims.Eigh, nil, symmetrize(a))
	return res[0], res[1]
}

// Eigvalsh returns the eigenvalues of the symmetric matrices a [..., n,
// n] in ascending order (Eigh's w). It panics as Eigh does.
func Eigvalsh(a *peel.Tensor) *peel.Tensor {
	const op = "linalg.Eigvalsh"
	defer interp.Annotate(op)
	a = matrixArg(op, a, true)
	return interp.Bind(prims.Eigh, nil, symmetrize(a))[0]
}

// SVD returns the reduced singular value decomposition of the matrices a
// [..., m, n] (numpy's full_matrices=False): u [..., m, k], the singular
// values s [..., k] in descending order and vt [..., k, n], k = min(m, n),
// with u·diag(s)·vt = a. The singular vectors' signs are arbitrary
// (LAPACK's). The derivative of s is defined wherever the singular
// values are distinct and nonzero (and that of u and vt too); elsewhere
// the tangents of u and vt are ±Inf or NaN, as in JAX. A matrix holding
// Inf or NaN gives NaN results. SVD panics with *peel.Error when a is
// nil or of rank below 2.
func SVD(a *peel.Tensor) (u, s, vt *peel.Tensor) {
	const op = "linalg.SVD"
	defer interp.Annotate(op)
	a = matrixArg(op, a, false)
	res := interp.Bind(prims.SVD, prims.SVDParams{ComputeUV: true}, a)
	return res[1], res[0], res[2]
}

// SVDVals returns the singular values [..., min(m, n)] of the matrices a
// [..., m, n] in descending order (numpy's svd with compute_uv=False,
// torch.linalg.svdvals); the singular vectors are not computed, except
// by its derivative. It panics as SVD does.
func SVDVals(a *peel.Tensor) *peel.Tensor {
	const op = "linalg.SVDVals"
	defer interp.Annotate(op)
	a = matrixArg(op, a, false)
	return interp.Bind1(prims.SVD, prims.SVDParams{ComputeUV: false}, a)
}

// CholeskySolve solves (L·Lᵀ)·x = b for x, given the lower Cholesky
// factor L [..., m, m] of a symmetric positive-definite matrix (as
// Cholesky returns it) and b [..., m, n]; the batch dimensions
// broadcast. It is two triangular solves, L·y = b and Lᵀ·x = y, as
// jax.scipy.linalg.cho_solve and torch.cholesky_solve compute it; the
// upper triangle of L is never read. It panics with *peel.Error as
// TriangularSolve does.
func CholeskySolve(l, b *peel.Tensor) *peel.Tensor {
	const op = "linalg.CholeskySolve"
	defer interp.Annotate(op)
	return TriangularSolve(l, TriangularSolve(l, b, Lower), Lower|Transposed)
}

// String names the flags set, as "Lower|Transposed" ("0" for none).
func (t Triangle) String() string {
	names := []string{"Lower", "Upper", "RightSide", "Transposed", "UnitDiagonal"}
	s := ""
	for i, n := range names {
		if t&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	if rest := t &^ (1<<len(names) - 1); rest != 0 {
		if s != "" {
			s += "|"
		}
		s += fmt.Sprintf("%#x", uint8(rest))
	}
	if s == "" {
		return "0"
	}
	return s
}
