package backendtest

import (
	"fmt"
	"math"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Windowed primitives: conv_general_dilated and the window reductions.

// convCase is one conv_general_dilated configuration.
type convCase struct {
	name   string
	x, w   []int
	params prims.ConvParams
}

func convCases() []convCase {
	p2 := func(s, lo, hi, ld, rd []int, g int) prims.ConvParams {
		return prims.ConvParams{Strides: s, PadLo: lo, PadHi: hi, LhsDilation: ld, RhsDilation: rd, FeatureGroupCount: g}
	}
	return []convCase{
		{"1-d valid", []int{2, 3, 7}, []int{4, 3, 3}, prims.ConvParams{}},
		{"2-d valid", []int{2, 3, 6, 5}, []int{4, 3, 3, 2}, prims.ConvParams{}},
		{"2-d same", []int{2, 3, 6, 5}, []int{4, 3, 3, 3}, p2(nil, []int{1, 1}, []int{1, 1}, nil, nil, 1)},
		{"2-d strided", []int{1, 2, 9, 8}, []int{3, 2, 3, 3}, p2([]int{2, 3}, []int{1, 0}, []int{2, 1}, nil, nil, 1)},
		{"2-d rhs dilation", []int{1, 2, 9, 8}, []int{3, 2, 2, 3}, p2(nil, nil, nil, nil, []int{3, 2}, 1)},
		{"2-d lhs dilation", []int{1, 2, 4, 3}, []int{3, 2, 3, 2}, p2([]int{1, 2}, []int{2, 1}, []int{2, 0}, []int{2, 3}, nil, 1)},
		{"negative padding", []int{1, 2, 8}, []int{2, 2, 3}, p2(nil, []int{-2}, []int{-1}, nil, nil, 1)},
		{"groups", []int{2, 6, 5, 5}, []int{4, 3, 3, 3}, p2(nil, []int{1, 1}, []int{1, 1}, nil, nil, 2)},
		{"depthwise", []int{2, 4, 6}, []int{4, 1, 3}, p2([]int{2}, []int{1}, []int{1}, nil, nil, 4)},
		{"batch groups", []int{6, 2, 5, 4}, []int{6, 2, 2, 3}, prims.ConvParams{BatchGroupCount: 3, PadLo: []int{1, 0}, PadHi: []int{0, 1}}},
		{"batch groups, long windows", []int{4, 3, 6, 6}, []int{4, 3, 5, 5}, prims.ConvParams{BatchGroupCount: 2}},
		{"1x1", []int{2, 5, 4, 3}, []int{6, 5, 1, 1}, prims.ConvParams{}},
		{"1x1 groups", []int{2, 4, 4, 3}, []int{6, 2, 1, 1}, p2(nil, nil, nil, nil, nil, 2)},
		{"3-d", []int{1, 2, 4, 5, 3}, []int{2, 2, 2, 3, 2}, p2([]int{1, 2, 1}, []int{0, 1, 1}, []int{1, 1, 0}, nil, nil, 1)},
		{"no spatial dims", []int{3, 4}, []int{5, 4}, prims.ConvParams{}},
		{"window larger than input", []int{1, 1, 2}, []int{1, 1, 4}, prims.ConvParams{}},
		{"empty batch", []int{0, 2, 4}, []int{3, 2, 2}, prims.ConvParams{}},
		{"no features", []int{2, 0, 4}, []int{3, 0, 2}, prims.ConvParams{}},
		{"no output features", []int{2, 2, 4}, []int{0, 2, 2}, prims.ConvParams{}},
		{"large", []int{2, 16, 20, 20}, []int{24, 16, 3, 3}, p2(nil, []int{1, 1}, []int{1, 1}, nil, nil, 1)},
		// More than one packed block (convColsMax) per image.
		{"blocked", []int{1, 64, 64, 64}, []int{2, 64, 3, 3}, p2(nil, []int{1, 1}, []int{1, 1}, nil, nil, 1)},
		// Windows longer than the results (a kernel gradient).
		{"long windows", []int{3, 4, 6, 6}, []int{2, 4, 5, 5}, prims.ConvParams{}},
		{"long windows, groups, strides, dilations", []int{2, 4, 7, 9}, []int{4, 2, 3, 4}, p2([]int{2, 1}, []int{1, -1}, []int{2, 0}, []int{1, 2}, []int{2, 2}, 2)},
		{"long windows, blocked contraction", []int{1, 130, 35, 35}, []int{1, 130, 32, 32}, prims.ConvParams{}},
	}
}

// randomConvCase draws a small configuration (every parameter random,
// padding possibly negative) whose result is not empty.
func (s *suite) randomConvCase(k int) convCase {
	for {
		nd := 1 + s.rng.IntN(3)
		g := 1 + s.rng.IntN(3)
		cg, og := 1+s.rng.IntN(2), 1+s.rng.IntN(2)
		x := []int{1 + s.rng.IntN(2), g * cg}
		w := []int{g * og, cg}
		p := prims.ConvParams{FeatureGroupCount: g}
		if k%4 == 3 {
			// Batch groups instead.
			x[0], x[1] = g*x[0], cg
			p = prims.ConvParams{BatchGroupCount: g}
		}
		for range nd {
			x = append(x, 1+s.rng.IntN(6))
			w = append(w, 1+s.rng.IntN(3))
			p.Strides = append(p.Strides, 1+s.rng.IntN(3))
			p.PadLo = append(p.PadLo, s.rng.IntN(4)-1)
			p.PadHi = append(p.PadHi, s.rng.IntN(4)-1)
			p.LhsDilation = append(p.LhsDilation, 1+s.rng.IntN(2))
			p.RhsDilation = append(p.RhsDilation, 1+s.rng.IntN(3))
		}
		var ok bool
		if err := interp.Catch(func() { ok = backend.ShapeSize(prims.ConvShape(p, x, w)) > 0 }); err == nil && ok {
			return convCase{fmt.Sprintf("random %d", k), x, w, p}
		}
	}
}

// refConv is conv_general_dilated by its definition: for each result
// element the sum over the group's features and the kernel's taps of the
// lhs element the tap reads (none in padding or dilation gaps).
func refConv(x, w array, p prims.ConvParams, shape []int) (array, []float64) {
	nd := len(x.shape) - 2
	p = p.Normalized(nd)
	out := newArray(x.dt, shape)
	allow := make([]float64, out.size())
	xst, wst := backend.ContiguousStrides(x.shape), backend.ContiguousStrides(w.shape)
	bg := p.BatchGroupCount
	groups := p.FeatureGroupCount * bg
	cg, og := w.shape[1], w.shape[0]/groups
	forEachIndex(shape, func(k int, o []int) {
		n, oc := o[0], o[1]
		grp := oc / og
		var sum, mag float64
		terms := 0
		forEachIndex(w.shape[1:], func(_ int, t []int) {
			xi := n*xst[0] + (grp*cg+t[0])*xst[1]
			if bg > 1 {
				xi = (grp*shape[0]+n)*xst[0] + t[0]*xst[1]
			}
			for j := range nd {
				v := o[2+j]*p.Strides[j] + t[1+j]*p.RhsDilation[j] - p.PadLo[j]
				if v < 0 || v%p.LhsDilation[j] != 0 || v/p.LhsDilation[j] >= x.shape[2+j] {
					return
				}
				xi += v / p.LhsDilation[j] * xst[2+j]
			}
			wi := oc * wst[0]
			for j, d := range t {
				wi += d * wst[1+j]
			}
			sum += x.f[xi] * w.f[wi]
			mag += math.Abs(x.f[xi] * w.f[wi])
			terms++
		})
		out.f[k] = fround(x.dt, sum)
		allow[k] = sumBound(x.dt, terms, mag, out.f[k])
	})
	return out, allow
}

func runConv(s *suite) {
	p := prims.ConvGeneralDilated
	one := prims.ConvParams{}
	dts := accepted(p, one, func(dt backend.DType) []interp.Aval {
		return []interp.Aval{{Shape: []int{1, 1, 2}, DType: dt}, {Shape: []int{1, 1, 1}, DType: dt}}
	})
	cases := convCases()
	for k := range 40 {
		cases = append(cases, s.randomConvCase(k))
	}
	for _, dt := range allDTypes {
		if !slices.Contains(dts, dt) {
			s.expectError(describe(p.Name, dt, []int{1, 1, 2}, "(a dtype the rule rejects)"), func() {
				x := s.operand(dt, []int{1, 1, 2}, contiguous, defaultValues).t
				w := s.operand(dt, []int{1, 1, 1}, contiguous, defaultValues).t
				interp.Bind1(p, one, x, w)
			})
			continue
		}
		for _, c := range cases {
			shape := prims.ConvShape(c.params, c.x, c.w)
			ls := [][2]layout{{contiguous, contiguous}}
			if backend.ShapeSize(c.x) < 5000 {
				ls = append(ls, [2]layout{transposed, contiguous}, [2]layout{contiguous, strided})
			}
			for _, l := range ls {
				x, w := s.operand(dt, c.x, l[0], finiteValues), s.operand(dt, c.w, l[1], finiteValues)
				desc := describe(p.Name, dt, c.x, c.name, fmtShape(c.w), c.params, "x="+l[0].String(), "w="+l[1].String())
				s.try(desc, func() {
					want, allow := refConv(x.a, w.a, c.params, shape)
					s.expect(check{desc: desc, allow: allow}, interp.Bind1(p, c.params, x.t, w.t), want)
				})
			}
		}
	}
	f := func(dt backend.DType, shape ...int) *interp.Tensor {
		return s.operand(dt, shape, contiguous, finiteValues).t
	}
	bad := func(desc string, params prims.ConvParams, x, w *interp.Tensor) {
		s.expectError(desc, func() { interp.Bind1(p, params, x, w) })
	}
	f64 := backend.Float64
	bad("conv of rank 1", one, f(f64, 3), f(f64, 3))
	bad("conv of ranks 3 and 4", one, f(f64, 1, 2, 3), f(f64, 1, 2, 3, 3))
	bad("conv of f64 and f32", one, f(f64, 1, 2, 3), f(backend.Float32, 1, 2, 3))
	bad("conv with 3 features and a kernel taking 2", one, f(f64, 1, 3, 4), f(f64, 1, 2, 2))
	bad("conv with 2 strides for 1 spatial dimension", prims.ConvParams{Strides: []int{1, 1}}, f(f64, 1, 2, 4), f(f64, 1, 2, 2))
	bad("conv with stride 0", prims.ConvParams{Strides: []int{0}}, f(f64, 1, 2, 4), f(f64, 1, 2, 2))
	bad("conv with rhs dilation 0", prims.ConvParams{RhsDilation: []int{0}}, f(f64, 1, 2, 4), f(f64, 1, 2, 2))
	bad("conv with 3 output features in 2 groups", prims.ConvParams{FeatureGroupCount: 2}, f(f64, 1, 4, 4), f(f64, 3, 2, 2))
	bad("conv with feature and batch groups", prims.ConvParams{BatchGroupCount: 2, FeatureGroupCount: 2}, f(f64, 2, 4, 4), f(f64, 4, 2, 2))
	bad("conv with 3 batch groups of a batch of 2", prims.ConvParams{BatchGroupCount: 3}, f(f64, 2, 2, 4), f(f64, 3, 2, 2))
	bad("conv with 2 batch groups of 3 output features", prims.ConvParams{BatchGroupCount: 2}, f(f64, 2, 2, 4), f(f64, 3, 2, 2))
	bad("conv with a negative batch group count", prims.ConvParams{BatchGroupCount: -1}, f(f64, 2, 2, 4), f(f64, 2, 2, 2))
	bad("conv with padding removing everything", prims.ConvParams{PadLo: []int{-3}, PadHi: []int{-2}}, f(f64, 1, 2, 4), f(f64, 1, 2, 2))
	bad("conv with a huge padding", prims.ConvParams{PadLo: []int{math.MaxInt / 2}, PadHi: []int{math.MaxInt / 2}}, f(f64, 1, 2, 4), f(f64, 1, 2, 2))
	bad("conv with a huge lhs dilation", prims.ConvParams{LhsDilation: []int{math.MaxInt / 2}}, f(f64, 1, 2, 4), f(f64, 1, 2, 2))
}

// windowCases are window reduction configurations: pooling windows,
// overlapping and padded windows, windows in the padding alone.
func windowCases() []struct {
	name  string
	shape []int
	p     prims.WindowParams
} {
	type c = struct {
		name  string
		shape []int
		p     prims.WindowParams
	}
	return []c{
		{"2x2 pool", []int{2, 3, 6, 4}, prims.WindowParams{Window: []int{1, 1, 2, 2}, Strides: []int{1, 1, 2, 2}}},
		{"3x3 same", []int{1, 2, 5, 5}, prims.WindowParams{Window: []int{1, 1, 3, 3}, PadLo: []int{0, 0, 1, 1}, PadHi: []int{0, 0, 1, 1}}},
		{"3x3 stride 2 padded", []int{2, 1, 7, 6}, prims.WindowParams{Window: []int{1, 1, 3, 3}, Strides: []int{1, 1, 2, 2}, PadLo: []int{0, 0, 1, 1}, PadHi: []int{0, 0, 1, 0}}},
		{"1-d overlapping", []int{9}, prims.WindowParams{Window: []int{4}, Strides: []int{2}, PadLo: []int{3}, PadHi: []int{2}}},
		{"padding only windows", []int{3}, prims.WindowParams{Window: []int{2}, Strides: []int{2}, PadLo: []int{4}, PadHi: []int{3}}},
		{"negative padding", []int{8}, prims.WindowParams{Window: []int{2}, PadLo: []int{-2}, PadHi: []int{-1}}},
		{"window over all dims", []int{3, 4}, prims.WindowParams{Window: []int{2, 3}, Strides: []int{1, 2}}},
		{"window longer than input", []int{2, 3}, prims.WindowParams{Window: []int{3, 1}}},
		{"empty", []int{0, 3}, prims.WindowParams{Window: []int{1, 2}}},
		{"rank 0", []int{}, prims.WindowParams{Window: []int{}}},
		{"large", []int{4, 8, 32, 32}, prims.WindowParams{Window: []int{1, 1, 3, 3}, Strides: []int{1, 1, 2, 2}, PadLo: []int{0, 0, 1, 1}, PadHi: []int{0, 0, 1, 1}}},
	}
}

// refReduceWindow reduces each window of x by its definition (padding
// holds the identity), with the error allowed for float sums.
func refReduceWindow(x array, p prims.WindowParams, isMax bool, shape []int) (array, []float64) {
	r := len(x.shape)
	p = p.Normalized(r)
	out := newArray(x.dt, shape)
	var allow []float64
	if x.dt.IsFloat() && !isMax {
		allow = make([]float64, out.size())
	}
	xst := backend.ContiguousStrides(x.shape)
	forEachIndex(shape, func(k int, o []int) {
		var sf, mag float64
		var si int64
		n := 0
		if isMax {
			sf, si = math.Inf(-1), math.MinInt64
		}
		forEachIndex(p.Window, func(_ int, t []int) {
			xi := 0
			for j := range r {
				v := o[j]*p.Strides[j] + t[j] - p.PadLo[j]
				if v < 0 || v >= x.shape[j] {
					return
				}
				xi += v * xst[j]
			}
			n++
			if x.dt == backend.Int64 {
				if isMax {
					si = max(si, x.i[xi])
				} else {
					si += x.i[xi]
				}
				return
			}
			if isMax {
				sf = maxF(sf, x.f[xi])
			} else {
				sf += x.f[xi]
				mag += math.Abs(x.f[xi])
			}
		})
		if x.dt == backend.Int64 {
			out.i[k] = si
			return
		}
		out.f[k] = fround(x.dt, sf)
		if allow != nil {
			allow[k] = sumBound(x.dt, n, mag, out.f[k])
		}
	})
	return out, allow
}

func runReduceWindow(p *interp.Prim, isMax bool, v values) func(*suite) {
	return func(s *suite) {
		one := prims.WindowParams{Window: []int{1}}
		dts := accepted(p, one, sameAvals(1, []int{2}))
		for _, dt := range allDTypes {
			if !slices.Contains(dts, dt) {
				s.expectError(describe(p.Name, dt, []int{2}, "(a dtype the rule rejects)"), func() {
					interp.Bind1(p, one, s.operand(dt, []int{2}, contiguous, finiteValues).t)
				})
				continue
			}
			for _, c := range windowCases() {
				shape := prims.WindowShape(c.p, c.shape)
				for _, l := range layoutsFor(c.shape) {
					x := s.operand(dt, c.shape, l, v)
					desc := describe(p.Name, dt, c.shape, c.name, c.p, "x="+l.String())
					s.try(desc, func() {
						want, allow := refReduceWindow(x.a, c.p, isMax, shape)
						s.expect(check{desc: desc, allow: allow}, interp.Bind1(p, c.p, x.t), want)
					})
				}
			}
		}
		f := s.operand(backend.Float64, []int{2, 3}, contiguous, finiteValues).t
		bad := func(desc string, params prims.WindowParams) {
			s.expectError(desc, func() { interp.Bind1(p, params, f) })
		}
		bad(p.Name+" with a window of rank 1 for rank 2", prims.WindowParams{Window: []int{2}})
		bad(p.Name+" with window 0", prims.WindowParams{Window: []int{0, 1}})
		bad(p.Name+" with stride 0", prims.WindowParams{Window: []int{1, 1}, Strides: []int{1, 0}})
		bad(p.Name+" with 3 paddings", prims.WindowParams{Window: []int{1, 1}, PadLo: []int{0, 0, 0}})
		bad(p.Name+" with padding removing everything", prims.WindowParams{Window: []int{1, 1}, PadLo: []int{-2, 0}, PadHi: []int{-1, 0}})
		bad(p.Name+" with a huge padding", prims.WindowParams{Window: []int{1, 1}, PadLo: []int{math.MaxInt, 0}, PadHi: []int{1, 0}})
	}
}
