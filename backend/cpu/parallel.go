package cpu

import "github.com/peel-ml/peel/internal/workers"

// grain is the number of elements below which elementwise kernels run on
// the calling goroutine: spawning costs about a microsecond, which cheap
// kernels only recover past some tens of thousands of elements.
const grain = 1 << 15

// parallelFor runs body over [0, n) split into contiguous chunks, one per
// worker, when n is large enough to pay for the workers. cost scales the
// grain down for expensive per-element work (1 for a cheap op such as
// add, larger for transcendental functions). The chunks run on the
// shared worker pool (internal/workers), whose workers stay awake between
// kernels; a panic in a chunk reaches the caller.
func parallelFor(n, cost int, body func(lo, hi int)) {
	workers := workersFor(n, cost)
	if workers <= 1 {
		body(0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	runChunks((n+chunk-1)/chunk, func(k int) { body(k*chunk, min((k+1)*chunk, n)) })
}

// runChunks is workers.Run, named here so the kernels' files need not
// import the pool.
func runChunks(n int, body func(k int)) { workers.Run(n, body) }

// workersFor returns how many goroutines parallelFor uses for n elements
// of the given cost.
func workersFor(n, cost int) int {
	if cost < 1 {
		cost = 1
	}
	limit := n * cost / grain
	if limit <= 1 {
		// Small work never asks for the thread count: with SetThreads
		// unset that is runtime.GOMAXPROCS(0), which takes the
		// scheduler's lock, a global lock on every small op.
		return limit
	}
	return min(limit, Threads())
}

// serial reports whether parallelFor would run n elements of the given
// cost on the calling goroutine. Hot kernels test it first and call their
// loop directly, because the closure handed to parallelFor is allocated
// on the heap (it may reach other goroutines).
func serial(n, cost int) bool { return workersFor(n, cost) <= 1 }

// serialAnyThreads reports whether parallelFor runs n elements of the
// given cost on the calling goroutine whatever the thread count (work
// below two grains), so a decision made once, before SetThreads may
// change, stays Exec's.
func serialAnyThreads(n, cost int) bool { return n*max(cost, 1)/grain <= 1 }
