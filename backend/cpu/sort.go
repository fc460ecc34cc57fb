package cpu

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// The kernel of sort: each line along the axis is sorted by the key
// operand (pairs of key and position, pdqsort with the position breaking
// ties, so the order is stable), then every operand is permuted along the
// line by the positions. Lines are split across goroutines; each worker
// has its own buffers, allocated once per chunk.

func init() {
	register(prims.Sort, false, sortKernel)
}

type sortPair[K cmp.Ordered] struct {
	k K
	i int
}

// keyCompare orders a and b ascending with NaN after every number and
// NaNs equal to each other (K may be an integer type, where k != k is
// never true).
func keyCompare[K cmp.Ordered](a, b K) int {
	an, bn := a != a, b != b
	switch {
	case an || bn:
		if an == bn {
			return 0
		}
		if an {
			return 1
		}
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func ascendingPairs[K cmp.Ordered](a, b sortPair[K]) int {
	if c := keyCompare(a.k, b.k); c != 0 {
		return c
	}
	return cmp.Compare(a.i, b.i)
}

func descendingPairs[K cmp.Ordered](a, b sortPair[K]) int {
	if c := keyCompare(b.k, a.k); c != 0 {
		return c
	}
	return cmp.Compare(a.i, b.i)
}

func sortKernel(params any, in, out []backend.Array) {
	sp := params.(prims.SortParams)
	x := in[0]
	if sp.Axis < 0 || sp.Axis >= len(x.Shape) {
		interp.Panicf("cpu: sort axis %d out of range for shape %v", sp.Axis, x.Shape)
	}
	outer, n, inner := axisSplit(x.Shape, sp.Axis)
	if outer*n*inner == 0 {
		return
	}
	switch x.Buf.(type) {
	case boolBuf:
		key := bools(x)
		runSort(in, out, outer, n, inner, sp.Descending, func(p []sortPair[uint8], base int) {
			for j := range p {
				v := uint8(0)
				if key[base+j*inner] {
					v = 1
				}
				p[j] = sortPair[uint8]{v, j}
			}
		})
	case i64Buf:
		runSort(in, out, outer, n, inner, sp.Descending, keyFiller(i64s(x), inner))
	case f32Buf:
		runSort(in, out, outer, n, inner, sp.Descending, keyFiller(f32s(x), inner))
	case f64Buf:
		runSort(in, out, outer, n, inner, sp.Descending, keyFiller(f64s(x), inner))
	default:
		badDType(prims.Sort, x.Buf.DType())
	}
}

// keyFiller returns the function that loads the line starting at base
// (stride inner) of key into pairs.
func keyFiller[K cmp.Ordered](key []K, inner int) func([]sortPair[K], int) {
	return func(p []sortPair[K], base int) {
		for j := range p {
			p[j] = sortPair[K]{key[base+j*inner], j}
		}
	}
}

// runSort sorts the outer×inner lines of length n.
func runSort[K cmp.Ordered](in, out []backend.Array, outer, n, inner int, desc bool, load func([]sortPair[K], int)) {
	compare := ascendingPairs[K]
	if desc {
		compare = descendingPairs[K]
	}
	lines := outer * inner
	cost := n * (bits.Len(uint(n)) + len(in))
	parallelFor(lines, cost, func(lo, hi int) {
		pairs := make([]sortPair[K], n)
		perm := make([]int, n)
		for q := lo; q < hi; q++ {
			base := (q/inner)*n*inner + q%inner
			load(pairs, base)
			slices.SortFunc(pairs, compare)
			for j, p := range pairs {
				perm[j] = p.i
			}
			for k := range in {
				permuteLine(out[k], in[k], perm, base, inner)
			}
		}
	})
}

// permuteLine writes dst[base+j·inner] = src[base+perm[j]·inner].
func permuteLine(dst, src backend.Array, perm []int, base, inner int) {
	switch src.Buf.(type) {
	case boolBuf:
		permuteAlong(bools(dst), bools(src), perm, base, inner)
	case i64Buf:
		permuteAlong(i64s(dst), i64s(src), perm, base, inner)
	case f32Buf:
		permuteAlong(f32s(dst), f32s(src), perm, base, inner)
	case f64Buf:
		permuteAlong(f64s(dst), f64s(src), perm, base, inner)
	default:
		badDType(prims.Sort, src.Buf.DType())
	}
}

func permuteAlong[T any](d, s []T, perm []int, base, inner int) {
	for j, i := range perm {
		d[base+j*inner] = s[base+i*inner]
	}
}
