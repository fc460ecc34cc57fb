package backendtest

import (
	"fmt"
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
