package ddp

// PrefetchCounts returns the Gathers of sp's prefetcher served by a
// prefetched all-gather, those whose prefetch was dropped, and whether
// it stopped prefetching.
func PrefetchCounts[P any](sp Sharded[P]) (hits, misses int, off bool) {
	if sp.pf == nil {
		return 0, 0, false
	}
	f := sp.pf()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits, f.misses, f.off
}
