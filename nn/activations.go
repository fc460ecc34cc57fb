package nn

import "github.com/peel-ml/peel"

// The activations are peel's, under the names of jax.nn; each panics as
// the peel function does (see its documentation for NaN and dtypes).

// ReLU is peel.ReLU, max(x, 0) with derivative 0 at 0.
func ReLU(x *peel.Tensor) *peel.Tensor { return peel.ReLU(x) }

// GELU is peel.GELU, the exact x·Φ(x).
func GELU(x *peel.Tensor) *peel.Tensor { return peel.GELU(x) }

// GELUTanh is peel.GELUTanh, GELU's tanh approximation.
func GELUTanh(x *peel.Tensor) *peel.Tensor { return peel.GELUTanh(x) }

// Sigmoid is peel.Sigmoid, 1/(1+e⁻ˣ).
func Sigmoid(x *peel.Tensor) *peel.Tensor { return peel.Sigmoid(x) }

// Tanh is peel.Tanh.
func Tanh(x *peel.Tensor) *peel.Tensor { return peel.Tanh(x) }

// Softplus is peel.Softplus, log(1+eˣ) computed stably.
func Softplus(x *peel.Tensor) *peel.Tensor { return peel.Softplus(x) }

// LogSigmoid is peel.LogSigmoid, -Softplus(-x).
func LogSigmoid(x *peel.Tensor) *peel.Tensor { return peel.LogSigmoid(x) }

// Softmax is peel.Softmax over axis.
func Softmax(x *peel.Tensor, axis int) *peel.Tensor { return peel.Softmax(x, axis) }

// LogSoftmax is peel.LogSoftmax over axis.
func LogSoftmax(x *peel.Tensor, axis int) *peel.Tensor { return peel.LogSoftmax(x, axis) }

// LogSumExp is peel.LogSumExp over axes (all when none).
func LogSumExp(x *peel.Tensor, axes ...int) *peel.Tensor { return peel.LogSumExp(x, axes...) }

// OneHot is peel.OneHot: the one-hot encoding of i64 class indices.
func OneHot(idx *peel.Tensor, n int, dt peel.DType) *peel.Tensor { return peel.OneHot(idx, n, dt) }

// MaxPool2D is peel.MaxPool2D: the maximum over window×window patches of
// x [N, C, H, W].
func MaxPool2D(x *peel.Tensor, window, strides [2]int, padding peel.Padding) *peel.Tensor {
	return peel.MaxPool2D(x, window, strides, padding)
}

// AvgPool2D is peel.AvgPool2D: the mean over window×window patches of x
// [N, C, H, W].
func AvgPool2D(x *peel.Tensor, window, strides [2]int, padding peel.Padding) *peel.Tensor {
	return peel.AvgPool2D(x, window, strides, padding)
}

// SiLU is peel.SiLU, x·σ(x) (swish).
func SiLU(x *peel.Tensor) *peel.Tensor { return peel.SiLU(x) }

// ELU is peel.ELU with slope alpha below zero.
func ELU(x *peel.Tensor, alpha float64) *peel.Tensor { return peel.ELU(x, alpha) }

// SELU is peel.SELU, the self-normalizing ELU.
func SELU(x *peel.Tensor) *peel.Tensor { return peel.SELU(x) }

// LeakyReLU is peel.LeakyReLU with the given negative slope.
func LeakyReLU(x *peel.Tensor, slope float64) *peel.Tensor { return peel.LeakyReLU(x, slope) }

// Mish is peel.Mish, x·tanh(softplus(x)).
func Mish(x *peel.Tensor) *peel.Tensor { return peel.Mish(x) }

// HardSwish is peel.HardSwish, x·relu6(x+3)/6.
func HardSwish(x *peel.Tensor) *peel.Tensor { return peel.HardSwish(x) }

// GLU is peel.GLU: the first half of x along axis times the sigmoid of
// the second.
func GLU(x *peel.Tensor, axis int) *peel.Tensor { return peel.GLU(x, axis) }
