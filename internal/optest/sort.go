package optest

import (
	"fmt"
	"math"
	"sort"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/backend"
)

// Sorting, selection, scans and the NaN-aware reductions. References are
// direct loops over lanes in float64: a stable sort of positions with
// numpy's order (NaN last), running products, extrema and log-sum-exps.

// nanOrderLess is numpy's sort order: ascending, NaN after every number.
func nanOrderLess(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return !math.IsNaN(a) && math.IsNaN(b)
	}
	return a < b
}

// stableOrder returns the positions of v in stable sorted order
// (descending: the reverse comparison, ties still in original order).
func stableOrder(v []float64, desc bool) []int {
	p := make([]int, len(v))
	for i := range p {
		p[i] = i
	}
	sort.SliceStable(p, func(i, j int) bool {
		if desc {
			return nanOrderLess(v[p[j]], v[p[i]])
		}
		return nanOrderLess(v[p[i]], v[p[j]])
	})
	return p
}

// laneValues returns h's elements at the positions of lane.
func laneValues(h Host, lane []int) []float64 {
	v := make([]float64, len(lane))
	for j, i := range lane {
		v[j] = h.Data[i]
	}
	return v
}

// sortRef sorts h along axis (indices: the argsort, as i64).
func sortRef(h Host, axis int, desc, indices bool) Host {
	out := Host{Shape: h.Shape, DType: h.DType, Data: make([]float64, len(h.Data))}
	if indices {
		out.DType = peel.Int64
	}
	lanes(h.Shape, axis, func(lane []int) {
		v := laneValues(h, lane)
		for j, p := range stableOrder(v, desc) {
			if indices {
				out.Data[lane[j]] = float64(p)
			} else {
				out.Data[lane[j]] = v[p]
			}
		}
	})
	return out
}

// selectRef keeps positions [lo, hi) of h's sorted lanes along axis
// (removing the axis when drop is set).
func sortSelectRef(h Host, axis int, desc, indices bool, lo, hi int, drop bool) Host {
	s := sortRef(h, axis, desc, indices)
	if axis < 0 {
		axis += len(h.Shape)
	}
	shape := append([]int{}, h.Shape...)
	shape[axis] = hi - lo
	if drop {
		shape = append(shape[:axis], shape[axis+1:]...)
	}
	return remap(s, shape, 0, func(out []int) []int {
		idx := append([]int{}, out...)
		if drop {
			idx = append(idx[:axis], append([]int{lo}, idx[axis:]...)...)
		} else {
			idx[axis] += lo
		}
		return idx
	})
}

// quantileOf is numpy's linear quantile of v (NaN if v is empty or holds
// a NaN).
func quantileOf(v []float64, q float64) float64 {
	if len(v) == 0 || math.IsNaN(q) || q < 0 || q > 1 {
		return math.NaN()
	}
	s := append([]float64{}, v...)
	for _, x := range s {
		if math.IsNaN(x) {
			return math.NaN()
		}
	}
	sort.Float64s(s)
	h := q * float64(len(s)-1)
	lo := int(math.Floor(h))
	hi := min(lo+1, len(s)-1)
	a, b := s[lo], s[hi]
	if a == b {
		return a
	}
	return a + (h-float64(lo))*(b-a)
}

// medianOf is numpy's median: the middle element or the mean of the two.
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64{}, v...)
	for _, x := range s {
		if math.IsNaN(x) {
			return math.NaN()
		}
	}
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// scanLaneRef applies f as a running combination along axis (from the
// end with rev), starting each lane with its first element.
func scanLaneRef(h Host, axis int, rev bool, d peel.DType, f func(acc, x float64) float64) Host {
	out := Host{Shape: h.Shape, DType: d, Data: make([]float64, len(h.Data))}
	lanes(h.Shape, axis, func(lane []int) {
		if rev {
			for i, j := 0, len(lane)-1; i < j; i, j = i+1, j-1 {
				lane[i], lane[j] = lane[j], lane[i]
			}
		}
		var acc float64
		for k, i := range lane {
			if k == 0 {
				acc = h.Data[i]
			} else {
				acc = f(acc, h.Data[i])
			}
			out.Data[i] = Round(d, acc)
		}
	})
	return out
}

func nanMax(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Max(a, b)
}

func nanMin(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Min(a, b)
}

// withEdges appends, for each float dtype, a 1-d sample of edge values.
func withEdges(base func() []Sample, dtypes []peel.DType) func() []Sample {
	return func() []Sample {
		out := base()
		for _, d := range dtypes {
			if d.IsFloat() {
				h := Host{Shape: []int{len(FloatEdges)}, DType: d, Data: FloatEdges}
				out = append(out, Sample{Name: fmt.Sprintf("%v/edges", d), Args: []*T{h.Tensor()}})
			}
		}
		return out
	}
}

// fixedSample is a sample of the given values.
func fixedSample(name string, d peel.DType, data []float64, shape ...int) Sample {
	return Sample{Name: name, Args: []*T{Host{Shape: shape, DType: d, Data: data}.Tensor()}}
}

func sortOps() []Op {
	var ops []Op
	sortDTypes := []peel.DType{peel.Bool, peel.Int64, peel.Float32, peel.Float64}
	for _, axis := range []int{0, -1} {
		for _, desc := range []bool{false, true} {
			var opts []peel.SortOption
			suffix := ""
			if desc {
				opts, suffix = []peel.SortOption{peel.Descending()}, ",descending"
			}
			ops = append(ops, Op{
				Name:           fmt.Sprintf("peel.Sort/axis=%d%s", axis, suffix),
				F:              func(a []*T) *T { return peel.Sort(a[0], axis, opts...) },
				Samples:        withEdges(reduceSamples(sortDTypes, [][]int{{2, 3, 4}, {5}, {3, 0}, {1}}), floats),
				Ref:            func(a []Host) Host { return sortRef(a[0], axis, desc, false) },
				Tol:            -1,
				Differentiable: true,
			}, Op{
				Name:    fmt.Sprintf("peel.Argsort/axis=%d%s", axis, suffix),
				F:       func(a []*T) *T { return peel.Argsort(a[0], axis, opts...) },
				Samples: withEdges(reduceSamples(sortDTypes, [][]int{{2, 3, 4}, {5}, {3, 0}}), floats),
				Ref:     func(a []Host) Host { return sortRef(a[0], axis, desc, true) },
			})
		}
		ops = append(ops, Op{
			Name:           fmt.Sprintf("peel.Kthvalue/values,k=2,axis=%d", axis),
			F:              func(a []*T) *T { v, _ := peel.Kthvalue(a[0], 2, axis); return v },
			Samples:        withEdges(reduceSamples(numerics, [][]int{{2, 3, 4}, {5}, {3, 2}}), floats),
			Ref:            func(a []Host) Host { return sortSelectRef(a[0], axis, false, false, 1, 2, true) },
			Tol:            -1,
			Differentiable: true,
		}, Op{
			Name:    fmt.Sprintf("peel.Kthvalue/indices,k=2,axis=%d", axis),
			F:       func(a []*T) *T { _, i := peel.Kthvalue(a[0], 2, axis); return i },
			Samples: withEdges(reduceSamples(numerics, [][]int{{2, 3, 4}, {5}, {3, 2}}), floats),
			Ref:     func(a []Host) Host { return sortSelectRef(a[0], axis, false, true, 1, 2, true) },
		})
	}
	for _, k := range []int{0, 2} {
		ops = append(ops, Op{
			Name:           fmt.Sprintf("peel.TopK/values,k=%d", k),
			F:              func(a []*T) *T { v, _ := peel.TopK(a[0], k); return v },
			Samples:        withEdges(reduceSamples(numerics, [][]int{{2, 3, 4}, {5}, {3, 2}}), floats),
			Ref:            func(a []Host) Host { return sortSelectRef(a[0], -1, true, false, 0, k, false) },
			Tol:            -1,
			Differentiable: true,
		}, Op{
			Name:    fmt.Sprintf("peel.TopK/indices,k=%d", k),
			F:       func(a []*T) *T { _, i := peel.TopK(a[0], k); return i },
			Samples: withEdges(reduceSamples(numerics, [][]int{{2, 3, 4}, {5}, {3, 2}}), floats),
			Ref:     func(a []Host) Host { return sortSelectRef(a[0], -1, true, true, 0, k, false) },
		})
	}
	// Median and scalar quantiles over the reduction axes.
	for _, c := range reduceAxesCases {
		shapes := [][]int{{2, 3, 4}, {3, 1, 2}, {2, 0, 3}}
		if c.axes == nil {
			shapes = append(shapes, []int{})
		}
		keepOr := func(f func(*T, ...int) *T) func(a []*T) *T {
			return func(a []*T) *T {
				if c.keep {
					return peel.Keep(f, a[0], c.axes...)
				}
				return f(a[0], c.axes...)
			}
		}
		ops = append(ops, Op{
			Name:           fmt.Sprintf("peel.Median/axes=%s,keep=%v", axesName(c.axes), c.keep),
			F:              keepOr(peel.Median),
			Samples:        reduceSamples(numerics, shapes),
			Ref:            func(a []Host) Host { return reduceRef(a[0], c.axes, c.keep, floatOf(a[0].DType), medianOf) },
			Tol:            1e-6,
			Differentiable: true,
		})
		for _, q := range []float64{0, 0.3, 1} {
			ops = append(ops, Op{
				Name: fmt.Sprintf("peel.Quantile/q=%v,axes=%s,keep=%v", q, axesName(c.axes), c.keep),
				F: keepOr(func(x *T, axes ...int) *T {
					return peel.Quantile(x, q, axes...)
				}),
				Samples: reduceSamples(numerics, shapes),
				Ref: func(a []Host) Host {
					return reduceRef(a[0], c.axes, c.keep, floatOf(a[0].DType), func(v []float64) float64 { return quantileOf(v, q) })
				},
				Tol:            1e-6,
				Differentiable: true,
			})
		}
	}
	// Quantiles at a tensor of q: the result has q's shape first.
	for _, axes := range [][]int{nil, {-1}, {0, 2}} {
		ops = append(ops, Op{
			Name: fmt.Sprintf("peel.Quantile/q=tensor,axes=%s", axesName(axes)),
			F:    func(a []*T) *T { return peel.Quantile(a[0], a[1], axes...) },
			Samples: func() []Sample {
				g := NewGen(6)
				var out []Sample
				for _, d := range numerics {
					for _, qs := range [][]int{{3}, {2, 2}} {
						qv := []float64{0.1, 0.35, 0.8, 0.55}[:backend.ShapeSize(qs)]
						qd := peel.Float64
						if d == peel.Float32 {
							qd = peel.Float32
						}
						out = append(out, Sample{Name: fmt.Sprintf("%v[2,3,4] q%v", d, qs), Args: []*T{
							g.Tensor(d, -3, 3, 2, 3, 4), Host{Shape: qs, DType: qd, Data: qv}.Tensor(),
						}})
					}
				}
				return out
			},
			Ref: func(a []Host) Host {
				x, q := a[0], a[1]
				d := floatOf(x.DType)
				var out Host
				for k, qv := range q.Data {
					qv = Round(d, qv)
					r := reduceRef(x, axes, false, d, func(v []float64) float64 { return quantileOf(v, qv) })
					if k == 0 {
						out = Host{Shape: append(append([]int{}, q.Shape...), r.Shape...), DType: d}
					}
					out.Data = append(out.Data, r.Data...)
				}
				return out
			},
			Tol:            1e-6,
			Differentiable: true,
		})
	}
	// SearchSorted of values (with ties and NaN) in a sorted vector.
	for _, side := range []peel.Side{peel.SideLeft, peel.SideRight} {
		name := map[peel.Side]string{peel.SideLeft: "left", peel.SideRight: "right"}[side]
		ops = append(ops, Op{
			Name: "peel.SearchSorted/side=" + name,
			F:    func(a []*T) *T { return peel.SearchSorted(a[0], a[1], side) },
			Samples: func() []Sample {
				var out []Sample
				for _, d := range numerics {
					sorted := []float64{-2, -1, -1, 0, 2, 2, 2, 3}
					vals := []float64{-3, -1, 0.5, 2, 3, 4}
					if d.IsFloat() {
						sorted = append(sorted, math.Inf(1), math.NaN())
						vals = append(vals, math.NaN(), math.Inf(1), math.Inf(-1), 2.5)
					} else {
						vals = append(vals, 1, 2, -2, 5)
					}
					out = append(out,
						Sample{Name: fmt.Sprintf("%v", d), Args: []*T{
							Host{Shape: []int{len(sorted)}, DType: d, Data: sorted}.Tensor(),
							Host{Shape: []int{2, 5}, DType: d, Data: vals}.Tensor(),
						}},
						Sample{Name: fmt.Sprintf("%v/empty", d), Args: []*T{
							Host{Shape: []int{0}, DType: d}.Tensor(),
							Host{Shape: []int{3}, DType: d, Data: vals[:3]}.Tensor(),
						}})
				}
				return out
			},
			Ref: func(a []Host) Host {
				s, v := a[0], a[1]
				out := Host{Shape: v.Shape, DType: peel.Int64, Data: make([]float64, len(v.Data))}
				for i, x := range v.Data {
					n := 0
					for _, e := range s.Data {
						if (side == peel.SideLeft && nanOrderLess(e, x)) || (side == peel.SideRight && !nanOrderLess(x, e)) {
							n++
						}
					}
					out.Data[i] = float64(n)
				}
				return out
			},
		})
	}
	// Unique with a static size, padded or truncated.
	for _, size := range []int{0, 3, 8} {
		ops = append(ops, Op{
			Name: fmt.Sprintf("peel.Unique/size=%d,fill=-7", size),
			F:    func(a []*T) *T { return peel.Unique(a[0], size, -7) },
			Samples: func() []Sample {
				g := NewGen(7)
				var out []Sample
				for _, d := range allTypes {
					out = append(out, Sample{Name: fmt.Sprintf("%v[2,5]", d), Args: []*T{g.Tensor(d, -3, 3, 2, 5)}},
						Sample{Name: fmt.Sprintf("%v[0]", d), Args: []*T{g.Tensor(d, -3, 3, 0)}})
					if d.IsFloat() {
						out = append(out, fixedSample(fmt.Sprintf("%v/ties", d), d,
							[]float64{2, math.NaN(), -1, 2, math.Copysign(0, -1), 0, math.NaN(), -1, math.Inf(1)}, 9))
					}
				}
				return out
			},
			Ref: func(a []Host) Host {
				h := a[0]
				out := Host{Shape: []int{size}, DType: h.DType, Data: make([]float64, size)}
				order := stableOrder(h.Data, false)
				var uniq []float64
				for j, p := range order {
					v := h.Data[p]
					if j > 0 {
						prev := h.Data[order[j-1]]
						if prev == v || (math.IsNaN(prev) && math.IsNaN(v)) {
							continue
						}
					}
					uniq = append(uniq, v)
				}
				for i := range out.Data {
					if i < len(uniq) {
						out.Data[i] = uniq[i]
					} else {
						out.Data[i] = Round(h.DType, -7)
					}
				}
				return out
			},
			Tol: -1,
		})
	}
	return ops
}

// sortAreaOps are the entries of this file.
func sortAreaOps() []Op {
	ops := sortOps()
	ops = append(ops, scanOps()...)
	return append(ops, nanReductionOps()...)
}

func scanOps() []Op {
	var ops []Op
	zeros := func(base func() []Sample, dtypes []peel.DType) func() []Sample {
		return func() []Sample {
			out := base()
			for _, d := range dtypes {
				if d.IsFloat() {
					out = append(out, fixedSample(fmt.Sprintf("%v/zeros", d), d, []float64{0.5, 0, 2, -1.5, 0, 3, 1.25}, 7))
				}
			}
			return out
		}
	}
	for _, axis := range []int{0, -1} {
		for _, rev := range []bool{false, true} {
			var opts []peel.ScanOption
			suffix := ""
			if rev {
				opts, suffix = []peel.ScanOption{peel.Reverse()}, ",reverse"
			}
			shapes := [][]int{{2, 3, 4}, {5}, {2, 0}}
			ops = append(ops, Op{
				Name:    fmt.Sprintf("peel.Cumprod/axis=%d%s", axis, suffix),
				F:       func(a []*T) *T { return peel.Cumprod(a[0], axis, opts...) },
				Samples: zeros(reduceSamples(allTypes, shapes), floats),
				Ref: func(a []Host) Host {
					d := a[0].DType
					if d == peel.Bool {
						d = peel.Int64
					}
					return scanLaneRef(a[0], axis, rev, d, func(acc, x float64) float64 { return acc * x })
				},
				Tol:            1e-5,
				Differentiable: true,
			})
			for _, ex := range []struct {
				name string
				f    func(*T, int, ...peel.ScanOption) *T
				comb func(a, b float64) float64
			}{{"peel.Cummax", peel.Cummax, nanMax}, {"peel.Cummin", peel.Cummin, nanMin}} {
				ops = append(ops, Op{
					Name:    fmt.Sprintf("%s/axis=%d%s", ex.name, axis, suffix),
					F:       func(a []*T) *T { return ex.f(a[0], axis, opts...) },
					Samples: withEdges(reduceSamples(allTypes, shapes), floats),
					Ref: func(a []Host) Host {
						return scanLaneRef(a[0], axis, rev, a[0].DType, ex.comb)
					},
					Tol:            -1,
					Differentiable: true,
				})
			}
			ops = append(ops, Op{
				Name:    fmt.Sprintf("peel.LogCumSumExp/axis=%d%s", axis, suffix),
				F:       func(a []*T) *T { return peel.LogCumSumExp(a[0], axis, opts...) },
				Samples: withEdges(reduceSamples(numerics, shapes), floats),
				Ref: func(a []Host) Host {
					return scanLaneRef(a[0], axis, rev, floatOf(a[0].DType), logAddExpRef)
				},
				Tol:            1e-5,
				Differentiable: true,
			})
		}
	}
	return ops
}

func nanReductionOps() []Op {
	type red struct {
		name   string
		f      func(*T, ...int) *T
		ref    func([]float64) float64
		dtypes []peel.DType
		out    func(peel.DType) peel.DType
		diff   bool
		rank0  bool
	}
	corrected := func(ddof int, sqrt bool) func([]float64) float64 {
		return func(v []float64) float64 {
			m := 0.0
			for _, x := range v {
				m += x
			}
			m /= float64(len(v))
			s := 0.0
			for _, x := range v {
				s += (x - m) * (x - m)
			}
			r := s / float64(max(len(v)-ddof, 0))
			if sqrt {
				return math.Sqrt(r)
			}
			return r
		}
	}
	nanSum := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			if !math.IsNaN(x) {
				s += x
			}
		}
		return s
	}
	nanMean := func(v []float64) float64 {
		s, n := 0.0, 0
		for _, x := range v {
			if !math.IsNaN(x) {
				s += x
				n++
			}
		}
		return s / float64(n)
	}
	count := func(v []float64) float64 {
		n := 0
		for _, x := range v {
			if x != 0 {
				n++
			}
		}
		return float64(n)
	}
	boolAsInt := func(d peel.DType) peel.DType {
		if d == peel.Bool {
			return peel.Int64
		}
		return d
	}
	reds := []red{
		{"peel.Ddof(1).Var", peel.Ddof(1).Var, corrected(1, false), numerics, floatOf, true, false},
		{"peel.Ddof(1).Std", peel.Ddof(1).Std, corrected(1, true), numerics, floatOf, true, false},
		{"peel.Ddof(2).Var", peel.Ddof(2).Var, corrected(2, false), floats, floatOf, true, false},
		{"peel.CountNonzero", peel.CountNonzero, count, allTypes, func(peel.DType) peel.DType { return peel.Int64 }, false, true},
		{"peel.NanSum", peel.NanSum, nanSum, allTypes, boolAsInt, true, true},
		{"peel.NanMean", peel.NanMean, nanMean, numerics, floatOf, true, true},
	}
	var ops []Op
	for _, r := range reds {
		for _, c := range reduceAxesCases {
			shapes := [][]int{{2, 3, 4}, {3, 2, 2}}
			if c.axes == nil && r.rank0 {
				shapes = append(shapes, []int{})
			}
			base := reduceSamples(r.dtypes, shapes)
			ops = append(ops, Op{
				Name: fmt.Sprintf("%s/axes=%s,keep=%v", r.name, axesName(c.axes), c.keep),
				F: func(a []*T) *T {
					if c.keep {
						return peel.Keep(r.f, a[0], c.axes...)
					}
					return r.f(a[0], c.axes...)
				},
				Samples: func() []Sample {
					out := base()
					for _, d := range r.dtypes {
						if d.IsFloat() {
							nan := math.NaN()
							out = append(out, fixedSample(fmt.Sprintf("%v/nan", d), d, []float64{
								1, nan, 2, 0, -1, 3, nan, nan, 0.5, -2, 4, 1,
								nan, 1, 2, 3, -1, nan, 0, 2, 1, 1, -3, nan}, 2, 3, 4))
						}
					}
					return out
				},
				Ref: func(a []Host) Host {
					return reduceRef(a[0], c.axes, c.keep, r.out(a[0].DType), r.ref)
				},
				Tol:            1e-5,
				Differentiable: r.diff,
			})
		}
	}
	return ops
}
