package peel

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Shape operations: views, joining and splitting, padding. The view
// operations (Reshape, Transpose, Permute, MoveAxis, Squeeze, Unsqueeze,
// Flatten, BroadcastTo, Meshgrid, Slice, Narrow, Select, Index, Split,
// Unbind, Chunk) are built only from the view primitives (reshape,
// transpose, slice, broadcast_in_dim), so at eval level their results
// alias the operand: a write into the result (CopyInto, AddInPlace, …) is
// visible through the operand and every other alias. The rearrangements
// (Flip, Roll, Rot90, Tile, RepeatInterleave) are in shape_rearrange.go,
// the matrix-structure operations in shape_matrix.go.

// reshapeView binds the reshape primitive unless the shape is unchanged.
func reshapeView(x *Tensor, shape []int) *Tensor {
	if interp.ShapeEqual(x.Shape(), shape) {
		return x
	}
	return interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: shape}, x)
}

// transposeView binds the transpose primitive unless perm is the identity.
func transposeView(x *Tensor, perm []int) *Tensor {
	for i, p := range perm {
		if p != i {
			return interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: perm}, x)
		}
	}
	return x
}

// sliceAll returns slice parameters that keep every element of shape.
func sliceAll(shape []int) prims.SliceParams {
	// The three lists in one allocation (each capped, so an append to
	// one cannot write into the next).
	r := len(shape)
	b := make([]int, 3*r)
	p := prims.SliceParams{Start: b[:r:r], Limit: b[r : 2*r : 2*r], Stride: b[2*r:]}
	copy(p.Limit, shape)
	for i := range p.Stride {
		p.Stride[i] = 1
	}
	return p
}

// Reshape returns x with a new shape of the same size; one dimension may
// be -1, which is inferred. No shape means rank 0. The result is a view of
// x when x's layout allows one (always when x is contiguous); otherwise it
// is a copy, as in torch. Reshape panics with *Error when x is nil, when a
// dimension is negative other than a single -1, when -1 cannot be inferred,
// when the shape is too large (its number of elements overflows int), or
// when the sizes differ.
func Reshape(x *Tensor, shape ...int) *Tensor {
	defer interp.Annotate("peel.Reshape")
	checkTensor("peel.Reshape", x)
	out := make([]int, len(shape))
	infer := -1
	for i, d := range shape {
		switch {
		case d == -1 && infer < 0:
			infer = i
			d = 1 // for the size of the known dimensions
		case d == -1:
			errorf("peel.Reshape", "shape %v has more than one -1", shape)
		case d < 0:
			errorf("peel.Reshape", "shape %v has a negative dimension", shape)
		}
		out[i] = d
	}
	known := shapeSize("peel.Reshape", out)
	n := x.Size()
	if infer >= 0 {
		if known == 0 {
			errorf("peel.Reshape", "cannot infer the -1 in shape %v: the other dimensions hold no elements (input %s)", shape, x.TypeString())
		}
		if n%known != 0 {
			errorf("peel.Reshape", "cannot reshape %s (%d elements) into shape %v", x.TypeString(), n, shape)
		}
		out[infer] = n / known
	} else if known != n {
		errorf("peel.Reshape", "cannot reshape %s (%d elements) into shape %v (%d elements)", x.TypeString(), n, shape, known)
	}
	return reshapeView(x, out)
}

// Transpose permutes x's axes: result axis i is x's axis perm[i] (negative
// entries count from the end). With no perm the axes are reversed. The
// result is a view of x. Transpose panics with *Error when x is nil or perm
// is not a permutation of x's axes.
func Transpose(x *Tensor, perm ...int) *Tensor {
	defer interp.Annotate("peel.Transpose")
	checkTensor("peel.Transpose", x)
	r := x.Rank()
	if len(perm) == 0 && r > 0 {
		p := make([]int, r)
		for i := range p {
			p[i] = r - 1 - i
		}
		return transposeView(x, p)
	}
	return transposeView(x, permArg("peel.Transpose", perm, r))
}

// Permute is Transpose with a required permutation (torch's permute). It
// panics with *Error when x is nil or perm is not a permutation of x's
// axes.
func Permute(x *Tensor, perm ...int) *Tensor {
	defer interp.Annotate("peel.Permute")
	checkTensor("peel.Permute", x)
	return transposeView(x, permArg("peel.Permute", perm, x.Rank()))
}

// MoveAxis moves axis src of x to position dst, keeping the order of the
// other axes. The result is a view of x. MoveAxis panics with *Error when x
// is nil or an axis is out of range.
func MoveAxis(x *Tensor, src, dst int) *Tensor {
	defer interp.Annotate("peel.MoveAxis")
	checkTensor("peel.MoveAxis", x)
	r := x.Rank()
	s := normAxis("peel.MoveAxis", src, r)
	d := normAxis("peel.MoveAxis", dst, r)
	perm := make([]int, 0, r)
	for i := 0; i < r; i++ {
		if i != s {
			perm = append(perm, i)
		}
	}
	perm = append(perm[:d], append([]int{s}, perm[d:]...)...)
	return transposeView(x, perm)
}

// Squeeze removes the given axes of x, which must have size 1; with no
// axes it removes every size-1 axis. The result is a view of x. Squeeze
// panics with *Error when x is nil, an axis is out of range or repeated,
// or an axis does not have size 1.
func Squeeze(x *Tensor, axes ...int) *Tensor {
	defer interp.Annotate("peel.Squeeze")
	checkTensor("peel.Squeeze", x)
	shape := x.Shape()
	drop := make([]bool, len(shape))
	if len(axes) == 0 {
		for i, d := range shape {
			drop[i] = d == 1
		}
	} else {
		for i, a := range normAxes("peel.Squeeze", axes, len(shape)) {
			if shape[a] != 1 {
				errorf("peel.Squeeze", "cannot squeeze axis %d of size %d (input %s)", axes[i], shape[a], x.TypeString())
			}
			drop[a] = true
		}
	}
	out := make([]int, 0, len(shape))
	for i, d := range shape {
		if !drop[i] {
			out = append(out, d)
		}
	}
	return reshapeView(x, out)
}

// Unsqueeze inserts a size-1 axis at position axis of the result, which
// lies in [-rank-1, rank] (negative counts from the end of the result).
// The result is a view of x. Unsqueeze panics with *Error when x is nil or
// the axis is out of range.
func Unsqueeze(x *Tensor, axis int) *Tensor {
	defer interp.Annotate("peel.Unsqueeze")
	checkTensor("peel.Unsqueeze", x)
	a := normAxis("peel.Unsqueeze", axis, x.Rank()+1)
	shape := x.Shape()
	out := make([]int, 0, len(shape)+1)
	out = append(append(append(out, shape[:a]...), 1), shape[a:]...)
	return reshapeView(x, out)
}

// Flatten merges axes start through end (inclusive) of x into one, as
// torch.flatten(x, start, end): Flatten(x) makes x 1-D (a rank-0 tensor
// becomes shape [1]), Flatten(x, 1) keeps the batch axis of a batch of
// images and flattens each, Flatten(x, 1, 2) merges axes 1 and 2 only.
// axes is the optional start (default 0) and end (default -1); negative
// axes count from the end. It is a view of x when x's layout allows one,
// as for Reshape. Flatten panics with *Error when x is nil, an axis is
// out of range, end comes before start, or more than two axes are
// given.
func Flatten(x *Tensor, axes ...int) *Tensor {
	const op = "peel.Flatten"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if len(axes) > 2 {
		errorf(op, "%d axes (start, end): want at most 2", len(axes))
	}
	if x.Rank() == 0 {
		if len(axes) > 0 {
			for _, a := range axes {
				normAxis(op, a, 1)
			}
		}
		return reshapeView(x, []int{1})
	}
	start, end := 0, x.Rank()-1
	if len(axes) > 0 {
		start = normAxis(op, axes[0], x.Rank())
	}
	if len(axes) > 1 {
		end = normAxis(op, axes[1], x.Rank())
	}
	if end < start {
		errorf(op, "end axis %d comes before start axis %d of %s", axes[1], axes[0], x.TypeString())
	}
	shape := x.Shape()
	out := append([]int{}, shape[:start]...)
	out = append(out, backend.ShapeSize(shape[start:end+1]))
	return reshapeView(x, append(out, shape[end+1:]...))
}

// BroadcastTo broadcasts x to shape by numpy's rules: x's axes align with
// the trailing axes of shape and each has size 1 or the target size. The
// result is a view of x whose elements share memory, so it cannot be
// written to. BroadcastTo panics with *Error when x is nil, shape has a
// negative dimension or is too large (its number of elements overflows
// int), or x cannot be broadcast to it.
func BroadcastTo(x *Tensor, shape ...int) *Tensor {
	defer interp.Annotate("peel.BroadcastTo")
	checkTensor("peel.BroadcastTo", x)
	shapeSize("peel.BroadcastTo", shape)
	xs := x.Shape()
	if len(xs) > len(shape) {
		errorf("peel.BroadcastTo", "cannot broadcast %s to shape %v of lower rank", x.TypeString(), shape)
	}
	off := len(shape) - len(xs)
	for i, d := range shape {
		if d < 0 {
			errorf("peel.BroadcastTo", "shape %v has a negative dimension", shape)
		}
		if i >= off && xs[i-off] != 1 && xs[i-off] != d {
			errorf("peel.BroadcastTo", "cannot broadcast %s to shape %v: dimension %d has size %d, not 1 or %d", x.TypeString(), shape, i-off, xs[i-off], d)
		}
	}
	return broadcastTo(x, append([]int(nil), shape...))
}

// Slice takes the elements start, start+step, … below stop along axis, as
// Python's x[start:stop:step]. Negative start and stop count from the end;
// start ≥ stop gives an empty axis. The result is a view of x. Slice panics
// with *Error when x is nil, the axis is out of range, start or stop lies
// outside [-n, n] for an axis of size n (there is no silent clamping), or
// step < 1.
func Slice(x *Tensor, axis, start, stop, step int) *Tensor {
	defer interp.Annotate("peel.Slice")
	checkTensor("peel.Slice", x)
	a := normAxis("peel.Slice", axis, x.Rank())
	n := x.Shape()[a]
	if step < 1 {
		errorf("peel.Slice", "step %d must be at least 1", step)
	}
	bound := func(what string, v int) int {
		if v < -n || v > n {
			errorf("peel.Slice", "%s %d is out of range for axis %d of size %d", what, v, axis, n)
		}
		if v < 0 {
			v += n
		}
		return v
	}
	s, e := bound("start", start), bound("stop", stop)
	e = max(e, s)
	if s == 0 && e == n && step == 1 {
		return x
	}
	p := sliceAll(x.Shape())
	p.Start[a], p.Limit[a], p.Stride[a] = s, e, step
	return interp.Bind1(prims.Slice, p, x)
}

// Narrow returns length elements of x along axis starting at start
// (negative counts from the end), as torch's narrow. The result is a view
// of x. Narrow panics with *Error when x is nil, the axis is out of range,
// or the range [start, start+length) does not fit in the axis.
func Narrow(x *Tensor, axis, start, length int) *Tensor {
	defer interp.Annotate("peel.Narrow")
	checkTensor("peel.Narrow", x)
	a := normAxis("peel.Narrow", axis, x.Rank())
	n := x.Shape()[a]
	s := start
	if s < 0 {
		s += n
	}
	if s < 0 || s > n || length < 0 || length > n-s {
		errorf("peel.Narrow", "range start %d length %d is out of range for axis %d of size %d", start, length, axis, n)
	}
	if s == 0 && length == n {
		return x
	}
	p := sliceAll(x.Shape())
	p.Start[a], p.Limit[a] = s, s+length
	return interp.Bind1(prims.Slice, p, x)
}

// Select returns the slice of x at index along axis, removing the axis
// (x[..., index, ...]); a negative index counts from the end. The result
// is a view of x. Select panics with *Error when x is nil, or the axis or
// index is out of range.
func Select(x *Tensor, axis, index int) *Tensor {
	defer interp.Annotate("peel.Select")
	checkTensor("peel.Select", x)
	a := normAxis("peel.Select", axis, x.Rank())
	shape := x.Shape()
	i := indexArg("peel.Select", index, shape[a], axis)
	p := sliceAll(shape)
	p.Start[a], p.Limit[a] = i, i+1
	y := x
	if shape[a] != 1 {
		y = interp.Bind1(prims.Slice, p, x)
	}
	out := append(append(make([]int, 0, len(shape)-1), shape[:a]...), shape[a+1:]...)
	return reshapeView(y, out)
}

// Index selects along x's leading axes, as x[i, j] does: the result drops
// the first len(indices) axes. Negative indices count from the end. The
// result is a view of x (x itself with no indices). Index panics with
// *Error when x is nil, there are more indices than axes, or an index is
// out of range.
func Index(x *Tensor, indices ...int) *Tensor {
	defer interp.Annotate("peel.Index")
	checkTensor("peel.Index", x)
	shape := x.Shape()
	if len(indices) > len(shape) {
		errorf("peel.Index", "%d indices for a tensor of rank %d (%s)", len(indices), len(shape), x.TypeString())
	}
	if len(indices) == 0 {
		return x
	}
	p := sliceAll(shape)
	sliced := false
	for k, idx := range indices {
		i := indexArg("peel.Index", idx, shape[k], k)
		p.Start[k], p.Limit[k] = i, i+1
		sliced = sliced || shape[k] != 1
	}
	y := x
	if sliced {
		y = interp.Bind1(prims.Slice, p, x)
	}
	return reshapeView(y, append([]int{}, shape[len(indices):]...))
}

// Concat joins the tensors along axis (negative counts from the end).
// Their dtypes are promoted to one; their shapes agree except along axis.
// The result is a new tensor. Concat panics with *Error when ts is empty
// or holds a nil tensor, the tensors are rank 0 or differ in rank, the
// axis is out of range, or the shapes differ off the axis.
func Concat(ts []*Tensor, axis int) *Tensor {
	defer interp.Annotate("peel.Concat")
	if len(ts) == 0 {
		errorf("peel.Concat", "no tensors to concatenate")
	}
	vals := make([]any, len(ts))
	for i, t := range ts {
		if t == nil {
			errorf("peel.Concat", "tensor %d is nil", i)
		}
		vals[i] = t
	}
	r := ts[0].Rank()
	if r == 0 {
		errorf("peel.Concat", "cannot concatenate rank-0 tensors (use Stack)")
	}
	a := normAxis("peel.Concat", axis, r)
	for i, t := range ts {
		if t.Rank() != r {
			errorf("peel.Concat", "tensor %d is %s, tensor 0 is %s: ranks differ", i, t.TypeString(), ts[0].TypeString())
		}
		for k, d := range t.Shape() {
			if k != a && d != ts[0].Shape()[k] {
				errorf("peel.Concat", "tensor %d is %s, tensor 0 is %s: dimension %d differs and is not the concatenation axis %d", i, t.TypeString(), ts[0].TypeString(), k, axis)
			}
		}
	}
	d := resultDType("peel.Concat", vals)
	args := make([]*Tensor, len(ts))
	for i, t := range ts {
		args[i] = AsType(t, d)
	}
	return interp.Bind1(prims.Concatenate, prims.AxisParams{Axis: a}, args...)
}

// Stack joins tensors of one shape along a new axis at position axis of
// the result, in [-rank-1, rank]. Dtypes are promoted to one. Stack panics
// with *Error when ts is empty or holds a nil tensor, the shapes differ, or
// the axis is out of range.
func Stack(ts []*Tensor, axis int) *Tensor {
	defer interp.Annotate("peel.Stack")
	if len(ts) == 0 {
		errorf("peel.Stack", "no tensors to stack")
	}
	for i, t := range ts {
		if t == nil {
			errorf("peel.Stack", "tensor %d is nil", i)
		}
		if !interp.ShapeEqual(t.Shape(), ts[0].Shape()) {
			errorf("peel.Stack", "tensor %d is %s, tensor 0 is %s: shapes differ", i, t.TypeString(), ts[0].TypeString())
		}
	}
	a := normAxis("peel.Stack", axis, ts[0].Rank()+1)
	us := make([]*Tensor, len(ts))
	for i, t := range ts {
		us[i] = Unsqueeze(t, a)
	}
	return Concat(us, a)
}

// Split splits x along axis into consecutive pieces of the given
// sizes, which must sum to the axis's size (numpy's split with sizes; the
// name Split belongs to the PRNG key split). The pieces are views of x.
// Split panics with *Error when x is nil, the axis is out of range, a
// size is negative, or the sizes do not sum to the axis's size.
func Split(x *Tensor, sizes []int, axis int) []*Tensor {
	defer interp.Annotate("peel.Split")
	checkTensor("peel.Split", x)
	a := normAxis("peel.Split", axis, x.Rank())
	n, sum := x.Shape()[a], 0
	for _, s := range sizes {
		if s < 0 {
			errorf("peel.Split", "negative size in %v", sizes)
		}
		var ok bool
		if sum, ok = backend.AddSize(sum, s); !ok {
			errorf("peel.Split", "sizes %v sum to more than an int holds, but axis %d of %s has size %d", sizes, axis, x.TypeString(), n)
		}
	}
	if sum != n {
		errorf("peel.Split", "sizes %v sum to %d, but axis %d of %s has size %d", sizes, sum, axis, x.TypeString(), n)
	}
	out := make([]*Tensor, len(sizes))
	start := 0
	for i, s := range sizes {
		out[i] = Narrow(x, a, start, s)
		start += s
	}
	return out
}

// Pad pads x with value: pads[i] = {before, after} elements along axis i.
// A negative count removes elements instead (crops). value is converted to
// x's dtype as AsType converts it (saturating for integers). The
// result is a new tensor. Pad panics with *Error when x is nil, pads does
// not have one entry per axis, a crop removes more than the axis holds,
// or the result is too large (its number of elements overflows int, or it
// exceeds the allocation limit).
func Pad(x *Tensor, pads [][2]int, value float64) *Tensor {
	defer interp.Annotate("peel.Pad")
	checkTensor("peel.Pad", x)
	r := x.Rank()
	if len(pads) != r {
		errorf("peel.Pad", "%d pad pairs for a tensor of rank %d (%s)", len(pads), r, x.TypeString())
	}
	p := prims.PadParams{Low: make([]int, r), High: make([]int, r), Interior: make([]int, r)}
	out := make([]int, r)
	for i, pd := range pads {
		d := x.Shape()[i]
		// d ≥ 0, so d+min(…, 0) cannot overflow.
		if d+min(pd[0], 0) < 0 || d+min(pd[1], 0) < 0 {
			errorf("peel.Pad", "padding %v removes more than axis %d of size %d holds", pd, i, d)
		}
		n, err := prims.PadLen(d, pd[0], pd[1], 0)
		if err != nil {
			errorf("peel.Pad", "padding %v of axis %d of size %d: %v", pd, i, d, err)
		}
		p.Low[i], p.High[i], out[i] = pd[0], pd[1], n
	}
	checkResult("peel.Pad", x.DType(), out, x)
	return interp.Bind1(prims.Pad, p, x, scalarOn(backendFor(x), value, x.DType()))
}

// Clone returns a copy of x in a fresh buffer: writes to the copy do not
// affect x and vice versa. It panics with *Error when x is nil.
func Clone(x *Tensor) *Tensor {
	defer interp.Annotate("peel.Clone")
	checkTensor("peel.Clone", x)
	return interp.Bind1(prims.Copy, nil, x)
}

// checkPieces panics with *Error naming op when n result tensors (views
// of x, which may be a broadcast view of a huge shape) would not fit in
// memory, counting one word each as a lower bound.
func checkPieces(op string, n int, x *Tensor) {
	if int64(n) > MaxAllocBytes()/8 {
		errorf(op, "too large: %d result tensors of %s exceed the allocation limit", n, x.TypeString())
	}
}

// Unbind returns the slices of x along axis, with the axis removed, as
// torch's unbind: Select(x, axis, i) for each i. They are views of x; an
// empty axis gives no tensors. Unbind panics with *Error when x is nil,
// the axis is out of range, or the tensors would not fit in memory (an
// axis of a huge broadcast view).
func Unbind(x *Tensor, axis int) []*Tensor {
	const op = "peel.Unbind"
	defer interp.Annotate(op)
	checkTensor(op, x)
	a := normAxis(op, axis, x.Rank())
	n := x.Shape()[a]
	shape := x.Shape()
	rest := append(append([]int{}, shape[:a]...), shape[a+1:]...)
	checkPieces(op, n, x)
	out := make([]*Tensor, n)
	for i := range out {
		p := sliceAll(shape)
		p.Start[a], p.Limit[a] = i, i+1
		y := x
		if n != 1 {
			y = interp.Bind1(prims.Slice, p, x)
		}
		out[i] = reshapeView(y, rest)
	}
	return out
}

// Chunk splits x along axis into n pieces as torch's chunk: each piece
// has ceil(size/n) elements along the axis except the last, which is
// smaller, so fewer than n pieces come back when the size does not fill
// them (size 5 in 4 chunks gives sizes 2, 2, 1). An empty axis gives n
// empty pieces. The pieces are views of x. Chunk panics with *Error when
// x is nil, n < 1, the axis is out of range, or the pieces would not fit
// in memory (an empty axis in MaxInt pieces, a huge broadcast view).
func Chunk(x *Tensor, n, axis int) []*Tensor {
	const op = "peel.Chunk"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if n < 1 {
		errorf(op, "number of chunks %d must be at least 1", n)
	}
	a := normAxis(op, axis, x.Rank())
	size := x.Shape()[a]
	if size == 0 {
		checkPieces(op, n, x)
		out := make([]*Tensor, n)
		for i := range out {
			out[i] = x
		}
		return out
	}
	c := size/n + min(size%n, 1)
	checkPieces(op, size/c+min(size%c, 1), x)
	var out []*Tensor
	for start := 0; start < size; start += c {
		l := min(c, size-start)
		if start == 0 && l == size {
			out = append(out, x)
			continue
		}
		p := sliceAll(x.Shape())
		p.Start[a], p.Limit[a] = start, start+l
		out = append(out, interp.Bind1(prims.Slice, p, x))
	}
	return out
}

// Meshgrid returns coordinate grids of the 1-D (or rank-0, taken as
// length 1) tensors xs, as numpy's meshgrid: with indexing "ij" every
// result has shape [len(xs[0]), len(xs[1]), ...] and result i varies
// along axis i; with "xy" (Cartesian, numpy's default) the first two
// axes are swapped, so for two inputs the results have shape [len(xs[1]),
// len(xs[0])]. Each result keeps its input's dtype and is a broadcast
// view of it (its elements share memory, so it cannot be written to; Clone
// it first). No inputs give no results. Meshgrid panics with *Error when
// indexing is neither "ij" nor "xy", a tensor is nil, or one has rank
// above 1.
func Meshgrid(indexing string, xs ...*Tensor) []*Tensor {
	const op = "peel.Meshgrid"
	defer interp.Annotate(op)
	if indexing != "ij" && indexing != "xy" {
		errorf(op, "indexing %q is neither \"ij\" nor \"xy\"", indexing)
	}
	shape := make([]int, len(xs))
	for i, x := range xs {
		if x == nil {
			errorf(op, "tensor %d is nil", i)
		}
		if x.Rank() > 1 {
			errorf(op, "tensor %d is %s; need rank 0 or 1", i, x.TypeString())
		}
		shape[i] = x.Size()
	}
	pos := make([]int, len(xs))
	for i := range pos {
		pos[i] = i
	}
	if indexing == "xy" && len(xs) >= 2 {
		shape[0], shape[1] = shape[1], shape[0]
		pos[0], pos[1] = 1, 0
	}
	shapeSize(op, shape)
	out := make([]*Tensor, len(xs))
	for i, x := range xs {
		v := reshapeView(x, []int{x.Size()})
		out[i] = interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: append([]int{}, shape...), Dims: []int{pos[i]}}, v)
	}
	return out
}
