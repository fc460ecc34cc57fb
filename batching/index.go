package batching

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Indexing primitives. When both the operand and the indices are batched,
// the batch dimension is merged into the indexed axis (mergeBatch: an axis
// of size B·n, lane-major) and each lane's indices are offset by lane·n,
// so one gather or scatter serves every lane. Index semantics stay
// lane-local: gather clamps each index into its own lane's [0, n) before
// the offset, and scatter maps an index outside [0, n) to -1, which the
// merged axis drops too. Dynamic slices with batched starts are gathers
// of computed index vectors, one per dimension.

func init() {
	register(prims.Gather, gatherRule)
	register(prims.ScatterAdd, scatterRule(prims.ScatterAdd))
	register(prims.Scatter, scatterRule(prims.Scatter))
	register(prims.DynamicSlice, dynamicSliceRule)
	register(prims.DynamicUpdateSlice, dynamicUpdateSliceRule)
}

func gatherRule(size int, params any, args []*T, dims []int) ([]*T, []int) {
	return one(gather(size, args[0], dims[0], args[1], dims[1], params.(prims.AxisParams).Axis))
}

// gather is gather(x, idx) along logical axis for an x batched at xd and
// indices batched at id (either may be NotMapped), returning the physical
// result and its batch dimension.
func gather(size int, x *T, xd int, idx *T, id int, axis int) (*T, int) {
	switch {
	case xd == NotMapped && id == NotMapped:
		return interp.Bind1(prims.Gather, prims.AxisParams{Axis: axis}, x, idx), NotMapped
	case id == NotMapped:
		a := physAxis(axis, xd)
		od := xd
		if xd > a {
			od = xd + idx.Rank() - 1
		}
		return interp.Bind1(prims.Gather, prims.AxisParams{Axis: a}, x, idx), od
	case xd == NotMapped:
		return interp.Bind1(prims.Gather, prims.AxisParams{Axis: axis}, x, idx), axis + id
	}
	n := x.Shape()[physAxis(axis, xd)]
	merged := mergeBatch(x, xd, axis, size)
	ix := bin(prims.Add, clampI64(idx, 0, n-1), laneOffsets(size, n, idx.Shape(), id))
	return interp.Bind1(prims.Gather, prims.AxisParams{Axis: axis}, merged, ix), axis + id
}

// scatterRule batches scatter and scatter_add: the result is always
// batched, so an unbatched operand is broadcast first.
func scatterRule(p *interp.Prim) Rule {
	return func(size int, params any, args []*T, dims []int) ([]*T, []int) {
		axis := params.(prims.AxisParams).Axis
		x, idx, upd := args[0], args[1], args[2]
		xd, id, ud := dims[0], dims[1], dims[2]
		if id == NotMapped {
			if xd == NotMapped {
				x, xd = BroadcastBatch(x, size, 0), 0
			}
			// The updates are gathered slices of x: their batch
			// dimension is where gather would put x's.
			a := physAxis(axis, xd)
			at := xd
			if xd > a {
				at = xd + idx.Rank() - 1
			}
			upd = toDim(upd, ud, at, size)
			return one(interp.Bind1(p, prims.AxisParams{Axis: a}, x, idx, upd), xd)
		}
		n := logicalShape(x, xd)[axis]
		merged := mergeBatch(x, xd, axis, size)
		off := bin(prims.Add, idx, laneOffsets(size, n, idx.Shape(), id))
		ix := interp.Bind1(prims.Where, nil, inRange(idx, 0, n), off, fullI64(-1, idx.Shape()))
		upd = toDim(upd, ud, axis+id, size)
		out := interp.Bind1(p, prims.AxisParams{Axis: axis}, merged, ix, upd)
		return one(splitBatch(out, axis, size, n), axis)
	}
}

// zeroStart is the start index of a batch dimension: a rank-0 i64 zero.
func zeroStart() *T { return scalar(0, backend.Int64) }

// startsBatched reports whether any start index is batched.
func startsBatched(dims []int) bool {
	for _, d := range dims {
		if d != NotMapped {
			return true
		}
	}
	return false
}

// windowIndices returns, for a dimension of size n sliced to size s, the
// indices start', start'+1, …, start'+s-1 of each lane, where start' is
// the lane's start clamped into [0, n-s] as dynamic_slice does. start is
// the physical value of a batched start index (shape [size]); the result
// has shape [size, s], batched at 0.
func windowIndices(start *T, size, n, s int) *T {
	st := clampI64(start, 0, n-s)
	shape := []int{size, s}
	return bin(prims.Add, broadcastTo(st, shape, []int{0}), broadcastTo(iotaI64(s), shape, []int{1}))
}

func dynamicSliceRule(size int, params any, args []*T, dims []int) ([]*T, []int) {
	sizes := params.(prims.DynamicSliceParams).Sizes
	x, xd := args[0], dims[0]
	starts, sdims := args[1:], dims[1:]
	if !startsBatched(sdims) {
		return one(sliceUnbatchedStarts(size, x, xd, starts, sizes), xd)
	}
	shape := logicalShape(x, xd)
	// First slice the dimensions whose starts are unbatched, in one
	// dynamic_slice (taking all of the others).
	cut := false
	st := make([]*T, len(starts))
	sz := make([]int, len(sizes))
	for k := range starts {
		if sdims[k] == NotMapped {
			st[k], sz[k] = starts[k], sizes[k]
			cut = cut || sizes[k] < shape[k]
		} else {
			st[k], sz[k] = zeroStart(), shape[k]
		}
	}
	if cut {
		x = sliceUnbatchedStarts(size, x, xd, st, sz)
	}
	// Then gather each lane's window along each dimension with a batched
	// start.
	for k := range starts {
		if sdims[k] == NotMapped {
			continue
		}
		x, xd = gather(size, x, xd, windowIndices(starts[k], size, shape[k], sizes[k]), 0, k)
	}
	return one(x, xd)
}

// sliceUnbatchedStarts is dynamic_slice of x, batched at xd (or not
// batched), at unbatched starts: the batch dimension is taken whole.
func sliceUnbatchedStarts(size int, x *T, xd int, starts []*T, sizes []int) *T {
	if xd != NotMapped {
		starts = insertAt2(starts, xd, zeroStart())
		sizes = insertAt(sizes, xd, size)
	}
	return interp.Bind1(prims.DynamicSlice, prims.DynamicSliceParams{Sizes: sizes}, append([]*T{x}, starts...)...)
}

// insertAt2 is insertAt for tensors.
func insertAt2(s []*T, at int, v *T) []*T {
	out := make([]*T, 0, len(s)+1)
	out = append(out, s[:at]...)
	out = append(out, v)
	return append(out, s[at:]...)
}

// dynamicUpdateSliceRule writes the update in place below when the starts
// are unbatched. With batched starts, each lane's update is first placed
// in an operand-shaped tensor by gathers (position p of dimension k takes
// update index p - start'), and select keeps it inside each lane's window
// and the operand outside.
func dynamicUpdateSliceRule(size int, _ any, args []*T, dims []int) ([]*T, []int) {
	starts, sdims := args[2:], dims[2:]
	if !startsBatched(sdims) {
		xu, d := align(args[:2], dims[:2], size)
		st := insertAt2(starts, d, zeroStart())
		return one(interp.Bind1(prims.DynamicUpdateSlice, nil, append(xu, st...)...), d)
	}
	x, xd := args[0], dims[0]
	upd, ud := args[1], dims[1]
	shape := logicalShape(x, xd)
	usz := logicalShape(upd, ud)
	full := insertAt(shape, 0, size)
	var mask *T
	for k := range starts {
		n, s := shape[k], usz[k]
		if s == n {
			// The window spans the dimension whatever the start.
			continue
		}
		st := clampI64(starts[k], 0, n-s)
		pos := iotaI64(n)
		var rel, in *T
		if sdims[k] == NotMapped {
			rel = bin(prims.Sub, pos, broadcastTo(st, []int{n}, []int{}))
			in = broadcastTo(inRange(rel, 0, s), full, []int{k + 1})
		} else {
			sh := []int{size, n}
			rel = bin(prims.Sub, broadcastTo(pos, sh, []int{1}), broadcastTo(st, sh, []int{0}))
			in = broadcastTo(inRange(rel, 0, s), full, []int{0, k + 1})
		}
		if mask == nil {
			mask = in
		} else {
			mask = bin(prims.And, mask, in)
		}
		id := NotMapped
		if sdims[k] != NotMapped {
			id = 0
		}
		upd, ud = gather(size, upd, ud, clampI64(rel, 0, s-1), id, k)
	}
	upd = ToFront(upd, ud, size)
	if mask == nil {
		// The update covers the operand: the result is a copy of it (a
		// fresh value, as the primitive's result is).
		return one(interp.Bind1(prims.Copy, nil, upd), 0)
	}
	return one(interp.Bind1(prims.Where, nil, mask, upd, ToFront(x, xd, size)), 0)
}
