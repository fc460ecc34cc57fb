package cpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/backend/cpu"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// Batched dot_general shapes (the per-example products of a Vmap(Grad)):
// outer products with a batch dimension (no contraction), batched
// matrix-vector, vector-matrix and matrix-matrix products, with the batch
// dimension anywhere in each operand, on random non-integer data, checked
// against a float64 loop: outer products exactly (each element is one
// product, a·b rounded once to the dtype), the others within the GEMM
// error bound (K+2)·u·Σ|a·b| (u the dtype's unit roundoff), at 1 and 2
// threads, through Exec into a result buffer filled with NaN (every
// element must be written) and through Bind with strided operands.

// bdCase is dot_general of B products of M×K by K×N matrices; a K of -1
// means no contracting dimension (an outer product, K == 1 in effect).
// lperm and rperm order the operands' dimensions: the lhs's logical
// dimensions are (batch, free, contracting), the rhs's (batch,
// contracting, free), and operand dimension d is logical dimension
// perm[d].
type bdCase struct {
	B, M, N, K   int
	lperm, rperm []int
}

func (c bdCase) String() string {
	k := fmt.Sprint(c.K)
	if c.K < 0 {
		k = "none"
	}
	return fmt.Sprintf("B%d_M%d_N%d_K%s_l%v_r%v", c.B, c.M, c.N, k, c.lperm, c.rperm)
}

// operands returns the shapes and parameters of the case.
func (c bdCase) operands() (as, bs []int, p prims.DotParams) {
	ll, rl := []int{c.B, c.M, c.K}, []int{c.B, c.K, c.N}
	if c.K < 0 {
		ll, rl = ll[:2], []int{c.B, c.N}
	}
	lrole := func(perm []int, role int) []int {
		for d, r := range perm {
			if r == role {
				return []int{d}
			}
		}
		return nil
	}
	as, bs = make([]int, len(c.lperm)), make([]int, len(c.rperm))
	for d, r := range c.lperm {
		as[d] = ll[r]
	}
	for d, r := range c.rperm {
		bs[d] = rl[r]
	}
	p.LhsBatch, p.RhsBatch = lrole(c.lperm, 0), lrole(c.rperm, 0)
	if c.K >= 0 {
		p.LhsContract, p.RhsContract = lrole(c.lperm, 2), lrole(c.rperm, 1)
	}
	return as, bs, p
}

// physical returns the elements of an operand with the given logical
// shape (data in row-major logical order) laid out in perm's order.
func bdPhysical(data []float64, logical, perm []int) []float64 {
	shape := make([]int, len(perm))
	for d, r := range perm {
		shape[d] = logical[r]
	}
	out := make([]float64, len(data))
	lst := backend.ContiguousStrides(logical)
	idx := make([]int, len(shape))
	for i := range out {
		rem := i
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d] = rem % shape[d]
			rem /= shape[d]
		}
		off := 0
		for d, r := range perm {
			off += idx[d] * lst[r]
		}
		out[i] = data[off]
	}
	return out
}

// bdRef returns the B×M×N products of l (B×M×K) and r (B×K×N) and the sum
// of absolute products of each element.
func bdRef(l, r []float64, B, M, N, K int) (out, mag []float64) {
	out, mag = make([]float64, B*M*N), make([]float64, B*M*N)
	for b := range B {
		for i := range M {
			for j := range N {
				o := (b*M+i)*N + j
				for k := range K {
					x := l[(b*M+i)*K+k] * r[(b*K+k)*N+j]
					out[o] += x
					mag[o] += math.Abs(x)
				}
			}
		}
	}
	return out, mag
}

// bdCases returns fixed cases (the per-sample gradient's shapes, shapes
// large enough to run in parallel, empty ones) and random ones.
func bdCases(rng *rand.Rand) []bdCase {
	id2, id3 := []int{0, 1}, []int{0, 1, 2}
	cs := []bdCase{
		{B: 64, M: 128, N: 10, K: -1, lperm: id2, rperm: id2},
		{B: 16, M: 78, N: 128, K: -1, lperm: id2, rperm: id2},
		{B: 16, M: 128, N: 78, K: -1, lperm: []int{1, 0}, rperm: []int{1, 0}},
		{B: 9, M: 200, N: 40, K: 1, lperm: id3, rperm: id3},
		{B: 0, M: 5, N: 7, K: -1, lperm: id2, rperm: id2},
		{B: 3, M: 0, N: 7, K: -1, lperm: id2, rperm: id2},
		{B: 3, M: 5, N: 0, K: -1, lperm: id2, rperm: id2},
		{B: 3, M: 5, N: 7, K: 0, lperm: id3, rperm: id3},
		{B: 0, M: 5, N: 7, K: 4, lperm: id3, rperm: id3},
		{B: 8, M: 128, N: 1, K: 100, lperm: id3, rperm: id3},
		{B: 8, M: 1, N: 128, K: 100, lperm: id3, rperm: id3},
		{B: 8, M: 1, N: 128, K: 100, lperm: id3, rperm: []int{0, 2, 1}},
		{B: 8, M: 40, N: 30, K: 50, lperm: id3, rperm: id3},
		{B: 8, M: 40, N: 30, K: 50, lperm: []int{2, 0, 1}, rperm: []int{1, 2, 0}},
		// Packed GEMM blocks: K past gemmKC, N past gemmNC, tiles in
		// parallel, edge tiles.
		{B: 2, M: 13, N: 300, K: 600, lperm: id3, rperm: id3},
		{B: 2, M: 13, N: 300, K: 600, lperm: []int{1, 2, 0}, rperm: []int{2, 0, 1}},
		{B: 1, M: 100, N: 100, K: 300, lperm: id3, rperm: []int{0, 2, 1}},
		{B: 1, M: 64, N: 128, K: 784, lperm: id3, rperm: id3},
		{B: 1, M: 400, N: 20, K: 300, lperm: []int{2, 1, 0}, rperm: id3},
		// Operands read in place (contiguous rows of B, columns of A)
		// with short edge panels, and strides of 2 KiB multiples, which
		// are packed instead.
		{B: 1, M: 31, N: 47, K: 29, lperm: []int{0, 2, 1}, rperm: id3},
		{B: 2, M: 256, N: 512, K: 40, lperm: id3, rperm: id3},
		{B: 1, M: 256, N: 512, K: 40, lperm: []int{0, 2, 1}, rperm: []int{0, 2, 1}},
		{B: 1, M: 512, N: 256, K: 30, lperm: []int{0, 2, 1}, rperm: id3},
	}
	sizes := []int{0, 1, 2, 3, 7, 10, 33, 64}
	perms2 := [][]int{{0, 1}, {1, 0}}
	perms3 := [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	for range 60 {
		c := bdCase{
			B: sizes[rng.IntN(len(sizes))], M: sizes[rng.IntN(len(sizes))],
			N: sizes[rng.IntN(len(sizes))], K: sizes[rng.IntN(len(sizes))] - 1,
		}
		if c.K < 0 {
			c.K = -1
			c.lperm, c.rperm = perms2[rng.IntN(2)], perms2[rng.IntN(2)]
		} else {
			c.lperm, c.rperm = perms3[rng.IntN(6)], perms3[rng.IntN(6)]
		}
		cs = append(cs, c)
	}
	return cs
}

// bdUnit is the unit roundoff of dt (0 for int64: exact).
func bdUnit(dt backend.DType) float64 {
	switch dt {
	case backend.Float32:
		return 0x1p-24
	case backend.Float64:
		return 0x1p-53
	}
	return 0
}

func TestDotBatched(t *testing.T) {
	defer cpu.SetThreads(0)
	be := cpu.New()
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range bdCases(rng) {
		as, bs, p := c.operands()
		k := max(c.K, 1)
		if c.K == 0 {
			k = 0
		}
		l := make([]float64, c.B*c.M*k)
		r := make([]float64, c.B*k*c.N)
		for i := range l {
			l[i] = rng.NormFloat64()
		}
		for i := range r {
			r[i] = rng.NormFloat64()
		}
		for _, dt := range stNumericDTypes {
			ld, rd := stCast(l, dt), stCast(r, dt)
			if dt == backend.Int64 {
				ld, rd = bdInts(l), bdInts(r)
			}
			want, mag := bdRef(ld, rd, c.B, c.M, c.N, k)
			if c.K < 0 {
				// One product each: a·b rounded once to the dtype.
				for i, w := range want {
					want[i] = stCast([]float64{w}, dt)[0]
				}
			}
			llog, rlog := []int{c.B, c.M, k}, []int{c.B, k, c.N}
			if c.K < 0 {
				llog, rlog = llog[:2], []int{c.B, c.N}
			}
			lp, rp := bdPhysical(ld, llog, c.lperm), bdPhysical(rd, rlog, c.rperm)
			for _, threads := range []int{1, 2} {
				t.Run(fmt.Sprintf("%v/%v/threads%d", c, dt, threads), func(t *testing.T) {
					cpu.SetThreads(threads)
					check := func(how string, got []float64) {
						t.Helper()
						for i, w := range want {
							tol := float64(k+2) * bdUnit(dt) * mag[i]
							if c.K < 0 || dt == backend.Int64 {
								tol = 0
							}
							if g := got[i]; math.IsNaN(g) || math.Abs(g-w) > tol {
								t.Fatalf("%s: %v: element %d = %v, want %v (tolerance %g)", how, p, i, g, w, tol)
							}
						}
					}
					// Exec into a result filled with NaN (-1 for int64).
					shape := prims.DotShape(p, as, bs)
					fill := make([]float64, backend.ShapeSize(shape))
					for i := range fill {
						fill[i] = math.NaN()
						if dt == backend.Int64 {
							fill[i] = -1
						}
					}
					out := backend.Array{Buf: be.FromHost(stHost(fill, dt)), Shape: shape}
					in := []backend.Array{
						{Buf: be.FromHost(stHost(lp, dt)), Shape: as},
						{Buf: be.FromHost(stHost(rp, dt)), Shape: bs},
					}
					be.Exec(prims.DotGeneral.Op, p, in, []backend.Array{out})
					check("Exec", stRead(interp.NewConcrete(be, out)))
					// Bind on strided operands (Exec materializes them).
					got := interp.Bind1(prims.DotGeneral, p, stLaidOut(lp, dt, stSliced, as...), stLaidOut(rp, dt, stTransposed, bs...))
					if !slices.Equal(got.Shape(), shape) {
						t.Fatalf("shape %v, want %v", got.Shape(), shape)
					}
					check("Bind strided", stRead(got))
				})
			}
		}
	}
}

// bdInts rounds data to small integers (for int64).
func bdInts(data []float64) []float64 {
	out := make([]float64, len(data))
	for i, v := range data {
		out[i] = math.Round(3 * v)
	}
	return out
}

// TestDotBatchedAllocs checks that batched outer products and batched
// GEMMs allocate nothing per batch element: about the same few
// allocations per call whatever the batch size (a garbage collection
// between runs may empty the GEMM's buffer pool, hence the slack),
// serial and in parallel.
func TestDotBatchedAllocs(t *testing.T) {
	defer cpu.SetThreads(0)
	be := cpu.New()
	cases := []struct {
		name   string
		as, bs func(B int) []int
		p      prims.DotParams
	}{
		{"outer", func(B int) []int { return []int{B, 300} }, func(B int) []int { return []int{B, 128} },
			prims.DotParams{LhsBatch: []int{0}, RhsBatch: []int{0}}},
		{"bmm", func(B int) []int { return []int{B, 30, 40} }, func(B int) []int { return []int{B, 40, 20} },
			prims.DotParams{LhsBatch: []int{0}, RhsBatch: []int{0}, LhsContract: []int{2}, RhsContract: []int{1}}},
	}
	for _, c := range cases {
		allocs := func(B int) float64 {
			as, bs := c.as(B), c.bs(B)
			in := []backend.Array{
				{Buf: be.Alloc(backend.Float32, backend.ShapeSize(as)), Shape: as},
				{Buf: be.Alloc(backend.Float32, backend.ShapeSize(bs)), Shape: bs},
			}
			shape := prims.DotShape(c.p, as, bs)
			out := []backend.Array{{Buf: be.Alloc(backend.Float32, backend.ShapeSize(shape)), Shape: shape}}
			args := make([]backend.Array, 2)
			return testing.AllocsPerRun(20, func() {
				copy(args, in)
				be.Exec(prims.DotGeneral.Op, c.p, args, out)
			})
		}
		for _, threads := range []int{1, 2} {
			cpu.SetThreads(threads)
			small, big := allocs(4), allocs(64)
			if big > small+4 || big > 20 {
				t.Errorf("%s, threads %d: %v allocations per call at batch 64, %v at batch 4", c.name, threads, big, small)
			}
		}
	}
}
