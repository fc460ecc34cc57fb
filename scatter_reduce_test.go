package peel_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/optest"
	"github.com/peel-ml/peel/transforms"
	"pgregory.net/rapid"
)

// Tests of ScatterReduce beyond the registry: torch's documented values,
// gradients at ties and zeros, errors, and host loops over random inputs.

func TestScatterReduceValues(t *testing.T) {
	// torch's documented examples of scatter_reduce.
	src := smF([]float64{1, 2, 3, 4, 5, 6}, 6)
	idx := smI([]int64{0, 1, 0, 1, 2, 1}, 6)
	in := smF([]float64{1, 2, 3, 4}, 4)
	smIs(t, "ScatterReduce/sum", peel.ScatterReduce(in, idx, src, 0, "sum", true), []int{4}, []float64{5, 14, 8, 4})
	smIs(t, "ScatterReduce/amax/exclude", peel.ScatterReduce(in, idx, src, 0, "amax", false), []int{4}, []float64{3, 6, 5, 4})
	smIs(t, "ScatterReduce/prod", peel.ScatterReduce(in, idx, src, 0, "prod", true), []int{4}, []float64{3, 96, 15, 4})
	smIs(t, "ScatterReduce/mean", peel.ScatterReduce(in, idx, src, 0, "mean", true), []int{4}, []float64{5.0 / 3, 3.5, 4, 4})
	smIs(t, "ScatterReduce/mean/exclude", peel.ScatterReduce(in, idx, src, 0, "mean", false), []int{4}, []float64{2, 4, 5, 4})
	smIs(t, "ScatterReduce/amin", peel.ScatterReduce(in, idx, src, 0, "amin", true), []int{4}, []float64{1, 2, 3, 4})
	smIs(t, "ScatterReduce/mean/i64", peel.ScatterReduce(smI([]int64{0, 0}, 2), smI([]int64{0, 0, 1}, 3), smI([]int64{-1, -2, 3}, 3), 0, "mean", false),
		[]int{2}, []float64{-2, 3}) // floor(-3/2)
	smIs(t, "ScatterReduce/amax/nan", peel.ScatterReduce(smF([]float64{1, 1}, 2), smI([]int64{0, 0}, 2), smF([]float64{math.NaN(), 5}, 2), 0, "amax", true),
		[]int{2}, []float64{math.NaN(), 1})
	smIs(t, "ScatterReduce/amax/i64/exclude", peel.ScatterReduce(smI([]int64{7, 7}, 2), smI([]int64{1}, 1), smI([]int64{math.MinInt64}, 1), 0, "amax", false),
		[]int{2}, []float64{7, math.MinInt64})
}

// TestScatterReduceGradients checks the derivative conventions at ties
// and zeros, where finite differences do not apply.
func TestScatterReduceGradients(t *testing.T) {
	// amax ties split evenly, x's own element included with includeSelf.
	idx := smI([]int64{0, 0, 1}, 3)
	src := smF([]float64{3, 3, 2}, 3)
	x := smF([]float64{3, 5}, 2)
	gs := smGrad(func(s *peel.Tensor) *peel.Tensor { return peel.ScatterReduce(x, idx, s, 0, "amax", true) }, src)
	smIs(t, "amax ties: src", gs, []int{3}, []float64{1.0 / 3, 1.0 / 3, 0})
	gx := smGrad(func(x *peel.Tensor) *peel.Tensor { return peel.ScatterReduce(x, idx, src, 0, "amax", true) }, x)
	smIs(t, "amax ties: x", gx, []int{2}, []float64{1.0 / 3, 1})
	gs = smGrad(func(s *peel.Tensor) *peel.Tensor { return peel.ScatterReduce(x, idx, s, 0, "amin", false) }, src)
	smIs(t, "amin ties without self: src", gs, []int{3}, []float64{0.5, 0.5, 1})
	gx = smGrad(func(x *peel.Tensor) *peel.Tensor { return peel.ScatterReduce(x, idx, src, 0, "amin", false) }, x)
	smIs(t, "amin without self: x", gx, []int{2}, []float64{0, 0})

	// prod with zeros: the product of the other factors, exactly.
	one := smI([]int64{0, 0, 0}, 3)
	xp := smF([]float64{2}, 1)
	for _, c := range []struct {
		src, want []float64
		self      bool
	}{
		{[]float64{0, 3, 4}, []float64{24, 0, 0}, true},
		{[]float64{0, 0, 4}, []float64{0, 0, 0}, true},
		{[]float64{5, 3, 4}, []float64{24, 40, 30}, true},
		{[]float64{0, 3, 4}, []float64{12, 0, 0}, false},
	} {
		g := smGrad(func(s *peel.Tensor) *peel.Tensor { return peel.ScatterReduce(xp, one, s, 0, "prod", c.self) }, smF(c.src, 3))
		smIs(t, fmt.Sprintf("prod gradient at %v, self=%v", c.src, c.self), g, []int{3}, c.want)
	}
	gx = smGrad(func(x *peel.Tensor) *peel.Tensor {
		return peel.ScatterReduce(x, one, smF([]float64{0, 3, 4}, 3), 0, "prod", true)
	}, xp)
	smIs(t, "prod gradient of x with a zero src", gx, []int{1}, []float64{0})
	gx = smGrad(func(x *peel.Tensor) *peel.Tensor {
		return peel.ScatterReduce(x, one, smF([]float64{1, 3, 4}, 3), 0, "prod", true)
	}, smF([]float64{0}, 1))
	smIs(t, "prod gradient of a zero x", gx, []int{1}, []float64{12})
	// Second derivative of the product with two zeros: d²(x·0·0·4)/ds0 ds1 = 2·4.
	hs := transforms.Hessian(func(s *peel.Tensor) *peel.Tensor {
		return peel.Sum(peel.ScatterReduce(xp, one, s, 0, "prod", true))
	})(smF([]float64{0, 0, 4}, 3))
	smIs(t, "prod Hessian with two zeros", hs, []int{3, 3}, []float64{0, 8, 0, 8, 0, 0, 0, 0, 0})
}

func TestScatterReduceErrors(t *testing.T) {
	m := smSeq(3, 4)
	v := smSeq(3)
	smErr(t, "peel.ScatterReduce", func() { peel.ScatterReduce(v, smI([]int64{0}, 1), v, 0, "max", true) }, `reduce "max"`)
	smErr(t, "peel.ScatterReduce", func() { peel.ScatterReduce(v, smI([]int64{3}, 1), v, 0, "sum", true) }, "index 3")
	smErr(t, "peel.ScatterReduce", func() {
		peel.ScatterReduce(peel.FromBools([]bool{true}), smI([]int64{0}, 1), peel.FromBools([]bool{true}), 0, "amax", true)
	}, "bool")
	smErr(t, "peel.ScatterReduce", func() { peel.ScatterReduce(m, smI([]int64{0}, 1), v, 0, "sum", true) }, "same rank")
}

// TestRapidScatterReduce compares ScatterReduce and IndexPut with host
// loops over random indices (with repeats), shapes and reductions.
func TestRapidScatterReduce(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rows := rapid.IntRange(1, 4).Draw(rt, "rows")
		cols := rapid.IntRange(1, 3).Draw(rt, "cols")
		m := rapid.IntRange(0, 6).Draw(rt, "updates")
		g := optest.NewGen(uint64(rapid.Uint32().Draw(rt, "seed")))
		dt := rapid.SampledFrom([]peel.DType{peel.Float64, peel.Int64}).Draw(rt, "dtype")
		x := g.Tensor(dt, -4, 4, rows, cols)
		src := g.Tensor(dt, -4, 4, m, cols)
		ix := make([]int64, m*cols)
		for k := range ix {
			ix[k] = int64(rapid.IntRange(-rows, rows-1).Draw(rt, "index"))
		}
		idx := smI(ix, m, cols)
		reduce := rapid.SampledFrom([]string{"sum", "prod", "amax", "amin", "mean"}).Draw(rt, "reduce")
		self := rapid.Bool().Draw(rt, "self")
		got := peel.ScatterReduce(x, idx, src, 0, reduce, self)
		hx, hs := optest.ToHost(x), optest.ToHost(src)
		want := append([]float64{}, hx.Data...)
		for j := range cols {
			for i := range rows {
				var vals []float64
				if self {
					vals = append(vals, hx.Data[i*cols+j])
				}
				hit := false
				for u := range m {
					k := ix[u*cols+j]
					if k < 0 {
						k += int64(rows)
					}
					if int(k) == i {
						vals = append(vals, hs.Data[u*cols+j])
						hit = true
					}
				}
				if !hit {
					continue
				}
				var v float64
				switch reduce {
				case "sum", "mean":
					for _, e := range vals {
						v += e
					}
					if reduce == "mean" {
						v /= float64(len(vals))
						if dt == peel.Int64 {
							v = math.Floor(v)
						}
					}
				case "prod":
					v = 1
					for _, e := range vals {
						v *= e
					}
				case "amax":
					v = slices.Max(vals)
				case "amin":
					v = slices.Min(vals)
				}
				want[i*cols+j] = v
			}
		}
		h := optest.ToHost(got)
		for k := range want {
			if math.Abs(h.Data[k]-want[k]) > 1e-9*max(1, math.Abs(want[k])) {
				rt.Fatalf("ScatterReduce %s self=%v: %v, want %v", reduce, self, h.Data, want)
			}
		}
		// IndexPut with accumulate is ScatterAdd along rows.
		rowIdx := make([]int64, m)
		for u := range rowIdx {
			rowIdx[u] = ix[u*cols]
		}
		acc := peel.IndexPut(x, []*peel.Tensor{smI(rowIdx, m)}, src, true)
		ref := peel.IndexAdd(x, smI(rowIdx, m), src, 0)
		smEqual(rt, "IndexPut accumulate vs IndexAdd", acc, ref)
		rep := peel.IndexPut(x, []*peel.Tensor{smI(rowIdx, m)}, src, false)
		smEqual(rt, "IndexPut vs IndexCopy", rep, peel.IndexCopy(x, smI(rowIdx, m), src, 0))
	})
}
