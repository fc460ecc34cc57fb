package cpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// dot_general is checked against dtRefDot, a float64 loop over the result's
// multi-indices. Operands hold small integers (-3…3), so every product and
// partial sum is exact in each dtype whatever order a BLAS sums in; the
// stated tolerances (dtTol) are a guard, not a need.

// dtTol is the tolerance relative to max(1, Σ|a·b|) for a result element.
func dtTol(dt backend.DType) float64 {
	switch dt {
	case backend.Float32:
		return 1e-6
	case backend.Float64:
		return 1e-12
	}
	return 0
}

// dtFree returns the dimensions of a rank-r operand that are neither batch
// nor contracting.
func dtFree(r int, batch, contract []int) []int {
	used := make([]bool, r)
	for _, d := range append(append([]int{}, batch...), contract...) {
		used[d] = true
	}
	var free []int
	for d := range r {
		if !used[d] {
			free = append(free, d)
		}
	}
	return free
}

// dtRefDot returns dot_general of a (shape as) and b (shape bs), the sum of
// absolute products of each element (for tolerances), and the shape.
func dtRefDot(a []float64, as []int, b []float64, bs []int, p prims.DotParams) (out, mag []float64, shape []int) {
	lf := dtFree(len(as), p.LhsBatch, p.LhsContract)
	rf := dtFree(len(bs), p.RhsBatch, p.RhsContract)
	sa, sb := backend.ContiguousStrides(as), backend.ContiguousStrides(bs)
	// Each result dimension advances a and b by these strides.
	var oa, ob []int
	for i := range p.LhsBatch {
		shape = append(shape, as[p.LhsBatch[i]])
		oa, ob = append(oa, sa[p.LhsBatch[i]]), append(ob, sb[p.RhsBatch[i]])
	}
	for _, d := range lf {
		shape = append(shape, as[d])
		oa, ob = append(oa, sa[d]), append(ob, 0)
	}
	for _, d := range rf {
		shape = append(shape, bs[d])
		oa, ob = append(oa, 0), append(ob, sb[d])
	}
	// Offsets of each contracting multi-index.
	var csh []int
	for _, d := range p.LhsContract {
		csh = append(csh, as[d])
	}
	nc := backend.ShapeSize(csh)
	ca, cb := make([]int, nc), make([]int, nc)
	for c := range nc {
		idx := stUnravel(c, csh)
		for i, v := range idx {
			ca[c] += v * sa[p.LhsContract[i]]
			cb[c] += v * sb[p.RhsContract[i]]
		}
	}
	n := backend.ShapeSize(shape)
	out, mag = make([]float64, n), make([]float64, n)
	for i := range n {
		idx := stUnravel(i, shape)
		ao, bo := 0, 0
		for k, v := range idx {
			ao += v * oa[k]
			bo += v * ob[k]
		}
		for c := range nc {
			x := a[ao+ca[c]] * b[bo+cb[c]]
			out[i] += x
			mag[i] += math.Abs(x)
		}
	}
	if shape == nil {
		shape = []int{}
	}
	return out, mag, shape
}

// dtRun binds dot_general on a and b (laid out as l) in dtype dt and
// compares with dtRefDot.
// dtFatal is the part of testing.TB that dtRun needs (rapid.T has it too).
type dtFatal interface {
	Helper()
	Fatalf(format string, args ...any)
}

func dtRun(t dtFatal, dt backend.DType, l stLayout, a []float64, as []int, b []float64, bs []int, p prims.DotParams) {
	t.Helper()
	want, mag, ws := dtRefDot(a, as, b, bs, p)
	got := interp.Bind1(prims.DotGeneral, p, stLaidOut(a, dt, l, as...), stLaidOut(b, dt, l, bs...))
	if !slices.Equal(got.Shape(), ws) {
		t.Fatalf("%v: shape %v, want %v", p, got.Shape(), ws)
	}
	g := stRead(got)
	for i := range want {
		if d := math.Abs(g[i] - want[i]); d > dtTol(dt)*max(1, mag[i]) || math.IsNaN(g[i]) {
			t.Fatalf("%v, %v%v·%v%v: element %d = %v, want %v", p, dt, as, dt, bs, i, g[i], want[i])
		}
	}
}

// dtData returns n small integers.
func dtData(rng *rand.Rand, n int) []float64 {
	d := make([]float64, n)
	for i := range d {
		d[i] = float64(rng.IntN(7) - 3)
	}
	return d
}

func TestDotGeneral(t *testing.T) {
	type dims = []int
	cases := []struct {
		name   string
		as, bs dims
		p      prims.DotParams
	}{
		{"matmul", dims{40, 50}, dims{50, 30}, prims.DotParams{LhsContract: dims{1}, RhsContract: dims{0}}},
		{"lhs-km", dims{50, 40}, dims{50, 30}, prims.DotParams{LhsContract: dims{0}, RhsContract: dims{0}}},
		{"rhs-nk", dims{40, 50}, dims{30, 50}, prims.DotParams{LhsContract: dims{1}, RhsContract: dims{1}}},
		{"both-transposed", dims{50, 40}, dims{30, 50}, prims.DotParams{LhsContract: dims{0}, RhsContract: dims{1}}},
		{"small-matmul", dims{3, 4}, dims{4, 5}, prims.DotParams{LhsContract: dims{1}, RhsContract: dims{0}}},
		{"small-rhs-nk", dims{3, 4}, dims{5, 4}, prims.DotParams{LhsContract: dims{1}, RhsContract: dims{1}}},
		{"batch-leading", dims{3, 20, 30}, dims{3, 30, 25}, prims.DotParams{LhsContract: dims{2}, RhsContract: dims{1}, LhsBatch: dims{0}, RhsBatch: dims{0}}},
		{"batch-middle", dims{20, 3, 30}, dims{30, 3, 25}, prims.DotParams{LhsContract: dims{2}, RhsContract: dims{0}, LhsBatch: dims{1}, RhsBatch: dims{1}}},
		{"batch-innermost", dims{20, 30, 3}, dims{3, 30, 25}, prims.DotParams{LhsContract: dims{1}, RhsContract: dims{1}, LhsBatch: dims{2}, RhsBatch: dims{0}}},
		{"rhs-batch-innermost", dims{3, 20, 30}, dims{30, 25, 3}, prims.DotParams{LhsContract: dims{2}, RhsContract: dims{0}, LhsBatch: dims{0}, RhsBatch: dims{2}}},
		{"batch-split", dims{2, 10, 3, 12}, dims{2, 3, 12, 9}, prims.DotParams{LhsContract: dims{3}, RhsContract: dims{2}, LhsBatch: dims{0, 2}, RhsBatch: dims{0, 1}}},
		{"batch-reordered", dims{3, 2, 10, 12}, dims{2, 3, 12, 9}, prims.DotParams{LhsContract: dims{3}, RhsContract: dims{2}, LhsBatch: dims{1, 0}, RhsBatch: dims{0, 1}}},
		{"contract-split", dims{6, 10, 7}, dims{7, 8, 6}, prims.DotParams{LhsContract: dims{0, 2}, RhsContract: dims{2, 0}}},
		{"contract-merged", dims{10, 6, 7}, dims{6, 7, 8}, prims.DotParams{LhsContract: dims{1, 2}, RhsContract: dims{0, 1}}},
		{"contract-reversed", dims{10, 6, 7}, dims{7, 6, 8}, prims.DotParams{LhsContract: dims{2, 1}, RhsContract: dims{0, 1}}},
		{"free-split", dims{4, 9, 5}, dims{9, 30}, prims.DotParams{LhsContract: dims{1}, RhsContract: dims{0}}},
		{"unit-dims", dims{1, 40, 1, 50}, dims{50, 1, 30}, prims.DotParams{LhsContract: dims{3}, RhsContract: dims{0}}},
		{"matvec", dims{40, 50}, dims{50}, prims.DotParams{LhsContract: dims{1}, RhsContract: dims{0}}},
		{"vecmat", dims{50}, dims{50, 30}, prims.DotParams{LhsContract: dims{0}, RhsContract: dims{0}}},
		{"vecmat-t", dims{50}, dims{30, 50}, prims.DotParams{LhsContract: dims{0}, RhsContract: dims{1}}},
		{"matvec-t", dims{50, 40}, dims{50}, prims.DotParams{LhsContract: dims{0}, RhsContract: dims{0}}},
		{"batched-matvec", dims{3, 300, 100}, dims{100, 3}, prims.DotParams{LhsContract: dims{2}, RhsContract: dims{0}, LhsBatch: dims{0}, RhsBatch: dims{1}}},
		{"batched-vecmat-t", dims{100, 3}, dims{3, 300, 100}, prims.DotParams{LhsContract: dims{0}, RhsContract: dims{2}, LhsBatch: dims{1}, RhsBatch: dims{0}}},
		{"batched-vecmat", dims{3, 100}, dims{100, 3, 300}, prims.DotParams{LhsContract: dims{1}, RhsContract: dims{0}, LhsBatch: dims{0}, RhsBatch: dims{1}}},
		{"big-inner", dims{5000}, dims{5000}, prims.DotParams{LhsContract: dims{0}, RhsContract: dims{0}}},
		{"inner", dims{50}, dims{50}, prims.DotParams{LhsContract: dims{0}, RhsContract: dims{0}}},
		{"outer", dims{5}, dims{7}, prims.DotParams{}},
		{"big-outer", dims{50}, dims{70}, prims.DotParams{}},
		{"scalars", dims{}, dims{}, prims.DotParams{}},
		{"scalar-matrix", dims{}, dims{3, 4}, prims.DotParams{}},
		{"elementwise", dims{100}, dims{100}, prims.DotParams{LhsBatch: dims{0}, RhsBatch: dims{0}}},
		{"batched-vec-dot", dims{30, 20}, dims{20, 30}, prims.DotParams{LhsContract: dims{1}, RhsContract: dims{0}, LhsBatch: dims{0}, RhsBatch: dims{1}}},
		{"k0", dims{3, 0}, dims{0, 4}, prims.DotParams{LhsContract: dims{1}, RhsContract: dims{0}}},
		{"m0", dims{0, 5}, dims{5, 4}, prims.DotParams{LhsContract: dims{1}, RhsContract: dims{0}}},
		{"b0", dims{0, 3, 4}, dims{0, 4, 2}, prims.DotParams{LhsContract: dims{2}, RhsContract: dims{1}, LhsBatch: dims{0}, RhsBatch: dims{0}}},
		{"batched-parallel", dims{8, 20, 20}, dims{8, 20, 20}, prims.DotParams{LhsContract: dims{2}, RhsContract: dims{1}, LhsBatch: dims{0}, RhsBatch: dims{0}}},
		{"batched-big", dims{2, 130, 130}, dims{2, 130, 130}, prims.DotParams{LhsContract: dims{2}, RhsContract: dims{1}, LhsBatch: dims{0}, RhsBatch: dims{0}}},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range cases {
		a := dtData(rng, backend.ShapeSize(c.as))
		b := dtData(rng, backend.ShapeSize(c.bs))
		t.Run(c.name, func(t *testing.T) {
			stForEach(t, stNumericDTypes, func(t *testing.T, dt backend.DType, l stLayout) {
				dtRun(t, dt, l, a, c.as, b, c.bs, c.p)
			})
		})
	}
}

// TestDotGeneralFloats checks GEMM results on non-integer data.
func TestDotGeneralFloats(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{17, 64, 100} {
		a, b := make([]float64, n*n), make([]float64, n*n)
		for i := range a {
			a[i], b[i] = rng.NormFloat64(), rng.NormFloat64()
		}
		for _, dt := range []backend.DType{backend.Float32, backend.Float64} {
			t.Run(fmt.Sprint(dt, n), func(t *testing.T) {
				a, b := stCast(a, dt), stCast(b, dt)
				dtRun(t, dt, stContiguous, a, []int{n, n}, b, []int{n, n}, prims.DotParams{LhsContract: []int{1}, RhsContract: []int{0}})
				dtRun(t, dt, stTransposed, a, []int{n, n}, b, []int{n, n}, prims.DotParams{LhsContract: []int{0}, RhsContract: []int{1}})
			})
		}
	}
}

// TestDotGeneralRapid draws random dimension roles, sizes, orders,
// dtypes and layouts.
func TestDotGeneralRapid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nb := rapid.IntRange(0, 2).Draw(t, "batch dims")
		nc := rapid.IntRange(0, 2).Draw(t, "contracting dims")
		nl := rapid.IntRange(0, 2).Draw(t, "lhs free dims")
		nr := rapid.IntRange(0, 2).Draw(t, "rhs free dims")
		size := func(name string, hi int) int { return rapid.IntRange(0, hi).Draw(t, name) }
		bsz, csz := make([]int, nb), make([]int, nc)
		for i := range bsz {
			bsz[i] = size("batch size", 4)
		}
		for i := range csz {
			csz[i] = size("contracting size", 8)
		}
		// Roles: batch i is i, contracting i is 100+i, free i is 200+i.
		operand := func(name string, nf int) (shape, batch, contract []int) {
			var roles []int
			for i := range nb {
				roles = append(roles, i)
			}
			for i := range nc {
				roles = append(roles, 100+i)
			}
			for i := range nf {
				roles = append(roles, 200+i)
			}
			roles = rapid.Permutation(roles).Draw(t, name+" order")
			shape = make([]int, len(roles))
			batch, contract = make([]int, nb), make([]int, nc)
			for pos, r := range roles {
				switch {
				case r < 100:
					shape[pos], batch[r] = bsz[r], pos
				case r < 200:
					shape[pos], contract[r-100] = csz[r-100], pos
				default:
					shape[pos] = size(name+" free size", 9)
				}
			}
			return shape, batch, contract
		}
		as, lb, lc := operand("lhs", nl)
		bs, rb, rc := operand("rhs", nr)
		p := prims.DotParams{LhsContract: lc, RhsContract: rc, LhsBatch: lb, RhsBatch: rb}
		dt := rapid.SampledFrom(stNumericDTypes).Draw(t, "dtype")
		l := rapid.SampledFrom(stLayouts).Draw(t, "layout")
		rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 0))
		dtRun(t, dt, l, dtData(rng, backend.ShapeSize(as)), as, dtData(rng, backend.ShapeSize(bs)), bs, p)
	})
}
