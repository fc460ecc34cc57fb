package interp

import (
	"runtime"

	"github.com/peel-ml/peel/backend"
)

// This file exports, for package compiler and the compiled rules of
// package autodiff, the pieces of eval and of blocked evaluation that a
// compiled program reuses, so the layout and blocking rules live in one
// place.

// FuseBlock is the number of elements per block of a blocked (fused)
// evaluation: small enough that a few dozen intermediates of one block
// stay in a core's L2 cache, large enough that per-block dispatch is
// negligible.
const FuseBlock = 4096

// FuseMin is the smallest array for which a blocked evaluation spreads
// its blocks over several goroutines.
const FuseMin = 4 * FuseBlock

// CutBlock returns elements [lo, lo+shape[0]) of a, a contiguous array
// or a broadcast scalar (IsSplat), as a one-dimensional array: the block
// a fused equation reads. shape is the block's shape, one dimension.
func CutBlock(a backend.Array, lo int, shape []int) backend.Array {
	if a.Strides != nil && a.IsSplat() && a.Size() > 1 {
		return backend.Array{Buf: a.Buf, Shape: shape, Strides: zeroStride, Offset: a.Offset}
	}
	return backend.Array{Buf: a.Buf, Shape: shape, Offset: a.Offset + lo}
}

var zeroStride = []int{0}

// BackendThreads returns how many goroutines be's kernels use: its
// Threads method if it has one, else GOMAXPROCS.
func BackendThreads(be backend.Backend) int {
	if t, ok := be.(interface{ Threads() int }); ok {
		return max(1, t.Threads())
	}
	return runtime.GOMAXPROCS(0)
}

// ViewArray returns the strided array that view primitive p makes of a,
// sharing a's buffer, as eval does for a view. ok is false when no
// strided view exists (a reshape of a non-contiguous array): eval then
// applies the view to a contiguous copy of a. It panics with *Error if p
// is not a view primitive.
func ViewArray(p *Prim, params any, a backend.Array) (view backend.Array, ok bool) {
	if p.Kind != ViewKind || p.ViewArray == nil {
		panic(&Error{Prim: p.Name, Msg: "not a view primitive"})
	}
	return p.ViewArray(params, a)
}

// Donatable reports whether t's buffer may be taken over by a caller
// that was given t to consume: t is concrete, contiguous from offset 0
// over its whole buffer, and no snapshot (a graph constant, a saved
// value) shares its memory.
func Donatable(t *Tensor) bool {
	if t == nil || t.tr != nil || t.st == nil || t.st.buf == nil || t.st.cur == nil {
		return false
	}
	a := t.array()
	return a.IsContiguous() && a.Offset == 0 && a.Buf.Len() == a.Size() && t.st.cur.refs.Load() <= 0
}

// SameStorage reports whether two concrete tensors share memory through
// one storage (a base and its views, boxes of one content).
func SameStorage(a, b *Tensor) bool { return a != nil && b != nil && a.st != nil && a.st == b.st }

// Released reports whether g's constants were released
// (ReleaseConstants), after which it must not be evaluated or compiled.
func (g *Graph) Released() bool { return g.released }
