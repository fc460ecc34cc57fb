package peel

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Matrix-structure operations on the last axes: triangles (Tril, Triu),
// diagonals (Diagonal, Trace, Diag) and the small fixed products Kron and
// Cross. Each is a composite of existing primitives (slices, pads,
// reshapes, broadcasts, concatenation, iota masks), so every transform's
// rules apply to it unchanged.

// triangle keeps the elements of x's last two axes with col-row ≤ k
// (lower) or ≥ k (upper) and zeroes the others.
func triangle(op string, x *Tensor, k int, lower bool) *Tensor {
	checkTensor(op, x)
	r := x.Rank()
	if r < 2 {
		errorf(op, "operand %s has rank %d; need at least 2", x.TypeString(), r)
	}
	m, n := x.Shape()[r-2], x.Shape()[r-1]
	// Clamp k to [-m, n] so that row+k cannot overflow. Element [i, j] is
	// kept where j ≤ i+k (lower) or j ≥ i+k (upper): one comparison of
	// two broadcast index vectors.
	k = max(min(k, n), -m)
	rows := bin(prims.Add, iotaI64([]int{m}, 0), constView(backendFor(x), int64(k), Int64, []int{m}))
	bc := func(v *Tensor, dim int) *Tensor {
		return interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: x.Shape(), Dims: []int{dim}}, v)
	}
	cols, rk := bc(iotaI64([]int{n}, 0), r-1), bc(rows, r-2)
	var keep *Tensor
	if lower {
		keep = bin(prims.Le, cols, rk)
	} else {
		keep = bin(prims.Ge, cols, rk)
	}
	return sel(keep, x, zerosOf(x))
}

// Tril returns x with the elements above the k-th diagonal of its last
// two axes set to zero (false for bool), as numpy's tril: element [..., i,
// j] is kept where j-i ≤ k (k = 0 the main diagonal, k > 0 above it, k < 0
// below). NaN above the diagonal becomes 0; the gradient there is 0. The
// result is a new tensor of x's shape and dtype. Tril panics with *Error
// when x is nil or has rank below 2.
func Tril(x *Tensor, k int) *Tensor {
	const op = "peel.Tril"
	defer interp.Annotate(op)
	return triangle(op, x, k, true)
}

// Triu returns x with the elements below the k-th diagonal of its last
// two axes set to zero (false for bool), as numpy's triu: element [..., i,
// j] is kept where j-i ≥ k. See Tril. Triu panics with *Error when x is
// nil or has rank below 2.
func Triu(x *Tensor, k int) *Tensor {
	const op = "peel.Triu"
	defer interp.Annotate(op)
	return triangle(op, x, k, false)
}

// diagLen is the length of diagonal offset of an m×n matrix.
func diagLen(m, n, offset int) int {
	if offset >= 0 {
		return max(0, min(m, n-offset))
	}
	return max(0, min(m+offset, n))
}

// diagonal is Diagonal without the checks: a1 and a2 are normalized and
// distinct.
func diagonal(x *Tensor, offset, a1, a2 int) *Tensor {
	r := x.Rank()
	perm := make([]int, 0, r)
	for i := range r {
		if i != a1 && i != a2 {
			perm = append(perm, i)
		}
	}
	perm = append(perm, a1, a2)
	y := transposeView(x, perm)
	m, n := x.Shape()[a1], x.Shape()[a2]
	batch := append([]int{}, y.Shape()[:r-2]...)
	L := diagLen(m, n, offset)
	if x.Size() == 0 && (L == 0 || backend.ShapeSize(batch) == 0) {
		// An empty diagonal, or diagonals of no matrices: m·n may wrap
		// (an empty shape's other dimensions need not fit in an int
		// together), and the empty x, reshaped, is the result.
		return reshapeView(x, append(batch, L))
	}
	flat := reshapeView(y, append(append([]int{}, batch...), m*n))
	p := sliceAll(flat.Shape())
	if L > 0 {
		start := offset
		if offset < 0 {
			start = -offset * n
		}
		p.Start[r-2], p.Limit[r-2], p.Stride[r-2] = start, start+(L-1)*(n+1)+1, n+1
	} else {
		p.Start[r-2], p.Limit[r-2] = 0, 0
	}
	return interp.Bind1(prims.Slice, p, flat)
}

// diagArgs reads Diagonal's and Trace's optional offset, axis1, axis2
// (defaults 0, 0, 1, as numpy's, JAX's and torch's).
func diagArgs(op string, opt []int) (offset, axis1, axis2 int) {
	axis2 = 1
	switch len(opt) {
	case 3:
		axis2 = opt[2]
		fallthrough
	case 2:
		axis1 = opt[1]
		fallthrough
	case 1:
		offset = opt[0]
	case 0:
	default:
		errorf(op, "%d optional arguments (offset, axis1, axis2): want at most 3", len(opt))
	}
	if len(opt) == 2 {
		errorf(op, "offset and axis1 %d without axis2: give both axes or neither", axis1)
	}
	return offset, axis1, axis2
}

// Diagonal returns the diagonal of the matrices spanned by two axes of
// x; opt is the optional offset, axis1 and axis2, in that order
// (defaults 0, 0 and 1, as numpy's, JAX's and torch's: Diagonal(x) is the
// main diagonal of a matrix, Diagonal(x, 1) the one above it,
// Diagonal(x, 0, -2, -1) the main diagonals of a batch of matrices), as
// numpy's diagonal: both axes are removed
// and the diagonal, x[..., i, i+offset] (offset ≥ 0) or x[..., i-offset,
// i] (offset < 0), becomes the last axis of the result; it is empty when
// the offset lies outside the matrix. The result is a view of x when x's
// layout allows one (a strided slice of the flattened matrices, as when
// they are x's last two, contiguous axes), otherwise a copy, as for
// Reshape. Diagonal panics with *Error when x is nil, an axis is out of
// range, the two axes are the same, or opt has more than three values or
// an offset and axis1 without axis2.
func Diagonal(x *Tensor, opt ...int) *Tensor {
	const op = "peel.Diagonal"
	defer interp.Annotate(op)
	checkTensor(op, x)
	offset, axis1, axis2 := diagArgs(op, opt)
	a1 := normAxis(op, axis1, x.Rank())
	a2 := normAxis(op, axis2, x.Rank())
	if a1 == a2 {
		errorf(op, "axis1 %d and axis2 %d are the same axis of %s", axis1, axis2, x.TypeString())
	}
	return diagonal(x, offset, a1, a2)
}

// Trace returns the sum of a diagonal of x, as numpy's trace:
// Sum(Diagonal(x, opt...), -1), with Diagonal's optional offset, axis1
// and axis2 (defaults 0, 0, 1: Trace(x) is a matrix's trace, and of
// x.shape[2:] for a higher rank); bool sums as i64, and an empty
// diagonal sums to 0. Trace panics with *Error when x is nil or has rank
// below 2, and as Diagonal does for opt.
func Trace(x *Tensor, opt ...int) *Tensor {
	const op = "peel.Trace"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if x.Rank() < 2 {
		errorf(op, "operand %s has rank %d; need at least 2", x.TypeString(), x.Rank())
	}
	offset, axis1, axis2 := diagArgs(op, opt)
	a1 := normAxis(op, axis1, x.Rank())
	a2 := normAxis(op, axis2, x.Rank())
	if a1 == a2 {
		errorf(op, "axis1 %d and axis2 %d are the same axis of %s", axis1, axis2, x.TypeString())
	}
	d := boolToInt(diagonal(x, offset, a1, a2))
	return reduceBind(prims.ReduceSum, d, []int{d.Rank() - 1}, false)
}

// Diag extracts a diagonal or builds a diagonal matrix, as numpy's diag:
// for a 1-D x of length n it returns the (n+|k|)×(n+|k|) matrix with x on
// diagonal k and zeros (false) elsewhere; for a 2-D x it returns
// Diagonal(x, k, 0, 1) (a view of x when its layout allows one). Diag
// panics with *Error when x is nil or its rank is neither 1 nor 2, or
// when the matrix is too large.
func Diag(x *Tensor, k int) *Tensor {
	const op = "peel.Diag"
	defer interp.Annotate(op)
	checkTensor(op, x)
	switch x.Rank() {
	case 2:
		return diagonal(x, k, 0, 1)
	case 1:
	default:
		errorf(op, "operand %s has rank %d; need 1 (build a matrix) or 2 (extract a diagonal)", x.TypeString(), x.Rank())
	}
	n := x.Shape()[0]
	ak := k
	if ak < 0 {
		ak = -ak
	}
	N, ok := 0, ak >= 0 // -k overflows for the most negative int
	if ok {
		N, ok = backend.AddSize(n, ak)
	}
	if ok {
		_, ok = backend.MulSize(N, N)
	}
	if !ok {
		errorf(op, "too large: a diagonal matrix for %s at offset %d", x.TypeString(), k)
	}
	shape := []int{N, N}
	checkResult(op, x.DType(), shape, x)
	// Along the flattened matrix the diagonal's elements lie N+1 apart,
	// starting at k (k ≥ 0) or -k·N: interior padding puts them there.
	start := k
	if k < 0 {
		start = -k * N
	}
	length := 0
	if n > 0 {
		length = n + (n-1)*N
	}
	pp := prims.PadParams{Low: []int{start}, High: []int{N*N - start - length}, Interior: []int{0}}
	if n > 0 {
		pp.Interior[0] = N
	}
	flat := interp.Bind1(prims.Pad, pp, x, scalarOn(backendFor(x), 0, x.DType()))
	return reshapeView(flat, shape)
}

// Kron returns the Kronecker product of a and b, as numpy's kron: the
// operand of lower rank gets leading size-1 axes, and the result has
// dimensions a.shape[i]·b.shape[i], with out[i·b0 + k, j·b1 + l, ...] =
// a[i, j, ...]·b[k, l, ...]. Dtypes promote as for Mul. Kron panics with
// *Error when an operand is nil, an operand is bool, or the result is too
// large.
func Kron(a, b *Tensor) *Tensor {
	const op = "peel.Kron"
	defer interp.Annotate(op)
	checkTensor(op, a)
	checkTensor(op, b)
	if a.DType() == Bool || b.DType() == Bool {
		errorf(op, "operands %s and %s: bool has no product (convert with AsType)", a.TypeString(), b.TypeString())
	}
	r := max(a.Rank(), b.Rank())
	as := make([]int, r)
	bs := make([]int, r)
	for i := range r {
		as[i], bs[i] = 1, 1
	}
	copy(as[r-a.Rank():], a.Shape())
	copy(bs[r-b.Rank():], b.Shape())
	out := make([]int, r)
	wide := make([]int, 2*r)
	adims := make([]int, r)
	bdims := make([]int, r)
	for i := range r {
		var ok bool
		if out[i], ok = backend.MulSize(as[i], bs[i]); !ok {
			errorf(op, "too large: the product of %s and %s overflows int", a.TypeString(), b.TypeString())
		}
		wide[2*i], wide[2*i+1] = as[i], bs[i]
		adims[i], bdims[i] = 2*i, 2*i+1
	}
	d := PromoteTypes(a.DType(), b.DType())
	checkResult(op, d, out, a, b)
	x := interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: wide, Dims: adims}, reshapeView(AsType(a, d), as))
	y := interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: wide, Dims: bdims}, reshapeView(AsType(b, d), bs))
	return reshapeView(bin(prims.Mul, x, y), out)
}

// Cross returns the cross product of 3-vectors along axis of a and b
// (which broadcast against each other), as numpy's cross with axis:
// out = (a1·b2 - a2·b1, a2·b0 - a0·b2, a0·b1 - a1·b0) along the axis.
// Dtypes promote as for Mul. Cross panics with *Error when an operand is
// nil or bool, the shapes do not broadcast, the axis is out of range, or
// the axis does not have size 3 (numpy's 2-vector form is not supported).
func Cross(a, b *Tensor, axis int) *Tensor {
	const op = "peel.Cross"
	defer interp.Annotate(op)
	checkTensor(op, a)
	checkTensor(op, b)
	if a.DType() == Bool || b.DType() == Bool {
		errorf(op, "operands %s and %s: bool has no product (convert with AsType)", a.TypeString(), b.TypeString())
	}
	ts, _ := operands(op, a, b)
	x, y := ts[0], ts[1]
	if x.Rank() == 0 {
		errorf(op, "operands %s and %s are rank 0; need 3-vectors along axis %d", a.TypeString(), b.TypeString(), axis)
	}
	ax := normAxis(op, axis, x.Rank())
	if x.Shape()[ax] != 3 {
		errorf(op, "axis %d of the broadcast operands %s and %s has size %d, not 3", axis, a.TypeString(), b.TypeString(), x.Shape()[ax])
	}
	comp := func(t *Tensor, i int) *Tensor {
		p := sliceAll(t.Shape())
		p.Start[ax], p.Limit[ax] = i, i+1
		return interp.Bind1(prims.Slice, p, t)
	}
	term := func(i, j int) *Tensor {
		return bin(prims.Sub, bin(prims.Mul, comp(x, i), comp(y, j)), bin(prims.Mul, comp(x, j), comp(y, i)))
	}
	return interp.Bind1(prims.Concatenate, prims.AxisParams{Axis: ax}, term(1, 2), term(2, 0), term(0, 1))
}
