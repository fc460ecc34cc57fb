package peel

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Rearrangements: the shape operations that move or repeat elements
// rather than view them (Flip, Roll, Rot90, Tile, RepeatInterleave).
// Each is a composite of existing primitives (rev, slices,
// concatenation, broadcasts, reshapes), so every transform's rules apply
// to it unchanged.

// Flip reverses the order of x's elements along the given axes (negative
// counts from the end); with no axes it reverses every axis. The result is
// a new tensor. Flip panics with *Error when x is nil or an axis is out of
// range or repeated.
func Flip(x *Tensor, axes ...int) *Tensor {
	defer interp.Annotate("peel.Flip")
	checkTensor("peel.Flip", x)
	var ax []int
	if len(axes) == 0 {
		ax = make([]int, x.Rank())
		for i := range ax {
			ax[i] = i
		}
	} else {
		ax = normAxes("peel.Flip", axes, x.Rank())
	}
	return interp.Bind1(prims.Rev, prims.RevParams{Axes: ax}, x)
}

// Tile repeats x reps[i] times along axis i, as numpy's tile: when reps is
// shorter than x's rank it is padded with leading 1s, and when it is longer
// x gets leading size-1 axes. The result is a new tensor. Tile panics with
// *Error when x is nil, a repetition count is negative, or the result is
// too large (its number of elements overflows int, or it exceeds the
// allocation limit).
func Tile(x *Tensor, reps ...int) *Tensor {
	defer interp.Annotate("peel.Tile")
	checkTensor("peel.Tile", x)
	for _, r := range reps {
		if r < 0 {
			errorf("peel.Tile", "negative repetition count in %v", reps)
		}
	}
	r := max(len(reps), x.Rank())
	shape := make([]int, r)
	rp := make([]int, r)
	for i := range r {
		shape[i], rp[i] = 1, 1
	}
	copy(shape[r-x.Rank():], x.Shape())
	copy(rp[r-len(reps):], reps)
	// Broadcast x (seen as shape) to [rp0, s0, rp1, s1, …], materialize,
	// then merge each pair.
	y := reshapeView(x, shape)
	wide := make([]int, 2*r)
	dims := make([]int, r)
	out := make([]int, r)
	for i := range r {
		wide[2*i], wide[2*i+1] = rp[i], shape[i]
		dims[i] = 2*i + 1
		var ok bool
		if out[i], ok = backend.MulSize(rp[i], shape[i]); !ok {
			errorf("peel.Tile", "too large: %d repetitions of axis %d of size %d overflow int (input %s)", rp[i], i, shape[i], x.TypeString())
		}
	}
	checkResult("peel.Tile", x.DType(), out, x)
	y = interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: wide, Dims: dims}, y)
	y = interp.Bind1(prims.Copy, nil, y)
	return reshapeView(y, out)
}

// roll rolls axis a of x by shift.
func roll(x *Tensor, shift, a int) *Tensor {
	n := x.Shape()[a]
	if n == 0 {
		return x
	}
	s := shift % n
	if s < 0 {
		s += n
	}
	if s == 0 {
		return x
	}
	hi := sliceAll(x.Shape())
	hi.Start[a] = n - s
	lo := sliceAll(x.Shape())
	lo.Limit[a] = n - s
	return interp.Bind1(prims.Concatenate, prims.AxisParams{Axis: a},
		interp.Bind1(prims.Slice, hi, x), interp.Bind1(prims.Slice, lo, x))
}

// Roll shifts x's elements by shift positions along each of the given
// axes, those pushed past the end coming back at the start, as numpy's
// roll: out[..., (i+shift) mod n, ...] = x[..., i, ...]. A negative shift
// rolls the other way. With no axes x is rolled as if flattened and then
// given its shape back. The result is a new tensor (x itself when nothing
// moves). Roll panics with *Error when x is nil or an axis is out of range
// or repeated.
func Roll(x *Tensor, shift int, axes ...int) *Tensor {
	const op = "peel.Roll"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if len(axes) == 0 {
		flat := reshapeView(x, []int{x.Size()})
		out := roll(flat, shift, 0)
		if out == flat {
			return x
		}
		return reshapeView(out, x.Shape())
	}
	out := x
	for _, a := range normAxes(op, axes, x.Rank()) {
		out = roll(out, shift, a)
	}
	return out
}

// Rot90 rotates x by 90 degrees k times in the plane of axes [a0, a1],
// from the first axis towards the second, as numpy's rot90: for a matrix
// and axes {0, 1}, k = 1 gives out[i, j] = x[j, n-1-i] with n =
// x.shape[1]. Negative k rotates the other way. The result is a new
// tensor (x itself for k ≡ 0 mod 4). Rot90 panics with *Error when x is
// nil or has rank below 2, an axis is out of range, or the axes are the
// same axis.
func Rot90(x *Tensor, k int, axes [2]int) *Tensor {
	const op = "peel.Rot90"
	defer interp.Annotate(op)
	checkTensor(op, x)
	if x.Rank() < 2 {
		errorf(op, "operand %s has rank %d; need at least 2", x.TypeString(), x.Rank())
	}
	a0 := normAxis(op, axes[0], x.Rank())
	a1 := normAxis(op, axes[1], x.Rank())
	if a0 == a1 {
		errorf(op, "axes %v are the same axis of %s", axes, x.TypeString())
	}
	k %= 4
	if k < 0 {
		k += 4
	}
	perm := make([]int, x.Rank())
	for i := range perm {
		perm[i] = i
	}
	perm[a0], perm[a1] = a1, a0
	rev := func(y *Tensor, a int) *Tensor {
		return interp.Bind1(prims.Rev, prims.RevParams{Axes: []int{a}}, y)
	}
	switch k {
	case 1:
		return transposeView(rev(x, a1), perm)
	case 2:
		return interp.Bind1(prims.Rev, prims.RevParams{Axes: []int{min(a0, a1), max(a0, a1)}}, x)
	case 3:
		return rev(transposeView(x, perm), a1)
	}
	return x
}

// RepeatInterleave repeats each element of x along axis, as torch's
// repeat_interleave (numpy's repeat): with one count every slice along
// the axis is repeated repeats[0] times; with one count per slice (len
// equal to the axis's size) slice i is repeated repeats[i] times, so the
// axis gets sum(repeats) elements. The counts are static. The result is a
// new tensor. RepeatInterleave panics with *Error when x is nil, the axis
// is out of range, repeats is empty or has neither 1 nor n entries, a
// count is negative, or the result is too large.
func RepeatInterleave(x *Tensor, repeats []int, axis int) *Tensor {
	const op = "peel.RepeatInterleave"
	defer interp.Annotate(op)
	checkTensor(op, x)
	a := normAxis(op, axis, x.Rank())
	n := x.Shape()[a]
	if len(repeats) != 1 && len(repeats) != n {
		errorf(op, "%d repetition counts for axis %d of size %d of %s; want 1 or %d", len(repeats), axis, n, x.TypeString(), n)
	}
	total := 0
	for _, r := range repeats {
		if r < 0 {
			errorf(op, "negative repetition count in %v", repeats)
		}
		var ok bool
		if len(repeats) == 1 {
			total, ok = backend.MulSize(n, r)
		} else {
			total, ok = backend.AddSize(total, r)
		}
		if !ok {
			errorf(op, "too large: repetitions %v of axis %d of %s overflow int", repeats, axis, x.TypeString())
		}
	}
	out := append([]int{}, x.Shape()...)
	out[a] = total
	shapeSize(op, out)
	checkResult(op, x.DType(), out, x)
	if len(repeats) == 1 {
		// Broadcast a new axis of size r after the axis, then merge.
		r := repeats[0]
		wide := make([]int, 0, x.Rank()+1)
		wide = append(append(append(wide, x.Shape()[:a+1]...), r), x.Shape()[a+1:]...)
		dims := make([]int, x.Rank())
		for i := range dims {
			dims[i] = i
			if i > a {
				dims[i] = i + 1
			}
		}
		y := interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: wide, Dims: dims}, x)
		return reshapeView(interp.Bind1(prims.Copy, nil, y), out)
	}
	allocShape(op, Int64, []int{total}) // the host index vector
	idx := make([]int64, 0, total)
	for i, r := range repeats {
		for range r {
			idx = append(idx, int64(i))
		}
	}
	return interp.Bind1(prims.Gather, prims.AxisParams{Axis: a}, x, hostIndices(backendFor(x), idx, []int{total}))
}
