package optest

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
)

// remap builds the result of shape outShape whose element at out comes
// from h at in(out) (nil: the fill value).
func remap(h Host, outShape []int, fill float64, in func(out []int) []int) Host {
	o := Host{Shape: outShape, DType: h.DType, Data: make([]float64, backend.ShapeSize(outShape))}
	for i := range o.Data {
		src := in(Unravel(outShape, i))
		if src == nil {
			o.Data[i] = Round(h.DType, fill)
			continue
		}
		o.Data[i] = h.Data[Index(h.Shape, src)]
	}
	return o
}

func oneInput(name string, f func(*T) *T, shapes [][]int, dtypes []peel.DType, ref func(Host) Host) Op {
	return Op{
		Name: name,
		F:    func(a []*T) *T { return f(a[0]) },
		Samples: func() []Sample {
			g := NewGen(5)
			var out []Sample
			for _, d := range dtypes {
				for _, s := range shapes {
					out = append(out, Sample{Name: fmt.Sprintf("%v%v", d, s), Args: []*T{g.Tensor(d, -9, 9, s...)}})
				}
			}
			return out
		},
		Ref:            func(a []Host) Host { return ref(a[0]) },
		Differentiable: true,
	}
}

func transposeRef(h Host, perm []int) Host {
	shape := make([]int, len(perm))
	for i, p := range perm {
		shape[i] = h.Shape[p]
	}
	return remap(h, shape, 0, func(out []int) []int {
		in := make([]int, len(perm))
		for i, p := range perm {
			in[p] = out[i]
		}
		return in
	})
}

func reshapeRef(h Host, shape ...int) Host {
	return Host{Shape: shape, DType: h.DType, Data: append([]float64{}, h.Data...)}
}

func shapeOps() []Op {
	s234 := [][]int{{2, 3, 4}, {2, 0, 4}}
	ops := []Op{
		oneInput("peel.Reshape/[4,-1]", func(x *T) *T { return peel.Reshape(x, 4, -1) }, [][]int{{2, 3, 4}, {4, 0}}, allTypes,
			func(h Host) Host { return reshapeRef(h, 4, h.Size()/4) }),
		oneInput("peel.Reshape/rank0", func(x *T) *T { return peel.Reshape(x, 1, 1) }, [][]int{{}}, allTypes,
			func(h Host) Host { return reshapeRef(h, 1, 1) }),
		oneInput("peel.Transpose", func(x *T) *T { return peel.Transpose(x) }, s234, allTypes,
			func(h Host) Host { return transposeRef(h, []int{2, 1, 0}) }),
		oneInput("peel.Permute/[1,0,2]", func(x *T) *T { return peel.Permute(x, 1, 0, 2) }, s234, allTypes,
			func(h Host) Host { return transposeRef(h, []int{1, 0, 2}) }),
		oneInput("peel.MoveAxis/0,-1", func(x *T) *T { return peel.MoveAxis(x, 0, -1) }, s234, allTypes,
			func(h Host) Host { return transposeRef(h, []int{1, 2, 0}) }),
		oneInput("peel.Squeeze", func(x *T) *T { return peel.Squeeze(x) }, [][]int{{3, 1, 2}, {1}, {1, 0}}, allTypes,
			func(h Host) Host {
				var s []int
				for _, d := range h.Shape {
					if d != 1 {
						s = append(s, d)
					}
				}
				if s == nil {
					s = []int{}
				}
				return reshapeRef(h, s...)
			}),
		oneInput("peel.Unsqueeze/-1", func(x *T) *T { return peel.Unsqueeze(x, -1) }, [][]int{{}, {2, 3}}, allTypes,
			func(h Host) Host { return reshapeRef(h, append(append([]int{}, h.Shape...), 1)...) }),
		oneInput("peel.Flatten", func(x *T) *T { return peel.Flatten(x) }, [][]int{{}, {2, 3, 4}, {2, 0}}, allTypes,
			func(h Host) Host { return reshapeRef(h, h.Size()) }),
		oneInput("peel.Flatten/1", func(x *T) *T { return peel.Flatten(x, 1) }, [][]int{{2, 3, 4}, {2, 0, 3}, {3, 1}}, allTypes,
			func(h Host) Host { return reshapeRef(h, h.Shape[0], ShapeSizeOf(h.Shape[1:])) }),
		oneInput("peel.Flatten/1,-2", func(x *T) *T { return peel.Flatten(x, 1, -2) }, [][]int{{2, 3, 4, 5}, {2, 3, 4}}, allTypes,
			func(h Host) Host {
				r := len(h.Shape)
				return reshapeRef(h, append([]int{h.Shape[0], ShapeSizeOf(h.Shape[1 : r-1])}, h.Shape[r-1])...)
			}),
		oneInput("peel.BroadcastTo/[2,3,4]", func(x *T) *T { return peel.BroadcastTo(x, 2, 3, 4) }, [][]int{{}, {3, 1}, {4}}, allTypes,
			func(h Host) Host {
				return Map(h.DType, []Host{h, {Shape: []int{2, 3, 4}, Data: make([]float64, 24)}}, func(x []float64) float64 { return x[0] })
			}),
		oneInput("peel.Slice/1,-4,5,2", func(x *T) *T { return peel.Slice(x, 1, -4, 5, 2) }, [][]int{{2, 5, 3}}, allTypes,
			func(h Host) Host {
				return remap(h, []int{2, 2, 3}, 0, func(o []int) []int { return []int{o[0], 1 + 2*o[1], o[2]} })
			}),
		oneInput("peel.Narrow/0,1,1", func(x *T) *T { return peel.Narrow(x, 0, 1, 1) }, [][]int{{2, 5, 3}, {3}}, allTypes,
			func(h Host) Host {
				s := append([]int{1}, h.Shape[1:]...)
				return remap(h, s, 0, func(o []int) []int {
					in := append([]int{}, o...)
					in[0]++
					return in
				})
			}),
		oneInput("peel.Select/1,-1", func(x *T) *T { return peel.Select(x, 1, -1) }, [][]int{{2, 5, 3}, {2, 4}}, allTypes,
			func(h Host) Host {
				s := append([]int{h.Shape[0]}, h.Shape[2:]...)
				return remap(h, s, 0, func(o []int) []int {
					return append([]int{o[0], h.Shape[1] - 1}, o[1:]...)
				})
			}),
		oneInput("peel.At/-1,::-2,None,...", func(x *T) *T { return peel.At(x, -1, peel.S(peel.Open, peel.Open, -2), peel.NewAxis, peel.Ellipsis) }, [][]int{{2, 5, 3}, {2, 4, 2}}, allTypes,
			func(h Host) Host {
				n := h.Shape[1]
				return remap(h, []int{(n + 1) / 2, 1, h.Shape[2]}, 0, func(o []int) []int { return []int{h.Shape[0] - 1, n - 1 - 2*o[0], o[2]} })
			}),
		oneInput("peel.Index/1,2", func(x *T) *T { return peel.Index(x, 1, 2) }, [][]int{{2, 5, 3}, {2, 3}}, allTypes,
			func(h Host) Host {
				return remap(h, h.Shape[2:], 0, func(o []int) []int { return append([]int{1, 2}, o...) })
			}),
		oneInput("peel.Flip/0,-1", func(x *T) *T { return peel.Flip(x, 0, -1) }, s234, allTypes,
			func(h Host) Host {
				r := len(h.Shape)
				return remap(h, h.Shape, 0, func(o []int) []int {
					in := append([]int{}, o...)
					in[0] = h.Shape[0] - 1 - o[0]
					in[r-1] = h.Shape[r-1] - 1 - o[r-1]
					return in
				})
			}),
		oneInput("peel.Tile/2,1,3", func(x *T) *T { return peel.Tile(x, 2, 1, 3) }, [][]int{{2, 3, 4}, {1, 2, 0}}, allTypes,
			func(h Host) Host {
				s := []int{2 * h.Shape[0], h.Shape[1], 3 * h.Shape[2]}
				return remap(h, s, 0, func(o []int) []int {
					return []int{o[0] % h.Shape[0], o[1], o[2] % h.Shape[2]}
				})
			}),
		oneInput("peel.Pad/[1,2],[-1,0]", func(x *T) *T { return peel.Pad(x, [][2]int{{1, 2}, {-1, 0}}, 1) }, [][]int{{2, 3}, {0, 2}}, allTypes,
			func(h Host) Host {
				s := []int{h.Shape[0] + 3, h.Shape[1] - 1}
				return remap(h, s, 1, func(o []int) []int {
					i, j := o[0]-1, o[1]+1
					if i < 0 || i >= h.Shape[0] {
						return nil
					}
					return []int{i, j}
				})
			}),
		oneInput("peel.Clone", peel.Clone, Shapes, allTypes, func(h Host) Host { return h }),
		{
			Name: "peel.Concat/axis=1",
			F:    func(a []*T) *T { return peel.Concat(a, 1) },
			Samples: func() []Sample {
				g := NewGen(6)
				var out []Sample
				for _, d := range allTypes {
					out = append(out, Sample{Name: d.String(), Args: []*T{g.Tensor(d, -9, 9, 2, 3), g.Tensor(d, -9, 9, 2, 0), g.Tensor(d, -9, 9, 2, 1)}})
				}
				out = append(out, Sample{Name: "mixed", Args: []*T{g.Tensor(peel.Int64, -9, 9, 2, 3), g.Tensor(peel.Float32, -9, 9, 2, 2)}})
				return out
			},
			Ref: func(a []Host) Host {
				d := a[0].DType
				n := 0
				for _, h := range a {
					d = peel.PromoteTypes(d, h.DType)
					n += h.Shape[1]
				}
				o := Host{Shape: []int{2, n}, DType: d}
				for i := 0; i < 2; i++ {
					for _, h := range a {
						o.Data = append(o.Data, h.Data[i*h.Shape[1]:(i+1)*h.Shape[1]]...)
					}
				}
				return o
			},
			Differentiable: true,
		},
		{
			Name: "peel.Stack/axis=-1",
			F:    func(a []*T) *T { return peel.Stack(a, -1) },
			Samples: func() []Sample {
				g := NewGen(7)
				var out []Sample
				for _, d := range allTypes {
					for _, s := range [][]int{{}, {2, 3}, {0}} {
						out = append(out, Sample{Name: fmt.Sprintf("%v%v", d, s), Args: []*T{g.Tensor(d, -9, 9, s...), g.Tensor(d, -9, 9, s...)}})
					}
				}
				return out
			},
			Ref: func(a []Host) Host {
				o := Host{Shape: append(append([]int{}, a[0].Shape...), len(a)), DType: a[0].DType}
				for i := range a[0].Data {
					for _, h := range a {
						o.Data = append(o.Data, h.Data[i])
					}
				}
				return o
			},
			Differentiable: true,
		},
		{
			Name: "peel.Take/axis=1",
			F:    func(a []*T) *T { return peel.Take(a[0], a[1], 1) },
			Samples: func() []Sample {
				g := NewGen(8)
				var out []Sample
				for _, d := range allTypes {
					out = append(out,
						Sample{Name: d.String(), Args: []*T{g.Tensor(d, -9, 9, 2, 4, 3), peel.FromInt64s([]int64{3, -1, 0, 2, 2, -4}, 2, 3)}},
						Sample{Name: d.String() + "/scalar-index", Args: []*T{g.Tensor(d, -9, 9, 2, 4), peel.FromInt64s([]int64{-2}, []int{}...)}},
						Sample{Name: d.String() + "/no-index", Args: []*T{g.Tensor(d, -9, 9, 2, 4), peel.FromInt64s(nil, 0)}})
				}
				return out
			},
			Ref: func(a []Host) Host {
				x, idx := a[0], a[1]
				s := append(append([]int{x.Shape[0]}, idx.Shape...), x.Shape[2:]...)
				return remap(x, s, 0, func(o []int) []int {
					k := idx.Data[Index(idx.Shape, o[1:1+len(idx.Shape)])]
					if k < 0 {
						k += float64(x.Shape[1])
					}
					return append([]int{o[0], int(k)}, o[1+len(idx.Shape):]...)
				})
			},
			Differentiable: true,
		},
		{
			Name: "peel.TakeAlongAxis/axis=0",
			F:    func(a []*T) *T { return peel.TakeAlongAxis(a[0], a[1], 0) },
			Samples: func() []Sample {
				g := NewGen(9)
				var out []Sample
				for _, d := range allTypes {
					out = append(out, Sample{Name: d.String(), Args: []*T{g.Tensor(d, -9, 9, 3, 4), peel.FromInt64s([]int64{2, 0, 1, -1, 0, 0, 2, 1}, 2, 4)}})
				}
				return out
			},
			Ref: func(a []Host) Host {
				x, idx := a[0], a[1]
				return remap(x, idx.Shape, 0, func(o []int) []int {
					k := int(idx.Data[Index(idx.Shape, o)])
					if k < 0 {
						k += x.Shape[0]
					}
					return []int{k, o[1]}
				})
			},
			Differentiable: true,
		},
		{
			Name: "peel.IndexAdd/axis=0",
			F:    func(a []*T) *T { return peel.IndexAdd(a[0], a[1], a[2], 0) },
			Samples: func() []Sample {
				g := NewGen(10)
				var out []Sample
				for _, d := range numerics {
					out = append(out, Sample{Name: d.String(), Args: []*T{g.Tensor(d, -9, 9, 4, 2), peel.FromInt64s([]int64{1, 3, 1}, 3), g.Tensor(d, -9, 9, 3, 2)}})
				}
				return out
			},
			Ref: func(a []Host) Host {
				o := Host{Shape: a[0].Shape, DType: a[0].DType, Data: append([]float64{}, a[0].Data...)}
				for i, k := range a[1].Data {
					for j := 0; j < 2; j++ {
						o.Data[int(k)*2+j] += a[2].Data[i*2+j]
					}
				}
				return o
			},
			Differentiable: true,
		},
		{
			Name: "peel.OneHot/4",
			F:    func(a []*T) *T { return peel.OneHot(a[0], 4, peel.Float32) },
			Samples: func() []Sample {
				return []Sample{{Name: "i64[2,3]", Args: []*T{peel.FromInt64s([]int64{0, 3, 1, 2, 2, 0}, 2, 3)}}, {Name: "rank0", Args: []*T{peel.FromInt64s([]int64{1}, []int{}...)}}}
			},
			Ref: func(a []Host) Host {
				h := a[0]
				s := append(append([]int{}, h.Shape...), 4)
				o := Host{Shape: s, DType: peel.Float32, Data: make([]float64, backend.ShapeSize(s))}
				for i, k := range h.Data {
					o.Data[i*4+int(k)] = 1
				}
				return o
			},
		},
		{
			Name: "peel.AddInPlace/clone",
			F: func(a []*T) *T {
				y := peel.Clone(a[0])
				peel.AddInPlace(y, a[1])
				peel.MulInPlace(y, 2)
				return y
			},
			Samples: binarySamplesFixed(numerics),
			Ref: func(a []Host) Host {
				return Map(a[0].DType, a, func(x []float64) float64 { return (x[0] + x[1]) * 2 })
			},
			Differentiable: true,
		},
	}
	return ops
}

// ShapeSizeOf returns the number of elements of a shape (1 for []).
func ShapeSizeOf(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
