package optest

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/prims"
)

// ConvRef is conv_general_dilated by its definition, on the host: for
// each result element, the sum over the group's input channels and the
// kernel's taps of the input element each tap reads (none in padding or
// dilation gaps). p's nil lists are the defaults.
func ConvRef(x, w Host, p prims.ConvParams) Host {
	nd := len(x.Shape) - 2
	p = p.Normalized(nd)
	bg := p.BatchGroupCount
	shape := []int{x.Shape[0] / bg, w.Shape[0]}
	for j := range nd {
		padded := (x.Shape[2+j]-1)*p.LhsDilation[j] + 1 + p.PadLo[j] + p.PadHi[j]
		if x.Shape[2+j] == 0 {
			padded = p.PadLo[j] + p.PadHi[j]
		}
		dk := (w.Shape[2+j]-1)*p.RhsDilation[j] + 1
		q := 0
		if padded >= dk {
			q = (padded-dk)/p.Strides[j] + 1
		}
		shape = append(shape, q)
	}
	d := peel.PromoteTypes(x.DType, w.DType)
	out := Host{Shape: shape, DType: d, Data: make([]float64, backend.ShapeSize(shape))}
	cg, og := w.Shape[1], w.Shape[0]/(p.FeatureGroupCount*bg)
	for i := range out.Data {
		o := Unravel(shape, i)
		g := o[1] / og
		s := 0.0
		for t := range backend.ShapeSize(w.Shape[1:]) {
			tap := Unravel(w.Shape[1:], t)
			xi := []int{o[0], g*cg + tap[0]}
			if bg > 1 {
				xi = []int{g*shape[0] + o[0], tap[0]}
			}
			ok := true
			for j := range nd {
				v := o[2+j]*p.Strides[j] + tap[1+j]*p.RhsDilation[j] - p.PadLo[j]
				if v < 0 || v%p.LhsDilation[j] != 0 || v/p.LhsDilation[j] >= x.Shape[2+j] {
					ok = false
					break
				}
				xi = append(xi, v/p.LhsDilation[j])
			}
			if ok {
				s += x.At(xi) * w.At(append([]int{o[1]}, tap...))
			}
		}
		out.Data[i] = Round(d, s)
	}
	return out
}

// convTransposeRef is ConvTranspose2D by scattering: input element
// x[n, ci, h…] adds x·w[ci, co, k…] to output position h·stride +
// k·dilation − lo, for the output channels co of ci's group.
func convTransposeRef(x, w Host, strides, dil, lo []int, outSpatial []int, groups int) Host {
	nd := len(x.Shape) - 2
	cin, cog := w.Shape[0], w.Shape[1]
	cig := cin / groups
	shape := append([]int{x.Shape[0], cog * groups}, outSpatial...)
	d := peel.PromoteTypes(x.DType, w.DType)
	out := Host{Shape: shape, DType: d, Data: make([]float64, backend.ShapeSize(shape))}
	for i := range x.Data {
		xi := Unravel(x.Shape, i)
		g := xi[1] / cig
		for t := range backend.ShapeSize(w.Shape[1:]) {
			tap := Unravel(w.Shape[1:], t)
			oi := []int{xi[0], g*cog + tap[0]}
			ok := true
			for j := range nd {
				v := xi[2+j]*strides[j] + tap[1+j]*dil[j] - lo[j]
				if v < 0 || v >= outSpatial[j] {
					ok = false
					break
				}
				oi = append(oi, v)
			}
			if ok {
				out.Data[Index(shape, oi)] += x.Data[i] * w.At(append([]int{xi[1]}, tap...))
			}
		}
	}
	for i, v := range out.Data {
		out.Data[i] = Round(d, v)
	}
	return out
}

// convSample draws x and w of the given shapes for each float dtype.
func convSamples(seed uint64, shapes ...[2][]int) func() []Sample {
	return func() []Sample {
		g := NewGen(seed)
		var out []Sample
		for _, d := range floats {
			for _, s := range shapes {
				out = append(out, Sample{Name: fmt.Sprintf("%v%v*%v", d, s[0], s[1]), Args: []*T{g.Tensor(d, -2, 2, s[0]...), g.Tensor(d, -2, 2, s[1]...)}})
			}
		}
		return out
	}
}

func convOps() []Op {
	type pr = [2][]int
	return []Op{
		{
			Name: "peel.Conv1D/valid",
			F:    func(a []*T) *T { return peel.Conv1D(a[0], a[1]) },
			Samples: func() []Sample {
				s := convSamples(60, pr{{2, 3, 7}, {4, 3, 3}}, pr{{0, 2, 4}, {3, 2, 2}}, pr{{1, 2, 2}, {2, 2, 3}})()
				g := NewGen(61)
				return append(s, Sample{Name: "mixed", Args: []*T{g.Tensor(peel.Int64, -3, 3, 1, 2, 5), g.Tensor(peel.Float32, -2, 2, 2, 2, 2)}})
			},
			Ref:            func(a []Host) Host { return ConvRef(a[0], a[1], prims.ConvParams{}) },
			Tol:            1e-5,
			Differentiable: true,
		},
		{
			Name: "peel.Conv2D/same,strides=2",
			F: func(a []*T) *T {
				return peel.Conv2D(a[0], a[1], peel.ConvStrides(2), peel.ConvPadding(peel.SamePadding))
			},
			Samples: convSamples(62, pr{{2, 2, 5, 4}, {3, 2, 3, 3}}),
			Ref: func(a []Host) Host {
				// out = 3×2: totals 2 and 1 (the odd one after).
				return ConvRef(a[0], a[1], prims.ConvParams{Strides: []int{2, 2}, PadLo: []int{1, 0}, PadHi: []int{1, 1}})
			},
			Tol:            1e-5,
			Differentiable: true,
		},
		{
			Name: "peel.Conv2D/groups=2,dilation=2,padded",
			F: func(a []*T) *T {
				return peel.Conv2D(a[0], a[1], peel.ConvGroups(2), peel.ConvDilation(2, 1), peel.ConvPadding(peel.ExplicitPadding([2]int{1, 2}, [2]int{0, 1})))
			},
			Samples: convSamples(63, pr{{1, 4, 5, 3}, {4, 2, 2, 2}}),
			Ref: func(a []Host) Host {
				return ConvRef(a[0], a[1], prims.ConvParams{RhsDilation: []int{2, 1}, PadLo: []int{1, 0}, PadHi: []int{2, 1}, FeatureGroupCount: 2})
			},
			Tol:            1e-5,
			Differentiable: true,
		},
		{
			Name: "peel.Conv2D/batch-groups=2,padded",
			F: func(a []*T) *T {
				return peel.Conv2D(a[0], a[1], peel.ConvBatchGroups(2), peel.ConvPadding(peel.ExplicitPadding([2]int{1, 0})))
			},
			Samples: convSamples(68, pr{{4, 2, 4, 3}, {4, 2, 2, 2}}, pr{{2, 1, 3, 3}, {2, 1, 3, 3}}),
			Ref: func(a []Host) Host {
				return ConvRef(a[0], a[1], prims.ConvParams{BatchGroupCount: 2, PadLo: []int{1, 1}, PadHi: []int{0, 0}})
			},
			Tol:            1e-5,
			Differentiable: true,
		},
		{
			Name: "peel.Conv3D/strides=(1,2,1),padded",
			F: func(a []*T) *T {
				return peel.Conv3D(a[0], a[1], peel.ConvStrides(1, 2, 1), peel.ConvPadding(peel.ExplicitPadding([2]int{1, 0})))
			},
			Samples: convSamples(64, pr{{1, 2, 3, 4, 2}, {2, 2, 2, 2, 2}}),
			Ref: func(a []Host) Host {
				return ConvRef(a[0], a[1], prims.ConvParams{Strides: []int{1, 2, 1}, PadLo: []int{1, 1, 1}, PadHi: []int{0, 0, 0}})
			},
			Tol:            1e-5,
			Differentiable: true,
		},
		{
			Name: "peel.Conv/input-dilation=2,strides=2,negative-padding",
			F: func(a []*T) *T {
				return peel.Conv(a[0], a[1], peel.ConvInputDilation(2), peel.ConvStrides(2), peel.ConvPadding(peel.ExplicitPadding([2]int{-1, 2})))
			},
			Samples: convSamples(65, pr{{2, 2, 5}, {3, 2, 3}}),
			Ref: func(a []Host) Host {
				return ConvRef(a[0], a[1], prims.ConvParams{LhsDilation: []int{2}, Strides: []int{2}, PadLo: []int{-1}, PadHi: []int{2}})
			},
			Tol:            1e-5,
			Differentiable: true,
		},
		{
			Name: "peel.ConvTranspose2D/strides=2,padding=1,groups=2",
			F: func(a []*T) *T {
				return peel.ConvTranspose2D(a[0], a[1], peel.ConvStrides(2), peel.ConvPadding(peel.ExplicitPadding([2]int{1, 1})), peel.ConvGroups(2))
			},
			Samples: convSamples(66, pr{{1, 4, 3, 2}, {4, 1, 3, 2}}),
			Ref: func(a []Host) Host {
				// H' = (3−1)·2 + 3 − 2 = 5, W' = (2−1)·2 + 2 − 2 = 2.
				return convTransposeRef(a[0], a[1], []int{2, 2}, []int{1, 1}, []int{1, 1}, []int{5, 2}, 2)
			},
			Tol:            1e-5,
			Differentiable: true,
		},
		{
			Name: "peel.ConvTranspose2D/same,strides=(2,3),dilation=2",
			F: func(a []*T) *T {
				return peel.ConvTranspose2D(a[0], a[1], peel.ConvStrides(2, 3), peel.ConvDilation(2), peel.ConvPadding(peel.SamePadding))
			},
			Samples: convSamples(67, pr{{2, 2, 3, 2}, {2, 3, 2, 2}}),
			Ref: func(a []Host) Host {
				// H' = 6: dilated kernel 3, total 3−2 = 1 → lo 0. W' = 6:
				// total max(3−3, 0) = 0.
				return convTransposeRef(a[0], a[1], []int{2, 3}, []int{2, 2}, []int{0, 0}, []int{6, 6}, 1)
			},
			Tol:            1e-5,
			Differentiable: true,
		},
	}
}

// poolRef reduces each window of x [N, C, H, W] (padding lo, hi taking
// no part) with max, or with the sum divided by the window size.
func poolRef(x Host, window, strides, lo, hi [2]int, isMax bool) Host {
	shape := []int{x.Shape[0], x.Shape[1], 0, 0}
	for j := range 2 {
		padded := x.Shape[2+j] + lo[j] + hi[j]
		if padded >= window[j] {
			shape[2+j] = (padded-window[j])/strides[j] + 1
		}
	}
	d := x.DType
	if !isMax && !d.IsFloat() {
		d = peel.Float64
	}
	out := Host{Shape: shape, DType: d, Data: make([]float64, backend.ShapeSize(shape))}
	for i := range out.Data {
		o := Unravel(shape, i)
		acc := math.Inf(-1)
		if !isMax {
			acc = 0
		}
		for a := range window[0] {
			for b := range window[1] {
				h, w := o[2]*strides[0]+a-lo[0], o[3]*strides[1]+b-lo[1]
				if h < 0 || h >= x.Shape[2] || w < 0 || w >= x.Shape[3] {
					continue
				}
				v := x.At([]int{o[0], o[1], h, w})
				if isMax {
					acc = math.Max(acc, v)
				} else {
					acc += v
				}
			}
		}
		if !isMax {
			acc /= float64(window[0] * window[1])
		}
		out.Data[i] = Round(d, acc)
	}
	return out
}

func poolSamples(seed uint64, ints bool, shapes ...[]int) func() []Sample {
	return func() []Sample {
		g := NewGen(seed)
		dts := floats
		if ints {
			dts = numerics
		}
		var out []Sample
		for _, d := range dts {
			for _, s := range shapes {
				out = append(out, Sample{Name: fmt.Sprintf("%v%v", d, s), Args: []*T{g.Tensor(d, -3, 3, s...)}})
			}
		}
		return out
	}
}

func poolOps() []Op {
	type w = [2]int
	pool := func(name string, f func(*T, int, ...peel.ConvOption) *T, isMax bool, window, strides w, pad peel.Padding, lo, hi w, seed uint64) Op {
		opts := []peel.ConvOption{peel.ConvPadding(pad)}
		if window[0] != window[1] {
			opts = append(opts, peel.PoolWindow(window[0], window[1]))
		}
		if strides != (w{}) {
			opts = append(opts, peel.ConvStrides(strides[0], strides[1]))
		}
		return Op{
			Name:    name,
			F:       func(a []*T) *T { return f(a[0], window[0], opts...) },
			Samples: poolSamples(seed, true, []int{2, 2, 5, 4}, []int{1, 1, 3, 3}, []int{0, 2, 4, 4}),
			Ref: func(a []Host) Host {
				s := strides
				lo, hi := lo, hi
				for j := range s {
					if s[j] == 0 {
						s[j] = window[j]
					}
					if pad.String() == "SAME" {
						n := a[0].Shape[2+j]
						total := max(((n+s[j]-1)/s[j]-1)*s[j]+window[j]-n, 0)
						lo[j], hi[j] = total/2, total-total/2
					}
				}
				return poolRef(a[0], window, s, lo, hi, isMax)
			},
			Differentiable: true,
		}
	}
	return []Op{
		pool("peel.MaxPool2D/2x2", peel.MaxPool2D, true, w{2, 2}, w{}, peel.ValidPadding, w{}, w{}, 70),
		pool("peel.MaxPool2D/3x3,strides=2,same", peel.MaxPool2D, true, w{3, 3}, w{2, 2}, peel.SamePadding, w{}, w{}, 71),
		pool("peel.MaxPool2D/3x2,strides=(1,2),padded", peel.MaxPool2D, true, w{3, 2}, w{1, 2}, peel.ExplicitPadding([2]int{1, 0}, [2]int{0, 1}), w{1, 0}, w{0, 1}, 72),
		pool("peel.AvgPool2D/2x2", peel.AvgPool2D, false, w{2, 2}, w{}, peel.ValidPadding, w{}, w{}, 73),
		pool("peel.AvgPool2D/3x3,strides=2,same", peel.AvgPool2D, false, w{3, 3}, w{2, 2}, peel.SamePadding, w{}, w{}, 74),
	}
}
