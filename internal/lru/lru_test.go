package lru

import (
	"maps"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// TestCacheProperties runs random operations on a Cache against a model
// and checks, after each, that it never holds more than Max entries,
// that a hit returns the value last stored for the key (values carry a
// version, as a retrace stores a new value), that Range reports exactly
// the entries the cache holds, and that an insertion into a full cache
// evicts a least recently used entry: one whose last use is no later
// (in insertions) than that of any entry kept.
func TestCacheProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		max := rapid.IntRange(1, 8).Draw(rt, "max")
		c := New[int, [2]int](max)
		last := map[int]int{}    // key → version last stored
		used := map[int]uint64{} // key → insertions before its last use
		held := map[int]bool{}   // the model's entries
		var epoch uint64
		for step := range rapid.IntRange(0, 200).Draw(rt, "steps") {
			k := rapid.IntRange(0, 20).Draw(rt, "key")
			before := maps.Clone(held)
			inserted := false
			switch op := rapid.IntRange(0, 3).Draw(rt, "op"); op {
			case 0:
				v, hit := c.LoadOrStore(k, [2]int{k, step})
				if hit != held[k] {
					rt.Fatalf("LoadOrStore(%d): hit %v, the model holds it: %v", k, hit, held[k])
				}
				if hit && v != [2]int{k, last[k]} {
					rt.Fatalf("LoadOrStore(%d) hit %v, want version %d", k, v, last[k])
				}
				if !hit {
					last[k], inserted = step, true
				}
			case 1:
				v, hit := c.Load(k)
				if hit != held[k] || hit && v != [2]int{k, last[k]} {
					rt.Fatalf("Get(%d) = %v, %v; the model holds it: %v, version %d", k, v, hit, held[k], last[k])
				}
				if !hit {
					continue
				}
			case 2:
				inserted = !held[k]
				c.Store(k, [2]int{k, step})
				last[k] = step
			case 3:
				c.Delete(k)
				delete(held, k)
				continue
			}
			if inserted {
				epoch++
			}
			used[k] = epoch
			held[k] = true
			// Which key, if any, the cache evicted.
			for h := range before {
				if _, ok := c.m.Load(h); ok || h == k {
					continue
				}
				if !inserted || len(before) < max {
					rt.Fatalf("%d was evicted without a full insertion", h)
				}
				for o := range held {
					if o != h && o != k && used[o] < used[h] {
						rt.Fatalf("evicted %d (last used at insertion %d) while %d (last used at %d) was kept", h, used[h], o, used[o])
					}
				}
				delete(held, h)
			}
			if n := c.Len(); n > max || n != len(held) {
				rt.Fatalf("%d entries; the maximum is %d, the model holds %d", n, max, len(held))
			}
			seen := 0
			c.Range(func(k int, v [2]int) bool {
				seen++
				if !held[k] || v != [2]int{k, last[k]} {
					rt.Fatalf("Range gave %d → %v; the model holds it: %v, version %d", k, v, held[k], last[k])
				}
				return true
			})
			if seen != len(held) {
				rt.Fatalf("Range saw %d entries, the model holds %d", seen, len(held))
			}
		}
	})
}

// TestCacheBoundedOverManyKeys: 10⁵ distinct keys leave at most Max
// entries, and shrinking with SetMax evicts down to the new maximum.
func TestCacheBoundedOverManyKeys(t *testing.T) {
	var c Cache[int, int]
	for k := range 100_000 {
		if v, _ := c.LoadOrStore(k, 2*k); v != 2*k {
			t.Fatalf("LoadOrStore(%d) = %d", k, v)
		}
	}
	if n := c.Len(); n != DefaultMax {
		t.Fatalf("%d entries after 10⁵ keys, want the maximum %d", n, DefaultMax)
	}
	if old := c.SetMax(10); old != DefaultMax || c.Len() != 10 || c.Max() != 10 {
		t.Fatalf("SetMax(10) = %d; Len %d, Max %d", old, c.Len(), c.Max())
	}
}

// TestCacheConcurrent: goroutines hitting and inserting at once see only
// the values of their keys, and the bound holds.
func TestCacheConcurrent(t *testing.T) {
	c := New[int, int](16)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5000 {
				k := (i*7 + g) % 40
				if v, _ := c.LoadOrStore(k, k*k); v != k*k {
					t.Errorf("key %d: value %d", k, v)
					return
				}
			}
		}()
	}
	wg.Wait()
	if c.Len() > 16 {
		t.Fatalf("%d entries, over 16", c.Len())
	}
}
