package cpu

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/prims"
)

var _ = registerConvKernels()

func registerConvKernels() bool {
	registerStrided(prims.ConvGeneralDilated, convGeneral)
	register(prims.ReduceWindowSum, false, reduceWindowKernel(false))
	register(prims.ReduceWindowMax, false, reduceWindowKernel(true))
	return true
}

// conv_general_dilated is one GEMM per result batch element and group
// (im2col; batch groups read their own lhs batch elements): the lhs windows of group g are packed into a matrix of
// Cg·k rows (input feature, kernel tap) by P columns (output positions),
// zeros where a window reads padding or a dilation gap, and the group's
// kernel rows [Og, Cg·k] times that matrix are the group's Og result
// rows [Og, P], written in place. A 1×1 kernel with unit strides and no
// padding or dilation reads the lhs in place instead. The packed matrix
// is split into column blocks of at most convColsMax elements, so its
// buffer stays small whatever the sizes (a split product, whose result
// rows are not contiguous, runs on the BLAS). Batch elements and groups run
// in parallel when there are enough of them; otherwise each GEMM
// parallelises its own tiles.

// convColsMax bounds the elements of one packed block.
const convColsMax = 1 << 21

// convGeom is conv_general_dilated's geometry, from its operands' shapes
// and normalized parameters.
type convGeom struct {
	nd                int
	n, c, o, g        int
	cg, og            int
	in, k, out        []int // spatial sizes
	inStr             []int // row-major strides of the lhs's spatial dims
	s, lo, hi, ld, rd []int
	inSz, kSz, outSz  int // products of in, k, out
	kk                int // Cg·kSz: the contracting size
	direct            bool
	// batchGroups: the groups (g of them) split the lhs batch, not its
	// features; n is the result's batch, the lhs's divided by g.
	batchGroups bool
	// lhsB and lhsF are the strides of the lhs's batch and feature
	// dimensions, rhsO and rhsI of the kernel's output and input feature
	// dimensions; their spatial dimensions are row-major. Only the
	// transposed tap path (convByTapsT) reads operands whose leading
	// strides are not the row-major ones; every other path gets
	// contiguous operands.
	lhsB, lhsF, rhsO, rhsI int
}

// xoff returns the offset in the lhs of the first feature that unit
// (result batch element n, group gi) reads.
func (g *convGeom) xoff(n, gi int) int {
	if g.batchGroups {
		return (gi*g.n + n) * g.lhsB
	}
	return n*g.lhsB + gi*g.cg*g.lhsF
}

func newConvGeom(p prims.ConvParams, lhs, rhs, out []int) *convGeom {
	nd := len(lhs) - 2
	p = p.Normalized(nd)
	g := &convGeom{
		nd: nd, n: out[0], c: lhs[1], o: rhs[0], g: p.FeatureGroupCount,
		in: lhs[2:], k: rhs[2:], out: out[2:],
		s: p.Strides, lo: p.PadLo, hi: p.PadHi, ld: p.LhsDilation, rd: p.RhsDilation,
	}
	if p.BatchGroupCount > 1 {
		g.g, g.batchGroups = p.BatchGroupCount, true
	}
	g.cg, g.og = rhs[1], g.o/g.g
	g.inStr = backend.ContiguousStrides(g.in)
	g.inSz, g.kSz, g.outSz = backend.ShapeSize(g.in), backend.ShapeSize(g.k), backend.ShapeSize(g.out)
	g.kk = g.cg * g.kSz
	g.lhsB, g.lhsF = g.c*g.inSz, g.inSz
	g.rhsO, g.rhsI = g.cg*g.kSz, g.kSz
	g.direct = true
	for j := range nd {
		if g.k[j] != 1 || g.s[j] != 1 || g.lo[j] != 0 || p.PadHi[j] != 0 || g.ld[j] != 1 {
			g.direct = false
		}
	}
	return g
}

func convGeneral(params any, in, out []backend.Array) {
	g := newConvGeom(params.(prims.ConvParams), in[0].Shape, in[1].Shape, out[0].Shape)
	if out[0].Size() == 0 {
		return
	}
	if g.kk == 0 {
		zero(out[0])
		return
	}
	// Operands that are views with their two leading dimensions strided
	// (a kernel gradient's lhs and cotangent, transposed batch for
	// features) go to the transposed tap path as they are: it copies
	// them once, transposed and padded, where materializing them first
	// was a second copy of each (two 8 MiB copies and their fresh buffers
	// in a 64→64 3×3 gradient on 32×32×32). Any other layout, or where
	// that path does not apply, is materialized as Exec would.
	if !in[0].IsContiguous() || !in[1].IsContiguous() {
		lb, lf, lok := leadingStrides(in[0])
		ro, ri, rok := leadingStrides(in[1])
		if lok && rok {
			sg := *g
			sg.lhsB, sg.lhsF, sg.rhsO, sg.rhsI = lb, lf, ro, ri
			switch out[0].Buf.(type) {
			case *f32Buf:
				if convByTapsT(&sg, f32s(out[0]), spanOf(in[0].Buf.(*f32Buf).s, in[0]), spanOf(in[1].Buf.(*f32Buf).s, in[1])) {
					return
				}
			case *f64Buf:
				if convByTapsT(&sg, f64s(out[0]), spanOf(in[0].Buf.(*f64Buf).s, in[0]), spanOf(in[1].Buf.(*f64Buf).s, in[1])) {
					return
				}
			}
		}
		for i := range in[:2] {
			if !in[i].IsContiguous() {
				in[i] = New().contiguous(in[i])
			}
		}
	}
	switch out[0].Buf.(type) {
	case *f32Buf:
		if !convByTaps(g, f32s(out[0]), f32s(in[0]), f32s(in[1])) {
			convRun(g, f32s(out[0]), f32s(in[0]), f32s(in[1]), &convPool32, gemmConv32)
		}
	case *f64Buf:
		if !convByTaps(g, f64s(out[0]), f64s(in[0]), f64s(in[1])) {
			convRun(g, f64s(out[0]), f64s(in[0]), f64s(in[1]), &convPool64, gemmConv64)
		}
	default:
		panic("cpu: conv_general_dilated of dtype " + out[0].Buf.DType().String())
	}
}

// leadingStrides returns the strides of a's first two dimensions when its
// others are row-major contiguous (dimensions of size 1 aside) and every
// stride is non-negative, and ok false otherwise.
func leadingStrides(a backend.Array) (s0, s1 int, ok bool) {
	st := a.EffectiveStrides()
	want := 1
	for j := len(a.Shape) - 1; j >= 2; j-- {
		if a.Shape[j] != 1 && st[j] != want {
			return 0, 0, false
		}
		want *= a.Shape[j]
	}
	if st[0] < 0 || st[1] < 0 {
		return 0, 0, false
	}
	return st[0], st[1], true
}

// spanOf returns buf from a's offset on: the elements a strided view
// reads, at their offsets from its first.
func spanOf[T any](buf []T, a backend.Array) []T { return buf[a.Offset:] }

var convPool32, convPool64 sync.Pool

// convGEMM is gemmConv32 or gemmConv64; par lets it run in parallel.
type convGEMM[T float32 | float64] func(c []T, ldc int, a []T, lda int, b []T, ldb int, bt bool, m, n, k int, par, acc bool)

// convRun computes every (batch element, group) unit of g.
func convRun[T float32 | float64](g *convGeom, y, x, w []T, pool *sync.Pool, gemm convGEMM[T]) {
	if !g.direct && g.nd > 0 && g.k[g.nd-1] > g.out[g.nd-1] && g.n*g.outSz <= convColsMax/64 {
		if !convByTapsT(g, y, x, w) {
			convRunT(g, y, x, w, pool, gemm)
		}
		return
	}
	units := g.n * g.g
	cost := g.og * g.kk * g.outSz
	// Columns per packed block.
	pb := g.outSz
	if !g.direct && g.kk*pb > convColsMax {
		pb = max(1, convColsMax/g.kk)
	}
	// The packed rows' pitch: not a multiple of 2 KiB, so that the GEMM
	// reads them in place (see inPlaceStride).
	pitch := pb
	if !inPlaceStride[T](pitch) {
		pitch += 8
	}
	run := func(lo, hi int, par bool) {
		var buf *[]T
		if !g.direct {
			if v := pool.Get(); v != nil {
				buf = v.(*[]T)
			} else {
				buf = new([]T)
			}
			if need := g.kk * pitch; cap(*buf) < need {
				*buf = make([]T, need)
			}
			defer pool.Put(buf)
		}
		for u := lo; u < hi; u++ {
			n, gi := u/g.g, u%g.g
			xoff := g.xoff(n, gi)
			yoff := (n*g.o + gi*g.og) * g.outSz
			wg := w[gi*g.og*g.kk : (gi+1)*g.og*g.kk]
			if g.direct {
				gemm(y[yoff:], g.outSz, wg, g.kk, x[xoff:xoff+g.kk*g.outSz], g.outSz, false, g.og, g.outSz, g.kk, par, false)
				continue
			}
			for p0 := 0; p0 < g.outSz; p0 += pb {
				p1 := min(p0+pb, g.outSz)
				cols := (*buf)[:g.kk*pitch]
				im2col(g, cols, pitch, x[xoff:xoff+g.cg*g.inSz], p0, p1)
				gemm(y[yoff+p0:], g.outSz, wg, g.kk, cols, pitch, false, g.og, p1-p0, g.kk, par, false)
			}
		}
	}
	if units > 1 && !serial(units, cost) && units >= Threads() {
		parallelFor(units, cost, func(lo, hi int) { run(lo, hi, false) })
		return
	}
	run(0, units, true)
}

// im2col packs output positions [p0, p1) of one (batch element, group)
// into cols, rows of p1−p0 elements pitch apart, one per (c, tap) of the
// Cg·kSz contraction indices: row (c, tap) holds, for each
// output position, the lhs element that tap of its window reads, or 0.
// x holds the group's Cg lhs features.
func im2col[T float32 | float64](g *convGeom, cols []T, pitch int, x []T, p0, p1 int) {
	nd, pb := g.nd, p1-p0
	if nd == 0 {
		for r := range g.kk {
			cols[r*pitch] = x[r]
		}
		return
	}
	last := nd - 1
	tap := make([]int, nd)
	q := make([]int, nd)
	for r := range g.kk {
		c, t := r/g.kSz, r%g.kSz
		for j := last; j >= 0; j-- {
			tap[j] = t % g.k[j]
			t /= g.k[j]
		}
		xc := x[c*g.inSz : (c+1)*g.inSz]
		row := cols[r*pitch : r*pitch+pb]
		// q = unravel(p0).
		t = p0
		for j := last; j >= 0; j-- {
			q[j] = t % g.out[j]
			t /= g.out[j]
		}
		for p := p0; p < p1; {
			n := min(g.out[last]-q[last], p1-p)
			dst := row[p-p0 : p-p0+n]
			off, ok := g.rowOffset(q, tap, last)
			if !ok {
				clear(dst)
			} else {
				convRow(dst, xc[off:off+g.in[last]], q[last], g.s[last], tap[last]*g.rd[last]-g.lo[last], g.ld[last])
			}
			p += n
			q[last] += n
			for j := last; j > 0 && q[j] == g.out[j]; j-- {
				q[j] = 0
				q[j-1]++
			}
		}
	}
}

// convRow fills dst[t] with the element of the lhs row xr at dilated
// position (q0+t)·s + base, or 0 where that position is outside the row
// or in a dilation gap (ld > 1).
func convRow[T float32 | float64](dst, xr []T, q0, s, base, ld int) {
	if ld == 1 {
		// Positions (q0+t)·s + base in [0, len(xr)): t in [a, b).
		n := len(xr)
		a, b := 0, len(dst)
		if v := q0*s + base; v < 0 {
			// ⌈−v/s⌉, without overflow for a huge stride.
			a = -v / s
			if -v%s != 0 {
				a++
			}
			a = min(a, b)
		}
		// Last t with (q0+t)·s + base ≤ n−1.
		if lim := n - 1 - base - q0*s; lim < 0 {
			b = 0
		} else {
			b = min(b, lim/s+1)
		}
		if b < a {
			b = a
		}
		clear(dst[:a])
		v := (q0+a)*s + base
		switch {
		case b == a:
			// No position inside the row.
		case s == 1:
			copy(dst[a:b], xr[v:v+b-a])
		default:
			for t := a; t < b; t++ {
				dst[t] = xr[v]
				v += s
			}
		}
		clear(dst[b:])
		return
	}
	v := q0*s + base
	for t := range dst {
		if v >= 0 && v%ld == 0 && v/ld < len(xr) {
			dst[t] = xr[v/ld]
		} else {
			dst[t] = 0
		}
		v += s
	}
}

// gemmConv32 and gemmConv64 are the convolution's GEMMs: c (m×n, rows
// ldc apart) = a (m×k, rows lda apart) · b, where b is k×n row-major
// (rows ldb apart), or with bt n×k row-major read transposed; with acc
// the product is added to c. They run on the packed micro-kernels where
// the CPU has them (dot_gemm.go), on the BLAS otherwise.
func gemmConv32(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, bt bool, m, n, k int, par, acc bool) {
	p, tB, br, bc := convPlan(lda, ldb, bt, m, n, k, acc)
	if usePacked(&p) && ldc == n {
		gemm32(&p, 0, c, a, b, par)
		return
	}
	var beta float32
	if acc {
		beta = 1
	}
	blas32.Gemm(blas.NoTrans, tB, 1,
		blas32.General{Rows: m, Cols: k, Stride: lda, Data: a},
		blas32.General{Rows: br, Cols: bc, Stride: ldb, Data: b},
		beta, blas32.General{Rows: m, Cols: n, Stride: ldc, Data: c})
}

func gemmConv64(c []float64, ldc int, a []float64, lda int, b []float64, ldb int, bt bool, m, n, k int, par, acc bool) {
	p, tB, br, bc := convPlan(lda, ldb, bt, m, n, k, acc)
	if usePacked(&p) && ldc == n {
		gemm64(&p, 0, c, a, b, par)
		return
	}
	var beta float64
	if acc {
		beta = 1
	}
	blas64.Gemm(blas.NoTrans, tB, 1,
		blas64.General{Rows: m, Cols: k, Stride: lda, Data: a},
		blas64.General{Rows: br, Cols: bc, Stride: ldb, Data: b},
		beta, blas64.General{Rows: m, Cols: n, Stride: ldc, Data: c})
}

// convPlan describes a convolution GEMM as a dotPlan, with the BLAS
// transpose flag and stored shape of b.
func convPlan(lda, ldb int, bt bool, m, n, k int, acc bool) (dotPlan, blas.Transpose, int, int) {
	p := dotPlan{B: 1, M: m, N: n, K: k, lhs: dotOperand{fs: lda, cs: 1}, rhs: dotOperand{fs: 1, cs: ldb}, acc: acc}
	if bt {
		p.rhs = dotOperand{fs: ldb, cs: 1}
		return p, blas.Trans, n, k
	}
	return p, blas.NoTrans, k, n
}

// convRunT computes g when its windows are long and its results short
// (the kernel gradient, a convolution of the input with the output's
// cotangent): per group, the rows (batch element, output position) by
// the contraction (input feature, kernel tap) are packed, their runs
// following the kernel's last dimension, and read transposed by a GEMM
// per block of the contraction, the blocks' products added up. Each
// worker takes a range of rows through every block (one parallel region:
// the GEMMs are too thin to split well).
func convRunT[T float32 | float64](g *convGeom, y, x, w []T, pool *sync.Pool, gemm convGEMM[T]) {
	rows := g.n * g.outSz
	parallelFor(rows, g.kk*g.og*g.g, func(lo, hi int) {
		nr := hi - lo
		kb := min(g.kk, max(1, convColsMax/nr))
		var buf *[]T
		if v := pool.Get(); v != nil {
			buf = v.(*[]T)
		} else {
			buf = new([]T)
		}
		defer pool.Put(buf)
		if need := nr*kb + g.og*nr; cap(*buf) < need {
			*buf = make([]T, need)
		}
		yt := (*buf)[nr*kb : nr*kb+g.og*nr]
		for gi := range g.g {
			for k0 := 0; k0 < g.kk; k0 += kb {
				k1 := min(k0+kb, g.kk)
				bt := (*buf)[:nr*(k1-k0)]
				im2row(g, bt, x, gi, k0, k1, lo, hi)
				gemm(yt, nr, w[gi*g.og*g.kk+k0:], g.kk, bt, k1-k0, true, g.og, nr, k1-k0, false, k0 > 0)
			}
			// yt [Og, rows lo…hi) into y[n, gi·Og + o, p], one run per
			// batch element.
			for r := lo; r < hi; {
				n, p := r/g.outSz, r%g.outSz
				m := min(g.outSz-p, hi-r)
				for o := range g.og {
					copy(y[(n*g.o+gi*g.og+o)*g.outSz+p:][:m], yt[o*nr+r-lo:][:m])
				}
				r += m
			}
		}
	})
}

// im2row packs rows [r0, r1) of group gi's transposed matrix into bt,
// row-major [r1−r0, k1−k0]: row (n, p) holds, for contraction indices
// [k0, k1) (input feature, kernel tap), the lhs element each tap of
// output position p's window reads, or 0.
func im2row[T float32 | float64](g *convGeom, bt, x []T, gi, k0, k1, r0, r1 int) {
	nd, kw := g.nd, k1-k0
	last := nd - 1
	q := make([]int, nd)
	tap := make([]int, nd)
	for r := r0; r < r1; r++ {
		n, t := r/g.outSz, r%g.outSz
		for j := last; j >= 0; j-- {
			q[j] = t % g.out[j]
			t /= g.out[j]
		}
		row := bt[(r-r0)*kw : (r-r0+1)*kw]
		xn := x[g.xoff(n, gi):]
		for kk := k0; kk < k1; {
			c, t := kk/g.kSz, kk%g.kSz
			for j := last; j >= 0; j-- {
				tap[j] = t % g.k[j]
				t /= g.k[j]
			}
			m := min(g.k[last]-tap[last], k1-kk)
			dst := row[kk-k0 : kk-k0+m]
			off, ok := g.rowOffset(q, tap, last)
			off += c * g.inSz
			if !ok {
				clear(dst)
			} else {
				convRow(dst, xn[off:off+g.in[last]], tap[last], g.rd[last], q[last]*g.s[last]-g.lo[last], g.ld[last])
			}
			kk += m
		}
	}
}

// The window reductions: each result element reduces the box of operand
// elements its window covers (padding holds the identity, so it is left
// out), rows of the result along the last dimension in parallel.

func reduceWindowKernel(isMax bool) kernel {
	return func(params any, in, out []backend.Array) {
		p := params.(prims.WindowParams).Normalized(len(in[0].Shape))
		switch out[0].Buf.(type) {
		case *i64Buf:
			reduceWindow(p, i64s(out[0]), out[0].Shape, i64s(in[0]), in[0].Shape, isMax, math.MinInt64)
		case *f32Buf:
			reduceWindow(p, f32s(out[0]), out[0].Shape, f32s(in[0]), in[0].Shape, isMax, float32(math.Inf(-1)))
		case *f64Buf:
			reduceWindow(p, f64s(out[0]), out[0].Shape, f64s(in[0]), in[0].Shape, isMax, math.Inf(-1))
		default:
			panic("cpu: window reduction of dtype " + out[0].Buf.DType().String())
		}
	}
}

func reduceWindow[T int64 | float32 | float64](p prims.WindowParams, y []T, ys []int, x []T, xs []int, isMax bool, minusInf T) {
	r := len(xs)
	if len(y) == 0 {
		return
	}
	if r == 0 {
		y[0] = x[0]
		return
	}
	var ident T
	if isMax {
		ident = minusInf
	}
	last := r - 1
	nl := ys[last]
	rows := len(y) / nl
	xst := backend.ContiguousStrides(xs)
	win := backend.ShapeSize(p.Window)
	parallelFor(rows, nl*win, func(lo, hi int) {
		q := make([]int, r)
		blo, bhi, idx := make([]int, r), make([]int, r), make([]int, r)
		for row := lo; row < hi; row++ {
			t := row
			empty := false
			for j := last - 1; j >= 0; j-- {
				q[j] = t % ys[j]
				t /= ys[j]
				start := q[j]*p.Strides[j] - p.PadLo[j]
				blo[j], bhi[j] = max(start, 0), min(start+p.Window[j], xs[j])
				empty = empty || blo[j] >= bhi[j]
			}
			yr := y[row*nl : (row+1)*nl]
			if empty {
				for i := range yr {
					yr[i] = ident
				}
				continue
			}
			for ql := range yr {
				start := ql*p.Strides[last] - p.PadLo[last]
				a, b := max(start, 0), min(start+p.Window[last], xs[last])
				acc := ident
				if a < b {
					copy(idx, blo)
					for {
						off := a
						for j := range last {
							off += idx[j] * xst[j]
						}
						if isMax {
							for _, v := range x[off : off+b-a] {
								if v > acc || v != v {
									acc = v
								}
							}
						} else {
							for _, v := range x[off : off+b-a] {
								acc += v
							}
						}
						j := last - 1
						for ; j >= 0; j-- {
							idx[j]++
							if idx[j] < bhi[j] {
								break
							}
							idx[j] = blo[j]
						}
						if j < 0 {
							break
						}
					}
				}
				yr[ql] = acc
			}
		}
	})
}

// rowOffset returns where, in one input channel, the row of the last
// spatial dimension that result position q (leading dimensions) reads
// with kernel tap tap starts, or false when that row falls in padding or
// in a dilation gap.
func (g *convGeom) rowOffset(q, tap []int, last int) (int, bool) {
	off := 0
	for j := range last {
		v := q[j]*g.s[j] + tap[j]*g.rd[j] - g.lo[j]
		if v < 0 || v%g.ld[j] != 0 || v/g.ld[j] >= g.in[j] {
			return 0, false
		}
		off += v / g.ld[j] * g.inStr[j]
	}
	return off, true
}
