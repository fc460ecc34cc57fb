package optest

import (
	"fmt"

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
	shape := []int{x.Shape[0], w.Shape[0]}
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
	cg, og := w.Shape[1], w.Shape[0]/max(p.FeatureGroupCount, 1)
	for i := range out.Data {
		o := Unravel(shape, i)
		g := o[1] / og
		s := 0.0
		for t := range backend.ShapeSize(w.Shape[1:]) {
			tap := Unravel(w.Shape[1:], t)
			xi := []int{o[0], g*cg + tap[0]}
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
