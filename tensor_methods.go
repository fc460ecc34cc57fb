package peel

import "github.com/peel-ml/peel/interp"

// Tensor's arithmetic methods (x.Add(y), x.Square().Sum(), x.MatMul(w),
// …; see interp.Tensor) are the functions of this package under the same
// names; they are installed here so that interp, which defines Tensor,
// need not import the operations.
func init() {
	interp.SetTensorOps(&interp.TensorOps{
		Add: Add, Sub: Sub, Mul: Mul, Div: Div, Pow: Pow, Maximum: Maximum, Minimum: Minimum,
		MatMul: MatMul,
		Neg:    Neg, Abs: Abs, Exp: Exp, Log: Log, Sqrt: Sqrt, Square: Square, Tanh: Tanh, Sin: Sin,
		Cos: Cos, ReLU: ReLU, Sigmoid: Sigmoid,
		Sum: Sum, Mean: Mean, Max: Max, Min: Min, Flatten: Flatten, Reshape: Reshape, Trans: Transpose,
		Squeeze: Squeeze, Unsqueeze: Unsqueeze,
	})
}
