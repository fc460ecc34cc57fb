package cpu

import "sync"

// grain is the number of elements below which elementwise kernels run on
// the calling goroutine: spawning costs about a microsecond, which cheap
// kernels only recover past some tens of thousands of elements.
const grain = 1 << 15

// parallelFor runs body over [0, n) split into contiguous chunks, one per
// worker, when n is large enough to pay for the goroutines. cost scales the
// grain down for expensive per-element work (1 for a cheap op such as
// add, larger for transcendental functions).
func parallelFor(n, cost int, body func(lo, hi int)) {
	workers := workersFor(n, cost)
	if workers <= 1 {
		body(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := chunk; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			body(lo, hi)
		}(lo, hi)
	}
	body(0, min(chunk, n))
	wg.Wait()
}

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
