//go:build !amd64 || purego

package cpu

import "github.com/peel-ml/peel/backend"

// copyElems copies s into d (of equal length).
func copyElems[T any](d, s []T) { copy(d, s) }

// transposeBlocks32 reports false: there is no vector transpose here.
func transposeBlocks32(d []float32, ld int, s []float32, ls, rows, cols int, nt bool) bool {
	return false
}

// fillElems sets every element of d to v.
func fillElems[T bool | int64 | float32 | float64 | int32 | uint8 | backend.F16 | backend.BF16](d []T, v T) {
	fillSlice(d, v)
}

// setCopyWide does nothing here: copies are Go's.
func setCopyWide(bool) bool { return false }

// packPanelsAVX2 is never called here: haveSIMD is false.
func packPanelsAVX2(dst, src *byte, rows, panels, chunk, ls, ldp int) {
	panic("cpu: packPanelsAVX2 without AVX2")
}
