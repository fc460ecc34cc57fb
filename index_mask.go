package peel

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Masked and advanced-index operations: masked fills and selections with
// static result sizes (MaskedFill, MaskedSelect, Nonzero) and
// advanced-index writes (IndexPut), with their in-place forms. Each is a
// composite of existing primitives.

// valueOperand converts v (a Go scalar or a tensor) to x's dtype and
// broadcasts it to shape exactly. A tensor whose dtype would promote past
// x's is refused, as for IndexCopy; a Go scalar is converted as AsType
// converts it.
func valueOperand(op, what string, x *Tensor, v any, shape []int) *Tensor {
	var t *Tensor
	switch s := v.(type) {
	case *Tensor:
		if s == nil {
			errorf(op, "the %s is a nil tensor", what)
		}
		t = castTo(op, what, s, x.DType())
	default:
		if _, ok := scalarDType(v); !ok {
			errorf(op, "the %s has type %T; want *peel.Tensor or a Go number or bool", what, v)
		}
		t = scalarOn(backendFor(x), v, x.DType())
	}
	return broadcastExact(op, what, t, shape)
}

// boolMask checks that mask is a bool tensor.
func boolMask(op string, mask *Tensor) {
	if mask == nil {
		errorf(op, "nil mask")
	}
	if mask.DType() != Bool {
		errorf(op, "mask %s is not bool", mask.TypeString())
	}
}

// MaskedFill returns a copy of x with the elements where mask is true
// replaced by value, as torch's masked_fill: mask is bool and broadcasts
// to x's shape; value is a Go scalar (converted to x's dtype as AsType
// converts it) or a rank-0 tensor (whose dtype must not promote
// past x's; it is differentiated). The gradient flows to x where mask is
// false and to a tensor value from where it is true. MaskedFill panics
// with *Error when x or mask is nil, mask is not bool or does not
// broadcast to x's shape, or value is neither a Go scalar nor a rank-0
// tensor.
func MaskedFill(x, mask *Tensor, value any) *Tensor {
	const op = "peel.MaskedFill"
	defer interp.Annotate(op)
	checkTensor(op, x)
	boolMask(op, mask)
	if t, ok := value.(*Tensor); ok && t != nil && t.Rank() != 0 {
		errorf(op, "fill value %s is not a scalar (rank 0)", t.TypeString())
	}
	m := broadcastExact(op, "mask", mask, x.Shape())
	v := valueOperand(op, "fill value", x, value, x.Shape())
	return sel(m, v, x)
}

// selectedPositions returns, for the flattened bool mask m (shape [N]),
// each element's position among the true ones, and -1 where it is false
// (an index scatter drops).
func selectedPositions(m *Tensor) *Tensor {
	mi := interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: Int64}, m)
	pos := interp.Bind1(prims.Cumsum, prims.CumsumParams{Axis: 0}, mi)
	pos = bin(prims.Sub, pos, fill(1, pos))
	return sel(m, pos, fill(-1, pos))
}

// MaskedSelect returns the elements of x where mask is true, in row-major
// order, as a 1-D tensor of the static length size, as torch's
// masked_select with jnp.nonzero's size argument: x and mask broadcast
// against each other; when fewer than size elements are selected the
// rest of the result is fill (converted to x's dtype), and when more are
// selected only the first size are kept. The gradient flows to the
// selected elements that are kept. MaskedSelect panics with *Error when x
// or mask is nil, mask is not bool, the shapes do not broadcast, or size
// is negative.
func MaskedSelect(x, mask *Tensor, size int, fill float64) *Tensor {
	const op = "peel.MaskedSelect"
	defer interp.Annotate(op)
	checkTensor(op, x)
	boolMask(op, mask)
	if size < 0 {
		errorf(op, "negative size %d", size)
	}
	checkResult(op, x.DType(), []int{size}, x)
	shape := broadcastShapes(op, x.Shape(), mask.Shape())
	n := shapeSize(op, shape)
	xf := reshapeView(broadcastTo(x, shape), []int{n})
	mf := reshapeView(broadcastTo(mask, shape), []int{n})
	base := constView(backendFor(x), fill, x.DType(), []int{size})
	return interp.Bind1(prims.Scatter, prims.AxisParams{Axis: 0}, base, selectedPositions(mf), xf)
}

// Nonzero returns the indices of x's nonzero (true) elements, one i64
// tensor of the static length size per axis of x, as jnp.nonzero with
// size and fill_value: element k of result a is the axis-a coordinate of
// the k-th nonzero element in row-major order. When x has fewer than size
// nonzero elements the remaining entries of every result are fill; when
// it has more, only the first size are returned. NaN counts as nonzero.
// Nonzero is not differentiable (its results are integers). It panics
// with *Error when x is nil or rank 0, or size is negative.
func Nonzero(x *Tensor, size int, fill int64) []*Tensor {
	const op = "peel.Nonzero"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if x.Rank() == 0 {
		errorf(op, "operand %s is rank 0; nonzero needs at least one axis", x.TypeString())
	}
	if size < 0 {
		errorf(op, "negative size %d", size)
	}
	checkResult(op, Int64, []int{size}, x)
	n := x.Size()
	flat := reshapeView(x, []int{n})
	var m *Tensor
	if x.DType() == Bool {
		m = flat
	} else {
		m = bin(prims.Ne, flat, zerosOf(flat))
	}
	pos := selectedPositions(m)
	be := backendFor(x)
	base := constView(be, int64(-1), Int64, []int{size})
	at := interp.Bind1(prims.Scatter, prims.AxisParams{Axis: 0}, base, pos, iotaI64([]int{n}, 0))
	valid := bin(prims.Ge, at, zerosOf(at))
	fv := constView(be, fill, Int64, []int{size})
	out := make([]*Tensor, x.Rank())
	stride := 1
	for a := x.Rank() - 1; a >= 0; a-- {
		d := x.Shape()[a]
		c := at
		if stride != 1 {
			c = bin(prims.Div, c, constView(be, int64(stride), Int64, []int{size}))
		}
		if a > 0 {
			c = bin(prims.Rem, c, constView(be, int64(max(d, 1)), Int64, []int{size}))
		}
		out[a] = sel(valid, c, fv)
		stride *= max(d, 1)
	}
	return out
}

// IndexPut returns a copy of x with values written at the positions
// selected by the i64 index tensors indices, one per leading axis of x, as
// numpy's x[i0, i1, ...] = values (torch's index_put): the index tensors
// broadcast together to a shape B, and position u of B selects the slice
// x[i0[u], i1[u], ..., :]; values (a Go scalar or a tensor) broadcasts to
// B + x.shape[len(indices):]. With accumulate the values are added
// (repeated positions accumulate); without it they are written, and when a
// position repeats the write at the last position of B in row-major order
// wins (a fixed rule, unlike torch's unspecified choice or JAX's "one of
// them"; the gradient goes to that value only). Negative indices count
// from the end. A tensor value is differentiated; its dtype must not
// promote past x's, and a Go scalar is converted to x's dtype. IndexPut
// panics with *Error when x or an index is nil, there are no indices or
// more than x's rank, an index is not an integer tensor, the index shapes
// do not broadcast, values does not fit, accumulate is asked of a bool x,
// or a concrete index lies outside [-n, n); traced indices outside that
// range are dropped.
func IndexPut(x *Tensor, indices []*Tensor, values any, accumulate bool) *Tensor {
	const op = "peel.IndexPut"
	defer interp.Annotate(op)
	checkTensor(op, x)
	k := len(indices)
	if k == 0 || k > x.Rank() {
		errorf(op, "%d index tensors for operand %s of rank %d; want 1 to %d", k, x.TypeString(), x.Rank(), x.Rank())
	}
	if accumulate && x.DType() == Bool {
		errorf(op, "operand %s is bool; accumulating needs a numeric dtype", x.TypeString())
	}
	shapes := make([][]int, k)
	indices = append([]*Tensor(nil), indices...) // the caller's slice is not written
	for j, idx := range indices {
		idx = intIndices(idx)
		indices[j] = idx
		mustIndices(op, idx)
		checkIndexRange(op, idx, x.Shape()[j], j)
		shapes[j] = idx.Shape()
	}
	B := append([]int{}, broadcastShapes(op, shapes...)...)
	lead := 1
	for _, d := range x.Shape()[:k] {
		lead *= d // a product of x's dimensions fits
	}
	rest := x.Shape()[k:]
	be := backendFor(x)
	var lin, ok *Tensor
	stride := 1
	for j := k - 1; j >= 0; j-- {
		n := x.Shape()[j]
		w := wrapIndices(broadcastTo(indices[j], B), n)
		in := bin(prims.And, bin(prims.Ge, w, constView(be, int64(0), Int64, B)), bin(prims.Lt, w, constView(be, int64(n), Int64, B)))
		t := w
		if stride != 1 {
			t = bin(prims.Mul, w, constView(be, int64(stride), Int64, B))
		}
		if lin == nil {
			lin, ok = t, in
		} else {
			lin, ok = bin(prims.Add, lin, t), bin(prims.And, ok, in)
		}
		stride *= n
	}
	lin = sel(ok, lin, constView(be, int64(-1), Int64, B))
	ushape := append(append([]int{}, B...), rest...)
	shapeSize(op, ushape)
	u := valueOperand(op, "values", x, values, ushape)
	xf := reshapeView(x, append([]int{lead}, rest...))
	p := prims.Scatter
	if accumulate {
		p = prims.ScatterAdd
	}
	return reshapeView(interp.Bind1(p, prims.AxisParams{Axis: 0}, xf, lin, u), x.Shape())
}

// IndexPutInPlace writes values into dst at the positions selected by
// indices, as IndexPut does, and returns dst (torch's index_put_). The
// write goes through the in-place mechanism (a copy_ of IndexPut's result
// into dst), so when dst is a view its base and every other alias see it,
// and under Functionalize it is a pure update. It panics with *Error in
// the cases IndexPut does, and when dst is a broadcast view.
func IndexPutInPlace(dst *Tensor, indices []*Tensor, values any, accumulate bool) *Tensor {
	const op = "peel.IndexPutInPlace"
	defer interp.Annotate(op)
	checkTensor(op, dst)
	interp.Bind(prims.CopyInPlace, nil, dst, IndexPut(dst, indices, values, accumulate))
	return dst
}

// MaskedFillInPlace sets the elements of dst where mask is true to value,
// as MaskedFill does, and returns dst (torch's masked_fill_), through the
// in-place mechanism as IndexPutInPlace. It panics with *Error in the
// cases MaskedFill does, and when dst is a broadcast view.
func MaskedFillInPlace(dst, mask *Tensor, value any) *Tensor {
	const op = "peel.MaskedFillInPlace"
	defer interp.Annotate(op)
	checkTensor(op, dst)
	interp.Bind(prims.CopyInPlace, nil, dst, MaskedFill(dst, mask, value))
	return dst
}
