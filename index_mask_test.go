package peel_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/internal/optest"
	"github.com/peel-ml/peel/transforms"
	"pgregory.net/rapid"
)

// Tests of the masked and advanced-index operations (index_mask.go)
// beyond the registry: documented values, gradients, errors, in-place
// forms and properties over random inputs.

func TestIndexMaskValues(t *testing.T) {
	mask := peel.FromBools([]bool{true, false, false, true}, 2, 2)
	smIs(t, "MaskedFill", peel.MaskedFill(smSeq(2, 2), mask, -1), []int{2, 2}, []float64{-1, 1, 2, -1})
	smIs(t, "MaskedFill/i64", peel.MaskedFill(smI([]int64{1, 2}, 2), peel.FromBools([]bool{true, false}, 2), 2.7), []int{2}, []float64{2, 2})
	smIs(t, "MaskedSelect", peel.MaskedSelect(smF([]float64{1, 2, 3, 4}, 2, 2), mask, 3, -1), []int{3}, []float64{1, 4, -1})
	smIs(t, "MaskedSelect/cut", peel.MaskedSelect(smF([]float64{1, 2, 3, 4}, 2, 2), mask, 1, -1), []int{1}, []float64{1})
	nz := peel.Nonzero(smF([]float64{0, 1, 2, 0}, 2, 2), 3, -1)
	smIs(t, "Nonzero/rows", nz[0], []int{3}, []float64{0, 1, -1})
	smIs(t, "Nonzero/cols", nz[1], []int{3}, []float64{1, 0, -1})
	nz = peel.Nonzero(smF([]float64{math.NaN(), 0, math.Copysign(0, -1)}, 3), 2, 7)
	smIs(t, "Nonzero/nan", nz[0], []int{2}, []float64{0, 7})
	dup := smI([]int64{0, 0, 2, -1}, 4)
	smIs(t, "IndexPut/replace", peel.IndexPut(peel.Zeros(peel.Float64, 4), []*peel.Tensor{dup}, smF([]float64{1, 2, 3, 4}, 4), false), []int{4}, []float64{2, 0, 3, 4})
	smIs(t, "IndexPut/accumulate", peel.IndexPut(peel.Zeros(peel.Float64, 4), []*peel.Tensor{dup}, smF([]float64{1, 2, 3, 4}, 4), true), []int{4}, []float64{3, 0, 3, 4})
	smIs(t, "IndexPut/two", peel.IndexPut(smSeq(2, 3), []*peel.Tensor{smI([]int64{1, 0}, 2), smI([]int64{2}, 1)}, 9.0, false), []int{2, 3}, []float64{0, 1, 9, 3, 4, 9})
	smIs(t, "IndexPut/rows", peel.IndexPut(smSeq(3, 2), []*peel.Tensor{smI([]int64{2}, 1)}, smF([]float64{7, 8}, 2), false), []int{3, 2}, []float64{0, 1, 2, 3, 7, 8})
}

// TestIndexPutGradients checks where the gradient of a write to
// repeated positions goes.
func TestIndexPutGradients(t *testing.T) {
	// IndexPut without accumulate: the gradient goes to the value that
	// was written (the last of repeated positions) and not to x there.
	dup := smI([]int64{1, 1}, 2)
	gv := smGrad(func(v *peel.Tensor) *peel.Tensor {
		return peel.IndexPut(peel.Zeros(peel.Float64, 3), []*peel.Tensor{dup}, v, false)
	}, smF([]float64{1, 2}, 2))
	smIs(t, "IndexPut gradient of the values", gv, []int{2}, []float64{0, 1})
	gx := smGrad(func(x *peel.Tensor) *peel.Tensor { return peel.IndexPut(x, []*peel.Tensor{dup}, 5.0, false) }, smF([]float64{1, 2, 3}, 3))
	smIs(t, "IndexPut gradient of x", gx, []int{3}, []float64{1, 0, 1})
}

func TestIndexMaskErrors(t *testing.T) {
	m := smSeq(3, 4)
	v := smSeq(3)
	i := smI([]int64{0, 1}, 2)
	smErr(t, "peel.MaskedFill", func() { peel.MaskedFill(m, smSeq(4), 1) }, "not bool")
	smErr(t, "peel.MaskedFill", func() { peel.MaskedFill(m, peel.FromBools([]bool{true, false}), 1) }, "mask", "cannot be broadcast")
	smErr(t, "peel.MaskedFill", func() { peel.MaskedFill(m, peel.FromBools([]bool{true}), v) }, "not a scalar")
	smErr(t, "peel.MaskedFill", func() { peel.MaskedFill(m, peel.FromBools([]bool{true}), "x") }, "has type string")
	smErr(t, "peel.MaskedSelect", func() { peel.MaskedSelect(m, peel.FromBools([]bool{true}), -1, 0) }, "negative size")
	smErr(t, "peel.Nonzero", func() { peel.Nonzero(peel.Scalar(1.0), 1, 0) }, "rank 0")
	smErr(t, "peel.IndexPut", func() { peel.IndexPut(m, nil, 1.0, false) }, "0 index tensors")
	smErr(t, "peel.IndexPut", func() { peel.IndexPut(m, []*peel.Tensor{smI([]int64{3}, 1)}, 1.0, false) }, "index 3", "size 3")
	smErr(t, "peel.IndexPut", func() { peel.IndexPut(m, []*peel.Tensor{i, smI([]int64{0, 1, 2}, 3)}, 1.0, false) }, "broadcast")
	smErr(t, "peel.IndexPut", func() { peel.IndexPut(m, []*peel.Tensor{i}, smSeq(2, 3), false) }, "values", "cannot be broadcast")
	smErr(t, "peel.IndexPut", func() {
		peel.IndexPut(smI([]int64{0}, 1), []*peel.Tensor{smI([]int64{0}, 1)}, smF([]float64{1.5}, 1), false)
	}, "can't be cast")
	smErr(t, "peel.IndexPut", func() { peel.IndexPut(peel.FromBools([]bool{true}), []*peel.Tensor{smI([]int64{0}, 1)}, true, true) }, "bool")
}

// TestInPlaceIndexOps checks that IndexPutInPlace and MaskedFillInPlace
// write through views into their base, and that under Functionalize and
// Grad they compute what the out-of-place forms do.
func TestInPlaceIndexOps(t *testing.T) {
	y := peel.Zeros(peel.Float64, 3, 4)
	peel.IndexPutInPlace(peel.Narrow(y, 0, 1, 2), []*peel.Tensor{smI([]int64{1, 0}, 2), smI([]int64{3, 0}, 2)}, smF([]float64{5, 6}, 2), false)
	smIs(t, "IndexPutInPlace through Narrow", y, []int{3, 4}, []float64{0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 5})
	peel.MaskedFillInPlace(peel.Transpose(y), peel.FromBools([]bool{true, false, false}, 3), -1)
	smIs(t, "MaskedFillInPlace through Transpose", y, []int{3, 4}, []float64{-1, -1, -1, -1, 6, 0, 0, 0, 0, 0, 0, 5})
	m := smSeq(3, 4)
	peel.CopyInto(peel.Diagonal(m, 1, 0, 1), -1)
	smIs(t, "write into Diagonal", m, []int{3, 4}, []float64{0, -1, 2, 3, 4, 5, -1, 7, 8, 9, 10, -1})
	smErr(t, "peel.MaskedFillInPlace", func() {
		peel.MaskedFillInPlace(peel.BroadcastTo(peel.Scalar(1.0), 2), peel.FromBools([]bool{true}), 0)
	}, "broadcast")

	idx := []*peel.Tensor{smI([]int64{0, 2}, 2)}
	mask := peel.FromBools([]bool{false, true, false}, 3)
	f := func(x *peel.Tensor) *peel.Tensor {
		z := peel.Clone(x)
		peel.IndexPutInPlace(peel.Select(z, 0, 1), idx, peel.Square(peel.Narrow(peel.Select(x, 0, 0), 0, 0, 2)), true)
		peel.MaskedFillInPlace(z, mask, peel.Sum(x))
		return peel.Sum(peel.Mul(z, z))
	}
	g := func(x *peel.Tensor) *peel.Tensor {
		row := peel.IndexPut(peel.Select(x, 0, 1), idx, peel.Square(peel.Narrow(peel.Select(x, 0, 0), 0, 0, 2)), true)
		z := peel.Stack([]*peel.Tensor{peel.Select(x, 0, 0), row}, 0)
		z = peel.MaskedFill(z, mask, peel.Sum(x))
		return peel.Sum(peel.Mul(z, z))
	}
	x := smF([]float64{1, -2, 0.5, 3, 1.5, -1}, 2, 3)
	want := transforms.Grad(g)(x)
	for name, got := range map[string]*peel.Tensor{
		"Grad":                transforms.Grad(f)(x),
		"Grad(Functionalize)": transforms.Grad(transforms.Functionalize(f))(x),
		"Functionalize(Grad)": transforms.Functionalize(transforms.Grad(f))(x),
	} {
		if msg := optest.Compare(optest.ToHost(got), optest.ToHost(want), 1e-12); msg != "" {
			t.Errorf("%s of the in-place program vs Grad of the out-of-place one: %s", name, msg)
		}
	}
	smEqual(t, "value", f(x), g(x))
}

// TestRapidIndexMask checks MaskedSelect and Nonzero against host loops
// over random shapes and masks.
func TestRapidIndexMask(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r, shape, g, x := smDraw(rt)
		// MaskedSelect and Nonzero against a host loop.
		mask := g.Tensor(peel.Bool, 0, 1, shape...)
		size := rapid.IntRange(0, 8).Draw(rt, "size")
		hx, hm := optest.ToHost(x), optest.ToHost(mask)
		var sel []float64
		var coords [][]int
		for f, m := range hm.Data {
			if m != 0 {
				sel = append(sel, hx.Data[f])
				coords = append(coords, optest.Unravel(shape, f))
			}
		}
		want := make([]float64, size)
		for k := range want {
			want[k] = -7
			if k < len(sel) {
				want[k] = sel[k]
			}
		}
		smIs(rt, "MaskedSelect", peel.MaskedSelect(x, mask, size, -7), []int{size}, want)
		nz := peel.Nonzero(mask, size, -1)
		for d := range r {
			w := make([]float64, size)
			for k := range w {
				w[k] = -1
				if k < len(coords) {
					w[k] = float64(coords[k][d])
				}
			}
			smIs(rt, fmt.Sprintf("Nonzero axis %d", d), nz[d], []int{size}, w)
		}
	})
}
