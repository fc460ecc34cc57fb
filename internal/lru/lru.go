// Package lru provides Cache, the one bounded cache type of peel: every
// cache keyed by shapes, dtypes or signatures (compiled rules, batched
// and differentiated control-flow programs, backward programs, compiled
// signatures, derived result types) is a Cache with a documented
// maximum number of entries, so that a program calling peel on ever new
// shapes holds a bounded amount of memory.
//
// A Cache evicts the least recently used entry, at the granularity of
// insertions: a logical clock advances at every insertion, a hit stamps
// its entry with the clock's value (one atomic store, only when the
// stamp changes), and an insertion into a full cache evicts an entry
// with the oldest stamp (scanning the entries: misses are rare and cost
// a trace, so the scan is negligible). Entries used since the same
// insertion are equally recent. Hits take no lock (a sync.Map load and
// at most one atomic store); only insertions lock, so a cache on the
// dispatch path adds no lock to a hit.
//
// Eviction never changes a result: every value cached is a pure function
// of its key (a program derived from the key's shapes), so an evicted
// value is built again, identically, on its next miss.
package lru

import (
	"sync"
	"sync/atomic"
)

// DefaultMax is the maximum number of entries of a zero Cache.
const DefaultMax = 64

// Cache is a concurrency-safe map from K to V holding at most Max
// entries. The zero Cache is empty and holds at most DefaultMax
// entries; New makes one of another size. A Cache must not be copied
// after first use.
type Cache[K comparable, V any] struct {
	max   int           // 0: DefaultMax
	m     sync.Map      // K → *entry[K, V]
	clock atomic.Uint64 // advanced by every insertion
	mu    sync.Mutex    // held by insertions, deletions and evictions
	ring  []*entry[K, V]
}

type entry[K comparable, V any] struct {
	key   K
	val   V
	slot  int           // index in ring (under mu)
	stamp atomic.Uint64 // the clock at the entry's last use
}

// New returns an empty Cache of at most max entries. It panics if max is
// not positive.
func New[K comparable, V any](max int) *Cache[K, V] {
	if max <= 0 {
		panic("lru.New: the maximum number of entries must be positive")
	}
	return &Cache[K, V]{max: max}
}

// Max returns the maximum number of entries.
func (c *Cache[K, V]) Max() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.capacity()
}

func (c *Cache[K, V]) capacity() int {
	if c.max == 0 {
		return DefaultMax
	}
	return c.max
}

// SetMax changes the maximum number of entries to max, evicting the
// least recently used entries until at most max remain, and returns the
// previous maximum. It panics if max is not positive.
func (c *Cache[K, V]) SetMax(max int) int {
	if max <= 0 {
		panic("lru.Cache.SetMax: the maximum number of entries must be positive")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.capacity()
	c.max = max
	for len(c.ring) > max {
		c.remove(c.oldest())
	}
	return old
}

// Load returns the value cached for k and marks it used.
func (c *Cache[K, V]) Load(k K) (V, bool) {
	v, ok := c.m.Load(k)
	if !ok {
		var zero V
		return zero, false
	}
	e := v.(*entry[K, V])
	if now := c.clock.Load(); e.stamp.Load() != now {
		e.stamp.Store(now)
	}
	return e.val, true
}

// LoadOrStore returns the value cached for k if there is one (and true),
// and otherwise caches v, evicting the least recently used entry if the
// cache is full, and returns v (and false).
func (c *Cache[K, V]) LoadOrStore(k K, v V) (V, bool) {
	if old, ok := c.Load(k); ok {
		return old, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m.Load(k); ok {
		e := old.(*entry[K, V])
		e.stamp.Store(c.clock.Load())
		return e.val, true
	}
	c.insert(k, v)
	return v, false
}

// Store caches v for k, replacing the value cached for k if there is
// one, and otherwise evicting the least recently used entry if the cache
// is full.
func (c *Cache[K, V]) Store(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m.Load(k); ok {
		o := old.(*entry[K, V])
		e := &entry[K, V]{key: k, val: v, slot: o.slot}
		e.stamp.Store(c.clock.Load())
		c.ring[o.slot] = e
		c.m.Store(k, e)
		return
	}
	c.insert(k, v)
}

// insert adds a new entry for k (absent), under mu.
func (c *Cache[K, V]) insert(k K, v V) {
	if len(c.ring) >= c.capacity() {
		c.remove(c.oldest())
	}
	e := &entry[K, V]{key: k, val: v, slot: len(c.ring)}
	e.stamp.Store(c.clock.Add(1))
	c.ring = append(c.ring, e)
	c.m.Store(k, e)
}

// oldest returns an entry with the oldest stamp (ring is not empty),
// under mu.
func (c *Cache[K, V]) oldest() *entry[K, V] {
	victim := c.ring[0]
	for _, e := range c.ring[1:] {
		if e.stamp.Load() < victim.stamp.Load() {
			victim = e
		}
	}
	return victim
}

// remove deletes the entry e, under mu: the ring is kept dense by moving
// its last entry into e's slot.
func (c *Cache[K, V]) remove(e *entry[K, V]) {
	c.m.Delete(e.key)
	n := len(c.ring)
	last := c.ring[n-1]
	c.ring[e.slot], last.slot = last, e.slot
	c.ring[n-1] = nil
	c.ring = c.ring[:n-1]
}

// Delete removes the entry of k, if any.
func (c *Cache[K, V]) Delete(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m.Load(k); ok {
		c.remove(old.(*entry[K, V]))
	}
}

// Len returns the number of entries.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ring)
}

// Range calls f with every entry (in no particular order, not marking
// them used) until f returns false.
func (c *Cache[K, V]) Range(f func(k K, v V) bool) {
	c.m.Range(func(_, v any) bool {
		e := v.(*entry[K, V])
		return f(e.key, e.val)
	})
}
