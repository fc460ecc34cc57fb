package peel

import (
	"github.com/peel-ml/peel/backend"
	"github.com/peel-ml/peel/interp"
)

// Sizes: the checked size of a shape and the allocation limit every
// constructor and every result passes.

// shapeSize returns the number of elements of shape, panicking with
// *Error naming op when a dimension is negative or the shape is too large
// (see backend.CheckedSize).
func shapeSize(op string, shape []int) int {
	n, err := backend.CheckedSize(shape)
	if err != nil {
		errorf(op, "%v", err)
	}
	return n
}

// allocShape checks a new buffer of dtype dt and the given shape before
// anything is allocated: it panics with *Error naming op when a dimension
// is negative, the shape is too large, or the buffer exceeds the
// allocation limit (see SetMaxAllocBytes). It returns a copy of shape
// (rank 0 for an empty shape) and its number of elements.
func allocShape(op string, dt DType, shape []int) ([]int, int) {
	n, err := backend.AllocSize(dt, shape)
	if err != nil {
		errorf(op, "%v", err)
	}
	return append([]int{}, shape...), n
}

// checkResult checks the shape of an op's result of dtype dt as
// allocShape does when every input is concrete (the result will be
// allocated now), and only its size otherwise (a traced result is not
// allocated by the trace).
func checkResult(op string, dt DType, shape []int, inputs ...*Tensor) {
	for _, t := range inputs {
		if !t.IsConcrete() {
			shapeSize(op, shape)
			return
		}
	}
	allocShape(op, dt, shape)
}

// MaxAllocBytes returns the allocation limit: the largest buffer, in
// bytes, that a constructor or an operation may allocate. It is
// DefaultMaxAllocBytes unless SetMaxAllocBytes changed it.
func MaxAllocBytes() int64 { return backend.MaxAllocBytes() }

// SetMaxAllocBytes sets the allocation limit to n bytes and returns the
// previous limit. Every buffer is checked before it is allocated (by the
// constructors, and by the backends for the results of operations): one
// larger than the limit panics with an *Error saying "too large" that
// names the shape, dtype, size in bytes and limit, instead of exhausting
// memory. A negative n leaves the limit unchanged (SetMaxAllocBytes(-1)
// reports it); n = 0 restores the default. The limit is global and safe
// to change concurrently.
func SetMaxAllocBytes(n int64) int64 { return backend.SetMaxAllocBytes(n) }

// DefaultMaxAllocBytes returns the default allocation limit: the
// physical memory of the machine (the total RAM, or the cgroup memory
// limit when it is lower, on Linux; hw.memsize on macOS), or 64 GiB where
// it is not known. No single allocation above it could succeed.
func DefaultMaxAllocBytes() int64 { return backend.DefaultMaxAllocBytes() }

// CacheStats counts the bytes of the default backend's caching
// allocator (see MemoryStats).
type CacheStats = backend.MemoryStats

// MemoryStats returns the counters of the default backend's caching
// allocator: the bytes of results handed out and not yet recycled
// (InUse), held for reuse (Cached), the peak of InUse since the process
// started or the last ResetPeakMemory, the cache's limit, its hits and
// misses, the bytes it let go (Trimmed), and InUse and Cached by dtype
// (ByDType). Results of eager operations' kernels of at least 4
// KiB come from the cache and return to it when the collector finds
// them unreachable, so InUse counts such a result from the operation
// that made it until the collection after its last use (torch's
// memory_allocated counts until the last reference goes). Other memory
// is Go's allocator's, and runtime.MemStats counts it: smaller results,
// and buffers made otherwise than by a kernel (constructors such as
// FromFloat64s and Zeros, copies made on a write into shared memory, the
// stacked results and residuals of a Scan's loop). A reused buffer
// skips Go's allocator and its zeroing. A backend without a cache
// reports zeros.
func MemoryStats() CacheStats {
	if c, ok := interp.DefaultBackend().(backend.BufferCache); ok {
		return c.MemoryStats()
	}
	return CacheStats{}
}

// ResetPeakMemory sets the peak MemoryStats reports to the bytes in use
// now, so that a later MemoryStats gives the peak of what ran in between
// (torch's reset_peak_memory_stats). A backend without a cache ignores
// it.
func ResetPeakMemory() {
	if c, ok := interp.DefaultBackend().(backend.BufferCache); ok {
		c.ResetPeakMemory()
	}
}

// SetCacheLimit sets the most bytes the default backend's caching
// allocator keeps for reuse and returns the previous limit. A negative n
// only reports it; n = 0 keeps nothing (every result goes back to the
// collector). The CPU backend's default is an eighth of the physical
// memory or of the Go memory limit in force when the program starts
// (GOMEMLIMIT), whichever is less, and at most 2 GiB. A backend without a
// cache returns 0.
func SetCacheLimit(n int64) int64 {
	if c, ok := interp.DefaultBackend().(backend.BufferCache); ok {
		return c.SetCacheLimit(n)
	}
	return 0
}

// EmptyCache drops every buffer the default backend's caching allocator
// keeps, leaving the memory to the collector, which returns it to the
// operating system; the cache drops buffers unused for a whole
// collection cycle by itself.
func EmptyCache() {
	if c, ok := interp.DefaultBackend().(backend.BufferCache); ok {
		c.EmptyCache()
	}
}
