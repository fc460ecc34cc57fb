package cpu

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/peel-ml/peel/backend"
	"pgregory.net/rapid"
)

// TestCopyLayoutsRapid checks Backend.Copy, serial and split across two
// threads, over random layouts (permuted, reversed, broadcast, offset
// sources; contiguous and strided destinations) of sizes on both sides of
// the parallel threshold, element by element against the index formula.
func TestCopyLayoutsRapid(t *testing.T) {
	defer SetThreads(Threads())
	b := New()
	rapid.Check(t, func(t *rapid.T) {
		SetThreads(rapid.IntRange(1, 2).Draw(t, "threads"))
		r := rapid.IntRange(1, 3).Draw(t, "rank")
		shape := make([]int, r)
		n := 1
		for k := range shape {
			shape[k] = rapid.IntRange(1, 90).Draw(t, "dim")
			n *= shape[k]
		}
		if rapid.Bool().Draw(t, "large") {
			shape[0] *= 1 + (4*grain)/n
			n = backend.ShapeSize(shape)
		}
		// The source: a permutation of a contiguous base, with dimensions
		// reversed or broadcast at random, at an offset.
		perm := rapid.Permutation(seq(r)).Draw(t, "perm")
		baseShape := make([]int, r)
		for k, p := range perm {
			baseShape[p] = shape[k]
		}
		off := rapid.IntRange(0, 7).Draw(t, "offset")
		base := make([]float32, off+backend.ShapeSize(baseShape))
		for i := range base {
			base[i] = float32(i)
		}
		bs := backend.Array{Shape: baseShape}.EffectiveStrides()
		strides := make([]int, r)
		offset := off
		for k, p := range perm {
			strides[k] = bs[p]
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 0: // reversed
				offset += (shape[k] - 1) * strides[k]
				strides[k] = -strides[k]
			case 1: // broadcast
				strides[k] = 0
			}
		}
		src := backend.Array{Buf: &f32Buf{s: base}, Shape: shape, Strides: strides, Offset: offset}
		// The destination: contiguous, or the transpose of a contiguous
		// buffer, at an offset.
		doff := rapid.IntRange(0, 5).Draw(t, "dst offset")
		dbuf := make([]float32, doff+n)
		dst := backend.Array{Buf: &f32Buf{s: dbuf}, Shape: shape, Offset: doff}
		if r >= 2 && rapid.Bool().Draw(t, "dst transposed") {
			ts := backend.Array{Shape: []int{shape[1], shape[0]}}.EffectiveStrides()
			st := append([]int{ts[1], ts[0]}, backend.Array{Shape: shape[2:]}.EffectiveStrides()...)
			for k := 2; k < r; k++ {
				st[0] *= shape[k]
				st[1] *= shape[k]
			}
			dst.Strides = st
		}
		b.Copy(dst, src)
		idx := make([]int, r)
		for i := range n {
			rem := i
			for k := r - 1; k >= 0; k-- {
				idx[k] = rem % shape[k]
				rem /= shape[k]
			}
			so, do := src.Offset, dst.Offset
			ds := dst.EffectiveStrides()
			for k := range r {
				so += idx[k] * src.Strides[k]
				do += idx[k] * ds[k]
			}
			if dbuf[do] != base[so] {
				t.Fatalf("element %v = %v, want %v", idx, dbuf[do], base[so])
			}
		}
	})
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// TestAdoptHost: an adopted slice is the buffer itself, not a copy, and
// the allocation limit refuses it as FromHost would.
func TestAdoptHost(t *testing.T) {
	b := New()
	d := []float32{1, 2, 3}
	buf := backend.FromOwnedHost(b, d)
	if got, ok := buf.(*f32Buf); !ok || &got.s[0] != &d[0] {
		t.Fatalf("AdoptHost(%v) = %#v, not the slice itself", d, buf)
	}
	old := backend.SetMaxAllocBytes(8)
	defer backend.SetMaxAllocBytes(old)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "too large") {
			t.Errorf("adopting 12 bytes under an 8-byte limit: %v, want a too-large panic", r)
		}
	}()
	b.AdoptHost(d)
}

// TestCopyElems checks the vector copies (AVX-512 where the CPU has it,
// and AVX2) at sizes around their thresholds (fillNTMin lowered for the
// test) and their 256-byte blocks, for each element size, and that
// overlapping slices are left to Go's copy (memmove semantics).
func TestCopyElems(t *testing.T) {
	defer func(old int) { fillNTMin = old }(fillNTMin)
	fillNTMin = 1 << 20
	old := setCopyWide(false)
	defer setCopyWide(old)
	testCopyElems(t) // AVX2 (or Go's copy without it)
	if haveAVX512 {
		setCopyWide(true)
		testCopyElems(t)
	}
}

func testCopyElems(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 65, copyWideMin/8 - 1, copyWideMin / 8, copyWideMin/8 + 1, copyWideMin/4 + 3, 1<<16 + 5, fillNTMin/8 - 1, fillNTMin / 8, fillNTMin/8 + 1} {
		src := make([]float64, n)
		for i := range src {
			src[i] = float64(i) + 0.5
		}
		d64 := make([]float64, n)
		copyElems(d64, src)
		d32, s32 := make([]float32, n), make([]float32, n)
		for i := range s32 {
			s32[i] = float32(i)
		}
		copyElems(d32, s32)
		db, sb := make([]bool, n), make([]bool, n)
		for i := range sb {
			sb[i] = i%3 == 0
		}
		copyElems(db, sb)
		for i := range n {
			if d64[i] != src[i] || d32[i] != s32[i] || db[i] != sb[i] {
				t.Fatalf("n=%d: element %d differs", n, i)
			}
		}
	}
	// Overlapping, destination after the source: memmove's result.
	buf := make([]float32, 1<<16)
	for i := range buf {
		buf[i] = float32(i)
	}
	copyElems(buf[1:], buf[:len(buf)-1])
	for i := 1; i < len(buf); i++ {
		if buf[i] != float32(i-1) {
			t.Fatalf("overlapping copy: element %d = %v, want %d", i, buf[i], i-1)
		}
	}
}

// TestTransposeBlocks32 checks the vector transpose (16×16 blocks, by
// AVX-512 or AVX2, 8×8 blocks and elements at the edges) against the
// element loop at sizes around its blocks, with strides longer than the
// rows, with and without non-temporal stores (which apply where the
// destination and its rows are 64-byte aligned: the shapes with ld a
// multiple of 16 start there), and that it declines where it does not
// apply.
func TestTransposeBlocks32(t *testing.T) {
	type shape struct{ rows, cols, ld, ls int }
	var shapes []shape
	for _, rows := range []int{1, 7, 8, 9, 15, 16, 17, 24, 33, 100} {
		for _, cols := range []int{1, 7, 8, 9, 16, 24, 31, 40, 64} {
			shapes = append(shapes, shape{rows, cols, cols + 3, rows + 5})
		}
	}
	shapes = append(shapes, shape{48, 32, 48, 50}, shape{40, 33, 48, 40}, shape{1024, 1024, 1024, 1024}, shape{1040, 1027, 1040, 1041})
	for _, sh := range shapes {
		for _, nt := range []bool{false, true} {
			rows, cols, ld, ls := sh.rows, sh.cols, sh.ld, sh.ls
			s := make([]float32, (cols-1)*ls+rows)
			for i := range s {
				s[i] = float32(i)
			}
			// d starts 64-byte aligned, with a guard element before it.
			buf := make([]float32, (rows-1)*ld+cols+32)
			off := 16 - int(uintptr(unsafe.Pointer(&buf[0]))%64)/4
			d := buf[off : off+(rows-1)*ld+cols]
			for i := range buf {
				buf[i] = -1
			}
			if !transposeBlocks32(d, ld, s, ls, rows, cols, nt) {
				if haveSIMD && rows >= 8 && cols >= 8 {
					t.Fatalf("%d×%d: declined", rows, cols)
				}
				continue
			}
			for i := range rows {
				for j := range cols {
					if got, want := d[i*ld+j], s[i+j*ls]; got != want {
						t.Fatalf("%d×%d nt=%v: d[%d,%d] = %v, want %v", rows, cols, nt, i, j, got, want)
					}
				}
				for j := cols; j < ld && i*ld+j < len(d); j++ {
					if d[i*ld+j] != -1 {
						t.Fatalf("%d×%d nt=%v: wrote past row %d's end", rows, cols, nt, i)
					}
				}
			}
			for i, v := range buf {
				if (i < off || i >= off+len(d)) && v != -1 {
					t.Fatalf("%d×%d nt=%v: wrote outside d (element %d)", rows, cols, nt, i-off)
				}
			}
		}
	}
}

// TestFillElems checks the vector fill at lengths and offsets around its
// blocks and its non-temporal threshold, for each element type, and
// that it writes nothing outside its slice.
func TestFillElems(t *testing.T) {
	check := func(name string, n, off int, fill func(lo, hi int), ok func(i int, inside bool) bool) {
		fill(off, off+n)
		for i := range off + n + 40 {
			if !ok(i, i >= off && i < off+n) {
				t.Fatalf("%s: n=%d off=%d: element %d wrong", name, n, off, i)
			}
		}
	}
	// Past fillNTMin the stores are non-temporal: lowered for the test,
	// so that path runs on small slices too.
	defer func(old int) { fillNTMin = old }(fillNTMin)
	fillNTMin = 64 << 10
	for _, n := range []int{0, 1, 1023, 1024, 1025, 4099, 1 << 20, fillNTMin/4 + 7} {
		for _, off := range []int{0, 1, 3, 8} {
			f := make([]float32, off+n+40)
			check("float32", n, off, func(lo, hi int) { fillElems(f[lo:hi], 2.5) },
				func(i int, in bool) bool { return f[i] == 2.5 == in && (in || f[i] == 0) })
			g := make([]float64, off+n+40)
			check("float64", n, off, func(lo, hi int) { fillElems(g[lo:hi], -1.25) },
				func(i int, in bool) bool { return g[i] == -1.25 == in && (in || g[i] == 0) })
			b := make([]bool, off+n+40)
			check("bool", n, off, func(lo, hi int) { fillElems(b[lo:hi], true) },
				func(i int, in bool) bool { return b[i] == in })
			k := make([]int64, off+n+40)
			check("int64", n, off, func(lo, hi int) { fillElems(k[lo:hi], -7) },
				func(i int, in bool) bool { return k[i] == -7 == in && (in || k[i] == 0) })
		}
	}
}
