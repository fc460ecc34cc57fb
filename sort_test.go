package peel_test

import (
	"math"
	"slices"
	"sort"
	"testing"

	"pgregory.net/rapid"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

func f64s(v ...float64) *peel.Tensor { return peel.FromFloat64s(v, len(v)) }

func TestSortOrder(t *testing.T) {
	inf := math.Inf(1)
	x := f64s(3, nan, -inf, 1, math.Copysign(0, -1), 0, inf, 1)
	for _, c := range []struct {
		name string
		got  *peel.Tensor
		dt   peel.DType
		want []float64
	}{
		{"ascending, NaN last", peel.Sort(x, 0), peel.Float64, []float64{-inf, 0, 0, 1, 1, 3, inf, nan}},
		{"descending, NaN first", peel.Sort(x, 0, peel.Descending()), peel.Float64, []float64{nan, inf, 3, 1, 1, 0, 0, -inf}},
		{"argsort is stable", peel.Argsort(x, -1), peel.Int64, []float64{2, 4, 5, 3, 7, 0, 6, 1}},
		{"argsort descending keeps ties in order", peel.Argsort(x, 0, peel.Descending(), peel.Stable()), peel.Int64, []float64{1, 6, 0, 3, 7, 4, 5, 2}},
		{"ints", peel.Sort(peel.FromInt64s([]int64{3, -1, 2, -1}, 4), 0), peel.Int64, []float64{-1, -1, 2, 3}},
		{"bools", peel.AsType(peel.Sort(peel.FromBools([]bool{true, false, true}, 3), 0), peel.Int64), peel.Int64, []float64{0, 1, 1}},
	} {
		check(t, c.name, c.got, c.dt, []int{c.got.Size()}, c.want, 0)
	}
	// -0 and +0 are equal: their order is their original one.
	if s := peel.Sort(x, 0).Float64s(); !math.Signbit(s[1]) || math.Signbit(s[2]) {
		t.Errorf("-0 and +0 were reordered: %v", s)
	}
	m := peel.FromFloat64s([]float64{3, 1, 2, 0, 5, 4}, 2, 3)
	check(t, "axis 0", peel.Sort(m, 0), peel.Float64, []int{2, 3}, []float64{0, 1, 2, 3, 5, 4}, 0)
	check(t, "axis 1", peel.Sort(m, 1), peel.Float64, []int{2, 3}, []float64{1, 2, 3, 0, 4, 5}, 0)
	check(t, "empty", peel.Sort(peel.Zeros(peel.Float64, 2, 0), 1), peel.Float64, []int{2, 0}, nil, 0)
}

func TestTopKKthvalue(t *testing.T) {
	x := peel.FromFloat64s([]float64{1, 5, 5, 2, 0, 7, 7, 7}, 2, 4)
	v, i := peel.TopK(x, 2)
	check(t, "TopK values", v, peel.Float64, []int{2, 2}, []float64{5, 5, 7, 7}, 0)
	check(t, "TopK ties in index order", i, peel.Int64, []int{2, 2}, []float64{1, 2, 1, 2}, 0)
	v, i = peel.TopK(f64s(1, nan, 3), 1)
	check(t, "TopK NaN is largest", v, peel.Float64, []int{1}, []float64{nan}, 0)
	check(t, "TopK NaN index", i, peel.Int64, []int{1}, []float64{1}, 0)
	v, i = peel.Kthvalue(x, 3, 1)
	check(t, "Kthvalue values", v, peel.Float64, []int{2}, []float64{5, 7}, 0)
	check(t, "Kthvalue indices", i, peel.Int64, []int{2}, []float64{1, 2}, 0)
	v, _ = peel.Kthvalue(x, 1, 0)
	check(t, "Kthvalue axis 0", v, peel.Float64, []int{4}, []float64{0, 5, 5, 2}, 0)
}

func TestMedianQuantile(t *testing.T) {
	x := peel.FromFloat64s([]float64{3, 1, 4, 1, 5, 9, 2, 6}, 2, 4)
	check(t, "median of all (even)", peel.Median(x), peel.Float64, []int{}, []float64{3.5}, 1e-15)
	check(t, "median per row", peel.Median(x, 1), peel.Float64, []int{2}, []float64{2, 5.5}, 1e-15)
	check(t, "median odd", peel.Median(f64s(5, 1, 3)), peel.Float64, []int{}, []float64{3}, 0)
	check(t, "median NaN", peel.Median(f64s(5, nan, 3)), peel.Float64, []int{}, []float64{nan}, 0)
	check(t, "median empty", peel.Median(peel.Zeros(peel.Float64, 0)), peel.Float64, []int{}, []float64{nan}, 0)
	check(t, "median of ints", peel.Median(peel.FromInt64s([]int64{1, 2}, 2)), peel.Float64, []int{}, []float64{1.5}, 0)
	check(t, "keep", peel.Keep(peel.Median, x, 1), peel.Float64, []int{2, 1}, []float64{2, 5.5}, 1e-15)
	// numpy.quantile([3,1,4,1,5,9,2,6], q) for q = 0, 0.3, 0.5, 1: 1, 1.3+0.8 = 2.1, 3.5, 9.
	check(t, "quantile 0.3", peel.Quantile(x, 0.3), peel.Float64, []int{}, []float64{2.1}, 1e-14)
	qs := peel.Quantile(x, f64s(0, 0.5, 1))
	check(t, "quantile tensor q", qs, peel.Float64, []int{3}, []float64{1, 3.5, 9}, 1e-15)
	q2 := peel.Quantile(x, f64s(0.25, 0.75), 1)
	// rows sorted: [1 1 3 4], [2 5 6 9]; h = 0.75, 2.25; q's axis first.
	check(t, "quantile q first", q2, peel.Float64, []int{2, 2}, []float64{1, 4.25, 3.25, 6.75}, 1e-15)
	check(t, "quantile outside [0,1]", peel.Quantile(x, 1.5), peel.Float64, []int{}, []float64{nan}, 0)
	inf := math.Inf(1)
	check(t, "quantile between equal infinities", peel.Quantile(f64s(inf, inf, 1), 0.75), peel.Float64, []int{}, []float64{inf}, 0)
	// The derivative in q is the slope between the interpolated elements
	// times n−1: d/dq at 0.3 is (3 − 1)·7 = 14 (sorted: 1 1 2 3 4 5 6 9).
	dq := transforms.Grad(func(q *peel.Tensor) *peel.Tensor { return peel.Quantile(x, q) })(peel.Scalar(0.3))
	check(t, "dQuantile/dq", dq, peel.Float64, []int{}, []float64{7}, 1e-12)
	dx := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Median(x) })(f64s(4, 1, 3, 2))
	check(t, "dMedian/dx", dx, peel.Float64, []int{4}, []float64{0, 0, 0.5, 0.5}, 1e-15)
}

func TestSearchSorted(t *testing.T) {
	s := f64s(1, 2, 2, 3, nan)
	v := f64s(0, 2, 2.5, 9, nan)
	check(t, "left", peel.SearchSorted(s, v, peel.SideLeft), peel.Int64, []int{5}, []float64{0, 1, 3, 4, 4}, 0)
	check(t, "right", peel.SearchSorted(s, v, peel.SideRight), peel.Int64, []int{5}, []float64{0, 3, 3, 4, 5}, 0)
	mixed := peel.SearchSorted(peel.FromInt64s([]int64{1, 3}, 2), peel.FromFloat64s([]float64{2, 3}, 1, 2), peel.SideRight)
	check(t, "promoted, values' shape", mixed, peel.Int64, []int{1, 2}, []float64{1, 2}, 0)
	rapid.Check(t, func(rt *rapid.T) {
		a := rapid.SliceOfN(rapid.IntRange(-9, 9), 0, 40).Draw(rt, "sorted")
		b := rapid.SliceOfN(rapid.IntRange(-10, 10), 1, 8).Draw(rt, "values")
		sf := make([]float64, len(a))
		for i, x := range a {
			sf[i] = float64(x)
		}
		slices.Sort(sf)
		bf := make([]float64, len(b))
		for i, x := range b {
			bf[i] = float64(x)
		}
		left := peel.SearchSorted(peel.FromFloat64s(sf, len(sf)), f64s(bf...), peel.SideLeft).Int64s()
		right := peel.SearchSorted(peel.FromFloat64s(sf, len(sf)), f64s(bf...), peel.SideRight).Int64s()
		for i, x := range bf {
			if l := sort.SearchFloat64s(sf, x); int64(l) != left[i] {
				rt.Fatalf("left(%v) = %d, want %d", x, left[i], l)
			}
			r := sort.Search(len(sf), func(j int) bool { return sf[j] > x })
			if int64(r) != right[i] {
				rt.Fatalf("right(%v) = %d, want %d", x, right[i], r)
			}
		}
	})
}

func TestUnique(t *testing.T) {
	x := peel.FromFloat64s([]float64{3, 1, nan, 1, 3, nan, 0, math.Copysign(0, -1)}, 2, 4)
	check(t, "padded", peel.Unique(x, 6, -1), peel.Float64, []int{6}, []float64{0, 1, 3, nan, -1, -1}, 0)
	check(t, "truncated", peel.Unique(x, 2, -1), peel.Float64, []int{2}, []float64{0, 1}, 0)
	check(t, "size 0", peel.Unique(x, 0, -1), peel.Float64, []int{0}, nil, 0)
	check(t, "empty", peel.Unique(peel.Zeros(peel.Int64, 0), 2, 7), peel.Int64, []int{2}, []float64{7, 7}, 0)
	check(t, "bools", peel.AsType(peel.Unique(peel.FromBools([]bool{true, true}, 2), 2, 0), peel.Int64), peel.Int64, []int{2}, []float64{1, 0}, 0)
	// Under Vmap, each row gets its own distinct elements.
	rows := peel.FromInt64s([]int64{2, 2, 1, 5, 5, 5}, 2, 3)
	u := transforms.Vmap(func(r *peel.Tensor) *peel.Tensor { return peel.Unique(r, 3, 0) })(rows)
	check(t, "vmap", u, peel.Int64, []int{2, 3}, []float64{1, 2, 0, 5, 0, 0}, 0)
	// The derivative of a distinct value reaches its first occurrence in
	// sorted order.
	g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor {
		return peel.Sum(peel.Mul(peel.Unique(x, 3, 0), f64s(1, 10, 100)))
	})(f64s(2, 1, 2, 5))
	check(t, "grad", g, peel.Float64, []int{4}, []float64{10, 1, 0, 100}, 0)
}

func TestSortGradient(t *testing.T) {
	x := f64s(3, 1, 2)
	w := f64s(1, 10, 100)
	g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(peel.Mul(peel.Sort(x, 0), w)) })(x)
	// sorted = [x1, x2, x0]: weights go back to those positions.
	check(t, "grad", g, peel.Float64, []int{3}, []float64{100, 1, 10}, 0)
	gt := transforms.Grad(func(x *peel.Tensor) *peel.Tensor {
		v, _ := peel.TopK(x, 2)
		return peel.Sum(peel.Mul(v, f64s(1, 10)))
	})(x)
	check(t, "TopK grad", gt, peel.Float64, []int{3}, []float64{1, 0, 10}, 0)
	// Sort under Vmap sorts each lane.
	m := peel.FromFloat64s([]float64{3, 1, 2, 0, -1, 5}, 2, 3)
	vs := transforms.Vmap(func(r *peel.Tensor) *peel.Tensor { return peel.Sort(r, 0) }, transforms.InAxes(1))(m)
	check(t, "vmap over columns", vs, peel.Float64, []int{3, 2}, []float64{0, 3, -1, 1, 2, 5}, 0)
}

func TestSortErrors(t *testing.T) {
	x := peel.Zeros(peel.Float64, 2, 3)
	wantError(t, "peel.Sort", func() { peel.Sort(peel.Scalar(1.0), 0) }, "no axis")
	wantError(t, "peel.Sort", func() { peel.Sort(x, 2) }, "axis 2")
	wantError(t, "peel.Sort", func() { peel.Sort(nil, 0) }, "nil")
	wantError(t, "peel.Argsort", func() { peel.Argsort(x, -3) }, "axis -3")
	wantError(t, "peel.TopK", func() { peel.TopK(x, 4) }, "k = 4")
	wantError(t, "peel.TopK", func() { peel.TopK(x, -1) }, "k = -1")
	wantError(t, "peel.Kthvalue", func() { peel.Kthvalue(x, 0, 1) }, "k = 0")
	wantError(t, "peel.Kthvalue", func() { peel.Kthvalue(x, 3, 0) }, "k = 3")
	wantError(t, "peel.Median", func() { peel.Median(x, 0, 0) }, "repeated")
	wantError(t, "peel.Quantile", func() { peel.Quantile(x, "half") }, "number or a tensor")
	wantError(t, "peel.SearchSorted", func() { peel.SearchSorted(x, x, peel.SideLeft) }, "1-d")
	wantError(t, "peel.SearchSorted", func() { peel.SearchSorted(f64s(1), x, peel.Side(5)) }, "side 5")
	wantError(t, "peel.Unique", func() { peel.Unique(x, -1, 0) }, "negative")
}

// TestSortProperties: Sort's result is ordered and a permutation of its
// input, and Argsort's indices take Sort's result out of x.
func TestSortProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rows := rapid.IntRange(1, 3).Draw(rt, "rows")
		n := rapid.IntRange(0, 9).Draw(rt, "n")
		data := make([]float64, rows*n)
		for i := range data {
			data[i] = float64(rapid.IntRange(-3, 3).Draw(rt, "v")) // many ties
			if rapid.IntRange(0, 9).Draw(rt, "nan") == 0 {
				data[i] = nan
			}
		}
		desc := rapid.Bool().Draw(rt, "desc")
		var opts []peel.SortOption
		if desc {
			opts = append(opts, peel.Descending())
		}
		x := peel.FromFloat64s(data, rows, n)
		s := peel.Sort(x, 1, opts...).Float64s()
		idx := peel.Argsort(x, 1, opts...)
		taken := peel.TakeAlongAxis(x, idx, 1).Float64s()
		ix := idx.Int64s()
		for r := range rows {
			row := data[r*n : (r+1)*n]
			want := slices.Clone(row)
			sort.SliceStable(want, func(i, j int) bool {
				a, b := want[i], want[j]
				if desc {
					a, b = b, a
				}
				return !math.IsNaN(a) && (math.IsNaN(b) || a < b)
			})
			for j := range row {
				k := r*n + j
				if !same(s[k], want[j]) || !same(taken[k], want[j]) {
					rt.Fatalf("row %d: sort %v, taken %v, want %v", r, s[r*n:(r+1)*n], taken[r*n:(r+1)*n], want)
				}
				// Stability: equal keys keep increasing indices.
				if j > 0 && same(s[k], s[k-1]) && ix[k] < ix[k-1] {
					rt.Fatalf("row %d: unstable indices %v", r, ix[r*n:(r+1)*n])
				}
			}
		}
	})
}

func same(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
