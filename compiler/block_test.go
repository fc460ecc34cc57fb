package compiler

import (
	"testing"

	"github.com/peel-ml/peel/backend"
)

// TestCutBlock: a block of a contiguous array is its elements from lo; a
// block of a broadcast scalar is the scalar broadcast to the block.
func TestCutBlock(t *testing.T) {
	if FuseBlock <= 0 || FuseMin < FuseBlock {
		t.Errorf("FuseBlock %d, FuseMin %d", FuseBlock, FuseMin)
	}
	c := cutBlock(backend.Array{Shape: []int{10}, Offset: 2}, 4, []int{3})
	if c.Offset != 6 || c.Strides != nil || c.Shape[0] != 3 {
		t.Errorf("cutBlock of a contiguous array: %+v", c)
	}
	s := cutBlock(backend.Array{Shape: []int{10}, Strides: []int{0}, Offset: 5}, 4, []int{3})
	if s.Offset != 5 || len(s.Strides) != 1 || s.Strides[0] != 0 || s.Shape[0] != 3 {
		t.Errorf("cutBlock of a broadcast scalar: %+v", s)
	}
}
