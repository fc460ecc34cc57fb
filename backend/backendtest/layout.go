package backendtest

import (
	"math"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// layout is how an operand's elements are placed in its backend buffer.
type layout uint8

const (
	// contiguous: a fresh row-major buffer.
	contiguous layout = iota
	// transposed: a transpose view (reversed dimension order) of a
	// contiguous tensor.
	transposed
	// strided: a slice view with offset 1 and stride 2 in every dimension.
	strided
	// splat: a rank-0 tensor broadcast to the shape (all strides 0).
	splat
	// expanded: broadcast along the first dimension longer than one.
	expanded
	// reversed: a raw backend array with negative strides and an offset.
	reversed
)

var layouts = []layout{contiguous, transposed, strided, splat, expanded, reversed}

func (l layout) String() string {
	return [...]string{"contiguous", "transposed", "strided", "splat", "expanded", "reversed"}[l]
}

// fits reports whether layout l is distinct from contiguous for shape.
func (l layout) fits(shape []int) bool {
	switch l {
	case transposed:
		return len(shape) >= 2
	case strided, splat:
		return len(shape) >= 1
	case expanded:
		return slices.ContainsFunc(shape, func(d int) bool { return d > 1 })
	case reversed:
		return len(shape) >= 1 && backend.ShapeSize(shape) > 0
	}
	return true
}

// layoutsFor returns the layouts that fit shape.
func layoutsFor(shape []int) []layout {
	var out []layout
	for _, l := range layouts {
		if l.fits(shape) {
			out = append(out, l)
		}
	}
	return out
}

// operand is a tensor made for a case: its logical value and where its
// elements live.
type operand struct {
	t *interp.Tensor
	a array // t's logical value
	l layout
	// base owns the memory t aliases (t itself unless t is a view); its
	// element m[k] is t's element k.
	base  *interp.Tensor
	baseA array
	m     []int
}

// values says how to draw random elements.
type values struct {
	lo, hi   float64                          // floats are uniform in [lo, hi] …
	special  func(dt backend.DType) []float64 // … or, one time in five, one of these
	ilo, ihi int64                            // integers are uniform in [ilo, ihi] …
	ispecial []int64                          // … or, one time in five, one of these
}

// draw returns an array of random elements.
func (s *suite) draw(dt backend.DType, shape []int, v values) array {
	a := newArray(dt, shape)
	for k := range a.size() {
		switch dt {
		case backend.Bool:
			a.b[k] = s.rng.IntN(2) == 1
		case backend.Int64:
			if len(v.ispecial) > 0 && s.rng.IntN(5) == 0 {
				a.i[k] = v.ispecial[s.rng.IntN(len(v.ispecial))]
			} else {
				a.i[k] = v.ilo + s.rng.Int64N(v.ihi-v.ilo+1)
			}
		default:
			var sp []float64
			if v.special != nil {
				sp = v.special(dt)
			}
			if len(sp) > 0 && s.rng.IntN(5) == 0 {
				a.f[k] = fround(dt, sp[s.rng.IntN(len(sp))])
			} else {
				a.f[k] = fround(dt, v.lo+(v.hi-v.lo)*s.rng.Float64())
			}
		}
	}
	return a
}

// junk fills memory next to an operand's elements, where a kernel that
// reads the wrong element would find it.
func junk(dt backend.DType, n int) array {
	a := newArray(dt, []int{n})
	for k := range n {
		switch dt {
		case backend.Bool:
			a.b[k] = true
		case backend.Int64:
			a.i[k] = -999999
		default:
			a.f[k] = -12345.5
		}
	}
	return a
}

// operand makes a tensor of random elements in layout l.
func (s *suite) operand(dt backend.DType, shape []int, l layout, v values) operand {
	switch l {
	case splat:
		src := s.draw(dt, nil, v)
		return s.viewOf(l, s.tensor(src), src, prims.BroadcastInDim,
			prims.BroadcastParams{Shape: slices.Clone(shape), Dims: []int{}})
	case expanded:
		k := slices.IndexFunc(shape, func(d int) bool { return d > 1 })
		srcShape := slices.Clone(shape)
		srcShape[k] = 1
		src := s.draw(dt, srcShape, v)
		return s.viewOf(l, s.tensor(src), src, prims.BroadcastInDim,
			prims.BroadcastParams{Shape: slices.Clone(shape), Dims: seq(len(shape))})
	}
	return s.place(s.draw(dt, shape, v), l)
}

// place makes a tensor holding a in layout l, which must not be splat or
// expanded (those constrain the values).
func (s *suite) place(a array, l layout) operand {
	r := len(a.shape)
	switch l {
	case transposed:
		perm := make([]int, r)
		for k := range perm {
			perm[k] = r - 1 - k
		}
		bshape, m := transposeMap(a.shape, perm) // perm is its own inverse
		baseA := a.take(bshape, m, array{})
		return s.viewOf(l, s.tensor(baseA), baseA, prims.Transpose, prims.TransposeParams{Perm: perm})
	case strided:
		bshape := make([]int, r)
		sp := prims.SliceParams{Start: make([]int, r), Limit: make([]int, r), Stride: make([]int, r)}
		for k, d := range a.shape {
			bshape[k] = 2*d + 1
			sp.Start[k], sp.Limit[k], sp.Stride[k] = 1, 2*d+1, 2
		}
		baseA := junk(a.dt, backend.ShapeSize(bshape)).reshaped(bshape)
		_, m := sliceMap(bshape, sp)
		for k, j := range m {
			baseA.set(j, a, k)
		}
		return s.viewOf(l, s.tensor(baseA), baseA, prims.Slice, sp)
	case reversed:
		const pad = 2
		n := a.size()
		buf := junk(a.dt, n+pad)
		for k := range n {
			buf.set(pad+n-1-k, a, k)
		}
		st := backend.ContiguousStrides(a.shape)
		off := pad
		for k, d := range a.shape {
			off += (d - 1) * st[k]
			st[k] = -st[k]
		}
		arr := backend.Array{Buf: s.b.FromHost(buf.host()), Shape: slices.Clone(a.shape), Strides: st, Offset: off}
		t := interp.NewConcrete(s.b, arr)
		return operand{t: t, a: a, l: l, base: t, baseA: a, m: identityMap(n)}
	}
	t := s.tensor(a)
	return operand{t: t, a: a, l: contiguous, base: t, baseA: a, m: identityMap(a.size())}
}

// viewOf applies view primitive p to the contiguous tensor base holding
// baseA.
func (s *suite) viewOf(l layout, base *interp.Tensor, baseA array, p *interp.Prim, params any) operand {
	shape, m := viewMap(p, params, baseA.shape)
	return operand{
		t: interp.Bind1(p, params, base), a: baseA.take(shape, m, array{}), l: l,
		base: base, baseA: baseA, m: m,
	}
}

// Value sets.

var (
	inf = math.Inf(1)
	nan = math.NaN()
	// negZero is −0.
	negZero = math.Copysign(0, -1)
)

// large and tiny return a huge and a tiny normal value of float dtype dt.
func large(dt backend.DType) float64 {
	if dt == backend.Float32 {
		return 3e38
	}
	return 1e308
}

func tiny(dt backend.DType) float64 {
	if dt == backend.Float32 {
		return 1e-30
	}
	return 1e-300
}

// denormal returns a subnormal value of dt.
func denormal(dt backend.DType) float64 {
	if dt == backend.Float32 {
		return 1e-40
	}
	return 5e-324
}

// smallestDenormal returns the smallest positive value of dt.
func smallestDenormal(dt backend.DType) float64 {
	if dt == backend.Float32 {
		return math.SmallestNonzeroFloat32
	}
	return math.SmallestNonzeroFloat64
}

// floatEdges are the edge values of float dtype dt.
func floatEdges(dt backend.DType) []float64 {
	return []float64{0, negZero, 1, -1, 0.5, -2.5, inf, -inf, nan,
		large(dt), -large(dt), tiny(dt), -tiny(dt)}
}

// with returns an edge-value function adding extra values to floatEdges.
func with(extra ...float64) func(backend.DType) []float64 {
	return func(dt backend.DType) []float64 { return append(floatEdges(dt), extra...) }
}

var intEdges = []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1 << 53, -(1<<53 + 1)}

// defaultValues suits most primitives: floats in [−3, 3] and every edge
// value, small integers and the extreme ones.
var defaultValues = values{lo: -3, hi: 3, special: floatEdges, ilo: -9, ihi: 9, ispecial: intEdges}

// finiteValues has no infinities or NaNs and no extreme integers.
var finiteValues = values{lo: -3, hi: 3, ilo: -9, ihi: 9}

// finite returns v without its edge values.
func (v values) finite() values {
	v.special, v.ispecial = nil, nil
	return v
}
