package optest

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
)

// Reductions, statistics built on them, and cumsum.

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
	for _, k := range []int{1, 2} {
		for _, nm := range []struct {
			name   string
			f      func(*T, int, float64) *T
			center bool
		}{{"peel.Standardize", peel.Standardize, true}, {"peel.RMSNormalize", peel.RMSNormalize, false}} {
			k, nm := k, nm
			ops = append(ops, Op{
				Name:    fmt.Sprintf("%s/axes=%d", nm.name, k),
				F:       func(a []*T) *T { return nm.f(a[0], k, 0.01) },
				Samples: reduceSamples(floats, [][]int{{2, 3, 4}, {3, 5}, {4, 1}}),
				Ref: func(a []Host) Host {
					return normRef(a[0], k, 0.01, nm.center)
				},
				Tol:            1e-4,
				Differentiable: true,
			})
		}
	}
	return ops
}

// normRef normalizes h over its last k axes: x − mean (when center)
// scaled by 1/√(mean square + eps).
func normRef(h Host, k int, eps float64, center bool) Host {
	out := Host{Shape: h.Shape, DType: h.DType, Data: make([]float64, len(h.Data))}
	n := backend.ShapeSize(h.Shape[len(h.Shape)-k:])
	for lo := 0; lo < len(h.Data); lo += n {
		row := h.Data[lo : lo+n]
		m := 0.0
		if center {
			for _, v := range row {
				m += v
			}
			m /= float64(n)
		}
		v := 0.0
		for _, x := range row {
			v += (x - m) * (x - m)
		}
		r := 1 / math.Sqrt(v/float64(n)+eps)
		for i, x := range row {
			out.Data[lo+i] = Round(h.DType, (x-m)*r)
		}
	}
	return out
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
