package cpu

import (
	"sync"
	"unsafe"
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
// kernel's slice for that tap, packed once into panels of 6 output
// features, is the A panel, and a 6×NR tile of the result (features ×
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
	nr     int   // the micro-kernel's panel width
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
	p := &convTapPlan{pitch: make([]int, g.nd), nr: 16}
	if size == 8 {
		p.nr = 8
	}
	if g.out[last] < p.nr || g.k[last] > g.out[last] {
		// Rows shorter than a panel (such as the kernel gradient's, one
		// per tap): most of each tile would be padding.
		return nil
	}
	if wide && g.out[last] >= 2*p.nr {
		p.nr *= 2
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

// packTaps packs group gi's kernel slice of each tap into A panels of 6
// output features: panel (tap t, panel q) holds, for each input feature
// c, w[gi·Og + 6q + r, c, t] for r = 0…5, zero past Og.
func packTaps[T float32 | float64](g *convGeom, at, w []T, gi int) {
	mp := (g.og + gemmMR - 1) / gemmMR
	for t := range g.kSz {
		for q := range mp {
			panel := at[(t*mp+q)*g.cg*gemmMR : (t*mp+q+1)*g.cg*gemmMR]
			for c := range g.cg {
				col := panel[c*gemmMR : (c+1)*gemmMR]
				for r := range col {
					o := q*gemmMR + r
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

// tapPools hold the workers' padded lhs buffers.
var tapPool32, tapPool64 sync.Pool

// convTaps computes g by taps with plan p (see tapPlan) and the tile
// function of its panel width.
func convTaps[T float32 | float64](g *convGeom, p *convTapPlan, y, x, w []T, pool *sync.Pool, tile tileFunc[T]) {
	last := g.nd - 1
	mp := (g.og + gemmMR - 1) / gemmMR
	ab := g.kSz * mp * g.cg * gemmMR
	// The packed kernel slices of every group, shared by the workers.
	at := make([]T, g.g*ab)
	for gi := range g.g {
		packTaps(g, at[gi*ab:(gi+1)*ab], w, gi)
	}
	rowLen := g.out[last]
	rows := g.outSz / rowLen
	units := g.n * g.g
	rowCost := 2 * g.og * rowLen * g.cg * g.kSz
	// unitRows computes output rows [r0, r1) of unit u from its padded
	// lhs xp.
	unitRows := func(u, r0, r1 int, xp []T) {
		n, gi := u/g.g, u%g.g
		yu := y[(n*g.o+gi*g.og)*g.outSz:]
		ag := at[gi*ab : (gi+1)*ab]
		q := make([]int, g.nd)
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
				for t, off := range p.offs {
					bp := xp[base+x0+off:]
					for ip := range mp {
						a := ag[(t*mp+ip)*g.cg*gemmMR:]
						i0 := ip * gemmMR
						tile(g.cg, a, gemmMR, bp, p.planeP, yu[i0*g.outSz+r*rowLen+x0:], g.outSz,
							min(gemmMR, g.og-i0), cols, t > 0)
					}
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
		t := tile32
		if p.nr == 32 {
			t = tile32w
		}
		convTaps(g, p, yy, any(x).([]float32), any(w).([]float32), &tapPool32, t)
	case []float64:
		t := tile64
		if p.nr == 16 {
			t = tile64w
		}
		convTaps(g, p, yy, any(x).([]float64), any(w).([]float64), &tapPool64, t)
	}
	return true
}
