package peel

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// This file holds the indexing operations with tensor indices: gathers,
// scatters, one-hot encoding and dynamic slices. Indices are i64 tensors
// (i32 and u8 ones are converted to i64); negative indices count from the
// end. When an index tensor is concrete its range is checked eagerly and
// a bad index panics with *Error; under a transform (a traced index
// tensor) the primitives' own rules apply: gathers clamp out-of-range
// indices and scatters drop them.

// intIndices returns integer indices as i64: i32 and u8 index tensors
// are converted (exactly), others returned as they are for mustIndices
// to check.
func intIndices(idx *Tensor) *Tensor {
	if idx != nil && (idx.DType() == Int32 || idx.DType() == Uint8) {
		return AsType(idx, Int64)
	}
	return idx
}

// mustIndices panics with *Error naming op unless idx is an i64 tensor.
func mustIndices(op string, idx *Tensor) {
	if idx == nil {
		errorf(op, "nil index tensor")
	}
	if idx.DType() != Int64 {
		errorf(op, "indices have dtype %v, not i64, i32 or u8 (convert them with AsType)", idx.DType())
	}
}

// unravelIndex returns the multi-index of flat position i in shape.
func unravelIndex(i int, shape []int) []int {
	pos := make([]int, len(shape))
	for k := len(shape) - 1; k >= 0; k-- {
		if shape[k] > 0 {
			pos[k] = i % shape[k]
			i /= shape[k]
		}
	}
	return pos
}

// checkIndexRange panics with *Error naming op and the first bad index when idx
// is concrete and holds an index outside [-n, n). Traced indices are not
// checked.
func checkIndexRange(op string, idx *Tensor, n, axis int) {
	if !idx.IsConcrete() {
		return
	}
	for i, v := range idx.Int64s() {
		if v < -int64(n) || v >= int64(n) {
			errorf(op, "index %d (at position %v of the indices %s) is out of range for axis %d of size %d", v, unravelIndex(i, idx.Shape()), idx.TypeString(), axis, n)
		}
	}
}

// wrapIndices maps negative indices into [0, n): i < 0 ? i+n : i.
func wrapIndices(idx *Tensor, n int) *Tensor {
	shape := idx.Shape()
	neg := interp.Bind1(prims.Lt, nil, idx, constView(nil, int64(0), Int64, shape))
	shifted := interp.Bind1(prims.Add, nil, idx, constView(nil, int64(n), Int64, shape))
	return interp.Bind1(prims.Where, nil, neg, shifted, idx)
}

// Take takes the slices of x at the i64 indices idx along axis (numpy's
// take, torch's index_select generalized to any index shape): the result
// has shape x.shape[:axis] + idx.shape + x.shape[axis+1:] and
// out[p…, j…, s…] = x[p…, idx[j…], s…]. Negative indices count from the
// end. Take panics with *Error when x or idx is nil, idx is not an
// integer tensor, the axis is out of range, or a concrete index lies
// outside [-n, n); traced indices outside that range are clamped.
func Take(x, idx *Tensor, axis int) *Tensor {
	defer interp.Annotate("peel.Take")
	const op = "peel.Take"
	checkTensor(op, x)
	idx = intIndices(idx)
	mustIndices(op, idx)
	a := normAxis(op, axis, x.Rank())
	n := x.Shape()[a]
	checkIndexRange(op, idx, n, axis)
	return interp.Bind1(prims.Gather, prims.AxisParams{Axis: a}, x, wrapIndices(idx, n))
}

// alongAxis checks the operands of TakeAlongAxis and ScatterAdd and
// returns the normalized axis and the broadcast shape of the non-axis
// dimensions (with the axis dimension set to idx's).
func alongAxis(op string, x, idx *Tensor, axis int, bcastX bool) (int, []int) {
	checkTensor(op, x)
	mustIndices(op, idx)
	if idx.Rank() != x.Rank() {
		errorf(op, "indices %s and operand %s must have the same rank", idx.TypeString(), x.TypeString())
	}
	a := normAxis(op, axis, x.Rank())
	shape := make([]int, x.Rank())
	for k := range shape {
		dx, di := x.Shape()[k], idx.Shape()[k]
		switch {
		case k == a:
			shape[k] = di
		case di == dx || (di == 1 && (bcastX || dx != 1)):
			shape[k] = dx
		case bcastX && dx == 1:
			shape[k] = di
		default:
			errorf(op, "indices %s do not broadcast against operand %s in dimension %d", idx.TypeString(), x.TypeString(), k)
		}
	}
	// The broadcast shape, and the operand broadcast to its other
	// dimensions, must have representable sizes.
	shapeSize(op, shape)
	xs := append([]int(nil), shape...)
	xs[a] = x.Shape()[a]
	shapeSize(op, xs)
	return a, shape
}

// linearIndices returns the flat positions (p*n + idx)*S + s of the
// elements selected by idx, of shape [P, m, S], in an operand viewed as
// [P, n, S].
func linearIndices(idx3 *Tensor, n int) *Tensor {
	shape := idx3.Shape()
	p := interp.Bind1(prims.Iota, prims.IotaParams{DType: Int64, Shape: shape, Dim: 0})
	s := interp.Bind1(prims.Iota, prims.IotaParams{DType: Int64, Shape: shape, Dim: 2})
	lin := interp.Bind1(prims.Mul, nil, p, constView(nil, int64(n), Int64, shape))
	lin = interp.Bind1(prims.Add, nil, lin, idx3)
	lin = interp.Bind1(prims.Mul, nil, lin, constView(nil, int64(shape[2]), Int64, shape))
	return interp.Bind1(prims.Add, nil, lin, s)
}

// split3 returns P = prod(shape[:a]) and S = prod(shape[a+1:]). A side
// whose product overflows belongs to a shape with no elements (whose
// zero dimension is on the other side or at a), and is 0: the tensors
// P and S shape are empty either way.
func split3(shape []int, a int) (int, int) {
	return productOr0(shape[:a]), productOr0(shape[a+1:])
}

// productOr0 returns the product of dims, or 0 when it overflows int,
// which only the dimensions of a shape with no elements can do
// (backend.CheckedSize): flattening such a shape with 0 in place of the
// product keeps it empty.
func productOr0(dims []int) int {
	n := 1
	for _, d := range dims {
		var ok bool
		if n, ok = backend.MulSize(n, d); !ok {
			return 0
		}
	}
	return n
}

// TakeAlongAxis takes elements of x at the i64 indices idx along axis, as
// numpy's take_along_axis: idx has x's rank, the other dimensions of x and
// idx broadcast against each other, and out[…, j, …] = x[…, idx[…, j, …],
// …]. Negative indices count from the end. TakeAlongAxis panics with
// *Error when x or idx is nil, idx is not an integer tensor or has another
// rank, the shapes do not broadcast, the axis is out of range, or a
// concrete index lies outside [-n, n); traced indices outside that range
// are clamped.
func TakeAlongAxis(x, idx *Tensor, axis int) *Tensor {
	defer interp.Annotate("peel.TakeAlongAxis")
	const op = "peel.TakeAlongAxis"
	idx = intIndices(idx)
	a, shape := alongAxis(op, x, idx, axis, true)
	n := x.Shape()[a]
	checkIndexRange(op, idx, n, axis)
	xshape := append([]int(nil), shape...)
	xshape[a] = n
	P, S := split3(shape, a)
	m := shape[a]
	xf := reshapeView(broadcastTo(x, xshape), []int{P * n * S})
	i3 := reshapeView(broadcastTo(wrapIndices(idx, n), shape), []int{P, m, S})
	g := interp.Bind1(prims.Gather, prims.AxisParams{Axis: 0}, xf, linearIndices(i3, n))
	return reshapeView(g, shape)
}

// ScatterAdd returns a copy of x with the elements of src added at the i64
// indices idx along axis, as torch's scatter_add (the transpose of
// TakeAlongAxis): for every position u of idx, out[…, idx[u], …] +=
// src[u], where idx has x's rank, its other dimensions are 1 or x's, and
// src broadcasts to idx's shape (after idx's size-1 dimensions are
// broadcast to x's). Repeated indices accumulate. src is converted to x's
// dtype. ScatterAdd panics with *Error when an operand is nil, x is bool,
// idx is not an integer tensor or has another rank, the shapes do not fit,
// src's dtype promotes past x's, or a concrete index lies outside [-n, n);
// traced indices outside that range are dropped.
func ScatterAdd(x, idx, src *Tensor, axis int) *Tensor {
	defer interp.Annotate("peel.ScatterAdd")
	const op = "peel.ScatterAdd"
	sc := scatterOperands(op, "scatter-add", x, idx, src, axis)
	out := interp.Bind1(prims.ScatterAdd, prims.AxisParams{Axis: 0}, reshapeView(x, sc.flat), sc.lin, sc.src)
	return reshapeView(out, x.Shape())
}

// scattered holds the operands of a scatter along an axis, flattened
// for the axis-0 scatter primitives: the operand's shape as one dimension
// (flat), the linear positions of the broadcast indices (lin) and the
// source [P, m, S] (src), converted to the operand's dtype.
type scattered struct {
	flat     []int
	lin, src *Tensor
}

// scatterOperands checks the operands of a scatter of src into numeric x
// at the i64 indices idx along axis (what names the operation in the
// bool error) and flattens them.
func scatterOperands(op, what string, x, idx, src *Tensor, axis int) scattered {
	idx = intIndices(idx)
	a, shape := alongAxis(op, x, idx, axis, false)
	if x.DType() == Bool {
		errorf(op, "operand %s is bool; %s needs a numeric dtype", x.TypeString(), what)
	}
	checkTensor(op, src)
	n := x.Shape()[a]
	checkIndexRange(op, idx, n, axis)
	s := broadcastExact(op, "source", castTo(op, "source", src, x.DType()), shape)
	P, S := split3(shape, a)
	m := shape[a]
	i3 := reshapeView(broadcastTo(wrapIndices(idx, n), shape), []int{P, m, S})
	return scattered{flat: []int{P * n * S}, lin: linearIndices(i3, n), src: reshapeView(s, []int{P, m, S})}
}

// indexUpdate checks the operands of IndexAdd and IndexCopy and binds p.
func indexUpdate(op string, p *interp.Prim, x *Tensor, axis int, idx, src *Tensor) *Tensor {
	checkTensor(op, x)
	idx = intIndices(idx)
	mustIndices(op, idx)
	checkTensor(op, src)
	a := normAxis(op, axis, x.Rank())
	n := x.Shape()[a]
	checkIndexRange(op, idx, n, axis)
	want := prims.GatherShape(x.Shape(), idx.Shape(), a)
	s := broadcastExact(op, "source", castTo(op, "source", src, x.DType()), want)
	return interp.Bind1(p, prims.AxisParams{Axis: a}, x, wrapIndices(idx, n), s)
}

// IndexAdd returns a copy of x with the slices of src added at the i64
// indices idx along axis, as torch's index_add (the transpose of Take):
// out[…, idx[j…], …] += src[…, j…, …], where src broadcasts to
// x.shape[:axis] + idx.shape + x.shape[axis+1:]. Repeated indices
// accumulate; negative indices count from the end; src is converted to x's
// dtype. IndexAdd panics with *Error when an operand is nil, x is bool,
// idx is not an integer tensor, the axis is out of range, src does not
// fit, src's dtype promotes past x's, or a concrete index lies outside
// [-n, n); traced indices outside that range are dropped.
func IndexAdd(x, idx, src *Tensor, axis int) *Tensor {
	defer interp.Annotate("peel.IndexAdd")
	const op = "peel.IndexAdd"
	if x != nil && x.DType() == Bool {
		errorf(op, "operand %s is bool; index-add needs a numeric dtype", x.TypeString())
	}
	return indexUpdate(op, prims.ScatterAdd, x, axis, idx, src)
}

// IndexCopy returns a copy of x with the slices of src written at the i64
// indices idx along axis, as torch's index_copy: out[…, idx[j…], …] =
// src[…, j…, …], where src broadcasts to x.shape[:axis] + idx.shape +
// x.shape[axis+1:]. When an index repeats, the last write in row-major
// order of the indices wins. Negative indices count from the end; src is
// converted to x's dtype. IndexCopy panics with *Error when an operand is
// nil, idx is not an integer tensor, the axis is out of range, src does
// not fit, src's dtype promotes past x's, or a concrete index lies outside
// [-n, n); traced indices outside that range are dropped.
func IndexCopy(x, idx, src *Tensor, axis int) *Tensor {
	defer interp.Annotate("peel.IndexCopy")
	const op = "peel.IndexCopy"
	return indexUpdate(op, prims.Scatter, x, axis, idx, src)
}

// OneHot returns the one-hot encoding of the i64 indices idx over n
// classes as a tensor of dtype dt with shape idx.shape + [n]: element [j…,
// c] is 1 (true) where idx[j…] == c. Negative indices count from the end.
// OneHot panics with *Error when idx is nil or not an integer tensor, n is
// negative, dt is invalid, the result is too large (its number of elements
// overflows int, or it exceeds the allocation limit), or a concrete index
// lies outside [-n, n); a traced index outside that range gives a row of
// zeros.
func OneHot(idx *Tensor, n int, dt DType) *Tensor {
	defer interp.Annotate("peel.OneHot")
	const op = "peel.OneHot"
	idx = intIndices(idx)
	mustIndices(op, idx)
	if n < 0 {
		errorf(op, "negative number of classes %d", n)
	}
	if !dt.IsValid() {
		errorf(op, "invalid dtype %v", dt)
	}
	r := idx.Rank()
	shape := append(append([]int{}, idx.Shape()...), n)
	checkResult(op, dt, shape, idx)
	checkIndexRange(op, idx, n, idx.Rank())
	dims := make([]int, r)
	for i := range dims {
		dims[i] = i
	}
	w := interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: shape, Dims: dims}, wrapIndices(idx, n))
	classes := interp.Bind1(prims.Iota, prims.IotaParams{DType: Int64, Shape: shape, Dim: r})
	eq := interp.Bind1(prims.Eq, nil, w, classes)
	return AsType(eq, dt)
}

// startIndices checks dynamic start indices (i64 rank-0 tensors, one per
// axis of x) and maps negative ones into range by adding the axis's size.
func startIndices(op string, x *Tensor, starts []*Tensor) []*Tensor {
	if len(starts) != x.Rank() {
		errorf(op, "%d start indices for operand %s of rank %d", len(starts), x.TypeString(), x.Rank())
	}
	out := make([]*Tensor, len(starts))
	for k, s := range starts {
		if s == nil {
			errorf(op, "start index %d is nil", k)
		}
		if s.Rank() != 0 || s.DType() != Int64 {
			errorf(op, "start index %d is %s, not an i64 scalar (rank 0)", k, s.TypeString())
		}
		out[k] = wrapIndices(s, x.Shape()[k])
	}
	return out
}

// DynamicSlice returns the slice of x of the given sizes starting at the
// i64 rank-0 tensors starts (one per axis), which may be traced. A
// negative start counts from the end; starts are then clamped so the slice
// fits, as in XLA. DynamicSlice panics with *Error when x or a start is
// nil, a start is not an i64 scalar, the counts differ from x's rank, or a
// size lies outside [0, n].
func DynamicSlice(x *Tensor, starts []*Tensor, sizes []int) *Tensor {
	defer interp.Annotate("peel.DynamicSlice")
	const op = "peel.DynamicSlice"
	checkTensor(op, x)
	if len(sizes) != x.Rank() {
		errorf(op, "%d sizes for operand %s of rank %d", len(sizes), x.TypeString(), x.Rank())
	}
	for k, s := range sizes {
		if s < 0 || s > x.Shape()[k] {
			errorf(op, "size %d is out of range for axis %d of size %d", s, k, x.Shape()[k])
		}
	}
	st := startIndices(op, x, starts)
	args := append([]*Tensor{x}, st...)
	return interp.Bind1(prims.DynamicSlice, prims.DynamicSliceParams{Sizes: append([]int(nil), sizes...)}, args...)
}

// DynamicUpdateSlice returns a copy of x with update written at the i64
// rank-0 tensors starts (one per axis), which may be traced. A negative
// start counts from the end; starts are then clamped so the update fits,
// as in XLA. update is converted to x's dtype. DynamicUpdateSlice panics
// with *Error when an operand is nil, a start is not an i64 scalar, the
// counts differ from x's rank, update has another rank, or update is
// larger than x along some axis.
func DynamicUpdateSlice(x, update *Tensor, starts []*Tensor) *Tensor {
	defer interp.Annotate("peel.DynamicUpdateSlice")
	const op = "peel.DynamicUpdateSlice"
	checkTensor(op, x)
	checkTensor(op, update)
	if update.Rank() != x.Rank() {
		errorf(op, "update %s and operand %s differ in rank", update.TypeString(), x.TypeString())
	}
	for k, d := range update.Shape() {
		if d > x.Shape()[k] {
			errorf(op, "update %s is larger than operand %s along axis %d", update.TypeString(), x.TypeString(), k)
		}
	}
	st := startIndices(op, x, starts)
	args := append([]*Tensor{x, AsType(update, x.DType())}, st...)
	return interp.Bind1(prims.DynamicUpdateSlice, nil, args...)
}
