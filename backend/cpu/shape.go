package cpu

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Shape kernels move elements without arithmetic: each is a fill and/or
// strided copies between views of its operands and result, so copyStrided
// does the per-dtype work.

// Kernels are registered while package variables are initialized, which
// precedes every init function: cpu.go's init builds the backend's
// kernel table, and init functions run in file-name order.
var _ = registerShapeKernels()

func registerShapeKernels() bool {
	register(prims.Pad, false, pad)
	register(prims.Concatenate, false, concatenate)
	register(prims.Rev, false, rev)
	register(prims.Iota, false, iotaKernel)
	return true
}

// fill sets every element of the contiguous array a to v's single element.
func fill(a, v backend.Array) {
	switch a.Buf.(type) {
	case *boolBuf:
		fillT(bools(a), bools(v)[0])
	case *i64Buf:
		fillT(i64s(a), i64s(v)[0])
	case *f32Buf:
		fillT(f32s(a), f32s(v)[0])
	case *f64Buf:
		fillT(f64s(a), f64s(v)[0])
	default:
		panic("cpu: foreign buffer")
	}
}

// fillT sets every element of s to v, doubling the filled prefix with
// copy (which runs at memmove speed).
func fillT[T any](s []T, v T) {
	if len(s) == 0 {
		return
	}
	s[0] = v
	for n := 1; n < len(s); n *= 2 {
		copy(s[n:], s[:n])
	}
}

// pad writes the padding value everywhere, then copies the operand
// elements that land inside the result: along dimension k, operand index
// i goes to low + i*(interior+1), and a negative low or high cuts the
// indices that fall outside.
func pad(params any, in, out []backend.Array) {
	pp := params.(prims.PadParams)
	x, o := in[0], out[0]
	if o.Size() == 0 {
		return
	}
	r := len(x.Shape)
	xs, os := x.EffectiveStrides(), o.EffectiveStrides()
	shape := make([]int, r)
	src := backend.Array{Buf: x.Buf, Shape: shape, Strides: make([]int, r), Offset: x.Offset}
	dst := backend.Array{Buf: o.Buf, Shape: shape, Strides: make([]int, r), Offset: o.Offset}
	covered := true // the operand's elements fill the whole result
	for k, d := range x.Shape {
		step := pp.Interior[k] + 1
		// First and last operand index inside the result.
		lo := 0
		if pp.Low[k] < 0 {
			lo = (-pp.Low[k] + step - 1) / step
		}
		hi := -1
		if last := o.Shape[k] - 1 - pp.Low[k]; last >= 0 {
			hi = min(d-1, last/step)
		}
		shape[k] = max(0, hi-lo+1)
		src.Strides[k] = xs[k]
		src.Offset += lo * xs[k]
		dst.Strides[k] = os[k] * step
		dst.Offset += (pp.Low[k] + lo*step) * os[k]
		if pp.Low[k] > 0 || pp.High[k] > 0 || (pp.Interior[k] > 0 && d > 1) {
			covered = false
		}
	}
	if !covered {
		fill(o, in[1])
	}
	if backend.ShapeSize(shape) > 0 {
		copyStrided(dst, src)
	}
}

// concatenate copies each operand into its block of the result, viewing
// both as [outer, block] matrices where outer is the product of the
// dimensions before the axis.
func concatenate(params any, in, out []backend.Array) {
	axis := params.(prims.AxisParams).Axis
	o := out[0]
	outer := backend.ShapeSize(o.Shape[:axis])
	inner := backend.ShapeSize(o.Shape[axis+1:])
	row := o.Shape[axis] * inner
	at := 0
	for _, x := range in {
		w := x.Shape[axis] * inner
		if w > 0 && outer > 0 {
			copyStrided(
				backend.Array{Buf: o.Buf, Shape: []int{outer, w}, Strides: []int{row, 1}, Offset: o.Offset + at},
				backend.Array{Buf: x.Buf, Shape: []int{outer, w}, Offset: x.Offset})
		}
		at += w
	}
}

// rev copies the operand through a view with negated strides along the
// reversed axes.
func rev(params any, in, out []backend.Array) {
	x := in[0]
	if x.Size() == 0 {
		return
	}
	st := append([]int(nil), x.EffectiveStrides()...)
	off := x.Offset
	for _, k := range params.(prims.RevParams).Axes {
		off += (x.Shape[k] - 1) * st[k]
		st[k] = -st[k]
	}
	copyStrided(out[0], backend.Array{Buf: x.Buf, Shape: x.Shape, Strides: st, Offset: off})
}

// ---------------------------------------------------------------------------
// iota

func iotaKernel(params any, _, out []backend.Array) {
	p := params.(prims.IotaParams)
	o := out[0]
	if len(o.Shape) == 0 || p.Dim < 0 || p.Dim >= len(o.Shape) {
		interp.Panicf("cpu: iota dimension %d out of range for shape %v", p.Dim, o.Shape)
	}
	switch o.Buf.(type) {
	case *i64Buf:
		iotaFill(i64s(o), o.Shape, p.Dim)
	case *f32Buf:
		iotaFill(f32s(o), o.Shape, p.Dim)
	case *f64Buf:
		iotaFill(f64s(o), o.Shape, p.Dim)
	default:
		badDType(prims.Iota, o.Buf.DType())
	}
}

// iotaFill sets d (of the given shape) to each element's index along dim.
func iotaFill[T elemNum](d []T, shape []int, dim int) {
	if len(d) == 0 {
		return
	}
	n := shape[dim]
	inner := backend.ShapeSize(shape[dim+1:])
	block := n * inner
	// The first block holds 0…n-1 repeated inner times; the others copy it.
	for k := range n {
		fillSlice(d[k*inner:(k+1)*inner], T(k))
	}
	for lo := block; lo < len(d); lo += block {
		copy(d[lo:lo+block], d[:block])
	}
}
