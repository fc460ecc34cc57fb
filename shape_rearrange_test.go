package peel_test

import (
	"math"
	"testing"

	"github.com/peel-ml/peel"
	"pgregory.net/rapid"
)

// Tests of the rearrangements (shape_rearrange.go) beyond the registry:
// documented values, errors and properties over random inputs.

func TestShapeRearrangeValues(t *testing.T) {
	smIs(t, "Roll/flat", peel.Roll(smSeq(10), 2), []int{10}, []float64{8, 9, 0, 1, 2, 3, 4, 5, 6, 7})
	smIs(t, "Roll/flat2d", peel.Roll(smSeq(2, 5), 1), []int{2, 5}, []float64{9, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	smIs(t, "Roll/axis", peel.Roll(smSeq(2, 5), 1, 1), []int{2, 5}, []float64{4, 0, 1, 2, 3, 9, 5, 6, 7, 8})
	smIs(t, "Roll/-1,both", peel.Roll(smSeq(2, 3), -1, 0, 1), []int{2, 3}, []float64{4, 5, 3, 1, 2, 0})
	smIs(t, "Rot90", peel.Rot90(smF([]float64{1, 2, 3, 4}, 2, 2), 1, [2]int{0, 1}), []int{2, 2}, []float64{2, 4, 1, 3})
	smIs(t, "Rot90/-1", peel.Rot90(smF([]float64{1, 2, 3, 4}, 2, 2), -1, [2]int{0, 1}), []int{2, 2}, []float64{3, 1, 4, 2})
	smIs(t, "Rot90/2x3", peel.Rot90(smSeq(2, 3), 1, [2]int{0, 1}), []int{3, 2}, []float64{2, 5, 1, 4, 0, 3})
	smIs(t, "RepeatInterleave", peel.RepeatInterleave(smF([]float64{1, 2, 3}, 3), []int{2}, 0), []int{6}, []float64{1, 1, 2, 2, 3, 3})
	smIs(t, "RepeatInterleave/per", peel.RepeatInterleave(smF([]float64{1, 2, 3, 4}, 2, 2), []int{1, 2}, 0), []int{3, 2}, []float64{1, 2, 3, 4, 3, 4})
	smIs(t, "RepeatInterleave/0", peel.RepeatInterleave(smSeq(2, 2), []int{0}, 1), []int{2, 0}, nil)
}

func TestShapeRearrangeErrors(t *testing.T) {
	m := smSeq(3, 4)
	v := smSeq(3)
	smErr(t, "peel.Roll", func() { peel.Roll(m, 1, 0, -2) }, "repeated")
	smErr(t, "peel.Rot90", func() { peel.Rot90(m, 1, [2]int{1, -1}) }, "same axis")
	smErr(t, "peel.Rot90", func() { peel.Rot90(v, 1, [2]int{0, 1}) }, "rank 1")
	smErr(t, "peel.RepeatInterleave", func() { peel.RepeatInterleave(v, []int{1, 2}, 0) }, "2 repetition counts", "want 1 or 3")
	smErr(t, "peel.RepeatInterleave", func() { peel.RepeatInterleave(v, []int{-1}, 0) }, "negative")
	smErr(t, "peel.RepeatInterleave", func() { peel.RepeatInterleave(v, []int{math.MaxInt}, 0) }, "too large")
}

// TestRapidShapeRearrange checks algebraic identities of Roll,
// RepeatInterleave and Rot90 over random shapes.
func TestRapidShapeRearrange(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r, shape, _, x := smDraw(rt)
		a := rapid.IntRange(-r, r-1).Draw(rt, "axis")
		s := rapid.IntRange(-9, 9).Draw(rt, "shift")
		smEqual(rt, "Roll back", peel.Roll(peel.Roll(x, s, a), -s, a), x)
		smEqual(rt, "Roll flat back", peel.Roll(peel.Roll(x, s), -s), x)
		reps := rapid.IntRange(0, 3).Draw(rt, "reps")
		per := make([]int, shape[(a+r)%r])
		for i := range per {
			per[i] = reps
		}
		smEqual(rt, "RepeatInterleave uniform vs per-slice", peel.RepeatInterleave(x, []int{reps}, a), peel.RepeatInterleave(x, per, a))
		if r >= 2 {
			k := rapid.IntRange(-5, 5).Draw(rt, "k")
			smEqual(rt, "Rot90 4 times", peel.Rot90(peel.Rot90(peel.Rot90(peel.Rot90(x, 1, [2]int{0, 1}), 1, [2]int{0, 1}), 1, [2]int{0, 1}), 1, [2]int{0, 1}), x)
			smEqual(rt, "Rot90 k then -k", peel.Rot90(peel.Rot90(x, k, [2]int{0, -1}), -k, [2]int{0, -1}), x)
		}
	})
}
