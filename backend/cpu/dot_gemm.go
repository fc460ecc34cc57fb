package cpu

import (
	"sync"
	"unsafe"
)

// Packed GEMM: where the CPU has AVX2 and FMA (haveSIMD), dot_general's
// float GEMMs (M and N both above 1) run on peel's own micro-kernels
// rather than gonum's (packedGEMM; -tags openblas keeps OpenBLAS's).
// Each product is split, BLIS style, into column blocks of B (NC),
// those into blocks of the contracting dimension (KC), and those into
// row blocks of A (MC), sized from the CPU's caches (gemmBlocks). The block of B is packed into panels of NR
// columns (16 float32 or 8 float64 with AVX2, 32 or 16 with AVX-512), the
// block of A into panels of MR rows (6 with AVX2, 8 with AVX-512: the
// registers the accumulators take), both zero-padded at the edges, and a
// micro-kernel computes each MR×NR tile of C from one A panel and one B
// panel held in cache (dot_gemm_amd64.s, dot_gemm512_amd64.s). The kernel takes the panels' strides, so B with
// contiguous rows and A with contiguous columns are read in place
// instead (but for a narrow edge panel, and for strides that are
// multiples of 2 KiB, which alias in the L1 cache): packing costs a
// tenth of a product as small as an MLP layer's, whose panels are reused
// only a few times. A large product splits into row ranges, one
// independent product per worker (gemmRows); a shorter one splits its
// tiles across workers; batch elements small enough to run in
// parallel (forBatches) each run serially. Packing reads the operands
// through their strides, so any layout dotPlan accepts works without a
// copy. Each result element is the sum of its products in order of the
// contracting index, in FMA, one KC block at a time: the usual GEMM
// error bound.

const (
	// gemmMaxMR is the most rows of a micro-kernel's tile (gemmKernel.mr).
	gemmMaxMR = 8
	// gemmSplitRows is the fewest rows per worker for gemmRows to split
	// a product whose B must be packed (each worker packs B too).
	gemmSplitRows = 192
	// gemmFewRows is the most rows of a product whose B is read in place
	// whatever its stride: each B panel serves at most 4 tiles of 6 rows
	// (3 of 8), too few to repay its packing.
	gemmFewRows = 24
)

// usePacked reports whether p's GEMMs (float, not small, M and N above
// 1) run on the packed micro-kernels; they read any operand layout.
func usePacked(p *dotPlan) bool { return packedGEMM && haveSIMD && p.M > 1 && p.N > 1 }

// inPlaceStride reports whether a panel whose rows (or columns) are
// stride elements of T apart may be read in place: not when the stride
// is a multiple of 2 KiB, whose rows fall into a few sets of the L1 cache
// and evict one another (float64 GEMMs with 256 or 512 columns run at
// half speed so).
func inPlaceStride[T float32 | float64](stride int) bool {
	var z T
	return stride*int(unsafe.Sizeof(z))%2048 != 0
}

// inPlaceRows reports whether a row-major A whose rows are stride
// elements of T apart may be read in place by the row micro-kernels: not
// when the stride is a multiple of 4 KiB. The kernel then reads six
// rows whose lines share an L1 set at every step, beside the C tile's,
// which share another: 512² float64 ran at 70 GFLOPS against 81 with A
// packed, and 1024² float32 at 144 against 181 (AVX-512, one thread;
// equal with the AVX2 kernels); at 2 KiB and 3 KiB, in place is as fast
// or faster.
func inPlaceRows[T float32 | float64](stride int) bool {
	var z T
	return stride*int(unsafe.Sizeof(z))%4096 != 0
}

// gemmBufs are the packing buffers of one running GEMM.
type gemmBufs[T float32 | float64] struct{ a, b, t []T }

var (
	gemmPool32 = sync.Pool{New: func() any { return new(gemmBufs[float32]) }}
	gemmPool64 = sync.Pool{New: func() any { return new(gemmBufs[float64]) }}
)

// grow returns s resliced to n elements, reallocated if too short.
func grow[T float32 | float64](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// gemmPacked computes batch element bi of p into c (M×N, row-major) with
// the micro-kernels of k; par lets the tiles run in parallel.
func gemmPacked[T float32 | float64](p *dotPlan, bi int, c, a, b []T, k gemmKernel[T], bufs *gemmBufs[T], par bool) {
	M, N, K := p.M, p.N, p.K
	mr, nr := k.mr, k.nr
	lhs, rhs := &p.lhs, &p.rhs
	lo, ro := lhs.off(bi), rhs.off(bi)
	var z T
	gemmKC, gemmNC, gemmMC := gemmBlocks(mr, nr, int(unsafe.Sizeof(z)), cacheL1, cacheL2)
	for jc := 0; jc < N; jc += gemmNC {
		nb := min(gemmNC, N-jc)
		np := (nb + nr - 1) / nr
		// Contracting blocks of equal size (at most gemmKC): a short last
		// block would pay a tile's load and store of C for a few products.
		kc := (K + (K+gemmKC-1)/gemmKC - 1) / max(1, (K+gemmKC-1)/gemmKC)
		for pc := 0; pc < K; pc += kc {
			kb := min(kc, K-pc)
			boff := ro + pc*rhs.cs + jc*rhs.fs
			// B with contiguous rows is read in place, but for a last
			// panel narrower than nr; other layouts are packed. At
			// strides that alias in L1 too when few row panels reuse
			// each B panel: packing B cost an 8×512·512×512 product
			// three times its arithmetic.
			direct := rhs.fs == 1 && (inPlaceStride[T](rhs.cs) || M <= gemmFewRows)
			if direct {
				full := nb / nr
				bufs.b = grow(bufs.b, nr*kb)
				if full < np {
					packB(bufs.b, b, boff+full*nr, rhs.cs, 1, kb, nb-full*nr, nr)
				}
			} else {
				bufs.b = grow(bufs.b, np*nr*kb)
				packBPar(par && (M+mr-1)/mr*np >= parPackTiles, bufs.b, b, boff, rhs.cs, rhs.fs, kb, nb, nr)
			}
			for ic := 0; ic < M; ic += gemmMC {
				mb := min(gemmMC, M-ic)
				mp := (mb + mr - 1) / mr
				aoff := lo + ic*lhs.fs + pc*lhs.cs
				g := gemmBlock[T]{c: c[ic*N:], M: mb, N: N, jc: jc, kb: kb, mp: mp, add: pc > 0 || p.acc, k: k}
				if kb <= tileRowOrderK && kb*nb*int(unsafe.Sizeof(z)) <= cacheL2/2 {
					g.np = np
				}
				// Likewise A with contiguous columns, but for a last
				// panel of fewer than mr rows.
				switch {
				case lhs.fs == 1 && inPlaceStride[T](lhs.cs):
					full := mb / mr
					bufs.a = grow(bufs.a, mr*kb)
					if full < mp {
						packA(bufs.a, a, aoff+full*mr, 1, lhs.cs, mb-full*mr, kb, mr)
					}
					g.asrc, g.lda = a[aoff:], lhs.cs
				case lhs.cs == 1 && gemmRowsA && inPlaceRows[T](lhs.fs):
					// A with contiguous rows (row-major, the usual
					// layout of activations) is read in place too, by
					// the micro-kernels that broadcast from mr rows.
					full := mb / mr
					bufs.a = grow(bufs.a, mr*kb)
					if full < mp {
						packA(bufs.a, a, aoff+full*mr*lhs.fs, lhs.fs, 1, mb-full*mr, kb, mr)
					}
					g.asrc, g.lda, g.arows = a[aoff:], lhs.fs, true
				default:
					bufs.a = grow(bufs.a, mp*mr*kb)
					packAPar(par && mp*np >= parPackTiles, bufs.a, a, aoff, lhs.fs, lhs.cs, mb, kb, mr)
				}
				g.ap, g.bp = bufs.a, bufs.b
				if direct {
					g.bsrc, g.ldb = b[boff:], rhs.cs
				}
				tiles, cost := mp*np, kb*mr*nr/8
				if !par || serial(tiles, cost) {
					g.tiles(0, tiles)
				} else {
					// Only this copy escapes (to the workers).
					gp := g
					parallelFor(tiles, cost, gp.tiles)
				}
			}
		}
	}
}

// tileRowOrderK is the longest contracting block whose tiles run row
// panel by row panel, each row of C written left to right across the
// tiles, rather than column panel by column panel (which keeps a B panel
// in L1 from tile to tile). With so few products per tile, storing the
// tile is much of its work: down a column panel the stores land 6 rows
// apart, each on lines not yet in cache, along a row they stream.
// 512×16·16×512 float32 took 112–123 µs against 134–332 (best of 20, four
// rounds alternated, one thread, Zen 4), 1024×16·16×1024 427–628 against
// 603–904; at k = 64 the two orders measured the same.
const tileRowOrderK = 32

// packCost is the cost (in parallelFor's units, an add per element) of
// packing one element: a strided gather and a store. parPackTiles is
// the fewest tiles a packed panel serves for its packing to be split
// across workers: a block of few tiles (a narrow product such as
// 128×256×10) is over before a second worker pays for its wake-up.
const (
	packCost     = 4
	parPackTiles = 128
)

// packAPar is packA, split across workers by panels when par is set and
// the block is large enough: packing is a fifth of a large GEMM's time on
// one thread, so a serial pack bounds its two-thread speed-up near 1.7×.
func packAPar[T float32 | float64](par bool, ap, a []T, off, rs, cs, m, kb, mr int) {
	panels := (m + mr - 1) / mr
	cost := mr * kb * packCost
	if !par || serial(panels, cost) {
		packA(ap, a, off, rs, cs, m, kb, mr)
		return
	}
	parallelFor(panels, cost, func(lo, hi int) {
		packA(ap[lo*mr*kb:], a, off+lo*mr*rs, rs, cs, min(m, hi*mr)-lo*mr, kb, mr)
	})
}

// packBPar is packB, split across workers by panels like packAPar.
func packBPar[T float32 | float64](par bool, bp, b []T, off, rs, cs, kb, nb, nr int) {
	panels := (nb + nr - 1) / nr
	cost := nr * kb * packCost
	if !par || serial(panels, cost) {
		packB(bp, b, off, rs, cs, kb, nb, nr)
		return
	}
	parallelFor(panels, cost, func(lo, hi int) {
		packB(bp[lo*nr*kb:], b, off+lo*nr*cs, rs, cs, kb, min(nb, hi*nr)-lo*nr, nr)
	})
}

// gemmBlock is one packed block of a GEMM: the tiles of result columns
// [jc, jc+nb) of the M rows of c from kb contracting indices. B is
// packed in bp, or, when bsrc is set, read in place from bsrc (rows ldb
// apart) but for a narrow last panel, packed at the start of bp; A is
// packed in ap, or read in place from asrc (columns lda apart) but for a
// short last panel, packed at the start of ap.
type gemmBlock[T float32 | float64] struct {
	ap, bp, c, asrc, bsrc []T
	M, N, jc, kb, mp      int
	lda, ldb              int
	add                   bool
	k                     gemmKernel[T]
	// arows reads asrc as rows lda apart (A row-major) instead of
	// columns.
	arows bool
	// np, when set, is the number of column panels, and the tiles are
	// numbered row panel by row panel instead (tileRowOrderK).
	np int
}

// tiles computes tiles [lo, hi), numbered column panel by column panel so
// that consecutive tiles share their B panel, or, when np is set (a short
// contracting block: tileRowOrderK), row panel by row panel so that C's
// rows are stored left to right. A full tile calls its micro-kernel
// here (run), an edge tile goes through edge; the tiles' panel indices
// step from the first's (a division and a call fewer per tile: with k =
// 16 the Go code around the kernel was a seventh of a product's time).
func (g *gemmBlock[T]) tiles(lo, hi int) {
	kb, mr, nr := g.kb, g.k.mr, g.k.nr
	jp, ip := lo/g.mp, lo%g.mp
	if g.np > 0 {
		ip, jp = lo/g.np, lo%g.np
	}
	for range hi - lo {
		i0, j0 := ip*mr, g.jc+jp*nr
		bp, ldb := g.bp, nr
		switch {
		case g.bsrc == nil:
			bp = g.bp[jp*nr*kb:]
		case j0+nr <= g.N:
			bp, ldb = g.bsrc[jp*nr:], g.ldb
		}
		ap, lda, arows := g.ap, mr, false
		switch {
		case g.asrc == nil:
			ap = g.ap[ip*mr*kb:]
		case i0+mr > g.M:
		case g.arows:
			ap, lda, arows = g.asrc[i0*g.lda:], g.lda, true
		default:
			ap, lda = g.asrc[i0:], g.lda
		}
		c := g.c[i0*g.N+j0:]
		if i0+mr <= g.M && j0+nr <= g.N {
			// The operands' last elements in range: the kernel reads
			// and writes unchecked.
			_ = bp[(kb-1)*ldb+nr-1]
			_ = c[(mr-1)*g.N+nr-1]
			if arows {
				_ = ap[(mr-1)*lda+kb-1]
			} else {
				_ = ap[(kb-1)*lda+mr-1]
			}
			g.k.run(arows, kb, &ap[0], &bp[0], &c[0], g.N, lda, ldb, g.add)
		} else {
			g.k.edge(kb, ap, lda, arows, bp, ldb, c, g.N, min(mr, g.M-i0), min(nr, g.N-j0), g.add)
		}
		if g.np > 0 {
			if jp++; jp == g.np {
				jp, ip = 0, ip+1
			}
		} else if ip++; ip == g.mp {
			ip, jp = 0, jp+1
		}
	}
}

// packA packs the m×kb block of A whose element (i, p) is a[off + i*rs +
// p*cs] into panels of mr rows (6 or 8): panel q holds rows mr·q…mr·q+mr-1,
// column by column, rows past m zero. Full panels of the two usual
// layouts (rows contiguous, cs = 1, or columns contiguous, rs = 1) take
// loops without per-element index arithmetic; packing is a tenth of an
// MLP step's time otherwise.
func packA[T float32 | float64](ap, a []T, off, rs, cs, m, kb, mr int) {
	for i0 := 0; i0 < m; i0 += mr {
		panel := ap[i0*kb : (i0+mr)*kb]
		rows := min(mr, m-i0)
		src := off + i0*rs
		switch {
		case rows == 6 && mr == 6 && cs == 1:
			packRows6(panel, a[src:], rs, kb)
		case rows == 8 && mr == 8 && cs == 1:
			packRows8(panel, a[src:], rs, kb)
		case rows == mr && rs == 1 && mr == 6:
			for p := range kb {
				d, s := panel[p*6:p*6+6], a[src+p*cs:src+p*cs+6]
				d[0], d[1], d[2], d[3], d[4], d[5] = s[0], s[1], s[2], s[3], s[4], s[5]
			}
		case rows == mr && rs == 1 && mr == 8:
			for p := range kb {
				d, s := panel[p*8:p*8+8], a[src+p*cs:src+p*cs+8]
				d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7] = s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
			}
		case cs == 1:
			// A short last panel of contiguous rows (the 4 rows past 60
			// of each 64-row product of attention): each row along the
			// panel, where the loop below gathered element by element
			// (a twentieth of a GPT step).
			clear(panel)
			for r := range rows {
				row := a[src+r*rs : src+r*rs+kb]
				for p, v := range row {
					panel[p*mr+r] = v
				}
			}
		case rs == 1:
			for p := range kb {
				d := panel[p*mr : p*mr+mr]
				//lint:ignore S1001 fewer than 8 elements: copy's call to memmove was most of this loop's time in a GPT step's profile
				for r, v := range a[src+p*cs : src+p*cs+rows] {
					d[r] = v
				}
				clear(d[rows:])
			}
		default:
			for p := range kb {
				dst := panel[p*mr : p*mr+mr]
				for r := range rows {
					dst[r] = a[src+p*cs+r*rs]
				}
				clear(dst[rows:])
			}
		}
	}
}

// packRows6 packs six rows of kb contiguous elements, rs apart from a[0],
// column by column into panel.
func packRows6[T float32 | float64](panel, a []T, rs, kb int) {
	r0 := a[:kb]
	r1, r2, r3 := a[rs:rs+kb], a[2*rs:2*rs+kb], a[3*rs:3*rs+kb]
	r4, r5 := a[4*rs:4*rs+kb], a[5*rs:5*rs+kb]
	panel = panel[:6*kb]
	for p := range r0 {
		d := panel[p*6 : p*6+6]
		d[0], d[1], d[2], d[3], d[4], d[5] = r0[p], r1[p], r2[p], r3[p], r4[p], r5[p]
	}
}

// packRows8 is packRows6 for eight rows.
func packRows8[T float32 | float64](panel, a []T, rs, kb int) {
	r0 := a[:kb]
	r1, r2, r3 := a[rs:rs+kb], a[2*rs:2*rs+kb], a[3*rs:3*rs+kb]
	r4, r5 := a[4*rs:4*rs+kb], a[5*rs:5*rs+kb]
	r6, r7 := a[6*rs:6*rs+kb], a[7*rs:7*rs+kb]
	panel = panel[:8*kb]
	for p := range r0 {
		d := panel[p*8 : p*8+8]
		d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7] = r0[p], r1[p], r2[p], r3[p], r4[p], r5[p], r6[p], r7[p]
	}
}

// packB packs the kb×nb block of B whose element (p, j) is b[off + p*rs +
// j*cs] into panels of nr columns: panel q holds columns nr·q…nr·q+nr-1,
// row by row, columns past nb zero.
func packB[T float32 | float64](bp, b []T, off, rs, cs, kb, nb, nr int) {
	if cs == 1 {
		packBRows(bp, b, off, rs, kb, nb, nr)
		return
	}
	for j0 := 0; j0 < nb; j0 += nr {
		panel := bp[j0*kb : (j0+nr)*kb]
		cols := min(nr, nb-j0)
		if rs == 1 && cols == nr && cs != 1 {
			// Columns of B contiguous (a transposed operand, such as
			// the Kᵀ of attention or the Wᵀ of a backward pass): float32
			// by the vector transpose's 16×16 blocks; otherwise read
			// each column sequentially and scatter it into the panel,
			// which stays in L1, rather than gather nr strided elements
			// per row.
			if p32, ok := any(panel).([]float32); ok && transposeBlocks32(p32, nr, any(b).([]float32)[off+j0*cs:], cs, kb, nr, false) {
				continue
			}
			for j := 0; j < nr; j += 4 {
				o := off + (j0+j)*cs
				c0 := b[o : o+kb]
				c1, c2, c3 := b[o+cs:o+cs+kb], b[o+2*cs:o+2*cs+kb], b[o+3*cs:o+3*cs+kb]
				for p, v := range c0 {
					d := panel[p*nr+j : p*nr+j+4]
					d[0], d[1], d[2], d[3] = v, c1[p], c2[p], c3[p]
				}
			}
			continue
		}
		for p := range kb {
			dst := panel[p*nr : p*nr+nr]
			src := off + p*rs + j0*cs
			if cs == 1 || cols == 1 {
				copy(dst[:cols], b[src:src+cols])
			} else {
				for j := range cols {
					dst[j] = b[src+j*cs]
				}
			}
			clear(dst[cols:])
		}
	}
}

// packBGroup is the bytes of each row of B that packBRows copies, down
// all kb rows, before the next group of columns: a few panels at a
// time, so the loads stream along B's rows and the stores along a few
// panels. One panel at a time (64 or 128 bytes a row, rows 2 or 4 KiB
// apart) read B at 1.2–1.5 GB/s when it was in L3, and whole rows at a
// time wrote to 64 panels at once: packing a 512² float64 B, 2 MiB
// out of L3, took 1.4 ms by panels, 145–175 µs by rows with a copy per
// panel, 70–80 µs by groups of 512 bytes in one assembly loop (Zen 4).
const packBGroup = 512

// packBRows is packB for B with contiguous rows (cs = 1).
func packBRows[T float32 | float64](bp, b []T, off, rs, kb, nb, nr int) {
	var z T
	sz := int(unsafe.Sizeof(z))
	g := max(1, packBGroup/(nr*sz)) * nr
	full := nb / nr * nr
	for g0 := 0; g0 < full; g0 += g {
		g1 := min(g0+g, full)
		if haveSIMD && nr*sz%64 == 0 && kb > 0 {
			// The loop's first and last source rows, and its last
			// panel, in range (the rows between lie between them).
			_, _ = b[off+g1-1], b[off+(kb-1)*rs+g0]
			_, _ = b[off+(kb-1)*rs+g1-1], bp[g1*kb-1]
			packPanelsAVX2((*byte)(unsafe.Pointer(&bp[g0*kb])), (*byte)(unsafe.Pointer(&b[off+g0])), kb, (g1-g0)/nr, nr*sz, rs*sz, nr*kb*sz)
			continue
		}
		for p := range kb {
			row := b[off+p*rs : off+p*rs+g1]
			for j0 := g0; j0 < g1; j0 += nr {
				copy(bp[j0*kb+p*nr:j0*kb+p*nr+nr], row[j0:j0+nr])
			}
		}
	}
	if full < nb {
		for p := range kb {
			dst := bp[full*kb+p*nr : full*kb+p*nr+nr]
			copy(dst, b[off+p*rs+full:off+p*rs+nb])
			clear(dst[nb-full:])
		}
	}
}

// mergeTile stores (or with add, adds) the rows×cols corner of the tile
// t (rows tld apart) into c (rows ldc apart).
func mergeTile[T float32 | float64](c []T, ldc int, t []T, tld, rows, cols int, add bool) {
	for r := range rows {
		dst, src := c[r*ldc:r*ldc+cols], t[r*tld:r*tld+cols]
		if add {
			for j, v := range src {
				dst[j] += v
			}
		} else {
			copy(dst, src)
		}
	}
}

// gemmWide selects the AVX-512 micro-kernels (8×32 float32, 8×16
// float64 tiles) over the AVX2 ones where the CPU has them; tests turn
// it off to check both.
var gemmWide = haveAVX512

// gemmKernel is a pair of micro-kernels, their tile mr rows by nr
// columns: wide picks the AVX-512 ones (8×32 float32, 8×16 float64: 16
// accumulators of AVX-512's 32 registers) over the AVX2 ones (6×16 and
// 6×8: 12 of AVX2's 16). Eight rows fit the row counts of models, powers
// of two (a batch of 32, a sequence of 128), which leave a short edge
// panel for six: 32×128·128×128 float32 took as long as
// 36×128·128×128 with 6-row tiles.
type gemmKernel[T float32 | float64] struct {
	mr, nr int
	wide   bool
}

var (
	tile32  = gemmKernel[float32]{mr: 6, nr: 16}
	tile64  = gemmKernel[float64]{mr: 6, nr: 8}
	tile32w = gemmKernel[float32]{mr: 8, nr: 32, wide: true}
	tile64w = gemmKernel[float64]{mr: 8, nr: 16, wide: true}
)

// run computes the mr×nr tile at c (rows ldc apart; added to with add)
// from kb columns of mr rows at a (lda apart; with arows, mr rows of kb
// elements, lda apart, read in place) and kb rows of nr elements at b
// (ldb apart). The assembly kernels are called directly, by a switch,
// not through function values: escape analysis then keeps edge's tile
// on the stack.
func (k gemmKernel[T]) run(arows bool, kb int, a, b, c *T, ldc, lda, ldb int, add bool) {
	switch a := any(a).(type) {
	case *float32:
		b, c := any(b).(*float32), any(c).(*float32)
		switch {
		case k.wide && arows:
			sgemm8x32AVX512Rows(kb, a, b, c, ldc, lda, ldb, add)
		case k.wide:
			sgemm8x32AVX512(kb, a, b, c, ldc, lda, ldb, add)
		case arows:
			sgemm6x16AVX2Rows(kb, a, b, c, ldc, lda, ldb, add)
		default:
			sgemm6x16AVX2(kb, a, b, c, ldc, lda, ldb, add)
		}
	case *float64:
		b, c := any(b).(*float64), any(c).(*float64)
		switch {
		case k.wide && arows:
			dgemm8x16AVX512Rows(kb, a, b, c, ldc, lda, ldb, add)
		case k.wide:
			dgemm8x16AVX512(kb, a, b, c, ldc, lda, ldb, add)
		case arows:
			dgemm6x8AVX2Rows(kb, a, b, c, ldc, lda, ldb, add)
		default:
			dgemm6x8AVX2(kb, a, b, c, ldc, lda, ldb, add)
		}
	}
}

// edge computes a tile at the product's edge, of which rows×cols
// elements are kept: the whole tile into a buffer on the stack, merged
// into c. Operands as run's, as slices.
func (k gemmKernel[T]) edge(kb int, ap []T, lda int, arows bool, bp []T, ldb int, c []T, ldc, rows, cols int, add bool) {
	if arows {
		_ = ap[(k.mr-1)*lda+kb-1]
	} else {
		_ = ap[(kb-1)*lda+k.mr-1]
	}
	_ = bp[(kb-1)*ldb+k.nr-1]
	var buf [gemmMaxMR * 32]T // the largest tile
	t := buf[:k.mr*k.nr]
	k.run(arows, kb, &ap[0], &bp[0], &t[0], k.nr, lda, ldb, false)
	mergeTile(c, ldc, t, k.nr, rows, cols, add)
}

// gemmRowsA turns on the micro-kernels that read a row-major A in place
// (tests turn it off to check the packed path on the same products).
var gemmRowsA = true

// gemm32 and gemm64 compute batch element bi of p into c with the packed
// GEMM: with the AVX-512 micro-kernels when there are and the product has
// at least one full panel of their width (narrower products pad less on
// the AVX2 ones); a skinny product on one thread by inner products
// (gemmSkinny). The path depends on the product's shape and the thread
// count, never on its operands' layouts, so a product gives the same
// bits however its operands are laid out (TestProductLayoutsSameBits;
// gonum's BLAS and OpenBLAS, used without the packed GEMM, read
// transposed operands through their flags and promise no such thing): a
// compiled program that copied an operand, or reads a broadcast one in
// place, agrees with the equation evaluated alone. (A narrow product
// with an A not in rows was computed transposed once, Cᵀ = Bᵀ·Aᵀ, which
// summed in another order than the same product with a row-major A. It
// is again where that order is the same, one contracting block:
// narrowTransposed32.)
func gemm32(p *dotPlan, bi int, c, a, b []float32, par bool) {
	bufs := gemmPool32.Get().(*gemmBufs[float32])
	switch {
	case skinny(p, 16):
		gemmSkinny(p, bi, c, a, b, bufs, par)
	case narrowTransposed32(p):
		gemmTransposed(p, bi, c, a, b, gemmKernelFor32(p.M), bufs, &gemmPool32, par)
	default:
		gemmRows(p, bi, c, a, b, gemmKernelFor32(p.N), bufs, &gemmPool32, par)
	}
	gemmPool32.Put(bufs)
}

// narrowTransposed32 reports whether a float32 product runs transposed
// (gemmTransposed): one of at most 16 columns, which the AVX2 kernels'
// panels of 6 rows by 16 columns take where the AVX-512 ones' 32 columns
// would be half empty, of at least 32 rows, which fill the AVX-512
// panels once transposed, and whose A has its rows' elements adjacent
// (A read transposed: Aᵀ is then B's rows, read in place; a row-major A
// would be packed transposed, which cost more than the wider panels
// saved: 66 → 52 GFLOPS on an attention head's att·v). An attention
// head's gradient attᵀ·dO (64×64 by 64×16) ran at 61 GFLOPS on the
// six-row kernels, 71 transposed. The choice reads A's layout, which the
// path may do only where both give the same bits: K within one
// contracting block of either kernel (gemmBlocks), so that each element
// is one sum in the order of k either way.
func narrowTransposed32(p *dotPlan) bool {
	if !gemmWide || p.acc || p.N > tile32.nr || p.M < tile32w.nr || p.lhs.fs != 1 || !inPlaceStride[float32](p.lhs.cs) {
		return false
	}
	kn, _, _ := gemmBlocks(tile32.mr, tile32.nr, 4, cacheL1, cacheL2)
	kw, _, _ := gemmBlocks(tile32w.mr, tile32w.nr, 4, cacheL1, cacheL2)
	return p.K <= min(kn, kw)
}

// gemmTransposed computes batch element bi of p as Cᵀ = Bᵀ·Aᵀ, the
// operands' roles swapped (a dotOperand's strides are its free and
// contracting dimensions', whichever side it is on), into a scratch
// N×M block with the micro-kernels of k, then transposes the block into
// c. Each element is the same sum of the same products in the same order
// of the contracting index (a·b = b·a exactly), so it has the bits the
// untransposed product with the same contracting blocks gives (which is
// why narrowTransposed32 may look at A's layout).
func gemmTransposed[T float32 | float64](p *dotPlan, bi int, c, a, b []T, k gemmKernel[T], bufs *gemmBufs[T], pool *sync.Pool, par bool) {
	q := *p
	q.M, q.N = p.N, p.M
	q.lhs, q.rhs = p.rhs, p.lhs
	t := grow(bufs.t, p.M*p.N)
	bufs.t = t
	gemmRows(&q, bi, t, b, a, k, bufs, pool, par)
	if tt, ok := any(t).([]float32); ok && transposeBlocks32(any(c).([]float32), p.N, tt, p.M, p.M, p.N, false) {
		return
	}
	transposeBlockOf(c, t, 0, p.N, 1, 0, 1, p.M, p.M, p.N)
}

func gemm64(p *dotPlan, bi int, c, a, b []float64, par bool) {
	bufs := gemmPool64.Get().(*gemmBufs[float64])
	if skinny(p, 8) {
		gemmSkinny(p, bi, c, a, b, bufs, par)
	} else {
		gemmRows(p, bi, c, a, b, gemmKernelFor64(p.N), bufs, &gemmPool64, par)
	}
	gemmPool64.Put(bufs)
}

// gemmKernelFor32 and gemmKernelFor64 are the micro-kernels of a packed
// product of n columns: the AVX-512 ones where the CPU has them and n
// fills at least one of their panels.
func gemmKernelFor32(n int) gemmKernel[float32] {
	if gemmWide && n >= tile32w.nr {
		return tile32w
	}
	return tile32
}

func gemmKernelFor64(n int) gemmKernel[float64] {
	if gemmWide && n >= tile64w.nr {
		return tile64w
	}
	return tile64
}

// gemmTileRows returns the rows of the tiles of a packed product of n
// columns of T (not a skinny one): callers that lay out A for it pad its
// rows to a multiple, so that no A panel is short.
func gemmTileRows[T float32 | float64](n int) int {
	var z T
	if _, ok := any(z).(float32); ok {
		return gemmKernelFor32(n).mr
	}
	return gemmKernelFor64(n).mr
}

// gemmRows is gemmPacked, run on the workers as independent products of
// contiguous row ranges when the product is large and tall enough: each
// worker packs its own rows of A and, where B is packed rather than read
// in place, its own copy of B's blocks. Splitting the tiles of every
// block instead joins the workers twice per block (after packing, after
// the tiles: 24 times for a 512² product), which held two threads to
// 1.6× one thread's speed; independent row ranges run as two separate
// products do (1.85×). B packed twice costs a block's packing per extra
// worker, paid back only by enough rows: at least gemmSplitRows per
// worker.
func gemmRows[T float32 | float64](p *dotPlan, bi int, c, a, b []T, k gemmKernel[T], bufs *gemmBufs[T], pool *sync.Pool, par bool) {
	w := 1
	if par && !serial(p.M*p.N, p.K/4) {
		w = min(Threads(), p.M/(2*k.mr))
		if !(p.rhs.fs == 1 && inPlaceStride[T](p.rhs.cs)) {
			w = min(w, p.M/gemmSplitRows)
		}
	}
	if w < 2 {
		gemmPacked(p, bi, c, a, b, k, bufs, par)
		return
	}
	// Row ranges of whole tiles, as equal as tiles allow.
	tiles := (p.M + k.mr - 1) / k.mr
	fs := p.lhs.fs
	runChunks(w, func(i int) {
		r0 := tiles * i / w * k.mr
		r1 := min(p.M, tiles*(i+1)/w*k.mr)
		if r1 <= r0 {
			return
		}
		q := *p
		q.M = r1 - r0
		bw := pool.Get().(*gemmBufs[T])
		gemmPacked(&q, bi, c[r0*p.N:], a[r0*fs:], b, k, bw, false)
		pool.Put(bw)
	})
}
