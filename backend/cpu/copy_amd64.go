//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/peel-ml/peel/backend"
)

// copy512 copies n bytes, a multiple of 256, between non-overlapping
// buffers (copy_amd64.s).
//
//go:noescape
func copy512(dst, src *byte, n int)

// copyWide selects copy512 over copy256 (tests turn it off to check
// both).
var copyWide = haveAVX512

// setCopyWide sets copyWide (where AVX-512 is there) and returns the
// previous setting.
func setCopyWide(on bool) bool {
	old := copyWide
	copyWide = on && haveAVX512
	return old
}

// packPanelsAVX2 packs rows×panels chunks of chunk bytes, a multiple of
// 64 (copy_amd64.s): the chunk of row r and panel q, at src + r·ls +
// q·chunk, goes to dst + q·ldp + r·chunk (ls, ldp in bytes).
//
//go:noescape
func packPanelsAVX2(dst, src *byte, rows, panels, chunk, ls, ldp int)

// copy256 is copy512 on AVX2 (copy_amd64.s).
//
//go:noescape
func copy256(dst, src *byte, n int)

// copyElems copies s into d (of equal length). Copies from 16 KiB to
// below fillNTMin between non-overlapping slices run on AVX-512 loads
// and stores where the CPU has them, else AVX2 ones: Go's copy moves a 4
// MiB block of float32 in L3 at about 100 µs on a Zen 5, the AVX-512
// loop at 70 µs; and from 1 MiB Go's copy stores non-temporally, around
// the caches, which on a Zen 4 with 32 MiB of L3 made a 4 MiB copy on
// the AVX2 path 1.8 times slower than torch's, at one thread and at two.
// From fillNTMin (the caches' share: the copy would evict them anyway)
// Go's copy is faster (16 MiB: 455 µs against 574).
func copyElems[T any](d, s []T) {
	var z T
	n := len(d) * int(unsafe.Sizeof(z))
	if !haveSIMD || n < copyWideMin || n >= fillNTMin || overlap(d, s) {
		copy(d, s)
		return
	}
	wide := n &^ 255
	if copyWide {
		copy512((*byte)(unsafe.Pointer(&d[0])), (*byte)(unsafe.Pointer(&s[0])), wide)
	} else {
		copy256((*byte)(unsafe.Pointer(&d[0])), (*byte)(unsafe.Pointer(&s[0])), wide)
	}
	if k := wide / int(unsafe.Sizeof(z)); k < len(d) {
		copy(d[k:], s[k:])
	}
}

// overlap reports whether two slices of equal length share memory.
func overlap[T any](d, s []T) bool {
	var z T
	n := uintptr(len(d)) * unsafe.Sizeof(z)
	pd, ps := uintptr(unsafe.Pointer(&d[0])), uintptr(unsafe.Pointer(&s[0]))
	return pd < ps+n && ps < pd+n
}

// transpose8x8F32AVX2 transposes n 8×8 blocks of float32 (copy_amd64.s):
// block b's rows are 8 elements at s + 8b + k·ls, its columns are
// written as rows at d + 8b·ld + k·ld (k < 8; strides in elements).
//
//go:noescape
func transpose8x8F32AVX2(d *float32, ld int, s *float32, ls int, n int)

// transpose16x16F32AVX512 transposes n 16×16 blocks of float32 side
// by side (copy_amd64.s): block b's rows are 16 elements at
// s + (16b+k)·ls, its columns are written as the 16 elements at
// d + 16b + k·ld (k < 16; strides in elements); nt makes the stores
// non-temporal, and then d and ld·4 must be multiples of 64.
//
//go:noescape
func transpose16x16F32AVX512(d *float32, ld int, s *float32, ls int, n int, nt bool)

// transpose16x16F32AVX2 is transpose16x16F32AVX512 on AVX2, by way of
// buf, 256 elements of scratch (copy_amd64.s); with nt, d and ld·4 must
// be multiples of 64.
//
//go:noescape
func transpose16x16F32AVX2(d *float32, ld int, s *float32, ls int, n int, nt bool, buf *float32)

// transposeBlocks32 copies the rows×cols block of float32 whose element
// (i, j) is s[i + j·ls] into d[i·ld + j] (a transpose: the source's
// columns contiguous, the destination's rows), and returns false, doing
// nothing, where the vector kernels do not apply (no AVX2, or fewer than
// 8 rows and columns).
//
// It goes by 16×16 blocks, a band of 16 destination rows per call: every
// load and store is of a whole cache line (AVX-512) or of two halves
// back to back (AVX2, through a scratch block), so each line of either
// side is touched once. With nt (the caller's whole copy is of
// fillNTMin bytes or more, and would evict the caches anyway), a
// destination whose start and rows are 64-byte aligned is written by
// non-temporal stores, as copy and fill write theirs: the transpose then
// moves 8 bytes an element, not 12 (the destination's lines are not read
// first). The edges go by 8×8 blocks and elements (transposeBlocks8).
func transposeBlocks32(d []float32, ld int, s []float32, ls, rows, cols int, nt bool) bool {
	if !haveSIMD || rows < 8 || cols < 8 || ld < cols || ls < rows {
		return false
	}
	_ = d[(rows-1)*ld+cols-1]
	_ = s[(cols-1)*ls+rows-1]
	if rows < 16 || cols < 16 {
		transposeBlocks8(d, ld, s, ls, rows, cols)
		return true
	}
	r16, c16 := rows&^15, cols&^15
	nt = nt && ld%16 == 0 && uintptr(unsafe.Pointer(&d[0]))%64 == 0
	if haveAVX512 {
		for i := 0; i < r16; i += 16 {
			transpose16x16F32AVX512(&d[i*ld], ld, &s[i], ls, c16/16, nt)
		}
	} else {
		transposeBands16AVX2(d, ld, s, ls, r16, c16, nt)
	}
	if c16 < cols { // the last columns of the first r16 rows
		transposeBlocks8(d[c16:], ld, s[c16*ls:], ls, r16, cols-c16)
	}
	if r16 < rows { // the last rows
		transposeBlocks8(d[r16*ld:], ld, s[r16:], ls, rows-r16, cols)
	}
	return true
}

// transposeBands16AVX2 runs transpose16x16F32AVX2 over the r16×c16
// block (multiples of 16), a band of 16 destination rows per call, with
// its scratch block here (a stack array Go zeroes once per call, which
// the AVX-512 path does not pay).
func transposeBands16AVX2(d []float32, ld int, s []float32, ls, r16, c16 int, nt bool) {
	var buf [256]float32
	for i := 0; i < r16; i += 16 {
		transpose16x16F32AVX2(&d[i*ld], ld, &s[i], ls, c16/16, nt, &buf[0])
	}
}

// transposeBlocks8 is transposeBlocks32 by the AVX2 kernel's 8×8
// blocks, for any rows and cols (the element loop does what the blocks
// leave). The blocks go in 16×16 tiles, bands of 16
// destination rows in turn, a tile's blocks in the order that finishes
// each destination line (two blocks side by side) and each source line
// (two blocks one above the other) soonest: no line is left half-done
// while the band moves on (at 4 KiB strides such lines do not survive in
// L2 until the next band, and each would be moved twice).
func transposeBlocks8(d []float32, ld int, s []float32, ls, rows, cols int) {
	r8, c8 := rows&^7, cols&^7
	r16, c16 := rows&^15, cols&^15
	block := func(i, j, n int) {
		transpose8x8F32AVX2(&d[i*ld+j], ld, &s[j*ls+i], ls, n)
	}
	for i := 0; i < r16; i += 16 {
		for j := 0; j < c16; j += 16 {
			block(i, j, 1)
			block(i, j+8, 1)
			block(i+8, j, 1)
			block(i+8, j+8, 1)
		}
		if c16 < c8 {
			block(i, c16, 2)
		}
	}
	if r16 < r8 {
		for j := 0; j < c8; j += 8 {
			block(r16, j, 1)
		}
	}
	// The edges: the last columns of every row, the last rows.
	for i := range rows {
		j0 := c8
		if i >= r8 {
			j0 = 0
		}
		for j := j0; j < cols; j++ {
			d[i*ld+j] = s[i+j*ls]
		}
	}
}

// fillBytesAVX2 fills n bytes (a multiple of 128) at d with the 32-byte
// pattern at pat (copy_amd64.s); nt makes the stores non-temporal, and
// then d must be 32-byte aligned.
//
//go:noescape
func fillBytesAVX2(d *byte, n int, pat *byte, nt bool)

// fillElems sets every element of d to v: from 4 KiB on, of a type of 1,
// 2, 4 or 8 bytes without pointers (the kernels' element types), by the
// AVX2 store loop; otherwise by doubling copies.
func fillElems[T bool | int64 | float32 | float64 | int32 | uint8 | backend.F16 | backend.BF16](d []T, v T) {
	var z T
	size := int(unsafe.Sizeof(z))
	n := len(d) * size
	if !haveSIMD || n < 4<<10 {
		fillSlice(d, v)
		return
	}
	// The pattern: 32 bytes of v repeated.
	var pat [32]T
	for i := range 32 / size {
		pat[i] = v
	}
	p := unsafe.Pointer(&d[0])
	head := 0
	nt := n >= fillNTMin
	if nt {
		// Non-temporal stores need 32-byte alignment: the elements
		// before the first aligned one are stored by Go.
		if mis := int(uintptr(p) & 31); mis != 0 {
			head = (32 - mis) / size
			if (32-mis)%size != 0 {
				nt, head = false, 0 // elements not aligned to their size
			}
		}
	}
	for i := range head {
		d[i] = v
	}
	body := (n - head*size) &^ 127
	// In 1 MiB pieces, so the goroutine stays preemptible.
	for off := 0; off < body; off += 1 << 20 {
		fillBytesAVX2((*byte)(unsafe.Add(p, head*size+off)), min(1<<20, body-off), (*byte)(unsafe.Pointer(&pat[0])), nt)
	}
	for i := head + body/size; i < len(d); i++ {
		d[i] = v
	}
}
