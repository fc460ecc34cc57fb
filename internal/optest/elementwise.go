package optest

import (
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// The elementwise family's ops.

// notDifferentiable marks an op whose operands are all bool.
func notDifferentiable(op Op) Op {
	op.Differentiable = false
	return op
}

func boolOf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// floatOnly wraps a float ref so integer inputs (converted to f64) work.
func elementwise() []Op {
	ops := []Op{
		unaryOp("peel.Neg", peel.Neg, func(x float64) float64 { return -x }, numerics, same, -5, 5),
		unaryOp("peel.Abs", peel.Abs, math.Abs, numerics, same, -5, 5),
		unaryOp("peel.Sign", peel.Sign, sign, numerics, same, -5, 5),
		unaryOp("peel.Floor", peel.Floor, math.Floor, numerics, same, -5, 5),
		unaryOp("peel.Ceil", peel.Ceil, math.Ceil, numerics, same, -5, 5),
		unaryOp("peel.Round", peel.Round, math.RoundToEven, numerics, same, -5, 5),
		unaryOp("peel.Exp", peel.Exp, math.Exp, allTypes[1:], floatOf, -5, 5),
		unaryOp("peel.Log", peel.Log, math.Log, allTypes[1:], floatOf, 0.01, 10),
		unaryOp("peel.Log1p", peel.Log1p, math.Log1p, floats, floatOf, -0.9, 10),
		unaryOp("peel.Expm1", peel.Expm1, math.Expm1, floats, floatOf, -3, 3),
		unaryOp("peel.Sqrt", peel.Sqrt, math.Sqrt, allTypes[1:], floatOf, 0, 10),
		unaryOp("peel.Rsqrt", peel.Rsqrt, func(x float64) float64 { return 1 / math.Sqrt(x) }, floats, floatOf, 0.01, 10),
		unaryOp("peel.Sin", peel.Sin, math.Sin, floats, floatOf, -5, 5),
		unaryOp("peel.Sinc", peel.Sinc, reference(prims.Sinc), allTypes[1:], floatOf, -5, 5),
		unaryOp("peel.Cos", peel.Cos, math.Cos, floats, floatOf, -5, 5),
		unaryOp("peel.Tan", peel.Tan, math.Tan, floats, floatOf, -1.4, 1.4),
		unaryOp("peel.Tanh", peel.Tanh, math.Tanh, allTypes[1:], floatOf, -5, 5),
		unaryOp("peel.Sigmoid", peel.Sigmoid, sigmoid, floats, floatOf, -8, 8),
		unaryOp("peel.Erf", peel.Erf, math.Erf, floats, floatOf, -3, 3),
		unaryOp("peel.Square", peel.Square, func(x float64) float64 { return x * x }, numerics, same, -5, 5),
		unaryOp("peel.ReLU", peel.ReLU, func(x float64) float64 { return math.Max(x, 0) }, numerics, same, -5, 5),
		unaryOp("peel.GELU", peel.GELU, reference(prims.GELU), floats, floatOf, -4, 4),
		unaryOp("peel.Softplus", peel.Softplus, func(x float64) float64 {
			return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
		}, floats, floatOf, -30, 30),
		notDifferentiable(unaryOp("peel.LogicalNot", peel.LogicalNot, func(x float64) float64 { return boolOf(x == 0) }, []peel.DType{peel.Bool}, same, 0, 1)),

		binaryOp("peel.Add", peel.Add, func(a, b float64) float64 { return a + b }, numerics, same, -5, 5),
		binaryOp("peel.Sub", peel.Sub, func(a, b float64) float64 { return a - b }, numerics, same, -5, 5),
		binaryOp("peel.Mul", peel.Mul, func(a, b float64) float64 { return a * b }, numerics, same, -5, 5),
		binaryOp("peel.Maximum", peel.Maximum, math.Max, numerics, same, -5, 5),
		binaryOp("peel.Minimum", peel.Minimum, math.Min, numerics, same, -5, 5),
		binaryOp("peel.Atan2", peel.Atan2, math.Atan2, floats, same, -5, 5),
		binaryOp("peel.Pow", peel.Pow, math.Pow, floats, same, 0.1, 3),
		binaryOp("peel.Equal", peel.Equal, func(a, b float64) float64 { return boolOf(a == b) }, allTypes, toBool, -2, 2),
		binaryOp("peel.NotEqual", peel.NotEqual, func(a, b float64) float64 { return boolOf(a != b) }, allTypes, toBool, -2, 2),
		binaryOp("peel.Less", peel.Less, func(a, b float64) float64 { return boolOf(a < b) }, allTypes, toBool, -2, 2),
		binaryOp("peel.LessEqual", peel.LessEqual, func(a, b float64) float64 { return boolOf(a <= b) }, allTypes, toBool, -2, 2),
		binaryOp("peel.Greater", peel.Greater, func(a, b float64) float64 { return boolOf(a > b) }, allTypes, toBool, -2, 2),
		binaryOp("peel.GreaterEqual", peel.GreaterEqual, func(a, b float64) float64 { return boolOf(a >= b) }, allTypes, toBool, -2, 2),
		notDifferentiable(binaryOp("peel.LogicalAnd", peel.LogicalAnd, func(a, b float64) float64 { return boolOf(a != 0 && b != 0) }, []peel.DType{peel.Bool}, same, 0, 1)),
		notDifferentiable(binaryOp("peel.LogicalOr", peel.LogicalOr, func(a, b float64) float64 { return boolOf(a != 0 || b != 0) }, []peel.DType{peel.Bool}, same, 0, 1)),
	}
	div := binaryOp("peel.Div", peel.Div, func(a, b float64) float64 { return a / b }, numerics, floatOf, -5, 5)
	div.Samples = binarySamples(numerics, -5, 5, true)
	rem := binaryOp("peel.Rem", peel.Rem, math.Mod, numerics, same, -7, 7)
	rem.Samples = binarySamples(numerics, -7, 7, true)
	ops = append(ops, div, rem)
	ops = append(ops, Op{
		Name: "peel.Where",
		F:    func(a []*T) *T { return peel.Where(a[0], a[1], a[2]) },
		Samples: func() []Sample {
			g := NewGen(3)
			var out []Sample
			for _, d := range allTypes {
				out = append(out,
					Sample{Name: d.String(), Args: []*T{g.Tensor(peel.Bool, 0, 1, 2, 3), g.Tensor(d, -3, 3, 2, 3), g.Tensor(d, -3, 3, 3)}},
					Sample{Name: d.String() + "/rank0", Args: []*T{g.Tensor(peel.Bool, 0, 1), g.Tensor(d, -3, 3), g.Tensor(d, -3, 3)}},
					Sample{Name: d.String() + "/empty", Args: []*T{g.Tensor(peel.Bool, 0, 1, 0, 2), g.Tensor(d, -3, 3, 0, 2), g.Tensor(d, -3, 3, 1)}})
			}
			return out
		},
		Ref: func(a []Host) Host {
			return Map(peel.PromoteTypes(a[1].DType, a[2].DType), a, func(x []float64) float64 {
				if x[0] != 0 {
					return x[1]
				}
				return x[2]
			})
		},
		Differentiable: true,
	}, Op{
		Name:    "peel.Clip/[-1,2]",
		F:       func(a []*T) *T { return peel.Clip(a[0], -1, 2) },
		Samples: unarySamples(numerics, -4, 4),
		Ref: func(a []Host) Host {
			return Map(a[0].DType, a, func(x []float64) float64 {
				if math.IsNaN(x[0]) {
					return x[0]
				}
				return math.Min(math.Max(x[0], -1), 2)
			})
		},
		Differentiable: true,
	}, Op{
		Name:    "peel.AsType/f32",
		F:       func(a []*T) *T { return peel.AsType(a[0], peel.Float32) },
		Samples: unarySamples(allTypes, -100, 100),
		Ref: func(a []Host) Host {
			return Map(peel.Float32, a, func(x []float64) float64 { return x[0] })
		},
	}, Op{
		Name:    "peel.AsType/i64",
		F:       func(a []*T) *T { return peel.AsType(a[0], peel.Int64) },
		Samples: unarySamples(numerics, -100, 100),
		Ref: func(a []Host) Host {
			return Map(peel.Int64, a, func(x []float64) float64 {
				switch {
				case math.IsNaN(x[0]):
					return 0
				case x[0] >= math.MaxInt64:
					return math.MaxInt64
				case x[0] <= math.MinInt64:
					return math.MinInt64
				}
				return math.Trunc(x[0])
			})
		},
	})
	return ops
}

// reference returns the float64 meaning of the elementwise primitive p
// (prims.Reference), the reference of the op that applies it.
func reference(p *interp.Prim) func(float64) float64 {
	r, ok := prims.ReferenceOf(p)
	if !ok {
		panic("optest: " + p.Name + " has no prims.Reference")
	}
	return r.F
}
