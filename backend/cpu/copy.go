package cpu

import "github.com/peel-ml/peel/backend"

// copyWideMin and copyWideMax bound the copies, in bytes, copyElems
// gives the AVX-512 loop: below the first Go's copy is as fast, and above
// the second (source and destination no longer fit in L3) Go's memmove,
// which avoids reading the destination's lines first, is faster (16
// MiB: 455 µs against 574).
const (
	copyWideMin = 1 << 14
	copyWideMax = 8 << 20
)

// copyStrided copies src into dst (same shape and dtype, any strides).
func copyStrided(dst, src backend.Array) {
	switch d := dst.Buf.(type) {
	case boolBuf:
		stridedCopy(d, src.Buf.(boolBuf), dst, src)
	case i64Buf:
		stridedCopy(d, src.Buf.(i64Buf), dst, src)
	case f32Buf:
		stridedCopy(d, src.Buf.(f32Buf), dst, src)
	case f64Buf:
		stridedCopy(d, src.Buf.(f64Buf), dst, src)
	default:
		if !copyStorage(dst, src) {
			panic("cpu: foreign buffer")
		}
	}
}

// stridedCopy copies src into dst, split across the backend's threads
// when it is large: contiguous copies in chunks of elements, strided ones
// in ranges of their first dimension.
func stridedCopy[T any](d, s []T, dst, src backend.Array) {
	n := dst.Size()
	if n == 0 {
		return
	}
	if dst.IsContiguous() && src.IsContiguous() {
		d, s := d[dst.Offset:dst.Offset+n], s[src.Offset:src.Offset+n]
		parallelFor(n, costCheap, func(lo, hi int) { copyElems(d[lo:hi], s[lo:hi]) })
		return
	}
	if len(dst.Shape) < 2 || serial(n, costCheap) {
		stridedCopySerial(d, s, dst, src)
		return
	}
	// Rows of the first dimension, as sub-arrays at their offsets.
	ds, ss := dst.EffectiveStrides(), src.EffectiveStrides()
	sub := func(a backend.Array, st []int, lo, hi int) backend.Array {
		shape := append([]int{hi - lo}, a.Shape[1:]...)
		return backend.Array{Buf: a.Buf, Shape: shape, Strides: st, Offset: a.Offset + lo*st[0]}
	}
	rows := dst.Shape[0]
	parallelFor(rows, costCheap*(n/rows), func(lo, hi int) {
		stridedCopySerial(d, s, sub(dst, ds, lo, hi), sub(src, ss, lo, hi))
	})
}

// stridedCopySerial is stridedCopy on the calling goroutine.
func stridedCopySerial[T any](d, s []T, dst, src backend.Array) {
	n := dst.Size()
	if n == 0 {
		return
	}
	if dst.IsContiguous() && src.IsContiguous() {
		copy(d[dst.Offset:dst.Offset+n], s[src.Offset:src.Offset+n])
		return
	}
	shape := dst.Shape
	r := len(shape)
	if r == 0 {
		d[dst.Offset] = s[src.Offset]
		return
	}
	ds, ss := dst.EffectiveStrides(), src.EffectiveStrides()
	inner := shape[r-1]
	dsi, ssi := ds[r-1], ss[r-1]
	idx := make([]int, r)
	do, so := dst.Offset, src.Offset
	for {
		if dsi == 1 && ssi == 1 {
			copy(d[do:do+inner], s[so:so+inner])
		} else if ssi == 0 {
			v := s[so]
			for i, p := 0, do; i < inner; i, p = i+1, p+dsi {
				d[p] = v
			}
		} else {
			for i, p, q := 0, do, so; i < inner; i, p, q = i+1, p+dsi, q+ssi {
				d[p] = s[q]
			}
		}
		// Advance the outer index.
		k := r - 2
		for ; k >= 0; k-- {
			idx[k]++
			do += ds[k]
			so += ss[k]
			if idx[k] < shape[k] {
				break
			}
			do -= ds[k] * shape[k]
			so -= ss[k] * shape[k]
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}
