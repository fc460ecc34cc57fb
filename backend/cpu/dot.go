package cpu

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/prims"
)

// Kernels are registered while package variables are initialized, which
// precedes every init function: cpu.go's init builds the backend's
// kernel table, and init functions run in file-name order.
var _ = registerDotKernels()

func registerDotKernels() bool {
	registerStrided(prims.DotGeneral, dotGeneral)
	return true
}

// dot_general views each operand as a batch of matrices: the lhs as B
// matrices of M×K (free × contracting), the rhs as B matrices of K×N
// (contracting × free), and the result, laid out [batch, lhs free, rhs
// free], as B contiguous M×N matrices. An operand whose dimension groups
// are already laid out that way in memory (each group one run of strides,
// as in [b, m, k], [b, k, m], [m, b, k], …) is read in place, with the
// GEMM transpose flags and leading dimensions chosen to match; any other
// layout is first permuted into a contiguous temporary. The kernel is
// registered strided: views (a transposed key, attention heads split
// out of the features, the transposes of a product's derivative) reach
// it as they are, so an operand is copied once at most, and only where
// its groups do not merge; an operand with a negative stride (the
// conformance suite's reversed layouts) is made contiguous first.

const (
	// smallDot is the number of multiply-adds per batch element at or
	// below which a plain loop beats a GEMM call's fixed cost.
	smallDot = 512
	// bigGEMM is the number of multiply-adds per batch element from which
	// one GEMM is parallelised itself (by the BLAS, or across the packed
	// GEMM's tiles); below it batch elements run in parallel instead.
	bigGEMM = 1 << 21
)

// dotOperand is one operand of dot_general as a batch of matrices: the
// element (batch b, free f, contracting c) is at buf[off(b) + f*fs + c*cs].
type dotOperand struct {
	arr    backend.Array // the operand (strides ≥ 0), or a permuted copy of it
	fs, cs int           // strides of the merged free and contracting groups
	bs     int           // stride of the merged batch group when offs is nil
	offs   []int         // offsets of each batch element relative to arr.Offset, when the batch group does not merge
}

// off returns the offset in arr.Buf of batch element b's matrix.
func (o *dotOperand) off(b int) int {
	if o.offs != nil {
		return o.arr.Offset + o.offs[b]
	}
	return o.arr.Offset + b*o.bs
}

// dotPlan is dot_general reduced to B products of M×K by K×N matrices.
type dotPlan struct {
	B, M, N, K int
	lhs, rhs   dotOperand
	// acc makes the packed GEMM add the products to the result instead
	// of storing them (conv_general_dilated's blocked contraction).
	acc bool
}

// freeDims returns the dimensions of a rank-r operand that are neither
// batch nor contracting, in increasing order.
func freeDims(r int, batch, contract []int) []int {
	used := make([]bool, r)
	for _, d := range batch {
		used[d] = true
	}
	for _, d := range contract {
		used[d] = true
	}
	free := make([]int, 0, r)
	for d := range r {
		if !used[d] {
			free = append(free, d)
		}
	}
	return free
}

func dimsSize(shape, dims []int) int {
	n := 1
	for _, d := range dims {
		n *= shape[d]
	}
	return n
}

// mergeDims reports whether dims (in the order given) are laid out as one
// dimension, and returns its stride. Dimensions of size 1 are ignored; a
// group of size 1 has stride 0.
func mergeDims(shape, strides, dims []int) (stride int, ok bool) {
	first := true
	for _, d := range dims {
		if shape[d] == 1 {
			continue
		}
		if !first && stride != strides[d]*shape[d] {
			return 0, false
		}
		stride, first = strides[d], false
	}
	return stride, true
}

// batchOffsets returns the offset of each batch element (batch dims
// iterated in row-major order) for a batch group that does not merge.
func batchOffsets(shape, strides, dims []int, n int) []int {
	offs := make([]int, n)
	idx := make([]int, len(dims))
	off := 0
	for b := range n {
		offs[b] = off
		for k := len(dims) - 1; k >= 0; k-- {
			d := dims[k]
			idx[k]++
			off += strides[d]
			if idx[k] < shape[d] {
				break
			}
			off -= strides[d] * shape[d]
			idx[k] = 0
		}
	}
	return offs
}

// permuted returns a contiguous copy of a with its dimensions in the order
// of groups concatenated, and the dimension lists of the groups in the
// copy's numbering.
func permuted(a backend.Array, groups ...[]int) (backend.Array, [][]int) {
	st := a.EffectiveStrides()
	var shape, strides []int
	renamed := make([][]int, len(groups))
	for g, dims := range groups {
		renamed[g] = make([]int, len(dims))
		for i, d := range dims {
			renamed[g][i] = len(shape)
			shape = append(shape, a.Shape[d])
			strides = append(strides, st[d])
		}
	}
	view := backend.Array{Buf: a.Buf, Shape: shape, Strides: strides, Offset: a.Offset}
	tmp := backend.Array{Buf: New().Alloc(a.Buf.DType(), a.Size()), Shape: shape}
	copyStrided(tmp, view)
	return tmp, renamed
}

// newDotOperand describes a as a batch of matrices with the given groups,
// or reports false when the free or contracting group does not merge.
func newDotOperand(a backend.Array, batch, free, contract []int, nb int) (dotOperand, bool) {
	st := a.EffectiveStrides()
	fs, okF := mergeDims(a.Shape, st, free)
	cs, okC := mergeDims(a.Shape, st, contract)
	if !okF || !okC {
		return dotOperand{}, false
	}
	o := dotOperand{arr: a, fs: fs, cs: cs}
	if bs, ok := mergeDims(a.Shape, st, batch); ok {
		o.bs = bs
	} else {
		o.offs = batchOffsets(a.Shape, st, batch, nb)
	}
	return o, true
}

// leading returns the leading dimension with which a rows×cols matrix
// with the given strides is a row-major BLAS matrix, or false if it is
// not one.
func leading(rowStride, colStride, rows, cols int) (int, bool) {
	if cols > 1 && colStride != 1 {
		return 0, false
	}
	if rows <= 1 {
		return max(1, cols), true
	}
	return rowStride, rowStride >= max(1, cols)
}

// lhsGEMM returns the transpose flag and leading dimension of the lhs as
// the A operand of a GEMM (M×K).
func (p *dotPlan) lhsGEMM() (blas.Transpose, int, bool) {
	o := &p.lhs
	if ld, ok := leading(o.fs, o.cs, p.M, p.K); ok {
		return blas.NoTrans, ld, true
	}
	if ld, ok := leading(o.cs, o.fs, p.K, p.M); ok {
		return blas.Trans, ld, true
	}
	return 0, 0, false
}

// rhsGEMM returns the transpose flag and leading dimension of the rhs as
// the B operand of a GEMM (K×N).
func (p *dotPlan) rhsGEMM() (blas.Transpose, int, bool) {
	o := &p.rhs
	if ld, ok := leading(o.cs, o.fs, p.K, p.N); ok {
		return blas.NoTrans, ld, true
	}
	if ld, ok := leading(o.fs, o.cs, p.N, p.K); ok {
		return blas.Trans, ld, true
	}
	return 0, 0, false
}

func dotGeneral(params any, in, out []backend.Array) {
	dp := params.(prims.DotParams)
	a, b := nonNegative(in[0]), nonNegative(in[1])
	lf := freeDims(len(a.Shape), dp.LhsBatch, dp.LhsContract)
	rf := freeDims(len(b.Shape), dp.RhsBatch, dp.RhsContract)
	p := dotPlan{
		B: dimsSize(a.Shape, dp.LhsBatch),
		M: dimsSize(a.Shape, lf),
		N: dimsSize(b.Shape, rf),
		K: dimsSize(a.Shape, dp.LhsContract),
	}
	if p.B*p.M*p.N == 0 || p.K == 0 {
		// Nothing to compute, or a sum over nothing: zeros (written,
		// since out may be a reused buffer).
		zero(out[0])
		return
	}
	lb, lc := dp.LhsBatch, dp.LhsContract
	rb, rc := dp.RhsBatch, dp.RhsContract
	var ok bool
	if p.lhs, ok = newDotOperand(a, lb, lf, lc, p.B); !ok {
		a, g := permuted(a, lb, lf, lc)
		lb, lf, lc = g[0], g[1], g[2]
		p.lhs, _ = newDotOperand(a, lb, lf, lc, p.B)
	}
	if p.rhs, ok = newDotOperand(b, rb, rf, rc, p.B); !ok {
		b, g := permuted(b, rb, rc, rf)
		rb, rc, rf = g[0], g[1], g[2]
		p.rhs, _ = newDotOperand(b, rb, rf, rc, p.B)
	}
	if p.K == 1 {
		// Outer products (dot_batched.go): the rhs rows are read in place
		// when contiguous.
		if p.N > 1 && p.rhs.fs != 1 {
			b, g := permuted(p.rhs.arr, rb, rc, rf)
			p.rhs, _ = newDotOperand(b, g[0], g[2], g[1], p.B)
		}
		switch out[0].Buf.(type) {
		case *i64Buf:
			dotOuter(&p, i64s(out[0]), p.lhs.arr.Buf.(*i64Buf).s, p.rhs.arr.Buf.(*i64Buf).s, scaleRow[int64])
		case *f32Buf:
			dotOuter(&p, f32s(out[0]), p.lhs.arr.Buf.(*f32Buf).s, p.rhs.arr.Buf.(*f32Buf).s, scaleRow32)
		case *f64Buf:
			dotOuter(&p, f64s(out[0]), p.lhs.arr.Buf.(*f64Buf).s, p.rhs.arr.Buf.(*f64Buf).s, scaleRow64)
		default:
			panic("cpu: dot_general of dtype " + out[0].Buf.DType().String())
		}
		return
	}
	small := p.M*p.N*p.K <= smallDot
	if !small && p.N > 1 && p.rhs.fs != 1 && out[0].Buf.DType() == backend.Int64 {
		// The plain loop runs along rows of the rhs.
		b, g := permuted(p.rhs.arr, rb, rc, rf)
		p.rhs, _ = newDotOperand(b, g[0], g[2], g[1], p.B)
	}
	if !small && out[0].Buf.DType().IsFloat() && !usePacked(&p) {
		if _, _, ok := p.lhsGEMM(); !ok {
			a, g := permuted(p.lhs.arr, lb, lf, lc)
			p.lhs, _ = newDotOperand(a, g[0], g[1], g[2], p.B)
		}
		if _, _, ok := p.rhsGEMM(); !ok {
			b, g := permuted(p.rhs.arr, rb, rc, rf)
			p.rhs, _ = newDotOperand(b, g[0], g[2], g[1], p.B)
		}
	}
	switch c := out[0].Buf.(type) {
	case *i64Buf:
		dotLoop(&p, i64s(out[0]), p.lhs.arr.Buf.(*i64Buf).s, p.rhs.arr.Buf.(*i64Buf).s)
	case *f32Buf:
		if small {
			dotLoop(&p, f32s(out[0]), p.lhs.arr.Buf.(*f32Buf).s, p.rhs.arr.Buf.(*f32Buf).s)
		} else {
			dotBLAS32(&p, c.s[out[0].Offset:], p.lhs.arr.Buf.(*f32Buf).s, p.rhs.arr.Buf.(*f32Buf).s)
		}
	case *f64Buf:
		if small {
			dotLoop(&p, f64s(out[0]), p.lhs.arr.Buf.(*f64Buf).s, p.rhs.arr.Buf.(*f64Buf).s)
		} else {
			dotBLAS64(&p, c.s[out[0].Offset:], p.lhs.arr.Buf.(*f64Buf).s, p.rhs.arr.Buf.(*f64Buf).s)
		}
	default:
		panic("cpu: dot_general of dtype " + out[0].Buf.DType().String())
	}
}

// dotLoop computes the products with plain loops, one result row (batch
// element, lhs free index) at a time. Every element of c is written (c
// may be a reused buffer, not zeroed memory: the Exec contract).
func dotLoop[T int64 | float32 | float64](p *dotPlan, c, a, b []T) {
	M, N, K := p.M, p.N, p.K
	lhs, rhs := &p.lhs, &p.rhs
	parallelFor(p.B*M, N*K, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			bi, i := r/M, r%M
			ao := lhs.off(bi) + i*lhs.fs
			bo := rhs.off(bi)
			row := c[r*N : r*N+N]
			clear(row)
			for k := range K {
				av := a[ao+k*lhs.cs]
				bk := bo + k*rhs.cs
				if rhs.fs == 1 {
					for j, bv := range b[bk : bk+N] {
						row[j] += av * bv
					}
				} else {
					for j := range row {
						row[j] += av * b[bk+j*rhs.fs]
					}
				}
			}
		}
	})
}

// gemmArgs are the operands of dot_general as stored BLAS matrices: op(A)
// is M×K and op(B) is K×N; A is stored ar×ac with leading dimension lda,
// B br×bc with ldb.
type gemmArgs struct {
	tA, tB      blas.Transpose
	ar, ac, lda int
	br, bc, ldb int
}

func (p *dotPlan) gemmArgs() gemmArgs {
	var g gemmArgs
	g.tA, g.lda, _ = p.lhsGEMM()
	g.tB, g.ldb, _ = p.rhsGEMM()
	g.ar, g.ac = p.M, p.K
	if g.tA == blas.Trans {
		g.ar, g.ac = g.ac, g.ar
	}
	g.br, g.bc = p.K, p.N
	if g.tB == blas.Trans {
		g.br, g.bc = g.bc, g.br
	}
	return g
}

// gemvArgs are the operands of a dot_general whose M or N is 1 as a
// matrix-vector product per batch element: the result (length L) is op(W)
// times the vector v, where W is stored L×K (t == NoTrans) or K×L (t ==
// Trans) with leading dimension ld, and v has stride inc.
type gemvArgs struct {
	w, v    *dotOperand
	t       blas.Transpose
	ld, inc int
	L       int
}

func (p *dotPlan) gemvArgs() gemvArgs {
	if p.N == 1 {
		g := gemvArgs{w: &p.lhs, v: &p.rhs, L: p.M, inc: max(1, p.rhs.cs)}
		g.t, g.ld, _ = p.lhsGEMM()
		return g
	}
	g := gemvArgs{w: &p.rhs, v: &p.lhs, L: p.N, inc: max(1, p.lhs.cs)}
	var tB blas.Transpose
	tB, g.ld, _ = p.rhsGEMM()
	g.t = blas.Trans
	if tB == blas.Trans {
		g.t = blas.NoTrans
	}
	return g
}

// forRows runs gemv over the B·L result elements split into runs
// [r0, r1) of one batch element b, in parallel when the total work pays.
func forRows(p *dotPlan, g *gemvArgs, gemv func(b, r0, r1 int)) {
	L := g.L
	parallelFor(p.B*L, p.K, func(lo, hi int) {
		for b := lo / L; b*L < hi; b++ {
			gemv(b, max(lo, b*L)-b*L, min(hi, (b+1)*L)-b*L)
		}
	})
}

// sub returns the offset and stored shape of result rows [r0, r1) of W.
func (g *gemvArgs) sub(b, r0, r1, K int) (off, rows, cols int) {
	if g.t == blas.NoTrans {
		return g.w.off(b) + r0*g.ld, r1 - r0, K
	}
	return g.w.off(b) + r0, K, r1 - r0
}

// forBatches runs gemm for each batch element: in parallel when one GEMM
// is too small for the BLAS to parallelise it, in order otherwise.
func forBatches(p *dotPlan, gemm func(b int)) {
	work := p.M * p.N * p.K
	if p.B > 1 && work < bigGEMM {
		parallelFor(p.B, work, func(lo, hi int) {
			for b := lo; b < hi; b++ {
				gemm(b)
			}
		})
		return
	}
	for b := range p.B {
		gemm(b)
	}
}

// dotBLAS64 computes the products with GEMV when M or N is 1 and with GEMM
// otherwise; c is the result.
func dotBLAS64(p *dotPlan, c, a, b []float64) {
	if p.M == 1 || p.N == 1 {
		g := p.gemvArgs()
		w, v := a, b
		if g.w == &p.rhs {
			w, v = b, a
		}
		forRows(p, &g, func(i, r0, r1 int) {
			off, rows, cols := g.sub(i, r0, r1, p.K)
			blas64.Gemv(g.t, 1,
				blas64.General{Rows: rows, Cols: cols, Stride: g.ld, Data: w[off:]},
				blas64.Vector{N: p.K, Inc: g.inc, Data: v[g.v.off(i):]},
				0, blas64.Vector{N: r1 - r0, Inc: 1, Data: c[i*g.L+r0 : i*g.L+r1]})
		})
		return
	}
	mn := p.M * p.N
	if usePacked(p) {
		// The packed GEMM (dot_gemm.go).
		if p.B > 1 && mn*p.K < bigGEMM {
			forBatches(p, func(i int) { gemm64(p, i, c[i*mn:(i+1)*mn], a, b, false) })
			return
		}
		for i := range p.B {
			gemm64(p, i, c[i*mn:(i+1)*mn], a, b, true)
		}
		return
	}
	g := p.gemmArgs()
	forBatches(p, func(i int) {
		blas64.Gemm(g.tA, g.tB, 1,
			blas64.General{Rows: g.ar, Cols: g.ac, Stride: g.lda, Data: a[p.lhs.off(i):]},
			blas64.General{Rows: g.br, Cols: g.bc, Stride: g.ldb, Data: b[p.rhs.off(i):]},
			0, blas64.General{Rows: p.M, Cols: p.N, Stride: p.N, Data: c[i*mn : (i+1)*mn]})
	})
}

// dotBLAS32 is dotBLAS64 for float32.
func dotBLAS32(p *dotPlan, c, a, b []float32) {
	if p.M == 1 || p.N == 1 {
		g := p.gemvArgs()
		w, v := a, b
		if g.w == &p.rhs {
			w, v = b, a
		}
		forRows(p, &g, func(i, r0, r1 int) {
			off, rows, cols := g.sub(i, r0, r1, p.K)
			blas32.Gemv(g.t, 1,
				blas32.General{Rows: rows, Cols: cols, Stride: g.ld, Data: w[off:]},
				blas32.Vector{N: p.K, Inc: g.inc, Data: v[g.v.off(i):]},
				0, blas32.Vector{N: r1 - r0, Inc: 1, Data: c[i*g.L+r0 : i*g.L+r1]})
		})
		return
	}
	mn := p.M * p.N
	if usePacked(p) {
		// The packed GEMM (dot_gemm.go).
		if p.B > 1 && mn*p.K < bigGEMM {
			forBatches(p, func(i int) { gemm32(p, i, c[i*mn:(i+1)*mn], a, b, false) })
			return
		}
		for i := range p.B {
			gemm32(p, i, c[i*mn:(i+1)*mn], a, b, true)
		}
		return
	}
	g := p.gemmArgs()
	forBatches(p, func(i int) {
		blas32.Gemm(g.tA, g.tB, 1,
			blas32.General{Rows: g.ar, Cols: g.ac, Stride: g.lda, Data: a[p.lhs.off(i):]},
			blas32.General{Rows: g.br, Cols: g.bc, Stride: g.ldb, Data: b[p.rhs.off(i):]},
			0, blas32.General{Rows: p.M, Cols: p.N, Stride: p.N, Data: c[i*mn : (i+1)*mn]})
	})
}
