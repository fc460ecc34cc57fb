package optest

import (
	"fmt"
	"math"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
)

// Registry entries of the shape and index operations of issue 17
// (shape_matrix.go, shape_rearrange.go, shape.go, index_mask.go, scatter_reduce.go in package peel).

// sampled builds a Samples function from a seed and a body.
func sampled(seed uint64, body func(g *Gen) []Sample) func() []Sample {
	return func() []Sample { return body(NewGen(seed)) }
}

// i64s makes an i64 tensor.
func i64s(shape []int, v ...int64) *T { return peel.FromInt64s(v, shape...) }

// bools makes a bool tensor from 0/1 values.
func boolsOf(shape []int, v ...int) *T {
	b := make([]bool, len(v))
	for i, x := range v {
		b[i] = x != 0
	}
	return peel.FromBools(b, shape...)
}

// stackAll stacks results of a multi-result op along a new leading axis
// (for the registry, whose ops return one tensor).
func stackAll(ts []*T) *T { return peel.Stack(ts, 0) }

// flatConcat concatenates the flattened pieces.
func flatConcat(ts []*T) *T {
	f := make([]*T, len(ts))
	for i, t := range ts {
		f[i] = peel.Flatten(t)
	}
	return peel.Concat(f, 0)
}

func triRef(h Host, k int, lower bool) Host {
	r := len(h.Shape)
	return h.mapIndex(func(idx []int, v float64) float64 {
		d := idx[r-1] - idx[r-2]
		if (lower && d <= k) || (!lower && d >= k) {
			return v
		}
		return 0
	})
}

// mapIndex applies f to every element with its multi-index.
func (h Host) mapIndex(f func(idx []int, v float64) float64) Host {
	o := Host{Shape: h.Shape, DType: h.DType, Data: make([]float64, len(h.Data))}
	for i, v := range h.Data {
		o.Data[i] = Round(h.DType, f(Unravel(h.Shape, i), v))
	}
	return o
}

func diagLenRef(m, n, off int) int {
	if off >= 0 {
		return max(0, min(m, n-off))
	}
	return max(0, min(m+off, n))
}

func diagonalRef(h Host, off, a1, a2 int) Host {
	var shape []int
	for i, d := range h.Shape {
		if i != a1 && i != a2 {
			shape = append(shape, d)
		}
	}
	L := diagLenRef(h.Shape[a1], h.Shape[a2], off)
	shape = append(shape, L)
	return remap(h, shape, 0, func(o []int) []int {
		in := make([]int, len(h.Shape))
		j := 0
		for i := range in {
			if i != a1 && i != a2 {
				in[i] = o[j]
				j++
			}
		}
		t := o[len(o)-1]
		if off >= 0 {
			in[a1], in[a2] = t, t+off
		} else {
			in[a1], in[a2] = t-off, t
		}
		return in
	})
}

func sumLast(h Host, d peel.DType) Host {
	return reduceRef(h, []int{len(h.Shape) - 1}, false, d, sum)
}

func intIfBool(d peel.DType) peel.DType {
	if d == peel.Bool {
		return peel.Int64
	}
	return d
}

func rollRef(h Host, shift int, axes []int) Host {
	if len(axes) == 0 {
		n := len(h.Data)
		o := Host{Shape: h.Shape, DType: h.DType, Data: make([]float64, n)}
		for i, v := range h.Data {
			o.Data[((i+shift)%n+n)%n] = v
		}
		return o
	}
	return remap(h, h.Shape, 0, func(o []int) []int {
		in := append([]int{}, o...)
		for _, a := range axes {
			n := h.Shape[a]
			in[a] = ((o[a]-shift)%n + n) % n
		}
		return in
	})
}

func rot90Ref(h Host, k, a0, a1 int) Host {
	k = ((k % 4) + 4) % 4
	for range k {
		// One rotation: out[.., i, .., j, ..] = x[.., j, .., n1-1-i, ..]
		// with out's a0 of x's a1 size and vice versa.
		shape := append([]int{}, h.Shape...)
		shape[a0], shape[a1] = h.Shape[a1], h.Shape[a0]
		n1 := h.Shape[a1]
		src := h
		h = remap(src, shape, 0, func(o []int) []int {
			in := append([]int{}, o...)
			in[a0], in[a1] = o[a1], n1-1-o[a0]
			return in
		})
	}
	return h
}

func repeatRef(h Host, reps []int, axis int) Host {
	n := h.Shape[axis]
	var src []int
	for i := range n {
		r := reps[0]
		if len(reps) > 1 {
			r = reps[i]
		}
		for range r {
			src = append(src, i)
		}
	}
	shape := append([]int{}, h.Shape...)
	shape[axis] = len(src)
	return remap(h, shape, 0, func(o []int) []int {
		in := append([]int{}, o...)
		in[axis] = src[o[axis]]
		return in
	})
}

func kronRef(a, b Host) Host {
	r := max(len(a.Shape), len(b.Shape))
	pad := func(s []int) []int {
		o := make([]int, r)
		for i := range o {
			o[i] = 1
		}
		copy(o[r-len(s):], s)
		return o
	}
	as, bs := pad(a.Shape), pad(b.Shape)
	A, B := Host{Shape: as, Data: a.Data}, Host{Shape: bs, Data: b.Data}
	shape := make([]int, r)
	for i := range shape {
		shape[i] = as[i] * bs[i]
	}
	d := peel.PromoteTypes(a.DType, b.DType)
	o := Host{Shape: shape, DType: d, Data: make([]float64, backend.ShapeSize(shape))}
	for f := range o.Data {
		idx := Unravel(shape, f)
		ia, ib := make([]int, r), make([]int, r)
		for i := range idx {
			ia[i], ib[i] = idx[i]/bs[i], idx[i]%bs[i]
		}
		o.Data[f] = Round(d, A.At(ia)*B.At(ib))
	}
	return o
}

func crossRef(a, b Host, axis int) Host {
	shape := BroadcastShape(a.Shape, b.Shape)
	if axis < 0 {
		axis += len(shape)
	}
	d := peel.PromoteTypes(a.DType, b.DType)
	o := Host{Shape: shape, DType: d, Data: make([]float64, backend.ShapeSize(shape))}
	for f := range o.Data {
		idx := Unravel(shape, f)
		c := idx[axis]
		at := func(h Host, i int) float64 {
			j := append([]int{}, idx...)
			j[axis] = i
			return h.At(j)
		}
		i, j := (c+1)%3, (c+2)%3
		o.Data[f] = Round(d, at(a, i)*at(b, j)-at(a, j)*at(b, i))
	}
	return o
}

func cdistRef(a, b Host, p float64) Host {
	ra, rb := len(a.Shape), len(b.Shape)
	P, R, M := a.Shape[ra-2], b.Shape[rb-2], a.Shape[ra-1]
	batch := BroadcastShape(a.Shape[:ra-2], b.Shape[:rb-2])
	shape := append(append([]int{}, batch...), P, R)
	d := peel.PromoteTypes(a.DType, b.DType)
	if !d.IsFloat() {
		d = peel.Float64
	}
	o := Host{Shape: shape, DType: d, Data: make([]float64, backend.ShapeSize(shape))}
	for f := range o.Data {
		idx := Unravel(shape, f)
		bi := idx[:len(batch)]
		i, j := idx[len(batch)], idx[len(batch)+1]
		acc := 0.0
		for m := range M {
			x := a.At(append(append([]int{}, bi...), i, m)) - b.At(append(append([]int{}, bi...), j, m))
			x = math.Abs(x)
			switch {
			case p == 0:
				if x != 0 {
					acc++
				}
			case math.IsInf(p, 1):
				acc = math.Max(acc, x)
			default:
				acc += math.Pow(x, p)
			}
		}
		if p != 0 && !math.IsInf(p, 1) {
			acc = math.Pow(acc, 1/p)
		}
		o.Data[f] = Round(d, acc)
	}
	return o
}

// selectRef returns the elements of x where mask (broadcast together) is
// nonzero, padded with fill or cut to size.
func selectRef(x, mask Host, size int, fill float64) Host {
	shape := BroadcastShape(x.Shape, mask.Shape)
	o := Host{Shape: []int{size}, DType: x.DType, Data: make([]float64, size)}
	k := 0
	for f := range backend.ShapeSize(shape) {
		idx := Unravel(shape, f)
		if mask.At(idx) != 0 && k < size {
			o.Data[k] = x.At(idx)
			k++
		}
	}
	for ; k < size; k++ {
		o.Data[k] = Round(x.DType, fill)
	}
	return o
}

func nonzeroRef(x Host, size int, fill float64) Host {
	r := len(x.Shape)
	o := Host{Shape: []int{r, size}, DType: peel.Int64, Data: make([]float64, r*size)}
	for i := range o.Data {
		o.Data[i] = fill
	}
	k := 0
	for f, v := range x.Data {
		if v != 0 && k < size {
			for a, c := range Unravel(x.Shape, f) {
				o.Data[a*size+k] = float64(c)
			}
			k++
		}
	}
	return o
}

// indexPutRef writes (or adds) values at x[i0[u], i1[u], ...] for every u of
// the broadcast index shape, in row-major order.
func indexPutRef(x Host, idx []Host, v Host, acc bool) Host {
	o := Host{Shape: x.Shape, DType: x.DType, Data: append([]float64{}, x.Data...)}
	shapes := make([][]int, len(idx))
	for i, h := range idx {
		shapes[i] = h.Shape
	}
	B := BroadcastShape(shapes...)
	rest := x.Shape[len(idx):]
	nr := backend.ShapeSize(rest)
	for u := range backend.ShapeSize(B) {
		bi := Unravel(B, u)
		pos := make([]int, len(idx))
		for j, h := range idx {
			k := int(h.At(bi))
			if k < 0 {
				k += x.Shape[j]
			}
			pos[j] = k
		}
		for s := range nr {
			ri := Unravel(rest, s)
			dst := Index(x.Shape, append(append([]int{}, pos...), ri...))
			val := v.At(append(append([]int{}, bi...), ri...))
			if acc {
				o.Data[dst] = Round(x.DType, o.Data[dst]+val)
			} else {
				o.Data[dst] = Round(x.DType, val)
			}
		}
	}
	return o
}

func shapeMoreOps() []Op {
	mats := [][]int{{3, 4}, {2, 3, 4}, {4, 2}, {0, 3}}
	var ops []Op
	for _, k := range []int{0, 1, -2} {
		k := k
		ops = append(ops,
			oneInput(fmt.Sprintf("peel.Tril/%d", k), func(x *T) *T { return peel.Tril(x, k) }, mats, allTypes,
				func(h Host) Host { return triRef(h, k, true) }),
			oneInput(fmt.Sprintf("peel.Triu/%d", k), func(x *T) *T { return peel.Triu(x, k) }, mats, allTypes,
				func(h Host) Host { return triRef(h, k, false) }))
	}
	for _, c := range []struct{ off, a1, a2 int }{{0, 0, 1}, {1, 0, 2}, {-1, -1, 0}, {5, 1, 2}} {
		c := c
		ops = append(ops, oneInput(fmt.Sprintf("peel.Diagonal/%d,%d,%d", c.off, c.a1, c.a2), func(x *T) *T { return peel.Diagonal(x, c.off, c.a1, c.a2) },
			[][]int{{3, 2, 4}, {2, 3, 3}, {3, 0, 2}}, allTypes, func(h Host) Host {
				r := len(h.Shape)
				return diagonalRef(h, c.off, (c.a1+r)%r, (c.a2+r)%r)
			}))
	}
	for _, off := range []int{0, -1, 2} {
		off := off
		ops = append(ops, oneInput(fmt.Sprintf("peel.Trace/%d", off), func(x *T) *T { return peel.Trace(x, off) },
			[][]int{{3, 4}, {3, 3, 2}, {0, 2}}, allTypes, func(h Host) Host {
				d := diagonalRef(h, off, 0, 1)
				return sumLast(d, intIfBool(h.DType))
			}))
	}
	for _, k := range []int{0, 2, -1} {
		k := k
		ops = append(ops, oneInput(fmt.Sprintf("peel.Diag/%d", k), func(x *T) *T { return peel.Diag(x, k) },
			[][]int{{3}, {1}, {0}, {3, 4}, {2, 2}}, allTypes, func(h Host) Host {
				if len(h.Shape) == 2 {
					return diagonalRef(h, k, 0, 1)
				}
				n := h.Shape[0]
				N := n + max(k, -k)
				return remap(h, []int{N, N}, 0, func(o []int) []int {
					i, j := o[0], o[1]
					if j-i != k {
						return nil
					}
					return []int{min(i, j)}
				})
			}))
	}
	for _, c := range []struct {
		shift int
		axes  []int
	}{{2, []int{1}}, {-3, nil}, {1, []int{0, -1}}, {7, []int{2}}} {
		c := c
		ops = append(ops, oneInput(fmt.Sprintf("peel.Roll/%d,%v", c.shift, c.axes), func(x *T) *T { return peel.Roll(x, c.shift, c.axes...) },
			[][]int{{2, 3, 4}, {3, 0, 2}}, allTypes, func(h Host) Host {
				axes := make([]int, len(c.axes))
				for i, a := range c.axes {
					axes[i] = (a + len(h.Shape)) % len(h.Shape)
				}
				return rollRef(h, c.shift, axes)
			}))
	}
	ops = append(ops, oneInput("peel.Roll/1,flat", func(x *T) *T { return peel.Roll(x, 1) }, [][]int{{}, {5}, {0}}, allTypes,
		func(h Host) Host {
			if len(h.Data) == 0 || len(h.Shape) == 0 {
				return h
			}
			return rollRef(h, 1, nil)
		}))
	for _, c := range []struct {
		k    int
		axes [2]int
	}{{1, [2]int{0, 1}}, {2, [2]int{0, 1}}, {-1, [2]int{1, 2}}, {3, [2]int{2, 0}}} {
		c := c
		ops = append(ops, oneInput(fmt.Sprintf("peel.Rot90/%d,%v", c.k, c.axes), func(x *T) *T { return peel.Rot90(x, c.k, c.axes) },
			[][]int{{2, 3, 4}, {3, 0, 2}}, allTypes, func(h Host) Host { return rot90Ref(h, c.k, c.axes[0], c.axes[1]) }))
	}
	ops = append(ops,
		oneInput("peel.RepeatInterleave/[2],1", func(x *T) *T { return peel.RepeatInterleave(x, []int{2}, 1) },
			[][]int{{2, 3, 4}, {3, 0}, {2, 3}}, allTypes, func(h Host) Host { return repeatRef(h, []int{2}, 1) }),
		oneInput("peel.RepeatInterleave/[1,0,3],0", func(x *T) *T { return peel.RepeatInterleave(x, []int{1, 0, 3}, 0) },
			[][]int{{3, 2}, {3}}, allTypes, func(h Host) Host { return repeatRef(h, []int{1, 0, 3}, 0) }),
		oneInput("peel.Unbind/1", func(x *T) *T { return stackAll(peel.Unbind(x, 1)) },
			[][]int{{2, 3, 4}, {2, 1}, {0, 2}}, allTypes, func(h Host) Host {
				perm := []int{1, 0}
				if len(h.Shape) == 3 {
					perm = []int{1, 0, 2}
				}
				return transposeRef(h, perm)
			}),
		oneInput("peel.Chunk/3,1", func(x *T) *T { return flatConcat(peel.Chunk(x, 3, 1)) },
			[][]int{{2, 5, 3}, {2, 7}, {2, 3}}, allTypes, func(h Host) Host {
				n := h.Shape[1]
				c := (n + 2) / 3
				var out Host
				out.DType = h.DType
				for s := 0; s < n; s += c {
					l := min(c, n-s)
					shape := append([]int{}, h.Shape...)
					shape[1] = l
					piece := remap(h, shape, 0, func(o []int) []int {
						in := append([]int{}, o...)
						in[1] += s
						return in
					})
					out.Data = append(out.Data, piece.Data...)
				}
				out.Shape = []int{len(out.Data)}
				return out
			}),
	)
	for _, ix := range []string{"ij", "xy"} {
		ix := ix
		ops = append(ops, Op{
			Name: "peel.Meshgrid/" + ix,
			F:    func(a []*T) *T { return stackAll(peel.Meshgrid(ix, a...)) },
			Samples: sampled(20, func(g *Gen) []Sample {
				var out []Sample
				for _, d := range allTypes {
					out = append(out,
						Sample{Name: d.String(), Args: []*T{g.Tensor(d, -9, 9, 3), g.Tensor(d, -9, 9, 2)}},
						Sample{Name: d.String() + "/three", Args: []*T{g.Tensor(d, -9, 9, 2), g.Tensor(d, -9, 9, 0), g.Tensor(d, -9, 9, []int{}...)}})
				}
				return out
			}),
			Ref: func(a []Host) Host {
				shape := make([]int, len(a))
				pos := make([]int, len(a))
				for i, h := range a {
					shape[i], pos[i] = h.Size(), i
				}
				if ix == "xy" {
					shape[0], shape[1] = shape[1], shape[0]
					pos[0], pos[1] = 1, 0
				}
				n := backend.ShapeSize(shape)
				o := Host{Shape: append([]int{len(a)}, shape...), DType: a[0].DType}
				for i, h := range a {
					for f := range n {
						o.Data = append(o.Data, h.Data[Unravel(shape, f)[pos[i]]])
					}
				}
				return o
			},
			Differentiable: true,
		})
	}
	ops = append(ops, Op{
		Name: "peel.Kron",
		F:    func(a []*T) *T { return peel.Kron(a[0], a[1]) },
		Samples: sampled(21, func(g *Gen) []Sample {
			var out []Sample
			for _, d := range numerics {
				for _, p := range [][2][]int{{{2, 3}, {2, 2}}, {{3}, {2, 2}}, {{2, 0}, {3, 1}}, {{}, {3}}} {
					out = append(out, Sample{Name: fmt.Sprintf("%v%v%v", d, p[0], p[1]), Args: []*T{g.Tensor(d, -5, 5, p[0]...), g.Tensor(d, -5, 5, p[1]...)}})
				}
			}
			out = append(out, Sample{Name: "mixed", Args: []*T{g.Tensor(peel.Int64, -5, 5, 2), g.Tensor(peel.Float32, -5, 5, 2)}})
			return out
		}),
		Ref:            func(a []Host) Host { return kronRef(a[0], a[1]) },
		Differentiable: true,
	})
	for _, axis := range []int{-1, 0} {
		axis := axis
		ops = append(ops, Op{
			Name: fmt.Sprintf("peel.Cross/%d", axis),
			F:    func(a []*T) *T { return peel.Cross(a[0], a[1], axis) },
			Samples: sampled(22, func(g *Gen) []Sample {
				var out []Sample
				for _, d := range numerics {
					if axis == -1 {
						out = append(out,
							Sample{Name: d.String() + "[4,3]x[3]", Args: []*T{g.Tensor(d, -5, 5, 4, 3), g.Tensor(d, -5, 5, 3)}},
							Sample{Name: d.String() + "[0,3]", Args: []*T{g.Tensor(d, -5, 5, 0, 3), g.Tensor(d, -5, 5, 0, 3)}})
					} else {
						out = append(out, Sample{Name: d.String() + "[3,2]", Args: []*T{g.Tensor(d, -5, 5, 3, 2), g.Tensor(d, -5, 5, 3, 1)}})
					}
				}
				return out
			}),
			Ref:            func(a []Host) Host { return crossRef(a[0], a[1], axis) },
			Tol:            1e-5,
			Differentiable: true,
		})
	}
	for _, p := range []float64{2, 1, 3, 0.5, 0, math.Inf(1)} {
		p := p
		ops = append(ops, Op{
			Name: fmt.Sprintf("peel.Cdist/p=%v", p),
			F:    func(a []*T) *T { return peel.Cdist(a[0], a[1], p) },
			Samples: sampled(23, func(g *Gen) []Sample {
				var out []Sample
				for _, d := range numerics {
					out = append(out,
						Sample{Name: d.String() + "[3,2]x[4,2]", Args: []*T{g.Tensor(d, -3, 3, 3, 2), g.Tensor(d, -3, 3, 4, 2)}},
						Sample{Name: d.String() + "[2,3,2]x[4,2]", Args: []*T{g.Tensor(d, -3, 3, 2, 3, 2), g.Tensor(d, -3, 3, 4, 2)}})
				}
				out = append(out,
					Sample{Name: "empty-features", Args: []*T{g.Tensor(peel.Float64, -3, 3, 2, 0), g.Tensor(peel.Float64, -3, 3, 3, 0)}},
					Sample{Name: "empty-rows", Args: []*T{g.Tensor(peel.Float32, -3, 3, 0, 2), g.Tensor(peel.Float32, -3, 3, 3, 2)}})
				return out
			}),
			Ref:            func(a []Host) Host { return cdistRef(a[0], a[1], p) },
			Tol:            1e-5,
			Differentiable: true,
		})
	}
	ops = append(ops,
		Op{
			Name: "peel.MaskedFill/2.5",
			F:    func(a []*T) *T { return peel.MaskedFill(a[0], a[1], 2.5) },
			Samples: sampled(24, func(g *Gen) []Sample {
				var out []Sample
				for _, d := range allTypes {
					out = append(out,
						Sample{Name: d.String(), Args: []*T{g.Tensor(d, -9, 9, 2, 3), g.Tensor(peel.Bool, 0, 1, 3)}},
						Sample{Name: d.String() + "/same", Args: []*T{g.Tensor(d, -9, 9, 2, 3), g.Tensor(peel.Bool, 0, 1, 2, 3)}},
						Sample{Name: d.String() + "/empty", Args: []*T{g.Tensor(d, -9, 9, 0, 3), g.Tensor(peel.Bool, 0, 1, 3)}})
				}
				return out
			}),
			Ref: func(a []Host) Host {
				x := a[0]
				v := Round(x.DType, 2.5)
				if x.DType == peel.Int64 {
					v = 2
				}
				return Map(x.DType, []Host{x, a[1]}, func(e []float64) float64 {
					if e[1] != 0 {
						return v
					}
					return e[0]
				})
			},
			Differentiable: true,
		},
		Op{
			Name: "peel.MaskedFill/tensor",
			F:    func(a []*T) *T { return peel.MaskedFill(a[0], a[1], a[2]) },
			Samples: sampled(25, func(g *Gen) []Sample {
				var out []Sample
				for _, d := range floats {
					out = append(out, Sample{Name: d.String(), Args: []*T{g.Tensor(d, -9, 9, 2, 3), g.Tensor(peel.Bool, 0, 1, 2, 1), g.Tensor(d, -9, 9, []int{}...)}})
				}
				return out
			}),
			Ref: func(a []Host) Host {
				return Map(a[0].DType, []Host{a[0], a[1], a[2]}, func(e []float64) float64 {
					if e[1] != 0 {
						return e[2]
					}
					return e[0]
				})
			},
			Differentiable: true,
		},
	)
	for _, size := range []int{2, 8} {
		size := size
		ops = append(ops, Op{
			Name: fmt.Sprintf("peel.MaskedSelect/%d,-1", size),
			F:    func(a []*T) *T { return peel.MaskedSelect(a[0], a[1], size, -1) },
			Samples: sampled(26, func(g *Gen) []Sample {
				var out []Sample
				for _, d := range allTypes {
					out = append(out,
						Sample{Name: d.String(), Args: []*T{g.Tensor(d, -9, 9, 2, 3), boolsOf([]int{2, 3}, 1, 0, 1, 1, 0, 1)}},
						Sample{Name: d.String() + "/bcast", Args: []*T{g.Tensor(d, -9, 9, 3), boolsOf([]int{2, 1}, 1, 1)}},
						Sample{Name: d.String() + "/none", Args: []*T{g.Tensor(d, -9, 9, 2, 2), boolsOf([]int{2}, 0, 0)}},
						Sample{Name: d.String() + "/empty", Args: []*T{g.Tensor(d, -9, 9, 0, 2), boolsOf([]int{2}, 1, 0)}})
				}
				return out
			}),
			Ref:            func(a []Host) Host { return selectRef(a[0], a[1], size, -1) },
			Differentiable: true,
		})
		ops = append(ops, Op{
			Name: fmt.Sprintf("peel.Nonzero/%d,-1", size),
			F:    func(a []*T) *T { return stackAll(peel.Nonzero(a[0], size, -1)) },
			Samples: sampled(27, func(g *Gen) []Sample {
				var out []Sample
				for _, d := range allTypes {
					out = append(out,
						Sample{Name: d.String() + "[2,3]", Args: []*T{g.Tensor(d, -1, 2, 2, 3)}},
						Sample{Name: d.String() + "[5]", Args: []*T{g.Tensor(d, -1, 2, 5)}},
						Sample{Name: d.String() + "[2,0,2]", Args: []*T{g.Tensor(d, -1, 2, 2, 0, 2)}})
				}
				h := Host{Shape: []int{len(FloatEdges)}, DType: peel.Float64, Data: FloatEdges}
				out = append(out, Sample{Name: "edges", Args: []*T{h.Tensor()}})
				return out
			}),
			Ref: func(a []Host) Host { return nonzeroRef(a[0], size, -1) },
		})
	}
	for _, acc := range []bool{false, true} {
		acc := acc
		types := allTypes
		if acc {
			types = numerics
		}
		ops = append(ops, Op{
			Name: fmt.Sprintf("peel.IndexPut/accumulate=%v", acc),
			F:    func(a []*T) *T { return peel.IndexPut(a[0], a[1:len(a)-1], a[len(a)-1], acc) },
			Samples: sampled(28, func(g *Gen) []Sample {
				var out []Sample
				for _, d := range types {
					out = append(out,
						Sample{Name: d.String() + "/one", Args: []*T{g.Tensor(d, -9, 9, 4, 3), i64s([]int{2, 2}, 1, -1, 1, 0), g.Tensor(d, -9, 9, 2, 2, 3)}},
						Sample{Name: d.String() + "/two", Args: []*T{g.Tensor(d, -9, 9, 4, 3), i64s([]int{3}, 0, 2, 0), i64s([]int{1}, -1), g.Tensor(d, -9, 9, 3)}},
						Sample{Name: d.String() + "/full", Args: []*T{g.Tensor(d, -9, 9, 3, 2, 2), i64s([]int{2, 1}, 2, 0), i64s([]int{3}, 1, 0, 1), i64s([]int{}, 1), g.Tensor(d, -9, 9, 1)}},
						Sample{Name: d.String() + "/no-index", Args: []*T{g.Tensor(d, -9, 9, 4, 3), i64s([]int{0}), g.Tensor(d, -9, 9, 3)}})
				}
				return out
			}),
			Ref: func(a []Host) Host {
				return indexPutRef(a[0], a[1:len(a)-1], a[len(a)-1], acc)
			},
			Differentiable: true,
		})
	}
	ops = append(ops,
		Op{
			Name: "peel.IndexPutInPlace/clone",
			F: func(a []*T) *T {
				y := peel.Clone(a[0])
				peel.IndexPutInPlace(y, []*T{a[1]}, peel.MulInPlace(peel.Clone(a[2]), 2), true)
				peel.IndexPutInPlace(y, []*T{a[1]}, peel.Add(peel.Take(y, a[1], 0), a[2]), false)
				return y
			},
			Samples: sampled(31, func(g *Gen) []Sample {
				var out []Sample
				for _, d := range numerics {
					out = append(out, Sample{Name: d.String(), Args: []*T{g.Tensor(d, -9, 9, 4, 3), i64s([]int{3}, 2, 0, 2), g.Tensor(d, -9, 9, 3, 1)}})
				}
				return out
			}),
			Ref: func(a []Host) Host {
				x, idx, v := a[0], a[1], a[2]
				o := Host{Shape: x.Shape, DType: x.DType, Data: append([]float64{}, x.Data...)}
				for u, k := range idx.Data {
					for j := range 3 {
						o.Data[int(k)*3+j] += 2 * v.Data[u]
					}
				}
				mid := append([]float64{}, o.Data...)
				for u, k := range idx.Data {
					for j := range 3 {
						o.Data[int(k)*3+j] = v.Data[u] + mid[int(k)*3+j]
					}
				}
				return o
			},
			Differentiable: true,
		},
		Op{
			Name: "peel.MaskedFillInPlace/clone",
			F: func(a []*T) *T {
				y := peel.Clone(a[0])
				peel.MaskedFillInPlace(y, a[1], a[2])
				return y
			},
			Samples: sampled(32, func(g *Gen) []Sample {
				var out []Sample
				for _, d := range floats {
					out = append(out, Sample{Name: d.String(), Args: []*T{g.Tensor(d, -9, 9, 2, 3), g.Tensor(peel.Bool, 0, 1, 2, 3), g.Tensor(d, -9, 9, []int{}...)}})
				}
				return out
			}),
			Ref: func(a []Host) Host {
				x, m, v := a[0], a[1], a[2]
				o := Host{Shape: x.Shape, DType: x.DType, Data: append([]float64{}, x.Data...)}
				for i := range 2 {
					for j := range 3 {
						if m.Data[i*3+j] != 0 {
							o.Data[i*3+j] = v.Data[0]
						}
					}
				}
				return o
			},
			Differentiable: true,
		},
	)
	return append(ops, scatterReduceOps()...)
}
