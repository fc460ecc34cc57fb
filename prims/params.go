package prims

import (
	"fmt"

	"github.com/peel-ml/peel/backend"
)

// ConvertParams are the parameters of convert_element_type.
type ConvertParams struct{ DType backend.DType }

func (p ConvertParams) String() string { return "dtype=" + p.DType.String() }

// ReduceParams are the parameters of reduce_sum, reduce_max, reduce_min
// and reduce_prod: the axes reduced (sorted, distinct), which are removed
// from the result's shape.
type ReduceParams struct{ Axes []int }

func (p ReduceParams) String() string { return fmt.Sprintf("axes=%v", p.Axes) }

// AxisParams are the parameters of argmax, argmin and gather-like
// primitives that act along one axis.
type AxisParams struct{ Axis int }

func (p AxisParams) String() string { return fmt.Sprintf("axis=%d", p.Axis) }

// CumsumParams are the parameters of cumsum: the axis, and whether the sum
// runs from the end.
type CumsumParams struct {
	Axis    int
	Reverse bool
}

func (p CumsumParams) String() string {
	return fmt.Sprintf("axis=%d reverse=%v", p.Axis, p.Reverse)
}

// BroadcastParams are the parameters of broadcast_in_dim: the result shape,
// and for each operand dimension the result dimension it maps to
// (increasing). An operand dimension has size 1 or the size of its result
// dimension.
type BroadcastParams struct {
	Shape []int
	Dims  []int
}

func (p BroadcastParams) String() string {
	return fmt.Sprintf("shape=%v dims=%v", p.Shape, p.Dims)
}

// ReshapeParams are the parameters of reshape: the new shape (no -1).
type ReshapeParams struct{ Shape []int }

func (p ReshapeParams) String() string { return fmt.Sprintf("shape=%v", p.Shape) }

// TransposeParams are the parameters of transpose: result dimension i is
// operand dimension Perm[i].
type TransposeParams struct{ Perm []int }

func (p TransposeParams) String() string { return fmt.Sprintf("perm=%v", p.Perm) }

// SliceParams are the parameters of slice: per dimension the start, the
// limit (exclusive) and the stride (≥ 1), with 0 ≤ start ≤ limit ≤ size.
type SliceParams struct {
	Start, Limit, Stride []int
}

func (p SliceParams) String() string {
	return fmt.Sprintf("start=%v limit=%v stride=%v", p.Start, p.Limit, p.Stride)
}

// PadParams are the parameters of pad: per dimension the padding before
// the first element, after the last and between elements. Low and High may
// be negative (they then remove elements); Interior is ≥ 0.
type PadParams struct {
	Low, High, Interior []int
}

func (p PadParams) String() string {
	return fmt.Sprintf("low=%v high=%v interior=%v", p.Low, p.High, p.Interior)
}

// RevParams are the parameters of rev: the axes reversed.
type RevParams struct{ Axes []int }

func (p RevParams) String() string { return fmt.Sprintf("axes=%v", p.Axes) }

// IotaParams are the parameters of iota: a tensor of the given shape and
// dtype whose elements are their index along Dim.
type IotaParams struct {
	DType backend.DType
	Shape []int
	Dim   int
}

func (p IotaParams) String() string {
	return fmt.Sprintf("dtype=%v shape=%v dim=%d", p.DType, p.Shape, p.Dim)
}

// DynamicSliceParams are the parameters of dynamic_slice: the slice sizes.
type DynamicSliceParams struct{ Sizes []int }

func (p DynamicSliceParams) String() string { return fmt.Sprintf("sizes=%v", p.Sizes) }

// DotParams are the parameters of dot_general: the contracting and batch
// dimensions of each operand. The result's dimensions are the batch
// dimensions (in the order given), then the free dimensions of the left
// operand, then those of the right, each in increasing order.
type DotParams struct {
	LhsContract, RhsContract []int
	LhsBatch, RhsBatch       []int
}

func (p DotParams) String() string {
	return fmt.Sprintf("contract=(%v,%v) batch=(%v,%v)", p.LhsContract, p.RhsContract, p.LhsBatch, p.RhsBatch)
}

// ConvParams are the parameters of conv_general_dilated, whose operands
// and result have fixed layouts: lhs [N, C, spatial…], rhs [O, C/G,
// kernel spatial…] and result [N/BG, O, spatial…], G being
// FeatureGroupCount and BG BatchGroupCount. Each slice has one entry per spatial dimension; a
// nil slice means the default (strides and dilations 1, padding 0).
//
//   - Strides: the window's step over the padded lhs (≥ 1).
//   - PadLo, PadHi: elements added before and after each spatial
//     dimension of the (dilated) lhs; negative values remove elements.
//   - LhsDilation: the lhs is dilated by inserting LhsDilation−1 zeros
//     between its elements (≥ 1; a transposed convolution).
//   - RhsDilation: the kernel's taps are RhsDilation apart (≥ 1; an
//     atrous convolution).
//   - FeatureGroupCount: the lhs features and the result features are
//     split into G groups; result group g sees only lhs group g (≥ 1; 0
//     means 1).
//   - BatchGroupCount: the lhs batch and the result features are split
//     into BG groups; result feature group b sees only lhs batch group b,
//     and the result's batch is N/BG (≥ 1; 0 means 1). A convolution
//     with batch groups is one with feature groups of a rearranged lhs
//     ([BG·Nb, C, …] → [Nb, BG·C, …]); a kernel gradient with feature
//     groups is one. At most one of the two counts exceeds 1.
type ConvParams struct {
	Strides           []int
	PadLo, PadHi      []int
	LhsDilation       []int
	RhsDilation       []int
	FeatureGroupCount int
	BatchGroupCount   int
}

func (p ConvParams) String() string {
	return fmt.Sprintf("strides=%v pad=(%v,%v) lhs_dilation=%v rhs_dilation=%v groups=%d",
		p.Strides, p.PadLo, p.PadHi, p.LhsDilation, p.RhsDilation, max(p.FeatureGroupCount, 1))
}

// Normalized returns p for nd spatial dimensions with every default made
// explicit: nil slices become ones (strides, dilations) or zeros
// (padding), and group counts of 0 become 1. It does not validate p
// (ConvShape does).
func (p ConvParams) Normalized(nd int) ConvParams {
	fill := func(s []int, v int) []int {
		if s != nil {
			return s
		}
		out := make([]int, nd)
		for i := range out {
			out[i] = v
		}
		return out
	}
	return ConvParams{
		Strides: fill(p.Strides, 1), PadLo: fill(p.PadLo, 0), PadHi: fill(p.PadHi, 0),
		LhsDilation: fill(p.LhsDilation, 1), RhsDilation: fill(p.RhsDilation, 1),
		FeatureGroupCount: max(p.FeatureGroupCount, 1), BatchGroupCount: max(p.BatchGroupCount, 1),
	}
}

// WindowParams are the parameters of reduce_window_sum and
// reduce_window_max: per operand dimension the window size (≥ 1), the
// window's step (≥ 1) and the padding before and after (elements with
// the reduction's identity, 0 or −∞; negative values remove elements).
// Nil Strides, PadLo and PadHi mean 1, 0 and 0. Result dimension d has
// one element per window position: ⌊(padded − window)/stride⌋ + 1, or 0
// when the window is longer than the padded dimension.
type WindowParams struct {
	Window, Strides []int
	PadLo, PadHi    []int
}

func (p WindowParams) String() string {
	return fmt.Sprintf("window=%v strides=%v pad=(%v,%v)", p.Window, p.Strides, p.PadLo, p.PadHi)
}

// Normalized returns p with nil Strides, PadLo and PadHi made explicit
// for a rank-r operand. It does not validate p (WindowShape does).
func (p WindowParams) Normalized(r int) WindowParams {
	c := ConvParams{Strides: p.Strides, PadLo: p.PadLo, PadHi: p.PadHi}.Normalized(r)
	return WindowParams{Window: p.Window, Strides: c.Strides, PadLo: c.PadLo, PadHi: c.PadHi}
}
