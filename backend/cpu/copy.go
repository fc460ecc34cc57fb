package cpu

import (
	"unsafe"

	"github.com/peel-ml/peel/backend"
)

// copyWideMin is the smallest copy, in bytes, copyElems gives the vector
// loops: below it Go's copy is as fast. (The largest is fillNTMin's.)
const copyWideMin = 1 << 14

// fillNTMin is the size, in bytes, from which fills (and the transposes
// of large copies) store around the caches: a fill that large would
// evict them anyway, and a normal store first reads each destination
// line. It is three quarters of the last-level cache's share per CPU
// (ntMinBytes), as C libraries decide for memset, and at least 4 MiB.
var fillNTMin = ntMinBytes(llcShare("/sys/devices/system/cpu/cpu0/cache"))

// ntMinBytes is fillNTMin for a last-level cache share of share bytes
// (0: unknown). On a 2-core Xeon VM (Emerald Rapids) non-temporal
// stores from 4 MiB made a 4 MiB fill about 1.2 times faster than
// normal ones; on a 2-core Zen 4 VM (32 MiB of L3 for both) they made it
// 2.7 times slower than torch's normal stores, which leave it in the L3.
func ntMinBytes(share int) int {
	return max(4<<20, share/4*3)
}

// copyStrided copies src into dst (same shape and dtype, any strides).
func copyStrided(dst, src backend.Array) {
	switch d := dst.Buf.(type) {
	case *boolBuf:
		stridedCopy(d.s, src.Buf.(*boolBuf).s, dst, src)
	case *i64Buf:
		stridedCopy(d.s, src.Buf.(*i64Buf).s, dst, src)
	case *f32Buf:
		stridedCopy(d.s, src.Buf.(*f32Buf).s, dst, src)
	case *f64Buf:
		stridedCopy(d.s, src.Buf.(*f64Buf).s, dst, src)
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
	if dst.IsContiguous() && isSplat(src) {
		// A fill (peel.Fill, a broadcast scalar): memset-like doubling
		// copies, not a store per element through the strides.
		d, v := d[dst.Offset:dst.Offset+n], s[src.Offset]
		parallelFor(n, costCheap, func(lo, hi int) { fillAny(d[lo:hi], v) })
		return
	}
	var z T
	nt := n*int(unsafe.Sizeof(z)) >= fillNTMin
	if len(dst.Shape) < 2 || serial(n, costCheap) {
		stridedCopySerial(d, s, dst, src, nt)
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
		stridedCopySerial(d, s, sub(dst, ds, lo, hi), sub(src, ss, lo, hi), nt)
	})
}

// stridedCopySerial is stridedCopy on the calling goroutine; nt says
// the whole copy (of which this may be a part) is of fillNTMin bytes or
// more, so its transposes may store around the caches.
func stridedCopySerial[T any](d, s []T, dst, src backend.Array, nt bool) {
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
	if r >= 2 && transposedPair(ds[r-2:], ss[r-2:]) {
		transposeTiles(d, s, dst, src, ds, ss, nt)
		return
	}
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
		if !nextIndex(idx[:r-1], shape, ds, ss, &do, &so) {
			return
		}
	}
}

// nextIndex advances the index idx over the leading len(idx) dimensions
// of shape, odometer fashion, moving the offsets do and so by the
// strides ds and ss; it reports false after the last index.
func nextIndex(idx, shape, ds, ss []int, do, so *int) bool {
	for k := len(idx) - 1; k >= 0; k-- {
		idx[k]++
		*do += ds[k]
		*so += ss[k]
		if idx[k] < shape[k] {
			return true
		}
		*do -= ds[k] * shape[k]
		*so -= ss[k] * shape[k]
		idx[k] = 0
	}
	return false
}

// isSplat reports whether every element of a refers to its first (a
// broadcast scalar: all strides zero).
func isSplat(a backend.Array) bool {
	if a.Strides == nil {
		return a.Size() <= 1
	}
	for i, st := range a.Strides {
		if st != 0 && a.Shape[i] > 1 {
			return false
		}
	}
	return true
}

// transposedPair reports whether the last two dimensions of a copy are
// transposed between destination and source (strides ds and ss of the
// two): one side contiguous along the last, the other along the one
// before it. Element by element, one side then strides across a cache
// line per element; by tiles (transposeTiles) both stay in L1.
func transposedPair(ds, ss []int) bool {
	return ds[1] == 1 && ss[0] == 1 && ss[1] != 1 || ss[1] == 1 && ds[0] == 1 && ds[1] != 1
}

// transposeTile is the side of the tiles of transposeTiles: a 16×16
// tile touches 16 cache lines of each side.
const transposeTile = 16

// transposeTiles is stridedCopySerial for copies whose last two
// dimensions are transposed (transposedPair): for each index of the
// leading dimensions, the last two are copied tile by tile (nt as for
// stridedCopySerial).
func transposeTiles[T any](d, s []T, dst, src backend.Array, ds, ss []int, nt bool) {
	shape := dst.Shape
	r := len(shape)
	rows, cols := shape[r-2], shape[r-1]
	dr, dc, sr, sc := ds[r-2], ds[r-1], ss[r-2], ss[r-1]
	idx := make([]int, r-2)
	do, so := dst.Offset, src.Offset
	d32, f32 := any(d).([]float32)
	s32, _ := any(s).([]float32)
	for {
		// float32 by the AVX2 kernel's 8×8 blocks where it applies.
		switch {
		case !f32:
		case dc == 1 && sr == 1 && transposeBlocks32(d32[do:], dr, s32[so:], sc, rows, cols, nt):
			goto next
		case sc == 1 && dr == 1 && transposeBlocks32(d32[do:], dc, s32[so:], sr, cols, rows, nt):
			goto next
		}
		transposeBlock(d, s, do, dr, dc, so, sr, sc, rows, cols)
	next:
		if !nextIndex(idx, shape, ds, ss, &do, &so) {
			return
		}
	}
}

// transposeBlock copies the rows×cols block whose element (i, j) is
// s[so+i·sr+j·sc] to d[do+i·dr+j·dc], the source and destination
// transposed to each other: transposeTiles' loops, called by element
// type (over T of any type the same loops ran at about half the speed:
// 1.6 ns an element of float64 where they take 0.7).
func transposeBlock[T any](d, s []T, do, dr, dc, so, sr, sc, rows, cols int) {
	switch dd := any(d).(type) {
	case []float64:
		transposeBlockOf(dd, any(s).([]float64), do, dr, dc, so, sr, sc, rows, cols)
	case []float32:
		transposeBlockOf(dd, any(s).([]float32), do, dr, dc, so, sr, sc, rows, cols)
	case []int64:
		transposeBlockOf(dd, any(s).([]int64), do, dr, dc, so, sr, sc, rows, cols)
	default:
		transposeBlockOf(d, s, do, dr, dc, so, sr, sc, rows, cols)
	}
}

func transposeBlockOf[T any](d, s []T, do, dr, dc, so, sr, sc, rows, cols int) {
	if rows <= transposeTile && sr == 1 && dc == 1 {
		// A short destination over contiguous columns of the source (the
		// transposed copy of a narrow row-major matrix: a skinny
		// product's Bᵀ): down the source a run of rows elements at a
		// time, scattered to the destination's rows, where the tiles
		// read the source strided.
		// Four source rows at a time, so that each store of a
		// destination row is four adjacent elements under one bounds
		// check.
		j := 0
		for ; j+4 <= cols; j += 4 {
			q := so + j*sc
			s0, s1 := s[q:q+rows], s[q+sc:q+sc+rows]
			s2, s3 := s[q+2*sc:q+2*sc+rows], s[q+3*sc:q+3*sc+rows]
			for i, v := range s0 {
				o := do + i*dr + j
				dd := d[o : o+4]
				dd[0], dd[1], dd[2], dd[3] = v, s1[i], s2[i], s3[i]
			}
		}
		for ; j < cols; j++ {
			q := so + j*sc
			for i, v := range s[q : q+rows] {
				d[do+i*dr+j] = v
			}
		}
		return
	}
	for i0 := 0; i0 < rows; i0 += transposeTile {
		i1 := min(i0+transposeTile, rows)
		for j0 := 0; j0 < cols; j0 += transposeTile {
			j1 := min(j0+transposeTile, cols)
			for i := i0; i < i1; i++ {
				p, q := do+i*dr+j0*dc, so+i*sr+j0*sc
				for range j1 - j0 {
					d[p] = s[q]
					p += dc
					q += sc
				}
			}
		}
	}
}

// fillAny sets every element of d to v, by fillElems for the kernels'
// element types and by doubling copies for the storage-only ones.
func fillAny[T any](d []T, v T) {
	switch dd := any(d).(type) {
	case []float32:
		fillElems(dd, any(v).(float32))
	case []float64:
		fillElems(dd, any(v).(float64))
	case []int64:
		fillElems(dd, any(v).(int64))
	case []bool:
		fillElems(dd, any(v).(bool))
	case []int32:
		fillElems(dd, any(v).(int32))
	case []uint8:
		fillElems(dd, any(v).(uint8))
	case []backend.F16:
		fillElems(dd, any(v).(backend.F16))
	case []backend.BF16:
		fillElems(dd, any(v).(backend.BF16))
	default:
		fillSlice(d, v)
	}
}
