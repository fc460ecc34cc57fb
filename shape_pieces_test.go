package peel_test

import (
	"math"
	"slices"
	"testing"

	"github.com/peel-ml/peel"
	"pgregory.net/rapid"
)

// Tests of the cutting into pieces and the grids of shape.go (Unbind,
// Chunk, Meshgrid) beyond the registry: documented values, piece counts,
// errors and properties over random inputs (issue 17).

func TestMeshgridValues(t *testing.T) {
	x, y := peel.Meshgrid("xy", smF([]float64{1, 2, 3}, 3), smF([]float64{4, 5}, 2))[0], peel.Meshgrid("xy", smF([]float64{1, 2, 3}, 3), smF([]float64{4, 5}, 2))[1]
	smIs(t, "Meshgrid/xy/X", x, []int{2, 3}, []float64{1, 2, 3, 1, 2, 3})
	smIs(t, "Meshgrid/xy/Y", y, []int{2, 3}, []float64{4, 4, 4, 5, 5, 5})
	g := peel.Meshgrid("ij", smF([]float64{1, 2, 3}, 3), smF([]float64{4, 5}, 2))
	smIs(t, "Meshgrid/ij/0", g[0], []int{3, 2}, []float64{1, 1, 2, 2, 3, 3})
	if len(peel.Meshgrid("ij")) != 0 {
		t.Fatal("Meshgrid of no tensors gives results")
	}
}

func TestUnbindChunkMeshgridErrors(t *testing.T) {
	m := smSeq(3, 4)
	v := smSeq(3)
	huge := peel.BroadcastTo(peel.Scalar(1.0), 1<<62)
	smErr(t, "peel.Unbind", func() { peel.Unbind(peel.Scalar(1.0), 0) }, "axis 0")
	smErr(t, "peel.Chunk", func() { peel.Chunk(m, 0, 0) }, "at least 1")
	smErr(t, "peel.Chunk", func() { peel.Chunk(smSeq(0), math.MaxInt, 0) }, "too large")
	smErr(t, "peel.Chunk", func() { peel.Chunk(huge, math.MaxInt, 0) }, "too large")
	smErr(t, "peel.Unbind", func() { peel.Unbind(huge, 0) }, "too large")
	smErr(t, "peel.Meshgrid", func() { peel.Meshgrid("yx", v) }, "indexing")
	smErr(t, "peel.Meshgrid", func() { peel.Meshgrid("ij", v, m) }, "tensor 1", "rank 0 or 1")
}

func TestChunkPieces(t *testing.T) {
	for _, c := range []struct {
		size, n int
		want    []int
	}{
		{5, 4, []int{2, 2, 1}}, {6, 4, []int{2, 2, 2}}, {3, 5, []int{1, 1, 1}}, {7, 3, []int{3, 3, 1}},
		{4, 1, []int{4}}, {0, 3, []int{0, 0, 0}}, {9, 3, []int{3, 3, 3}},
	} {
		ps := peel.Chunk(smSeq(2, c.size), c.n, 1)
		got := make([]int, len(ps))
		for i, p := range ps {
			got[i] = p.Shape()[1]
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Chunk of size %d into %d: sizes %v, want %v (torch)", c.size, c.n, got, c.want)
		}
	}
	if n := len(peel.Unbind(smSeq(2, 0), 1)); n != 0 {
		t.Errorf("Unbind of an empty axis gives %d tensors", n)
	}
}

// TestRapidUnbindChunk checks that Unbind and Chunk split a tensor into
// pieces that Stack and Concat put back, over random shapes.
func TestRapidUnbindChunk(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r, shape, _, x := smDraw(rt)
		a := rapid.IntRange(-r, r-1).Draw(rt, "axis")
		if shape[(a+r)%r] > 0 {
			smEqual(rt, "Stack(Unbind)", peel.Stack(peel.Unbind(x, a), a), x)
		}
		n := rapid.IntRange(1, 5).Draw(rt, "chunks")
		smEqual(rt, "Concat(Chunk)", peel.Concat(peel.Chunk(x, n, a), a), x)
	})
}
