package interp_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/peel-ml/peel/interp"
)

// TestTensorMethodsAreTheUsers keeps Tensor's method set to the user's
// API (peel.Tensor is interp.Tensor, so `go doc peel.Tensor` lists these):
// interpreter plumbing belongs in package functions (Rebind, TracerOf,
// Snapshot, …). A method added here must be one a user calls.
func TestTensorMethodsAreTheUsers(t *testing.T) {
	user := []string{
		"Bools", "DType", "Float32s", "Float64s", "Int32s", "Int64s", "IsConcrete",
		"Item", "Rank", "Shape", "Size", "String", "TypeString", "Uint8s",
		// The arithmetic methods (tensor_methods.go), package peel's
		// functions of the same names.
		"Abs", "Add", "Cos", "Div", "Exp", "Flatten", "Log", "MatMul", "Max", "Maximum",
		"Mean", "Min", "Minimum", "Mul", "Neg", "Pow", "ReLU", "Reshape", "Sigmoid", "Sin",
		"Sqrt", "Square", "Squeeze", "Sub", "Sum", "T", "Tanh", "Unsqueeze",
	}
	slices.Sort(user)
	var got []string
	typ := reflect.TypeFor[*interp.Tensor]()
	for i := range typ.NumMethod() {
		got = append(got, typ.Method(i).Name)
	}
	if !slices.Equal(got, user) {
		t.Errorf("*interp.Tensor's methods are %v, want the user's API %v; move interpreter plumbing to a package function", got, user)
	}
}
