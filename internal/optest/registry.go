package optest

import (
	"fmt"
	"math"
	"sort"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
)

type T = peel.Tensor

var (
	floats   = []peel.DType{peel.Float32, peel.Float64}
	numerics = []peel.DType{peel.Int64, peel.Float32, peel.Float64}
	allTypes = []peel.DType{peel.Bool, peel.Int64, peel.Float32, peel.Float64}
)

// floatOf is the dtype float-only functions compute in: floats stay,
// integers and bools become f64.
func floatOf(d peel.DType) peel.DType {
	if d.IsFloat() {
		return d
	}
	return peel.Float64
}

func same(d peel.DType) peel.DType { return d }
func toBool(peel.DType) peel.DType { return peel.Bool }

// unarySamples draws every shape of Shapes for each dtype, plus the float
// edge values.
func unarySamples(dtypes []peel.DType, lo, hi float64) func() []Sample {
	return func() []Sample {
		g := NewGen(1)
		var out []Sample
		for _, d := range dtypes {
			for _, s := range Shapes {
				out = append(out, Sample{Name: fmt.Sprintf("%v%v", d, s), Args: []*T{g.Tensor(d, lo, hi, s...)}})
			}
			if d.IsFloat() {
				h := Host{Shape: []int{len(FloatEdges)}, DType: d, Data: FloatEdges}
				out = append(out, Sample{Name: fmt.Sprintf("%v/edges", d), Args: []*T{h.Tensor()}})
			}
		}
		return out
	}
}

func unaryOp(name string, f func(*T) *T, ref func(float64) float64, dtypes []peel.DType, out func(peel.DType) peel.DType, lo, hi float64) Op {
	return Op{
		Name:    name,
		F:       func(a []*T) *T { return f(a[0]) },
		Samples: unarySamples(dtypes, lo, hi),
		Ref: func(a []Host) Host {
			return Map(out(a[0].DType), a, func(x []float64) float64 { return ref(x[0]) })
		},
		Differentiable: true,
	}
}

// binaryShapes are operand shape pairs, including broadcasts.
var binaryShapes = [][2][]int{{{}, {}}, {{5}, {5}}, {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{}, {2, 3}}, {{0}, {0}}, {{2, 0}, {1, 0}}, {{2, 3, 4}, {3, 1}}}

func binarySamples(dtypes []peel.DType, lo, hi float64, avoidZero bool) func() []Sample {
	return func() []Sample {
		g := NewGen(2)
		var out []Sample
		for _, d := range dtypes {
			for _, sh := range binaryShapes {
				y := g.Tensor(d, lo, hi, sh[1]...)
				if avoidZero {
					y = peel.Where(peel.Equal(y, 0), peel.AsType(peel.Scalar(int64(3)), d), y)
				}
				out = append(out, Sample{Name: fmt.Sprintf("%v%v%v", d, sh[0], sh[1]), Args: []*T{g.Tensor(d, lo, hi, sh[0]...), y}})
			}
		}
		// Mixed dtypes promote.
		if len(dtypes) > 1 {
			out = append(out, Sample{Name: "mixed", Args: []*T{g.Tensor(dtypes[0], lo, hi, 2, 3), g.Tensor(dtypes[len(dtypes)-1], 1, hi, 3)}})
		}
		return out
	}
}

func binaryOp(name string, f func(x, y any) *T, ref func(a, b float64) float64, dtypes []peel.DType, out func(peel.DType) peel.DType, lo, hi float64) Op {
	return Op{
		Name:    name,
		F:       func(a []*T) *T { return f(a[0], a[1]) },
		Samples: binarySamples(dtypes, lo, hi, false),
		Ref: func(a []Host) Host {
			d := peel.PromoteTypes(a[0].DType, a[1].DType)
			return Map(out(d), a, func(x []float64) float64 { return ref(x[0], x[1]) })
		},
		Differentiable: true,
	}
}

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
		unaryOp("peel.Cos", peel.Cos, math.Cos, floats, floatOf, -5, 5),
		unaryOp("peel.Tan", peel.Tan, math.Tan, floats, floatOf, -1.4, 1.4),
		unaryOp("peel.Tanh", peel.Tanh, math.Tanh, allTypes[1:], floatOf, -5, 5),
		unaryOp("peel.Sigmoid", peel.Sigmoid, sigmoid, floats, floatOf, -8, 8),
		unaryOp("peel.Erf", peel.Erf, math.Erf, floats, floatOf, -3, 3),
		unaryOp("peel.Square", peel.Square, func(x float64) float64 { return x * x }, numerics, same, -5, 5),
		unaryOp("peel.ReLU", peel.ReLU, func(x float64) float64 { return math.Max(x, 0) }, numerics, same, -5, 5),
		unaryOp("peel.GELU", peel.GELU, func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }, floats, floatOf, -4, 4),
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

// reduceRef reduces h over axes (nil: all) with f applied to the values of
// each output element, giving dtype d.
func reduceRef(h Host, axes []int, keep bool, d peel.DType, f func(v []float64) float64) Host {
	r := len(h.Shape)
	red := make([]bool, r)
	if axes == nil {
		for i := range red {
			red[i] = true
		}
	}
	for _, a := range axes {
		if a < 0 {
			a += r
		}
		red[a] = true
	}
	var shape []int
	for k, n := range h.Shape {
		if !red[k] {
			shape = append(shape, n)
		} else if keep {
			shape = append(shape, 1)
		}
	}
	if shape == nil {
		shape = []int{}
	}
	out := Host{Shape: shape, DType: d, Data: make([]float64, backend.ShapeSize(shape))}
	groups := make([][]float64, len(out.Data))
	for i, v := range h.Data {
		idx := Unravel(h.Shape, i)
		var oi []int
		for k := range idx {
			if !red[k] {
				oi = append(oi, idx[k])
			} else if keep {
				oi = append(oi, 0)
			}
		}
		j := Index(shape, oi)
		groups[j] = append(groups[j], v)
	}
	for j := range out.Data {
		out.Data[j] = Round(d, f(groups[j]))
	}
	return out
}

var reduceAxesCases = []struct {
	axes []int
	keep bool
}{{nil, false}, {nil, true}, {[]int{0}, false}, {[]int{-1}, true}, {[]int{0, 2}, false}, {[]int{2, 0}, true}}

func reduceSamples(dtypes []peel.DType, shapes [][]int) func() []Sample {
	return func() []Sample {
		g := NewGen(4)
		var out []Sample
		for _, d := range dtypes {
			for _, s := range shapes {
				out = append(out, Sample{Name: fmt.Sprintf("%v%v", d, s), Args: []*T{g.Tensor(d, -3, 3, s...)}})
			}
		}
		return out
	}
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

func reductionOps() []Op {
	type red struct {
		name   string
		f      func(*T, ...int) *T
		ref    func([]float64) float64
		dtypes []peel.DType
		out    func(peel.DType) peel.DType
		tol    float64
		empty  bool // defined on empty axes
	}
	mean := func(v []float64) float64 { return sum(v) / float64(len(v)) }
	variance := func(v []float64) float64 {
		m := mean(v)
		s := 0.0
		for _, x := range v {
			s += (x - m) * (x - m)
		}
		return s / float64(len(v))
	}
	reds := []red{
		{"peel.Sum", peel.Sum, sum, numerics, same, 1e-5, true},
		{"peel.Prod", peel.Prod, func(v []float64) float64 {
			p := 1.0
			for _, x := range v {
				p *= x
			}
			return p
		}, numerics, same, 1e-5, true},
		{"peel.Max", peel.Max, func(v []float64) float64 { return sliceMax(v) }, numerics, same, 0, false},
		{"peel.Min", peel.Min, func(v []float64) float64 { return -sliceMax(neg(v)) }, numerics, same, 0, false},
		{"peel.Mean", peel.Mean, mean, numerics, floatOf, 1e-5, false},
		{"peel.Var", peel.Var, variance, floats, floatOf, 1e-5, false},
		{"peel.Std", peel.Std, func(v []float64) float64 { return math.Sqrt(variance(v)) }, floats, floatOf, 1e-5, false},
		{"peel.LogSumExp", peel.LogSumExp, func(v []float64) float64 {
			m := sliceMax(v)
			s := 0.0
			for _, x := range v {
				s += math.Exp(x - m)
			}
			return m + math.Log(s)
		}, floats, floatOf, 1e-5, false},
		{"peel.Norm", peel.Norm, func(v []float64) float64 {
			s := 0.0
			for _, x := range v {
				s += x * x
			}
			return math.Sqrt(s)
		}, numerics, floatOf, 1e-5, true},
		{"peel.Any", peel.Any, func(v []float64) float64 {
			for _, x := range v {
				if x != 0 {
					return 1
				}
			}
			return 0
		}, allTypes, toBool, 0, true},
		{"peel.All", peel.All, func(v []float64) float64 {
			for _, x := range v {
				if x == 0 {
					return 0
				}
			}
			return 1
		}, allTypes, toBool, 0, true},
	}
	var ops []Op
	for _, r := range reds {
		for _, c := range reduceAxesCases {
			r, c := r, c
			shapes := [][]int{{2, 3, 4}, {3, 1, 2}}
			if r.empty {
				shapes = append(shapes, []int{2, 0, 3})
			}
			if c.axes == nil {
				shapes = append(shapes, []int{})
			}
			ops = append(ops, Op{
				Name: fmt.Sprintf("%s/axes=%s,keep=%v", r.name, axesName(c.axes), c.keep),
				F: func(a []*T) *T {
					if c.keep {
						return peel.Keep(r.f, a[0], c.axes...)
					}
					return r.f(a[0], c.axes...)
				},
				Samples: reduceSamples(r.dtypes, shapes),
				Ref: func(a []Host) Host {
					return reduceRef(a[0], c.axes, c.keep, r.out(a[0].DType), r.ref)
				},
				Tol:            r.tol,
				Differentiable: r.out(peel.Float64) != peel.Bool,
			})
		}
	}
	for _, axis := range []int{0, -1} {
		axis := axis
		for _, am := range []struct {
			name string
			f    func(*T, ...int) *T
			sgn  float64
		}{{"peel.ArgMax", peel.ArgMax, 1}, {"peel.ArgMin", peel.ArgMin, -1}} {
			am := am
			ops = append(ops, Op{
				Name:    fmt.Sprintf("%s/axis=%d", am.name, axis),
				F:       func(a []*T) *T { return am.f(a[0], axis) },
				Samples: reduceSamples(numerics, [][]int{{2, 3, 4}, {5}, {3, 1}}),
				Ref: func(a []Host) Host {
					return reduceRef(a[0], []int{axis}, false, peel.Int64, func(v []float64) float64 {
						best := 0
						for i, x := range v {
							if am.sgn*x > am.sgn*v[best] {
								best = i
							}
						}
						return float64(best)
					})
				},
			})
		}
		ops = append(ops, Op{
			Name:    fmt.Sprintf("peel.Cumsum/axis=%d", axis),
			F:       func(a []*T) *T { return peel.Cumsum(a[0], axis) },
			Samples: reduceSamples(numerics, [][]int{{2, 3, 4}, {5}, {2, 0}}),
			Ref: func(a []Host) Host {
				return scanRef(a[0], axis, func(acc, x float64) float64 { return acc + x })
			},
			Tol:            1e-5,
			Differentiable: true,
		})
		for _, sm := range []struct {
			name string
			f    func(*T, int) *T
			log  bool
		}{{"peel.Softmax", peel.Softmax, false}, {"peel.LogSoftmax", peel.LogSoftmax, true}} {
			sm := sm
			ops = append(ops, Op{
				Name:    fmt.Sprintf("%s/axis=%d", sm.name, axis),
				F:       func(a []*T) *T { return sm.f(a[0], axis) },
				Samples: reduceSamples(floats, [][]int{{2, 3, 4}, {5}, {3, 1}}),
				Ref: func(a []Host) Host {
					return softmaxRef(a[0], axis, sm.log)
				},
				Tol:            1e-5,
				Differentiable: true,
			})
		}
	}
	return ops
}

// axesName prints nil axes (all) apart from empty ones (none).
func axesName(axes []int) string {
	if axes == nil {
		return "all"
	}
	return fmt.Sprint(axes)
}

func neg(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = -x
	}
	return out
}

func sliceMax(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		if math.IsNaN(x) {
			return x
		}
		m = math.Max(m, x)
	}
	return m
}

// lanes calls f with the flat indices of each 1-D lane of shape along axis.
func lanes(shape []int, axis int, f func(idx []int)) {
	if axis < 0 {
		axis += len(shape)
	}
	n := backend.ShapeSize(shape)
	for i := 0; i < n; i++ {
		idx := Unravel(shape, i)
		if idx[axis] != 0 {
			continue
		}
		lane := make([]int, shape[axis])
		for j := range lane {
			idx[axis] = j
			lane[j] = Index(shape, idx)
		}
		f(lane)
	}
}

func scanRef(h Host, axis int, f func(acc, x float64) float64) Host {
	out := Host{Shape: h.Shape, DType: h.DType, Data: make([]float64, len(h.Data))}
	lanes(h.Shape, axis, func(lane []int) {
		acc := 0.0
		for _, i := range lane {
			acc = f(acc, h.Data[i])
			out.Data[i] = Round(h.DType, acc)
		}
	})
	return out
}

func softmaxRef(h Host, axis int, log bool) Host {
	out := Host{Shape: h.Shape, DType: h.DType, Data: make([]float64, len(h.Data))}
	lanes(h.Shape, axis, func(lane []int) {
		m := math.Inf(-1)
		for _, i := range lane {
			m = math.Max(m, h.Data[i])
		}
		s := 0.0
		for _, i := range lane {
			s += math.Exp(h.Data[i] - m)
		}
		for _, i := range lane {
			v := math.Exp(h.Data[i]-m) / s
			if log {
				v = h.Data[i] - m - math.Log(s)
			}
			out.Data[i] = Round(h.DType, v)
		}
	})
	return out
}

// All returns every registry entry, sorted by name.
func All() []Op {
	ops := elementwise()
	ops = append(ops, reductionOps()...)
	ops = append(ops, shapeOps()...)
	ops = append(ops, shapeMoreOps()...)
	ops = append(ops, linalgOps()...)
	ops = append(ops, linalgPkgOps()...)
	ops = append(ops, convOps()...)
	ops = append(ops, poolOps()...)
	ops = append(ops, userOps()...)
	ops = append(ops, specialOps()...)
	ops = append(ops, sortAreaOps()...)
	ops = withStorageSamples(ops)
	sort.Slice(ops, func(i, j int) bool { return ops[i].Name < ops[j].Name })
	return ops
}
