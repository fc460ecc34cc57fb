package optest

import (
	"fmt"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
)

// MatMul, Einsum and Outer (dot_general).

// binarySamplesFixed gives pairs whose second operand broadcasts to the
// first, of one dtype (for in-place ops).
func binarySamplesFixed(dtypes []peel.DType) func() []Sample {
	return func() []Sample {
		g := NewGen(11)
		var out []Sample
		for _, d := range dtypes {
			for _, sh := range [][2][]int{{{}, {}}, {{2, 3}, {3}}, {{2, 3}, {}}, {{0, 2}, {2}}} {
				out = append(out, Sample{Name: fmt.Sprintf("%v%v%v", d, sh[0], sh[1]), Args: []*T{g.Tensor(d, -5, 5, sh[0]...), g.Tensor(d, -5, 5, sh[1]...)}})
			}
		}
		return out
	}
}

func matmulRef(a, b Host) Host {
	// numpy matmul semantics on the host.
	ash, bsh := a.Shape, b.Shape
	va, vb := len(ash) == 1, len(bsh) == 1
	if va {
		ash = []int{1, ash[0]}
	}
	if vb {
		bsh = []int{bsh[0], 1}
	}
	m, k, n := ash[len(ash)-2], ash[len(ash)-1], bsh[len(bsh)-1]
	batch := BroadcastShape(ash[:len(ash)-2], bsh[:len(bsh)-2])
	A := Host{Shape: ash, Data: a.Data}
	B := Host{Shape: bsh, Data: b.Data}
	shape := append(append([]int{}, batch...), m, n)
	d := peel.PromoteTypes(a.DType, b.DType)
	o := Host{Shape: shape, DType: d, Data: make([]float64, backend.ShapeSize(shape))}
	for i := range o.Data {
		idx := Unravel(shape, i)
		bi := idx[:len(batch)]
		r, c := idx[len(batch)], idx[len(batch)+1]
		s := 0.0
		for q := 0; q < k; q++ {
			s += A.At(append(append([]int{}, bi...), r, q)) * B.At(append(append([]int{}, bi...), q, c))
		}
		o.Data[i] = Round(d, s)
	}
	final := append([]int{}, batch...)
	if !va {
		final = append(final, m)
	}
	if !vb {
		final = append(final, n)
	}
	o.Shape = final
	return o
}

func dotOps() []Op {
	pairs := [][2][]int{{{3}, {3}}, {{3}, {3, 2}}, {{2, 3}, {3}}, {{2, 3}, {3, 4}}, {{2, 1, 3, 4}, {5, 4, 2}}, {{0, 3}, {3, 2}}, {{2, 0}, {0, 3}}}
	return []Op{
		{
			Name: "peel.MatMul",
			F:    func(a []*T) *T { return peel.MatMul(a[0], a[1]) },
			Samples: func() []Sample {
				g := NewGen(12)
				var out []Sample
				for _, d := range numerics {
					for _, p := range pairs {
						out = append(out, Sample{Name: fmt.Sprintf("%v%v@%v", d, p[0], p[1]), Args: []*T{g.Tensor(d, -3, 3, p[0]...), g.Tensor(d, -3, 3, p[1]...)}})
					}
				}
				out = append(out, Sample{Name: "mixed", Args: []*T{g.Tensor(peel.Int64, -3, 3, 2, 3), g.Tensor(peel.Float32, -3, 3, 3, 2)}})
				return out
			},
			Ref:            func(a []Host) Host { return matmulRef(a[0], a[1]) },
			Tol:            1e-5,
			Differentiable: true,
		},
		{
			Name: "peel.Linear",
			F:    func(a []*T) *T { return peel.Linear(a[0], a[1], a[2]) },
			Samples: func() []Sample {
				g := NewGen(16)
				var out []Sample
				for _, d := range numerics {
					for _, x := range [][]int{{3}, {2, 3}, {2, 1, 3}, {0, 3}} {
						out = append(out, Sample{Name: fmt.Sprintf("%v%v", d, x), Args: []*T{g.Tensor(d, -3, 3, x...), g.Tensor(d, -3, 3, 3, 4), g.Tensor(d, -3, 3, 4)}})
					}
				}
				// A bias that converts to the product's dtype (one
				// primitive), and one that widens it (the decomposition).
				out = append(out,
					Sample{Name: "f32·f32+i64", Args: []*T{g.Tensor(peel.Float32, -3, 3, 2, 3), g.Tensor(peel.Float32, -3, 3, 3, 4), g.Tensor(peel.Int64, -3, 3, 4)}},
					Sample{Name: "f32·f32+f64", Args: []*T{g.Tensor(peel.Float32, -3, 3, 2, 3), g.Tensor(peel.Float32, -3, 3, 3, 4), g.Tensor(peel.Float64, -3, 3, 4)}},
					Sample{Name: "i64·f32+f32", Args: []*T{g.Tensor(peel.Int64, -3, 3, 2, 3), g.Tensor(peel.Float32, -3, 3, 3, 4), g.Tensor(peel.Float32, -3, 3, 4)}})
				return out
			},
			Ref: func(a []Host) Host {
				y := matmulRef(a[0], a[1])
				d := peel.PromoteTypes(y.DType, a[2].DType)
				o := Host{Shape: y.Shape, DType: d, Data: make([]float64, len(y.Data))}
				n := len(a[2].Data)
				for i := range o.Data {
					o.Data[i] = Round(d, y.Data[i]+a[2].Data[i%n])
				}
				return o
			},
			Tol:            1e-5,
			Differentiable: true,
		},
		{
			Name: "peel.Outer",
			F:    func(a []*T) *T { return peel.Outer(a[0], a[1]) },
			Samples: func() []Sample {
				g := NewGen(13)
				return []Sample{{Name: "f64", Args: []*T{g.Tensor(peel.Float64, -3, 3, 3), g.Tensor(peel.Float64, -3, 3, 4)}}, {Name: "empty", Args: []*T{g.Tensor(peel.Float32, -3, 3, 0), g.Tensor(peel.Float32, -3, 3, 2)}}}
			},
			Ref: func(a []Host) Host {
				return matmulRef(Host{Shape: []int{a[0].Size(), 1}, DType: a[0].DType, Data: a[0].Data}, Host{Shape: []int{1, a[1].Size()}, DType: a[1].DType, Data: a[1].Data})
			},
			Differentiable: true,
		},
		{
			Name: "peel.Einsum/bij,bjk->bik",
			F:    func(a []*T) *T { return peel.Einsum("bij,bjk->bik", a[0], a[1]) },
			Samples: func() []Sample {
				g := NewGen(14)
				return []Sample{{Name: "f64", Args: []*T{g.Tensor(peel.Float64, -3, 3, 2, 3, 4), g.Tensor(peel.Float64, -3, 3, 2, 4, 5)}}}
			},
			Ref:            func(a []Host) Host { return matmulRef(a[0], a[1]) },
			Differentiable: true,
		},
		{
			Name: "peel.Einsum/ij,kj->ki",
			F:    func(a []*T) *T { return peel.Einsum("ij,kj->ki", a[0], a[1]) },
			Samples: func() []Sample {
				g := NewGen(15)
				return []Sample{{Name: "f32", Args: []*T{g.Tensor(peel.Float32, -3, 3, 3, 4), g.Tensor(peel.Float32, -3, 3, 2, 4)}}}
			},
			Ref: func(a []Host) Host {
				return matmulRef(a[1], transposeRef(a[0], []int{1, 0}))
			},
			Tol:            1e-5,
			Differentiable: true,
		},
	}
}
