package cpu

import (
	"unsafe"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/prims"
)

// Kernel of select (where).

func init() {
	register(prims.Where, true, selectKernel)
}

// ---------------------------------------------------------------------------
// select

func selectKernel(_ any, in, out []backend.Array) {
	p, x, y, o := in[0], in[1], in[2], out[0]
	pb := p.Buf.(*boolBuf).s
	switch xb := x.Buf.(type) {
	case *boolBuf:
		runSelect(bools(o), p, x, y, pb, xb.s, y.Buf.(*boolBuf).s)
	case *i64Buf:
		runSelect(i64s(o), p, x, y, pb, xb.s, y.Buf.(*i64Buf).s)
	case *f32Buf:
		// Floats are selected as their bit patterns: the compiler emits a
		// conditional move only for integer registers.
		runSelect(asBits32(f32s(o)), p, x, y, pb, asBits32(xb.s), asBits32(y.Buf.(*f32Buf).s))
	case *f64Buf:
		runSelect(asBits64(f64s(o)), p, x, y, pb, asBits64(xb.s), asBits64(y.Buf.(*f64Buf).s))
	default:
		badDType(prims.Where, x.Buf.DType())
	}
}

// asBits32 and asBits64 view float slices as their bit patterns (same
// memory).
func asBits32(f []float32) []uint32 {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&f[0])), len(f))
}

func asBits64(f []float64) []uint64 {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&f[0])), len(f))
}

// selectLoops are the loops of select for one element type: both
// branches tensors, onTrue a scalar, onFalse a scalar, both scalars.
type selectLoops[T any] struct {
	vv func(d []T, p []bool, a, b []T)
	sv func(d []T, p []bool, s T, b []T)
	vs func(d []T, p []bool, a []T, s T)
	ss func(d []T, p []bool, s, t T)
}

func runSelect[T any](d []T, p, x, y backend.Array, pb []bool, xb, yb []T) {
	n := len(d)
	if n == 0 {
		return
	}
	if isSplatIn(p) {
		src, sb := y, yb
		if pb[p.Offset] {
			src, sb = x, xb
		}
		if isSplatIn(src) {
			fillSlice(d, sb[src.Offset])
		} else {
			copy(d, sb[src.Offset:src.Offset+n])
		}
		return
	}
	l := selectLoops[T]{selectVV[T], selectSV[T], selectVS[T], selectSS[T]}
	pr := pb[p.Offset : p.Offset+n]
	xs, ys := isSplatIn(x), isSplatIn(y)
	if serial(n, costCheap) {
		// Directly: the closures below escape to the workers, an
		// allocation per call that small selects (a vmapped loop's
		// predicates) would pay for nothing.
		switch {
		case xs && ys:
			l.ss(d, pr, xb[x.Offset], yb[y.Offset])
		case xs:
			l.sv(d, pr, xb[x.Offset], yb[y.Offset:y.Offset+n])
		case ys:
			l.vs(d, pr, xb[x.Offset:x.Offset+n], yb[y.Offset])
		default:
			l.vv(d, pr, xb[x.Offset:x.Offset+n], yb[y.Offset:y.Offset+n])
		}
		return
	}
	switch {
	case xs && ys:
		a, b := xb[x.Offset], yb[y.Offset]
		parallelFor(n, costCheap, func(lo, hi int) { l.ss(d[lo:hi], pr[lo:hi], a, b) })
	case xs:
		a, b := xb[x.Offset], yb[y.Offset:y.Offset+n]
		parallelFor(n, costCheap, func(lo, hi int) { l.sv(d[lo:hi], pr[lo:hi], a, b[lo:hi]) })
	case ys:
		a, b := xb[x.Offset:x.Offset+n], yb[y.Offset]
		parallelFor(n, costCheap, func(lo, hi int) { l.vs(d[lo:hi], pr[lo:hi], a[lo:hi], b) })
	default:
		a, b := xb[x.Offset:x.Offset+n], yb[y.Offset:y.Offset+n]
		parallelFor(n, costCheap, func(lo, hi int) { l.vv(d[lo:hi], pr[lo:hi], a[lo:hi], b[lo:hi]) })
	}
}

// The select loops load both candidates before choosing, so the compiler
// emits a conditional move instead of a branch (a random predicate would
// mispredict half the time). It does so only for integer registers, so
// float buffers come here as their bit patterns (selectKernel).

func selectVV[T any](d []T, p []bool, a, b []T) {
	p, a, b = p[:len(d)], a[:len(d)], b[:len(d)]
	for i := range d {
		u, v := a[i], b[i]
		if p[i] {
			v = u
		}
		d[i] = v
	}
}

func selectVS[T any](d []T, p []bool, a []T, s T) {
	p, a = p[:len(d)], a[:len(d)]
	for i := range d {
		u, v := a[i], s
		if p[i] {
			v = u
		}
		d[i] = v
	}
}

func selectSV[T any](d []T, p []bool, s T, b []T) {
	p, b = p[:len(d)], b[:len(d)]
	for i := range d {
		v := b[i]
		if p[i] {
			v = s
		}
		d[i] = v
	}
}

func selectSS[T any](d []T, p []bool, s, t T) {
	p = p[:len(d)]
	for i := range d {
		v := t
		if p[i] {
			v = s
		}
		d[i] = v
	}
}
