package backend

// BufferCache is implemented by backends that keep buffers nothing uses
// any more and hand them out again (a caching allocator, as torch's):
// reusing a buffer skips the allocator, the zeroing of fresh memory and
// the page faults of memory the operating system has taken back, and it
// does not pace the Go collector. The eval interpreter allocates kernel
// results with AllocUninit and returns a cached buffer with Recycle when
// the storage holding it becomes unreachable.
type BufferCache interface {
	// AllocUninit returns a buffer of n elements whose elements are
	// unspecified (a kernel result, every element of which Exec
	// writes), refusing sizes above the allocation limit as Alloc does.
	// cached reports whether the buffer is one of the cache's: only
	// such a buffer may be given to Recycle, once nothing references
	// it.
	AllocUninit(dt DType, n int) (buf Buffer, cached bool)
	// Recycle returns buf, which AllocUninit gave with cached set and
	// which nothing references any more, to the cache. The caller must
	// not use buf afterwards.
	Recycle(buf Buffer)
	// MemoryStats returns the cache's counters.
	MemoryStats() MemoryStats
	// ResetPeakMemory sets MemoryStats's Peak to the bytes in use now.
	ResetPeakMemory()
	// SetCacheLimit sets the most bytes the cache keeps and returns the
	// previous limit; n < 0 only reports it, n = 0 keeps nothing.
	SetCacheLimit(n int64) int64
	// EmptyCache drops every buffer the cache keeps.
	EmptyCache()
}

// MemoryStats counts the bytes of a backend's caching allocator.
type MemoryStats struct {
	// InUse is the bytes of cached-size buffers handed out and not yet
	// recycled: results of eager operations that are still reachable,
	// or unreachable but not yet found so by the collector (and the
	// rare result whose kernel panicked, left to the collector and
	// still counted).
	InUse int64
	// Cached is the bytes held for reuse.
	Cached int64
	// Peak is the largest InUse seen since the process started or
	// since the last ResetPeakMemory.
	Peak int64
	// Limit is the most bytes the cache holds (SetCacheLimit).
	Limit int64
	// Hits and Misses count AllocUninit calls of a cached size served
	// from the cache and from fresh memory.
	Hits, Misses int64
	// Trimmed is the bytes dropped from the cache because they were not
	// reused for a while (a second, on the CPU backend), or did not fit
	// under Limit.
	Trimmed int64
	// ByDType splits InUse and Cached by element type; a dtype with
	// neither is absent. (Read list by list while other goroutines may
	// allocate, the parts may differ from the totals by what moved in
	// between.)
	ByDType map[DType]DTypeMemory
}

// DTypeMemory is one element type's share of a cache's bytes
// (MemoryStats.ByDType).
type DTypeMemory struct {
	InUse, Cached int64
}
