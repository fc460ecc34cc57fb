package linalg

import (
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// eps returns the machine epsilon of float dtype d.
func eps(d peel.DType) float64 {
	switch d {
	case peel.Float32:
		return 0x1p-23
	case peel.Float16:
		return 0x1p-10
	case peel.BFloat16:
		return 0x1p-7
	}
	return 0x1p-52
}

// Pinv returns the Moore–Penrose pseudo-inverses [..., n, m] of the
// matrices a [..., m, n], from the SVD: singular values at most
// 10·max(m, n)·ε·max(s) (ε the dtype's machine epsilon, JAX's default
// rtol) are taken as zero. Its derivative is Golub and Pereyra's
// formula, defined wherever the rank does not change (repeated singular
// values included); at a change of rank it is not defined and may be
// large. Pinv panics with *peel.Error when a is nil or of rank below 2.
func Pinv(a *peel.Tensor) *peel.Tensor {
	const op = "linalg.Pinv"
	defer interp.Annotate(op)
	a = matrixArg(op, a, false)
	return pinv(a)
}

func pinv(a *peel.Tensor) *peel.Tensor {
	s := a.Shape()
	m, n := s[len(s)-2], s[len(s)-1]
	rtol := 10 * float64(max(m, n)) * eps(a.DType())
	return interp.Bind1(prims.Pinv, prims.PinvParams{RTol: rtol}, a)
}

// Lstsq returns the minimum-norm least-squares solution x of a·x ≈ b for
// the matrices a [..., m, n]: b is one vector [m] when it is 1-D (the
// result is then [..., n]), otherwise matrices [..., m, k] whose batch
// dimensions broadcast with a's. It is Pinv(a)·b, so rank-deficient a
// are handled as Pinv handles them (numpy's lstsq, which also returns
// residuals, rank and singular values, uses the cutoff ε·max(m, n)).
// Lstsq panics with *peel.Error when an operand is nil, a is of rank
// below 2, b is a scalar or its rows are not a's, or the batch
// dimensions do not broadcast.
func Lstsq(a, b *peel.Tensor) *peel.Tensor {
	const op = "linalg.Lstsq"
	defer interp.Annotate(op)
	a = matrixArg(op, a, false)
	if b == nil {
		errorf(op, "nil tensor")
	}
	if b.Rank() == 0 {
		errorf(op, "b %s is a scalar; want a vector [m] or matrices [..., m, k]", b.TypeString())
	}
	m := a.Shape()[a.Rank()-2]
	vector := b.Rank() == 1
	if vector {
		b = peel.Unsqueeze(b, 1)
	}
	if b.Shape()[b.Rank()-2] != m {
		errorf(op, "a %s and b %s do not fit: b needs %d rows", a.TypeString(), b.TypeString(), m)
	}
	a, b = sameFloat(a, floats(b))
	a, b = broadcastBatch(op, a, b, 2, 2)
	x := peel.MatMul(pinv(a), b)
	if vector {
		x = peel.Squeeze(x, x.Rank()-1)
	}
	return x
}

// VectorNorm returns the vector norm of order ord of x over axes (every
// axis when none are given, the elements then taken as one vector; see
// peel.Sum for axes): ord = 2 is peel.Norm (the Euclidean norm, with
// derivative 0 at 0), 1 the sum of magnitudes, +Inf the largest
// magnitude, −Inf the smallest, 0 the number of nonzero elements (in
// x's float dtype; derivative 0), any other p (Σ|x|ᵖ)^(1/p), as
// numpy.linalg.norm and torch.linalg.vector_norm. Integer and bool x are
// converted to float64. A NaN element makes the norm NaN. Over an empty
// axis the norms are 0, except ±Inf's, which panic as peel.Max does (and
// those of negative p, +Inf). The derivative at the zero vector is 0 for
// p ≥ 1; for p < 1 the derivative at a zero element is ±Inf or NaN.
// VectorNorm
// panics with *peel.Error when x is nil or an axis is out of range or
// repeated.
func VectorNorm(x *peel.Tensor, ord float64, axes ...int) *peel.Tensor {
	const op = "linalg.VectorNorm"
	defer interp.Annotate(op)
	if x == nil {
		errorf(op, "nil tensor")
	}
	x = floats(x)
	switch {
	case ord == 2:
		return peel.Norm(x, axes...)
	case ord == 1:
		return peel.Sum(peel.Abs(x), axes...)
	case math.IsInf(ord, 1):
		return peel.Max(peel.Abs(x), axes...)
	case math.IsInf(ord, -1):
		return peel.Min(peel.Abs(x), axes...)
	case ord == 0:
		return peel.Sum(peel.AsType(peel.NotEqual(x, 0.0), x.DType()), axes...)
	case math.IsNaN(ord):
		errorf(op, "order NaN")
	}
	// As in peel.Norm, the double select keeps the derivative at a zero
	// sum finite (0): the root only ever sees positive values.
	sum := peel.Sum(peel.Pow(peel.Abs(x), ord), axes...)
	if ord < 0 {
		// A zero element makes the sum +Inf and the norm 0.
		return peel.Pow(sum, 1/ord)
	}
	pos := peel.Greater(sum, 0.0)
	return peel.Where(pos, peel.Pow(peel.Where(pos, sum, 1.0), 1/ord), 0.0)
}

// MatrixOrd is the order of a matrix norm (numpy's ord argument).
type MatrixOrd string

// Matrix norm orders.
const (
	Fro         MatrixOrd = "fro"  // Frobenius: √Σ|aᵢⱼ|²
	Nuc         MatrixOrd = "nuc"  // nuclear: the sum of the singular values
	OneNorm     MatrixOrd = "1"    // the largest column sum of magnitudes
	NegOneNorm  MatrixOrd = "-1"   // the smallest column sum of magnitudes
	Spectral    MatrixOrd = "2"    // the largest singular value
	NegSpectral MatrixOrd = "-2"   // the smallest singular value
	InfNorm     MatrixOrd = "inf"  // the largest row sum of magnitudes
	NegInfNorm  MatrixOrd = "-inf" // the smallest row sum of magnitudes
)

// MatrixNorm returns the matrix norm of order ord of the matrices x
// [..., m, n] (numpy.linalg.norm with a matrix ord,
// torch.linalg.matrix_norm), a tensor of x's batch shape. The spectral
// and nuclear norms come from the singular values (SVDVals); the others
// are reductions. Integer and bool x are converted to float64. A NaN
// element makes the norm NaN. For an empty matrix the Frobenius and
// nuclear norms are 0; the other orders panic, as numpy errors (the
// maximum of nothing). MatrixNorm panics with *peel.Error when x is nil
// or of rank below 2, or ord is not one of the constants.
func MatrixNorm(x *peel.Tensor, ord MatrixOrd) *peel.Tensor {
	const op = "linalg.MatrixNorm"
	defer interp.Annotate(op)
	x = matrixArg(op, x, false)
	r := x.Rank()
	rows, cols := r-2, r-1
	s := x.Shape()
	empty := s[r-2] == 0 || s[r-1] == 0
	switch ord {
	case OneNorm, NegOneNorm, Spectral, NegSpectral, InfNorm, NegInfNorm:
		if empty {
			errorf(op, "order %s of empty matrices %s is not defined", ord, x.TypeString())
		}
	}
	switch ord {
	case Fro:
		return peel.Norm(x, rows, cols)
	case Nuc:
		return peel.Sum(SVDVals(x), rows)
	case OneNorm:
		return peel.Max(peel.Sum(peel.Abs(x), rows), rows)
	case NegOneNorm:
		return peel.Min(peel.Sum(peel.Abs(x), rows), rows)
	case InfNorm:
		return peel.Max(peel.Sum(peel.Abs(x), cols), rows)
	case NegInfNorm:
		return peel.Min(peel.Sum(peel.Abs(x), cols), rows)
	case Spectral:
		return peel.Select(SVDVals(x), rows, 0)
	case NegSpectral:
		k := min(s[r-2], s[r-1])
		return peel.Select(SVDVals(x), rows, k-1)
	}
	errorf(op, "unknown order %q (want one of fro, nuc, 1, -1, 2, -2, inf, -inf)", string(ord))
	return nil
}

// Padé [13/13] coefficients of exp (Higham, "The scaling and squaring
// method for the matrix exponential revisited", 2005) and the norm
// bound θ₁₃ below which degree 13 needs no scaling.
var pade13 = [14]float64{
	64764752532480000, 32382376266240000, 7771770303897600, 1187353796428800,
	129060195264000, 10559470521600, 670442572800, 33522128640,
	1323241920, 40840800, 960960, 16380, 182, 1,
}

const theta13 = 5.371920351148152

// maxSquarings bounds the squarings of traced operands, whose norms are
// not known when the computation is built: enough for 1-norms up to
// θ₁₃·2⁴⁰ ≈ 5.9e12.
const maxSquarings = 40

// MatrixExp returns the matrix exponentials of the square matrices a
// [..., n, n] (scipy.linalg.expm, torch.linalg.matrix_exp), by scaling
// and squaring with the [13/13] Padé approximant (Higham 2005): a is
// scaled by 2⁻ˢ so that its 1-norm is at most θ₁₃ ≈ 5.37, the
// approximant (a solve of two matrix polynomials) is squared s times. It
// is a composite of matrix products, Solve and selects, so its
// derivatives are those of the computation (exact up to the
// approximation's own error). s is chosen per matrix from the 1-norm:
// for a concrete a the number of squarings is the largest needed; for a
// traced a (under Vmap, Grad or Compile) it is at most 40, enough for
// 1-norms up to about 5.9e12; a traced matrix of a larger norm gives
// NaN. A NaN or Inf element gives NaN results (Inf possibly, when the
// exponential overflows). MatrixExp panics with
// *peel.Error when a is nil, of rank below 2 or not square.
func MatrixExp(a *peel.Tensor) *peel.Tensor {
	const op = "linalg.MatrixExp"
	defer interp.Annotate(op)
	a = matrixArg(op, a, true)
	r := a.Rank()
	n := a.Shape()[r-1]
	if n == 0 {
		return peel.ZerosLike(a)
	}
	dt := a.DType()
	if dt.IsStorage() {
		// The Padé coefficients (up to 6.4e16) overflow f16: compute in
		// f32 and round the result once.
		return peel.AsType(MatrixExp(peel.AsType(a, peel.Float32)), dt)
	}
	// s = max(0, ceil(log2(‖a‖₁/θ₁₃))) per matrix, [..., 1, 1].
	norm := peel.Keep(peel.Max, peel.Sum(peel.Abs(a), r-2), r-2)
	norm = peel.Unsqueeze(norm, r-2)
	s := peel.Maximum(peel.Ceil(peel.Div(peel.Log(peel.Div(norm, theta13)), math.Ln2)), 0.0)
	// A NaN or Inf norm: no scaling (the result is NaN anyway).
	finite := peel.Less(s, math.Inf(1))
	s = peel.Where(finite, s, 0.0)
	steps := maxSquarings
	if a.IsConcrete() {
		steps = 0
		for _, v := range peel.AsType(s, peel.Float64).Float64s() {
			steps = max(steps, int(v))
		}
	}
	as := peel.Mul(a, peel.Pow(2.0, peel.Neg(s)))
	eye := peel.BroadcastTo(peel.Eye(dt, n), a.Shape()...)
	b := pade13
	lin := func(ms []*peel.Tensor, cs []float64) *peel.Tensor {
		var acc *peel.Tensor
		for i, m := range ms {
			t := peel.Mul(m, cs[i])
			if acc == nil {
				acc = t
			} else {
				acc = peel.Add(acc, t)
			}
		}
		return acc
	}
	a2 := peel.MatMul(as, as)
	a4 := peel.MatMul(a2, a2)
	a6 := peel.MatMul(a4, a2)
	u := peel.MatMul(a6, lin([]*peel.Tensor{a6, a4, a2}, []float64{b[13], b[11], b[9]}))
	u = peel.Add(u, lin([]*peel.Tensor{a6, a4, a2, eye}, []float64{b[7], b[5], b[3], b[1]}))
	u = peel.MatMul(as, u)
	v := peel.MatMul(a6, lin([]*peel.Tensor{a6, a4, a2}, []float64{b[12], b[10], b[8]}))
	v = peel.Add(v, lin([]*peel.Tensor{a6, a4, a2, eye}, []float64{b[6], b[4], b[2], b[0]}))
	res := solveSquare(peel.Sub(v, u), peel.Add(v, u))
	for k := range steps {
		res = peel.Where(peel.Less(float64(k), s), peel.MatMul(res, res), res)
	}
	if !a.IsConcrete() {
		// Operands beyond the bound are NaN rather than silently wrong.
		return peel.Where(peel.LessEqual(s, float64(maxSquarings)), res, math.NaN())
	}
	return res
}

// solveSquare is Solve for matrices of equal batch dimensions.
func solveSquare(a, b *peel.Tensor) *peel.Tensor {
	lu, _, perm := LU(a)
	return luSolve(lu, perm, b)
}
