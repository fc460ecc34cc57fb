package backendtest

import (
	"fmt"
	"math"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// moveShapes are the operand shapes of the data-movement primitives.
var moveShapes = [][]int{{}, {0}, {1}, {5}, {3, 4}, {4, 1}, {2, 0, 3}, {2, 3, 4}, {2, 1, 3, 2}}

// cycle returns the i-th layout (cyclically) among those that fit shape.
func cycle(shape []int, i int) layout {
	ls := layoutsFor(shape)
	return ls[i%len(ls)]
}

func runPad(s *suite) {
	p := prims.Pad
	type lhi struct{ lo, hi, in int }
	pats := []lhi{{0, 0, 0}, {1, 2, 0}, {0, 0, 1}, {2, 1, 2}, {-1, 0, 0}, {0, -2, 1}, {-1, -1, 1}, {-3, 4, 0}}
	for _, dt := range accepted(p, prims.PadParams{Low: []int{0}, High: []int{0}, Interior: []int{0}}, func(dt backend.DType) []interp.Aval {
		return []interp.Aval{{Shape: []int{2}, DType: dt}, {Shape: []int{}, DType: dt}}
	}) {
		for _, shape := range moveShapes {
			for j := range pats {
				r := len(shape)
				pp := prims.PadParams{Low: make([]int, r), High: make([]int, r), Interior: make([]int, r)}
				valid := true
				for k, d := range shape {
					q := pats[(j+k)%len(pats)]
					pp.Low[k], pp.High[k], pp.Interior[k] = q.lo, q.hi, q.in
					n := q.lo + q.hi
					if d > 0 {
						n += d + (d-1)*q.in
					}
					valid = valid && n >= 0
				}
				for _, l := range layoutsFor(shape) {
					x := s.operand(dt, shape, l, copyValues)
					v := s.operand(dt, nil, contiguous, copyValues)
					desc := describe(p.Name, dt, shape, pp, "x="+l.String())
					if !valid {
						s.expectError(desc+" (removes more than the dimension holds)", func() { interp.Bind1(p, pp, x.t, v.t) })
						continue
					}
					s.try(desc, func() {
						shape, m := padMap(shape, pp)
						s.expect(check{desc: desc, signedZero: true}, interp.Bind1(p, pp, x.t, v.t), x.a.take(shape, m, v.a))
					})
					if r == 0 {
						break
					}
				}
				if r == 0 {
					break
				}
			}
		}
	}
	x := s.operand(backend.Float64, []int{3}, contiguous, finiteValues).t
	v := s.operand(backend.Float64, nil, contiguous, finiteValues).t
	s.expectError("pad with interior −1", func() {
		interp.Bind1(p, prims.PadParams{Low: []int{0}, High: []int{0}, Interior: []int{-1}}, x, v)
	})
	s.expectError("pad with a [1] padding value", func() {
		interp.Bind1(p, prims.PadParams{Low: []int{0}, High: []int{0}, Interior: []int{0}}, x, x)
	})
	s.expectError("pad with an f32 padding value", func() {
		interp.Bind1(p, prims.PadParams{Low: []int{0}, High: []int{0}, Interior: []int{0}}, x, s.operand(backend.Float32, nil, contiguous, finiteValues).t)
	})
	s.expectError("pad with params of the wrong rank", func() {
		interp.Bind1(p, prims.PadParams{Low: []int{0, 0}, High: []int{0}, Interior: []int{0}}, x, v)
	})
}

func runConcatenate(s *suite) {
	p := prims.Concatenate
	for _, dt := range allDTypes {
		for _, shape := range moveShapes {
			for axis := range shape {
				for _, sizes := range [][]int{{shape[axis]}, {2, 3}, {0, 4}, {1, 0, 2}, {3, 1, 1, 2}} {
					var xs []array
					var ts []*interp.Tensor
					var ls []string
					for i, n := range sizes {
						sh := slices.Clone(shape)
						sh[axis] = n
						x := s.operand(dt, sh, cycle(sh, i+axis), copyValues)
						xs, ts, ls = append(xs, x.a), append(ts, x.t), append(ls, x.l.String())
					}
					desc := describe(p.Name, dt, shape, fmt.Sprintf("axis=%d sizes=%v layouts=%v", axis, sizes, ls))
					s.try(desc, func() {
						s.expect(check{desc: desc, signedZero: true}, interp.Bind1(p, prims.AxisParams{Axis: axis}, ts...), refConcat(xs, axis))
					})
				}
			}
		}
	}
	f := func(dt backend.DType, shape ...int) *interp.Tensor {
		return s.operand(dt, shape, contiguous, finiteValues).t
	}
	s.expectError("concatenate of [2,3] and [3,3] along axis 1", func() {
		interp.Bind1(p, prims.AxisParams{Axis: 1}, f(backend.Float64, 2, 3), f(backend.Float64, 3, 3))
	})
	s.expectError("concatenate of f64 and f32", func() {
		interp.Bind1(p, prims.AxisParams{Axis: 0}, f(backend.Float64, 2), f(backend.Float32, 2))
	})
	s.expectError("concatenate of ranks 1 and 2", func() {
		interp.Bind1(p, prims.AxisParams{Axis: 0}, f(backend.Float64, 2), f(backend.Float64, 2, 1))
	})
	s.expectError("concatenate of nothing", func() { interp.Bind1(p, prims.AxisParams{Axis: 0}) })
	s.expectError("concatenate along axis 1 of rank 1", func() {
		interp.Bind1(p, prims.AxisParams{Axis: 1}, f(backend.Float64, 2), f(backend.Float64, 2))
	})
}

func runRev(s *suite) {
	p := prims.Rev
	for _, dt := range allDTypes {
		for _, shape := range moveShapes {
			r := len(shape)
			axesList := [][]int{{}}
			if r > 0 {
				axesList = append(axesList, []int{0}, []int{r - 1}, seq(r))
			}
			if r > 2 {
				axesList = append(axesList, []int{r - 1, 0})
			}
			for _, axes := range axesList {
				for _, l := range layoutsFor(shape) {
					x := s.operand(dt, shape, l, copyValues)
					desc := describe(p.Name, dt, shape, fmt.Sprintf("axes=%v", axes), "x="+l.String())
					s.try(desc, func() {
						got := interp.Bind1(p, prims.RevParams{Axes: axes}, x.t)
						s.expect(check{desc: desc, signedZero: true}, got, x.a.take(shape, revMap(shape, axes), array{}))
					})
				}
			}
		}
	}
	x := s.operand(backend.Float64, []int{2, 3}, contiguous, finiteValues).t
	for _, axes := range [][]int{{2}, {0, 0}, {-1}} {
		s.expectError(fmt.Sprintf("rev of [2,3] over axes %v", axes), func() { interp.Bind1(p, prims.RevParams{Axes: axes}, x) })
	}
}

// runIota calls the kernel through Backend.Exec: iota has no operands, so
// Bind would run it on the default backend rather than on the one tested.
func runIota(s *suite) {
	p := prims.Iota
	for _, dt := range allDTypes {
		if interp.Catch(func() { p.Abstract(prims.IotaParams{DType: dt, Shape: []int{3}, Dim: 0}, nil) }) != nil {
			s.expectError(fmt.Sprintf("iota of dtype %v", dt), func() {
				interp.Bind1(p, prims.IotaParams{DType: dt, Shape: []int{3}, Dim: 0})
			})
			continue
		}
		for _, shape := range [][]int{{5}, {0}, {1}, {3, 4}, {2, 0, 3}, {2, 3, 4}, {2, 1, 3, 2}, bigShape} {
			for dim := range shape {
				params := prims.IotaParams{DType: dt, Shape: shape, Dim: dim}
				desc := describe(p.Name, dt, shape, fmt.Sprintf("dim=%d", dim))
				want := refIota(dt, shape, dim)
				s.try(desc, func() {
					out := []backend.Array{{Buf: s.b.Alloc(dt, backend.ShapeSize(shape)), Shape: slices.Clone(shape)}}
					s.b.Exec(p.Op, params, nil, out)
					got, ok := hostArray(dt, shape, s.b.ToHost(out[0]))
					if !ok {
						s.failf("%s: ToHost returned the wrong type", desc)
						return
					}
					s.expectArray(check{desc: desc}, got, want)
				})
				if interp.DefaultBackend() == s.b {
					s.try(desc+" (through Bind)", func() {
						s.expect(check{desc: desc + " (through Bind)"}, interp.Bind1(p, params), want)
					})
				}
			}
		}
	}
	s.expectError("iota of rank 0", func() { interp.Bind1(p, prims.IotaParams{DType: backend.Int64, Shape: []int{}, Dim: 0}) })
	s.expectError("iota along dim 2 of [2,3]", func() { interp.Bind1(p, prims.IotaParams{DType: backend.Int64, Shape: []int{2, 3}, Dim: 2}) })
	s.expectError("iota of shape [-1]", func() { interp.Bind1(p, prims.IotaParams{DType: backend.Int64, Shape: []int{-1}, Dim: 0}) })
}

// Index operands: in range, with duplicates, and far out of range.

func indexValues(n int) values {
	return values{ilo: 0, ihi: int64(max(n-1, 0)), ispecial: []int64{-1, int64(n), -100, 100, math.MinInt64, math.MaxInt64, 0, int64(n - 1)}}
}

// gatherShapes pairs operand shapes with the index shapes gathered by.
var (
	gatherShapes = [][]int{{5}, {3, 4}, {4, 1}, {2, 3, 4}, {2, 0, 3}, {3, 0}}
	indexShapes  = [][]int{{}, {3}, {2, 2}, {0}, {7}}
)

func runGather(s *suite) {
	p := prims.Gather
	for _, dt := range allDTypes {
		i := 0
		for _, shape := range gatherShapes {
			for axis := range shape {
				for _, ishape := range indexShapes {
					i++
					x := s.operand(dt, shape, cycle(shape, i), copyValues)
					idx := s.operand(backend.Int64, ishape, cycle(ishape, i/2), indexValues(shape[axis]))
					desc := describe(p.Name, dt, shape, fmt.Sprintf("axis=%d indices=%v", axis, idx.a), "x="+x.l.String(), "idx="+idx.l.String())
					params := prims.AxisParams{Axis: axis}
					if shape[axis] == 0 && idx.a.size() > 0 {
						// No element to gather: any result or an *interp.Error will do.
						s.robust(desc+" (from an empty axis)", func() { interp.Bind1(p, params, x.t, idx.t) })
						continue
					}
					s.try(desc, func() {
						s.expect(check{desc: desc, signedZero: true}, interp.Bind1(p, params, x.t, idx.t), refGather(x.a, idx.a, axis))
					})
				}
			}
		}
		x := s.operand(dt, []int{300, 40}, contiguous, copyValues)
		idx := s.operand(backend.Int64, []int{500}, contiguous, indexValues(300))
		desc := describe(p.Name, dt, x.a.shape, "axis=0, 500 indices")
		s.try(desc, func() {
			s.expect(check{desc: desc, signedZero: true}, interp.Bind1(p, prims.AxisParams{Axis: 0}, x.t, idx.t), refGather(x.a, idx.a, 0))
		})
	}
	x := s.operand(backend.Float64, []int{3, 4}, contiguous, finiteValues).t
	s.expectError("gather with f64 indices", func() {
		interp.Bind1(p, prims.AxisParams{Axis: 0}, x, s.operand(backend.Float64, []int{2}, contiguous, finiteValues).t)
	})
	s.expectError("gather along axis 2 of [3,4]", func() {
		interp.Bind1(p, prims.AxisParams{Axis: 2}, x, s.operand(backend.Int64, []int{2}, contiguous, finiteValues).t)
	})
}

func runScatter(p *interp.Prim, add bool) func(*suite) {
	return func(s *suite) {
		dts := accepted(p, prims.AxisParams{Axis: 0}, func(dt backend.DType) []interp.Aval {
			return []interp.Aval{{Shape: []int{2}, DType: dt}, {Shape: []int{3}, DType: backend.Int64}, {Shape: []int{3}, DType: dt}}
		})
		v := copyValues
		if add {
			v = sumValues
		}
		for _, dt := range allDTypes {
			if !slices.Contains(dts, dt) {
				s.expectError(describe(p.Name, dt, []int{2}, "(a dtype the rule rejects)"), func() {
					interp.Bind1(p, prims.AxisParams{Axis: 0}, s.operand(dt, []int{2}, contiguous, v).t,
						s.operand(backend.Int64, []int{1}, contiguous, indexValues(2)).t, s.operand(dt, []int{1}, contiguous, v).t)
				})
				continue
			}
			i := 0
			for _, shape := range gatherShapes {
				for axis := range shape {
					for _, ishape := range indexShapes {
						i++
						ushape := prims.GatherShape(shape, ishape, axis)
						x := s.operand(dt, shape, cycle(shape, i), v)
						idx := s.operand(backend.Int64, ishape, cycle(ishape, i/2), indexValues(shape[axis]))
						upd := s.operand(dt, ushape, cycle(ushape, i/3), v)
						desc := describe(p.Name, dt, shape, fmt.Sprintf("axis=%d indices=%v", axis, idx.a),
							"x="+x.l.String(), "idx="+idx.l.String(), "updates="+upd.l.String())
						s.try(desc, func() {
							want, allow := refScatter(x.a, idx.a, upd.a, axis, add)
							s.expect(check{desc: desc, allow: allow, signedZero: !add}, interp.Bind1(p, prims.AxisParams{Axis: axis}, x.t, idx.t, upd.t), want)
						})
					}
				}
			}
			x := s.operand(dt, []int{300, 40}, contiguous, v.finite())
			idx := s.operand(backend.Int64, []int{500}, contiguous, indexValues(300))
			upd := s.operand(dt, []int{500, 40}, contiguous, v.finite())
			desc := describe(p.Name, dt, x.a.shape, "axis=0, 500 indices")
			s.try(desc, func() {
				want, allow := refScatter(x.a, idx.a, upd.a, 0, add)
				s.expect(check{desc: desc, allow: allow, signedZero: !add}, interp.Bind1(p, prims.AxisParams{Axis: 0}, x.t, idx.t, upd.t), want)
			})
		}
		f := func(dt backend.DType, shape ...int) *interp.Tensor {
			return s.operand(dt, shape, contiguous, finiteValues).t
		}
		s.expectError(p.Name+" with updates of the wrong shape", func() {
			interp.Bind1(p, prims.AxisParams{Axis: 0}, f(dts[0], 3, 4), f(backend.Int64, 2), f(dts[0], 2, 3))
		})
		s.expectError(p.Name+" with f64 indices", func() {
			interp.Bind1(p, prims.AxisParams{Axis: 0}, f(dts[0], 3), f(backend.Float64, 2), f(dts[0], 2))
		})
		s.expectError(p.Name+" with updates of another dtype", func() {
			other := backend.Float32
			if dts[0] == other {
				other = backend.Float64
			}
			interp.Bind1(p, prims.AxisParams{Axis: 0}, f(dts[0], 3), f(backend.Int64, 2), f(other, 2))
		})
	}
}

// startValues are dynamic slice starts: in range and far outside it.
var startValues = values{ilo: -2, ihi: 5, ispecial: []int64{-100, 100, math.MinInt64, math.MaxInt64, math.MaxInt64 - 1}}

// blockSizes returns the block sizes a dynamic slice of shape takes.
func blockSizes(shape []int) [][]int {
	out := [][]int{slices.Clone(shape)}
	half, one, zero := make([]int, len(shape)), make([]int, len(shape)), make([]int, len(shape))
	for k, d := range shape {
		half[k], one[k] = d/2, min(d, 1)
		zero[k] = d
		if k == 0 {
			zero[k] = 0
		}
	}
	if len(shape) > 0 {
		out = append(out, half, one, zero)
	}
	return out
}

func (s *suite) starts(n int) ([]*interp.Tensor, []int64) {
	ts := make([]*interp.Tensor, n)
	vs := make([]int64, n)
	for k := range ts {
		a := s.draw(backend.Int64, nil, startValues)
		ts[k], vs[k] = s.tensor(a), a.i[0]
	}
	return ts, vs
}

func runDynamicSlice(s *suite) {
	p := prims.DynamicSlice
	for _, dt := range allDTypes {
		for _, shape := range moveShapes {
			for _, sizes := range blockSizes(shape) {
				for _, l := range layoutsFor(shape) {
					for range 2 {
						x := s.operand(dt, shape, l, copyValues)
						st, sv := s.starts(len(shape))
						desc := describe(p.Name, dt, shape, fmt.Sprintf("sizes=%v starts=%v", sizes, sv), "x="+l.String())
						s.try(desc, func() {
							got := interp.Bind1(p, prims.DynamicSliceParams{Sizes: sizes}, append([]*interp.Tensor{x.t}, st...)...)
							s.expect(check{desc: desc, signedZero: true}, got, refDynamicSlice(x.a, sv, sizes))
						})
					}
				}
			}
		}
	}
	x := s.operand(backend.Float64, []int{3, 4}, contiguous, finiteValues).t
	i0 := s.tensor(array{dt: backend.Int64, shape: []int{}, i: []int64{0}})
	s.expectError("dynamic_slice of [3,4] with sizes [4,1]", func() {
		interp.Bind1(p, prims.DynamicSliceParams{Sizes: []int{4, 1}}, x, i0, i0)
	})
	s.expectError("dynamic_slice of [3,4] with one start", func() {
		interp.Bind1(p, prims.DynamicSliceParams{Sizes: []int{1, 1}}, x, i0)
	})
	s.expectError("dynamic_slice of [3,4] with a [1] start", func() {
		interp.Bind1(p, prims.DynamicSliceParams{Sizes: []int{1, 1}}, x, i0, s.operand(backend.Int64, []int{1}, contiguous, finiteValues).t)
	})
	s.expectError("dynamic_slice of [3,4] with an f64 start", func() {
		interp.Bind1(p, prims.DynamicSliceParams{Sizes: []int{1, 1}}, x, i0, s.operand(backend.Float64, nil, contiguous, finiteValues).t)
	})
}

func runDynamicUpdateSlice(s *suite) {
	p := prims.DynamicUpdateSlice
	for _, dt := range allDTypes {
		i := 0
		for _, shape := range moveShapes {
			for _, sizes := range blockSizes(shape) {
				for _, l := range layoutsFor(shape) {
					for range 2 {
						i++
						x := s.operand(dt, shape, l, copyValues)
						u := s.operand(dt, sizes, cycle(sizes, i), copyValues)
						st, sv := s.starts(len(shape))
						desc := describe(p.Name, dt, shape, fmt.Sprintf("update=%v starts=%v", fmtShape(sizes), sv), "x="+l.String(), "update="+u.l.String())
						s.try(desc, func() {
							got := interp.Bind1(p, nil, append([]*interp.Tensor{x.t, u.t}, st...)...)
							s.expect(check{desc: desc, signedZero: true}, got, refDynamicUpdateSlice(x.a, u.a, sv))
						})
					}
				}
			}
		}
	}
	f := func(dt backend.DType, shape ...int) *interp.Tensor {
		return s.operand(dt, shape, contiguous, finiteValues).t
	}
	i0 := s.tensor(array{dt: backend.Int64, shape: []int{}, i: []int64{0}})
	s.expectError("dynamic_update_slice of [3,4] with a [4,1] update", func() {
		interp.Bind1(p, nil, f(backend.Float64, 3, 4), f(backend.Float64, 4, 1), i0, i0)
	})
	s.expectError("dynamic_update_slice of [3,4] with a [2] update", func() {
		interp.Bind1(p, nil, f(backend.Float64, 3, 4), f(backend.Float64, 2), i0, i0)
	})
	s.expectError("dynamic_update_slice of f64 with an f32 update", func() {
		interp.Bind1(p, nil, f(backend.Float64, 3, 4), f(backend.Float32, 1, 1), i0, i0)
	})
	s.expectError("dynamic_update_slice of [3,4] with one start", func() {
		interp.Bind1(p, nil, f(backend.Float64, 3, 4), f(backend.Float64, 1, 1), i0)
	})
}

// dotCase is one dot_general configuration.
type dotCase struct {
	name   string
	a, b   []int
	params prims.DotParams
}

func dotCases() []dotCase {
	mm := func(m, k, n int) dotCase {
		return dotCase{fmt.Sprintf("matmul %dx%dx%d", m, k, n), []int{m, k}, []int{k, n}, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}}
	}
	cs := []dotCase{
		mm(2, 3, 4), mm(1, 1, 1), mm(5, 1, 3), mm(1, 7, 1), mm(3, 0, 4), mm(0, 3, 4), mm(3, 4, 0), mm(17, 9, 13), mm(33, 31, 29), mm(64, 64, 64),
		{"matvec", []int{4, 3}, []int{3}, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}},
		{"vecmat", []int{3}, []int{3, 5}, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}}},
		{"inner product", []int{6}, []int{6}, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}}},
		{"empty inner product", []int{0}, []int{0}, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}}},
		{"outer product", []int{3}, []int{4}, prims.DotParams{}},
		{"scalar times matrix", []int{}, []int{2, 3}, prims.DotParams{}},
		{"scalars", []int{}, []int{}, prims.DotParams{}},
		{"lhs transposed", []int{3, 2}, []int{3, 4}, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}}},
		{"rhs transposed", []int{2, 3}, []int{4, 3}, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{1}}},
		{"both transposed", []int{3, 2}, []int{4, 3}, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{1}}},
		{"batched", []int{3, 2, 4}, []int{3, 4, 5}, prims.DotParams{LhsContract: []int{2}, RhsContract: []int{1}, LhsBatch: []int{0}, RhsBatch: []int{0}}},
		{"batch in the middle", []int{2, 3, 4}, []int{4, 3, 5}, prims.DotParams{LhsContract: []int{2}, RhsContract: []int{0}, LhsBatch: []int{1}, RhsBatch: []int{1}}},
		{"batch last", []int{2, 4, 3}, []int{5, 4, 3}, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{1}, LhsBatch: []int{2}, RhsBatch: []int{2}}},
		{"two batch dims", []int{2, 3, 2, 4}, []int{3, 2, 4, 2}, prims.DotParams{LhsContract: []int{3}, RhsContract: []int{2}, LhsBatch: []int{0, 1}, RhsBatch: []int{1, 0}}},
		{"empty batch", []int{0, 2, 3}, []int{0, 3, 4}, prims.DotParams{LhsContract: []int{2}, RhsContract: []int{1}, LhsBatch: []int{0}, RhsBatch: []int{0}}},
		{"two contracting dims", []int{2, 3, 4}, []int{4, 3, 5}, prims.DotParams{LhsContract: []int{1, 2}, RhsContract: []int{1, 0}}},
		{"batch only", []int{3, 4}, []int{3, 4}, prims.DotParams{LhsBatch: []int{0, 1}, RhsBatch: []int{0, 1}}},
		{"batch and outer", []int{3, 2}, []int{3, 4}, prims.DotParams{LhsBatch: []int{0}, RhsBatch: []int{0}}},
		{"rank 4 by rank 3", []int{2, 1, 3, 4}, []int{4, 2, 5}, prims.DotParams{LhsContract: []int{3}, RhsContract: []int{0}, LhsBatch: []int{0}, RhsBatch: []int{1}}},
	}
	return cs
}

// dotValues are finite: 0·∞ in a product is left to the backend (BLAS
// implementations skip zero terms).
var dotValues = values{lo: -2, hi: 2, special: func(backend.DType) []float64 { return []float64{0, negZero, 1, -1, 0.5} }, ilo: -5, ihi: 5, ispecial: []int64{math.MaxInt64, math.MinInt64}}

func runDot(s *suite) {
	p := prims.DotGeneral
	dts := accepted(p, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}}, sameAvals(2, []int{2}))
	for _, dt := range allDTypes {
		if !slices.Contains(dts, dt) {
			s.expectError(describe(p.Name, dt, []int{2}, "(a dtype the rule rejects)"), func() {
				x := s.operand(dt, []int{2}, contiguous, defaultValues).t
				interp.Bind1(p, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}}, x, x)
			})
			continue
		}
		for _, c := range dotCases() {
			pairs := [][2]layout{{contiguous, contiguous}}
			for _, l := range layouts[1:] {
				la, lb := l, l
				if !la.fits(c.a) {
					la = contiguous
				}
				if !lb.fits(c.b) {
					lb = contiguous
				}
				if la != contiguous || lb != contiguous {
					pairs = append(pairs, [2]layout{la, contiguous}, [2]layout{contiguous, lb})
				}
			}
			if len(c.a) > 0 && c.a[0] > 16 {
				pairs = pairs[:1]
				if transposed.fits(c.a) {
					pairs = append(pairs, [2]layout{transposed, contiguous}, [2]layout{contiguous, transposed})
				}
			}
			for _, pr := range pairs {
				a, b := s.operand(dt, c.a, pr[0], dotValues), s.operand(dt, c.b, pr[1], dotValues)
				desc := describe(p.Name, dt, c.a, c.name, fmtShape(c.b), c.params, "a="+pr[0].String(), "b="+pr[1].String())
				s.try(desc, func() {
					want, allow := refDot(a.a, b.a, c.params)
					s.expect(check{desc: desc, allow: allow}, interp.Bind1(p, c.params, a.t, b.t), want)
				})
			}
		}
		if dt.IsFloat() {
			// NaN and ±Inf propagate through nonzero finite factors.
			a := newArray(dt, []int{3, 2})
			copy(a.f, []float64{nan, 1, inf, 1, -inf, inf})
			b := newArray(dt, []int{2, 2})
			copy(b.f, []float64{1, 2, 3, -4})
			params := prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}
			desc := describe(p.Name, dt, a.shape, "with NaN and ±Inf")
			s.try(desc, func() {
				want, allow := refDot(a, b, params)
				s.expect(check{desc: desc, allow: allow}, interp.Bind1(p, params, s.tensor(a), s.tensor(b)), want)
			})
		}
	}
	f := func(dt backend.DType, shape ...int) *interp.Tensor {
		return s.operand(dt, shape, contiguous, finiteValues).t
	}
	mm := prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}}
	s.expectError("dot_general of [2,3] and [4,5]", func() { interp.Bind1(p, mm, f(backend.Float64, 2, 3), f(backend.Float64, 4, 5)) })
	s.expectError("dot_general of f64 and f32", func() { interp.Bind1(p, mm, f(backend.Float64, 2, 3), f(backend.Float32, 3, 5)) })
	s.expectError("dot_general with a dimension used twice", func() {
		interp.Bind1(p, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{0}, LhsBatch: []int{0}, RhsBatch: []int{1}}, f(backend.Float64, 3, 3), f(backend.Float64, 3, 3))
	})
	s.expectError("dot_general with unpaired contracting dimensions", func() {
		interp.Bind1(p, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{}}, f(backend.Float64, 2, 3), f(backend.Float64, 3, 5))
	})
	s.expectError("dot_general with batch sizes 2 and 3", func() {
		interp.Bind1(p, prims.DotParams{LhsBatch: []int{0}, RhsBatch: []int{0}}, f(backend.Float64, 2), f(backend.Float64, 3))
	})
	s.expectError("dot_general with an axis out of range", func() {
		interp.Bind1(p, prims.DotParams{LhsContract: []int{2}, RhsContract: []int{0}}, f(backend.Float64, 2, 3), f(backend.Float64, 3, 5))
	})
}
