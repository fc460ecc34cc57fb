package prims

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/graphio"
	"github.com/peel-ml/peel/interp"
)

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

// Windowed primitives: convolution (conv_general_dilated) and
// reductions over windows (reduce_window_sum, reduce_window_max).

// convOutLen returns the number of window positions along one spatial
// dimension: the lhs of size d dilated by ld and padded by lo, hi, a
// kernel of size k dilated by rd, windows stride apart. It panics with
// *interp.Error when a size overflows or the padding removes more than
// the dimension holds.
func convOutLen(j, d, k, stride, lo, hi, ld, rd int) int {
	padded, err := PadLen(d, lo, hi, ld-1)
	if err != nil {
		interp.Panicf("spatial dimension %d (size %d, padding (%d, %d), lhs dilation %d): %v", j, d, lo, hi, ld, err)
	}
	dk, err := PadLen(k, 0, 0, rd-1)
	if err != nil {
		interp.Panicf("kernel spatial dimension %d (size %d, dilation %d): %v", j, k, rd, err)
	}
	if padded < dk {
		return 0
	}
	return (padded-dk)/stride + 1
}

// ConvShape checks conv_general_dilated's operands (lhs [N, C,
// spatial…], rhs [O, C/G, kernel…]) and parameters and returns the
// result shape [N/BG, O, out spatial…]. It panics with *interp.Error when
// the ranks, features or parameters do not fit (a parameter list of the
// wrong length, a stride or dilation below 1, a group count that does
// not divide the features or batch, both group counts above 1, padding
// that removes more than a dimension holds) or the result is too large (see
// backend.CheckedSize).
func ConvShape(p ConvParams, lhs, rhs []int) []int {
	if len(lhs) < 2 {
		interp.Panicf("lhs must have rank ≥ 2 ([N, C, spatial…]), got rank %d", len(lhs))
	}
	if len(rhs) != len(lhs) {
		interp.Panicf("rhs must have the lhs's rank %d ([O, C/groups, kernel…]), got rank %d", len(lhs), len(rhs))
	}
	nd := len(lhs) - 2
	for _, l := range []struct {
		name string
		v    []int
	}{{"strides", p.Strides}, {"padding low", p.PadLo}, {"padding high", p.PadHi}, {"lhs dilation", p.LhsDilation}, {"rhs dilation", p.RhsDilation}} {
		if l.v != nil && len(l.v) != nd {
			interp.Panicf("%s has %d entries for %d spatial dimensions", l.name, len(l.v), nd)
		}
	}
	if p.FeatureGroupCount < 0 {
		interp.Panicf("feature group count %d is negative", p.FeatureGroupCount)
	}
	if p.BatchGroupCount < 0 {
		interp.Panicf("batch group count %d is negative", p.BatchGroupCount)
	}
	p = p.Normalized(nd)
	if bg := p.BatchGroupCount; bg > 1 {
		if p.FeatureGroupCount > 1 {
			interp.Panicf("feature group count %d and batch group count %d: at most one may exceed 1", p.FeatureGroupCount, bg)
		}
		if lhs[0]%bg != 0 || rhs[0]%bg != 0 {
			interp.Panicf("batch group count %d must divide the lhs batch %d and the rhs output features %d", bg, lhs[0], rhs[0])
		}
	}
	for j := range nd {
		if p.Strides[j] < 1 || p.LhsDilation[j] < 1 || p.RhsDilation[j] < 1 {
			interp.Panicf("spatial dimension %d: stride %d, lhs dilation %d and rhs dilation %d must be ≥ 1", j, p.Strides[j], p.LhsDilation[j], p.RhsDilation[j])
		}
	}
	g := p.FeatureGroupCount
	if c, ok := backend.MulSize(rhs[1], g); !ok || c != lhs[1] {
		interp.Panicf("lhs has %d features, but the rhs takes %d per group in %d groups", lhs[1], rhs[1], g)
	}
	if rhs[0]%g != 0 {
		interp.Panicf("rhs has %d output features, not a multiple of the %d groups", rhs[0], g)
	}
	out := make([]int, len(lhs))
	out[0], out[1] = lhs[0]/p.BatchGroupCount, rhs[0]
	for j := range nd {
		out[2+j] = convOutLen(j, lhs[2+j], rhs[2+j], p.Strides[j], p.PadLo[j], p.PadHi[j], p.LhsDilation[j], p.RhsDilation[j])
	}
	checkShape(out)
	return out
}

// ConvGeneralDilated is an N-d convolution (a cross-correlation, as in
// every deep learning library) of lhs [N, C, spatial…] with rhs [O, C/G,
// kernel…] into [N, O, out spatial…] (see ConvParams):
//
//	out[n, o, q…] = Σ_{c, k…} lhs'[n, g·C/G + c, q·stride + k·rhs_dilation] · rhs[o, c, k…]
//
// where g = o / (O/G) and lhs' is the lhs dilated and padded. With batch
// groups the result is [N/BG, O, …] and result feature o reads lhs batch
// element b·N/BG + n instead, b = o / (O/BG). Operands have one
// floating-point dtype.
var ConvGeneralDilated = graphio.Params[ConvParams](interp.NewPrim("conv_general_dilated", interp.Pure, func(params any, in []aval) []aval {
	checkArity(in, 2)
	if in[0].DType != in[1].DType {
		interp.Panicf("operands must have one dtype")
	}
	checkClass(floats, in[0])
	return one(aval{Shape: ConvShape(params.(ConvParams), in[0].Shape, in[1].Shape), DType: in[0].DType})
}))

func init() {
	defJVP(ConvGeneralDilated, func(params any, x, t []*tensor, _ *tensor) *tensor {
		// Bilinear: conv(dlhs, rhs) + conv(lhs, drhs).
		var a, b *tensor
		if t[0] != nil {
			a = interp.Bind1(ConvGeneralDilated, params, t[0], x[1])
		}
		if t[1] != nil {
			b = interp.Bind1(ConvGeneralDilated, params, x[0], t[1])
		}
		return addNil(a, b)
	})
	defTranspose(ConvGeneralDilated, linear2, convTranspose)
}

// conv binds conv_general_dilated.
func conv(p ConvParams, lhs, rhs *tensor) *tensor {
	return interp.Bind1(ConvGeneralDilated, p, lhs, rhs)
}

// dilatedLen is the size of a dimension of size d with d−1 gaps of
// dil−1 zeros: (d−1)·dil + 1, or 0 for d = 0.
func dilatedLen(d, dil int) int {
	if d == 0 {
		return 0
	}
	return (d-1)*dil + 1
}

// spatialAxes returns 2, 3, …, rank−1.
func spatialAxes(rank int) []int {
	axes := make([]int, 0, rank)
	for a := 2; a < rank; a++ {
		axes = append(axes, a)
	}
	return axes
}

// swapFirst returns the permutation exchanging dimensions 0 and 1 of a
// rank-r tensor.
func swapFirst(r int) []int {
	perm := []int{1, 0}
	return append(perm, spatialAxes(r)...)
}

// convTranspose transposes conv_general_dilated with respect to its one
// linear operand, each transpose being another convolution.
func convTranspose(params any, ct *tensor, args []*tensor, linear []bool) []*tensor {
	i := oneLinear("conv_general_dilated", linear)
	x, w := args[0], args[1]
	res := make([]*tensor, 2)
	if x.Size() == 0 || w.Size() == 0 || ct.Size() == 0 {
		res[i] = zerosLike(interp.AvalOf(args[i]))
		return res
	}
	p := params.(ConvParams).Normalized(x.Rank() - 2)
	if i == 0 {
		res[0] = convLhsTransposeGroups(p, ct, w, x.Shape())
		return res
	}
	if bg := p.BatchGroupCount; bg > 1 {
		p.FeatureGroupCount, p.BatchGroupCount = bg, 1
		x = BatchGroupsToFeatures(x, bg)
	}
	res[1] = convRhsTranspose(p, ct, x, w.Shape())
	return res
}

// convLhsTransposeGroups is convLhsTranspose for any group counts: batch
// groups are feature groups of the rearranged lhs, whose cotangent is
// rearranged back.
func convLhsTransposeGroups(p ConvParams, ct, w *tensor, lhsShape []int) *tensor {
	bg := p.BatchGroupCount
	if bg == 1 {
		return convLhsTranspose(p, ct, w, lhsShape)
	}
	p.FeatureGroupCount, p.BatchGroupCount = bg, 1
	folded := append([]int{lhsShape[0] / bg, bg * lhsShape[1]}, lhsShape[2:]...)
	return featuresToBatchGroups(convLhsTranspose(p, ct, w, folded), bg)
}

// BatchGroupsToFeatures rearranges an lhs [BG·Nb, C, …] into [Nb, BG·C,
// …] (batch group b's features becoming feature group b): a
// convolution with BatchGroupCount BG of x is one with
// FeatureGroupCount BG of the result (and the same kernel).
func BatchGroupsToFeatures(x *interp.Tensor, bg int) *interp.Tensor {
	s := x.Shape()
	y := reshape(x, append([]int{bg, s[0] / bg, s[1]}, s[2:]...))
	y = transpose(y, append([]int{1, 0}, spatialAxesFrom(2, len(s)+1)...))
	return reshape(y, append([]int{s[0] / bg, bg * s[1]}, s[2:]...))
}

// featuresToBatchGroups undoes BatchGroupsToFeatures.
func featuresToBatchGroups(y *tensor, bg int) *tensor {
	s := y.Shape()
	x := reshape(y, append([]int{s[0], bg, s[1] / bg}, s[2:]...))
	x = transpose(x, append([]int{1, 0}, spatialAxesFrom(2, len(s)+1)...))
	return reshape(x, append([]int{bg * s[0], s[1] / bg}, s[2:]...))
}

// convLhsTranspose is the cotangent of the lhs (of shape lhsShape): the
// cotangent convolved with the kernel flipped spatially, its input and
// output features exchanged within each group, the cotangent dilated by
// the strides and the windows stepping by the lhs dilation. The padding
// puts tap k′ of the flipped kernel where tap K−1−k′ read the lhs:
// before, d_k−1−lo (d_k the dilated kernel size); after, whatever makes
// the result as long as the lhs.
func convLhsTranspose(p ConvParams, ct, w *tensor, lhsShape []int) *tensor {
	r := len(lhsShape)
	nd := r - 2
	g := p.FeatureGroupCount
	ws := w.Shape()
	o, cg := ws[0], ws[1]
	og := o / g
	// Kernel [G·Cg, Og, k…]: group g's block [Og, Cg] transposed.
	var wk *tensor
	if g == 1 {
		wk = transpose(w, swapFirst(r))
	} else {
		split := append([]int{g, og, cg}, ws[2:]...)
		perm := append([]int{0, 2, 1}, spatialAxesFrom(3, r+1)...)
		wk = reshape(transpose(reshape(w, split), perm), append([]int{g * cg, og}, ws[2:]...))
	}
	if nd > 0 {
		wk = rev(wk, spatialAxes(r))
	}
	np := ConvParams{
		Strides: p.LhsDilation, LhsDilation: p.Strides, RhsDilation: p.RhsDilation,
		PadLo: make([]int, nd), PadHi: make([]int, nd), FeatureGroupCount: g,
	}
	for j := range nd {
		dk := dilatedLen(ws[2+j], p.RhsDilation[j])
		dq := dilatedLen(ct.Shape()[2+j], p.Strides[j])
		np.PadLo[j] = dk - 1 - p.PadLo[j]
		np.PadHi[j] = (lhsShape[2+j]-1)*p.LhsDilation[j] + 1 + p.PadLo[j] - dq
	}
	return conv(np, ct, wk)
}

// convRhsTranspose is the cotangent of the kernel (of shape rhsShape):
// the lhs convolved with the cotangent as its kernel, the lhs's features
// becoming the batch and its batch the features (in G groups, so group g
// of the lhs meets group g of the cotangent), the kernel's taps stepping
// by the strides and the windows by the rhs dilation.
func convRhsTranspose(p ConvParams, ct, x *tensor, rhsShape []int) *tensor {
	r := len(rhsShape)
	nd := r - 2
	g := p.FeatureGroupCount
	xs, cs := x.Shape(), ct.Shape()
	n, c, o := xs[0], xs[1], cs[1]
	cg, og := c/g, o/g
	var xl, ck *tensor
	if g == 1 {
		xl, ck = transpose(x, swapFirst(r)), transpose(ct, swapFirst(r))
	} else {
		// lhs [Cg, G·N, S…] from [N, G, Cg, S…]; kernel [G·Og, N, Q…]
		// from [N, G, Og, Q…].
		rest := spatialAxesFrom(3, r+1)
		xl = transpose(reshape(x, append([]int{n, g, cg}, xs[2:]...)), append([]int{2, 1, 0}, rest...))
		xl = reshape(xl, append([]int{cg, g * n}, xs[2:]...))
		ck = transpose(reshape(ct, append([]int{n, g, og}, cs[2:]...)), append([]int{1, 2, 0}, rest...))
		ck = reshape(ck, append([]int{g * og, n}, cs[2:]...))
	}
	np := ConvParams{
		Strides: p.RhsDilation, LhsDilation: p.LhsDilation, RhsDilation: p.Strides,
		PadLo: p.PadLo, PadHi: make([]int, nd), FeatureGroupCount: g,
	}
	for j := range nd {
		dq := dilatedLen(cs[2+j], p.Strides[j])
		ds := dilatedLen(xs[2+j], p.LhsDilation[j])
		np.PadHi[j] = (rhsShape[2+j]-1)*p.RhsDilation[j] + dq - p.PadLo[j] - ds
	}
	// [Cg, O, K…] → [O, Cg, K…].
	return transpose(conv(np, xl, ck), swapFirst(r))
}

// spatialAxesFrom returns lo, lo+1, …, hi−1.
func spatialAxesFrom(lo, hi int) []int {
	axes := make([]int, 0, max(hi-lo, 0))
	for a := lo; a < hi; a++ {
		axes = append(axes, a)
	}
	return axes
}

// ConvTransposeLhs applies the transpose of conv_general_dilated with
// parameters p in its lhs (for a kernel w and an lhs of shape lhsShape)
// to ct, a tensor of the convolution's result shape: the gradient of the
// convolution with respect to its input, which is also a transposed
// ("deconvolution") convolution of ct. It is a conv_general_dilated
// itself (zeros when a size is 0). It panics with *interp.Error when
// the shapes do not fit p.
func ConvTransposeLhs(p ConvParams, ct, w *interp.Tensor, lhsShape []int) *interp.Tensor {
	want := ConvShape(p, lhsShape, w.Shape())
	if !interp.ShapeEqual(want, ct.Shape()) || ct.DType() != w.DType() {
		interp.Panicf("cotangent %v does not fit a convolution of %v by %v, whose result is %v", ct.TypeString(), lhsShape, w.TypeString(), interp.Aval{Shape: want, DType: w.DType()})
	}
	if ct.Size() == 0 || w.Size() == 0 || backend.ShapeSize(lhsShape) == 0 {
		return zerosLike(interp.Aval{Shape: append([]int{}, lhsShape...), DType: w.DType()})
	}
	return convLhsTransposeGroups(p.Normalized(len(lhsShape)-2), ct, w, lhsShape)
}

// WindowShape checks a window reduction's parameters for an operand of
// the given shape and returns the result shape. It panics with
// *interp.Error when a list does not have one entry per dimension, a
// window or stride is below 1, the padding removes more than a
// dimension holds, or a size overflows.
func WindowShape(p WindowParams, shape []int) []int {
	r := len(shape)
	if len(p.Window) != r {
		interp.Panicf("window %v has %d entries, operand has rank %d", p.Window, len(p.Window), r)
	}
	for _, l := range []struct {
		name string
		v    []int
	}{{"strides", p.Strides}, {"padding low", p.PadLo}, {"padding high", p.PadHi}} {
		if l.v != nil && len(l.v) != r {
			interp.Panicf("%s has %d entries, operand has rank %d", l.name, len(l.v), r)
		}
	}
	p = p.Normalized(r)
	out := make([]int, r)
	for j := range r {
		if p.Window[j] < 1 || p.Strides[j] < 1 {
			interp.Panicf("dimension %d: window %d and stride %d must be ≥ 1", j, p.Window[j], p.Strides[j])
		}
		out[j] = convOutLen(j, shape[j], p.Window[j], p.Strides[j], p.PadLo[j], p.PadHi[j], 1, 1)
	}
	checkShape(out)
	return out
}

func windowReduction(name string) *interp.Prim {
	return graphio.Params[WindowParams](interp.NewPrim(name, interp.Pure, func(params any, in []aval) []aval {
		checkArity(in, 1)
		checkClass(numeric, in[0])
		return one(aval{Shape: WindowShape(params.(WindowParams), in[0].Shape), DType: in[0].DType})
	}))
}

// Window reductions (see WindowParams): each result element reduces one
// window of the padded operand. reduce_window_sum pads with 0,
// reduce_window_max with −∞ (the smallest i64); a NaN in a window makes
// its maximum NaN. Operands are numeric.
var (
	ReduceWindowSum = windowReduction("reduce_window_sum")
	ReduceWindowMax = windowReduction("reduce_window_max")
)

func init() {
	defSameJVP(ReduceWindowSum)
	defJVP(ReduceWindowMax, reduceWindowMaxJVP)
	defTranspose(ReduceWindowSum, linear1, reduceWindowSumTranspose)
}

// reduceWindowSumTranspose spreads each cotangent element over its
// window: the cotangent dilated by the strides and padded so that window
// position k′ of element i covers the result that window tap
// W−1−k′ of i fed, then summed over windows of the same size with stride
// 1.
func reduceWindowSumTranspose(params any, ct *tensor, args []*tensor, _ []bool) []*tensor {
	x := args[0]
	r := x.Rank()
	if x.Size() == 0 || ct.Size() == 0 {
		return []*tensor{zerosLike(interp.AvalOf(x))}
	}
	p := params.(WindowParams).Normalized(r)
	pp := PadParams{Low: make([]int, r), High: make([]int, r), Interior: make([]int, r)}
	for j := range r {
		dq := dilatedLen(ct.Shape()[j], p.Strides[j])
		pp.Low[j] = p.Window[j] - 1 - p.PadLo[j]
		pp.High[j] = x.Shape()[j] + p.PadLo[j] - dq
		pp.Interior[j] = p.Strides[j] - 1
	}
	padded := interp.Bind1(Pad, pp, ct, scalarConst(0, ct.DType()))
	return []*tensor{interp.Bind1(ReduceWindowSum, WindowParams{Window: p.Window}, padded)}
}

// reduceWindowMaxJVP routes each window's tangent from its maximum: for
// each window tap k, the mask of the results whose (first) maximum is at
// tap k, times the tangent read by that tap. The masks depend only on
// the primal, so the tangent is linear in t (pad, strided slices,
// products with constants and sums) and transposes to a scatter of the
// cotangent onto each window's maximum.
func reduceWindowMaxJVP(params any, x, t []*tensor, out *tensor) *tensor {
	r := x[0].Rank()
	p := params.(WindowParams).Normalized(r)
	if out.Size() == 0 {
		return zerosLike(interp.AvalOf(out))
	}
	pp := PadParams{Low: p.PadLo, High: p.PadHi, Interior: make([]int, r)}
	xp := interp.Bind1(Pad, pp, x[0], scalarConst(math.Inf(-1), x[0].DType()))
	tp := interp.Bind1(Pad, pp, t[0], scalarConst(0, t[0].DType()))
	taps := backend.ShapeSize(p.Window)
	tapSlice := func(v *tensor, k int) *tensor {
		sp := SliceParams{Start: make([]int, r), Limit: make([]int, r), Stride: p.Strides}
		for j := r - 1; j >= 0; j-- {
			sp.Start[j] = k % p.Window[j]
			k /= p.Window[j]
			sp.Limit[j] = sp.Start[j] + (out.Shape()[j]-1)*p.Strides[j] + 1
		}
		return interp.Bind1(Slice, sp, v)
	}
	// Each result takes the tangent of the first tap holding its
	// window's maximum (a NaN counts as the maximum, as
	// reduce_window_max propagates it).
	var tangent *tensor
	zero := zerosLike(interp.AvalOf(out))
	taken := full(0, interp.Aval{Shape: out.Shape(), DType: backend.Bool})
	for k := range taps {
		v := tapSlice(xp, k)
		hit := interp.Bind1(Or, nil, eq(v, out), interp.Bind1(Ne, nil, v, v))
		if k > 0 {
			hit = interp.Bind1(And, nil, hit, interp.Bind1(Not, nil, taken))
		}
		if k < taps-1 {
			taken = interp.Bind1(Or, nil, taken, hit)
		}
		tangent = addNil(tangent, sel(hit, tapSlice(tp, k), zero))
	}
	return tangent
}
