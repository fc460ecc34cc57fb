package cpu

import (
	"math"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// The kernel of sort. Each line along the axis is sorted by the key
// operand: the keys are mapped to unsigned integers in the same order
// (floats: the sign-magnitude flip, -0 as +0, every NaN as the largest
// value; descending: the bitwise complement), then sorted with their
// positions by a least-significant-digit radix sort, which is stable, in
// byte passes (a pass whose byte is the same for every key is skipped),
// or by insertion sort for short lines. Every operand is then permuted
// along the line by the positions. Lines are split across goroutines;
// each worker has its own buffers, allocated once per chunk.

func init() {
	register(prims.Sort, false, sortKernel)
}

// insertionMax is the longest line sorted by insertion.
const insertionMax = 48

// f64Key maps v to an unsigned integer with the sort order of numpy:
// -0 = +0, NaN after +Inf.
func f64Key(v float64) uint64 {
	switch {
	case v != v:
		return math.MaxUint64
	case v == 0:
		return 1 << 63
	}
	b := math.Float64bits(v)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
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
	var load func(keys []uint64, base int)
	switch x.Buf.(type) {
	case *boolBuf:
		key := bools(x)
		load = func(k []uint64, base int) {
			for j := range k {
				k[j] = 0
				if key[base+j*inner] {
					k[j] = 1
				}
			}
		}
	case *i64Buf:
		key := i64s(x)
		load = func(k []uint64, base int) {
			for j := range k {
				k[j] = uint64(key[base+j*inner]) ^ 1<<63
			}
		}
	case *f32Buf:
		key := f32s(x)
		load = func(k []uint64, base int) {
			for j := range k {
				k[j] = f64Key(float64(key[base+j*inner]))
			}
		}
	case *f64Buf:
		key := f64s(x)
		load = func(k []uint64, base int) {
			for j := range k {
				k[j] = f64Key(key[base+j*inner])
			}
		}
	default:
		badDType(prims.Sort, x.Buf.DType())
	}
	lines := outer * inner
	parallelFor(lines, n*(8+len(in)), func(lo, hi int) {
		var s radixSorter
		s.init(n)
		for q := lo; q < hi; q++ {
			base := (q/inner)*n*inner + q%inner
			load(s.keys, base)
			if sp.Descending {
				for j, k := range s.keys {
					s.keys[j] = ^k
				}
			}
			perm := s.sort()
			for k := range in {
				permuteLine(out[k], in[k], perm, base, inner)
			}
		}
	})
}

// radixSorter holds one worker's buffers for lines of length n.
type radixSorter struct {
	keys, tmpK []uint64
	idx, tmpI  []int
	count      [8][256]int
}

func (s *radixSorter) init(n int) {
	s.keys, s.tmpK = make([]uint64, n), make([]uint64, n)
	s.idx, s.tmpI = make([]int, n), make([]int, n)
}

// sort returns the stable sorting permutation of s.keys (s.keys is
// clobbered).
func (s *radixSorter) sort() []int {
	n := len(s.keys)
	keys, idx := s.keys, s.idx
	for j := range idx {
		idx[j] = j
	}
	if n <= insertionMax {
		for i := 1; i < n; i++ {
			k, p := keys[i], idx[i]
			j := i
			for ; j > 0 && keys[j-1] > k; j-- {
				keys[j], idx[j] = keys[j-1], idx[j-1]
			}
			keys[j], idx[j] = k, p
		}
		return idx
	}
	s.count = [8][256]int{}
	for _, k := range keys {
		for d := range 8 {
			s.count[d][byte(k>>(8*d))]++
		}
	}
	tk, ti := s.tmpK, s.tmpI
	for d := range 8 {
		c := &s.count[d]
		if c[byte(keys[0]>>(8*d))] == n {
			continue // every key has this byte
		}
		sum := 0
		for b := range c {
			c[b], sum = sum, sum+c[b]
		}
		for j, k := range keys {
			b := byte(k >> (8 * d))
			at := c[b]
			c[b]++
			tk[at], ti[at] = k, idx[j]
		}
		keys, tk = tk, keys
		idx, ti = ti, idx
	}
	return idx
}

// permuteLine writes dst[base+j·inner] = src[base+perm[j]·inner].
func permuteLine(dst, src backend.Array, perm []int, base, inner int) {
	switch src.Buf.(type) {
	case *boolBuf:
		permuteAlong(bools(dst), bools(src), perm, base, inner)
	case *i64Buf:
		permuteAlong(i64s(dst), i64s(src), perm, base, inner)
	case *f32Buf:
		permuteAlong(f32s(dst), f32s(src), perm, base, inner)
	case *f64Buf:
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

func init() {
	register(prims.SearchSorted, false, searchsortedKernel)
}

// searchsortedKernel runs a binary search per value in its row of the
// sorted operand, comparing in the order of sort (floats by f64Key).
func searchsortedKernel(params any, in, out []backend.Array) {
	right := params.(prims.SearchParams).Right
	s, v := in[0], in[1]
	n := s.Shape[len(s.Shape)-1]
	rows := backend.ShapeSize(s.Shape[:len(s.Shape)-1])
	m := v.Size()
	if m == 0 {
		return
	}
	per := m / rows // values per row of the sorted operand
	d := i64s(out[0])
	switch s.Buf.(type) {
	case *i64Buf:
		searchRows(d, i64s(s), i64s(v), n, per, right, func(x int64) int64 { return x })
	case *f32Buf:
		searchRows(d, f32s(s), f32s(v), n, per, right, func(x float32) uint64 { return f64Key(float64(x)) })
	case *f64Buf:
		searchRows(d, f64s(s), f64s(v), n, per, right, f64Key)
	default:
		badDType(prims.SearchSorted, s.Buf.DType())
	}
}

func searchRows[T any, K int64 | uint64](d []int64, s, v []T, n, per int, right bool, key func(T) K) {
	parallelFor(len(v), bitsLen(n)+1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := s[(i/per)*n : (i/per)*n+n]
			k := key(v[i])
			a, b := 0, n
			for a < b {
				mid := int(uint(a+b) >> 1)
				e := key(row[mid])
				if e < k || (right && e == k) {
					a = mid + 1
				} else {
					b = mid
				}
			}
			d[i] = int64(a)
		}
	})
}

// bitsLen is the number of bits of n.
func bitsLen(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}
