package peel

import (
	"fmt"

	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Padding says how a windowed op (Conv, ConvTranspose2D, MaxPool2D,
// AvgPool2D) pads the spatial dimensions of its input: SamePadding,
// ValidPadding (the zero value) or ExplicitPadding.
type Padding struct {
	mode  paddingMode
	pairs [][2]int
}

type paddingMode uint8

const (
	padValid paddingMode = iota
	padSame
	padExplicit
)

var (
	// SamePadding pads so that the output has ⌈size/stride⌉ positions
	// along each spatial dimension (size·stride for ConvTranspose2D),
	// the odd element of an uneven total going after (as in TensorFlow
	// and JAX).
	SamePadding = Padding{mode: padSame}
	// ValidPadding adds nothing: only windows entirely inside the input
	// count.
	ValidPadding = Padding{mode: padValid}
)

// ExplicitPadding pads each spatial dimension i with pairs[i][0]
// elements before and pairs[i][1] after; a single pair applies to every
// spatial dimension. Negative values remove elements (not in
// ConvTranspose2D).
func ExplicitPadding(pairs ...[2]int) Padding {
	return Padding{mode: padExplicit, pairs: append([][2]int{}, pairs...)}
}

// String returns "SAME", "VALID" or the pairs.
func (p Padding) String() string {
	switch p.mode {
	case padSame:
		return "SAME"
	case padExplicit:
		return fmt.Sprint(p.pairs)
	}
	return "VALID"
}

// resolve returns the padding before and after each of the nd spatial
// dimensions of sizes in (already dilated) for windows of dilated sizes
// k and the given strides.
func (p Padding) resolve(op string, in, k, strides []int) (lo, hi []int) {
	nd := len(in)
	lo, hi = make([]int, nd), make([]int, nd)
	switch p.mode {
	case padSame:
		for j := range nd {
			out := in[j] / strides[j] // ⌈in/stride⌉, without overflow
			if in[j]%strides[j] != 0 {
				out++
			}
			total := max((out-1)*strides[j]+k[j]-in[j], 0)
			lo[j], hi[j] = total/2, total-total/2
		}
	case padExplicit:
		pairs := p.pairs
		if len(pairs) == 1 && nd > 1 {
			for range nd - 1 {
				pairs = append(pairs, pairs[0])
			}
		}
		if len(pairs) != nd {
			errorf(op, "padding has %d pairs for %d spatial dimensions", len(p.pairs), nd)
		}
		for j, pr := range pairs {
			lo[j], hi[j] = pr[0], pr[1]
		}
	}
	return lo, hi
}

// ConvOption is an option of Conv, Conv1D, Conv2D, Conv3D and
// ConvTranspose2D: ConvStrides, ConvPadding, ConvDilation,
// ConvInputDilation, ConvGroups, ConvBatchGroups; and of the poolings
// MaxPool2D and AvgPool2D: ConvStrides, ConvPadding and PoolWindow.
type ConvOption interface{ applyConv(*convConfig) }

type convConfig struct {
	strides, dilation, inputDilation []int
	padding                          Padding
	groups, batchGroups              int
	// window is PoolWindow's (pooling only).
	window []int
}

// PoolWindow sets a pooling window of h×w elements, for windows that
// are not square (MaxPool2D's and AvgPool2D's window argument is the
// square's side). Pooling only.
func PoolWindow(h, w int) ConvOption {
	return convOption(func(c *convConfig) { c.window = []int{h, w} })
}

type convOption func(*convConfig)

func (f convOption) applyConv(c *convConfig) { f(c) }

// ConvStrides sets the window's step along each spatial dimension (one
// value for all of them, or one per dimension; default 1 for a
// convolution, and the window's size for MaxPool2D and AvgPool2D).
func ConvStrides(s ...int) ConvOption {
	s = append([]int{}, s...)
	return convOption(func(c *convConfig) { c.strides = s })
}

// ConvPadding sets the padding (default ValidPadding).
func ConvPadding(p Padding) ConvOption {
	return convOption(func(c *convConfig) { c.padding = p })
}

// ConvDilation sets the kernel's dilation: its taps are d apart along
// each spatial dimension (one value for all, or one per dimension;
// default 1, an atrous convolution above).
func ConvDilation(d ...int) ConvOption {
	d = append([]int{}, d...)
	return convOption(func(c *convConfig) { c.dilation = d })
}

// ConvInputDilation dilates the input: d−1 zeros between its elements
// along each spatial dimension (one value for all, or one per
// dimension; default 1). Conv only; ConvTranspose2D dilates its input
// by the strides itself.
func ConvInputDilation(d ...int) ConvOption {
	d = append([]int{}, d...)
	return convOption(func(c *convConfig) { c.inputDilation = d })
}

// ConvGroups splits the input and output channels into g groups, output
// group i seeing only input group i (default 1; g = channels is a
// depthwise convolution).
func ConvGroups(g int) ConvOption {
	return convOption(func(c *convConfig) { c.groups = g })
}

// ConvBatchGroups splits the input batch and the output channels into
// g groups, output group i seeing only input batch group i; the output
// batch is the input's divided by g (default 1). It is what the kernel
// gradient of a grouped convolution is, and cannot be combined with
// ConvGroups above 1. Conv only.
func ConvBatchGroups(g int) ConvOption {
	return convOption(func(c *convConfig) { c.batchGroups = g })
}

// perDim expands an option's values to nd spatial dimensions: nil is
// def everywhere, one value applies to all; each must be ≥ 1.
func perDim(op, what string, v []int, nd, def int) []int {
	out := make([]int, nd)
	switch len(v) {
	case 0:
		for j := range out {
			out[j] = def
		}
		return out
	case 1:
		for j := range out {
			out[j] = v[0]
		}
	case nd:
		copy(out, v)
	default:
		errorf(op, "%s %v: want one value or %d (one per spatial dimension)", what, v, nd)
	}
	for _, s := range out {
		if s < 1 {
			errorf(op, "%s %v: values must be ≥ 1", what, v)
		}
	}
	return out
}

// dilated returns (d−1)·dil + 1 for d > 0, 0 for d = 0, panicking with
// *Error naming op when it overflows.
func dilated(op string, d, dil int) int {
	n, err := prims.PadLen(d, 0, 0, dil-1)
	if err != nil {
		errorf(op, "size %d dilated by %d: %v", d, dil, err)
	}
	return n
}

// convOperands checks Conv's operands and options and returns them as
// one float dtype with the primitive's parameters.
func convOperands(op string, x, w *Tensor, rank int, opts []ConvOption) (*Tensor, *Tensor, prims.ConvParams, convConfig) {
	checkTensor(op, x)
	checkTensor(op, w)
	if x.Rank() < 2 || (rank > 0 && x.Rank() != rank) {
		want := "rank ≥ 2 ([N, C, spatial…])"
		if rank > 0 {
			want = fmt.Sprintf("rank %d ([N, C, %d spatial dimensions])", rank, rank-2)
		}
		errorf(op, "input %s: want %s", x.TypeString(), want)
	}
	if w.Rank() != x.Rank() {
		errorf(op, "kernel %s must have the input %s's rank ([O, C/groups, kernel…])", w.TypeString(), x.TypeString())
	}
	var c convConfig
	for _, o := range opts {
		if o == nil {
			errorf(op, "nil option")
		}
		o.applyConv(&c)
	}
	if c.window != nil {
		errorf(op, "PoolWindow is an option of the poolings, not of a convolution")
	}
	if c.groups == 0 {
		c.groups = 1
	}
	if c.groups < 0 || c.batchGroups < 0 {
		errorf(op, "groups %d and batch groups %d must be ≥ 1", c.groups, c.batchGroups)
	}
	d := PromoteTypes(x.DType(), w.DType())
	if !d.IsFloat() {
		d = Float64
	}
	x, w = AsType(x, d), AsType(w, d)
	nd := x.Rank() - 2
	p := prims.ConvParams{
		Strides:           perDim(op, "strides", c.strides, nd, 1),
		RhsDilation:       perDim(op, "dilation", c.dilation, nd, 1),
		LhsDilation:       perDim(op, "input dilation", c.inputDilation, nd, 1),
		FeatureGroupCount: c.groups,
		BatchGroupCount:   c.batchGroups,
	}
	return x, w, p, c
}

// conv is Conv reporting errors as op, for inputs of the given rank (0:
// any).
func conv(op string, x, w *Tensor, rank int, opts []ConvOption) *Tensor {
	x, w, p, c := convOperands(op, x, w, rank, opts)
	nd := x.Rank() - 2
	in, k := make([]int, nd), make([]int, nd)
	for j := range nd {
		in[j] = dilated(op, x.Shape()[2+j], p.LhsDilation[j])
		k[j] = dilated(op, w.Shape()[2+j], p.RhsDilation[j])
	}
	p.PadLo, p.PadHi = c.padding.resolve(op, in, k, p.Strides)
	return interp.Bind1(prims.ConvGeneralDilated, p, x, w)
}

// Conv is the N-d convolution of deep learning (a cross-correlation: the
// kernel is not flipped) of the input x [N, C, spatial…] with the kernel
// w [O, C/groups, kernel spatial…], giving [N, O, out spatial…]:
//
//	out[n, o, q…] = Σ_{c, k…} x[n, g·C/groups + c, q·stride + k·dilation − pad_lo] · w[o, c, k…]
//
// for the group g of output channel o, elements outside x (padding)
// being 0. Options set the strides, padding, kernel dilation, input
// dilation, groups and batch groups (ConvStrides, ConvPadding,
// ConvDilation, ConvInputDilation, ConvGroups, ConvBatchGroups); by
// default strides and dilations are 1, the padding is ValidPadding and
// there is one group. Dtypes are
// promoted; integer operands are converted to f64. It is one
// conv_general_dilated primitive, differentiable in both operands and
// batched without a loop under Vmap. Conv panics with *Error when an
// operand is nil, the ranks differ or are below 2, the channels do not
// fit the kernel and groups, an option has the wrong number of values or
// a value below 1, the groups do not divide the channels (or the batch
// groups the batch), or the padding removes more than a dimension holds.
func Conv(x, w *Tensor, opts ...ConvOption) *Tensor {
	defer interp.Annotate("peel.Conv")
	return conv("peel.Conv", x, w, 0, opts)
}

// Conv1D is Conv for x [N, C, L] and w [O, C/groups, K]. It panics with
// *Error as Conv does, and when the ranks are not 3.
func Conv1D(x, w *Tensor, opts ...ConvOption) *Tensor {
	defer interp.Annotate("peel.Conv1D")
	return conv("peel.Conv1D", x, w, 3, opts)
}

// Conv2D is Conv for x [N, C, H, W] and w [O, C/groups, KH, KW]. It
// panics with *Error as Conv does, and when the ranks are not 4.
func Conv2D(x, w *Tensor, opts ...ConvOption) *Tensor {
	defer interp.Annotate("peel.Conv2D")
	return conv("peel.Conv2D", x, w, 4, opts)
}

// Conv3D is Conv for x [N, C, D, H, W] and w [O, C/groups, KD, KH, KW].
// It panics with *Error as Conv does, and when the ranks are not 5.
func Conv3D(x, w *Tensor, opts ...ConvOption) *Tensor {
	defer interp.Annotate("peel.Conv3D")
	return conv("peel.Conv3D", x, w, 5, opts)
}

// ConvTranspose2D is the transposed convolution ("deconvolution") of x
// [N, Cin, H, W] with w [Cin, Cout/groups, KH, KW] (PyTorch's layout of
// conv_transpose2d), giving [N, Cout, H', W']: the gradient of
// Conv2D(y, w, same options) with respect to y, for the y whose
// Conv2D has x's shape. So ConvTranspose2D undoes the shape change of the
// Conv2D with the same options:
//
//   - ValidPadding: H' = (H−1)·stride + (KH−1)·dilation + 1;
//   - SamePadding: H' = H·stride;
//   - ExplicitPadding(lo, hi): H' = (H−1)·stride + (KH−1)·dilation + 1 − lo − hi
//     (PyTorch's padding p is ExplicitPadding([2]int{p, p})).
//
// It is one conv_general_dilated (the input dilated by the strides, the
// kernel flipped with its channels exchanged). ConvInputDilation is
// refused. ConvTranspose2D panics with *Error as Conv2D does, and when
// the padding leaves no output.
func ConvTranspose2D(x, w *Tensor, opts ...ConvOption) *Tensor {
	const op = "peel.ConvTranspose2D"
	defer interp.Annotate(op)
	x, w, p, c := convOperands(op, x, w, 4, opts)
	if c.inputDilation != nil {
		errorf(op, "ConvInputDilation is not an option of a transposed convolution (the strides dilate its input)")
	}
	if c.batchGroups > 1 {
		errorf(op, "ConvBatchGroups is not an option of a transposed convolution")
	}
	g := p.FeatureGroupCount
	if w.Shape()[0] != x.Shape()[1] || w.Shape()[0]%g != 0 {
		errorf(op, "kernel %s must be [Cin, Cout/groups, KH, KW] with Cin = %d input channels divisible by %d groups", w.TypeString(), x.Shape()[1], g)
	}
	nd := 2
	in, k, size := make([]int, nd), make([]int, nd), make([]int, nd+2)
	size[0], size[1] = x.Shape()[0], w.Shape()[1]*g
	for j := range nd {
		h := x.Shape()[2+j]
		k[j] = dilated(op, w.Shape()[2+j], p.RhsDilation[j])
		switch c.padding.mode {
		case padSame:
			in[j] = h * p.Strides[j]
		default:
			in[j] = dilated(op, h, p.Strides[j]) + k[j] - 1
		}
	}
	if c.padding.mode == padSame {
		for j := range nd {
			if h := x.Shape()[2+j]; h != 0 && in[j]/h != p.Strides[j] {
				errorf(op, "output size %d·%d is too large", h, p.Strides[j])
			}
		}
	}
	lo, hi := c.padding.resolve(op, in, k, p.Strides)
	if c.padding.mode == padExplicit {
		for j := range nd {
			in[j] -= lo[j] + hi[j]
			if lo[j] < 0 || hi[j] < 0 || in[j] <= 0 {
				errorf(op, "padding %v leaves no output along spatial dimension %d (or is negative)", c.padding, j)
			}
		}
	}
	p.PadLo, p.PadHi = lo, hi
	copy(size[2:], in)
	return prims.ConvTransposeLhs(p, x, w, size)
}
