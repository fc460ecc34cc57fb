package batching

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// conv_general_dilated folds the vmap batch into the convolution itself,
// never a loop over lanes: a batched lhs alone joins the batch dimension
// N ([B·N, C, …]); a batched kernel alone joins the output features
// within each group ([G·B·Og, C/G, …], one convolution whose result
// features are regrouped afterwards); both batched become B times as many
// feature groups (lhs [N, B·C, …], kernel [B·O, C/G, …], groups B·G), so
// lane b's features meet only lane b's kernels. Batch groups become
// feature groups of the rearranged lhs first.

func init() { register(prims.ConvGeneralDilated, convRule) }

func convRule(size int, params any, args []*T, dims []int) ([]*T, []int) {
	p := params.(prims.ConvParams)
	x, w := args[0], args[1]
	xd, wd := dims[0], dims[1]
	if bg := p.BatchGroupCount; bg > 1 {
		// Batch groups are feature groups of the rearranged lhs.
		p.FeatureGroupCount, p.BatchGroupCount = bg, 0
		if xd == NotMapped {
			x = prims.BatchGroupsToFeatures(x, bg)
		} else {
			xs := logicalShape(x, xd)
			x = MoveDim(x, xd, 0)
			x = reshapeTo(x, append([]int{size, bg, xs[0] / bg, xs[1]}, xs[2:]...))
			x = interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: append([]int{0, 2, 1}, iotaFrom(3, len(xs)+2)...)}, x)
			x, xd = reshapeTo(x, append([]int{size, xs[0] / bg, bg * xs[1]}, xs[2:]...)), 0
		}
		return convRule(size, p, []*T{x, w}, []int{xd, wd})
	}
	g := max(p.FeatureGroupCount, 1)
	switch {
	case wd == NotMapped:
		n := logicalShape(x, xd)[0]
		y := interp.Bind1(prims.ConvGeneralDilated, p, mergeBatch(x, xd, 0, size), w)
		return one(splitBatch(y, 0, size, n), 0)
	case xd == NotMapped:
		ws := logicalShape(w, wd)
		o := ws[0]
		og := o / g
		if g == 1 {
			y := interp.Bind1(prims.ConvGeneralDilated, p, x, mergeBatch(w, wd, 0, size))
			return one(splitBatch(y, 1, size, o), 1)
		}
		// [B, O, …] → [B, G, Og, …] → [G, B, Og, …] → [G·B·Og, …].
		wb := MoveDim(w, wd, 0)
		r := wb.Rank()
		wb = reshapeTo(wb, append([]int{size, g, og}, ws[1:]...))
		wb = interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: append([]int{1, 0}, iotaFrom(2, r+1)...)}, wb)
		wb = reshapeTo(wb, append([]int{g * size * og}, ws[1:]...))
		y := interp.Bind1(prims.ConvGeneralDilated, p, x, wb)
		// [N, G·B·Og, Q…] → [N, G, B, Og, Q…] → [N, B, G, Og, Q…] → [N, B, O, Q…].
		ys := y.Shape()
		y = reshapeTo(y, append([]int{ys[0], g, size, og}, ys[2:]...))
		y = interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: append([]int{0, 2, 1, 3}, iotaFrom(4, len(ys)+2)...)}, y)
		return one(reshapeTo(y, append([]int{ys[0], size, o}, ys[2:]...)), 1)
	}
	o := logicalShape(w, wd)[0]
	np := p
	np.FeatureGroupCount = g * size
	y := interp.Bind1(prims.ConvGeneralDilated, np, mergeBatch(x, xd, 1, size), mergeBatch(w, wd, 0, size))
	return one(splitBatch(y, 1, size, o), 1)
}

// reshapeTo reshapes x to shape.
func reshapeTo(x *T, shape []int) *T {
	return interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: shape}, x)
}

// iotaFrom returns lo, lo+1, …, hi−1.
func iotaFrom(lo, hi int) []int {
	out := make([]int, 0, max(hi-lo, 0))
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// The window reductions gain a window of size 1 (stride 1, no padding)
// along the batch dimension, which stays where it is: no data moves.
func init() {
	register(prims.ReduceWindowSum, windowRule(prims.ReduceWindowSum))
	register(prims.ReduceWindowMax, windowRule(prims.ReduceWindowMax))
}

func windowRule(p *interp.Prim) Rule {
	return func(_ int, params any, args []*T, dims []int) ([]*T, []int) {
		d := dims[0]
		wp := params.(prims.WindowParams).Normalized(args[0].Rank() - 1)
		np := prims.WindowParams{
			Window:  insertAt(wp.Window, d, 1),
			Strides: insertAt(wp.Strides, d, 1),
			PadLo:   insertAt(wp.PadLo, d, 0),
			PadHi:   insertAt(wp.PadHi, d, 0),
		}
		return one(interp.Bind1(p, np, args[0]), d)
	}
}
