package interp_test

import (
	"errors"
	"testing"

	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/internal/interptest"
	"github.com/peel-ml/peel/interp"
	"github.com/peel-ml/peel/prims"
)

// TestDonatable: a tensor may be taken over only when it is concrete,
// contiguous over its whole buffer and shares its memory with no
// snapshot.
func TestDonatable(t *testing.T) {
	w := interptest.Tensor([]float64{1, 2, 3, 4}, 4)
	view := interp.Bind1(prims.Reshape, prims.ReshapeParams{Shape: []int{2, 2}}, w)
	tr := interp.Bind1(prims.Transpose, prims.TransposeParams{Perm: []int{1, 0}}, view)
	sl := interp.Bind1(prims.Slice, prims.SliceParams{Start: []int{1}, Limit: []int{3}, Stride: []int{1}}, w)
	fresh := interptest.Tensor([]float64{1, 2}, 2)
	shared := interptest.Tensor([]float64{1, 2}, 2)
	snap := interp.Snapshot(shared)
	cases := []struct {
		name string
		t    *interp.Tensor
		want bool
	}{
		{"fresh", fresh, true},
		{"base", w, true},
		{"reshape view over the whole buffer", view, true},
		{"transposed view", tr, false},
		{"slice", sl, false},
		{"shared with a snapshot", shared, false},
		{"the snapshot", snap, false},
		{"nil", nil, false},
	}
	for _, c := range cases {
		if got := interp.Donatable(c.t); got != c.want {
			t.Errorf("%s: Donatable %v, want %v", c.name, got, c.want)
		}
	}
	if !interp.SameStorage(w, view) || interp.SameStorage(shared, snap) || interp.SameStorage(w, nil) {
		t.Error("SameStorage: a base shares its view's storage, not a snapshot's")
	}
}

// TestViewArrayHelper: ViewArray lays out a view as eval does and
// refuses a primitive that is not a view.
func TestViewArrayHelper(t *testing.T) {
	a := backend.Array{Shape: []int{2, 3}}
	v, ok := interp.ViewArray(prims.Transpose, prims.TransposeParams{Perm: []int{1, 0}}, a)
	if !ok || len(v.Shape) != 2 || v.Shape[0] != 3 || v.Strides[0] != 1 || v.Strides[1] != 3 {
		t.Fatalf("transpose view %+v, %v", v, ok)
	}
	func() {
		defer func() {
			var e *interp.Error
			if r := recover(); r == nil || !errors.As(r.(error), &e) {
				t.Errorf("ViewArray of add: recovered %v, want *interp.Error", r)
			}
		}()
		interp.ViewArray(prims.Add, nil, a)
	}()
}
