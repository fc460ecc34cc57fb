package peel

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// pool2D checks a 2-D pooling op's arguments and returns the window
// parameters over all four dimensions of x [N, C, H, W] and the window.
func pool2D(op string, x *Tensor, side int, opts []ConvOption) (prims.WindowParams, [2]int) {
	var c convConfig
	for _, o := range opts {
		if o == nil {
			errorf(op, "nil option")
		}
		o.applyConv(&c)
	}
	if c.dilation != nil || c.inputDilation != nil || c.groups != 0 || c.batchGroups != 0 {
		errorf(op, "only ConvStrides, ConvPadding and PoolWindow are options of a pooling")
	}
	window := [2]int{side, side}
	if c.window != nil {
		window = [2]int{c.window[0], c.window[1]}
	}
	var strides [2]int
	switch len(c.strides) {
	case 0:
	case 1:
		strides = [2]int{c.strides[0], c.strides[0]}
	case 2:
		strides = [2]int{c.strides[0], c.strides[1]}
	default:
		errorf(op, "strides %v: want one value or two", c.strides)
	}
	padding := c.padding // the zero Padding is ValidPadding
	checkTensor(op, x)
	if x.Rank() != 4 {
		errorf(op, "input %s: want rank 4 ([N, C, H, W])", x.TypeString())
	}
	if x.DType() == Bool {
		errorf(op, "input %s is bool; convert it to a numeric dtype with AsType", x.TypeString())
	}
	for j := range 2 {
		if window[j] < 1 {
			errorf(op, "window %v: sizes must be ≥ 1", window)
		}
		if strides[j] == 0 {
			strides[j] = window[j]
		}
		if strides[j] < 1 {
			errorf(op, "strides %v: values must be ≥ 1 (or 0 for the window size)", strides)
		}
	}
	lo, hi := padding.resolve(op, x.Shape()[2:], window[:], strides[:])
	return prims.WindowParams{
		Window:  []int{1, 1, window[0], window[1]},
		Strides: []int{1, 1, strides[0], strides[1]},
		PadLo:   []int{0, 0, lo[0], lo[1]},
		PadHi:   []int{0, 0, hi[0], hi[1]},
	}, window
}

// MaxPool2D returns the maximum of each window of x [N, C, H, W]:
// [N, C, H', W'], windows of window×window elements (PoolWindow(h, w)
// for others) stepping by the window's size (ConvStrides for another
// step; a zero stride is the window's size) over x unpadded
// (ConvPadding(SamePadding) or ExplicitPadding to pad), padding taking no
// part (it holds −∞): MaxPool2D(x, 2) is torch's F.max_pool2d(x, 2). A
// NaN in a window makes its maximum NaN. Its derivative routes each
// result's tangent (or cotangent) from the first element of its window
// holding the maximum. It is one reduce_window_max primitive. MaxPool2D
// panics with *Error when x is nil, bool or not of rank 4, a window size
// is below 1, a stride is negative, the padding has the wrong number of
// pairs or removes more than a dimension holds, or an option is not a
// pooling's.
func MaxPool2D(x *Tensor, window int, opts ...ConvOption) *Tensor {
	const op = "peel.MaxPool2D"
	defer interp.Annotate(op)
	p, _ := pool2D(op, x, window, opts)
	return interp.Bind1(prims.ReduceWindowMax, p, x)
}

// AvgPool2D returns the mean of each window of x [N, C, H, W] (see
// MaxPool2D for the windows): the window's sum divided by its size
// window's elements, padding included, as zeros (PyTorch's
// count_include_pad=true; windows at a padded edge average in zeros).
// Integer inputs are converted to f64. It is one reduce_window_sum
// primitive and a division. AvgPool2D panics with *Error in the cases
// MaxPool2D does.
func AvgPool2D(x *Tensor, window int, opts ...ConvOption) *Tensor {
	const op = "peel.AvgPool2D"
	defer interp.Annotate(op)
	p, window2 := pool2D(op, x, window, opts)
	s := interp.Bind1(prims.ReduceWindowSum, p, toFloat(x))
	return bin(prims.Div, s, fill(float64(window2[0])*float64(window2[1]), s))
}
