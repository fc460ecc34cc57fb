package peel_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/peel-ml/peel"
	"github.com/peel-ml/peel/transforms"
)

// emptyHugeShapes are shapes with no elements whose other dimensions
// multiply past math.MaxInt, so every partial product that leaves the zero
// dimension out wraps: the class of issue 43, item 9. They are accepted
// (a zero dimension empties any shape), and every op on them must finish
// at once with a right result or a *peel.Error, never hang on a wrapped
// loop bound.
var emptyHugeShapes = [][]int{
	{math.MaxInt, 0, 2},
	{2, 0, math.MaxInt},
	{0, math.MaxInt, 3},
	{math.MaxInt, 3, 0},
	{1 << 62, 0, 1 << 62},
	{3, 1 << 62, 0},
}

// emptyHugeOps are rank-3 ops; each is run eagerly, compiled, and under
// Grad of its sum (where it is differentiable).
var emptyHugeOps = []struct {
	name string
	f    func(x *peel.Tensor) *peel.Tensor
	grad bool
}{
	{"Neg", peel.Neg, true},
	{"Add", func(x *peel.Tensor) *peel.Tensor { return peel.Add(x, x) }, true},
	{"MulExp", func(x *peel.Tensor) *peel.Tensor { return peel.Mul(peel.Exp(x), x) }, true},
	{"AsType", func(x *peel.Tensor) *peel.Tensor { return peel.AsType(x, peel.Float32) }, false},
	{"Where", func(x *peel.Tensor) *peel.Tensor { return peel.Where(peel.Greater(x, 0.0), x, 0.0) }, true},
	{"Sum", func(x *peel.Tensor) *peel.Tensor { return peel.Sum(x) }, true},
	{"Sum0", func(x *peel.Tensor) *peel.Tensor { return peel.Sum(x, 0) }, true},
	{"Sum1", func(x *peel.Tensor) *peel.Tensor { return peel.Sum(x, 1) }, true},
	{"Sum2", func(x *peel.Tensor) *peel.Tensor { return peel.Sum(x, 2) }, true},
	{"Sum01", func(x *peel.Tensor) *peel.Tensor { return peel.Sum(x, 0, 1) }, true},
	{"Sum02", func(x *peel.Tensor) *peel.Tensor { return peel.Sum(x, 0, 2) }, true},
	{"Sum12", func(x *peel.Tensor) *peel.Tensor { return peel.Sum(x, 1, 2) }, true},
	{"Mean1", func(x *peel.Tensor) *peel.Tensor { return peel.Mean(x, 1) }, true},
	{"Max01", func(x *peel.Tensor) *peel.Tensor { return peel.Max(x, 0, 1) }, false},
	{"Prod01", func(x *peel.Tensor) *peel.Tensor { return peel.Prod(x, 0, 1) }, true},
	{"Prod02", func(x *peel.Tensor) *peel.Tensor { return peel.Prod(x, 0, 2) }, true},
	{"Var01", func(x *peel.Tensor) *peel.Tensor { return peel.Var(x, 0, 1) }, true},
	{"Norm12", func(x *peel.Tensor) *peel.Tensor { return peel.Norm(x, 1, 2) }, false},
	{"Any01", func(x *peel.Tensor) *peel.Tensor { return peel.Any(peel.Greater(x, 0.0), 0, 1) }, false},
	{"Median01", func(x *peel.Tensor) *peel.Tensor { return peel.Median(x, 0, 1) }, false},
	{"Cumprod2", func(x *peel.Tensor) *peel.Tensor { return peel.Cumprod(x, 2) }, true},
	{"TakeAlongAxis", func(x *peel.Tensor) *peel.Tensor {
		return peel.TakeAlongAxis(x, peel.BroadcastTo(peel.Scalar(int64(0)), x.Shape()...), 1)
	}, true},
	{"ScatterAdd", func(x *peel.Tensor) *peel.Tensor {
		return peel.ScatterAdd(x, peel.BroadcastTo(peel.Scalar(int64(0)), x.Shape()...), x, 2)
	}, true},
	{"IndexAdd", func(x *peel.Tensor) *peel.Tensor {
		return peel.IndexAdd(x, peel.FromInt64s([]int64{}), peel.Slice(x, 0, 0, 0, 1), 0)
	}, true},
	{"Diagonal", func(x *peel.Tensor) *peel.Tensor { return peel.Diagonal(x) }, true},
	{"Triu", func(x *peel.Tensor) *peel.Tensor { return peel.Triu(x, 0) }, true},
	{"MoveAxis", func(x *peel.Tensor) *peel.Tensor { return peel.Clone(peel.MoveAxis(x, 0, 2)) }, true},
	{"Split", func(x *peel.Tensor) *peel.Tensor { return peel.Split(x, []int{1, 1}, 0)[1] }, true},
	{"DynamicSlice", func(x *peel.Tensor) *peel.Tensor {
		z := peel.Scalar(int64(0))
		return peel.DynamicSlice(x, []*peel.Tensor{z, z, z}, []int{1, 0, 1})
	}, true},
	{"Kron", func(x *peel.Tensor) *peel.Tensor { return peel.Kron(x, x) }, true},
	{"LogSumExp12", func(x *peel.Tensor) *peel.Tensor { return peel.LogSumExp(x, 1, 2) }, true},
	{"ArgMax1", func(x *peel.Tensor) *peel.Tensor { return peel.ArgMax(x, 1) }, false},
	{"Softmax1", func(x *peel.Tensor) *peel.Tensor { return peel.Softmax(x, 1) }, true},
	{"Softmax2", func(x *peel.Tensor) *peel.Tensor { return peel.Softmax(x, 2) }, true},
	{"Standardize2", func(x *peel.Tensor) *peel.Tensor { return peel.Standardize(x, 2, 1e-5) }, true},
	{"Cumsum0", func(x *peel.Tensor) *peel.Tensor { return peel.Cumsum(x, 0) }, true},
	{"Cumsum1", func(x *peel.Tensor) *peel.Tensor { return peel.Cumsum(x, 1) }, true},
	{"Cummax2", func(x *peel.Tensor) *peel.Tensor { return peel.Cummax(x, 2) }, true},
	{"Sort2", func(x *peel.Tensor) *peel.Tensor { return peel.Sort(x, 2) }, true},
	{"Flip0", func(x *peel.Tensor) *peel.Tensor { return peel.Flip(x, 0) }, true},
	{"Roll1", func(x *peel.Tensor) *peel.Tensor { return peel.Roll(x, 1, 1) }, true},
	{"Transpose", func(x *peel.Tensor) *peel.Tensor { return peel.Transpose(x, 2, 1, 0) }, true},
	{"TransposeClone", func(x *peel.Tensor) *peel.Tensor { return peel.Clone(peel.Transpose(x, 1, 2, 0)) }, true},
	{"ReshapeFlat", func(x *peel.Tensor) *peel.Tensor { return peel.Reshape(x, -1) }, true},
	{"ReshapeReversed", func(x *peel.Tensor) *peel.Tensor {
		s := x.Shape()
		return peel.Reshape(x, s[2], s[1], s[0])
	}, true},
	{"Slice", func(x *peel.Tensor) *peel.Tensor { return peel.Slice(x, 0, 1, 3, 1) }, true},
	{"Concat1", func(x *peel.Tensor) *peel.Tensor { return peel.Concat([]*peel.Tensor{x, x}, 1) }, true},
	{"Concat2", func(x *peel.Tensor) *peel.Tensor { return peel.Concat([]*peel.Tensor{x, x}, 2) }, true},
	{"Stack", func(x *peel.Tensor) *peel.Tensor { return peel.Stack([]*peel.Tensor{x, x}, 1) }, true},
	{"Tile", func(x *peel.Tensor) *peel.Tensor { return peel.Tile(x, 1, 2, 1) }, true},
	{"Broadcast", func(x *peel.Tensor) *peel.Tensor {
		s := x.Shape()
		return peel.BroadcastTo(peel.Reshape(x, 1, s[0], s[1], s[2]), 2, s[0], s[1], s[2])
	}, true},
	{"PadZeroAxis", func(x *peel.Tensor) *peel.Tensor {
		pads := [][2]int{{0, 0}, {0, 0}, {0, 0}}
		for i, d := range x.Shape() {
			if d == 0 {
				pads[i] = [2]int{1, 1}
			}
		}
		return peel.Pad(x, pads, 7)
	}, true},
	{"MatMulBatched", func(x *peel.Tensor) *peel.Tensor { return peel.MatMul(x, peel.Transpose(x, 0, 2, 1)) }, true},
	{"MatMulInner", func(x *peel.Tensor) *peel.Tensor { return peel.MatMul(peel.Transpose(x, 0, 2, 1), x) }, true},
	{"EinsumAll", func(x *peel.Tensor) *peel.Tensor { return peel.Einsum("ijk,ijk->", x, x) }, true},
	{"Einsum01", func(x *peel.Tensor) *peel.Tensor { return peel.Einsum("ijk,ijl->kl", x, x) }, true},
	{"Einsum12", func(x *peel.Tensor) *peel.Tensor { return peel.Einsum("ijk,ljk->il", x, x) }, true},
	{"Take", func(x *peel.Tensor) *peel.Tensor { return peel.Take(x, peel.FromInt64s([]int64{0}), 1) }, true},
}

// runBounded runs f on its own goroutine and returns what it panicked
// with, failing the test when it has not finished within d (a loop over
// a wrapped partial product would run for centuries).
func runBounded(t *testing.T, name string, d time.Duration, f func()) any {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	select {
	case r := <-done:
		return r
	case <-time.After(d):
		t.Fatalf("%s: still running after %v", name, d)
		return nil
	}
}

// TestEmptyShapesWithHugeDims is the regression test of issue 43, item 9:
// BroadcastTo and Tile to math.MaxInt×0×… are accepted, and every op,
// eager, compiled, differentiated and vmapped, on a shape with no elements
// and dimensions whose partial products overflow finishes at once with
// the result of the same op on a small twin shape (same zero dimensions,
// the huge ones replaced by 3) wherever the result has elements, an
// empty result of the same rank, or a *peel.Error saying "too large" when
// the result would have more elements than an int counts.
func TestEmptyShapesWithHugeDims(t *testing.T) {
	// The reported repros.
	if got := peel.BroadcastTo(peel.Scalar(1.0), math.MaxInt, 0, 2, 4).Shape(); fmt.Sprint(got) != fmt.Sprint([]int{math.MaxInt, 0, 2, 4}) {
		t.Fatalf("BroadcastTo(MaxInt, 0, 2, 4) has shape %v", got)
	}
	if got := peel.Tile(peel.Zeros(peel.Float64, 1, 0, 2), math.MaxInt, 5, 1).Shape(); fmt.Sprint(got) != fmt.Sprint([]int{math.MaxInt, 0, 2}) {
		t.Fatalf("Tile to MaxInt×0×2 has shape %v", got)
	}
	if got := peel.Zeros(peel.Float32, math.MaxInt, math.MaxInt, 0).Shape(); got[2] != 0 {
		t.Fatalf("Zeros(MaxInt, MaxInt, 0) has shape %v", got)
	}
	const bound = 20 * time.Second
	for _, shape := range emptyHugeShapes {
		small := make([]int, len(shape))
		for i, d := range shape {
			small[i] = d
			if d > 3 {
				small[i] = 3
			}
		}
		for _, op := range emptyHugeOps {
			modes := []struct {
				name string
				run  func(x *peel.Tensor) *peel.Tensor
			}{
				{"eager", op.f},
				{"compiled", transforms.Compile(op.f)},
			}
			if op.grad {
				g := transforms.Grad(func(x *peel.Tensor) *peel.Tensor { return peel.Sum(op.f(x)) })
				modes = append(modes, struct {
					name string
					run  func(x *peel.Tensor) *peel.Tensor
				}{"grad", g})
			}
			for _, m := range modes {
				name := fmt.Sprintf("%s %s on %v", m.name, op.name, shape)
				var got, want *peel.Tensor
				var wantErr error
				r := runBounded(t, name, bound, func() {
					wantErr = peel.Catch(func() { want = m.run(peel.Full(peel.Float64, 0.5, small...)) })
					got = m.run(peel.BroadcastTo(peel.Scalar(0.5), shape...))
				})
				if r != nil {
					e, ok := r.(*peel.Error)
					if !ok {
						t.Errorf("%s: panicked with %T %v, not *peel.Error", name, r, r)
						continue
					}
					if wantErr == nil && !containsAll(e.Error(), "too large") {
						t.Errorf("%s: %v; the small twin succeeds, so only a result too large may be refused", name, e)
					}
					continue
				}
				if wantErr != nil {
					t.Errorf("%s: succeeded where the small twin fails with %v", name, wantErr)
					continue
				}
				if len(got.Shape()) != len(want.Shape()) {
					t.Errorf("%s: result of rank %d, the twin's is %d", name, len(got.Shape()), len(want.Shape()))
					continue
				}
				if got.Size() == 0 {
					if want.Size() != 0 {
						t.Errorf("%s: empty result %v; the twin's %v has elements", name, got.Shape(), want.Shape())
					}
					continue
				}
				if fmt.Sprint(got.Shape()) != fmt.Sprint(want.Shape()) {
					t.Errorf("%s: result shape %v; the twin's is %v", name, got.Shape(), want.Shape())
					continue
				}
				if g, w := fmt.Sprint(peel.AsType(got, peel.Float64).Float64s()), fmt.Sprint(peel.AsType(want, peel.Float64).Float64s()); g != w {
					t.Errorf("%s: %s; the twin gives %s", name, g, w)
				}
			}
		}
	}
}

// TestEmptyShapesWithHugeDimsVmapped maps over the huge and the zero
// dimensions of such shapes: the batching interpreter must move and
// broadcast them without looping over lanes.
func TestEmptyShapesWithHugeDimsVmapped(t *testing.T) {
	lane := []struct {
		name string
		f    func(x *peel.Tensor) *peel.Tensor
	}{
		{"Neg", peel.Neg},
		{"SumAll", func(x *peel.Tensor) *peel.Tensor { return peel.Sum(x) }},
		{"Softmax", func(x *peel.Tensor) *peel.Tensor { return peel.Softmax(x, -1) }},
		{"Cumsum", func(x *peel.Tensor) *peel.Tensor { return peel.Cumsum(x, 0) }},
		{"MatMul", func(x *peel.Tensor) *peel.Tensor { return peel.MatMul(x, peel.Transpose(x, 1, 0)) }},
		{"Reshape", func(x *peel.Tensor) *peel.Tensor { return peel.Reshape(x, x.Shape()[1], x.Shape()[0]) }},
		{"Sum0", func(x *peel.Tensor) *peel.Tensor { return peel.Sum(x, 0) }},
		{"Concat", func(x *peel.Tensor) *peel.Tensor { return peel.Concat([]*peel.Tensor{x, x}, 1) }},
	}
	for _, shape := range emptyHugeShapes {
		for axis := range shape {
			for _, l := range lane {
				name := fmt.Sprintf("Vmap(%s) over axis %d of %v", l.name, axis, shape)
				r := runBounded(t, name, 20*time.Second, func() {
					got := transforms.Vmap(l.f, transforms.InAxes(axis))(peel.BroadcastTo(peel.Scalar(0.5), shape...))
					if got.Shape()[0] != shape[axis] {
						t.Errorf("%s: result shape %v does not lead with the mapped dimension", name, got.Shape())
					}
				})
				if r != nil {
					if e, ok := r.(*peel.Error); !ok || !containsAll(e.Error(), "too large") {
						t.Errorf("%s: panicked with %T %v", name, r, r)
					}
				}
			}
		}
	}
}

func containsAll(s string, frags ...string) bool {
	for _, f := range frags {
		if !strings.Contains(s, f) {
			return false
		}
	}
	return true
}
