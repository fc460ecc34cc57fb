package cpu

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/prims"
)

// Kernels are registered while package variables are initialized, which
// precedes every init function: cpu.go's init builds the backend's
// kernel table, and init functions run in file-name order.
var _ = registerIndexKernels()

func registerIndexKernels() bool {
	register(prims.Gather, false, gather)
	register(prims.ScatterAdd, false, scatterAdd)
	register(prims.Scatter, false, scatter)
	registerStrided(prims.DynamicSlice, dynamicSlice)
	registerStrided(prims.DynamicUpdateSlice, dynamicUpdateSlice)
	return true
}

// axisGeom views an operand of gather or scatter around its axis as
// [P, n, S] (P the product of the dimensions before the axis, S of those
// after), and the gathered slices (the result of gather, the updates of
// scatter) as [P, J, S] with J the number of indices.
type axisGeom struct {
	P, n, S, J int
}

func newAxisGeom(x, idx backend.Array, axis int) axisGeom {
	return axisGeom{
		P: backend.ShapeSize(x.Shape[:axis]),
		n: x.Shape[axis],
		S: backend.ShapeSize(x.Shape[axis+1:]),
		J: idx.Size(),
	}
}

// gather copies slice x[p, clamp(idx[j]), :] to out[p, j, :]. When the
// axis is empty no index can be clamped into it, and the result is
// zero.
func gather(params any, in, out []backend.Array) {
	x, idx, o := in[0], in[1], out[0]
	g := newAxisGeom(x, idx, params.(prims.AxisParams).Axis)
	if o.Size() == 0 || g.n == 0 {
		zero(o)
		return
	}
	ix := i64s(idx)
	switch o.Buf.(type) {
	case *boolBuf:
		gatherT(bools(o), bools(x), ix, g)
	case *i64Buf:
		gatherT(i64s(o), i64s(x), ix, g)
	case *f32Buf:
		gatherT(f32s(o), f32s(x), ix, g)
	case *f64Buf:
		gatherT(f64s(o), f64s(x), ix, g)
	default:
		panic("cpu: foreign buffer")
	}
}

// clampIndex clamps v into [0, n) for n > 0.
func clampIndex(v int64, n int) int {
	if v < 0 {
		return 0
	}
	if v >= int64(n) {
		return n - 1
	}
	return int(v)
}

func gatherT[T any](o, x []T, ix []int64, g axisGeom) {
	P, n, S, J := g.P, g.n, g.S, g.J
	if S == 1 {
		parallelFor(P*J, 1, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				p, j := r/J, r%J
				o[r] = x[p*n+clampIndex(ix[j], n)]
			}
		})
		return
	}
	parallelFor(P*J, S, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			p, j := r/J, r%J
			src := (p*n + clampIndex(ix[j], n)) * S
			copy(o[r*S:(r+1)*S], x[src:src+S])
		}
	})
}

// scatterAdd copies x to the result, then adds updates[p, j, :] to
// out[p, idx[j], :] for each in-range index (repeated indices accumulate).
func scatterAdd(params any, in, out []backend.Array) { scatterKernel(params, in, out, true) }

// scatter copies x to the result, then writes updates[p, j, :] to
// out[p, idx[j], :] for each in-range index, in increasing j, so the last
// of repeated indices wins.
func scatter(params any, in, out []backend.Array) { scatterKernel(params, in, out, false) }

func scatterKernel(params any, in, out []backend.Array, add bool) {
	x, idx, u, o := in[0], in[1], in[2], out[0]
	copyStrided(o, x)
	g := newAxisGeom(x, idx, params.(prims.AxisParams).Axis)
	if u.Size() == 0 {
		return
	}
	ix := i64s(idx)
	switch o.Buf.(type) {
	case *boolBuf:
		if add {
			panic("cpu: scatter_add of dtype bool")
		}
		scatterSetT(bools(o), bools(u), ix, g)
	case *i64Buf:
		scatterT(i64s(o), i64s(u), ix, g, add)
	case *f32Buf:
		scatterT(f32s(o), f32s(u), ix, g, add)
	case *f64Buf:
		scatterT(f64s(o), f64s(u), ix, g, add)
	default:
		panic("cpu: foreign buffer")
	}
}

func scatterT[T int64 | float32 | float64](o, u []T, ix []int64, g axisGeom, add bool) {
	if add {
		scatterAddT(o, u, ix, g)
	} else {
		scatterSetT(o, u, ix, g)
	}
}

// scatterSplit runs body over blocks of [P] × [S] that never share a
// result element: split along P when there are enough rows for the
// workers, along S otherwise. Within a block body visits the indices in
// order, which keeps scatter's last-write-wins rule.
func scatterSplit(g axisGeom, body func(p0, p1, s0, s1 int)) {
	if g.P >= Threads() || g.S == 1 {
		parallelFor(g.P, g.J*g.S, func(lo, hi int) { body(lo, hi, 0, g.S) })
		return
	}
	parallelFor(g.S, g.P*g.J, func(lo, hi int) { body(0, g.P, lo, hi) })
}

func scatterAddT[T int64 | float32 | float64](o, u []T, ix []int64, g axisGeom) {
	n, S, J := g.n, g.S, g.J
	scatterSplit(g, func(p0, p1, s0, s1 int) {
		for p := p0; p < p1; p++ {
			for j, v := range ix {
				if v < 0 || v >= int64(n) {
					continue
				}
				dst := o[(p*n+int(v))*S+s0 : (p*n+int(v))*S+s1]
				src := u[(p*J+j)*S+s0 : (p*J+j)*S+s1]
				for s, w := range src {
					dst[s] += w
				}
			}
		}
	})
}

func scatterSetT[T any](o, u []T, ix []int64, g axisGeom) {
	n, S, J := g.n, g.S, g.J
	scatterSplit(g, func(p0, p1, s0, s1 int) {
		for p := p0; p < p1; p++ {
			for j, v := range ix {
				if v < 0 || v >= int64(n) {
					continue
				}
				copy(o[(p*n+int(v))*S+s0:(p*n+int(v))*S+s1], u[(p*J+j)*S+s0:(p*J+j)*S+s1])
			}
		}
	})
}

// clampStart clamps the i64 scalar start s into [0, hi].
func clampStart(s backend.Array, hi int) int {
	v := i64s(s)[0]
	if v < 0 {
		return 0
	}
	if v > int64(hi) {
		return hi
	}
	return int(v)
}

// window returns the view of the contiguous array a of the given shape
// starting at the starts (i64 scalars, one per dimension), each clamped so
// the window fits.
func window(a backend.Array, shape []int, starts []backend.Array) backend.Array {
	st := a.EffectiveStrides()
	off := a.Offset
	for k, s := range starts {
		off += clampStart(s, a.Shape[k]-shape[k]) * st[k]
	}
	return backend.Array{Buf: a.Buf, Shape: shape, Strides: st, Offset: off}
}

// dynamicSlice copies the window of the operand at the clamped starts.
func dynamicSlice(_ any, in, out []backend.Array) {
	o := out[0]
	if o.Size() == 0 {
		return
	}
	copyStrided(o, window(in[0], o.Shape, in[1:]))
}

// dynamicUpdateSlice copies the operand, then the update into the window
// at the clamped starts.
func dynamicUpdateSlice(_ any, in, out []backend.Array) {
	o, u := out[0], in[1]
	copyStrided(o, in[0])
	if u.Size() == 0 {
		return
	}
	copyStrided(window(o, u.Shape, in[2:]), u)
}
