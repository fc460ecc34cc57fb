package optest

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
)

// Registry entries of special.go and elementwise_activation.go. Sample ranges keep
// clear of poles and domain edges (the edge samples, with ±Inf and NaN,
// are checked against the reference but skipped by the autodiff sweeps);
// tolerances are the defaults (1e-12 relative for f64, 2e-6 for f32)
// unless an entry sets one.

// withSamples replaces an entry's samples.
func withSamples(op Op, s func() []Sample) Op {
	op.Samples = s
	return op
}

// concatSamples returns the samples of every function in ss.
func concatSamples(ss ...func() []Sample) func() []Sample {
	return func() []Sample {
		var out []Sample
		for _, s := range ss {
			out = append(out, s()...)
		}
		return out
	}
}

// fixedSamples returns one sample per float dtype holding vals.
func fixedSamples(name string, vals ...float64) func() []Sample {
	return func() []Sample {
		var out []Sample
		for _, d := range floats {
			h := Host{Shape: []int{len(vals)}, DType: d, Data: vals}
			out = append(out, Sample{Name: fmt.Sprintf("%v/%s", d, name), Args: []*T{h.Tensor()}})
		}
		return out
	}
}

// betweenPoles are points of (-5, 0) away from Γ's poles.
var betweenPoles = []float64{-0.5, -0.25, -1.3, -1.75, -2.5, -2.2, -3.6, -4.5}

// refDigamma is ψ(x) by the reflection ψ(x) = ψ(1−x) − π·cos(πx)/sin(πx)
// for x < 0, the recurrence ψ(x) = ψ(x+1) − 1/x up to x ≥ 25, and the
// asymptotic series ln x − 1/(2x) − Σ B₂ₖ/(2k·x²ᵏ) there.
func refDigamma(x float64) float64 {
	switch {
	case x == 0:
		return -math.Copysign(math.Inf(1), x)
	case math.IsNaN(x) || math.IsInf(x, -1) || (x <= 0 && x == math.Floor(x)):
		return math.NaN()
	case math.IsInf(x, 1):
		return x
	}
	if x < 0 {
		return refDigamma(1-x) - math.Pi*math.Cos(math.Pi*x)/math.Sin(math.Pi*x)
	}
	s := 0.0
	for x < 25 {
		s += 1 / x
		x++
	}
	// B₂ₖ/(2k) for k = 1, …, 6.
	c := []float64{1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132, -691.0 / 32760}
	r := math.Log(x) - 0.5/x
	for k, ck := range c {
		r -= ck / math.Pow(x, float64(2*k+2))
	}
	return r - s
}

// refPolygamma is ψ⁽ⁿ⁾(x) for n ≥ 1 and x > 0, (−1)ⁿ⁺¹·n!·Σⱼ 1/(x+j)ⁿ⁺¹,
// summed to j = 2000 plus the integral and half-term corrections of the
// tail (Euler–Maclaurin to the first Bernoulli term).
func refPolygamma(n int, x float64) float64 {
	switch {
	case math.IsNaN(x) || math.IsInf(x, -1):
		return math.NaN()
	case math.IsInf(x, 1):
		return 0
	case x <= 0 && x == math.Floor(x):
		switch {
		case n%2 == 1:
			return math.Inf(1)
		case x == 0:
			return -math.Copysign(math.Inf(1), x)
		}
		return math.NaN()
	case x < 0:
		// ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁾(x+1) − (−1)ⁿ·n!/xⁿ⁺¹.
		f := 1.0
		for k := 2; k <= n; k++ {
			f *= float64(k)
		}
		if n%2 == 1 {
			f = -f
		}
		return refPolygamma(n, x+1) - f*math.Pow(x, -float64(n+1))
	}
	s := float64(n + 1)
	sum := 0.0
	const terms = 2000
	for j := terms - 1; j >= 0; j-- {
		sum += math.Pow(x+float64(j), -s)
	}
	q := x + terms
	sum += math.Pow(q, 1-s)/(s-1) + math.Pow(q, -s)/2 + s/12*math.Pow(q, -s-1)
	f := 1.0
	for k := 2; k <= n; k++ {
		f *= float64(k)
	}
	if n%2 == 0 {
		f = -f
	}
	return f * sum
}

func logAddExpRef(x, y float64) float64 {
	d := x - y
	if math.IsNaN(d) {
		return x + y
	}
	return math.Max(x, y) + math.Log1p(math.Exp(-math.Abs(d)))
}

// fmaxRef is numpy's fmax (fmin with less).
func fmaxRef(less bool) func(x, y float64) float64 {
	return func(x, y float64) float64 {
		switch {
		case math.IsNaN(x):
			return y
		case math.IsNaN(y):
			return x
		case less:
			return math.Min(x, y)
		}
		return math.Max(x, y)
	}
}

func eluRef(x, alpha float64) float64 {
	if x > 0 {
		return x
	}
	return alpha * math.Expm1(x)
}

func logitRef(x float64) float64 { return math.Log(x) - math.Log1p(-x) }

func softplusRef(x float64) float64 {
	return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
}

// nanSamples are binary float samples with NaNs among finite values.
func nanSamples() []Sample {
	nan := math.NaN()
	var out []Sample
	for _, d := range floats {
		x := Host{Shape: []int{6}, DType: d, Data: []float64{nan, 1, nan, -2, math.Inf(1), 0}}
		y := Host{Shape: []int{6}, DType: d, Data: []float64{2, nan, nan, -3, nan, math.Copysign(0, -1)}}
		out = append(out, Sample{Name: fmt.Sprintf("%v/nan", d), Args: []*T{x.Tensor(), y.Tensor()}})
	}
	return out
}

// pairSamples returns binary samples, x in [xlo, xhi) and y in [ylo, yhi),
// over the binary shapes, for dtypes.
func pairSamples(seed uint64, dtypes []peel.DType, xlo, xhi, ylo, yhi float64) func() []Sample {
	return func() []Sample {
		g := NewGen(seed)
		var out []Sample
		for _, d := range dtypes {
			for _, sh := range binaryShapes {
				out = append(out, Sample{Name: fmt.Sprintf("%v%v%v", d, sh[0], sh[1]),
					Args: []*T{g.Tensor(d, xlo, xhi, sh[0]...), g.Tensor(d, ylo, yhi, sh[1]...)}})
			}
		}
		return out
	}
}

func specialOps() []Op {
	intsBools := []peel.DType{peel.Int64, peel.Bool}
	lgamma := func(x float64) float64 {
		if math.IsInf(x, -1) {
			return math.Inf(1)
		}
		v, _ := math.Lgamma(x)
		return v
	}
	trunc := func(x float64) float64 { return math.Trunc(x) }
	ops := []Op{
		unaryOp("peel.Asin", peel.Asin, math.Asin, floats, floatOf, -0.95, 0.95),
		unaryOp("peel.Acos", peel.Acos, math.Acos, floats, floatOf, -0.95, 0.95),
		unaryOp("peel.Atan", peel.Atan, math.Atan, allTypes[1:], floatOf, -4, 4),
		unaryOp("peel.Sinh", peel.Sinh, math.Sinh, floats, floatOf, -4, 4),
		unaryOp("peel.Cosh", peel.Cosh, math.Cosh, floats, floatOf, -4, 4),
		unaryOp("peel.Asinh", peel.Asinh, math.Asinh, floats, floatOf, -4, 4),
		unaryOp("peel.Acosh", peel.Acosh, math.Acosh, floats, floatOf, 1.05, 6),
		unaryOp("peel.Atanh", peel.Atanh, math.Atanh, floats, floatOf, -0.95, 0.95),
		unaryOp("peel.Log2", peel.Log2, math.Log2, allTypes[1:], floatOf, 0.05, 10),
		unaryOp("peel.Log10", peel.Log10, math.Log10, floats, floatOf, 0.05, 10),
		unaryOp("peel.Exp2", peel.Exp2, math.Exp2, allTypes[1:], floatOf, -5, 5),
		unaryOp("peel.Erfc", peel.Erfc, math.Erfc, floats, floatOf, -3, 3),
		unaryOp("peel.Erfinv", peel.Erfinv, math.Erfinv, floats, floatOf, -0.95, 0.95),
		withSamples(unaryOp("peel.Lgamma", peel.Lgamma, lgamma, floats, floatOf, 0.05, 8),
			concatSamples(unarySamples(floats, 0.05, 8), fixedSamples("between-poles", betweenPoles...))),
		withSamples(unaryOp("peel.Digamma", peel.Digamma, refDigamma, floats, floatOf, 0.05, 8),
			concatSamples(unarySamples(floats, 0.05, 8), fixedSamples("between-poles", betweenPoles...))),
		unaryOp("peel.Polygamma/n=1", func(x *T) *T { return peel.Polygamma(1, x) }, func(x float64) float64 { return refPolygamma(1, x) }, floats, floatOf, 0.1, 8),
		unaryOp("peel.Polygamma/n=2", func(x *T) *T { return peel.Polygamma(2, x) }, func(x float64) float64 { return refPolygamma(2, x) }, floats, floatOf, 0.1, 8),
		unaryOp("peel.Trunc", peel.Trunc, trunc, numerics, same, -5, 5),
		unaryOp("peel.Frac", peel.Frac, func(x float64) float64 { return x - math.Trunc(x) }, numerics, same, -5, 5),
		unaryOp("peel.IsNaN", peel.IsNaN, func(x float64) float64 { return boolOf(math.IsNaN(x)) }, allTypes, toBool, -3, 3),
		unaryOp("peel.IsInf", peel.IsInf, func(x float64) float64 { return boolOf(math.IsInf(x, 0)) }, allTypes, toBool, -3, 3),
		unaryOp("peel.IsFinite", peel.IsFinite, func(x float64) float64 { return boolOf(!math.IsInf(x, 0) && !math.IsNaN(x)) }, allTypes, toBool, -3, 3),

		binaryOp("peel.Hypot", peel.Hypot, math.Hypot, numerics, floatOf, -5, 5),
		binaryOp("peel.Copysign", peel.Copysign, math.Copysign, floats, same, -5, 5),
		binaryOp("peel.LogAddExp", peel.LogAddExp, logAddExpRef, floats, same, -5, 5),
		withSamples(binaryOp("peel.Fmax", peel.Fmax, fmaxRef(false), numerics, same, -5, 5),
			concatSamples(binarySamples(numerics, -5, 5, false), nanSamples)),
		withSamples(binaryOp("peel.Fmin", peel.Fmin, fmaxRef(true), numerics, same, -5, 5),
			concatSamples(binarySamples(numerics, -5, 5, false), nanSamples)),
		withSamples(binaryOp("peel.Xlogy", peel.Xlogy, func(x, y float64) float64 {
			if x == 0 {
				return 0
			}
			return x * math.Log(y)
		}, floats, same, -3, 3), pairSamples(5, floats, -3, 3, 0.1, 4)),
		// Xlogy where x = 0 meets a y whose logarithm is not finite: 0
		// (not differentiable: a step in x gives x·log(y) = NaN).
		{
			Name: "peel.Xlogy/zero-x",
			F:    func(a []*T) *T { return peel.Xlogy(a[0], a[1]) },
			Samples: func() []Sample {
				var out []Sample
				for _, d := range floats {
					x := Host{Shape: []int{6}, DType: d, Data: []float64{0, 0, 0, 0, math.Copysign(0, -1), 2}}
					y := Host{Shape: []int{6}, DType: d, Data: []float64{0, -1, math.Inf(1), math.NaN(), 0, 0}}
					out = append(out, Sample{Name: d.String(), Args: []*T{x.Tensor(), y.Tensor()}})
				}
				return out
			},
			Ref: func(a []Host) Host {
				return Map(a[0].DType, a, func(x []float64) float64 {
					if x[0] == 0 {
						return 0
					}
					return x[0] * math.Log(x[1])
				})
			},
		},
		{
			Name: "peel.Lerp",
			F:    func(a []*T) *T { return peel.Lerp(a[0], a[1], a[2]) },
			Samples: func() []Sample {
				g := NewGen(6)
				var out []Sample
				for _, d := range floats {
					for _, sh := range [][3][]int{{{}, {}, {}}, {{5}, {5}, {5}}, {{2, 3}, {3}, {2, 1}}, {{2, 3}, {2, 3}, {}}, {{0}, {0}, {1}}} {
						out = append(out, Sample{Name: fmt.Sprintf("%v%v%v%v", d, sh[0], sh[1], sh[2]),
							Args: []*T{g.Tensor(d, -4, 4, sh[0]...), g.Tensor(d, -4, 4, sh[1]...), g.Tensor(d, -0.5, 1.5, sh[2]...)}})
					}
				}
				h := Host{Shape: []int{4}, DType: peel.Float64, Data: []float64{0, 0.5, 1, 0.25}}
				out = append(out, Sample{Name: "exact-ends", Args: []*T{
					peel.FromFloat64s([]float64{0.1, 0.1, 0.1, -3}, 4), peel.FromFloat64s([]float64{0.7, 0.7, 0.7, 5}, 4), h.Tensor()}})
				return out
			},
			Ref: func(a []Host) Host {
				return Map(peel.PromoteTypes(a[0].DType, a[1].DType), a, func(x []float64) float64 {
					s, e, w := x[0], x[1], x[2]
					if w < 0.5 {
						return s + w*(e-s)
					}
					return e - (e-s)*(1-w)
				})
			},
			Differentiable: true,
		},
		{
			Name:    "peel.NanToNum",
			F:       func(a []*T) *T { return peel.NanToNum(a[0]) },
			Samples: unarySamples(allTypes, -3, 3),
			Ref: func(a []Host) Host {
				big := math.MaxFloat64
				if a[0].DType == peel.Float32 {
					big = math.MaxFloat32
				}
				return Map(a[0].DType, a, func(x []float64) float64 { return nanToNumRef(x[0], 0, big, -big) })
			},
			Differentiable: true,
		},
		{
			Name:    "peel.NanToNum/1,2,-3",
			F:       func(a []*T) *T { return peel.NanToNum(a[0], peel.NanTo(1), peel.PosInfTo(2), peel.NegInfTo(-3)) },
			Samples: unarySamples(floats, -3, 3),
			Ref: func(a []Host) Host {
				return Map(a[0].DType, a, func(x []float64) float64 { return nanToNumRef(x[0], 1, 2, -3) })
			},
			Differentiable: true,
		},

		notDifferentiable(binaryOp("peel.LogicalXor", peel.LogicalXor, func(a, b float64) float64 { return boolOf((a != 0) != (b != 0)) }, []peel.DType{peel.Bool}, same, 0, 1)),
		notDifferentiable(binaryOp("peel.BitwiseAnd", peel.BitwiseAnd, func(a, b float64) float64 { return float64(int64(a) & int64(b)) }, intsBools, same, -9, 9)),
		notDifferentiable(binaryOp("peel.BitwiseOr", peel.BitwiseOr, func(a, b float64) float64 { return float64(int64(a) | int64(b)) }, intsBools, same, -9, 9)),
		notDifferentiable(binaryOp("peel.BitwiseXor", peel.BitwiseXor, func(a, b float64) float64 { return float64(int64(a) ^ int64(b)) }, intsBools, same, -9, 9)),
		{
			Name:    "peel.BitwiseNot",
			F:       func(a []*T) *T { return peel.BitwiseNot(a[0]) },
			Samples: unarySamples(intsBools, -9, 9),
			Ref: func(a []Host) Host {
				if a[0].DType == peel.Bool {
					return Map(peel.Bool, a, func(x []float64) float64 { return 1 - x[0] })
				}
				return Map(peel.Int64, a, func(x []float64) float64 { return float64(^int64(x[0])) })
			},
		},
		shiftOp("peel.LeftShift", peel.LeftShift, func(x, s int64) int64 {
			if s < 0 || s > 63 {
				return 0
			}
			return x << s
		}),
		shiftOp("peel.RightShift", peel.RightShift, func(x, s int64) int64 {
			if s < 0 || s > 63 {
				return x >> 63
			}
			return x >> s
		}),
	}
	return append(ops, activationOps()...)
}

func nanToNumRef(x, nan, posinf, neginf float64) float64 {
	switch {
	case math.IsNaN(x):
		return nan
	case math.IsInf(x, 1):
		return posinf
	case math.IsInf(x, -1):
		return neginf
	}
	return x
}

// shiftOp is the entry of a shift: i64 operands with counts in [-3, 70)
// (out-of-range counts included), and bool operands, which become i64.
func shiftOp(name string, f func(x, y any) *T, ref func(x, s int64) int64) Op {
	return Op{
		Name: name,
		F:    func(a []*T) *T { return f(a[0], a[1]) },
		Samples: func() []Sample {
			g := NewGen(7)
			var out []Sample
			for _, sh := range binaryShapes {
				out = append(out, Sample{Name: fmt.Sprintf("i64%v%v", sh[0], sh[1]),
					Args: []*T{g.Tensor(peel.Int64, -50, 50, sh[0]...), g.Tensor(peel.Int64, -3, 70, sh[1]...)}})
			}
			out = append(out,
				Sample{Name: "bool", Args: []*T{g.Tensor(peel.Bool, 0, 1, 2, 3), g.Tensor(peel.Bool, 0, 1, 3)}},
				Sample{Name: "edges", Args: []*T{peel.FromInt64s([]int64{1, -1, 1 << 61, -1 << 61, 5, -5}, 6),
					peel.FromInt64s([]int64{63, 63, 1, 1, 64, 64}, 6)}})
			return out
		},
		Ref: func(a []Host) Host {
			return Map(peel.Int64, a, func(x []float64) float64 { return float64(ref(int64(x[0]), int64(x[1]))) })
		},
	}
}

// activationOps are the entries of elementwise_activation.go.
func activationOps() []Op {
	glu := func(axis int) Op {
		return Op{
			Name: fmt.Sprintf("peel.GLU/axis=%d", axis),
			F:    func(a []*T) *T { return peel.GLU(a[0], axis) },
			Samples: func() []Sample {
				g := NewGen(8)
				var out []Sample
				for _, d := range floats {
					for _, s := range [][]int{{4}, {2, 6}, {4, 2}, {2, 0}, {2, 3, 4}} {
						if axis == 0 && s[0]%2 != 0 {
							continue
						}
						out = append(out, Sample{Name: fmt.Sprintf("%v%v", d, s), Args: []*T{g.Tensor(d, -4, 4, s...)}})
					}
				}
				return out
			},
			Ref: func(a []Host) Host {
				h := a[0]
				ax := axis
				if ax < 0 {
					ax += len(h.Shape)
				}
				shape := append([]int{}, h.Shape...)
				half := shape[ax] / 2
				shape[ax] = half
				out := Host{Shape: shape, DType: h.DType, Data: make([]float64, backend.ShapeSize(shape))}
				for i := range out.Data {
					idx := Unravel(shape, i)
					av := h.Data[Index(h.Shape, idx)]
					idx[ax] += half
					bv := h.Data[Index(h.Shape, idx)]
					out.Data[i] = Round(h.DType, av*sigmoid(bv))
				}
				return out
			},
			Differentiable: true,
		}
	}
	hardSwish := func(x float64) float64 { return x * math.Min(math.Max(x+3, 0), 6) / 6 }
	return []Op{
		unaryOp("peel.SiLU", peel.SiLU, func(x float64) float64 { return x * sigmoid(x) }, allTypes[1:], floatOf, -6, 6),
		unaryOp("peel.ELU/alpha=1", func(x *T) *T { return peel.ELU(x, 1) }, func(x float64) float64 { return eluRef(x, 1) }, floats, floatOf, -4, 4),
		unaryOp("peel.ELU/alpha=0.5", func(x *T) *T { return peel.ELU(x, 0.5) }, func(x float64) float64 { return eluRef(x, 0.5) }, floats, floatOf, -4, 4),
		unaryOp("peel.SELU", peel.SELU, func(x float64) float64 {
			return 1.0507009873554804934193349852946 * eluRef(x, 1.6732632423543772848170429916717)
		}, floats, floatOf, -4, 4),
		unaryOp("peel.LeakyReLU/0.01", func(x *T) *T { return peel.LeakyReLU(x, 0.01) }, func(x float64) float64 {
			if x >= 0 {
				return x
			}
			return 0.01 * x
		}, floats, floatOf, -4, 4),
		unaryOp("peel.HardTanh/[-1,1]", func(x *T) *T { return peel.HardTanh(x, -1, 1) }, func(x float64) float64 {
			if math.IsNaN(x) {
				return x
			}
			return math.Min(math.Max(x, -1), 1)
		}, numerics, floatOf, -3, 3),
		unaryOp("peel.HardSwish", peel.HardSwish, hardSwish, floats, floatOf, -5, 5),
		unaryOp("peel.Mish", peel.Mish, func(x float64) float64 { return x * math.Tanh(softplusRef(x)) }, floats, floatOf, -6, 6),
		unaryOp("peel.Softsign", peel.Softsign, func(x float64) float64 { return x / (1 + math.Abs(x)) }, floats, floatOf, -4, 4),
		unaryOp("peel.Logit", func(x *T) *T { return peel.Logit(x) }, logitRef, floats, floatOf, 0.02, 0.98),
		unaryOp("peel.Logit/eps=0.1", func(x *T) *T { return peel.Logit(x, 0.1) }, func(x float64) float64 {
			if math.IsNaN(x) {
				return x
			}
			return logitRef(math.Min(math.Max(x, 0.1), 0.9))
		}, floats, floatOf, 0.01, 0.99),
		glu(-1),
		glu(0),
	}
}
