package peel

import (
	"math"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Sorting and selection. One primitive, sort (prims.Sort: a stable sort
// of several operands by the first), carries all of them but
// SearchSorted (prims.SearchSorted): Argsort sorts an iota along with x,
// TopK and Kthvalue slice a sorted tensor, Median and Quantile gather
// from one, Unique scatters one. Their derivatives are those of the sort,
// whose tangent is the input's tangent gathered with the sorting
// permutation (JAX's rule), so a gradient reaches the element each result
// was taken from. The order is numpy's: ascending, NaN after every
// number, -0 equal to +0, ties in their original order.

// SortOption is an option of Sort and Argsort.
type SortOption interface{ applySort(*sortConfig) }

type sortConfig struct{ descending bool }

type sortOption func(*sortConfig)

func (f sortOption) applySort(c *sortConfig) { f(c) }

// Descending sorts from the largest element down: NaN first (it counts
// as the largest, as in torch and in JAX's descending sort), ties still
// in their original order.
func Descending() SortOption { return sortOption(func(c *sortConfig) { c.descending = true }) }

// Stable asks for a stable sort (equal elements keep their order). Every
// sort is stable, so the option changes nothing; it exists for parity
// with numpy's and JAX's stable=True.
func Stable() SortOption { return sortOption(func(*sortConfig) {}) }

func sortConfigOf(opts []SortOption) sortConfig {
	var c sortConfig
	for _, o := range opts {
		if o != nil {
			o.applySort(&c)
		}
	}
	return c
}

// sortAxis checks x and returns its normalized sort axis; rank-0 tensors
// have none.
func sortAxis(op string, x *Tensor, axis int) int {
	checkTensor(op, x)
	if x.Rank() == 0 {
		errorf(op, "cannot sort %s: it has no axis", x.TypeString())
	}
	return normAxis(op, axis, x.Rank())
}

// sortWithIndices sorts x along the normalized axis a and returns the
// sorted values and the positions they came from.
func sortWithIndices(x *Tensor, a int, desc bool) (*Tensor, *Tensor) {
	outs := interp.Bind(prims.Sort, prims.SortParams{Axis: a, Descending: desc}, x, iotaI64(x.Shape(), a))
	return outs[0], outs[1]
}

// sliceAxis returns x[..., start:stop, ...] along the normalized axis a.
func sliceAxis(x *Tensor, a, start, stop int) *Tensor {
	if start == 0 && stop == x.Shape()[a] {
		return x
	}
	p := sliceAll(x.Shape())
	p.Start[a], p.Limit[a] = start, stop
	return interp.Bind1(prims.Slice, p, x)
}

// dropAxis reshapes x, whose axis a has size 1, to remove it.
func dropAxis(x *Tensor, a int) *Tensor {
	s := x.Shape()
	return reshapeView(x, append(append([]int{}, s[:a]...), s[a+1:]...))
}

// Sort returns x sorted along axis (negative counts from the end), in
// ascending order by default and descending with Descending(); the sort
// is stable. NaN sorts after every number (numpy), or first when
// descending; -0 and +0 are equal. Its derivative is the input's tangent
// permuted like the values. Sort panics with *Error when x is nil, has
// rank 0, or the axis is out of range.
func Sort(x *Tensor, axis int, opts ...SortOption) *Tensor {
	const op = "peel.Sort"
	defer interp.Annotate(op)
	a := sortAxis(op, x, axis)
	c := sortConfigOf(opts)
	return interp.Bind1(prims.Sort, prims.SortParams{Axis: a, Descending: c.descending}, x)
}

// Argsort returns the indices (i64) that sort x along axis, so that
// TakeAlongAxis(x, Argsort(x, axis), axis) is Sort(x, axis). The sort is
// stable: equal elements keep their original order, also with
// Descending() (which is therefore not the reverse of the ascending
// indices where there are ties, but what numpy's argsort of -x gives for
// numbers). NaN counts as the largest element, as in Sort. The result is
// an integer tensor and has no derivative. Argsort panics as Sort does.
func Argsort(x *Tensor, axis int, opts ...SortOption) *Tensor {
	const op = "peel.Argsort"
	defer interp.Annotate(op)
	a := sortAxis(op, x, axis)
	c := sortConfigOf(opts)
	_, idx := sortWithIndices(x, a, c.descending)
	return idx
}

// TopK returns the k largest elements of x along its last axis, largest
// first, and their indices (i64), as torch.topk and lax.top_k: equal
// elements come in index order, and NaN counts as larger than every
// number. The values' derivative reaches the elements they were taken
// from. TopK panics with *Error when x is nil or has rank 0, or k is
// negative or larger than the last axis.
func TopK(x *Tensor, k int) (values, indices *Tensor) {
	const op = "peel.TopK"
	defer interp.Annotate(op)
	a := sortAxis(op, x, -1)
	if n := x.Shape()[a]; k < 0 || k > n {
		errorf(op, "k = %d is out of range for the last axis of %s (size %d)", k, x.TypeString(), n)
	}
	v, i := sortWithIndices(x, a, true)
	return sliceAxis(v, a, 0, k), sliceAxis(i, a, 0, k)
}

// Kthvalue returns the k-th smallest element of x along axis (k counts
// from 1, as torch.kthvalue) and its index (i64), with the axis removed.
// Among equal elements the order is the stable one (their original
// order), and NaN counts as larger than every number. The values'
// derivative reaches the element each was taken from. Kthvalue panics
// with *Error when x is nil or has rank 0, the axis is out of range, or k
// is not in [1, n].
func Kthvalue(x *Tensor, k, axis int) (values, indices *Tensor) {
	const op = "peel.Kthvalue"
	defer interp.Annotate(op)
	a := sortAxis(op, x, axis)
	if n := x.Shape()[a]; k < 1 || k > n {
		errorf(op, "k = %d is out of range [1, %d] for axis %d of %s", k, n, axis, x.TypeString())
	}
	v, i := sortWithIndices(x, a, false)
	return dropAxis(sliceAxis(v, a, k-1, k), a), dropAxis(sliceAxis(i, a, k-1, k), a)
}

// gatherLast returns x with the (sorted, distinct, normalized) axes
// moved to the end and flattened into one, and the shape of the other
// axes.
func gatherLast(x *Tensor, ax []int) (*Tensor, []int) {
	red := make([]bool, x.Rank())
	for _, a := range ax {
		red[a] = true
	}
	perm := make([]int, 0, x.Rank())
	var rest []int
	for k := range red {
		if !red[k] {
			perm = append(perm, k)
			rest = append(rest, x.Shape()[k])
		}
	}
	perm = append(perm, ax...)
	red0 := make([]int, len(ax))
	for i, a := range ax {
		red0[i] = x.Shape()[a]
	}
	n := productOr0(red0)
	y := transposeView(x, perm)
	return reshapeView(y, append(append([]int{}, rest...), n)), rest
}

// isNaN returns x != x (all false for integer x).
func isNaN(x *Tensor) *Tensor { return bin(prims.Ne, x, x) }

// nanIfAnyNaN replaces r (of shape rest, or q.shape + rest) by NaN where
// the line of y (shape rest + [n]) holds a NaN: numpy's median and
// quantile propagate NaN.
func nanIfAnyNaN(r, y *Tensor) *Tensor {
	last := []int{y.Rank() - 1}
	cnt := reduceBind(prims.ReduceMax, boolToInt(isNaN(y)), last, false)
	has := bin(prims.Gt, cnt, fill(0, cnt))
	return sel(broadcastTo(has, r.Shape()), fill(math.NaN(), r), r)
}

// Median returns the median of x over axes (all of them when none is
// given), numpy's and jnp.median's: the middle element of the sorted
// values, or the mean of the two middle ones when their number is even.
// It is NaN where the reduced elements hold a NaN or are empty. Integer
// and bool tensors give f64. See Sum for axes and Keep; the derivative
// reaches the middle element(s). Median panics with *Error when x is nil
// or an axis is out of range or repeated.
func Median(x *Tensor, axes ...int) *Tensor {
	const op = "peel.Median"
	defer interp.Annotate(op)
	checkTensor(op, x)
	ax := reduceAxes(op, axes, x.Rank())
	x = toFloat(x)
	y, rest := gatherLast(x, ax)
	n := y.Shape()[len(rest)]
	if n == 0 {
		return un(prims.Copy, broadcastTo(constantOn(backendFor(x), math.NaN(), x.DType()), rest))
	}
	last := len(rest)
	s := interp.Bind1(prims.Sort, prims.SortParams{Axis: last}, y)
	lo, hi := (n-1)/2, n/2
	r := dropAxis(sliceAxis(s, last, lo, lo+1), last)
	if hi != lo {
		b := dropAxis(sliceAxis(s, last, hi, hi+1), last)
		r = bin(prims.Mul, bin(prims.Add, r, b), fill(0.5, r))
	}
	return nanIfAnyNaN(r, y)
}

// Quantile returns the q-th quantile of x over axes (all of them when
// none is given) with numpy's default linear interpolation: at position
// h = q·(n−1) of the sorted values v, v[⌊h⌋] + (h−⌊h⌋)·(v[⌊h⌋+1] −
// v[⌊h⌋]) (v[⌊h⌋] itself where the two are equal, so equal infinities
// stay infinite). q is a Go number or a float tensor of any shape; the
// result has shape q.shape + the shape of x's other axes (numpy's
// layout), and x's float dtype (integer and bool tensors give f64; q is
// converted). The result is NaN where the reduced elements hold a NaN or
// are empty, or where q is outside [0, 1] or NaN (not an error, so a
// concrete and a traced q give the same result, as in JAX). Its
// derivative in x reaches the two elements interpolated; its derivative
// in a tensor q is the slope between them. Quantile panics with *Error
// when x is nil, q is not a number or a tensor, or an axis is out of
// range or repeated.
func Quantile(x *Tensor, q any, axes ...int) *Tensor {
	const op = "peel.Quantile"
	defer interp.Annotate(op)
	checkTensor(op, x)
	ax := reduceAxes(op, axes, x.Rank())
	x = toFloat(x)
	var qt *Tensor
	switch v := q.(type) {
	case *Tensor:
		checkTensor(op, v)
		qt = v
		if !v.DType().IsFloat() {
			qt = toFloat(v)
		}
		if qt.DType() != x.DType() {
			qt = interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: x.DType()}, qt)
		}
	default:
		if _, ok := scalarDType(q); !ok {
			errorf(op, "q must be a number or a tensor, not %T", q)
		}
		qt = scalarOn(backendFor(x), q, x.DType())
	}
	y, rest := gatherLast(x, ax)
	last := len(rest)
	n := y.Shape()[last]
	qs := qt.Shape()
	outShape := append(append([]int{}, qs...), rest...)
	if n == 0 {
		return un(prims.Copy, broadcastTo(constantOn(backendFor(x), math.NaN(), x.DType()), outShape))
	}
	s := interp.Bind1(prims.Sort, prims.SortParams{Axis: last}, y)
	// Positions, in q's shape.
	h := bin(prims.Mul, qt, fill(float64(n-1), qt))
	fl := un(prims.Floor, h)
	lo := interp.Bind1(prims.ConvertElementType, prims.ConvertParams{DType: Int64}, fl)
	lo = bin(prims.Max, bin(prims.Min, lo, fill(float64(n-1), lo)), fill(0, lo))
	hi := bin(prims.Min, bin(prims.Add, lo, fill(1, lo)), fill(float64(n-1), lo))
	g := bin(prims.Sub, h, fl)
	// Gather along the sorted axis: shape rest + qs, then qs first.
	a := interp.Bind1(prims.Gather, prims.AxisParams{Axis: last}, s, lo)
	b := interp.Bind1(prims.Gather, prims.AxisParams{Axis: last}, s, hi)
	perm := make([]int, 0, len(outShape))
	for k := range qs {
		perm = append(perm, last+k)
	}
	for k := range rest {
		perm = append(perm, k)
	}
	a, b = transposeView(a, perm), transposeView(b, perm)
	gb := interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: outShape, Dims: seqInts(len(qs))}, g)
	r := bin(prims.Add, a, bin(prims.Mul, bin(prims.Sub, b, a), gb))
	r = sel(bin(prims.Eq, a, b), a, r)
	// NaN where a line holds NaN, or q is outside [0, 1] (or NaN).
	bad := bin(prims.Or, bin(prims.Lt, qt, fill(0, qt)), bin(prims.Gt, qt, fill(1, qt)))
	bad = bin(prims.Or, bad, isNaN(qt))
	bad = interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: outShape, Dims: seqInts(len(qs))}, bad)
	r = sel(bad, fill(math.NaN(), r), r)
	return nanIfAnyNaN(r, y)
}

// seqInts returns 0, 1, …, n-1.
func seqInts(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// Side says which index SearchSorted returns for values equal to elements
// of the sorted tensor. Its zero value is SideLeft.
type Side int

const (
	// SideLeft gives the first position at which the value can be
	// inserted keeping the order (numpy's side='left').
	SideLeft Side = iota
	// SideRight gives the last such position (numpy's side='right').
	SideRight
)

// SearchSorted returns, for each element v of values, the index (i64) at
// which v would be inserted into the 1-d tensor sorted (ascending, NaN
// last, as Sort leaves it) to keep it sorted, as numpy's searchsorted:
// with SideLeft the number of elements less than v, with SideRight the
// number less than or equal to v, in Sort's order (−0 equals +0; a NaN
// value goes after the numbers, and with SideRight after the NaNs too).
// The operands are promoted to one dtype (bool as i64); the result has
// values' shape. It is a binary search per value (prims.SearchSorted);
// an unsorted operand gives some index, never an error. It has no
// derivative. It panics with *Error when an operand is nil, sorted is not
// 1-d, or side is neither SideLeft nor SideRight.
func SearchSorted(sorted, values *Tensor, side Side) *Tensor {
	const op = "peel.SearchSorted"
	defer interp.Annotate(op)
	checkTensor(op, sorted)
	checkTensor(op, values)
	if sorted.Rank() != 1 {
		errorf(op, "the sorted tensor %s must be 1-d", sorted.TypeString())
	}
	if side != SideLeft && side != SideRight {
		errorf(op, "side %d is neither SideLeft nor SideRight", side)
	}
	d := PromoteTypes(sorted.DType(), values.DType())
	if d == Bool {
		d = Int64
	}
	return interp.Bind1(prims.SearchSorted, prims.SearchParams{Right: side == SideRight}, AsType(sorted, d), AsType(values, d))
}

// Unique returns the sorted distinct elements of x (flattened) in a 1-d
// tensor of the static length size, as jnp.unique(x, size=size,
// fill_value=fill): when x has fewer distinct elements the rest is fill
// (converted to x's dtype), when it has more only the size smallest are
// kept. NaNs count as one element (numpy's equal_nan), sorted last; -0
// and +0 are one element. Because the length is static, Unique works
// under every transform. The derivative of each distinct value reaches
// its first occurrence in the sorted order. Unique panics with *Error
// when x is nil or size is negative.
func Unique(x *Tensor, size int, fill float64) *Tensor {
	const op = "peel.Unique"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if size < 0 {
		errorf(op, "size %d is negative", size)
	}
	be := backendFor(x)
	out := broadcastTo(constantOn(be, fill, x.DType()), []int{size})
	n := x.Size()
	if n == 0 || size == 0 {
		return un(prims.Copy, out)
	}
	s := interp.Bind1(prims.Sort, prims.SortParams{Axis: 0}, reshapeView(x, []int{n}))
	// first[i]: s[i] starts a new run (s[0] always does).
	cur, prev := sliceAxis(s, 0, 1, n), sliceAxis(s, 0, 0, n-1)
	diff := bin(prims.Ne, cur, prev)
	if x.DType().IsFloat() {
		both := bin(prims.And, isNaN(cur), isNaN(prev))
		diff = bin(prims.And, diff, un(prims.Not, both))
	}
	first := interp.Bind1(prims.Concatenate, prims.AxisParams{Axis: 0},
		broadcastTo(constantOn(be, 1, Bool), []int{1}), diff)
	// Position of each run's first element: its rank among the firsts;
	// the other elements go to size, which scatter drops.
	pos := bin(prims.Sub, interp.Bind1(prims.Cumsum, prims.CumsumParams{Axis: 0}, boolToInt(first)), fillI64(be, 1, n))
	pos = sel(first, pos, fillI64(be, int64(size), n))
	return interp.Bind1(prims.Scatter, prims.AxisParams{Axis: 0}, out, pos, s)
}
