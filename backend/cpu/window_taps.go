package cpu

import (
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/peel-ml/peel/backend"
)

// Convolution by taps. A convolution with unit strides, no lhs dilation
// and no negative padding is computed without packing its windows
// (im2col writes Cg·k elements per output position, and at 3×3 and 64
// features that cost as much as the product). The lhs of each (batch
// element, group) unit is copied once into a zero-padded buffer, whose
// planes (one per input feature) are a pitch apart that does not alias
// in L1. For an output row and a kernel tap, the inputs the row's
// positions read are then consecutive elements of each plane: the B
// panel the GEMM micro-kernels read in place (rows a plane apart). The
// kernel's slice for that tap, packed once into panels of MR output
// features (6, or 8 with AVX-512, as the GEMM's tiles), is the A panel,
// and an MR×NR tile of the result (features ×
// positions of the row) is the sum over taps of one micro-kernel call of
// Cg steps, accumulated in place in the NCHW result: nothing is packed
// per position and nothing is scattered.

// convTapsMinC is the fewest input and output features per group the
// tap path takes: with fewer, each micro-kernel call does too little
// work for its tile's load and store, and im2col's one long product
// wins.
const convTapsMinC = 8

// convTapsOn enables the tap path; tests turn it off to compare.
var convTapsOn = true

// convTapPlan is a convolution's tap geometry.
type convTapPlan struct {
	pitch  []int // of the padded spatial dims
	planeP int   // the padded plane's length, with slack
	offs   []int // the offset in a plane of each kernel tap
	maxOff int   // the largest of offs
	nr     int   // the micro-kernel's panel width
	mr     int   // its tile's rows (output features): 6, 8 with AVX-512
}

// tapPlan returns g's tap plan, or nil when the tap path does not apply
// (strides, lhs dilation, negative padding, batch groups, too few
// features, rows shorter than a panel, no micro-kernel). size is the element size in bytes; wide
// says whether the AVX-512 kernels are in use.
func tapPlan(g *convGeom, size int, wide bool) *convTapPlan {
	if !convTapsOn || !packedGEMM || !haveSIMD || g.nd == 0 || g.batchGroups || g.kSz == 1 || g.cg < convTapsMinC || g.og < convTapsMinC {
		return nil
	}
	for j := range g.nd {
		if g.s[j] != 1 || g.ld[j] != 1 || g.lo[j] < 0 || g.hi[j] < 0 {
			return nil
		}
	}
	last := g.nd - 1
	p := &convTapPlan{pitch: make([]int, g.nd), nr: 16, mr: 6}
	if size == 8 {
		p.nr = 8
	}
	if g.out[last] < p.nr || g.k[last] > g.out[last] {
		// Rows shorter than a panel (such as the kernel gradient's, one
		// per tap): most of each tile would be padding.
		return nil
	}
	if wide && g.out[last] >= 2*p.nr {
		p.nr, p.mr = 2*p.nr, 8
	}
	plane := 1
	for j := last; j >= 0; j-- {
		p.pitch[j] = plane
		plane *= g.in[j] + g.lo[j] + g.hi[j]
	}
	p.offs = make([]int, g.kSz)
	tap := make([]int, g.nd)
	maxOff := 0
	for t := range p.offs {
		r := t
		for j := last; j >= 0; j-- {
			tap[j] = r % g.k[j]
			r /= g.k[j]
		}
		for j := range g.nd {
			p.offs[t] += tap[j] * g.rd[j] * p.pitch[j]
		}
		maxOff = max(maxOff, p.offs[t])
	}
	// The last row's last panel reads nr elements from its start at
	// every tap's offset: the plane holds them, and its pitch is not a
	// multiple of 2 KiB (planes that far apart would share L1 sets).
	lastRow := 0
	for j := range last {
		lastRow += (g.out[j] - 1) * p.pitch[j]
	}
	lastPanel := (g.out[last] - 1) / p.nr * p.nr
	p.maxOff = maxOff
	p.planeP = max(plane, lastRow+lastPanel+maxOff+p.nr)
	for p.planeP*size%2048 == 0 {
		p.planeP++
	}
	return p
}

// padInto copies the cg feature planes of x (inSz elements each) into
// the zero-padded planes of buf (planeP apart), whose padding is zero
// already.
func padInto[T float32 | float64](g *convGeom, p *convTapPlan, buf, x []T) {
	last := g.nd - 1
	rows := g.inSz / g.in[last]
	idx := make([]int, g.nd)
	for c := range g.cg {
		xc, bc := x[c*g.inSz:(c+1)*g.inSz], buf[c*p.planeP:(c+1)*p.planeP]
		clear(idx)
		for r := range rows {
			off := 0
			for j := range g.nd {
				off += (idx[j] + g.lo[j]) * p.pitch[j]
			}
			copy(bc[off:off+g.in[last]], xc[r*g.in[last]:(r+1)*g.in[last]])
			for j := last - 1; j >= 0; j-- {
				if idx[j]++; idx[j] < g.in[j] {
					break
				}
				idx[j] = 0
			}
		}
	}
}

// packTaps packs group gi's kernel slice of each tap into A panels of mr
// output features: panel (tap t, panel q) holds, for each input feature
// c, w[gi·Og + mr·q + r, c, t] for r = 0…mr-1, zero past Og.
func packTaps[T float32 | float64](g *convGeom, at, w []T, gi, mr int) {
	mp := (g.og + mr - 1) / mr
	for t := range g.kSz {
		for q := range mp {
			panel := at[(t*mp+q)*g.cg*mr : (t*mp+q+1)*g.cg*mr]
			for c := range g.cg {
				col := panel[c*mr : (c+1)*mr]
				for r := range col {
					o := q*mr + r
					if o >= g.og {
						col[r] = 0
						continue
					}
					col[r] = w[((gi*g.og+o)*g.cg+c)*g.kSz+t]
				}
			}
		}
	}
}

// tapsFunc computes one full MR×NR tile of a convolution by taps with a
// tap micro-kernel: into c (rows ldc apart) the sum over the taps t of
// the packed A panel of k input features at a[t·astride:] times the k
// rows (ldb apart) of the padded planes at b[offs[t]:], maxOff the
// largest of offs (non-negative; the plan's, not recomputed per tile).
// It panics when a slice is too short.
type tapsFunc[T float32 | float64] func(k int, a []T, astride int, b []T, offs []int, maxOff, ldb int, c []T, ldc int)

// tapsKernel is a tap micro-kernel (dot_gemm_amd64.go).
type tapsKernel[T float32 | float64] func(ntaps, k int, a, b *T, offs *int, astride, ldb int, c *T, ldc int)

// tapsOf returns the tapsFunc of a tap micro-kernel with tiles of mr
// rows and panels nr wide.
func tapsOf[T float32 | float64](mr, nr int, kernel tapsKernel[T]) tapsFunc[T] {
	return func(k int, a []T, astride int, b []T, offs []int, maxOff, ldb int, c []T, ldc int) {
		n := len(offs)
		_ = a[(n-1)*astride+k*mr-1]
		_ = b[maxOff+(k-1)*ldb+nr-1]
		_ = c[(mr-1)*ldc+nr-1]
		kernel(n, k, &a[0], &b[0], &offs[0], astride, ldb, &c[0], ldc)
	}
}

// The tapsFuncs of the AVX2 and AVX-512 (w) tap micro-kernels: tiles of
// 6 and 8 rows, as the GEMM's (gemmKernel).
var (
	taps32  = tapsOf(6, 16, sgemm6x16AVX2Taps)
	taps64  = tapsOf(6, 8, dgemm6x8AVX2Taps)
	taps32w = tapsOf(8, 32, sgemm8x32AVX512Taps)
	taps64w = tapsOf(8, 16, dgemm8x16AVX512Taps)
)

// tapPools hold the workers' padded lhs buffers.
var tapPool32, tapPool64 sync.Pool

// convTaps computes g by taps with plan p (see tapPlan) and the tile
// function of its panel width.
func convTaps[T float32 | float64](g *convGeom, p *convTapPlan, y, x, w []T, pool *sync.Pool, taps tapsFunc[T]) {
	last, mr := g.nd-1, p.mr
	mp := (g.og + mr - 1) / mr
	ab := g.kSz * mp * g.cg * mr
	// The packed kernel slices of every group, shared by the workers.
	at := make([]T, g.g*ab)
	for gi := range g.g {
		packTaps(g, at[gi*ab:(gi+1)*ab], w, gi, mr)
	}
	rowLen := g.out[last]
	rows := g.outSz / rowLen
	units := g.n * g.g
	rowCost := 2 * g.og * rowLen * g.cg * g.kSz
	// unitRows computes output rows [r0, r1) of unit u from its padded
	// lhs xp. A tile's accumulators stay in registers over every tap and
	// input feature, and the tile is stored once: a full tile (6
	// features, a whole panel of positions) straight into y, rows a
	// feature plane apart; a tile past Og or the row's end into a
	// contiguous scratch block, whose valid part is copied (a scratch
	// block for every tile, copied into y after, cost a twelfth of the
	// convolution). Every tile is full in the planes: they hold the
	// reads past a row's end (tapPlan), A's rows past Og are zero.
	fullP := g.og / mr // the panels whose mr features all are real
	unitRows := func(u, r0, r1 int, xp []T) {
		n, gi := u/g.g, u%g.g
		yu := y[(n*g.o+gi*g.og)*g.outSz:]
		ag := at[gi*ab : (gi+1)*ab]
		q := make([]int, g.nd)
		ct := make([]T, mp*mr*p.nr)
		for r := r0; r < r1; r++ {
			// The row's start in the padded planes.
			rr, base := r, 0
			for j := last - 1; j >= 0; j-- {
				q[j] = rr % g.out[j]
				rr /= g.out[j]
				base += q[j] * p.pitch[j]
			}
			for x0 := 0; x0 < rowLen; x0 += p.nr {
				cols := min(p.nr, rowLen-x0)
				direct := 0
				if cols == p.nr {
					direct = fullP
				}
				for ip := range mp {
					a := ag[ip*g.cg*mr:]
					if ip < direct {
						taps(g.cg, a, mp*g.cg*mr, xp[base+x0:], p.offs, p.maxOff, p.planeP, yu[ip*mr*g.outSz+r*rowLen+x0:], g.outSz)
						continue
					}
					taps(g.cg, a, mp*g.cg*mr, xp[base+x0:], p.offs, p.maxOff, p.planeP, ct[ip*mr*p.nr:], p.nr)
				}
				for o := direct * mr; o < g.og; o++ {
					copy(yu[o*g.outSz+r*rowLen+x0:][:cols], ct[o*p.nr:][:cols])
				}
			}
		}
	}
	nb := g.cg * p.planeP
	getBuf := func() *[]T {
		b, _ := pool.Get().(*[]T)
		if b == nil {
			b = new([]T)
		}
		if cap(*b) < nb {
			*b = make([]T, nb)
		}
		*b = (*b)[:nb]
		clear(*b) // padding left by another geometry
		return b
	}
	if units > 1 && units >= Threads() && !serial(units, rowCost*rows) {
		parallelFor(units, rowCost*rows, func(lo, hi int) {
			b := getBuf()
			defer pool.Put(b)
			for u := lo; u < hi; u++ {
				padInto(g, p, *b, x[g.xoff(u/g.g, u%g.g):])
				unitRows(u, 0, rows, *b)
			}
		})
		return
	}
	b := getBuf()
	defer pool.Put(b)
	for u := range units {
		padInto(g, p, *b, x[g.xoff(u/g.g, u%g.g):])
		xp := *b
		parallelFor(rows, rowCost, func(r0, r1 int) { unitRows(u, r0, r1, xp) })
	}
}

// convByTaps computes g by taps and reports true, or reports false when
// the tap path does not apply.
func convByTaps[T float32 | float64](g *convGeom, y, x, w []T) bool {
	var z T
	size := int(unsafe.Sizeof(z))
	p := tapPlan(g, size, gemmWide)
	if p == nil {
		return false
	}
	switch yy := any(y).(type) {
	case []float32:
		t := taps32
		if p.nr == 32 {
			t = taps32w
		}
		convTaps(g, p, yy, any(x).([]float32), any(w).([]float32), &tapPool32, t)
	case []float64:
		t := taps64
		if p.nr == 16 {
			t = taps64w
		}
		convTaps(g, p, yy, any(x).([]float64), any(w).([]float64), &tapPool64, t)
	}
	return true
}

// Convolution by result positions: the transposed tap path, for
// convolutions whose kernels are longer than their results (the kernel
// gradient, where the "kernel" is the result's cotangent and the result
// has one position per forward tap). With unit strides, no lhs dilation
// and no negative padding, result position q of batch element b and
// feature o is Σ over (input feature c, padded position L) of
// Xt[c, L + pos(q), b] · Wt[c, L, o], where Xt is the lhs zero-padded and
// transposed to put the batch innermost, Wt the kernel transposed to put
// the output features innermost with zero rows where L is no kernel tap,
// and pos(q) q's offset in the padded planes. For each q that is one
// GEMM (batch × output features, contracting over every c and L) whose
// operands both are read in place: A rows (batch) contiguous, columns
// one batch apart; B rows (output features) contiguous. The transposed
// copies cost two passes over the operands, against im2row's Cg·taps
// elements per result row. The zero rows of Wt multiply real lhs
// elements, so an lhs with an Inf or NaN takes the packed path instead
// (0·Inf would be NaN where the true sum is not).
//
// The zero rows are arithmetic spent on nothing, so the padded planes
// overlap where they can (tapsTPitch): a dimension padded by lo before
// and hi after its n elements takes n + max(lo, hi) slots, not
// n + lo + hi, the padding after one row sharing the slots of the
// padding before the next (and likewise the last padded row of a
// feature plane with the first of the next plane). For 3×3 on 32×32
// that contracts over 33² slots per feature rather than 34², 6% zeros
// instead of 13%.

// convTapsTMin is the fewest batch elements and output features the
// transposed tap path takes: each GEMM is batch × features.
const convTapsTMin = 8

// tapsTBufs are the transposed operands of the transposed tap path,
// kept between calls (a 64→64 3×3 gradient on 32×32×32 takes two of
// about 9 MiB: fresh, each was zeroed by the runtime, and its pages
// faulted in, at every call).
type tapsTBufs[T float32 | float64] struct{ xt, wt []T }

var tapsTPool32, tapsTPool64 sync.Pool

// getTapsTBufs returns buffers of at least nx and nw elements, of any
// contents.
func getTapsTBufs[T float32 | float64](nx, nw int) *tapsTBufs[T] {
	pool := &tapsTPool64
	var z T
	if unsafe.Sizeof(z) == 4 {
		pool = &tapsTPool32
	}
	b, _ := pool.Get().(*tapsTBufs[T])
	if b == nil {
		b = new(tapsTBufs[T])
	}
	if cap(b.xt) < nx {
		b.xt = make([]T, nx)
	}
	if cap(b.wt) < nw {
		b.wt = make([]T, nw)
	}
	b.xt, b.wt = b.xt[:nx], b.wt[:nw]
	if scratchPoison {
		nan := T(math.NaN())
		for i := range b.xt {
			b.xt[i] = nan
		}
		for i := range b.wt {
			b.wt[i] = nan
		}
	}
	return b
}

// scratchPoison fills the kept buffers of the transposed tap path with
// NaN at every use (PEEL_CACHE_CHECK=1, the cache's checking mode, and
// tests): a slot the path reads but did not write then shows as a wrong
// result.
var scratchPoison = cache.poison

func putTapsTBufs[T float32 | float64](b *tapsTBufs[T]) {
	var z T
	if unsafe.Sizeof(z) == 4 {
		tapsTPool32.Put(b)
	} else {
		tapsTPool64.Put(b)
	}
}

// tapsTPitch returns the strides of the overlapping padded planes of
// the transposed tap path and the stride of one feature's plane. A
// dimension of n elements padded by lo and hi takes n + max(lo, hi)
// slots: a padded position past a row's end (or a plane's) then falls
// on a slot of the next one's padding, never on an element, and the
// elements' slots are distinct. A dimension whose kernel reaches
// n + max(lo, hi) slots or more keeps n + lo + hi, so that distinct
// taps keep distinct rows of Wt.
func tapsTPitch(g *convGeom) (pitch []int, plane int) {
	pitch = make([]int, g.nd)
	plane = 1
	for j := g.nd - 1; j >= 0; j-- {
		pitch[j] = plane
		r := g.in[j] + max(g.lo[j], g.hi[j])
		if (g.k[j]-1)*g.rd[j] >= r {
			r = g.in[j] + g.lo[j] + g.hi[j]
		}
		plane *= r
	}
	return pitch, plane
}

// convByTapsT computes g by result positions and reports true, or
// reports false when the path does not apply or the lhs is not finite.
func convByTapsT[T float32 | float64](g *convGeom, y, x, w []T) bool {
	if !convTapsOn || !packedGEMM || !haveSIMD || g.nd == 0 || g.batchGroups || g.n < convTapsTMin || g.og < convTapsTMin {
		return false
	}
	last := g.nd - 1
	if g.k[last] <= g.out[last] {
		return false
	}
	for j := range g.nd {
		if g.s[j] != 1 || g.ld[j] != 1 || g.lo[j] < 0 || g.hi[j] < 0 {
			return false
		}
	}
	pitch, plane := tapsTPitch(g)
	posMax := 0
	for j := range g.nd {
		posMax += (g.out[j] - 1) * pitch[j]
	}
	K := g.cg * plane
	// The batch padded to whole panels of the GEMM's tiles (6 or 8
	// rows), so that every A panel is read in place (a short last panel
	// would be packed, and computed on a whole tile, at every block).
	mr := gemmTileRows[T](g.og)
	m := (g.n + mr - 1) / mr * mr
	bufs := getTapsTBufs[T]((K+posMax)*m, K*g.og)
	defer putTapsTBufs(bufs)
	xt, wt := bufs.xt, bufs.wt
	ct := make([]T, g.outSz*m*g.og)
	// The work in units of (position q, panel of mr batch rows): whole
	// positions alone split 9 of them 5:4 over two workers.
	np := m / mr
	units := g.outSz * np
	for gi := range g.g {
		if !transposePadLhs(g, pitch, plane, m, xt, x, gi) {
			return false // the packed path recomputes every group
		}
		transposeKernel(g, pitch, plane, wt, w, gi)
		// The contraction in blocks of kb rows, each block's GEMMs for
		// every position q together: the positions read the same Wt
		// rows and Xt rows a few apart, so a block stays in L2 across
		// them instead of both operands streaming from memory once per
		// position (9 times for a 3×3 kernel).
		var z T
		kb := max(256, cacheL2/4/((m+g.og)*int(unsafe.Sizeof(z))))
		cost := 2 * mr * g.og * kb
		run := func(k0, u0, u1 int, par bool) {
			qi := make([]int, g.nd)
			for u := u0; u < u1; {
				q, p0 := u/np, u%np
				p1 := min(np, p0+u1-u)
				r, pos := q, 0
				for j := last; j >= 0; j-- {
					qi[j] = r % g.out[j]
					r /= g.out[j]
					pos += qi[j] * pitch[j]
				}
				r0, rows := p0*mr, (p1-p0)*mr
				p := dotPlan{B: 1, M: rows, N: g.og, K: min(kb, K-k0), acc: k0 > 0,
					lhs: dotOperand{arr: backend.Array{Offset: (pos+k0)*m + r0}, fs: 1, cs: m},
					rhs: dotOperand{arr: backend.Array{Offset: k0 * g.og}, fs: 1, cs: g.og}}
				packedGEMMOf(&p, ct[(q*m+r0)*g.og:(q*m+r0+rows)*g.og], xt, wt, par)
				u += p1 - p0
			}
		}
		for k0 := 0; k0 < K; k0 += kb {
			if units >= 2*Threads() {
				parallelFor(units, cost, func(u0, u1 int) { run(k0, u0, u1, false) })
			} else {
				run(k0, 0, units, true)
			}
		}
		// ct[q, b, o] into y[b, gi·Og + o, q].
		for q := range g.outSz {
			cq := ct[q*m*g.og:]
			for b := range g.n {
				row := cq[b*g.og : (b+1)*g.og]
				yb := y[(b*g.o+gi*g.og)*g.outSz+q:]
				for o, v := range row {
					yb[o*g.outSz] = v
				}
			}
		}
	}
	return true
}

// transposePadLhs writes group gi's lhs features into xt, zero-padded
// and transposed: element (feature c, padded position pp, batch b) at
// (c·plane + pp)·m + b, m ≥ N, every other element of xt zero (whatever
// xt held before) but those of batch columns N and past, left as they
// were. It reports false, leaving xt partly written, when an
// element is not finite.
func transposePadLhs[T float32 | float64](g *convGeom, pitch []int, plane, m int, xt, x []T, gi int) bool {
	last := g.nd - 1
	inLast := g.in[last]
	rows := g.inSz / inLast
	// rowAt[r]: lhs row r's first slot in its feature's padded plane.
	rowAt := make([]int, rows)
	idx := make([]int, g.nd)
	for r := range rowAt {
		pp := g.lo[last]
		for j := range last {
			pp += (idx[j] + g.lo[j]) * pitch[j]
		}
		rowAt[r] = pp
		for j := last - 1; j >= 0; j-- {
			if idx[j]++; idx[j] < g.in[j] {
				break
			}
			idx[j] = 0
		}
	}
	x0 := g.xoff(0, gi) // batch element b's lhs is b·lhsB on
	// The features in parallel: each writes its own planes of xt.
	var bad atomic.Bool
	parallelFor(g.cg, 4*g.inSz*g.n, func(c0, c1 int) {
		for c := c0; c < c1; c++ {
			xc := x[x0+c*g.lhsF:]
			for b := range g.n {
				if !finiteSum(xc[b*g.lhsB : b*g.lhsB+g.inSz]) {
					bad.Store(true)
					return
				}
			}
			// The padding: the slots between rows. (The batch columns
			// past N are left as they are: they meet only result rows
			// past N, which nothing reads.)
			pc := c * plane
			cur := pc
			for _, pp := range rowAt {
				clear(xt[cur*m : (pc+pp)*m])
				cur = pc + pp + inLast
			}
			clear(xt[cur*m : (pc+plane)*m])
			for r, pp := range rowAt {
				transposeInto(xt[(pc+pp)*m:], m, xc[r*inLast:], g.lhsB, inLast, g.n)
			}
		}
	})
	if bad.Load() {
		return false
	}
	clear(xt[g.cg*plane*m:])
	return true
}

// finiteSum reports whether the sum of s is finite, which it is not
// when an element is infinite or NaN (and, rarely, when finite elements
// overflow: the callers then take a slower path).
func finiteSum[T float32 | float64](s []T) bool {
	if s32, ok := any(s).([]float32); ok && haveSIMD {
		v := sumWiden32(0, s32)
		return v-v == 0
	}
	var acc T
	for _, v := range s {
		acc += v
	}
	return acc-acc == 0
}

// transposeInto writes the rows×cols block whose element (i, j) is
// s[i + j·ls] into d[i·ld + j]: float32 by the block transposes where
// they apply, anything else by 8 columns at a time.
func transposeInto[T float32 | float64](d []T, ld int, s []T, ls, rows, cols int) {
	if d32, ok := any(d).([]float32); ok && transposeBlocks32(d32, ld, any(s).([]float32), ls, rows, cols, false) {
		return
	}
	const bb = 8
	for j0 := 0; j0 < cols; j0 += bb {
		nb := min(bb, cols-j0)
		for i := range rows {
			dr := d[i*ld+j0:][:nb]
			for k := range dr {
				dr[k] = s[i+(j0+k)*ls]
			}
		}
	}
}

// transposeKernel writes group gi's kernel into wt, transposed with the
// output features innermost: element (feature c, tap t, output feature
// o) at (c·plane + L(t))·Og + o, L(t) the tap's offset in the padded
// planes; every other row of wt is zero, whatever wt held before.
func transposeKernel[T float32 | float64](g *convGeom, pitch []int, plane int, wt, w []T, gi int) {
	offs := make([]int, g.kSz)
	tap := make([]int, g.nd)
	for t := range offs {
		r := t
		for j := g.nd - 1; j >= 0; j-- {
			tap[j] = r % g.k[j]
			r /= g.k[j]
		}
		for j := range g.nd {
			offs[t] += tap[j] * g.rd[j] * pitch[j]
		}
	}
	// By tiles of taps × output features: element by element, each
	// write of a kernel row's taps lands Og elements from the last, a
	// cache line each (a fifth of the kernel gradient of a 3×3, 64→64
	// convolution went here); a tile's 16 destination rows stay in L1.
	// float32 kernels whose rows are runs of consecutive offsets (no
	// dilation along the last dimension) go run by run through the AVX2
	// 8×8-block transpose: run (c, t0…t0+L) of every output feature o is
	// the L×Og block wt[(c·plane + offs[t0] + i)·Og + o] = w[…o…, t0+i].
	// The offsets increase with t (tapsTPitch), so the rows between runs
	// are cleared as the runs are written.
	w32, f32 := any(w).([]float32)
	wt32, _ := any(wt).([]float32)
	runLen := g.k[g.nd-1]
	runs := f32 && haveSIMD && g.rd[g.nd-1] == 1 && runLen >= 8 && g.og >= 8
	const tile = transposeTile
	parallelFor(g.cg, 4*g.kSz*g.og, func(c0, c1 int) {
		for c := c0; c < c1; c++ {
			base := c * plane
			if runs {
				ls := g.rhsO // one output feature to the next in w
				src := gi*g.og*g.rhsO + c*g.rhsI
				cur := base
				for t0 := 0; t0 < g.kSz; t0 += runLen {
					clear(wt32[cur*g.og : (base+offs[t0])*g.og])
					d := wt32[(base+offs[t0])*g.og:]
					if !transposeBlocks32(d, g.og, w32[src+t0:], ls, runLen, g.og, false) {
						panic("cpu: transposeKernel: the block transpose declined")
					}
					cur = base + offs[t0] + runLen
				}
				clear(wt32[cur*g.og : (base+plane)*g.og])
				continue
			}
			clear(wt[base*g.og : (base+plane)*g.og])
			for t0 := 0; t0 < g.kSz; t0 += tile {
				t1 := min(t0+tile, g.kSz)
				for o0 := 0; o0 < g.og; o0 += tile {
					for o := o0; o < min(o0+tile, g.og); o++ {
						row := w[(gi*g.og+o)*g.rhsO+c*g.rhsI:][t0:t1]
						for t, v := range row {
							wt[(base+offs[t0+t])*g.og+o] = v
						}
					}
				}
			}
		}
	})
}

// packedGEMMOf runs gemm32 or gemm64 on batch element 0 of p.
func packedGEMMOf[T float32 | float64](p *dotPlan, c, a, b []T, par bool) {
	switch c := any(c).(type) {
	case []float32:
		gemm32(p, 0, c, any(a).([]float32), any(b).([]float32), par)
	case []float64:
		gemm64(p, 0, c, any(a).([]float64), any(b).([]float64), par)
	}
}
