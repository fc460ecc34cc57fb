package compiler

import (
	"runtime"

	"github.com/peel-ml/peel/backend"
)

// FuseBlock is the number of elements per block of a fused group: small
// enough that a few dozen intermediates of one block stay in a core's L2
// cache, large enough that per-block dispatch is negligible.
const FuseBlock = 4096

// FuseMin is the smallest array for which a fused group spreads its
// blocks over several goroutines.
const FuseMin = 4 * FuseBlock

// cutBlock returns elements [lo, lo+shape[0]) of a, a contiguous array
// or a broadcast scalar (IsSplat), as a one-dimensional array: the block
// a fused equation reads. shape is the block's shape, one dimension.
func cutBlock(a backend.Array, lo int, shape []int) backend.Array {
	if a.Strides != nil && a.IsSplat() && a.Size() > 1 {
		return backend.Array{Buf: a.Buf, Shape: shape, Strides: zeroStride, Offset: a.Offset}
	}
	return backend.Array{Buf: a.Buf, Shape: shape, Offset: a.Offset + lo}
}

// backendThreads returns how many goroutines be's kernels use: its
// Threads method if it has one, else GOMAXPROCS.
func backendThreads(be backend.Backend) int {
	if t, ok := be.(interface{ Threads() int }); ok {
		return max(1, t.Threads())
	}
	return runtime.GOMAXPROCS(0)
}
