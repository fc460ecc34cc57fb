package peel_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/peel-ml/peel"
)

// TestTensorMethods checks every arithmetic method against the function
// it stands for, elementwise in float64.
func TestTensorMethods(t *testing.T) {
	x := peel.FromFloat64s([]float64{0.5, 1.5, 2.25, 3, 0.75, 1.25}, 2, 3)
	y := peel.FromFloat64s([]float64{1.25, 0.5, 2, 0.25, 3, 1}, 2, 3)
	w := peel.FromFloat64s([]float64{1, 2, 3, 4, 5, 6}, 3, 2)
	cases := []struct {
		name      string
		got, want *peel.Tensor
	}{
		{"Add", x.Add(y), peel.Add(x, y)},
		{"AddScalar", x.Add(2), peel.Add(x, 2)},
		{"Sub", x.Sub(y), peel.Sub(x, y)},
		{"Mul", x.Mul(0.5), peel.Mul(x, 0.5)},
		{"Div", x.Div(y), peel.Div(x, y)},
		{"Pow", x.Pow(3), peel.Pow(x, 3)},
		{"Maximum", x.Maximum(y), peel.Maximum(x, y)},
		{"Minimum", x.Minimum(1), peel.Minimum(x, 1)},
		{"MatMul", x.MatMul(w), peel.MatMul(x, w)},
		{"Neg", x.Neg(), peel.Neg(x)},
		{"Abs", x.Neg().Abs(), x},
		{"Exp", x.Exp(), peel.Exp(x)},
		{"Log", x.Log(), peel.Log(x)},
		{"Sqrt", x.Sqrt(), peel.Sqrt(x)},
		{"Square", x.Square(), peel.Square(x)},
		{"Tanh", x.Tanh(), peel.Tanh(x)},
		{"Sin", x.Sin(), peel.Sin(x)},
		{"Cos", x.Cos(), peel.Cos(x)},
		{"ReLU", x.Sub(1).ReLU(), peel.ReLU(peel.Sub(x, 1))},
		{"Sigmoid", x.Sigmoid(), peel.Sigmoid(x)},
		{"Sum", x.Sum(), peel.Sum(x)},
		{"SumAxis", x.Sum(1), peel.Sum(x, 1)},
		{"Mean", x.Mean(0), peel.Mean(x, 0)},
		{"Max", x.Max(), peel.Max(x)},
		{"Min", x.Min(1), peel.Min(x, 1)},
		{"Reshape", x.Reshape(3, -1), peel.Reshape(x, 3, 2)},
		{"Flatten", x.Flatten(), peel.Flatten(x)},
		{"T", x.T(), peel.Transpose(x, 1, 0)},
		{"Unsqueeze", x.Unsqueeze(1), peel.Reshape(x, 2, 1, 3)},
		{"Squeeze", x.Unsqueeze(0).Squeeze(), x},
		// A chain reads left to right: 0.5·(Σx² + 1).
		{"Chain", x.Square().Sum().Add(1).Mul(0.5), peel.Mul(peel.Add(peel.Sum(peel.Square(x)), 1), 0.5)},
	}
	for _, c := range cases {
		if !slices.Equal(c.got.Shape(), c.want.Shape()) {
			t.Errorf("%s: shape %v, want %v", c.name, c.got.Shape(), c.want.Shape())
			continue
		}
		g, w := c.got.Float64s(), c.want.Float64s()
		for i := range g {
			if g[i] != w[i] {
				t.Errorf("%s: element %d = %v, want %v", c.name, i, g[i], w[i])
			}
		}
	}
}

// TestTensorMethodErrors: a method's misuse names the user-level op and
// the user's call site, as the function's does.
func TestTensorMethodErrors(t *testing.T) {
	defer func() {
		var e *peel.Error
		if r := recover(); r == nil {
			t.Fatal("no panic")
		} else if err, ok := r.(error); !ok || !errors.As(err, &e) {
			t.Fatalf("panic %v, want *peel.Error", r)
		} else if msg := e.Error(); !strings.Contains(msg, "peel.Add") || !strings.Contains(msg, "tensor_methods_test.go") {
			t.Fatalf("error %q does not name peel.Add and the call site", msg)
		}
	}()
	peel.Zeros(peel.Float64, 2, 3).Add(peel.Zeros(peel.Float64, 4))
}
