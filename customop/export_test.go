package customop

// SetShapeCacheMax bounds o's cache of derived result types at n entries
// and returns a function restoring the bound.
func SetShapeCacheMax(o *Op, n int) (restore func()) {
	old := o.cache.SetMax(n)
	return func() { o.cache.SetMax(old) }
}

// ShapeCacheLen returns the number of result types o has cached.
func ShapeCacheLen(o *Op) int { return o.cache.Len() }
