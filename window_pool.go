package peel

import (
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// pool2D checks a 2-D pooling op's arguments and returns the window
// parameters over all four dimensions of x [N, C, H, W].
func pool2D(op string, x *Tensor, window, strides [2]int, padding Padding) prims.WindowParams {
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
	}
}

// MaxPool2D returns the maximum of each window of x [N, C, H, W]:
// [N, C, H', W'], windows window[0]×window[1] elements stepping by
// strides (a zero stride is the window's size, PyTorch's default) over
// x padded by padding (SamePadding, ValidPadding or ExplicitPadding),
// padding taking no part (it holds −∞). A NaN in a window makes its
// maximum NaN. Its derivative routes each result's tangent (or
// cotangent) from the first element of its window holding the maximum.
// It is one reduce_window_max primitive. MaxPool2D panics with *Error
// when x is nil, bool or not of rank 4, a window size is below 1, a
// stride is negative, or the padding has the wrong number of pairs or
// removes more than a dimension holds.
func MaxPool2D(x *Tensor, window, strides [2]int, padding Padding) *Tensor {
	const op = "peel.MaxPool2D"
	defer interp.Annotate(op)
	p := pool2D(op, x, window, strides, padding)
	return interp.Bind1(prims.ReduceWindowMax, p, x)
}

// AvgPool2D returns the mean of each window of x [N, C, H, W] (see
// MaxPool2D for the windows): the window's sum divided by its size
// window[0]·window[1], padding included, as zeros (PyTorch's
// count_include_pad=true; windows at a padded edge average in zeros).
// Integer inputs are converted to f64. It is one reduce_window_sum
// primitive and a division. AvgPool2D panics with *Error in the cases
// MaxPool2D does.
func AvgPool2D(x *Tensor, window, strides [2]int, padding Padding) *Tensor {
	const op = "peel.AvgPool2D"
	defer interp.Annotate(op)
	p := pool2D(op, x, window, strides, padding)
	s := interp.Bind1(prims.ReduceWindowSum, p, toFloat(x))
	return bin(prims.Div, s, fill(float64(window[0])*float64(window[1]), s))
}
