package transforms

// Test hooks for the bounded caches (issue 25, item 16): the package's
// global caches' sizes and bounds, and the caches a compiled function
// holds.

// SetBackwardProgramsMax bounds the cache of compiled backward programs
// at n entries and returns a function restoring the bound.
func SetBackwardProgramsMax(n int) (restore func()) {
	old := backwardPrograms.SetMax(n)
	return func() { backwardPrograms.SetMax(old) }
}

// BackwardProgramsLen returns the number of backward programs cached.
func BackwardProgramsLen() int { return backwardPrograms.Len() }

// SignatureMax returns the bound on c's traced signatures.
func SignatureMax[A, R any](c *Compiled[A, R]) int { return c.cache.Max() }

// CallBatchedLens returns, over c's traced signatures, the largest
// number of batched programs one holds and their bound.
func CallBatchedLens[A, R any](c *Compiled[A, R]) (n, max int) {
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
