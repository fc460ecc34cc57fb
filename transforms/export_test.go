package transforms

// Test hooks for the bounded caches (issue 25, item 16): the package's
// global caches' sizes and bounds, and the caches a compiled function
// holds.

// SetLoopTierSteps sets the number of steps after which an eager loop
// runs its sub-graphs' programs (n < 0: never) and returns a function
// restoring it.
func SetLoopTierSteps(n int) (restore func()) {
	old := loopTierSteps
	if n < 0 {
		n = int(^uint(0) >> 1)
	}
	loopTierSteps = n
	return func() { loopTierSteps = old }
}

// SubProgramsBuilt returns the number of loop sub-graph programs built
// so far.
func SubProgramsBuilt() int64 { return subProgramsBuilt.Load() }

// SetBackwardProgramsMax bounds the cache of compiled backward programs
// at n entries and returns a function restoring the bound.
func SetBackwardProgramsMax(n int) (restore func()) {
	old := backwardPrograms.SetMax(n)
	return func() { backwardPrograms.SetMax(old) }
}

// BackwardProgramsLen returns the number of backward programs cached.
func BackwardProgramsLen() int { return backwardPrograms.Len() }

// SignatureMax returns the bound on the traced signatures of the
// function ins inspects, compiled from a function of A.
func SignatureMax[A, R any](ins *Inspector) int {
	return ins.get("test").impl.(*compiled[A, R]).cache.Max()
}

// CallBatchedLens returns, over the traced signatures of the function
// ins inspects, the largest number of batched programs one holds and
// their bound.
func CallBatchedLens[A, R any](ins *Inspector) (n, max int) {
	c := ins.get("test").impl.(*compiled[A, R])
	c.cache.Range(func(_ string, e *compileEntry) bool {
		if e.call != nil {
			n, max = maxInt(n, e.call.batched.Len()), e.call.batched.Max()
		}
		return true
	})
	return n, max
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// SharesMemory is sharesMemory, which decides whether a loop's carry
// may be donated to the next step.
var SharesMemory = sharesMemory
