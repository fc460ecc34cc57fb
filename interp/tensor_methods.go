package interp

// Methods for the common operations, so that an expression reads left to
// right: x.Square().Sum().Add(logdet).Mul(0.5) is
// peel.Mul(peel.Add(peel.Sum(peel.Square(x)), logdet), 0.5). Each method is
// the package-level function of package peel under the same name, with the
// same broadcasting, promotion, errors and transforms; a Go number is a
// valid right operand of the binary methods, as it is of peel.Add.
//
// The operations live in package peel, which imports this one, so peel
// installs them here when it is initialized (SetTensorOps): a method
// called in a program that does not import peel panics with *Error.

// TensorOps are the functions behind Tensor's arithmetic methods.
type TensorOps struct {
	Add, Sub, Mul, Div, Pow, Maximum, Minimum    func(x, y any) *Tensor
	MatMul                                       func(x, y *Tensor) *Tensor
	Neg, Abs, Exp, Log, Sqrt, Square, Tanh, Sin  func(x *Tensor) *Tensor
	Cos, ReLU, Sigmoid                           func(x *Tensor) *Tensor
	Sum, Mean, Max, Min, Flatten, Reshape, Trans func(x *Tensor, ints ...int) *Tensor
	Squeeze                                      func(x *Tensor, axes ...int) *Tensor
	Unsqueeze                                    func(x *Tensor, axis int) *Tensor
}

var tensorOps *TensorOps

// SetTensorOps installs the functions behind Tensor's arithmetic methods;
// package peel calls it once, in its initialization. It panics with *Error
// if called twice.
func SetTensorOps(o *TensorOps) {
	if tensorOps != nil {
		panic(Errorf("interp.SetTensorOps: called twice"))
	}
	tensorOps = o
}

func ops() *TensorOps {
	if tensorOps == nil {
		panic(Errorf("Tensor's arithmetic methods need package peel: import github.com/peel-ml/peel"))
	}
	return tensorOps
}

// Add returns t + y (peel.Add).
func (t *Tensor) Add(y any) *Tensor { return ops().Add(t, y) }

// Sub returns t - y (peel.Sub).
func (t *Tensor) Sub(y any) *Tensor { return ops().Sub(t, y) }

// Mul returns t * y (peel.Mul).
func (t *Tensor) Mul(y any) *Tensor { return ops().Mul(t, y) }

// Div returns t / y, true division (peel.Div).
func (t *Tensor) Div(y any) *Tensor { return ops().Div(t, y) }

// Pow returns t ** y (peel.Pow).
func (t *Tensor) Pow(y any) *Tensor { return ops().Pow(t, y) }

// Maximum returns the elementwise maximum of t and y (peel.Maximum).
func (t *Tensor) Maximum(y any) *Tensor { return ops().Maximum(t, y) }

// Minimum returns the elementwise minimum of t and y (peel.Minimum).
func (t *Tensor) Minimum(y any) *Tensor { return ops().Minimum(t, y) }

// MatMul returns the matrix product t·y (peel.MatMul).
func (t *Tensor) MatMul(y *Tensor) *Tensor { return ops().MatMul(t, y) }

// Neg returns -t (peel.Neg).
func (t *Tensor) Neg() *Tensor { return ops().Neg(t) }

// Abs returns |t| (peel.Abs).
func (t *Tensor) Abs() *Tensor { return ops().Abs(t) }

// Exp returns e**t (peel.Exp).
func (t *Tensor) Exp() *Tensor { return ops().Exp(t) }

// Log returns the natural logarithm of t (peel.Log).
func (t *Tensor) Log() *Tensor { return ops().Log(t) }

// Sqrt returns the square root of t (peel.Sqrt).
func (t *Tensor) Sqrt() *Tensor { return ops().Sqrt(t) }

// Square returns t*t (peel.Square).
func (t *Tensor) Square() *Tensor { return ops().Square(t) }

// Tanh returns tanh(t) (peel.Tanh).
func (t *Tensor) Tanh() *Tensor { return ops().Tanh(t) }

// Sin returns sin(t) (peel.Sin).
func (t *Tensor) Sin() *Tensor { return ops().Sin(t) }

// Cos returns cos(t) (peel.Cos).
func (t *Tensor) Cos() *Tensor { return ops().Cos(t) }

// ReLU returns max(t, 0) (peel.ReLU).
func (t *Tensor) ReLU() *Tensor { return ops().ReLU(t) }

// Sigmoid returns 1/(1+e**-t) (peel.Sigmoid).
func (t *Tensor) Sigmoid() *Tensor { return ops().Sigmoid(t) }

// Sum returns the sum over axes, all of them by default (peel.Sum).
func (t *Tensor) Sum(axes ...int) *Tensor { return ops().Sum(t, axes...) }

// Mean returns the mean over axes, all of them by default (peel.Mean).
func (t *Tensor) Mean(axes ...int) *Tensor { return ops().Mean(t, axes...) }

// Max returns the maximum over axes, all of them by default (peel.Max).
func (t *Tensor) Max(axes ...int) *Tensor { return ops().Max(t, axes...) }

// Min returns the minimum over axes, all of them by default (peel.Min).
func (t *Tensor) Min(axes ...int) *Tensor { return ops().Min(t, axes...) }

// Reshape returns t with a new shape; one dimension may be -1
// (peel.Reshape).
func (t *Tensor) Reshape(shape ...int) *Tensor { return ops().Reshape(t, shape...) }

// Flatten returns t with axes start…end merged into one (peel.Flatten;
// start 0 and end -1 by default, so x.Flatten() is 1-D): x.Flatten(1) is
// torch's x.flatten(1).
func (t *Tensor) Flatten(axes ...int) *Tensor { return ops().Flatten(t, axes...) }

// Squeeze returns t without the given size-1 axes, all of them by default
// (peel.Squeeze).
func (t *Tensor) Squeeze(axes ...int) *Tensor { return ops().Squeeze(t, axes...) }

// Unsqueeze returns t with a size-1 axis inserted at axis (peel.Unsqueeze).
func (t *Tensor) Unsqueeze(axis int) *Tensor { return ops().Unsqueeze(t, axis) }

// T returns t with its axes reversed (peel.Transpose with no
// permutation), the transpose of a matrix; jax's x.T.
func (t *Tensor) T() *Tensor { return ops().Trans(t) }
