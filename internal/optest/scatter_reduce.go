package optest

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
)

// scatterReduceRef is torch's scatter_reduce on the host: idx has x's
// rank, src broadcasts to idx's shape (with idx's size-1 dimensions other
// than axis broadcast to x's).
func scatterReduceRef(x, idx, src Host, axis int, reduce string, self bool) Host {
	shape := append([]int{}, x.Shape...)
	shape[axis] = idx.Shape[axis]
	groups := make([][]float64, len(x.Data))
	for f := range backend.ShapeSize(shape) {
		u := Unravel(shape, f)
		k := int(idx.At(u))
		if k < 0 {
			k += x.Shape[axis]
		}
		dst := append([]int{}, u...)
		dst[axis] = k
		groups[Index(x.Shape, dst)] = append(groups[Index(x.Shape, dst)], src.At(u))
	}
	o := Host{Shape: x.Shape, DType: x.DType, Data: make([]float64, len(x.Data))}
	for i, g := range groups {
		if len(g) == 0 {
			o.Data[i] = x.Data[i]
			continue
		}
		if self {
			g = append([]float64{x.Data[i]}, g...)
		}
		var r float64
		switch reduce {
		case "sum", "mean":
			for _, v := range g {
				r += v
			}
			if reduce == "mean" {
				if x.DType == peel.Int64 {
					r = math.Floor(r / float64(len(g)))
				} else {
					r /= float64(len(g))
				}
			}
		case "prod":
			r = 1
			for _, v := range g {
				r *= v
			}
		case "amax":
			r = sliceMax(g)
		case "amin":
			r = -sliceMax(neg(g))
		}
		o.Data[i] = Round(x.DType, r)
	}
	return o
}

func scatterReduceOps() []Op {
	var ops []Op
	for _, reduce := range []string{"sum", "prod", "amax", "amin", "mean"} {
		for _, self := range []bool{true, false} {
			for _, axis := range []int{0, 1} {
				reduce, self, axis := reduce, self, axis
				ops = append(ops, Op{
					Name: fmt.Sprintf("peel.ScatterReduce/%s,self=%v,axis=%d", reduce, self, axis),
					F:    func(a []*T) *T { return peel.ScatterReduce(a[0], a[1], a[2], axis, reduce, self) },
					Samples: sampled(30, func(g *Gen) []Sample {
						var out []Sample
						for _, d := range numerics {
							if axis == 0 {
								out = append(out,
									Sample{Name: d.String(), Args: []*T{g.Tensor(d, -3, 3, 4, 3), i64s([]int{5, 3}, 1, 0, 3, 1, 1, 3, -1, 2, 0, 1, 2, 0, 3, 3, 0), g.Tensor(d, -3, 3, 5, 3)}},
									Sample{Name: d.String() + "/bcast-idx", Args: []*T{g.Tensor(d, -3, 3, 4, 2), i64s([]int{3, 1}, 2, 0, 2), g.Tensor(d, -3, 3, 3, 2)}},
									Sample{Name: d.String() + "/empty", Args: []*T{g.Tensor(d, -3, 3, 2, 3), i64s([]int{0, 3}), g.Tensor(d, -3, 3, 0, 3)}})
								if reduce != "amax" && reduce != "amin" { // the zeros tie
									out = append(out, Sample{Name: d.String() + "/zeros", Args: []*T{g.Tensor(d, -3, 3, 3, 2), i64s([]int{4, 2}, 0, 1, 0, 1, 2, 1, 0, 0),
										Host{Shape: []int{4, 2}, DType: d, Data: []float64{0, 2, 0, -1.5, 1.25, 0, 3, 0.5}}.Tensor()}})
								}
							} else {
								out = append(out, Sample{Name: d.String(), Args: []*T{g.Tensor(d, -3, 3, 2, 4), i64s([]int{2, 5}, 3, 0, 3, 1, 0, 2, 2, 2, -4, 1), g.Tensor(d, -3, 3, 2, 5)}},
									Sample{Name: d.String() + "/scalar-src", Args: []*T{g.Tensor(d, -3, 3, 2, 3), i64s([]int{1, 2}, 1, 1), g.Tensor(d, -3, 3, []int{}...)}})
							}
						}
						return out
					}),
					Ref:            func(a []Host) Host { return scatterReduceRef(a[0], a[1], a[2], axis, reduce, self) },
					Tol:            1e-5,
					Differentiable: true,
				})
			}
		}
	}
	return ops
}
