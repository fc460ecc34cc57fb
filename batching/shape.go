package batching

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Shape primitives. Those with one operand keep the batch dimension
// where it is and rewrite their axis parameters for the physical operand
// (physAxis), so no transpose is added and view primitives stay views;
// reshape keeps the batch in place when the reshape does not cross it and
// moves it to the front otherwise.

func init() {
	register(prims.BroadcastInDim, broadcastRule)
	register(prims.Reshape, reshapeRule)
	register(prims.OptimizationBarrier, func(size int, params any, vals []*interp.Tensor, dims []int) ([]*interp.Tensor, []int) {
		return interp.Bind(prims.OptimizationBarrier, nil, vals[0]), dims
	})
	register(prims.Transpose, transposeRule)
	register(prims.Slice, sliceRule)
	register(prims.Rev, revRule)
	register(prims.Pad, padRule)
	register(prims.Concatenate, concatenateRule)
}

// broadcastRule maps the operand's batch dimension to a new result
// dimension placed right after the one its predecessor maps to, which
// keeps Dims increasing.
func broadcastRule(size int, params any, args []*T, dims []int) ([]*T, []int) {
	bp := params.(prims.BroadcastParams)
	d := dims[0]
	q := 0
	if d > 0 {
		q = bp.Dims[d-1] + 1
	}
	nd := make([]int, 0, len(bp.Dims)+1)
	for _, x := range bp.Dims {
		if x >= q {
			x++
		}
		nd = append(nd, x)
	}
	nd = insertAt(nd, d, q)
	shape := insertAt(bp.Shape, q, size)
	return one(interp.Bind1(prims.BroadcastInDim, prims.BroadcastParams{Shape: shape, Dims: nd}, args[0]), q)
}

// reshapeRule keeps the batch dimension in place when the dimensions
// before it are reshaped into a prefix of the new shape (a row-major
// reshape then never crosses it, and the result stays a view), and moves
// it to the front otherwise.
func reshapeRule(size int, params any, args []*T, dims []int) ([]*T, []int) {
	x, d := args[0], dims[0]
	shape := params.(prims.ReshapeParams).Shape
	at := reshapeSplit(logicalShape(x, d), d, shape)
	if at < 0 {
		x, at = MoveDim(x, d, 0), 0
	}
	return one(interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: insertAt(shape, at, size)}, x), at)
}

// reshapeSplit returns the first j such that shape[:j] holds as many
// elements as from[:d], or -1.
func reshapeSplit(from []int, d int, shape []int) int {
	want := backend.ShapeSize(from[:d])
	n := 1
	for j := 0; ; j++ {
		if n == want {
			return j
		}
		if j == len(shape) {
			return -1
		}
		n *= shape[j]
	}
}

// transposeRule keeps the batch dimension at its position in the result.
func transposeRule(_ int, params any, args []*T, dims []int) ([]*T, []int) {
	d := dims[0]
	perm := insertAt(physAxes(params.(prims.TransposeParams).Perm, d), d, d)
	return one(interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: perm}, args[0]), d)
}

func sliceRule(size int, params any, args []*T, dims []int) ([]*T, []int) {
	sp := params.(prims.SliceParams)
	d := dims[0]
	np := prims.SliceParams{
		Start:  insertAt(sp.Start, d, 0),
		Limit:  insertAt(sp.Limit, d, size),
		Stride: insertAt(sp.Stride, d, 1),
	}
	return one(interp.Bind1(prims.Slice, np, args[0]), d)
}

func revRule(_ int, params any, args []*T, dims []int) ([]*T, []int) {
	axes := physAxes(params.(prims.RevParams).Axes, dims[0])
	return one(interp.Bind1(prims.Rev, prims.RevParams{Axes: axes}, args[0]), dims[0])
}

// padRule pads along the logical dimensions only. A batched padding value
// cannot be a pad operand (it must be a scalar): the operand is then
// padded with zeros and the padding positions, found by padding an
// all-true mask with false, take each lane's value through select.
func padRule(size int, params any, args []*T, dims []int) ([]*T, []int) {
	pp := params.(prims.PadParams)
	x, v := args[0], args[1]
	xd, vd := dims[0], dims[1]
	if vd == NotMapped {
		return one(padBatched(pp, x, v, xd), xd)
	}
	var padded *T
	od := xd
	zero := scalar(0, x.DType())
	if xd == NotMapped {
		padded = BroadcastBatch(interp.Bind1(prims.Pad, pp, x, zero), size, 0)
		od = 0
	} else {
		padded = padBatched(pp, x, zero, xd)
	}
	shape := logicalShape(x, xd)
	ones := broadcastTo(scalar(1, backend.Bool), shape, []int{})
	mask := interp.Bind1(prims.Pad, pp, ones, scalar(0, backend.Bool))
	mask = BroadcastBatch(mask, size, od)
	vals := broadcastTo(v, padded.Shape(), []int{od})
	return one(interp.Bind1(prims.Where, nil, mask, padded, vals), od)
}

// padBatched pads x, batched at xd, with the unbatched scalar v along its
// logical dimensions.
func padBatched(pp prims.PadParams, x, v *T, xd int) *T {
	np := prims.PadParams{
		Low:      insertAt(pp.Low, xd, 0),
		High:     insertAt(pp.High, xd, 0),
		Interior: insertAt(pp.Interior, xd, 0),
	}
	return interp.Bind1(prims.Pad, np, x, v)
}

func concatenateRule(size int, params any, args []*T, dims []int) ([]*T, []int) {
	in, d := align(args, dims, size)
	axis := physAxis(params.(prims.AxisParams).Axis, d)
	return one(interp.Bind1(prims.Concatenate, prims.AxisParams{Axis: axis}, in...), d)
}
